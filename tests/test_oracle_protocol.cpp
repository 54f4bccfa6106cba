// test_oracle_protocol.cpp — the problem layer and the Python oracle agree: the oracle is told each
// workload's resolved shapes, dtypes and input sources (oracle/spec.h) and the reference receives
// exactly those (expression dims, derived axes, blobs, scalars); capture's workload is resolved in
// C++; the oracle refuses a spec it cannot read (exit 2, one line); and input generation still
// draws the bytes it drew before the spec existed.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <sys/stat.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "oracle/oracle.h"
#include "oracle/spec.h"
#include "problem/problem.h"
#include "problem/safetensors.h"
#include "test_support.h"
#include "util/files.h"
#include "util/hash.h"
#include "util/process.h"
#include "util/resources.h"

namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

struct TempDir {
  fs::path path;
  TempDir() : path(ka::make_temp_dir((fs::temp_directory_path() / "ka-protocol-").string())) {}
  ~TempDir() {
    std::error_code ec;
    for (auto it = fs::recursive_directory_iterator(path, ec); it != fs::recursive_directory_iterator(); ++it)
      ::chmod(it->path().c_str(), 0755);
    fs::remove_all(path, ec);
  }
};

// A probe whose reference reports what it received: per input [dtype code, rank, dims...] for a
// tensor, [100 + Python type code, -1] for a scalar. Dims use a derived axis (M = N * 2 + 1) and an
// expression (N // 2), which only the problem layer evaluates; `w` comes from a blob.
constexpr const char* kProbeDefinition = R"({
 "name": "protocol_probe",
 "axes": {"B": {"type": "const", "value": 3}, "N": {"type": "var"},
          "M": {"type": "expr", "expression": "N * 2 + 1"}, "L": {"type": "const", "value": 40}},
 "inputs": {
  "x": {"shape": ["B", "M"], "dtype": "bfloat16"},
  "idx": {"shape": ["N"], "dtype": "int32"},
  "flag": {"shape": ["N // 2", "B"], "dtype": "bool"},
  "w": {"shape": ["M"], "dtype": "float16"},
  "eps": {"shape": null, "dtype": "float32"},
  "k": {"shape": null, "dtype": "int64"}
 },
 "outputs": {"seen": {"shape": ["L"], "dtype": "int64"}, "rowsum": {"shape": ["B"], "dtype": "float32"}},
 "reference": "import torch\nCODES = {torch.float32: 1, torch.bfloat16: 2, torch.float16: 3, torch.int32: 4, torch.int64: 5, torch.bool: 6}\ndef run(x, idx, flag, w, eps, k):\n    out = []\n    for v in (x, idx, flag, w, eps, k):\n        if isinstance(v, torch.Tensor):\n            out += [CODES[v.dtype], v.dim(), *v.shape]\n        else:\n            out += [100 + {float: 1, int: 2, bool: 3}[type(v)], -1]\n    out += [0] * (40 - len(out))\n    return torch.tensor(out, dtype=torch.int64), x.float().sum(-1)\n"
})";

int dtype_code(ka::DType t) {
  switch (t) {
    case ka::DType::f32: return 1;
    case ka::DType::bf16: return 2;
    case ka::DType::f16: return 3;
    case ka::DType::i32: return 4;
    case ka::DType::i64: return 5;
    case ka::DType::boolean: return 6;
    default: return -100;
  }
}

std::string probe_workload(int n, int N) {
  return json{{"uuid", fmt::format("00000000-0000-4000-8000-{:012}", n)},
              {"axes", {{"N", N}}},
              {"inputs",
               {{"eps", {{"type", "scalar"}, {"value", 0.5}}},
                {"w", {{"type", "safetensors"}, {"path", fmt::format("blobs/w{}.safetensors", N)}, {"tensor_key", "w"}}}}}}
      .dump();
}

fs::path write_probe(const fs::path& root, const std::vector<int>& ns) {
  const fs::path d = root / "probe";
  fs::create_directories(d / "blobs");
  std::ofstream(d / "definition.json") << kProbeDefinition;
  std::ofstream wl(d / "workload.jsonl");
  for (size_t i = 0; i < ns.size(); ++i) {
    ka::Tensor t;
    t.dtype = ka::DType::f16;
    t.shape = {ns[i] * 2 + 1};
    t.data.resize(t.nbytes());
    for (size_t b = 0; b < t.data.size(); b += 2) t.data[b + 1] = std::byte{0x3c};  // 1.0 in fp16
    ka::SafeTensors st;
    st.tensors["w"] = t;
    ka::write_safetensors(d / fmt::format("blobs/w{}.safetensors", ns[i]), st);
    wl << probe_workload(static_cast<int>(i) + 1, ns[i]) << "\n";
  }
  return d;
}

// What the probe's reference must have seen, from the problem layer's own resolution.
std::vector<int64_t> expected_seen(const ka::Problem& p, const ka::Workload& w) {
  std::vector<int64_t> out;
  for (const ka::TensorDef& t : p.def.inputs) {
    if (t.scalar) {
      const bool given_float = w.inputs.at(t.name).kind == ka::InputSource::Scalar;  // eps = 0.5
      out.insert(out.end(), {given_float || ka::dtype_is_float(t.dtype) ? 101 : 102, -1});
      continue;
    }
    const auto shape = ka::resolve_shape(t, w);
    out.push_back(dtype_code(t.dtype));
    out.push_back(static_cast<int64_t>(shape.size()));
    out.insert(out.end(), shape.begin(), shape.end());
  }
  out.resize(40, 0);
  return out;
}

std::vector<int64_t> int64s(const ka::Tensor& t) {
  std::vector<int64_t> v(static_cast<size_t>(t.numel()));
  std::memcpy(v.data(), t.data.data(), v.size() * sizeof(int64_t));
  return v;
}

}  // namespace

TEST(OracleProtocol, ReferenceReceivesTheResolvedShapesAndDtypes) {
  TempDir t;
  ka::Problem p = ka::load_problem(write_probe(t.path, {5, 8}));
  ASSERT_TRUE(p.all_inputs_available());
  ka::Oracle oracle("cpu", t.path / "oracle");
  auto es = oracle.ensure(p, {{&p.workloads.at(0), 0, false}, {&p.workloads.at(1), 3, false}}, false);
  for (size_t i = 0; i < 2; ++i) {
    const ka::OracleEntry& e = es.at(i);
    ASSERT_TRUE(e.ok()) << e.error;
    const ka::Workload& w = p.workloads.at(i);
    ka::SafeTensors ref = oracle.load(e, "reference.safetensors");
    EXPECT_EQ(int64s(ref.tensors.at("seen")), expected_seen(p, w)) << e.meta.dump();
    // meta.json: every input and output as resolved here, and no note of a disagreement.
    for (const ka::TensorDef& td : p.def.inputs) {
      const json& m = e.meta.at("inputs").at(td.name);
      if (!td.scalar) {
        EXPECT_EQ(m.at("dtype"), std::string(ka::dtype_name(td.dtype))) << td.name;
        EXPECT_EQ(m.at("shape").get<std::vector<int64_t>>(), ka::resolve_shape(td, w)) << td.name;
      }
    }
    for (const ka::TensorDef& td : p.def.outputs)
      EXPECT_EQ(e.meta.at("outputs").at(td.name).at("shape").get<std::vector<int64_t>>(), ka::resolve_shape(td, w));
    EXPECT_FALSE(ka::has(e.meta.at("notes").dump(), "definition resolves to")) << e.meta.at("notes").dump();
    EXPECT_FALSE(ka::has(e.meta.at("notes").dump(), "differ")) << e.meta.at("notes").dump();
    // The blob reached the reference unchanged.
    ka::SafeTensors in = oracle.load(e, "inputs.safetensors");
    ka::SafeTensors blob = ka::read_safetensors(p.dir / w.inputs.at("w").path);
    EXPECT_EQ(in.tensors.at("w").data, blob.tensors.at("w").data);
    EXPECT_EQ(e.meta.at("inputs").at("w").at("source"), "safetensors");
    EXPECT_EQ(e.meta.at("inputs").at("k").at("source"), "random");
  }
}

TEST(OracleProtocol, SpecCarriesWhatTheProblemLayerResolved) {
  TempDir t;
  ka::Problem p = ka::load_problem(write_probe(t.path, {1, 6, 4}));
  const json spec = json::parse(ka::oracle_spec(p).dump());
  EXPECT_EQ(spec.at("format"), ka::kOracleSpecFormat);
  ASSERT_EQ(spec.at("workloads").size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    const json& w = spec.at("workloads").at(i);
    const ka::Workload& pw = p.workloads.at(i);
    EXPECT_EQ(w.at("uuid"), pw.uuid);
    ASSERT_EQ(w.at("inputs").size(), p.def.inputs.size());
    for (size_t j = 0; j < p.def.inputs.size(); ++j) {
      const json& in = w.at("inputs").at(j);
      const ka::TensorDef& td = p.def.inputs.at(j);
      EXPECT_EQ(in.at("name"), td.name);  // definition order: the calling order
      EXPECT_EQ(in.at("dtype"), std::string(ka::dtype_name(td.dtype)));
      if (td.scalar) EXPECT_TRUE(in.at("shape").is_null());
      else EXPECT_EQ(in.at("shape").get<std::vector<int64_t>>(), ka::resolve_shape(td, pw));
    }
    const json& blob = w.at("inputs").at(3);
    EXPECT_EQ(blob.at("source"), "safetensors");
    EXPECT_TRUE(fs::path(blob.at("path").get<std::string>()).is_absolute());
    EXPECT_TRUE(fs::exists(blob.at("path").get<std::string>()));
    EXPECT_EQ(w.at("inputs").at(4).at("value"), 0.5);
  }
  // Capture traces the smallest of the workloads whose var axes are all >= 2: N = 4 (N = 1 is
  // smaller but has an axis below 2), with its derived axis as resolved.
  const json& cap = spec.at("capture");
  EXPECT_EQ(cap.at("uuid"), p.workloads.at(2).uuid);
  EXPECT_EQ(cap.at("axes").at("M"), 9);
  // A problem whose only workload has N = 1 traces it at N = 2, with M and the shapes resolved again.
  TempDir t2;
  ka::Problem q = ka::load_problem(write_probe(t2.path, {1}));
  ka::Workload cw = ka::capture_workload(q);
  EXPECT_EQ(cw.uuid, q.workloads.at(0).uuid);
  EXPECT_EQ(cw.axes.at("N"), 2);
  EXPECT_EQ(cw.axes.at("M"), 5);
  const json qs = json::parse(ka::oracle_spec(q).dump());
  EXPECT_EQ(qs.at("capture").at("inputs").at(0).at("shape"), json::array({3, 5}));
}

// The oracle's scripts refuse what they cannot read: exit 2 and one line, no job run.
TEST(OracleProtocol, UnreadableSpecIsAUsageError) {
  TempDir t;
  std::ofstream(t.path / "spec.json") << R"({"format": "something-else", "workloads": []})";
  fs::create_directories(t.path / "out");
  for (const char* script : {"src/oracle/kernelarc_oracle.py", "src/oracle/capture.py"}) {
    std::vector<std::string> cmd{"python3", ka::resource_path(script).string()};
    if (std::string(script).find("capture") != std::string::npos)
      cmd.insert(cmd.end(), {"--spec", (t.path / "spec.json").string(), "-o", (t.path / "out").string()});
    else
      cmd.insert(cmd.end(), {"generate", "--spec", (t.path / "spec.json").string(), "--device", "cpu", "--job",
                             "u:0:" + (t.path / "out").string()});
    ka::RunResult r = ka::run_command(cmd, std::chrono::seconds(120));
    EXPECT_EQ(r.exit_code, 2) << script << ": " << r.output;
    EXPECT_TRUE(ka::has(r.output, "not a spec of format")) << r.output;
    EXPECT_EQ(r.output.find('\n'), r.output.size() - 1) << "not one line: " << r.output;
  }
}

// Inputs are drawn exactly as before the oracle took its shapes from the spec: rmsnorm_h128's first
// workload at seed 0 gives the same bytes the definition-parsing oracle wrote (torch 2.11 on the CPU;
// another torch version may draw other numbers, and is not compared).
TEST(OracleProtocol, GenerationIsUnchanged) {
  TempDir t;
  ka::Problem p = ka::load_problem(ka::source_root() / "examples/problems/rmsnorm_h128");
  ka::Oracle oracle("cpu", t.path / "oracle");
  auto es = oracle.ensure(p, {{&p.workloads.at(0), 0, false}}, false);
  ASSERT_TRUE(es.at(0).ok()) << es.at(0).error;
  if (es.at(0).meta.value("torch", std::string()).rfind("2.11.", 0) != 0) GTEST_SKIP() << "another torch version";
  EXPECT_EQ(ka::sha256_file(es.at(0).dir / "inputs.safetensors"),
            "5eb4015f914a1d2219d3b9fdde9b79f7980174797aeada4d68604702c1d7824a");
  EXPECT_EQ(ka::sha256_file(es.at(0).dir / "reference.safetensors"),
            "ddf2eaf207e9b4b8c4cc68584a73dfbf457a51e3a28f4c9349d16affe7d13e0b");
}
