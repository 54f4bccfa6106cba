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

json tolerance_json(const Tolerance& t) {
  return {{"max_atol", t.max_atol}, {"max_rtol", t.max_rtol}, {"required_matched_ratio", t.required_matched_ratio},
          {"max_error_cap", t.max_error_cap ? json(*t.max_error_cap) : json()}, {"allow_negative_inf", t.allow_negative_inf}};
}

// Reads the reply of one check call. A set kept in the worker comes back compared there
// ("input_written" or "compare"); a set sent whole comes back as bytes (outputs, then the inputs
// as they were after the call), compared here against `sent`, the set sent with the call (null
// when the worker kept it). Returns false (and fills w) on any failure.
bool check_reply(const WorkerReply& r, const Problem& p, const InputSet* sent, const Tolerance& tol, WorkloadEval& w,
                 const char* when) {
  if (!r.ok) {
    w.verdict = r.verdict;
    w.message = fmt::format("{}: {}", when, r.message);
    return false;
  }
  if (r.header.contains("input_written")) {
    w.verdict = Verdict::reward_hack;
    w.message = fmt::format("{}: the candidate wrote into input '{}'", when,
                            p.def.inputs.at(r.header["input_written"].get<size_t>()).name);
    return false;
  }
  std::vector<CompareResult> results;
  if (r.header.contains("compare")) {
    for (const auto& c : r.header["compare"]) {
      CompareResult x;
      x.ok = c.value("ok", false);
      x.max_abs_err = c.value("max_abs_err", 0.0);
      x.max_rel_err = c.value("max_rel_err", 0.0);
      x.matched_ratio = c.value("matched_ratio", 0.0);
      x.values = c.value("values", int64_t{0});
      x.nonfinite = c.value("nonfinite", int64_t{0});
      x.never_written = c.value("never_written", false);
      x.reason = c.value("reason", "");
      results.push_back(std::move(x));
    }
    if (results.size() != p.def.outputs.size()) throw std::runtime_error("worker reply lists the wrong number of outputs");
  } else {
    if (!sent) throw std::runtime_error("worker replied with outputs for a set it keeps");
    const InputSet& s = *sent;
    size_t off = 0;
    std::vector<Tensor> outs;
    for (const auto& ref : s.outputs) {
      Tensor t;
      t.dtype = ref.dtype;
      t.shape = ref.shape;
      size_t n = ref.nbytes();
      if (off + n > r.payload.size()) throw std::runtime_error("worker reply too short");
      t.data.assign(r.payload.begin() + static_cast<long>(off), r.payload.begin() + static_cast<long>(off + n));
      off += n;
      outs.push_back(std::move(t));
    }
    for (size_t i = 0; i < s.inputs.size(); ++i) {
      const Tensor& in = s.inputs[i];
      if (in.scalar) continue;
      size_t n = in.data.size();
      if (off + n > r.payload.size()) throw std::runtime_error("worker reply too short");
      if (std::memcmp(r.payload.data() + off, in.data.data(), n) != 0) {
        w.verdict = Verdict::reward_hack;
        w.message = fmt::format("{}: the candidate wrote into input '{}'", when, p.def.inputs[i].name);
        return false;
      }
      off += n;
    }
    for (size_t i = 0; i < outs.size(); ++i) results.push_back(compare_output(outs[i], s.outputs[i], tol));
  }
  for (size_t i = 0; i < results.size(); ++i) {
    const CompareResult& c = results[i];
    w.max_abs_err = std::max(w.max_abs_err, c.max_abs_err);
    w.max_rel_err = std::max(w.max_rel_err, c.max_rel_err);
    w.matched_ratio = std::min(w.matched_ratio, c.matched_ratio);
    if (c.nonfinite) {
      w.has_nan = true;  // NaN/Inf are not told apart here; both fail
    }
    if (!c.ok) {
      w.verdict = Verdict::wrong_answer;
      w.message = fmt::format("{}: output '{}': {}", when, p.def.outputs[i].name, c.reason);
      return false;
    }
  }
  return true;
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
  // Oracle entries: the check set (seed) and the fresh re-check set (seed + 1).
  std::vector<OracleRequest> reqs;
  for (const Workload* w : workloads_) {
    require_inputs_available(p_, *w);
    reqs.push_back({w, opt_.seed});
    reqs.push_back({w, opt_.seed + 1, false});  // the fresh re-check set needs no reference timing
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
  if (sets_[i] || (opt_.keep_sets && !unkept_.count(i))) return;  // the worker's copy is the one kept
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
  if (opt_.keep_sets && !unkept_.count(i)) prefetch_after(i);
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
    if (sets_[j] || pending_.count(j) || unkept_.count(j) || !regenerates_inputs(entries_[j])) continue;
    pending_.emplace(j, std::async(std::launch::async, [this, j] {
                       return std::make_shared<const InputSet>(load_set(p_, oracle_, entries_[j]));
                     }));
  }
}

WorkerReply JudgeSession::run_set(size_t i, const std::string& mode, json extra, std::shared_ptr<const InputSet>* sent) {
  WorkerClient& worker = *worker_;
  // A reply from a dead worker has no header.
  auto flag = [](const WorkerReply& r, const char* key) { return r.header.is_object() && r.header.value(key, false); };
  auto send_whole = [&](std::shared_ptr<const InputSet> s) {
    if (!s) s = set(i);
    if (sent) *sent = s;
    return worker.run(mode, call_args(*s), std::move(extra), opt_.timeout);
  };
  if (!opt_.keep_sets || unkept_.count(i)) return send_whole(nullptr);
  json kept = extra;
  kept["set"] = i;
  WorkerReply r = worker.run_kept(mode, kept, opt_.timeout);
  if (r.ok || !flag(r, "missing_set")) return r;
  // A fresh worker (the first call, or after a crash): send the set once, then run again. The
  // host copy lives only for this call: the worker holds it from now on.
  std::shared_ptr<const InputSet> s = set(i);
  WorkerReply put = worker.put(static_cast<int64_t>(i), call_args(*s), std::max(opt_.timeout, std::chrono::milliseconds(600000)));
  if (put.ok) {
    sets_[i].reset();
    r = worker.run_kept(mode, kept, opt_.timeout);
    if (r.ok || !flag(r, "missing_set")) return r;
  } else if (!flag(put, "no_room")) {
    return put;
  }
  spdlog::debug("input set {} is not kept in the worker ({}); it is sent with every call", i, put.message);
  unkept_.insert(i);
  remember(i, s);
  return send_whole(s);
}

CandidateEval JudgeSession::evaluate(const Candidate& c) {
  if (c.target() != opt_.target)
    user_error("solution '{}' is {} ({}), but the target is {}", c.name, c.language, c.target(), opt_.target);
  int arch = sm();
  prepare();
  return judge(c, build_candidate(c, arch));
}

CandidateEval JudgeSession::judge(const Candidate& c, const BuildResult& build) {
  prepare();
  CandidateEval ev;
  ev.target = opt_.target;
  ev.device = device();
  ev.build = build;
  const auto& workloads = workloads_;
  WorkerClient& worker = *worker_;
  const EvalOptions& opt = opt_;
  const Problem& p = p_;
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
    for (const Workload* w : workloads)
      ev.workloads.push_back(
          failed(*w, Verdict::compile_error, one_line(first.empty() ? ev.build.log.substr(0, 300) : first)));
    return ev;
  }
  WorkerReply lr = worker.load(ev.build.library, opt.timeout);
  if (!lr.ok) {
    for (const Workload* w : workloads) ev.workloads.push_back(failed(*w, lr.verdict, lr.message));
    return ev;
  }

  for (size_t k = 0; k < workloads.size(); ++k) {
    const Workload& wl = *workloads[k];
    WorkloadEval w;
    w.uuid = wl.uuid;
    w.workload = wl.raw;
    const OracleEntry& first = entries_[2 * k];
    const OracleEntry& fresh = entries_[2 * k + 1];
    if (!first.ok() || !fresh.ok()) {
      w.verdict = Verdict::unavailable;
      w.message = first.ok() ? fresh.error : first.error;
      ev.workloads.push_back(std::move(w));
      continue;
    }
    if (auto ms = first.reference_ms()) w.reference_us = *ms * 1000.0;
    if (auto ms = first.compile_ms()) w.compile_us = *ms * 1000.0;
    w.timings_borrowed = first.meta.contains("timings_from");
    const json tol = {{"tolerance", tolerance_json(wl.tolerance)}};
    std::shared_ptr<const InputSet> sent;  // the set, when it was sent with the call (compared here)
    WorkerReply r1 = run_set(2 * k, "check", tol, &sent);
    if (!check_reply(r1, p, sent.get(), wl.tolerance, w, "check")) {
      ev.workloads.push_back(std::move(w));
      continue;
    }
    if (opt.time) {
      // One timing run of the worker; on failure the workload's verdict and message, nullopt.
      auto time_run = [&](int warmup, int iterations) -> std::optional<TimingStats> {
        WorkerReply r = run_set(2 * k, "time", {{"warmup", warmup}, {"iterations", iterations}});
        if (!r.ok) {
          w.verdict = r.verdict;
          w.message = "timing: " + r.message;
          return std::nullopt;
        }
        TimingStats t = summarize(r.header.at("samples_us").get<std::vector<double>>());
        t.activity = r.header.value("activity", std::vector<std::string>{});
        return t;
      };
      std::optional<TimingStats> best;
      if (opt.cut_slow > 0 && w.reference_us && *w.reference_us >= opt.cut_min_reference_us)
        if (auto t = time_run(1, 3); t && t->median_us > opt.cut_slow * *w.reference_us) {
          t->attempts = 1;
          t->cut = true;
          best = t;
        }
      for (int attempt = 1; w.verdict == Verdict::passed && !(best && best->cut) && attempt <= opt.max_attempts; ++attempt) {
        std::optional<TimingStats> t = time_run(opt.warmup, opt.iterations);
        if (!t) break;
        if (!best || t->spread < best->spread) best = t;
        best->attempts = attempt;
        if (t->spread <= opt.max_spread) break;
      }
      if (w.verdict != Verdict::passed) {
        ev.workloads.push_back(std::move(w));
        continue;
      }
      w.timing = best;
    }
    sent.reset();
    WorkerReply r2 = run_set(2 * k + 1, "check", tol, &sent);
    if (!check_reply(r2, p, sent.get(), wl.tolerance, w, "re-check on fresh inputs after timing")) {
      ev.workloads.push_back(std::move(w));
      continue;
    }
    ev.workloads.push_back(std::move(w));
  }
  ev.worker_restarts = worker.restarts() - restarts_before;
  ev.host_set_bytes = host_set_bytes();
  ev.sets_loaded_ahead = loaded_ahead_;
  return ev;
}

CandidateEval evaluate(const Problem& p, const Candidate& c, const std::vector<const Workload*>& workloads, Oracle& oracle,
                       const EvalOptions& opt) {
  JudgeSession session(p, workloads, oracle, opt);
  return session.evaluate(c);
}

}  // namespace ka
