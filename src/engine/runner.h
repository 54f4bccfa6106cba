// engine/runner.h — measurement runners: the processes that judge a campaign's candidates, one per
// device, and the pool that dispatches candidates to them.
//
// A runner is a `kernelarc runner` process that the engine starts with KERNELARC_GPU=<device>; it
// holds one JudgeSession for the problem, whose worker process inherits that device (on the host
// target the device number only names the runner's slot). The engine talks to a runner over a pipe
// with the judge's framing (judge/protocol.h): a setup message, then one "judge" request per
// candidate, answered with the verdict and timing of every workload.
//
// The pool hands each built candidate (a Job) to the runner that has been free longest. When a
// runner dies, hangs or cannot start, its in-flight job goes back to the queue (it was not
// recorded, so it is judged exactly once) and the runner is restarted on its next job; after
// kMaxRunnerFailures failures in a row of one runner, or kMaxRequeues of one job, the campaign
// stops with an error. A candidate that crashes the *worker* is not a runner failure: the
// runner's JudgeSession gives it a `crash` verdict and replaces the worker.
//
// Test hook: KERNELARC_TEST_KILL_RUNNER_AFTER=N[,M...] kills (SIGKILL) the runner process that was
// sent the N-th (M-th, ...) judge request of the pool, right after sending it.
#pragma once
#include <nlohmann/json.hpp>

#include <condition_variable>
#include <deque>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "judge/evaluator.h"
#include "util/error.h"
#include "solution/solution.h"
#include "target/build.h"

namespace ka {

constexpr int kMaxRunnerFailures = 3;  // failures in a row of one runner before the campaign stops
constexpr int kMaxRequeues = 3;        // times one job may be re-queued before the campaign stops

// What a runner reports for one workload (the content of one Measurement).
struct WorkloadResult {
  std::string uuid, verdict, message;
  double median_us = 0, spread = 0, reference_us = 0;  // 0 when not timed
  double compile_us = 0;                               // torch.compile'd reference; 0 when not timed
  std::string compile_note;  // why compile_us is missing or may mislead (OracleEntry::compile_note)
  int attempts = 0;
  bool cut = false;  // timed by the probe only: slower than --cut-slow times the reference
  bool timings_borrowed = false;  // reference_us/compile_us measured in an earlier run (EvalOptions::borrow_timings)
};

// One candidate to judge. The engine fills the first part; the pool the rest, once judged.
struct Job {
  int64_t order = 0;   // dispatch order: proposal order (unique within a pool)
  int pin = -1;        // -1: any runner; else only this runner may judge it (a per-GPU check)
  Candidate candidate;
  BuildResult build;
  std::vector<WorkloadResult> workloads;
  int runner = -1;     // the runner that judged it
  int requeued = 0;    // times a runner failed with it in flight
  double seconds = 0;  // judging time on its runner
};

struct RunnerStats {
  int index = 0, device_id = 0;
  std::string device, gpu;  // device name, and the identity recorded with its measurements
  int judged = 0, restarts = 0;
  double busy_s = 0;
};

// The devices of `--gpus`: "" = one runner on $KERNELARC_GPU (default 0); "all" = every visible
// CUDA device (the entries of CUDA_VISIBLE_DEVICES, else the GPUs `nvidia-smi -L` lists; one
// runner on host); else a comma list of distinct device numbers. UserError on a bad list.
std::vector<int> parse_gpus(const std::string& spec, const std::string& target);

class RunnerProcess;

// The oracle's time limit (EvalOptions::oracle_time_limit_s) passed before it made every input set
// of the problem: the finished sets are cached, a later run goes on from them.
struct OracleCutShort : UserError {
  using UserError::UserError;
};

class RunnerPool {
 public:
  // Starts one runner per device: the first alone (it fills the oracle cache for the problem),
  // then the others together. Throws (UserError for what the user can fix; OracleCutShort) if one
  // cannot start.
  RunnerPool(const Problem& p, const EvalOptions& eval, const std::vector<int>& devices);
  ~RunnerPool();
  RunnerPool(const RunnerPool&) = delete;
  RunnerPool& operator=(const RunnerPool&) = delete;

  size_t size() const { return procs_.size(); }
  // Runner r's device as its worker reported it, and its identity in measurements: the device
  // uuid on cuda, "host:<device number>" on host. Fixed once the pool is made.
  const nlohmann::json& device(size_t r) const { return devices_[r]; }
  const std::string& gpu(size_t r) const { return gpus_[r]; }

  // Queues a built job (from any thread).
  void submit(std::shared_ptr<Job> job);
  // Stops the campaign with an error (a build thread that failed); wait_judged() throws it.
  void fail(const std::string& message, bool user);
  // Blocks until jobs have been judged and returns those judged since the last call. Throws when
  // a runner or a job has failed too often, or after fail().
  std::vector<std::shared_ptr<Job>> wait_judged();
  std::vector<RunnerStats> stats() const;

 private:
  nlohmann::json setup_;                             // the runners' setup message
  std::chrono::milliseconds judge_within_{0};        // longest a judge request may take
  std::vector<std::unique_ptr<RunnerProcess>> procs_;
  std::vector<nlohmann::json> devices_;
  std::vector<std::string> gpus_;
  std::vector<std::thread> threads_;

  mutable std::mutex mu_;
  std::condition_variable work_cv_, done_cv_;
  std::map<int64_t, std::shared_ptr<Job>> ready_;    // built, waiting for a runner, by order
  std::vector<std::shared_ptr<Job>> inbox_;          // per runner: the job handed to it
  std::vector<bool> busy_;                           // per runner: judging (its process unreaped)
  std::deque<size_t> idle_;                          // free runners, longest free first
  std::vector<std::shared_ptr<Job>> judged_;         // judged since the last wait_judged()
  std::vector<int> failures_;                        // per runner: failures in a row
  std::vector<RunnerStats> stats_;
  std::string fatal_;
  bool fatal_user_ = false, stop_ = false;
  int sent_ = 0;                                     // judge requests sent
  std::set<int> kill_at_;                            // the test hook

  void dispatch();  // with mu_ held: hands ready jobs to idle runners
  void loop(size_t r);
};

// The `kernelarc runner` process: reads its setup and then judge requests on stdin, answers on
// stdout (the protocol streams move off fds 0/1, as in the worker). Returns the exit code.
int runner_main();

}  // namespace ka
