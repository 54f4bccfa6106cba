// test_sol.cpp — speed-of-light bounds on CPU, checked exactly on closed forms: the oracle's work
// count (kernelarc_oracle.py count, through Oracle::count) for a GEMM (2·M·N·K), RMSNorm (bytes =
// its inputs and output), a paged pool (bytes = the pages read) and attention (full: 4·B·H·Sq·Skv·D; causal SDPA: 4·B·H·D·Σ_i min(i+1,Skv),
// where FlopCounterMode itself reports the full 4·B·H·Sq·Skv·D and nothing at all for the CPU
// flash kernel), the SOL formula and its limiting term, and the score's edge cases.
#include "util/resources.h"
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include <fmt/format.h>

#include "oracle/oracle.h"
#include "problem/problem.h"
#include "sol/bounds.h"
#include "sol/calibrate.h"
#include "sol/score.h"
#include "util/files.h"

namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

struct TempDir {
  fs::path path;
  TempDir() : path(ka::make_temp_dir((fs::temp_directory_path() / "ka-sol-").string())) {}
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

fs::path dev_root() { return ka::source_root() / ".." / "shared" / "problems" / "sol-execbench" / "FlashInfer-Bench"; }

// A problem folder with one workload.
fs::path write_problem(const fs::path& root, const std::string& name, const json& def, const json& axes) {
  fs::path d = root / name;
  fs::create_directories(d);
  std::ofstream(d / "definition.json") << def.dump(1);
  json inputs = json::object();
  for (auto it = def["inputs"].begin(); it != def["inputs"].end(); ++it) inputs[it.key()] = {{"type", "random"}};
  json w = {{"uuid", "00000000-0000-4000-8000-000000000001"}, {"axes", axes}, {"inputs", inputs}};
  std::ofstream(d / "workload.jsonl") << w.dump() << "\n";
  return d;
}

// Appends workload number n (uuid ...-00000000000n) of the attention definitions below, with axes
// S and T and random q, k, v, to the problem in `dir`.
void append_attention_workload(const fs::path& dir, int n, int S, int T) {
  json w = {{"uuid", fmt::format("00000000-0000-4000-8000-{:012}", n)},
            {"axes", {{"S", S}, {"T", T}}},
            {"inputs", {{"q", {{"type", "random"}}}, {"k", {{"type", "random"}}}, {"v", {{"type", "random"}}}}}};
  std::ofstream(dir / "workload.jsonl", std::ios::app) << w.dump() << "\n";
}

// Sets an environment variable for the oracle processes started while it lives.
struct ScopedEnv {
  std::string name;
  ScopedEnv(std::string n, const std::string& v) : name(std::move(n)) { ::setenv(name.c_str(), v.c_str(), 1); }
  ~ScopedEnv() { ::unsetenv(name.c_str()); }
};

json count_one(const fs::path& problem_dir, const fs::path& cache, size_t index = 0) {
  ka::Problem p = ka::load_problem(problem_dir);
  ka::Oracle oracle("cpu", cache / "oracle");
  auto c = oracle.count(p, {&p.workloads.at(index)});
  EXPECT_TRUE(c.at(0).value("ok", false)) << c.at(0).dump();
  return c.at(0);
}

// (nlohmann::json sorts keys: the inputs are k, q, v in that order, so run takes them so.)
json attention_def(const std::string& reference) {
  return {{"name", "attn"},
          {"axes", {{"B", {{"type", "const"}, {"value", 2}}}, {"H", {{"type", "const"}, {"value", 3}}},
                    {"S", {{"type", "var"}}}, {"T", {{"type", "var"}}}, {"D", {{"type", "const"}, {"value", 16}}}}},
          {"inputs", {{"q", {{"shape", {"B", "H", "S", "D"}}, {"dtype", "float32"}}},
                      {"k", {{"shape", {"B", "H", "T", "D"}}, {"dtype", "float32"}}},
                      {"v", {{"shape", {"B", "H", "T", "D"}}, {"dtype", "float32"}}}}},
          {"outputs", {{"o", {{"shape", {"B", "H", "S", "D"}}, {"dtype", "float32"}}}}},
          {"reference", reference}};
}

// A count process that dies (here SIGKILL, as the out-of-memory killer sends) loses only the
// workloads it had not finished: the first workload's count is cached as its line arrives, the
// second says why it was not counted, and nothing throws.
TEST(SolCount, KilledCountKeepsFinishedWorkloads) {
  TempDir t;
  json def = attention_def(
      "import os, signal, torch\ndef run(k, q, v):\n    if q.shape[2] != 4:\n        os.kill(os.getpid(), signal.SIGKILL)\n"
      "    return q.clone()\n");
  fs::path d = write_problem(t.path, "killed", def, {{"S", 4}, {"T", 4}});
  append_attention_workload(d, 2, 5, 4);
  ka::Problem p = ka::load_problem(d);
  ASSERT_EQ(p.workloads.size(), 2u);
  ::setenv("KERNELARC_COUNT_PROCS", "1", 1);  // both workloads in one process, the killer second
  ka::Oracle oracle("cpu", t.path / "oracle");
  auto c = oracle.count(p, {&p.workloads.at(0), &p.workloads.at(1)});
  ::unsetenv("KERNELARC_COUNT_PROCS");
  EXPECT_TRUE(c.at(0).value("ok", false)) << c.at(0).dump();
  EXPECT_FALSE(c.at(1).value("ok", false)) << c.at(1).dump();
  EXPECT_NE(c.at(1).value("message", "").find("SIGKILL"), std::string::npos) << c.at(1).dump();
  // The finished count is in the cache: counting it again runs no oracle (a fresh Oracle over the
  // same folder, with a Python that cannot start, still answers).
  ::setenv("KERNELARC_PYTHON", "/nonexistent/python3", 1);
  ka::Oracle again("cpu", t.path / "oracle");
  auto c2 = again.count(p, {&p.workloads.at(0)});
  ::unsetenv("KERNELARC_PYTHON");
  EXPECT_TRUE(c2.at(0).value("ok", false)) << c2.at(0).dump();
  EXPECT_EQ(c2.at(0).value("bytes", 0.0), c.at(0).value("bytes", -1.0));
}

TEST(SolCount, GemmFlopsAre2MNK) {
  TempDir t;
  json def = {{"name", "gemm"},
              {"axes", {{"M", {{"type", "var"}}}, {"N", {{"type", "const"}, {"value", 48}}}, {"K", {{"type", "const"}, {"value", 80}}}}},
              {"inputs", {{"A", {{"shape", {"M", "K"}}, {"dtype", "bfloat16"}}}, {"B", {{"shape", {"N", "K"}}, {"dtype", "bfloat16"}}}}},
              {"outputs", {{"C", {{"shape", {"M", "N"}}, {"dtype", "bfloat16"}}}}},
              {"reference", "import torch\ndef run(A, B):\n    return torch.matmul(A, B.T)\n"}};
  json c = count_one(write_problem(t.path, "gemm", def, {{"M", 37}}), t.path);
  EXPECT_EQ(c["matrix_flops"]["bfloat16"].get<double>(), 2.0 * 37 * 48 * 80);
  EXPECT_EQ(c["elementwise_flops"].get<double>(), 0);
  EXPECT_EQ(c["bytes"].get<double>(), 2.0 * (37 * 80 + 48 * 80 + 37 * 48));
}

// A paged pool is charged for the pages the reference reads, not for the pool: through a view and
// a dtype conversion (`cache.squeeze(1).to(torch.float32)`), then a gather of every 7th page
// (10 of 70) and a slice of 3 more pages; the query is read whole.
TEST(SolCount, PagedPoolIsChargedForThePagesRead) {
  TempDir t;
  json def = {{"name", "paged"},
              {"axes", {{"B", {{"type", "var"}}}, {"P", {{"type", "const"}, {"value", 70}}}, {"O", {{"type", "const"}, {"value", 1}}},
                        {"N", {{"type", "const"}, {"value", 13}}}, {"D", {{"type", "const"}, {"value", 16}}}}},
              {"inputs", {{"cache", {{"shape", {"P", "O", "D"}}, {"dtype", "bfloat16"}}}, {"q", {{"shape", {"B", "D"}}, {"dtype", "float32"}}}}},
              {"outputs", {{"s", {{"shape", {"B", "N"}}, {"dtype", "float32"}}}}},
              {"reference",
               "import torch\ndef run(cache, q):\n    flat = cache.squeeze(1).to(torch.float32)\n"
               "    k = torch.cat([flat[torch.arange(0, 70, 7, device=flat.device)], flat[1:4]])\n    return q @ k.T\n"}};
  json c = count_one(write_problem(t.path, "paged", def, {{"B", 5}}), t.path);
  EXPECT_EQ(c["bytes_in_whole"].get<double>(), 2.0 * 70 * 16 + 4.0 * 5 * 16);
  EXPECT_EQ(c["bytes_in"].get<double>(), 2.0 * 13 * 16 + 4.0 * 5 * 16);
  EXPECT_EQ(c["bytes"].get<double>(), 2.0 * 13 * 16 + 4.0 * 5 * 16 + 4.0 * 5 * 13);
  EXPECT_NE(c["notes"].dump().find("cache: 13 of 70 rows read"), std::string::npos) << c["notes"].dump();
}

TEST(SolCount, DevGemm004) {
  fs::path d = dev_root() / "004_gemm_n128_k2048";
  if (!fs::exists(d)) GTEST_SKIP() << d << " is absent";
  TempDir t;
  ka::Problem p = ka::load_problem(d);
  size_t idx = 0;  // the smallest workload (M)
  for (size_t i = 0; i < p.workloads.size(); ++i)
    if (p.workloads[i].raw["axes"]["M"].get<long>() < p.workloads[idx].raw["axes"]["M"].get<long>()) idx = i;
  long m = p.workloads[idx].raw["axes"]["M"].get<long>();
  json c = count_one(d, t.path, idx);
  EXPECT_EQ(c["matrix_flops"]["float16"].get<double>(), 2.0 * m * 128 * 2048);
  EXPECT_EQ(c["flop_counter_total"].get<double>(), 2.0 * m * 128 * 2048);
  EXPECT_EQ(c["bytes"].get<double>(), 2.0 * (m * 2048 + 128 * 2048 + m * 128));
}

// A count is cached for every device: one made on the CPU is what a CUDA run reads (here, with no
// GPU, a CUDA oracle that ran the count itself would fail).
TEST(SolCount, CountServesEveryDevice) {
  TempDir t;
  fs::path d = ka::source_root() / "examples/problems/rmsnorm_h128";
  json on_cpu = count_one(d, t.path);
  ka::Problem p = ka::load_problem(d);
  ka::Oracle cuda("cuda", t.path / "oracle");
  EXPECT_EQ(cuda.count_key(p, p.workloads.at(0)), ka::Oracle("cpu", t.path / "oracle").count_key(p, p.workloads.at(0)));
  EXPECT_NE(cuda.key(p, p.workloads.at(0), 0), ka::Oracle("cpu", t.path / "oracle").key(p, p.workloads.at(0), 0));
  auto c = cuda.count(p, {&p.workloads.at(0)});
  EXPECT_EQ(c.at(0), on_cpu);
}

TEST(SolCount, RmsNormBytesAreInputsPlusOutput) {
  fs::path d = dev_root() / "021_rmsnorm_h128";
  if (!fs::exists(d)) d = ka::source_root() / "examples/problems/rmsnorm_h128";
  TempDir t;
  ka::Problem p = ka::load_problem(d);
  long b = p.workloads.at(0).raw["axes"]["batch_size"].get<long>();
  json c = count_one(d, t.path, 0);
  // hidden_states [b,128] bf16 + weight [128] bf16 in, output [b,128] bf16 out.
  EXPECT_EQ(c["bytes_in"].get<double>(), 2.0 * (b * 128 + 128));
  EXPECT_EQ(c["bytes_out"].get<double>(), 2.0 * b * 128);
  EXPECT_EQ(c["bytes"].get<double>(), 2.0 * (2 * b * 128 + 128));
  EXPECT_TRUE(c["matrix_flops"].empty());
  EXPECT_GT(c["elementwise_flops"].get<double>(), 0);
}

// `kernelarc sol` times references without keeping their sets: a timings-only entry holds meta.json
// alone (with the reference's timing), lives apart from the judge's entries, and a later judge
// request still gets a complete entry.
TEST(SolOracle, TimingsOnlyEntriesHoldNoSets) {
  fs::path d = ka::source_root() / "examples/problems/rmsnorm_h128";
  TempDir t;
  ka::Problem p = ka::load_problem(d);
  ka::Oracle oracle("cpu", t.path / "oracle");
  std::vector<ka::OracleRequest> reqs{{&p.workloads.at(0), 0}};
  auto timed = oracle.ensure(p, reqs, true, false, /*timings_only=*/true);
  ASSERT_TRUE(timed.at(0).ok()) << timed.at(0).error;
  EXPECT_TRUE(timed.at(0).reference_ms().has_value());
  EXPECT_TRUE(timed.at(0).meta.value("timings_only", false));
  EXPECT_TRUE(fs::exists(timed.at(0).dir / "meta.json"));
  EXPECT_FALSE(fs::exists(timed.at(0).dir / "inputs.safetensors"));
  EXPECT_FALSE(fs::exists(timed.at(0).dir / "reference.safetensors"));
  EXPECT_FALSE(fs::exists(t.path / "oracle" / timed.at(0).dir.filename()));
  auto full = oracle.ensure(p, reqs, false);
  ASSERT_TRUE(full.at(0).ok()) << full.at(0).error;
  EXPECT_NE(full.at(0).dir, timed.at(0).dir);
  EXPECT_TRUE(fs::exists(full.at(0).dir / "inputs.safetensors"));
  EXPECT_TRUE(fs::exists(full.at(0).dir / "reference.safetensors"));
}

// The judge's timed set takes the reference timings that `sol` measured before (the timings-only
// cache, same key) when they were measured on a device of the name it is given, and is then made
// untimed: its stored meta.json holds no timing, the entry it returns holds the earlier figures it
// asked for (torch.compile's only when asked) and says where they come from, also when the set
// already exists. Another device's name gets nothing borrowed: the set is made again with its own
// timing.
TEST(SolOracle, TimedSetsBorrowTimingsMeasuredBeforeOnTheSameDevice) {
  fs::path d = ka::source_root() / "examples/problems/rmsnorm_h128";
  TempDir t;
  ka::Problem p = ka::load_problem(d);
  ka::Oracle oracle("cpu", t.path / "oracle");
  std::vector<ka::OracleRequest> reqs{{&p.workloads.at(0), 0}};
  auto earlier = oracle.ensure(p, reqs, true, false, /*timings_only=*/true);
  ASSERT_TRUE(earlier.at(0).ok()) << earlier.at(0).error;
  const double ms = earlier.at(0).reference_ms().value();
  const std::string device = earlier.at(0).meta.value("device_name", std::string());
  ASSERT_FALSE(device.empty());
  {  // as if `sol` had also timed torch.compile (compiling on a CPU would take this test minutes)
    json meta = earlier.at(0).meta;
    meta["compile_ms"] = 123.0;
    meta["compile_timing"] = {{"method", "test"}};
    fs::permissions(earlier.at(0).dir, fs::perms::owner_write, fs::perm_options::add);
    fs::permissions(earlier.at(0).dir / "meta.json", fs::perms::owner_write, fs::perm_options::add);
    std::ofstream(earlier.at(0).dir / "meta.json") << meta.dump(1);
  }

  oracle.borrow_timings_for(device);
  for (int round = 0; round < 2; ++round) {  // made, then found in the cache
    auto e = oracle.ensure(p, reqs, true);
    ASSERT_TRUE(e.at(0).ok()) << e.at(0).error;
    EXPECT_EQ(e.at(0).reference_ms(), ms) << "round " << round;
    EXPECT_FALSE(e.at(0).compile_ms().has_value()) << "round " << round << ": a compile timing nobody asked for";
    ASSERT_TRUE(e.at(0).meta.contains("timings_from")) << "round " << round;
    EXPECT_EQ(e.at(0).meta["timings_from"].value("cache", ""), "oracle-timings");
    const json stored = json::parse(ka::read_text(e.at(0).dir / "meta.json"));
    EXPECT_FALSE(stored.value("reference_ms", json()).is_number()) << "round " << round << ": the set was timed here";
    EXPECT_TRUE(fs::exists(e.at(0).dir / "reference.safetensors"));
  }
  auto with_compile = oracle.ensure(p, reqs, true, /*time_compile=*/true);
  ASSERT_TRUE(with_compile.at(0).ok()) << with_compile.at(0).error;
  EXPECT_EQ(with_compile.at(0).compile_ms(), 123.0);
  EXPECT_EQ(with_compile.at(0).reference_ms(), ms);

  oracle.borrow_timings_for("another GPU");
  auto own = oracle.ensure(p, reqs, true);
  ASSERT_TRUE(own.at(0).ok()) << own.at(0).error;
  EXPECT_FALSE(own.at(0).meta.contains("timings_from"));
  ASSERT_TRUE(own.at(0).reference_ms().has_value());
  EXPECT_NE(*own.at(0).reference_ms(), ms);
  EXPECT_TRUE(json::parse(ka::read_text(own.at(0).dir / "meta.json")).value("reference_ms", json()).is_number());
}

// SOL-ExecBench's protocol (10 warm-up, 50 timed calls) for a fast reference; a slow one (Python
// loops over sequences and heads take 50-500 ms a call) gets fewer calls, bounded by the oracle's
// time budgets (0.5 s of warm calls, at least 2; 2 s of timed calls, at least 3), and the timing
// says how many ran. A 0.26 s call: 3 warm-up calls (the first and two warm ones), 7 timed
// (2 s / 0.26 s), or 6 when the machine is loaded (CI runs two tests at once) and a warm call takes
// 0.29 s or more: the count follows the measured call, never more than the budget holds.
TEST(SolOracle, SlowReferencesGetFewerTimedCalls) {
  TempDir t;
  json def = attention_def("import time, torch\ndef run(k, q, v):\n    time.sleep(0.26)\n    return q.clone()\n");
  fs::path slow = write_problem(t.path, "slow", def, {{"S", 4}, {"T", 4}});
  ka::Oracle oracle("cpu", t.path / "oracle");
  ka::Problem ps = ka::load_problem(slow);
  auto e = oracle.ensure(ps, {{&ps.workloads.at(0), 0}}, true, false, /*timings_only=*/true);
  ASSERT_TRUE(e.at(0).ok()) << e.at(0).error;
  const json& tm = e.at(0).meta.at("reference_timing");
  EXPECT_EQ(tm.at("warmup").get<int>(), 3) << tm.dump();
  const int n = tm.at("iterations").get<int>();
  EXPECT_GE(n, 5) << tm.dump();
  EXPECT_LE(n, 7) << tm.dump();
  EXPECT_EQ(tm.at("samples_ms").size(), static_cast<size_t>(n));
  EXPECT_GE(*e.at(0).reference_ms(), 260.0);

  // A fast reference gets the full protocol, unless the cache flush alone before each call makes the
  // calls too slow for 50 to fit the 2 s budget: on the CPU the flush writes twice the last-level
  // cache, and a VM that reports a 260 MB L3 (2026-12-05) spends 15-60 ms per call on it under
  // ctest -j2, so there the count is the budget's (29 seen), never below the minimum of 3.
  ka::Problem pf = ka::load_problem(ka::source_root() / "examples/problems/rmsnorm_h128");
  auto f = oracle.ensure(pf, {{&pf.workloads.at(0), 0}}, true, false, /*timings_only=*/true);
  ASSERT_TRUE(f.at(0).ok()) << f.at(0).error;
  const json& ft = f.at(0).meta.at("reference_timing");
  const int fn = ft.at("iterations").get<int>();
  EXPECT_EQ(ft.at("samples_ms").size(), static_cast<size_t>(fn)) << ft.dump();
  if (fn == 50) {
    EXPECT_EQ(ft.at("warmup").get<int>(), 10) << ft.dump();
  } else {
    EXPECT_GE(ft.at("flush_bytes").get<int64_t>(), int64_t{256} << 20) << ft.dump();  // only a large flush explains it
    EXPECT_GE(fn, 3) << ft.dump();
  }
}

// A call of LONG_CALL_S (1 s) and more is timed once: at that length a call is ~10^5-10^6 launches
// whose spread is far below what a score resolves (014's reference: ~20 s a call). It is not
// repeated to warm up: the call that writes the reference's outputs is the warm-up of the first
// workload in a process, and the timed call itself of every later one (the process has run the
// reference before), so a long workload costs one pass, not three.
TEST(SolOracle, LongCallsAreTimedOnce) {
  TempDir t;
  json def = attention_def("import time, torch\ndef run(k, q, v):\n    time.sleep(1.1)\n    return q.clone()\n");
  fs::path d = write_problem(t.path, "long", def, {{"S", 4}, {"T", 4}});
  append_attention_workload(d, 2, 5, 4);
  ka::Oracle oracle("cpu", t.path / "oracle");
  ka::Problem p = ka::load_problem(d);
  ASSERT_EQ(p.workloads.size(), 2u);
  auto e = oracle.ensure(p, {{&p.workloads.at(0), 0}, {&p.workloads.at(1), 0}}, true, false, /*timings_only=*/true);
  for (int i = 0; i < 2; ++i) {
    ASSERT_TRUE(e.at(i).ok()) << e.at(i).error;
    const json& tm = e.at(i).meta.at("reference_timing");
    EXPECT_EQ(tm.at("warmup").get<int>(), 0) << tm.dump();
    EXPECT_EQ(tm.at("iterations").get<int>(), 1) << tm.dump();
    EXPECT_EQ(tm.at("samples_ms").size(), 1u) << tm.dump();
    EXPECT_GE(*e.at(i).reference_ms(), 1100.0);
    // The first workload's output call only warmed up; the second's was the timed call.
    EXPECT_EQ(tm.at("method").get<std::string>().find("output call counted") != std::string::npos, i == 1) << tm.dump();
  }
}

// torch.compile of the reference is compiled once per shape, not per workload (every job executes
// the reference module afresh, so a wrapper per run() object recompiled each time), and a long
// compiled call that compiled nothing counts as the timed call: three workloads of one shape, the
// first compiles (two warm-up calls: the one that compiled is not a warm call, however long; one
// timed call), the next two run one compiled call each.
TEST(SolOracle, CompiledReferenceIsCompiledOncePerProblem) {
  TempDir t;
  json def = attention_def("import time, torch\ndef run(k, q, v):\n    time.sleep(1.1)\n    return q * 2 + k.sum()\n");
  fs::path d = write_problem(t.path, "longc", def, {{"S", 4}, {"T", 4}});
  for (int i = 2; i <= 3; ++i) append_attention_workload(d, i, 4, 4);
  ka::Oracle oracle("cpu", t.path / "oracle");
  ka::Problem p = ka::load_problem(d);
  ASSERT_EQ(p.workloads.size(), 3u);
  auto e = oracle.ensure(p, {{&p.workloads.at(0), 0}, {&p.workloads.at(1), 0}, {&p.workloads.at(2), 0}}, true, true,
                         /*timings_only=*/true);
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(e.at(i).ok()) << e.at(i).error;
    ASSERT_TRUE(e.at(i).compile_ms().has_value()) << e.at(i).meta.dump();
    EXPECT_GE(*e.at(i).compile_ms(), 1100.0);
    const json& tm = e.at(i).meta.at("compile_timing");
    EXPECT_EQ(tm.at("iterations").get<int>(), 1) << tm.dump();
    EXPECT_EQ(tm.at("warmup").get<int>(), i == 0 ? 2 : 0) << tm.dump();
    EXPECT_EQ(tm.at("method").get<std::string>().find("first call counted") != std::string::npos, i > 0) << tm.dump();
    EXPECT_EQ(tm.at("dynamic"), false) << tm.dump();
  }
}

// The compile baseline is what a user compiling for each workload's shape gets: one graph per shape
// (dynamic=False), and no shape falls back to eager. The reference calls a helper that lives on
// across workloads (a module of its own, as library code does) behind a graph break, so dynamo
// compiles the helper's frame once per shape: eleven shapes, more than torch._dynamo's default of 8
// graphs per function, after which it would run the helper eagerly and the oracle would have timed
// that as the compiled reference. The graph breaks are named in compile_note. (Backend "eager":
// dynamo's graphs, guards and recompiles, without inductor's C++ compile of seconds per graph on a
// CPU.)
TEST(SolOracle, CompileBaselineHasAGraphPerShapeAndNoFallback) {
  ScopedEnv backend("KERNELARC_ORACLE_COMPILE_BACKEND", "eager");
  TempDir t;
  json def = attention_def(
      "import sys, types, torch\n"
      "if 'ka_test_shared' not in sys.modules:\n"
      "    m = types.ModuleType('ka_test_shared')\n"
      "    exec('import torch\\ndef scale(x):\\n    torch._dynamo.graph_break()\\n    return x * 2 + x.sum()\\n', m.__dict__)\n"
      "    sys.modules['ka_test_shared'] = m\n"
      "scale = sys.modules['ka_test_shared'].scale\n"
      "def run(k, q, v):\n    return scale(q) + k.sum()\n");
  fs::path d = write_problem(t.path, "shapes", def, {{"S", 2}, {"T", 4}});
  for (int i = 2; i <= 11; ++i) append_attention_workload(d, i, i + 1, 4);
  ka::Problem p = ka::load_problem(d);
  ASSERT_EQ(p.workloads.size(), 11u);
  std::vector<ka::OracleRequest> reqs;
  for (const auto& w : p.workloads) reqs.push_back({&w, 0});
  ka::Oracle oracle("cpu", t.path / "oracle");
  auto e = oracle.ensure(p, reqs, true, true, /*timings_only=*/true);
  for (size_t i = 0; i < e.size(); ++i) {
    ASSERT_TRUE(e.at(i).ok()) << e.at(i).error;
    ASSERT_TRUE(e.at(i).compile_ms().has_value()) << i << ": " << e.at(i).meta.dump();
    const json& tm = e.at(i).meta.at("compile_timing");
    EXPECT_EQ(tm.at("dynamic"), false) << tm.dump();
    EXPECT_EQ(tm.at("backend"), "eager") << tm.dump();
    EXPECT_NE(e.at(i).compile_note().find("graph break"), std::string::npos) << i << ": " << e.at(i).compile_note();
  }
}

// The compile budget (`--compile-budget`) bounds the time one oracle run spends on torch.compile:
// a reference whose compiled calls take 1.1 s each runs past a 2 s budget on its first workload, so
// that workload and the later ones have no compile timing and say why, while their eager timings
// stand. With the budget raised, every workload has its compile timing.
TEST(SolOracle, CompileBudgetBoundsTheCompiledTimings) {
  ScopedEnv backend("KERNELARC_ORACLE_COMPILE_BACKEND", "eager");
  for (double budget : {2.0, 120.0}) {
    TempDir t;
    json def = attention_def("import time, torch\ndef run(k, q, v):\n    time.sleep(1.1)\n    return q * 2 + k.sum()\n");
    fs::path d = write_problem(t.path, "budget", def, {{"S", 4}, {"T", 4}});
    append_attention_workload(d, 2, 6, 4);
    ka::Problem p = ka::load_problem(d);
    ka::Oracle oracle("cpu", t.path / "oracle");
    oracle.set_compile_budget(budget);
    auto e = oracle.ensure(p, {{&p.workloads.at(0), 0}, {&p.workloads.at(1), 0}}, true, true, /*timings_only=*/true);
    for (size_t i = 0; i < e.size(); ++i) {
      ASSERT_TRUE(e.at(i).ok()) << e.at(i).error;
      EXPECT_TRUE(e.at(i).reference_ms().has_value()) << budget << " " << i;
      EXPECT_EQ(e.at(i).compile_ms().has_value(), budget > 100) << budget << " " << i << ": " << e.at(i).meta.dump();
      if (budget < 100)
        EXPECT_NE(e.at(i).meta.at("compile_timing").value("skipped", std::string()).find("compile budget"), std::string::npos)
            << e.at(i).meta.dump();
    }
  }
}

// A compiled reference that recompiles on every call (its guards read a counter it bumps) is caught
// while it is timed: its timing is dropped, not passed off as a compiled time, and compile_note
// says why. The eager timing is unaffected.
TEST(SolOracle, CompileBaselineThatRecompilesWhileTimedIsNotTimed) {
  ScopedEnv backend("KERNELARC_ORACLE_COMPILE_BACKEND", "eager");
  TempDir t;
  json def = attention_def("import torch\ncalls = [0]\ndef run(k, q, v):\n    calls[0] += 1\n    return q * calls[0]\n");
  fs::path d = write_problem(t.path, "recompiles", def, {{"S", 4}, {"T", 4}});
  ka::Problem p = ka::load_problem(d);
  ka::Oracle oracle("cpu", t.path / "oracle");
  auto e = oracle.ensure(p, {{&p.workloads.at(0), 0}}, true, true, /*timings_only=*/true);
  ASSERT_TRUE(e.at(0).ok()) << e.at(0).error;
  EXPECT_TRUE(e.at(0).reference_ms().has_value());
  EXPECT_FALSE(e.at(0).compile_ms().has_value()) << e.at(0).meta.dump();
  EXPECT_EQ(e.at(0).meta.at("compile_timing").value("fallback", false), true) << e.at(0).meta.dump();
  EXPECT_NE(e.at(0).compile_note().find("recompiled during the timed calls"), std::string::npos) << e.at(0).compile_note();
}

// An oracle run stopped by its time limit keeps the workloads it finished (a later ensure() finds
// them in the cache) and names the limit for the others.
TEST(SolOracle, TimeLimitKeepsFinishedWorkloads) {
  TempDir t;
  json def = attention_def(
      "import time, torch\ndef run(k, q, v):\n    if q.shape[2] != 4:\n        time.sleep(60)\n    return q.clone()\n");
  fs::path d = write_problem(t.path, "stops", def, {{"S", 4}, {"T", 4}});
  append_attention_workload(d, 2, 5, 4);
  ka::Problem p = ka::load_problem(d);
  ASSERT_EQ(p.workloads.size(), 2u);
  ka::Oracle oracle("cpu", t.path / "oracle");
  oracle.set_time_limit(15);
  auto e = oracle.ensure(p, {{&p.workloads.at(0), 0}, {&p.workloads.at(1), 0}}, false);
  ASSERT_TRUE(e.at(0).ok()) << e.at(0).error;
  EXPECT_TRUE(fs::exists(e.at(0).dir / "reference.safetensors"));
  ASSERT_FALSE(e.at(1).ok());
  EXPECT_NE(e.at(1).error.find("time limit of 15 s"), std::string::npos) << e.at(1).error;
  auto again = oracle.ensure(p, {{&p.workloads.at(0), 0}}, false);
  ASSERT_TRUE(again.at(0).ok());
  EXPECT_EQ(again.at(0).dir, e.at(0).dir);
  EXPECT_EQ(again.at(0).meta, e.at(0).meta);
}

TEST(SolCount, FullAttentionIs4BHSqSkvD) {
  TempDir t;
  json def = attention_def(
      "import torch\ndef run(k, q, v):\n"
      "    s = torch.matmul(q, k.transpose(-1, -2)) * (q.shape[-1] ** -0.5)\n"
      "    return torch.matmul(torch.softmax(s, dim=-1), v)\n");
  json c = count_one(write_problem(t.path, "attn_full", def, {{"S", 24}, {"T", 40}}), t.path);
  EXPECT_EQ(c["matrix_flops"]["float32"].get<double>(), 4.0 * 2 * 3 * 24 * 40 * 16);
}

TEST(SolCount, CausalSdpaCountsUnmaskedPairs) {
  TempDir t;
  json def = attention_def(
      "import torch\ndef run(k, q, v):\n"
      "    return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)\n");
  // Sq = 24 ≤ Skv = 40: row i sees i + 1 keys (PyTorch's upper-left aligned causal mask).
  json c = count_one(write_problem(t.path, "attn_causal", def, {{"S", 24}, {"T", 40}}), t.path);
  double pairs = 24.0 * 25 / 2;
  EXPECT_EQ(c["matrix_flops"]["float32"].get<double>(), 4.0 * 2 * 3 * 16 * pairs);
  // FlopCounterMode has no formula for the CPU flash kernel, so it reports 0 here (and on CUDA it
  // reports the full 4·B·H·Sq·Skv·D, ignoring the mask).
  EXPECT_EQ(c["flop_counter_total"].get<double>(), 0);
  // Sq = 40 > Skv = 24: rows past Skv see all Skv keys.
  TempDir t2;
  json c2 = count_one(write_problem(t2.path, "attn_causal2", def, {{"S", 40}, {"T", 24}}), t2.path);
  EXPECT_EQ(c2["matrix_flops"]["float32"].get<double>(), 4.0 * 2 * 3 * 16 * (24.0 * 25 / 2 + 16.0 * 24));
}

TEST(SolBound, MemoryAndComputeLimits) {
  ka::Ceilings c;
  c.bandwidth_Bps = 4e12;
  c.rate = {{"bf16", 800e12}, {"fp32", 50e12}};
  ka::WorkCount w;
  w.matrix_flops["bfloat16"] = 1.6e12;  // 2 ms at bf16
  w.elementwise_flops = 5e9;            // 0.1 ms at fp32
  w.bytes = 4e9;                        // 1 ms
  ka::SolBound b = ka::sol_bound(w, c);
  ASSERT_TRUE(b.ok);
  EXPECT_DOUBLE_EQ(b.t_memory_s, 1e-3);
  EXPECT_DOUBLE_EQ(b.t_compute_s, 2.1e-3);
  EXPECT_DOUBLE_EQ(b.t_sol_s, 2.1e-3);
  EXPECT_EQ(b.limiting, "compute:bf16");
  w.bytes = 4e10;  // 10 ms
  b = ka::sol_bound(w, c);
  EXPECT_DOUBLE_EQ(b.t_sol_s, 1e-2);
  EXPECT_EQ(b.limiting, "memory");
  // fp8 was not measured: falls back to bf16.
  ka::WorkCount f;
  f.matrix_flops["float8_e4m3fn"] = 8e12;
  b = ka::sol_bound(f, c);
  EXPECT_EQ(b.limiting, "compute:bf16");
  EXPECT_DOUBLE_EQ(b.t_sol_s, 1e-2);
  // No bandwidth: no bound.
  EXPECT_FALSE(ka::sol_bound(w, ka::Ceilings{}).ok);
}

// A reference that upcasts its bf16 inputs to fp32 before a matmul is charged at the bf16 rate;
// an fp8 problem's dequantised fp32 matmul at the fp8 rate; an fp32 problem stays fp32.
TEST(SolBound, MatrixWorkChargedAtInputPrecision) {
  auto def = [](const std::string& a, const std::string& b) {
    json d = attention_def("def run(q, k, v):\n    return q\n");
    d["inputs"]["q"]["dtype"] = a;
    d["inputs"]["k"]["dtype"] = b;
    d["inputs"]["v"]["dtype"] = "float32";
    TempDir t;
    return ka::load_problem(write_problem(t.path, "p", d, {{"S", 1}, {"T", 1}})).def;
  };
  EXPECT_EQ(ka::input_precision(def("bfloat16", "float32")), "bfloat16");
  EXPECT_EQ(ka::input_precision(def("float32", "float8_e4m3fn")), "float8_e4m3fn");
  EXPECT_EQ(ka::input_precision(def("float32", "float32")), "float32");
  ka::WorkCount w;
  w.matrix_flops = {{"float32", 3e12}, {"bfloat16", 1e12}};
  w.elementwise_flops = 7;
  ka::WorkCount b = ka::at_input_precision(w, "bfloat16");
  ASSERT_EQ(b.matrix_flops.size(), 1u);
  EXPECT_DOUBLE_EQ(b.matrix_flops.at("bfloat16"), 4e12);
  EXPECT_DOUBLE_EQ(b.elementwise_flops, 7);
  ka::WorkCount f = ka::at_input_precision(w, "float8_e4m3fn");
  EXPECT_DOUBLE_EQ(f.matrix_flops.at("float8_e4m3fn"), 4e12);
  EXPECT_EQ(ka::at_input_precision(w, "float32").matrix_flops, w.matrix_flops);
  EXPECT_EQ(ka::at_input_precision(w, "").matrix_flops, w.matrix_flops);
  ka::Ceilings c;
  c.bandwidth_Bps = 4e12;
  c.rate = {{"bf16", 800e12}, {"fp32", 50e12}};
  EXPECT_EQ(ka::sol_bound(b, c).limiting, "compute:bf16");
  EXPECT_NEAR(ka::sol_bound(b, c).t_sol_s, 5e-3, 1e-9);  // 4e12 / 800e12 (+ 7 FLOPs at fp32)
}

TEST(SolBound, CeilingsFromCalibration) {
  json cal = {{"copy", {{"bandwidth_Bps", 4.2e12}}},
              {"matmul", {{"bfloat16", {{"available", true}, {"flops_per_s", 7.5e14}}},
                          {"float8_e4m3fn", {{"available", false}, {"message", "x"}}}}}};
  ka::Ceilings c = ka::ceilings_from(cal);
  EXPECT_DOUBLE_EQ(c.bandwidth_Bps, 4.2e12);
  EXPECT_DOUBLE_EQ(c.rate.at("bf16"), 7.5e14);
  EXPECT_EQ(c.rate.count("fp8"), 0u);
  auto ds = ka::datasheet_for("NVIDIA H200");
  ASSERT_TRUE(ds);
  EXPECT_DOUBLE_EQ(ds->bandwidth_Bps, 4.8e12);
  EXPECT_DOUBLE_EQ(ds->rate.at("fp8"), 1979e12);
  EXPECT_FALSE(ka::datasheet_for("AMD EPYC"));
}

TEST(SolScore, FormulaAndEdges) {
  EXPECT_DOUBLE_EQ(ka::sol_score(10, 2, 10), 0.5);   // T_k = T_b
  EXPECT_DOUBLE_EQ(ka::sol_score(2, 2, 10), 1.0);    // T_k = T_sol
  EXPECT_DOUBLE_EQ(ka::sol_score(4, 2, 10), 0.8);    // 1 / (1 + 2/8)
  EXPECT_GT(ka::sol_score(1, 2, 10), 1.0);           // faster than SOL: no clamping
  EXPECT_LT(ka::sol_score(1e9, 2, 10), 1e-6);        // → 0
  EXPECT_DOUBLE_EQ(ka::sol_score(3, 5, 5), 1.0);     // T_b ≤ T_sol, T_k ≤ T_sol
  EXPECT_DOUBLE_EQ(ka::sol_score(5, 5, 4), 1.0);
  EXPECT_DOUBLE_EQ(ka::sol_score(6, 5, 4), 0.0);     // T_b ≤ T_sol, T_k > T_sol
  EXPECT_EQ(*ka::baseline_time(10.0, 7.0), 7.0);
  EXPECT_EQ(*ka::baseline_time(10.0, std::nullopt), 10.0);
  EXPECT_FALSE(ka::baseline_time(std::nullopt, std::nullopt));
  EXPECT_DOUBLE_EQ(*ka::mean_score({0.5, 1.0}), 0.75);
  EXPECT_FALSE(ka::mean_score({}));
}

}  // namespace
