// judge/evaluator.h — judges one candidate on a problem's workloads: build, then per workload in
// a worker process, through calls that all look alike to the candidate (judge/protocol.h): a check
// call on the check set, timing runs (SOL-ExecBench's warm-up, L2 flush, CUPTI span, median,
// repeated while the spread is too wide) whose calls rotate in a random order among several input
// sets of their own, and a re-check on a fresh set after timing. The reference outputs stay here:
// the worker returns the output bytes of the calls this judge picks (after each call, at random)
// and they are compared here. Every outcome is a typed verdict; the evaluator survives any
// candidate.
//
// Memory: a workload has 2 + K input sets (check, K timing sets, fresh), K = the timing calls of a
// run, but at most rotation_bytes / (one set's input bytes) and max_rotation_sets, and at least 2.
// The worker keeps the sets on the device (a set is dropped here once sent; when the device is
// full the worker drops every set and this workload's are sent again). This process holds the
// references it compares against, up to host_sets_bytes (then read again from the oracle's cache),
// and host copies of sets only for --send-inputs or after a drop, within host_sets_bytes too.
#pragma once
#include <nlohmann/json.hpp>

#include <chrono>
#include <filesystem>
#include <future>
#include <map>
#include <memory>
#include <optional>
#include <random>
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
  // Timing sets per workload (see the header comment): device bytes of one workload's timing sets,
  // and their number at most.
  size_t rotation_bytes = size_t{1} << 30;
  int max_rotation_sets = 64;
  // Output bytes a timing run sends back: every call's outputs when they fit, else a random sample
  // of calls (at least one) the candidate cannot foresee; their inputs are checked too when the
  // inputs take at most input_check_bytes (else on the check calls only).
  size_t fetch_bytes = size_t{256} << 20;
  size_t input_check_bytes = size_t{64} << 20;
  std::filesystem::path log_dir;               // worker logs
  // Seconds the oracle may spend making a problem's input sets (0: its own limit, an hour): past it
  // the sets finished so far stay cached and the judge reports the rest as cut short
  // (JudgeSession::sets_cut_short); `optimize --oracle-time-limit`.
  double oracle_time_limit_s = 0;
  // Seconds one oracle run may spend compiling and timing the reference under torch.compile
  // (time_compile; 0: the oracle's default, 240): past it the later workloads have no compile
  // timing. A problem of many shapes compiles once per shape; `--compile-budget`.
  double compile_budget_s = 0;
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
  std::string compile_note;                    // why compile_us is missing or may mislead (OracleEntry::compile_note)
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
  // Per workload k: entries base_[k] (check set, seed), base_[k] + 1 .. + K (timing sets, seeds
  // seed + 2 ..), base_[k] + K + 1 (fresh re-check set, seed + 1): the order the judge needs them.
  std::vector<OracleEntry> entries_;
  std::vector<size_t> base_, timing_sets_;
  // Host copies, parallel to entries_: only of sets sent with every run (--send-inputs) or dropped
  // by a full device, within opt_.host_sets_bytes; a set the worker keeps is dropped once put.
  std::vector<std::shared_ptr<const InputSet>> sets_;
  std::set<size_t> evicted_;                         // sets the device had to drop
  std::set<size_t> held_;                            // sets the current worker process keeps
  int held_by_ = -1;                                 // worker_->restarts() when held_ was right
  // Reference outputs by entry, within opt_.host_sets_bytes (oldest dropped first).
  std::map<size_t, std::shared_ptr<const std::vector<Tensor>>> refs_;
  std::vector<size_t> ref_order_;
  std::mt19937_64 rng_{std::random_device{}()};      // call order and sampling: nothing the worker knows
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
  // The reference outputs of set i (definition order).
  std::shared_ptr<const std::vector<Tensor>> reference(size_t i);
  void keep_reference(size_t i, std::shared_ptr<const std::vector<Tensor>> r);
  // Makes the worker hold sets `ids` (puts those it lacks; a full device drops every set first).
  WorkerReply hold(const std::vector<size_t>& ids);
  struct Run;
  // One run of calls (judge/protocol.h); false (and w filled) on any failure.
  bool run_calls(const Workload& wl, const Run& run, WorkloadEval& w, TimingStats* timing);
  Run timing_run(size_t k, int warmup, int iterations);
  WorkloadEval judge_workload(size_t k);
};

CandidateEval evaluate(const Problem& p, const Candidate& c, const std::vector<const Workload*>& workloads, Oracle& oracle,
                       const EvalOptions& opt);

}  // namespace ka
