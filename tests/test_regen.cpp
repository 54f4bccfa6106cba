// test_regen.cpp — regenerated inputs (random inputs above the oracle's
// KERNELARC_ORACLE_REGEN_BYTES are not stored; the judge rebuilds them with the oracle's
// long-lived `regen-serve` process and checks their SHA-256): the entry stores no bytes for them, the loaded set is byte-identical to an entry
// written without the threshold, a tampered recorded hash is refused with a clear error, the
// reference-mutation check still works, and the judge gives the same verdicts while holding no
// input sets in its own RAM once the worker keeps them.
#include "util/resources.h"
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "oracle/oracle.h"
#include "problem/problem.h"
#include "util/error.h"
#include "util/files.h"
#include "util/hash.h"
#include "util/process.h"
#include "test_support.h"

namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

const fs::path kRoot = ka::source_root();
const fs::path kProblem = kRoot / "examples/problems/rmsnorm_h128";

struct TempDir {
  fs::path path;
  TempDir() : path(ka::make_temp_dir((fs::temp_directory_path() / "ka-regen-").string())) {}
  ~TempDir() {
    std::error_code ec;
    for (auto it = fs::recursive_directory_iterator(path, ec); it != fs::recursive_directory_iterator(); ++it)
      ::chmod(it->path().c_str(), 0755);
    fs::remove_all(path, ec);
  }
};

// Sets KERNELARC_ORACLE_REGEN_BYTES for the oracle processes started while it lives.
struct RegenBytes {
  explicit RegenBytes(const std::string& v) { ::setenv("KERNELARC_ORACLE_REGEN_BYTES", v.c_str(), 1); }
  ~RegenBytes() { ::unsetenv("KERNELARC_ORACLE_REGEN_BYTES"); }
};

ka::OracleEntry entry(ka::Oracle& oracle, const ka::Problem& p, size_t w, uint64_t seed) {
  auto es = oracle.ensure(p, {{&p.workloads.at(w), seed, false}}, false);
  EXPECT_TRUE(es.at(0).ok()) << es.at(0).error;
  return es.at(0);
}

using ka::user_error_of;

}  // namespace

// rmsnorm_h128 workload 0: hidden_states is 192x128 bf16 (48 KiB), weight 128 bf16 (256 bytes).
TEST(Regen, EntryStoresNoBytesAndLoadedSetIsIdentical) {
  TempDir t;
  ka::Problem p = ka::load_problem(kProblem);
  ka::Oracle plain("cpu", t.path / "plain" / "oracle");
  ka::OracleEntry full = entry(plain, p, 0, 7);
  ka::Oracle small("cpu", t.path / "small" / "oracle");
  ka::OracleEntry regen;
  {
    RegenBytes env("1000");
    regen = entry(small, p, 0, 7);
  }
  ASSERT_TRUE(regen.meta["inputs"]["hidden_states"].value("regenerate", false)) << regen.meta.dump();
  EXPECT_FALSE(regen.meta["inputs"]["weight"].contains("regenerate"));
  EXPECT_FALSE(full.meta["inputs"]["hidden_states"].contains("regenerate"));
  EXPECT_TRUE(regen.meta["reference_mutated_inputs"].empty());
  EXPECT_LT(fs::file_size(regen.dir / "inputs.safetensors"), 1000u);
  ka::SafeTensors stored = small.load(regen, "inputs.safetensors");
  EXPECT_EQ(stored.tensors.count("hidden_states"), 0u);
  EXPECT_EQ(stored.tensors.count("weight"), 1u);

  ka::SafeTensors want = plain.load(full, "inputs.safetensors");
  ka::SafeTensors got = small.load_inputs(p, regen);
  ASSERT_EQ(got.tensors.size(), want.tensors.size());
  for (const auto& [name, w] : want.tensors) {
    const ka::Tensor& g = got.tensors.at(name);
    EXPECT_EQ(g.dtype, w.dtype) << name;
    EXPECT_EQ(g.shape, w.shape) << name;
    EXPECT_TRUE(g.data == w.data) << name << " differs from the stored set";
  }
  EXPECT_EQ(ka::sha256_file(regen.dir / "reference.safetensors"), ka::sha256_file(full.dir / "reference.safetensors"));
  // The temporary regen folder is gone.
  for (const auto& d : fs::directory_iterator(t.path / "small" / "oracle"))
    EXPECT_NE(d.path().filename().string().rfind("regen-", 0), 0u) << d.path();
}

// One `regen-serve` process regenerates every set an Oracle loads (the Python start is paid once per
// problem, not per set: 018's ~1 GB KV caches made that seconds per set on the H200), and each set it
// returns is the one its entry was written from.
TEST(Regen, OneOracleProcessServesEverySet) {
  TempDir t;
  ka::Problem p = ka::load_problem(kProblem);
  ka::Oracle plain("cpu", t.path / "plain" / "oracle");
  ka::Oracle small("cpu", t.path / "small" / "oracle");
  std::vector<std::pair<ka::OracleEntry, ka::OracleEntry>> pairs;  // (stored, regenerated)
  for (uint64_t seed : {7, 8, 9}) {
    ka::OracleEntry full = entry(plain, p, 0, seed);
    RegenBytes env("1000");
    pairs.emplace_back(full, entry(small, p, 0, seed));
  }
  for (const auto& [full, regen] : pairs) {
    ASSERT_TRUE(regen.meta["inputs"]["hidden_states"].value("regenerate", false));
    ka::SafeTensors got = small.load_inputs(p, regen);
    EXPECT_TRUE(got.tensors.at("hidden_states").data == plain.load(full, "inputs.safetensors").tensors.at("hidden_states").data)
        << "seed " << regen.meta.value("seed", 0);
  }
  int logs = 0, starts = 0;
  for (const auto& d : fs::directory_iterator(t.path / "small" / "logs")) {
    if (d.path().filename().string().rfind("regen-serve-", 0) != 0) continue;
    ++logs;
    std::ifstream f(d.path());
    for (std::string line; std::getline(f, line);) starts += line.find("kernelarc_oracle: regen-serve for") != std::string::npos;
  }
  EXPECT_EQ(logs, 1);
  EXPECT_EQ(starts, 1) << "one oracle process for the three sets";
}

// Untimed sets made by several oracle processes at once (KERNELARC_ORACLE_PROCS; the default on
// cuda) are the ones one process makes: same inputs, same reference outputs, for every workload.
TEST(Regen, UntimedSetsFromSeveralProcessesAreTheSameSets) {
  TempDir t;
  ka::Problem p = ka::load_problem(kProblem);
  std::vector<ka::OracleRequest> reqs;
  for (size_t w = 0; w < 5; ++w) reqs.push_back({&p.workloads.at(w), 11, false});
  ka::Oracle one("cpu", t.path / "one" / "oracle");
  std::vector<ka::OracleEntry> a = one.ensure(p, reqs, false);
  ::setenv("KERNELARC_ORACLE_PROCS", "3", 1);
  ka::Oracle three("cpu", t.path / "three" / "oracle");
  std::vector<ka::OracleEntry> b = three.ensure(p, reqs, false);
  ::unsetenv("KERNELARC_ORACLE_PROCS");
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_TRUE(a[i].ok() && b[i].ok()) << a[i].error << " / " << b[i].error;
    EXPECT_EQ(a[i].dir.filename(), b[i].dir.filename());  // the same cache key
    for (const char* f : {"inputs.safetensors", "reference.safetensors"})
      EXPECT_EQ(ka::sha256_file(a[i].dir / f), ka::sha256_file(b[i].dir / f)) << "workload " << i << " " << f;
  }
}

// A recorded hash that does not match: refused by the manifest while meta.json is as written, and
// by the regenerated bytes' check when the manifest was rewritten too.
TEST(Regen, TamperedRecordedHashIsAClearError) {
  TempDir t;
  ka::Problem p = ka::load_problem(kProblem);
  ka::Oracle oracle("cpu", t.path / "oracle");
  ka::OracleEntry e;
  {
    RegenBytes env("1000");
    e = entry(oracle, p, 0, 3);
  }
  ASSERT_TRUE(e.meta["inputs"]["hidden_states"].value("regenerate", false));
  ::chmod(e.dir.c_str(), 0755);
  ::chmod((e.dir / "meta.json").c_str(), 0644);
  ::chmod((e.dir / "manifest.json").c_str(), 0644);
  json meta = e.meta;
  meta["inputs"]["hidden_states"]["sha256"] = std::string(64, '0');
  std::ofstream(e.dir / "meta.json") << meta.dump(1);
  std::string err = user_error_of([&] { oracle.load_inputs(p, e); });
  EXPECT_NE(err.find("meta.json fails its hash check"), std::string::npos) << err;

  json manifest = json::parse(ka::read_text(e.dir / "manifest.json"));
  manifest["files"]["meta.json"] = ka::sha256_file(e.dir / "meta.json");
  std::ofstream(e.dir / "manifest.json") << manifest.dump(1);
  err = user_error_of([&] { oracle.load_inputs(p, e); });
  EXPECT_NE(err.find("regenerated input 'hidden_states'"), std::string::npos) << err;
  EXPECT_NE(err.find("not deterministic"), std::string::npos) << err;
}

// The reference-mutation check compares a regenerated input's hash after the reference ran.
TEST(Regen, ReferenceMutationOfARegeneratedInputIsRecorded) {
  TempDir t;
  json def = {{"name", "mut"},
              {"axes", {{"S", {{"type", "var"}}}}},
              {"inputs", {{"x", {{"shape", {"S"}}, {"dtype", "float32"}}}, {"y", {{"shape", {"S"}}, {"dtype", "float32"}}}}},
              {"outputs", {{"o", {{"shape", {"S"}}, {"dtype", "float32"}}}}},
              {"reference", "import torch\ndef run(x, y):\n    x.add_(1)\n    return x + y\n"}};
  fs::path d = t.path / "mut";
  fs::create_directories(d);
  std::ofstream(d / "definition.json") << def.dump(1);
  std::ofstream(d / "workload.jsonl")
      << json{{"uuid", "00000000-0000-4000-8000-0000000000aa"}, {"axes", {{"S", 64}}}, {"inputs", json::object()}}.dump()
      << "\n";
  ka::Problem p = ka::load_problem(d);
  ka::Oracle oracle("cpu", t.path / "oracle");
  ka::OracleEntry e;
  {
    RegenBytes env("100");
    e = entry(oracle, p, 0, 0);
  }
  EXPECT_TRUE(e.meta["inputs"]["x"].value("regenerate", false));
  EXPECT_TRUE(e.meta["inputs"]["y"].value("regenerate", false));
  EXPECT_EQ(e.meta["reference_mutated_inputs"], json::array({"x"})) << e.meta.dump();
  // The regenerated x is x as generated (before the reference added 1).
  ka::SafeTensors in = oracle.load_inputs(p, e);
  EXPECT_EQ(in.tensors.at("x").data.size(), 64u * 4);
}

namespace {

json eval_report(const fs::path& solution, const fs::path& cache, const std::string& regen_bytes,
                 std::vector<std::string> extra = {}) {
  std::vector<std::string> cmd{KA_BINARY, "eval", kProblem.string(), "--solution", solution.string(), "--workloads", "3",
                               "--timeout", "5", "--no-reference-time", "--iterations", "3", "--warmup", "1", "--json"};
  cmd.insert(cmd.end(), extra.begin(), extra.end());
  std::vector<std::string> env{"KERNELARC_CACHE=" + cache.string()};
  if (!regen_bytes.empty()) env.push_back("KERNELARC_ORACLE_REGEN_BYTES=" + regen_bytes);
  ka::RunResult r = ka::run_command(cmd, std::chrono::minutes(5), env);
  auto start = r.output.find("{\n");
  if (start == std::string::npos) return {{"output", r.output}};
  json j = json::parse(r.output.substr(start), nullptr, false);
  return j.is_object() ? j : json{{"output", r.output}};
}

std::vector<std::string> verdicts(const json& report) {
  std::vector<std::string> v;
  if (!report.contains("workloads")) return {"no report: " + report.dump()};
  for (const auto& w : report["workloads"]) v.push_back(w["verdict"]);
  return v;
}

}  // namespace

// `kernelarc eval` on entries with regenerated inputs: the same verdicts as on fully stored
// entries, for a correct solution and adversarial ones, with sets kept in the worker and sent with
// every call. With kept sets the judge holds no set in its own RAM at the end (and loads the sets
// after the first ahead, while the worker runs); sent sets are cached (within the host budget).
TEST(Regen, JudgeGivesTheSameVerdicts) {
  TempDir t;
  const fs::path ok = kRoot / "examples/solutions/rmsnorm_h128/rmsnorm_host.cpp";
  const fs::path adv = kRoot / "tests/data/adversarial/host";
  const fs::path plain = t.path / "plain", small = t.path / "small";
  for (const auto& [sol, send] : std::vector<std::pair<fs::path, bool>>{
           {ok, false}, {ok, true}, {adv / "write_input.cpp", false}, {adv / "remember.cpp", true}}) {
    std::vector<std::string> extra;
    if (send) extra.push_back("--send-inputs");
    json a = eval_report(sol, plain, "", extra);
    json b = eval_report(sol, small, "1000", extra);
    EXPECT_EQ(verdicts(a), verdicts(b)) << sol << (send ? " --send-inputs" : "");
    if (sol == ok) {
      EXPECT_EQ(verdicts(b), std::vector<std::string>(3, "passed")) << b.dump();
      if (send)
        EXPECT_GT(b.value("host_set_bytes", size_t{0}), 0u) << b.dump();
      else
        EXPECT_EQ(b.value("host_set_bytes", size_t{1}), 0u) << b.dump();
      // Kept sets with regenerated inputs are loaded ahead while the worker runs the earlier ones
      // (all but the first of the eighteen: 3 workloads × check, 4 timing sets, fresh); sets sent
      // with every call, and stored ones, are not.
      EXPECT_EQ(b.value("sets_loaded_ahead", size_t{99}), send ? 0u : 17u) << b.dump();
      EXPECT_EQ(a.value("sets_loaded_ahead", size_t{99}), 0u) << a.dump();
    }
  }
  // The small-threshold cache really holds entries without the hidden_states bytes.
  int regenerated = 0;
  for (const auto& d : fs::directory_iterator(small / "oracle")) {
    if (!fs::exists(d.path() / "meta.json")) continue;
    json m = json::parse(ka::read_text(d.path() / "meta.json"));
    regenerated += m["inputs"]["hidden_states"].value("regenerate", false);
  }
  EXPECT_EQ(regenerated, 18);
}
