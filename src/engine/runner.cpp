// engine/runner.cpp — runner processes (both sides of their pipe) and the pool that dispatches
// candidates to them; see runner.h.
#include "engine/runner.h"

#include <fcntl.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <set>

#include "judge/protocol.h"
#include "oracle/oracle.h"
#include "util/error.h"
#include "util/files.h"
#include "util/process.h"
#include "util/resources.h"

namespace ka {
namespace {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

// A runner that died, hung, or could not start: its job is re-queued, the runner restarted.
struct RunnerFailed : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The judge options a runner's session needs. A new EvalOptions field that a campaign sets must
// be added here and in eval_from_json, or runners judge with its default.
json eval_to_json(const EvalOptions& o) {
  return {{"target", o.target},
          {"warmup", o.warmup},
          {"iterations", o.iterations},
          {"timeout_ms", o.timeout.count()},
          {"max_spread", o.max_spread},
          {"max_attempts", o.max_attempts},
          {"seed", o.seed},
          {"time", o.time},
          {"time_reference", o.time_reference},
          {"time_compile", o.time_compile},
          {"borrow_timings", o.borrow_timings},
          {"keep_sets", o.keep_sets},
          {"cut_slow", o.cut_slow},
          {"cut_min_reference_us", o.cut_min_reference_us},
          {"oracle_time_limit_s", o.oracle_time_limit_s},
          {"compile_budget_s", o.compile_budget_s},
          {"log_dir", o.log_dir.string()}};
}

EvalOptions eval_from_json(const json& j) {
  EvalOptions o;
  o.target = j.at("target");
  o.warmup = j.at("warmup");
  o.iterations = j.at("iterations");
  o.timeout = std::chrono::milliseconds(j.at("timeout_ms").get<int64_t>());
  o.max_spread = j.at("max_spread");
  o.max_attempts = j.at("max_attempts");
  o.seed = j.at("seed");
  o.time = j.at("time");
  o.time_reference = j.at("time_reference");
  o.time_compile = j.at("time_compile");
  o.borrow_timings = j.value("borrow_timings", true);
  o.keep_sets = j.at("keep_sets");
  o.cut_slow = j.at("cut_slow");
  o.cut_min_reference_us = j.at("cut_min_reference_us");
  o.oracle_time_limit_s = j.at("oracle_time_limit_s");
  o.compile_budget_s = j.value("compile_budget_s", 0.0);
  o.log_dir = j.at("log_dir").get<std::string>();
  return o;
}

json build_to_json(const BuildResult& b) {
  return {{"ok", b.ok},           {"cached", b.cached}, {"library", b.library.string()}, {"command", b.command},
          {"log", b.log},         {"seconds", b.seconds}, {"key", b.key}};
}

BuildResult build_from_json(const json& j) {
  BuildResult b;
  b.ok = j.at("ok");
  b.cached = j.at("cached");
  b.library = j.at("library").get<std::string>();
  b.command = j.at("command").get<std::vector<std::string>>();
  b.log = j.at("log");
  b.seconds = j.at("seconds");
  b.key = j.at("key");
  return b;
}

json workload_to_json(const WorkloadEval& w) {
  return {{"uuid", w.uuid},
          {"verdict", std::string(verdict_name(w.verdict))},
          {"message", w.message},
          {"median_us", w.timing ? w.timing->median_us : 0.0},
          {"spread", w.timing ? w.timing->spread : 0.0},
          {"attempts", w.timing ? w.timing->attempts : 0},
          {"cut", w.timing && w.timing->cut},
          {"reference_us", w.reference_us.value_or(0.0)},
          {"compile_us", w.compile_us.value_or(0.0)},
          {"compile_note", w.compile_note},
          {"timings_borrowed", w.timings_borrowed}};
}

WorkloadResult workload_from_json(const json& j) {
  WorkloadResult w;
  w.uuid = j.at("uuid");
  w.verdict = j.at("verdict");
  w.message = j.at("message");
  w.median_us = j.at("median_us");
  w.spread = j.at("spread");
  w.attempts = j.at("attempts");
  w.cut = j.value("cut", false);
  w.reference_us = j.at("reference_us");
  w.compile_us = j.value("compile_us", 0.0);
  w.compile_note = j.value("compile_note", std::string());
  w.timings_borrowed = j.value("timings_borrowed", false);
  return w;
}

}  // namespace

// The engine's handle on one runner process. It never reaps its child except in kill() and
// stop(), so that while the pool marks it busy its pid stays valid (RunnerPool::~RunnerPool).
class RunnerProcess {
 public:
  RunnerProcess(int device_id, fs::path log) : device_id_(device_id), log_(std::move(log)) {}
  ~RunnerProcess() { stop(); }

  bool running() const { return child_.running(); }
  pid_t pid() const { return pid_; }
  const fs::path& log() const { return log_; }
  const json& device() const { return device_; }

  // Spawns the process and waits for its hello. RunnerFailed, or UserError when the runner
  // reports something the user can fix (no GPU, a bad device number).
  void start(const json& setup, std::chrono::milliseconds within) {
    child_.start({self_executable().string(), "runner"}, log_.string(), {fmt::format("KERNELARC_GPU={}", device_id_)});
    pid_ = child_.pid();
    if (!send(setup)) throw RunnerFailed("it exited at once");
    json h = receive(Clock::now() + within);
    if (!h.value("ok", false)) {
      if (h.value("oracle_cut_short", false)) throw OracleCutShort(h.value("message", "the oracle's time limit passed"));
      if (h.value("user", false)) throw UserError(h.value("message", "the runner cannot start"));
      throw RunnerFailed(h.value("message", "it reported an error"));
    }
    device_ = h.value("device", json::object());
  }

  std::vector<WorkloadResult> judge(const Job& job, std::chrono::milliseconds within, bool kill_after_send) {
    if (!send({{"op", "judge"}, {"solution", to_native_json(job.candidate)}, {"build", build_to_json(job.build)}}))
      throw RunnerFailed("it is gone (the request could not be sent)");
    if (kill_after_send) {
      spdlog::warn("test hook KERNELARC_TEST_KILL_RUNNER_AFTER: killing runner process {}", pid_);
      ::kill(pid_, SIGKILL);
    }
    json h = receive(Clock::now() + within);
    if (!h.value("ok", false)) {
      if (h.value("user", false)) throw UserError(h.value("message", "the runner refused the candidate"));
      throw RunnerFailed(h.value("message", "it reported an error"));
    }
    std::vector<WorkloadResult> out;
    for (const auto& w : h.at("workloads")) out.push_back(workload_from_json(w));
    return out;
  }

  // Kills and reaps the process; returns how it ended, for the log.
  std::string kill() {
    if (!child_.running()) return "not running";
    pid_ = -1;
    RunResult r = child_.kill_and_reap();
    return r.signal ? signal_name(r.signal) : fmt::format("exit code {}", r.exit_code);
  }

  void stop() {
    if (!child_.running()) return;
    send({{"op", "exit"}});
    pid_ = -1;
    child_.reap(std::chrono::seconds(10));
  }

 private:
  int device_id_;
  fs::path log_;
  Child child_;
  std::atomic<pid_t> pid_{-1};
  json device_;

  bool send(const json& h) {
    std::string s = wire::encode_header(h);
    return child_.write_all(s.data(), s.size());
  }

  json receive(Clock::time_point deadline) {
    unsigned char len[8];
    bool timed_out = false;
    auto lost = [&]() -> RunnerFailed {
      return RunnerFailed(timed_out ? "it did not answer in time (it hangs)" : "the runner process died");
    };
    if (!child_.read_exact(len, 8, deadline, timed_out)) throw lost();
    uint64_t n = 0;
    for (int i = 7; i >= 0; --i) n = (n << 8) | len[i];
    if (n > (64u << 20)) throw RunnerFailed("it sent a corrupt reply");
    std::string s(n, '\0');
    if (!child_.read_exact(s.data(), n, deadline, timed_out)) throw lost();
    json h = json::parse(s, nullptr, false);
    if (!h.is_object()) throw RunnerFailed("it sent a corrupt reply");
    return h;
  }
};

std::vector<int> parse_gpus(const std::string& spec, const std::string& target) {
  if (spec.empty()) {
    const char* g = std::getenv("KERNELARC_GPU");
    return {g && *g ? std::atoi(g) : 0};
  }
  std::vector<int> out;
  if (spec == "all") {
    if (target != "cuda") return {0};
    int n = 0;
    if (const char* v = std::getenv("CUDA_VISIBLE_DEVICES"); v && *v) {
      n = 1 + static_cast<int>(std::count(v, v + std::strlen(v), ','));
    } else {
      RunResult r = run_command({"nvidia-smi", "-L"}, std::chrono::seconds(30));
      for (size_t pos = 0; r.ok() && pos < r.output.size();) {
        n += r.output.compare(pos, 4, "GPU ") == 0;
        size_t e = r.output.find('\n', pos);
        pos = e == std::string::npos ? r.output.size() : e + 1;
      }
    }
    if (n == 0) user_error("--gpus all: no CUDA device is visible (nvidia-smi -L lists none)");
    for (int i = 0; i < n; ++i) out.push_back(i);
    return out;
  }
  std::set<int> seen;
  for (size_t s = 0; s <= spec.size();) {
    size_t e = spec.find(',', s);
    std::string item = spec.substr(s, e == std::string::npos ? std::string::npos : e - s);
    if (item.empty() || item.size() > 4 || item.find_first_not_of("0123456789") != std::string::npos)
      user_error("--gpus takes 'all' or a comma list of device numbers (e.g. 0,1), not '{}'", spec);
    int d = std::stoi(item);
    if (!seen.insert(d).second) user_error("--gpus lists device {} twice", d);
    out.push_back(d);
    if (e == std::string::npos) break;
    s = e + 1;
  }
  return out;
}

RunnerPool::RunnerPool(const Problem& p, const EvalOptions& eval, const std::vector<int>& devices) {
  if (devices.empty()) throw std::logic_error("a runner pool needs at least one device");
  setup_ = {{"op", "setup"}, {"problem", fs::absolute(p.dir).string()}, {"eval", eval_to_json(eval)}};
  // A judge request is a load, then per workload two checks and up to max_attempts timing runs,
  // each under the worker timeout, plus a worker restart (up to 120 s) after a failed one.
  const auto steps = 2 + static_cast<int64_t>(p.workloads.size()) * (2 + std::max(1, eval.max_attempts));
  judge_within_ = (eval.timeout + std::chrono::seconds(120)) * steps;
  const auto start_within = std::chrono::minutes(30);  // the first runner may run the oracle
  fs::path log_dir = eval.log_dir.empty() ? cache_root() / "logs" : eval.log_dir;
  fs::create_directories(log_dir);
  const size_t n = devices.size();
  for (size_t r = 0; r < n; ++r)
    procs_.push_back(std::make_unique<RunnerProcess>(
        devices[r], log_dir / fmt::format("runner-{}-{}-{}.log", ::getpid(), p.def.name, r)));

  // Start: the first runner alone, then the rest together.
  std::vector<std::string> errors(n);
  std::vector<bool> user(n, false), cut(n, false);
  auto start = [&](size_t r) {
    try {
      procs_[r]->start(setup_, start_within);
    } catch (const OracleCutShort& e) {
      errors[r] = e.what();
      cut[r] = true;
    } catch (const UserError& e) {
      errors[r] = e.what();
      user[r] = true;
    } catch (const std::exception& e) {
      errors[r] = fmt::format("{}; see {}", e.what(), procs_[r]->log().string());
    }
  };
  // The first runner makes the problem's input sets through the oracle before it answers: minutes
  // for the large attention problems, so say so (the oracle's progress goes to the runner's log).
  spdlog::info("{}: starting the judge (the oracle makes the input sets first; progress in {})", p.def.name,
               procs_[0]->log().string());
  const auto t0 = std::chrono::steady_clock::now();
  start(0);
  if (errors[0].empty())
    spdlog::info("{}: judge ready after {:.1f} s", p.def.name,
                 std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  if (errors[0].empty()) {
    std::vector<std::thread> starters;
    for (size_t r = 1; r < n; ++r) starters.emplace_back(start, r);
    for (auto& t : starters) t.join();
  }
  for (size_t r = 0; r < n; ++r) {
    if (errors[r].empty()) continue;
    if (cut[r]) throw OracleCutShort(errors[r]);
    if (user[r]) user_error("runner {} (device {}): {}", r, devices[r], one_line(errors[r]));
    throw std::runtime_error(fmt::format("runner {} (device {}) did not start: {}", r, devices[r], errors[r]));
  }
  for (size_t r = 0; r < n; ++r) {
    const json& d = procs_[r]->device();
    if (d.value("sm", 0) != procs_[0]->device().value("sm", 0))
      user_error("--gpus: device {} is sm_{} but device {} is sm_{}; one campaign builds for one architecture",
                 devices[r], d.value("sm", 0), devices[0], procs_[0]->device().value("sm", 0));
    devices_.push_back(d);
    gpus_.push_back(eval.target == "cuda" ? d.value("uuid", fmt::format("cuda:{}", devices[r]))
                                          : fmt::format("host:{}", devices[r]));
    RunnerStats s;
    s.index = static_cast<int>(r);
    s.device_id = devices[r];
    s.device = d.value("name", eval.target);
    s.gpu = gpus_.back();
    stats_.push_back(s);
    idle_.push_back(r);
  }
  inbox_.resize(n);
  busy_.assign(n, false);
  failures_.assign(n, 0);
  if (const char* k = std::getenv("KERNELARC_TEST_KILL_RUNNER_AFTER"))
    for (const char* c = k; *c;) {
      kill_at_.insert(std::atoi(c));
      c = std::strchr(c, ',');
      if (!c) break;
      ++c;
    }
  for (size_t r = 0; r < n; ++r) threads_.emplace_back([this, r] { loop(r); });
}

RunnerPool::~RunnerPool() {
  {
    std::lock_guard<std::mutex> l(mu_);
    stop_ = true;
    // A runner still judging (the campaign stops on an error) is killed rather than waited for.
    for (size_t r = 0; r < procs_.size(); ++r)
      if (busy_[r] && procs_[r]->pid() > 0) ::kill(procs_[r]->pid(), SIGKILL);
  }
  work_cv_.notify_all();
  for (auto& t : threads_) t.join();
  procs_.clear();  // idle runners are asked to exit; the others are reaped
}

void RunnerPool::submit(std::shared_ptr<Job> job) {
  std::lock_guard<std::mutex> l(mu_);
  ready_.emplace(job->order, std::move(job));
  dispatch();
}

void RunnerPool::fail(const std::string& message, bool user) {
  std::lock_guard<std::mutex> l(mu_);
  if (fatal_.empty()) {
    fatal_ = message;
    fatal_user_ = user;
  }
  done_cv_.notify_all();
}

std::vector<std::shared_ptr<Job>> RunnerPool::wait_judged() {
  std::unique_lock<std::mutex> l(mu_);
  done_cv_.wait(l, [this] { return !judged_.empty() || !fatal_.empty(); });
  if (!judged_.empty()) return std::exchange(judged_, {});  // record what was judged; throw next time
  if (fatal_user_) throw UserError(fatal_);
  throw std::runtime_error(fatal_);
}

std::vector<RunnerStats> RunnerPool::stats() const {
  std::lock_guard<std::mutex> l(mu_);
  return stats_;
}

void RunnerPool::dispatch() {
  for (auto it = ready_.begin(); it != ready_.end() && !idle_.empty();) {
    const Job& job = *it->second;
    auto r = std::find_if(idle_.begin(), idle_.end(),
                          [&](size_t i) { return job.pin < 0 || job.pin == static_cast<int>(i); });
    if (r == idle_.end()) {
      ++it;
      continue;
    }
    inbox_[*r] = std::move(it->second);
    idle_.erase(r);
    it = ready_.erase(it);
  }
  work_cv_.notify_all();
}

void RunnerPool::loop(size_t r) {
  RunnerProcess& proc = *procs_[r];
  for (;;) {
    std::shared_ptr<Job> job;
    bool kill = false;
    {
      std::unique_lock<std::mutex> l(mu_);
      work_cv_.wait(l, [&] { return stop_ || inbox_[r]; });
      if (stop_) return;
      job = std::move(inbox_[r]);
      busy_[r] = true;
      kill = kill_at_.count(++sent_) > 0;
    }
    const auto t0 = Clock::now();
    std::vector<WorkloadResult> res;
    std::string error;
    bool user = false;
    try {
      if (!proc.running()) {
        proc.start(setup_, std::chrono::minutes(30));
        if (proc.device().value("uuid", "") != devices_[r].value("uuid", ""))
          throw RunnerFailed("it came back on another device");
      }
      res = proc.judge(*job, judge_within_, kill);
    } catch (const UserError& e) {
      error = e.what();
      user = true;
    } catch (const std::exception& e) {
      error = e.what();
    }
    const double dt = std::chrono::duration<double>(Clock::now() - t0).count();
    {
      std::lock_guard<std::mutex> l(mu_);
      busy_[r] = false;
      if (stop_) return;
    }
    std::string ended;
    if (!error.empty() && !user) ended = proc.kill();  // reaped only now that it is not busy

    std::lock_guard<std::mutex> l(mu_);
    stats_[r].busy_s += dt;
    if (error.empty()) {
      job->workloads = std::move(res);
      job->runner = static_cast<int>(r);
      job->seconds = dt;
      ++stats_[r].judged;
      failures_[r] = 0;
      judged_.push_back(std::move(job));
      done_cv_.notify_all();
    } else if (user) {
      fatal_ = fmt::format("runner {} ({}): {}", r, stats_[r].device, one_line(error));
      fatal_user_ = true;
      done_cv_.notify_all();
      return;
    } else {
      ++stats_[r].restarts;
      ++failures_[r];
      ++job->requeued;
      // Past the caps the campaign stops; what it recorded stays, and the same command resumes.
      if (failures_[r] >= kMaxRunnerFailures || job->requeued > kMaxRequeues) {
        fatal_ = failures_[r] >= kMaxRunnerFailures
                     ? fmt::format("runner {} (device {}) failed {} times in a row, the last time: {} ({}); see {}", r,
                                   stats_[r].device_id, failures_[r], one_line(error), ended, proc.log().string())
                     : fmt::format("candidate {} was in flight on runners that failed {} times, the last time: {} ({})",
                                   job->candidate.name, job->requeued, one_line(error), ended);
        fatal_user_ = true;  // not a bug: a device or machine that keeps failing
        done_cv_.notify_all();
        return;
      }
      spdlog::warn("runner {} (device {}) failed with candidate {} in flight: {} ({}); candidate re-queued, runner "
                   "restarts on its next candidate",
                   r, stats_[r].device_id, job->candidate.name, one_line(error), ended);
      ready_.emplace(job->order, std::move(job));
    }
    idle_.push_back(r);
    dispatch();
  }
}

int runner_main() {
  // The protocol streams move off fds 0/1 so that nothing printed can corrupt a reply.
  int in = ::dup(0), out = ::dup(1);
  ::fcntl(in, F_SETFD, FD_CLOEXEC);
  ::fcntl(out, F_SETFD, FD_CLOEXEC);
  int devnull = ::open("/dev/null", O_RDONLY);
  ::dup2(devnull, 0);
  ::dup2(2, 1);
  auto fail = [&](const std::exception& e, bool user) {
    wire::write_message(out, {{"ok", false}, {"user", user}, {"message", one_line(e.what())}});
    return user ? 2 : 1;
  };
  json setup;
  if (!wire::read_header(in, setup)) return 1;
  Problem p;
  std::unique_ptr<Oracle> oracle;
  std::unique_ptr<JudgeSession> session;
  try {
    p = load_problem(setup.at("problem").get<std::string>());
    EvalOptions eo = eval_from_json(setup.at("eval"));
    std::vector<const Workload*> wls;
    for (const auto& w : p.workloads) wls.push_back(&w);
    oracle = std::make_unique<Oracle>(eo.target == "cuda" ? "cuda" : "cpu");
    if (eo.oracle_time_limit_s > 0) oracle->set_time_limit(eo.oracle_time_limit_s);
    if (eo.compile_budget_s > 0) oracle->set_compile_budget(eo.compile_budget_s);
    session = std::make_unique<JudgeSession>(p, wls, *oracle, eo);
    // Judging an unbuilt candidate starts the worker and makes the oracle's entries (filling the
    // cache on the first runner) without running anything.
    session->judge(Candidate{}, BuildResult{});
    // Sets the oracle's time limit left unmade: no candidate is judged without them (their
    // workloads would be recorded as failed for good); the engine ends the problem, the finished
    // sets stay in the cache, and a later run goes on from there.
    if (auto [cut, all] = session->sets_cut_short(); cut > 0) {
      wire::write_message(out, {{"ok", false}, {"user", true}, {"oracle_cut_short", true},
                                {"message", fmt::format("the oracle made {} of {} input sets within its time limit of "
                                                        "{:g} s (those made stay in its cache: a rerun goes on from there)",
                                                        all - cut, all, eo.oracle_time_limit_s)}});
      return 2;
    }
  } catch (const UserError& e) {
    return fail(e, true);
  } catch (const std::exception& e) {
    return fail(e, false);
  }
  if (!wire::write_message(out, {{"ok", true}, {"device", session->device()}, {"pid", ::getpid()}})) return 1;
  for (;;) {
    json h;
    if (!wire::read_header(in, h)) return 0;  // the engine went away
    const std::string op = h.value("op", "");
    if (op == "exit") {
      wire::write_message(out, {{"ok", true}});
      return 0;
    }
    try {
      if (op != "judge") throw std::runtime_error("unknown op '" + op + "'");
      Candidate c = parse_solution_json(h.at("solution"), "runner request");
      CandidateEval ev = session->judge(c, build_from_json(h.at("build")));
      json ws = json::array();
      for (const auto& w : ev.workloads) ws.push_back(workload_to_json(w));
      if (!wire::write_message(out, {{"ok", true}, {"workloads", ws}, {"worker_restarts", ev.worker_restarts}})) return 1;
    } catch (const UserError& e) {
      return fail(e, true);
    } catch (const std::exception& e) {
      return fail(e, false);  // the engine restarts this runner and re-queues the candidate
    }
  }
}

}  // namespace ka
