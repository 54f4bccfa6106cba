// judge/evaluator.cpp — the per-candidate, per-workload judging procedure.
#include "judge/evaluator.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "judge/compare.h"
#include "judge/worker_client.h"
#include "util/error.h"
#include "util/files.h"

namespace ka {

struct InputSet {
  std::vector<Tensor> inputs;   // definition order
  std::vector<Tensor> outputs;  // shapes/dtypes of the reference, data = reference values
};

namespace {

using json = nlohmann::json;

double quantile(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return 0;
  double pos = q * static_cast<double>(sorted.size() - 1);
  size_t i = static_cast<size_t>(pos);
  double f = pos - static_cast<double>(i);
  return i + 1 < sorted.size() ? sorted[i] * (1 - f) + sorted[i + 1] * f : sorted[i];
}


// Loads an oracle entry into definition order (regenerating the inputs the oracle did not
// store); the reference stays here, in the judge.
InputSet load_set(const Problem& p, const Oracle& oracle, const OracleEntry& e) {
  SafeTensors in = oracle.load_inputs(p, e);
  SafeTensors ref = oracle.load(e, "reference.safetensors");
  InputSet s;
  for (const auto& t : p.def.inputs) {
    auto it = in.tensors.find(t.name);
    if (it == in.tensors.end()) user_error("{}: oracle entry lacks input '{}'", e.dir.string(), t.name);
    Tensor x = std::move(it->second);
    x.scalar = t.scalar;
    s.inputs.push_back(std::move(x));
  }
  for (const auto& t : p.def.outputs) {
    auto it = ref.tensors.find(t.name);
    if (it == ref.tensors.end()) user_error("{}: oracle entry lacks reference output '{}'", e.dir.string(), t.name);
    s.outputs.push_back(std::move(it->second));
  }
  return s;
}

size_t set_bytes(const InputSet& s) {
  size_t n = 0;
  for (const auto& t : s.inputs) n += t.data.size();
  for (const auto& t : s.outputs) n += t.data.size();
  return n;
}

std::vector<CallArg> call_args(const InputSet& s) {
  std::vector<CallArg> a;
  for (const auto& t : s.inputs) a.push_back({&t, false});
  for (const auto& t : s.outputs) a.push_back({&t, true});
  return a;
}

// The outputs of one call (a fetched payload: each output's bytes in definition order) against
// the references; false (and w filled) at the first output out of tolerance. Error statistics
// are the maxima over every call compared.
bool judge_outputs(const WorkerReply& r, const Problem& p, const std::vector<Tensor>& refs, const Tolerance& tol,
                   WorkloadEval& w, const std::string& when) {
  size_t off = 0;
  for (size_t i = 0; i < refs.size(); ++i) {
    const Tensor& ref = refs[i];
    Tensor out;
    out.dtype = ref.dtype;
    out.shape = ref.shape;
    const size_t n = ref.nbytes();
    if (off + n > r.payload.size()) throw std::runtime_error("worker reply too short");
    out.data.assign(r.payload.begin() + static_cast<long>(off), r.payload.begin() + static_cast<long>(off + n));
    off += n;
    const CompareResult c = compare_output(out, ref, tol);
    w.max_abs_err = std::max(w.max_abs_err, c.max_abs_err);
    w.max_rel_err = std::max(w.max_rel_err, c.max_rel_err);
    w.matched_ratio = std::min(w.matched_ratio, c.matched_ratio);
    if (c.nonfinite) w.has_nan = true;  // NaN/Inf are not told apart here; both fail
    if (!c.ok) {
      w.verdict = Verdict::wrong_answer;
      w.message = fmt::format("{}: output '{}': {}", when, p.def.outputs[i].name, c.reason);
      return false;
    }
  }
  return true;
}

// Bytes of one set's inputs and outputs for a workload, from the definition's shapes.
std::pair<size_t, size_t> io_bytes(const Problem& p, const Workload& w) {
  size_t in = 0, out = 0;
  for (const auto& t : p.def.inputs) {
    int64_t n = 1;
    for (int64_t d : resolve_shape(t, w)) n *= d;
    in += dtype_storage_bytes(t.dtype, n);
  }
  for (const auto& t : p.def.outputs) {
    int64_t n = 1;
    for (int64_t d : resolve_shape(t, w)) n *= d;
    out += dtype_storage_bytes(t.dtype, n);
  }
  return {in, out};
}

// K, the timing sets of a workload (evaluator.h): one per timing call while rotation_bytes allow,
// at least 2 (fewer only when a run has fewer calls).
size_t timing_set_count(size_t input_bytes, const EvalOptions& opt) {
  if (!opt.time) return 0;
  const size_t calls = static_cast<size_t>(std::max(1, opt.warmup + opt.iterations));
  const size_t by_memory = input_bytes ? opt.rotation_bytes / input_bytes : calls;
  const size_t k = std::min({by_memory, static_cast<size_t>(std::max(1, opt.max_rotation_sets)), calls});
  return std::max(k, std::min<size_t>(2, calls));
}

WorkloadEval failed(const Workload& wl, Verdict v, std::string msg) {
  WorkloadEval w;
  w.uuid = wl.uuid;
  w.workload = wl.raw;
  w.verdict = v;
  w.message = std::move(msg);
  return w;
}

}  // namespace

TimingStats summarize(std::vector<double> samples_us) {
  TimingStats t;
  t.samples_us = samples_us;
  std::sort(samples_us.begin(), samples_us.end());
  if (samples_us.empty()) return t;
  size_t n = samples_us.size();
  t.median_us = n % 2 ? samples_us[n / 2] : 0.5 * (samples_us[n / 2 - 1] + samples_us[n / 2]);
  double sum = 0;
  for (double v : samples_us) sum += v;
  t.mean_us = sum / static_cast<double>(n);
  t.min_us = samples_us.front();
  t.max_us = samples_us.back();
  t.p25_us = quantile(samples_us, 0.25);
  t.p75_us = quantile(samples_us, 0.75);
  t.spread = t.median_us > 0 ? (t.p75_us - t.p25_us) / t.median_us : 0;
  return t;
}

JudgeSession::JudgeSession(const Problem& p, std::vector<const Workload*> workloads, Oracle& oracle, EvalOptions opt)
    : p_(p), workloads_(std::move(workloads)), oracle_(oracle), opt_(std::move(opt)) {
  fs::path log_dir = opt_.log_dir.empty() ? cache_root() / "logs" : opt_.log_dir;
  fs::create_directories(log_dir);
  worker_ = std::make_unique<WorkerClient>(opt_.target, log_dir / fmt::format("worker-{}-{}.log", ::getpid(), p_.def.name));
}

JudgeSession::~JudgeSession() = default;

const json& JudgeSession::device() { return worker_->hello()["device"]; }

int JudgeSession::sm() { return device().value("sm", 0); }

void JudgeSession::prepare() {
  if (prepared_) return;
  // Oracle entries per workload, in the order the judge needs them: the check set (seed, the one
  // whose reference is timed), the timing sets (seed + 2 ..), the fresh re-check set (seed + 1).
  std::vector<OracleRequest> reqs;
  for (const Workload* w : workloads_) {
    require_inputs_available(p_, *w);
    base_.push_back(reqs.size());
    timing_sets_.push_back(timing_set_count(io_bytes(p_, *w).first, opt_));
    reqs.push_back({w, opt_.seed});
    for (size_t j = 0; j < timing_sets_.back(); ++j) reqs.push_back({w, opt_.seed + 2 + j, false});
    reqs.push_back({w, opt_.seed + 1, false});
  }
  // Set either way: the oracle may be shared with a session that borrowed.
  oracle_.borrow_timings_for(opt_.time_reference && opt_.borrow_timings ? device().value("name", std::string())
                                                                        : std::string());
  entries_ = oracle_.ensure(p_, reqs, opt_.time_reference, opt_.time_compile);
  sets_.resize(entries_.size());
  prepared_ = true;
}

std::pair<size_t, size_t> JudgeSession::sets_cut_short() const {
  size_t n = 0;
  for (const auto& e : entries_) n += e.stopped;
  return {n, entries_.size()};
}

size_t JudgeSession::host_set_bytes() const {
  size_t n = 0;
  for (const auto& s : sets_)
    if (s) n += set_bytes(*s);
  return n;
}

void JudgeSession::remember(size_t i, const std::shared_ptr<const InputSet>& s) {
  if (sets_[i] || (opt_.keep_sets && !evicted_.count(i))) return;  // the worker's copy is the one kept
  if (host_set_bytes() + set_bytes(*s) <= opt_.host_sets_bytes) sets_[i] = s;
}

std::shared_ptr<const InputSet> JudgeSession::set(size_t i) {
  if (sets_[i]) return sets_[i];
  // Loads ahead of i that were skipped (a workload whose check failed needs no re-check set) are
  // dropped, so at most a few sets are held ahead whatever the candidates do.
  while (!pending_.empty() && pending_.begin()->first < i) pending_.erase(pending_.begin());
  std::shared_ptr<const InputSet> s;
  if (auto it = pending_.find(i); it != pending_.end()) {
    auto f = std::move(it->second);
    pending_.erase(it);
    s = f.get();  // a failed load throws here, as it would have in place
    ++loaded_ahead_;
  } else {
    s = std::make_shared<const InputSet>(load_set(p_, oracle_, entries_[i]));
  }
  if (opt_.keep_sets && !evicted_.count(i)) prefetch_after(i);
  remember(i, s);
  return s;
}

namespace {
bool regenerates_inputs(const OracleEntry& e) {
  if (!e.ok() || !e.meta.is_object() || !e.meta.contains("inputs") || !e.meta["inputs"].is_object()) return false;
  for (const auto& [name, m] : e.meta["inputs"].items())
    if (m.is_object() && m.value("regenerate", false)) return true;
  return false;
}
}  // namespace

void JudgeSession::prefetch_after(size_t i) {
  // Two sets ahead: while the worker receives and runs set i, the oracle's regeneration process
  // draws the next one and this process reads and checks it (up to 2 x 1.1 GB of host memory for
  // 018's sets). Loading a set is seconds there (1 GB drawn, written, read back, hashed), against
  // well under a second to run it.
  constexpr size_t kAhead = 2;
  for (size_t j = i + 1; j < entries_.size() && j <= i + kAhead; ++j) {
    if (sets_[j] || pending_.count(j) || evicted_.count(j) || !regenerates_inputs(entries_[j])) continue;
    pending_.emplace(j, std::async(std::launch::async, [this, j] {
                       return std::make_shared<const InputSet>(load_set(p_, oracle_, entries_[j]));
                     }));
  }
}

std::shared_ptr<const std::vector<Tensor>> JudgeSession::reference(size_t i) {
  if (sets_[i]) return std::shared_ptr<const std::vector<Tensor>>(sets_[i], &sets_[i]->outputs);
  if (auto it = refs_.find(i); it != refs_.end()) return it->second;
  SafeTensors ref = oracle_.load(entries_[i], "reference.safetensors");
  auto r = std::make_shared<std::vector<Tensor>>();
  for (const auto& t : p_.def.outputs) {
    auto it = ref.tensors.find(t.name);
    if (it == ref.tensors.end())
      user_error("{}: oracle entry lacks reference output '{}'", entries_[i].dir.string(), t.name);
    r->push_back(std::move(it->second));
  }
  keep_reference(i, r);
  return r;
}

void JudgeSession::keep_reference(size_t i, std::shared_ptr<const std::vector<Tensor>> r) {
  auto bytes = [](const std::vector<Tensor>& v) {
    size_t n = 0;
    for (const auto& t : v) n += t.data.size();
    return n;
  };
  size_t total = bytes(*r);
  for (const auto& [j, x] : refs_) total += bytes(*x);
  while (total > opt_.host_sets_bytes && !ref_order_.empty()) {  // the oldest go first
    auto it = refs_.find(ref_order_.front());
    if (it != refs_.end()) {
      total -= bytes(*it->second);
      refs_.erase(it);
    }
    ref_order_.erase(ref_order_.begin());
  }
  if (total > opt_.host_sets_bytes) return;  // too big to keep at all: read again when needed
  refs_[i] = std::move(r);
  ref_order_.push_back(i);
}

WorkerReply JudgeSession::hold(const std::vector<size_t>& ids) {
  WorkerClient& worker = *worker_;
  auto flag = [](const WorkerReply& r, const char* key) { return r.header.is_object() && r.header.value(key, false); };
  WorkerReply ok;
  ok.ok = true;
  for (int attempt = 0; attempt < 2; ++attempt) {
    if (worker.restarts() != held_by_) {  // a fresh worker keeps nothing yet (a dead one: see run_calls)
      held_.clear();
      held_by_ = worker.restarts();
    }
    bool full = false;
    for (size_t i : ids) {
      if (held_.count(i)) continue;
      std::shared_ptr<const InputSet> s = set(i);
      keep_reference(i, std::make_shared<const std::vector<Tensor>>(s->outputs));  // not the inputs
      WorkerReply put = worker.put(static_cast<int64_t>(i), call_args(*s), std::max(opt_.timeout, std::chrono::milliseconds(600000)),
                                   attempt == 0);  // after the drop, this run's sets may take more than the budget
      if (!put.ok && flag(put, "no_room")) {
        full = true;
        break;
      }
      if (!put.ok) return put;
      if (worker.restarts() != held_by_) {  // the put restarted a dead worker: it holds this set only
        held_.clear();
        held_by_ = worker.restarts();
      }
      held_.insert(i);
      sets_[i].reset();
      remember(i, s);
    }
    if (!full && std::all_of(ids.begin(), ids.end(), [&](size_t i) { return held_.count(i) > 0; })) return ok;
    if (full) {
      // The device is full of earlier workloads' sets: drop them all, keep host copies of this
      // workload's from now on (within the host budget), and put them again.
      spdlog::debug("the worker's device is full; it drops every kept set");
      WorkerReply d = worker.drop({}, opt_.timeout);
      if (!d.ok) return d;
      held_.clear();
      evicted_.insert(ids.begin(), ids.end());
    }
  }
  WorkerReply no;
  no.verdict = Verdict::unavailable;
  no.message = "the input sets of this workload do not fit on the device together";
  return no;
}

CandidateEval JudgeSession::evaluate(const Candidate& c) {
  if (c.target() != opt_.target)
    user_error("solution '{}' is {} ({}), but the target is {}", c.name, c.language, c.target(), opt_.target);
  int arch = sm();
  prepare();
  return judge(c, build_candidate(c, arch));
}

// A run: the sets it draws on, the set of each call (warm-up first), which calls' outputs come back
// (their inputs checked too when `inputs`), and what a failure message calls it.
struct JudgeSession::Run {
  std::vector<size_t> sets, order;
  int warmup = 0;
  std::vector<char> fetch;
  bool inputs = true;
  std::string name;
};

// A timing run on workload k: calls in shuffled rounds over the K timing sets (each set once per
// round, rounds in a fresh random order), and the calls whose outputs come back: all while their
// bytes stay within fetch_bytes, else a random sample of that many (at least one). The worker
// learns a call's set just before it and whether it is fetched just after it.
JudgeSession::Run JudgeSession::timing_run(size_t k, int warmup, int iterations) {
  Run r;
  r.warmup = warmup;
  r.name = "timing";
  for (size_t j = 1; j <= timing_sets_[k]; ++j) r.sets.push_back(base_[k] + j);
  const size_t calls = static_cast<size_t>(warmup + iterations);
  while (r.order.size() < calls) {
    std::vector<size_t> round = r.sets;
    std::shuffle(round.begin(), round.end(), rng_);
    r.order.insert(r.order.end(), round.begin(), round.end());
  }
  r.order.resize(calls);
  const auto [in_bytes, out_bytes] = io_bytes(p_, *workloads_[k]);
  const size_t fetched = std::clamp<size_t>(out_bytes ? opt_.fetch_bytes / out_bytes : calls, 1, calls);
  r.fetch.assign(calls, 0);
  std::fill(r.fetch.begin(), r.fetch.begin() + static_cast<long>(fetched), 1);
  std::shuffle(r.fetch.begin(), r.fetch.end(), rng_);
  r.inputs = in_bytes <= opt_.input_check_bytes;
  return r;
}

bool JudgeSession::run_calls(const Workload& wl, const Run& run, WorkloadEval& w, TimingStats* timing) {
  WorkerClient& worker = *worker_;
  auto fail = [&](const WorkerReply& r, const std::string& when) {
    w.verdict = r.verdict;
    w.message = fmt::format("{}: {}", when, r.message);
    return false;
  };
  std::vector<int64_t> ids(run.sets.begin(), run.sets.end());
  const json start = {{"sets", ids}, {"calls", run.order.size()}, {"warmup", run.warmup}};
  WorkerReply r;
  for (int attempt = 0; attempt < 2; ++attempt) {
    WorkerReply h = hold(run.sets);
    if (!h.ok) return fail(h, run.name);
    r = worker.start_run(start, opt_.timeout);
    if (r.ok || !(r.header.is_object() && r.header.value("missing_set", false))) break;
    held_by_ = -1;  // the worker restarted since the sets were put
  }
  if (!r.ok) return fail(r, run.name);
  const size_t n = run.order.size();
  for (size_t i = 0; i < n; ++i) {
    const std::string when =
        n == 1 ? run.name
               : fmt::format("{}, call {} of {} ({})", run.name, i + 1, n, static_cast<int>(i) < run.warmup ? "warm-up" : "timed");
    WorkerReply c = worker.in_run({{"op", "call"}, {"set", run.order[i]}}, opt_.timeout);
    if (!c.ok) return fail(c, when);
    const bool fetch = run.fetch[i] != 0;
    WorkerReply a = worker.in_run({{"op", "after"}, {"fetch", fetch}, {"inputs", fetch && run.inputs}}, opt_.timeout);
    if (!a.ok) return fail(a, when);
    bool good = true;
    if (a.header.contains("input_written")) {
      w.verdict = Verdict::reward_hack;
      w.message = fmt::format("{}: the candidate wrote into input '{}'", when,
                              p_.def.inputs.at(a.header["input_written"].get<size_t>()).name);
      good = false;
    } else if (fetch) {
      good = judge_outputs(a, p_, *reference(run.order[i]), wl.tolerance, w, when);
    }
    if (!good) {
      if (i + 1 < n) worker.in_run({{"op", "abort"}}, opt_.timeout);  // the worker ends the run
      else worker.in_run(nullptr, opt_.timeout);                      // its summary, unread
      return false;
    }
  }
  WorkerReply done = worker.in_run(nullptr, opt_.timeout);
  if (!done.ok) return fail(done, run.name);
  if (timing) {
    *timing = summarize(done.header.at("samples_us").get<std::vector<double>>());
    timing->activity = done.header.value("activity", std::vector<std::string>{});
  }
  return true;
}

CandidateEval JudgeSession::judge(const Candidate& c, const BuildResult& build) {
  prepare();
  CandidateEval ev;
  ev.target = opt_.target;
  ev.device = device();
  ev.build = build;
  WorkerClient& worker = *worker_;
  const EvalOptions& opt = opt_;
  const int restarts_before = worker.restarts();
  if (!ev.build.ok) {
    std::string first;
    for (size_t pos = 0; pos < ev.build.log.size();) {
      size_t e = ev.build.log.find('\n', pos);
      std::string line = ev.build.log.substr(pos, e == std::string::npos ? std::string::npos : e - pos);
      if (line.find("error") != std::string::npos) {
        first = line;
        break;
      }
      if (e == std::string::npos) break;
      pos = e + 1;
    }
    for (const Workload* w : workloads_)
      ev.workloads.push_back(
          failed(*w, Verdict::compile_error, one_line(first.empty() ? ev.build.log.substr(0, 300) : first)));
    return ev;
  }
  WorkerReply lr = worker.load(ev.build.library, opt.timeout);
  if (!lr.ok) {
    for (const Workload* w : workloads_) ev.workloads.push_back(failed(*w, lr.verdict, lr.message));
    return ev;
  }
  for (size_t k = 0; k < workloads_.size(); ++k) {
    ev.workloads.push_back(judge_workload(k));
    if (!opt.keep_sets) {  // --send-inputs: no set stays in the worker past its workload
      std::vector<int64_t> ids;
      for (size_t i = base_[k]; i <= base_[k] + timing_sets_[k] + 1; ++i) ids.push_back(static_cast<int64_t>(i));
      if (worker.drop(ids, opt.timeout).ok)
        for (int64_t i : ids) held_.erase(static_cast<size_t>(i));
    }
  }
  ev.worker_restarts = worker.restarts() - restarts_before;
  ev.host_set_bytes = host_set_bytes();
  ev.sets_loaded_ahead = loaded_ahead_;
  return ev;
}

WorkloadEval JudgeSession::judge_workload(size_t k) {
  const Workload& wl = *workloads_[k];
  const EvalOptions& opt = opt_;
  WorkloadEval w;
  w.uuid = wl.uuid;
  w.workload = wl.raw;
  const size_t first = base_[k], fresh = base_[k] + timing_sets_[k] + 1;
  for (size_t i = first; i <= fresh; ++i)
    if (!entries_[i].ok()) {
      w.verdict = Verdict::unavailable;
      w.message = entries_[i].error;
      return w;
    }
  if (auto ms = entries_[first].reference_ms()) w.reference_us = *ms * 1000.0;
  if (auto ms = entries_[first].compile_ms()) w.compile_us = *ms * 1000.0;
  w.compile_note = entries_[first].compile_note();
  w.timings_borrowed = entries_[first].meta.contains("timings_from");
  auto single = [](size_t set, std::string name) {
    Run r;
    r.sets = r.order = {set};
    r.fetch = {1};
    r.name = std::move(name);
    return r;
  };
  if (!run_calls(wl, single(first, "check"), w, nullptr)) return w;
  if (opt.time) {
    std::optional<TimingStats> best;
    if (opt.cut_slow > 0 && w.reference_us && *w.reference_us >= opt.cut_min_reference_us) {
      TimingStats t;
      if (!run_calls(wl, timing_run(k, 1, 3), w, &t)) return w;
      if (t.median_us > opt.cut_slow * *w.reference_us) {
        t.attempts = 1;
        t.cut = true;
        best = t;
      }
    }
    for (int attempt = 1; !(best && best->cut) && attempt <= opt.max_attempts; ++attempt) {
      TimingStats t;
      if (!run_calls(wl, timing_run(k, opt.warmup, opt.iterations), w, &t)) return w;
      if (!best || t.spread < best->spread) best = t;
      best->attempts = attempt;
      if (t.spread <= opt.max_spread) break;
    }
    w.timing = best;
  }
  run_calls(wl, single(fresh, "re-check on fresh inputs after timing"), w, nullptr);
  return w;
}

CandidateEval evaluate(const Problem& p, const Candidate& c, const std::vector<const Workload*>& workloads, Oracle& oracle,
                       const EvalOptions& opt) {
  JudgeSession session(p, workloads, oracle, opt);
  return session.evaluate(c);
}

}  // namespace ka
