// tests/test_judge_protocol.cpp — how the judge talks to the candidate's process, end to end on the
// host target through the kernelarc binary, with an adversarial candidate per class of cheat
// (tests/data/adversarial/host): the reference is nowhere in the worker, every call looks alike
// (same poison, same buffers), timed calls rotate among sets the candidate has not seen and their
// outputs are checked, guard zones catch writes just outside a buffer, and the legitimate side-thread
// control passes like the single-thread solution. Their CUDA twins (tests/data/adversarial/cuda,
// judged on a GPU by bench/regress/judge_adversarial.sh) are compile-checked here with the judge's flags.
#include "util/resources.h"
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>

#include "nvcc_build.h"
#include "util/process.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

const fs::path kRoot = ka::source_root();
const fs::path kProblem = kRoot / "examples/problems/rmsnorm_h128";

// `kernelarc eval` on the first workload, 1 warm-up + 5 timed calls; the report's workload.
json eval_workload(const std::string& candidate, std::vector<std::string> extra = {}) {
  const fs::path src = candidate == "rmsnorm_host" ? kRoot / "examples/solutions/rmsnorm_h128/rmsnorm_host.cpp"
                                                   : kRoot / "tests/data/adversarial/host" / (candidate + ".cpp");
  std::vector<std::string> cmd{KA_BINARY, "eval", kProblem.string(), "--solution", src.string(), "--workloads", "1",
                               "--timeout", "20", "--no-reference-time", "--iterations", "5", "--warmup", "1", "--json",
                               "--no-sol"};
  cmd.insert(cmd.end(), extra.begin(), extra.end());
  const fs::path cache = fs::path(KA_BUILD_DIR) / "test-cache";
  ka::RunResult r = ka::run_command(cmd, std::chrono::minutes(5), {"KERNELARC_CACHE=" + cache.string()});
  auto start = r.output.find("{\n");
  json rep = start == std::string::npos ? json() : json::parse(r.output.substr(start), nullptr, false);
  if (!rep.is_object() || !rep.contains("workloads")) return {{"verdict", "no report"}, {"message", r.output}};
  return rep["workloads"][0];
}

std::string message(const json& w) { return w.value("message", std::string()); }

}  // namespace

// Class 1: the worker never holds a reference output. A candidate that scans its own process's
// memory for the answer (matching the first row, which it computes) finds nothing to copy.
TEST(JudgeProtocol, TheReferenceIsNotInTheCandidatesProcess) {
  json w = eval_workload("steal_reference");
  EXPECT_EQ(w["verdict"], "wrong_answer") << w.dump();
  EXPECT_NE(message(w).find("never written"), std::string::npos) << message(w);
}

// Class 2: every call is prefilled alike, so a candidate that works only when it sees the check
// poison works on every timed call too (its work takes ≥ 20 ms; skipping it would take µs).
TEST(JudgeProtocol, TimedCallsLookLikeCheckCalls) {
  json w = eval_workload("poison_sniff");
  ASSERT_EQ(w["verdict"], "passed") << w.dump();
  EXPECT_GE(w["timing"]["median_us"].get<double>(), 20000.0) << w["timing"].dump();
}

// Class 3: timed calls rotate among input sets the candidate has not seen, so a memoiser keyed on
// an input fingerprint computes every time (≥ 50 ms; a replay takes µs) ...
TEST(JudgeProtocol, AMemoiserFindsNothingToReplay) {
  json w = eval_workload("memo_fingerprint");
  ASSERT_EQ(w["verdict"], "passed") << w.dump();
  EXPECT_GE(w["timing"]["median_us"].get<double>(), 50000.0) << w["timing"].dump();
}

// ... and one that replays the previous output during a burst of calls is caught, because the
// timed calls' outputs are checked.
TEST(JudgeProtocol, ReplayingTheLastOutputWhileTimedIsWrong) {
  json w = eval_workload("replay_burst");
  EXPECT_EQ(w["verdict"], "wrong_answer") << w.dump();
  EXPECT_NE(message(w).find("timing, call"), std::string::npos) << message(w);
}

// Class 5: guard zones on both sides of outputs and inputs.
TEST(JudgeProtocol, WritesJustOutsideABufferHitTheGuards) {
  for (const auto& [name, where] : {std::pair{"write_past_end", "past the end of argument 2 (an output)"},
                                    std::pair{"write_before_start", "before the start of argument 2 (an output)"},
                                    std::pair{"write_past_input", "past the end of argument 1 (an input)"}}) {
    json w = eval_workload(name);
    EXPECT_EQ(w["verdict"], "out_of_bounds_write") << name << ": " << w.dump();
    EXPECT_NE(message(w).find(where), std::string::npos) << name << ": " << message(w);
  }
}

// Class 6 (host analogue of a side stream): work on a second thread, joined before the call
// returns, is legitimate and passes; so does the single-thread solution.
TEST(JudgeProtocol, HonestCandidatesPass) {
  for (const char* name : {"rmsnorm_host", "side_thread"}) {
    json w = eval_workload(name);
    EXPECT_EQ(w["verdict"], "passed") << name << ": " << w.dump();
    EXPECT_EQ(w["timing"]["samples"], 5) << name;
  }
}

// The same verdicts when the sets do not stay in the worker between workloads (--send-inputs).
TEST(JudgeProtocol, SendingInputsGivesTheSameVerdicts) {
  const std::vector<std::string> send{"--send-inputs"};
  EXPECT_EQ(eval_workload("rmsnorm_host", send)["verdict"], "passed");
  EXPECT_EQ(eval_workload("replay_burst", send)["verdict"], "wrong_answer");
  EXPECT_EQ(eval_workload("write_past_end", send)["verdict"], "out_of_bounds_write");
  EXPECT_EQ(eval_workload("steal_reference", send)["verdict"], "wrong_answer");
}

// The CUDA twins build as the judge builds them (skipped without nvcc).
TEST(JudgeProtocol, CudaTwinsCompile) {
  const fs::path nvcc = "/usr/local/cuda/bin/nvcc";
  if (!fs::exists(nvcc)) GTEST_SKIP() << "no nvcc";
  for (const char* name : {"poison_sniff", "memo_fingerprint", "memo_gemm", "replay_burst", "write_past_end",
                           "write_before_start", "write_past_input", "side_stream", "side_stream_twin",
                           "steal_reference"}) {
    ka::Candidate c = ka::read_candidate(kRoot / "tests/data/adversarial/cuda" / (std::string(name) + ".cu"));
    ka::RunResult r = ka::test::nvcc_judge_build(nvcc, c, "-gencode=arch=compute_90,code=sm_90", false);
    EXPECT_EQ(r.exit_code, 0) << name << ":\n" << r.output;
  }
}
