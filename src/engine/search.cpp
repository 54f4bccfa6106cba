// engine/search.cpp — one problem's search (engine/search.h).
#include "engine/search.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>

#include "engine/sigterm.h"
#include "families/family.h"
#include "util/error.h"

namespace ka {
namespace {

using Clock = std::chrono::steady_clock;

double secs_since(Clock::time_point a) { return std::chrono::duration<double>(Clock::now() - a).count(); }

std::vector<RunnerIdentity> runner_identities(const RunnerPool& runners, const std::string& target) {
  std::vector<RunnerIdentity> ids;
  for (size_t r = 0; r < runners.size(); ++r) ids.push_back({runners.device(r).value("name", target), runners.gpu(r)});
  return ids;
}

bool same_finding(const Finding& a, const Finding& b) {
  return a.author == b.author && a.kind == b.kind && a.claim == b.claim && a.cites == b.cites &&
         a.problem == b.problem && a.bucket == b.bucket;
}

}  // namespace

ProblemSearch::ProblemSearch(const SearchSetup& setup)
    : s_(setup),
      opt_(*setup.opt),
      p_(*setup.problem),
      store_(*setup.store),
      runners_(*setup.runners),
      agent_axis_(setup.dispatch_axes.empty() ? std::nullopt : dispatch_axis(setup.problem->def)),
      // the whole budget again if nothing is composed
      search_budget_(setup.opt->budget - (setup.dispatch_axes.empty() ? 0 : 1)),
      device_(setup.runners->device(0).value("name", setup.opt->target)),
      sm_(setup.runners->device(0).value("sm", 0)),
      budget_(setup.agent_kinds.size()),
      stop_(setup.opt->sol_stop, setup.opt->time_limit_s),
      recorder_(*setup.store, setup.problem->def.name, runner_identities(*setup.runners, setup.opt->target),
                setup.opt->eval.cut_slow),
      pool_(setup.build_jobs) {
  for (const Family* f : s_.families) by_name_[f->name] = f;
  for (const auto& k : s_.agent_kinds) {
    agents_.push_back(make_agent(k, opt_.seed));
    agent_store_.push_back(Store::open_agent(s_.db, agents_.back()->name()));
  }
  // What the store already holds for this problem (a resumed campaign).
  for (auto& c : store_.candidates(p_.def.name)) {
    next_seq_ = std::max(next_seq_, c.seq + 1);
    known_[c.hash] = c;
  }
  // The findings digest is kept here, in observation order, so that it is the same on a resumed
  // run: what the store held when this problem started (earlier problems, imports; not this
  // problem's own findings from an interrupted run), plus what the agents concluded so far in this
  // run. A finding concluded again on replay is not stored twice.
  for (auto& f : store_.findings(p_.def.op_type))
    (f.origin.empty() && f.problem == p_.def.name ? stored_here_ : digest_).push_back(f);
  po_.problem = p_.def.name;
}

// The search, then the piecewise candidate; when none is judged (nothing to compose, or no gain
// expected), the candidate kept for it goes back to the agents in a second round.
ProblemOutcome ProblemSearch::run() {
  for (bool compose_round = true;; compose_round = false) {
    for (;;) {
      check_stop();
      fill();
      if (pipeline_.empty()) break;
      // Record results as they arrive (any order); observe only the front of the pipeline.
      while (!pipeline_.front_ready())
        for (const auto& job : runners_.wait_judged()) record_search(*job);
      observe(pipeline_.pop());
    }
    const bool composed_now = compose_round && !termination_requested() && compose();
    if (!compose_round || composed_now || search_budget_ >= opt_.budget || termination_requested() || stop_.stopped())
      break;
    search_budget_ = opt_.budget;
  }
  report_progress(true);
  check_per_gpu();
  return finish();
}

bool ProblemSearch::may_propose() const {
  return !stop_.stopped() && !termination_requested() && static_cast<int>(pipeline_.size()) < s_.depth &&
         static_cast<int>(spent_.size()) < search_budget_;
}

void ProblemSearch::check_stop() {
  if (termination_requested() && !terminated_) {
    terminated_ = true;
    spdlog::warn("SIGTERM: no new candidates; finishing the {} in flight", pipeline_.size());
  }
  if (stop_.elapsed(secs_since(s_.problem_start), spent_.size()))
    spdlog::info("{}: time limit of {:g} s reached after {} candidates: no new search candidates; finishing the {} "
                 "in flight{}",
                 p_.def.name, opt_.time_limit_s, spent_.size(), pipeline_.size(),
                 s_.dispatch_axes.empty() ? "" : ", then the piecewise candidate");
}

// Fills the pipeline: proposal i waits only for the observations of candidates ≤ i − depth.
void ProblemSearch::fill() {
  while (may_propose()) {
    const int a = budget_.next();
    if (a < 0) break;
    propose(static_cast<size_t>(a));
  }
}

void ProblemSearch::propose(size_t a) {
  auto prop = agents_[a]->propose(context(a));
  if (!prop) {
    log_share(a, budget_.retire(a), "has nothing left to propose");
    return;
  }
  auto fit = by_name_.find(prop->family);
  if (fit == by_name_.end()) {
    log_share(a, budget_.retire(a), fmt::format("proposed unknown family '{}'", prop->family));
    return;
  }
  Slot s;
  s.agent = a;
  s.proposal = *prop;
  Candidate c = fit->second->instantiate(prop->knobs, p_, prop->defines);
  c.definition = p_.def.name;
  c.author = agents_[a]->name();
  s.name = c.name;
  s.hash = candidate_hash(c);
  budget_.proposed(a);
  if (known_.count(s.hash) || pipeline_.holds(s.hash)) {
    s.replay = true;
  } else {
    s.seq = next_seq_++;
    s.job = std::make_shared<Job>();
    s.job->order = next_order_++;
    s.job->candidate = std::move(c);
  }
  spent_.insert(s.hash);
  Slot& pushed = pipeline_.push(std::move(s));
  if (pushed.job) build_and_submit(pushed.job);
}

void ProblemSearch::build_and_submit(std::shared_ptr<Job> job) {
  pool_.submit([job, sm = sm_, &runners = runners_] {
    try {
      job->build = build_candidate(job->candidate, sm);
      runners.submit(job);
    } catch (const UserError& e) {
      runners.fail(e.what(), true);
    } catch (const std::exception& e) {
      runners.fail(fmt::format("building {}: {}", job->candidate.name, e.what()), false);
    }
  });
}

// A judged search candidate: recorded at once, observed when it reaches the pipeline's front.
void ProblemSearch::record_search(const Job& job) {
  Slot& s = pipeline_.judged(job);
  CandidateRecord rec = candidate_record(job.candidate, s.hash, s.proposal.family, recorded_knobs(s.proposal),
                                         agents_[s.agent]->name(), s.seq);
  s.ms = recorder_.record(s.hash, job, rec);
  s.recorded = true;
  known_[s.hash] = rec;
  ++measured_;
}

void ProblemSearch::observe(Slot s) {
  replaying_ = s.replay;
  std::vector<Measurement> ms;
  if (s.replay) {
    ms = primary(store_.measurements_of(s.hash));
    ++replayed_;
  } else {
    ms = std::move(s.ms);
  }
  const Scored sc = score(ms);
  const SolStats ss = sol_stats(ms, s_.sol_us);
  Observation o;
  o.problem = p_.def.name;
  o.proposal = s.proposal;
  o.passed = sc.passed;
  o.score_us = sc.geomean_us;
  o.measurement_ids = sc.ids;
  o.median_us = sc.medians;
  o.workloads = sc.workloads_of;
  o.verdicts = sc.verdicts;
  o.author = agents_[s.agent]->name();
  o.sol_score = ss.score;
  for (size_t a = 0; a < agents_.size(); ++a)
    if (a == s.agent || opt_.sharing == "full") agents_[a]->observe(o);
  if (sc.passed && std::none_of(passed_seen_.begin(), passed_seen_.end(), [&](const auto& e) { return e.first == s.hash; }))
    passed_seen_.emplace_back(s.hash, sc);
  if (best_.beaten_by(sc)) take_incumbent(s, sc, ss);
  publish_findings(s.agent);
  report_progress(false);
}

void ProblemSearch::take_incumbent(const Slot& s, const Scored& sc, const SolStats& ss) {
  if (best_.us > 0)
    log_share(s.agent, budget_.improved(s.agent),
              fmt::format("{} improved the incumbent from {:.3f} to {:.3f} us", s.name, best_.us, sc.geomean_us));
  best_.take(s.hash, sc, ss);
  const bool was_suspect = stop_.bound_suspect();
  const bool stops = stop_.incumbent_at(ss.ratio);
  if (stop_.bound_suspect() && !was_suspect)
    spdlog::warn("{}: the incumbent runs at {:.3f}x its speed-of-light bound, below the bound: the device's "
                 "calibration is stale or was measured on a busy machine (rerun `kernelarc calibrate`); the "
                 "speed-of-light stop is off for this problem",
                 p_.def.name, *ss.ratio);
  if (!stops) return;
  if (!replaying_)
    store_.record_budget_move({"engine", 1.0, 0.0,
                               fmt::format("{}: incumbent {} at {:.3f}x speed-of-light (stop at {:.3f}x): the problem "
                                           "stops drawing budget",
                                           p_.def.name, s.name, *ss.ratio, 1 + opt_.sol_stop)});
  spdlog::info("{}: incumbent at {:.3f}x speed-of-light; no further candidates", p_.def.name, *ss.ratio);
}

void ProblemSearch::publish_findings(size_t a) {
  for (auto& f : agents_[a]->conclude(context(a))) {
    f.author = agents_[a]->name();
    if (f.op_type.empty()) f.op_type = p_.def.op_type;
    if (f.device.empty()) f.device = device_;
    auto prior = std::find_if(stored_here_.begin(), stored_here_.end(), [&](const Finding& g) { return same_finding(f, g); });
    if (prior != stored_here_.end()) {
      digest_.push_back(*prior);
      continue;
    }
    try {
      f.id = agent_store_[a]->publish(f);
      digest_.push_back(f);
    } catch (const StoreError& e) {
      spdlog::debug("finding by {} refused: {}", f.author, e.what());
    }
  }
}

// The last candidate: a piecewise composition of the incumbent and the candidates that beat it on
// some values of the var axis (judged like any other; replayed on a resumed run). Returns whether
// one was judged.
bool ProblemSearch::compose() {
  auto pc = piecewise_candidate(p_, s_.dispatch_axes, passed_seen_, best_.hash, best_.us, known_, opt_.compose_gain,
                                opt_.compose_parts);
  if (!pc) return false;
  const Candidate& comp = pc->candidate;
  spent_.insert(pc->hash);
  po_.composed = comp.description;
  spdlog::info("{}: piecewise candidate {} (estimate {:.3f} us, incumbent {:.3f} us): {}", p_.def.name, comp.name,
               pc->estimate_us, best_.us, comp.description);
  std::vector<Measurement> ms;
  if (known_.count(pc->hash)) {
    ms = primary(store_.measurements_of(pc->hash));
    ++replayed_;
  } else {
    ms = judge_piecewise(*pc);
  }
  const Scored sc = score(ms);
  spdlog::info("{}: piecewise candidate {}: {}", p_.def.name, comp.name,
               sc.passed ? fmt::format("{:.3f} us (incumbent {:.3f} us)", sc.geomean_us, best_.us)
                         : fmt::format("passed {} of {} workloads", sc.passed_workloads, sc.workloads));
  if (sc.passed) po_.composed += fmt::format(" [{:.3f} us]", sc.geomean_us);
  if (sc.passed && sc.geomean_us < best_.us) {
    best_.take(pc->hash, sc, sol_stats(ms, s_.sol_us));
    po_.composed_won = true;
  }
  return true;
}

// Builds, judges and records the piecewise candidate; no measurements when it cannot be judged.
std::vector<Measurement> ProblemSearch::judge_piecewise(const PiecewiseCandidate& pc) {
  auto job = std::make_shared<Job>();
  job->order = next_order_++;
  job->candidate = pc.candidate;
  try {
    job->build = build_candidate(pc.candidate, sm_);
    runners_.submit(job);
    for (bool done = false; !done;)
      for (const auto& j : runners_.wait_judged()) done |= j->order == job->order;
    CandidateRecord rec = candidate_record(pc.candidate, pc.hash, "piecewise", pc.knobs, "engine", next_seq_++);
    auto ms = recorder_.record(pc.hash, *job, rec);
    known_[pc.hash] = rec;
    ++measured_;
    return ms;
  } catch (const std::exception& e) {
    spdlog::warn("{}: the piecewise candidate could not be judged: {}", p_.def.name, e.what());
    return {};
  }
}

// Timings from different GPUs are comparable only after a per-GPU check of the incumbent: when
// this problem's candidates were measured on several GPUs, the incumbent is measured on each of
// them that has a runner here and has not measured it yet.
void ProblemSearch::check_per_gpu() {
  if (best_.hash.empty()) return;
  std::set<std::string> used_gpus, have;
  for (const auto& m : store_.measurements(p_.def.name)) used_gpus.insert(m.gpu);
  for (const auto& m : store_.measurements_of(best_.hash)) have.insert(m.gpu);
  if (used_gpus.size() < 2) return;
  Candidate inc = parse_solution_json(known_[best_.hash].solution, "campaign store");
  BuildResult b = build_candidate(inc, sm_);
  int pending = 0;
  for (size_t r = 0; r < runners_.size(); ++r) {
    if (!used_gpus.count(runners_.gpu(r)) || !have.insert(runners_.gpu(r)).second) continue;
    auto job = std::make_shared<Job>();
    job->order = next_order_++;
    job->pin = static_cast<int>(r);
    job->candidate = inc;
    job->build = b;
    runners_.submit(job);
    ++pending;
  }
  while (pending > 0)
    for (const auto& job : runners_.wait_judged()) {
      recorder_.record(best_.hash, *job, std::nullopt);
      ++po_.checks;
      --pending;
    }
}

ProblemOutcome ProblemSearch::finish() {
  PerGpu per_gpu = incumbent_per_gpu(store_, p_.def.name, best_.hash);
  po_.per_gpu = per_gpu.gpus;
  po_.gpu_spread = per_gpu.spread;
  po_.candidates = static_cast<int>(spent_.size());
  po_.wall_s = secs_since(s_.problem_start);
  po_.measured_now = measured_;
  po_.replayed = replayed_;
  po_.solved = best_.us > 0;
  po_.best_geomean_us = best_.us;
  po_.reference_geomean_us = best_.ref_us;
  po_.best_sol_score = best_.sol.score;
  po_.best_sol_ratio = best_.sol.ratio;
  po_.stopped_at_sol = stop_.at_sol();
  po_.stopped_at_time = stop_.time_up();
  po_.gpu_s = recorder_.gpu_s();
  po_.build_s = recorder_.build_s();
  if (!best_.hash.empty()) po_.best_name = known_[best_.hash].solution.value("name", best_.hash);
  po_.best_dir = opt_.out / p_.def.name;
  write_outputs(p_, store_, po_.best_dir, best_.hash, per_gpu, s_.sol_us);
  return po_;
}

AgentContext ProblemSearch::context(size_t a) const {
  AgentContext ctx;
  ctx.problem = &p_;
  ctx.families = s_.families;
  ctx.device = device_;
  ctx.sol_us = &s_.sol_us;
  ctx.budget_left = search_budget_ - static_cast<int>(spent_.size());
  ctx.piecewise_axis = agent_axis_ ? agent_axis_->axis : std::string();
  ctx.record_dir = opt_.out / p_.def.name;
  for (const auto& f : digest_)
    if (opt_.sharing != "none" || f.author == agents_[a]->name()) ctx.digest.push_back(f);
  if (opt_.sharing != "none")
    for (const auto& s : pipeline_.slots())
      if (s.agent != a) ctx.in_flight.emplace_back(s.proposal.family, s.proposal.knobs);
  return ctx;
}

void ProblemSearch::log_share(size_t a, const ShareChange& c, const std::string& reason) {
  if (!replaying_) store_.record_budget_move({agents_[a]->name(), c.before, c.after, reason});
}

void ProblemSearch::report_progress(bool final) const {
  ProgressState st;
  st.problem = p_.def.name;
  st.candidates = static_cast<int>(spent_.size());
  st.budget = opt_.budget;
  st.best_us = best_.us;
  st.best_ref_us = best_.ref_us;
  st.sol_score = best_.sol.score;
  const double el = secs_since(s_.campaign_start);
  st.candidates_per_minute = el > 0 ? (s_.measured_before + measured_) * 60.0 / el : 0.0;
  for (MeasureCallback* cb : s_.callbacks) cb->observed(st, final);
}

}  // namespace ka
