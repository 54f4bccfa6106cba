// judge/evaluator.h — judges one candidate on a problem's workloads: build, then per workload in
// a worker process: poisoned outputs, correctness against the oracle's reference (which stays in
// the judge), bit-identical inputs, SOL-ExecBench timing (warm-up, L2 flush, CUPTI span, median,
// repeated while the spread is too wide), and a second correctness check on a fresh input set after
// timing. Every outcome is a typed verdict; the evaluator survives any candidate. Host RAM: a
// set the worker keeps is dropped here once sent; only sets sent with every call are cached, up
// to EvalOptions::host_sets_bytes (the large attention/MoE sets are tens of GB per problem).
#pragma once
#include <nlohmann/json.hpp>

#include <chrono>
#include <filesystem>
#include <future>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "judge/verdict.h"
#include "oracle/oracle.h"
#include "problem/problem.h"
#include "solution/solution.h"
#include "target/build.h"

namespace ka {

struct EvalOptions {
  std::string target = "cuda";
  int warmup = 10, iterations = 50;            // SOL-ExecBench's defaults
  std::chrono::milliseconds timeout{60000};    // per worker request (a check, or a timing run)
  double max_spread = 0.10;                    // (p75 − p25) / median above which timing is repeated
  int max_attempts = 3;
  uint64_t seed = 0;                           // inputs for the first check; seed + 1 for the re-check
  bool time = true;
  bool time_reference = true;
  bool time_compile = false;                   // also time torch.compile of the reference (SOL baseline)
  // Reference timings measured before on a GPU of the worker's name (`kernelarc sol`'s oracle-timings
  // cache) are used instead of timing again (Oracle::borrow_timings_for); `--retime-reference` off.
  bool borrow_timings = true;
  bool keep_sets = true;                       // keep input sets in the worker (sent once per worker process)
  // Search only (0 = off, SOL-ExecBench's protocol on every workload): where the reference takes
  // at least cut_min_reference_us, a probe of 1 + 3 calls comes first, and a candidate slower than
  // cut_slow times the reference there keeps the probe's median as its timing (TimingStats::cut)
  // instead of 10 + 50 calls, up to max_attempts times: a hopeless candidate costs seconds, not minutes.
  double cut_slow = 0;
  double cut_min_reference_us = 100;
  // Host RAM for input sets sent with every call (the worker had no room, or !keep_sets): kept
  // while their total stays under this, else loaded (and regenerated) again for each call.
  size_t host_sets_bytes = size_t{8} << 30;
  std::filesystem::path log_dir;               // worker logs
  // Seconds the oracle may spend making a problem's input sets (0: its own limit, an hour): past it
  // the sets finished so far stay cached and the judge reports the rest as cut short
  // (JudgeSession::sets_cut_short); `optimize --oracle-time-limit`.
  double oracle_time_limit_s = 0;
};

struct TimingStats {
  double median_us = 0, mean_us = 0, min_us = 0, max_us = 0, p25_us = 0, p75_us = 0, spread = 0;
  int attempts = 0;
  bool cut = false;  // the probe's calls only (EvalOptions::cut_slow)
  std::vector<double> samples_us;
  std::vector<std::string> activity;
};

struct WorkloadEval {
  std::string uuid;
  Verdict verdict = Verdict::passed;
  std::string message;
  double max_abs_err = 0, max_rel_err = 0, matched_ratio = 1;
  bool has_nan = false, has_inf = false;
  std::optional<TimingStats> timing;
  std::optional<double> reference_us;
  std::optional<double> compile_us;            // torch.compile'd reference (time_compile)
  bool timings_borrowed = false;               // reference timings from an earlier run (borrow_timings)
  nlohmann::json workload;  // the workload as read
};

struct CandidateEval {
  std::string target;
  nlohmann::json device;
  BuildResult build;
  std::vector<WorkloadEval> workloads;
  int worker_restarts = 0;
  size_t host_set_bytes = 0;  // input-set bytes held in the judge's RAM when judging ended (diagnostics)
  size_t sets_loaded_ahead = 0;  // sets with regenerated inputs loaded while the worker ran earlier ones (diagnostics)
};

TimingStats summarize(std::vector<double> samples_us);

class WorkerClient;
struct WorkerReply;
struct InputSet;

// A judge for one problem and target: one worker process (replaced whenever it fails), the
// oracle's input sets and references loaded once, many candidates judged one after another.
class JudgeSession {
 public:
  JudgeSession(const Problem& p, std::vector<const Workload*> workloads, Oracle& oracle, EvalOptions opt);
  ~JudgeSession();
  JudgeSession(const JudgeSession&) = delete;
  JudgeSession& operator=(const JudgeSession&) = delete;
  // The device the worker runs on (starts the worker; UserError when the target cannot run).
  const nlohmann::json& device();
  int sm();
  // Builds (through the build cache) and judges.
  CandidateEval evaluate(const Candidate& c);
  // Judges a candidate built already (e.g. by a build pool).
  CandidateEval judge(const Candidate& c, const BuildResult& build);
  const EvalOptions& options() const { return opt_; }
  // Bytes of input sets (inputs + reference outputs) held in this process's RAM now: for tests
  // and diagnostics. Sets the worker keeps are not held here.
  size_t host_set_bytes() const;
  // After the oracle's sets were made (the first judge call): how many of them the oracle did not
  // make because its time limit cut it short (OracleEntry::stopped), and of how many.
  std::pair<size_t, size_t> sets_cut_short() const;

 private:
  const Problem& p_;
  std::vector<const Workload*> workloads_;
  Oracle& oracle_;
  EvalOptions opt_;
  std::unique_ptr<WorkerClient> worker_;
  std::vector<OracleEntry> entries_;                 // 2 per workload: check set, fresh set
  // Host copies, parallel to entries_: only of sets sent with every call, within
  // opt_.host_sets_bytes; a set the worker keeps is loaded for its put and then dropped.
  std::vector<std::shared_ptr<const InputSet>> sets_;
  std::set<size_t> unkept_;                          // sets the worker had no room to keep
  bool prepared_ = false;
  // Sets with regenerated inputs (018/019: a 1 GB random KV cache each) being loaded ahead, in a
  // thread each, while the worker runs the current one (see prefetch_after). Declared last: the
  // futures' destructors wait for the loads before the members they use go.
  std::map<size_t, std::future<std::shared_ptr<const InputSet>>> pending_;
  size_t loaded_ahead_ = 0;  // of them, those used (CandidateEval::sets_loaded_ahead)
  void prepare();
  // Set i: the host copy if held, else loaded from the oracle's entry (regenerating inputs).
  std::shared_ptr<const InputSet> set(size_t i);
  void remember(size_t i, const std::shared_ptr<const InputSet>& s);  // hold it, if policy allows
  // After set i was needed by a worker that keeps sets: starts loading the next few sets after i
  // that regenerate inputs (the judge needs them in index order, each once per worker process).
  void prefetch_after(size_t i);
  // One call on set i (mode "check" or "time"), through the worker's copy of the set when it
  // keeps one (sent once per worker process), else with the set's bytes; then *sent (if given)
  // is the set that was sent, which the reply's outputs are compared against.
  WorkerReply run_set(size_t i, const std::string& mode, nlohmann::json extra,
                      std::shared_ptr<const InputSet>* sent = nullptr);
};

CandidateEval evaluate(const Problem& p, const Candidate& c, const std::vector<const Workload*>& workloads, Oracle& oracle,
                       const EvalOptions& opt);

}  // namespace ka
