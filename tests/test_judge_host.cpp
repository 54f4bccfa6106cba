// tests/test_judge_host.cpp — the judge end to end on the host target, through the kernelarc
// binary: adversarial candidates get the right verdicts (crash, timeout, reward_hack,
// wrong_answer for untouched outputs and for remembered results), a correct solution passes, the
// build cache is reused, and a tampered oracle cache entry is refused.
#include "util/resources.h"
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include "util/process.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

const fs::path kRoot = ka::source_root();
const fs::path kProblem = kRoot / "examples/problems/rmsnorm_h128";

struct Eval {
  int exit_code = -1;
  json report;
  std::string output;
};

// Runs `kernelarc eval ... --json` and parses the report it prints.
Eval run_eval(const std::vector<std::string>& cmd, const fs::path& cache, std::vector<std::string> env = {}) {
  env.push_back("KERNELARC_CACHE=" + cache.string());
  ka::RunResult r = ka::run_command(cmd, std::chrono::minutes(5), env);
  Eval e;
  e.exit_code = r.exit_code;
  e.output = r.output;
  auto start = r.output.find("{\n");
  if (start != std::string::npos) e.report = json::parse(r.output.substr(start), nullptr, false);
  return e;
}

Eval eval(const fs::path& solution, const fs::path& cache, std::vector<std::string> extra = {}) {
  std::vector<std::string> cmd{KA_BINARY, "eval", kProblem.string(), "--solution", solution.string(), "--workloads", "1",
                               "--timeout", "5", "--no-reference-time", "--iterations", "5", "--warmup", "1", "--json"};
  cmd.insert(cmd.end(), extra.begin(), extra.end());
  return run_eval(cmd, cache);
}

fs::path shared_cache() { return fs::path(KA_BUILD_DIR) / "test-cache"; }

std::string verdict(const Eval& e) {
  if (!e.report.is_object()) return "no report: " + e.output;
  return e.report["workloads"][0]["verdict"];
}

fs::path adversarial(const std::string& name) { return kRoot / "tests/data/adversarial/host" / (name + ".cpp"); }

}  // namespace

TEST(JudgeHost, CorrectSolutionPasses) {
  Eval e = eval(kRoot / "examples/solutions/rmsnorm_h128/rmsnorm_host.cpp", shared_cache());
  EXPECT_EQ(e.exit_code, 0) << e.output;
  EXPECT_EQ(verdict(e), "passed");
  EXPECT_GT(e.report["workloads"][0]["timing"]["median_us"].get<double>(), 0.0);
}

TEST(JudgeHost, CrashingCandidateIsACrash) {
  Eval e = eval(adversarial("crash"), shared_cache());
  EXPECT_EQ(e.exit_code, 1);
  EXPECT_EQ(verdict(e), "crash");
  EXPECT_NE(e.report["workloads"][0]["message"].get<std::string>().find("SIGSEGV"), std::string::npos);
}

TEST(JudgeHost, HangingCandidateTimesOut) {
  Eval e = eval(adversarial("hang"), shared_cache());  // --timeout 5
  EXPECT_EQ(e.exit_code, 1);
  EXPECT_EQ(verdict(e), "timeout");
}

TEST(JudgeHost, WritingIntoAnInputIsARewardHack) {
  Eval e = eval(adversarial("write_input"), shared_cache());
  EXPECT_EQ(e.exit_code, 1);
  EXPECT_EQ(verdict(e), "reward_hack");
  EXPECT_NE(e.report["workloads"][0]["message"].get<std::string>().find("hidden_states"), std::string::npos);
}

TEST(JudgeHost, UntouchedOutputIsWrong) {
  Eval e = eval(adversarial("untouched"), shared_cache());
  EXPECT_EQ(e.exit_code, 1);
  EXPECT_EQ(verdict(e), "wrong_answer");
  EXPECT_NE(e.report["workloads"][0]["message"].get<std::string>().find("never written"), std::string::npos);
}

// Timed calls run on input sets of their own and their outputs are checked: the replay of the
// check call's result is caught in the timing run already.
TEST(JudgeHost, RememberedResultsFailOnFreshInputs) {
  Eval e = eval(adversarial("remember"), shared_cache());
  EXPECT_EQ(e.exit_code, 1);
  EXPECT_EQ(verdict(e), "wrong_answer");
  EXPECT_NE(e.report["workloads"][0]["message"].get<std::string>().find("timing, call 1 of 6"), std::string::npos)
      << e.report["workloads"][0]["message"];
}

// The same verdicts when the judge sends each input set with every call instead of keeping it in
// the worker (the path taken when the device has no room to keep a set).
TEST(JudgeHost, SendingInputsWithEveryCallGivesTheSameVerdicts) {
  const std::vector<std::string> send{"--send-inputs"};
  Eval ok = eval(kRoot / "examples/solutions/rmsnorm_h128/rmsnorm_host.cpp", shared_cache(), send);
  EXPECT_EQ(verdict(ok), "passed") << ok.output;
  EXPECT_EQ(verdict(eval(adversarial("write_input"), shared_cache(), send)), "reward_hack");
  EXPECT_EQ(verdict(eval(adversarial("untouched"), shared_cache(), send)), "wrong_answer");
  EXPECT_EQ(verdict(eval(adversarial("remember"), shared_cache(), send)), "wrong_answer");
}

// With room for no kept set at all (KERNELARC_KEPT_SETS_BYTES=1), each workload's sets are still
// put once every other set is dropped, and a correct candidate passes every workload.
TEST(JudgeHost, KeptSetsPastTheirBudgetAreDroppedAndTheRunGoesOn) {
  const std::vector<std::string> cmd{KA_BINARY, "eval", kProblem.string(), "--solution",
                                     (kRoot / "examples/solutions/rmsnorm_h128/rmsnorm_host.cpp").string(), "--workloads", "2",
                                     "--timeout", "5", "--no-reference-time", "--iterations", "5", "--warmup", "1", "--json"};
  Eval e = run_eval(cmd, shared_cache(), {"KERNELARC_KEPT_SETS_BYTES=1"});
  ASSERT_EQ(e.exit_code, 0) << e.output;
  ASSERT_TRUE(e.report.is_object()) << e.output;
  ASSERT_EQ(e.report["workloads"].size(), 2u);
  for (const auto& w : e.report["workloads"]) EXPECT_EQ(w["verdict"], "passed") << w.dump();
  Eval bad = run_eval(cmd, shared_cache(), {"KERNELARC_KEPT_SETS_BYTES=lots"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.output.find("KERNELARC_KEPT_SETS_BYTES"), std::string::npos) << bad.output;
}

// A crash in the check on one workload restarts the worker; the next workload's kept sets are sent
// again to the fresh worker, and a correct candidate judged afterwards passes every workload.
TEST(JudgeHost, AfterACrashTheNextWorkloadsAreJudgedOnAFreshWorker) {
  std::vector<std::string> cmd{KA_BINARY, "eval", kProblem.string(), "--solution", adversarial("crash_first").string(),
                               "--workloads", "3", "--timeout", "5", "--no-reference-time", "--iterations", "3",
                               "--warmup", "1", "--json"};
  ka::RunResult r = ka::run_command(cmd, std::chrono::minutes(5), {"KERNELARC_CACHE=" + shared_cache().string()});
  auto start = r.output.find("{\n");
  ASSERT_NE(start, std::string::npos) << r.output;
  json rep = json::parse(r.output.substr(start));
  ASSERT_EQ(rep["workloads"].size(), 3u);
  EXPECT_EQ(rep["workloads"][0]["verdict"], "crash");
  EXPECT_EQ(rep["workloads"][1]["verdict"], "passed") << rep["workloads"][1].dump();
  EXPECT_EQ(rep["workloads"][2]["verdict"], "passed");
}

TEST(JudgeHost, CompileErrorIsTyped) {
  fs::path dir = fs::temp_directory_path() / "ka-test-compile-error";
  fs::create_directories(dir);
  std::ofstream(dir / "broken.cpp") << "#include <kernelarc/abi.h>\nvoid run(const ka::TensorArg& a) { this is not C++ }\n";
  Eval e = eval(dir / "broken.cpp", shared_cache());
  EXPECT_EQ(e.exit_code, 1);
  EXPECT_EQ(verdict(e), "compile_error");
}

TEST(JudgeHost, WrongArityIsARuntimeError) {
  fs::path dir = fs::temp_directory_path() / "ka-test-arity";
  fs::create_directories(dir);
  std::ofstream(dir / "arity.cpp") << "#include <kernelarc/abi.h>\nvoid run(const ka::TensorArg& a, const ka::TensorArg& b) {}\n";
  Eval e = eval(dir / "arity.cpp", shared_cache());
  EXPECT_EQ(verdict(e), "runtime_error");
}

TEST(JudgeHost, SecondBuildComesFromTheCache) {
  fs::path src = kRoot / "examples/solutions/rmsnorm_h128/rmsnorm_host.cpp";
  eval(src, shared_cache());
  Eval e = eval(src, shared_cache());
  EXPECT_TRUE(e.report["build"]["cached"].get<bool>()) << e.output;
}

TEST(JudgeHost, TamperedOracleEntryIsRefused) {
  fs::path cache = fs::path(KA_BUILD_DIR) / "test-cache-tamper";
  fs::path src = kRoot / "examples/solutions/rmsnorm_h128/rmsnorm_host.cpp";
  ASSERT_EQ(eval(src, cache).exit_code, 0);
  fs::path victim;
  for (const auto& d : fs::directory_iterator(cache / "oracle"))
    if (fs::exists(d.path() / "reference.safetensors")) victim = d.path() / "reference.safetensors";
  ASSERT_FALSE(victim.empty());
  struct stat st {};
  ASSERT_EQ(::stat(victim.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0222, 0u) << "cache entries must be read-only";
  ::chmod(victim.parent_path().c_str(), 0755);
  ::chmod(victim.c_str(), 0644);
  {
    std::fstream f(victim, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(-1, std::ios::end);
    f.put('\x7f');
  }
  Eval e = eval(src, cache);
  EXPECT_EQ(e.exit_code, 2) << e.output;
  EXPECT_NE(e.output.find("hash check"), std::string::npos) << e.output;
  fs::remove_all(cache);
}

// --cut-slow: a candidate slower than F times the reference in the 1 + 3-call probe keeps the
// probe as its timing (3 samples, "cut"); one within F gets the full protocol; 0 never probes.
TEST(JudgeHost, HopelessCandidateIsCutAfterTheProbe) {
  auto run = [](const std::string& cut_slow) {
    std::vector<std::string> cmd{KA_BINARY, "eval", kProblem.string(), "--solution",
                                 (kRoot / "examples/solutions/rmsnorm_h128/rmsnorm_host.cpp").string(),
                                 "--workloads", "1", "--timeout", "20", "--iterations", "9", "--warmup", "1", "--json",
                                 "--no-sol", "--cut-slow", cut_slow, "--cut-min-reference-us", "0"};
    return run_eval(cmd, shared_cache());
  };
  for (const auto& [f, cut, samples] : {std::tuple{"1e-9", true, 3}, std::tuple{"1e9", false, 9}, std::tuple{"0", false, 9}}) {
    SCOPED_TRACE(f);
    Eval e = run(f);
    ASSERT_EQ(e.exit_code, 0) << e.output;
    ASSERT_EQ(verdict(e), "passed");
    const json& t = e.report["workloads"][0]["timing"];
    EXPECT_EQ(t["cut"], cut);
    EXPECT_EQ(t["samples"], samples);
    EXPECT_GT(e.report["workloads"][0]["reference_us"].get<double>(), 0.0);
  }
}
