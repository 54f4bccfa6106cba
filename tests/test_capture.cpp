// test_capture.cpp — Oracle::capture: a reference captured as an operator graph (capture.py) with its
// var axes symbolic and its inputs/outputs named as in the definition, cached per definition (a second
// call does not run Python); F.linear's bias stays inside one addmm; a data-dependent reference is
// refused with the op and the source line;
// real inputs too large for the machine are refused for now, uncached.
#include "util/resources.h"
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <set>

#include "oracle/oracle.h"
#include "problem/problem.h"
#include "util/files.h"

namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

const fs::path kRoot = ka::source_root();

struct TempDir {
  fs::path path;
  TempDir() : path(ka::make_temp_dir((fs::temp_directory_path() / "ka-capture-").string())) {}
  ~TempDir() {
    std::error_code ec;
    for (auto it = fs::recursive_directory_iterator(path, ec); it != fs::recursive_directory_iterator(); ++it)
      ::chmod(it->path().c_str(), 0755);
    fs::remove_all(path, ec);
  }
};

// Sets an environment variable for the scope.
struct ScopedEnv {
  std::string name;
  ScopedEnv(std::string n, const char* value) : name(std::move(n)) { ::setenv(name.c_str(), value, 1); }
  ~ScopedEnv() { ::unsetenv(name.c_str()); }
};

TEST(Capture, RmsNormGraphIsSymbolicNamedAndCached) {
  TempDir t;
  ka::Problem p = ka::load_problem(kRoot / "examples/problems/rmsnorm_h128");
  ka::Oracle oracle("cpu", t.path / "oracle");
  ka::CaptureResult r = oracle.capture(p);
  ASSERT_TRUE(r.captured) << r.summary.dump();
  EXPECT_FALSE(r.cached);
  json g = json::parse(ka::read_text(r.dir / "graph.json"));
  EXPECT_EQ(g["format"], "kernelarc-graph");
  ASSERT_EQ(g["inputs"].size(), 2u);
  EXPECT_EQ(g["inputs"][0]["name"], "hidden_states");
  EXPECT_EQ(g["inputs"][1]["name"], "weight");
  ASSERT_EQ(g["outputs"].size(), 1u);
  EXPECT_EQ(g["outputs"][0]["name"], "output");
  const json& in = g["values"][g["inputs"][0]["value"].get<int>()];
  EXPECT_EQ(in["dtype"], "bfloat16");
  EXPECT_EQ(in["shape"], json::array({"batch_size", "128"}));  // the var axis stays symbolic
  const json& out = g["values"][g["outputs"][0]["value"].get<int>()];
  EXPECT_EQ(out["dtype"], "bfloat16");
  EXPECT_EQ(out["shape"], json::array({"batch_size", "128"}));
  std::set<std::string> ops;
  for (const auto& n : g["nodes"]) ops.insert(n["op"].get<std::string>());
  EXPECT_TRUE(ops.count("aten.rsqrt.default"));
  EXPECT_TRUE(ops.count("aten.mean.dim"));
  // fp32 maths stays fp32: the mean is taken of a float32 value
  for (const auto& n : g["nodes"])
    if (n["op"] == "aten.mean.dim") {
      EXPECT_EQ(g["values"][n["outputs"][0].get<int>()]["dtype"], "float32");
    }
  // The second call reads the cache: with no usable Python it still answers.
  ScopedEnv no_python("KERNELARC_PYTHON", "/bin/false");
  ka::CaptureResult again = oracle.capture(p);
  EXPECT_TRUE(again.captured);
  EXPECT_TRUE(again.cached);
  EXPECT_EQ(again.dir, r.dir);
}

TEST(Capture, DataDependentShapeSaysWhichOpAndLine) {
  TempDir t;
  ka::Problem p = ka::load_problem(kRoot / "tests/data/capture/masked_rows");
  ka::Oracle oracle("cpu", t.path / "oracle");
  ka::CaptureResult r = oracle.capture(p);
  EXPECT_FALSE(r.captured);
  EXPECT_NE(r.reason().find("data-dependent"), std::string::npos) << r.summary.dump();
  EXPECT_EQ(r.summary.value("op", json()).get<std::string>(), "aten.index.Tensor");
  EXPECT_NE(r.summary.value("source", std::string()).find("line 6: rows = x[mask]"), std::string::npos)
      << r.summary.dump();
  // A clean refusal is cached like a graph.
  ScopedEnv no_python("KERNELARC_PYTHON", "/bin/false");
  ka::CaptureResult again = oracle.capture(p);
  EXPECT_FALSE(again.captured);
  EXPECT_TRUE(again.cached);
  EXPECT_EQ(again.reason(), r.reason());
}

// F.linear with a bias stays one addmm: eager adds the bias inside the GEMM and rounds once, where
// an mm followed by an add would round twice (and miss tight bf16 tolerances).
TEST(Capture, LinearWithBiasStaysOneAddmm) {
  TempDir t;
  ka::Problem p = ka::load_problem(kRoot / "tests/data/capture/linear_bias");
  ka::Oracle oracle("cpu", t.path / "oracle");
  ka::CaptureResult r = oracle.capture(p);
  ASSERT_TRUE(r.captured) << r.summary.dump();
  json g = json::parse(ka::read_text(r.dir / "graph.json"));
  std::multiset<std::string> ops;
  for (const auto& n : g["nodes"]) ops.insert(n["op"].get<std::string>());
  EXPECT_EQ(ops.count("aten.addmm.default"), 1u);
  EXPECT_EQ(ops.count("aten.mm.default"), 0u);
  EXPECT_EQ(ops.count("aten.add.Tensor"), 0u);
}

// Real inputs that would not fit (here: a capture allowed no memory) are refused before they are
// drawn, with the sizes, and not cached: a later run with room tries again.
TEST(Capture, RealInputsThatDoNotFitAreRefusedForNow) {
  TempDir t;
  ka::Problem p = ka::load_problem(kRoot / "tests/data/capture/data_branch");
  ka::Oracle oracle("cpu", t.path / "oracle");
  {
    ScopedEnv tiny("KERNELARC_CAPTURE_MEMORY_GIB", "0");
    ka::CaptureResult r = oracle.capture(p);
    EXPECT_FALSE(r.captured);
    EXPECT_NE(r.reason().find("GiB available"), std::string::npos) << r.summary.dump();
  }
  ka::CaptureResult again = oracle.capture(p);  // room now: the refusal was not cached
  EXPECT_FALSE(again.cached);
  EXPECT_EQ(again.reason().find("GiB available"), std::string::npos) << again.summary.dump();
}

}  // namespace
