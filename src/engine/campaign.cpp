// engine/campaign.cpp — the campaign loop: schedule, propose, build in parallel, judge in order,
// record, observe, conclude; then write the best solution, the leaderboard and the findings.
#include "engine/campaign.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <deque>
#include <fstream>
#include <future>
#include <map>
#include <set>
#include <thread>

#include "agents/agent.h"
#include "families/family.h"
#include "oracle/oracle.h"
#include "store/store.h"
#include "util/error.h"
#include "util/files.h"
#include "util/hash.h"

namespace ka {
namespace {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

double secs(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double>(b - a).count(); }

// A tiny fixed-size thread pool for builds.
class BuildPool {
 public:
  explicit BuildPool(int n) {
    for (int i = 0; i < n; ++i) threads_.emplace_back([this] { loop(); });
  }
  ~BuildPool() {
    {
      std::lock_guard<std::mutex> l(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    for (auto& t : threads_) t.join();
  }
  std::future<BuildResult> submit(Candidate c, int sm) {
    auto task = std::make_shared<std::packaged_task<BuildResult()>>([c = std::move(c), sm] { return build_candidate(c, sm); });
    auto f = task->get_future();
    {
      std::lock_guard<std::mutex> l(mu_);
      jobs_.push_back([task] { (*task)(); });
    }
    cv_.notify_one();
    return f;
  }

 private:
  std::vector<std::thread> threads_;
  std::deque<std::function<void()>> jobs_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  void loop() {
    for (;;) {
      std::function<void()> job;
      {
        std::unique_lock<std::mutex> l(mu_);
        cv_.wait(l, [this] { return stop_ || !jobs_.empty(); });
        if (stop_ && jobs_.empty()) return;
        job = std::move(jobs_.front());
        jobs_.pop_front();
      }
      job();
    }
  }
};

struct Scored {
  bool passed = false;
  double geomean_us = 0, ref_geomean_us = 0;
  int passed_workloads = 0, workloads = 0;
  std::vector<int64_t> ids;
  std::vector<double> medians;
};

Scored score(const std::vector<Measurement>& ms) {
  Scored s;
  double lt = 0, lr = 0;
  int nr = 0;
  for (const auto& m : ms) {
    ++s.workloads;
    s.ids.push_back(m.id);
    s.medians.push_back(m.median_us);
    if (m.verdict != "passed" || m.median_us <= 0) continue;
    ++s.passed_workloads;
    lt += std::log(m.median_us);
    if (m.reference_us > 0) {
      lr += std::log(m.reference_us);
      ++nr;
    }
  }
  s.passed = s.workloads > 0 && s.passed_workloads == s.workloads;
  if (s.passed) s.geomean_us = std::exp(lt / s.workloads);
  if (s.passed && nr == s.workloads) s.ref_geomean_us = std::exp(lr / nr);
  return s;
}

struct Slot {
  size_t agent;
  Proposal proposal;
  Candidate candidate;
  std::string hash;
  bool replay = false;  // results already in the store (resume, or another agent's duplicate)
  std::future<BuildResult> build;
};

std::string candidate_hash(const Candidate& c) { return sha256_hex(to_native_json(c).dump()).substr(0, 32); }

void write_outputs(const Problem& p, Store& store, const std::filesystem::path& dir, const std::string& best_hash) {
  fs::create_directories(dir);
  struct Row {
    CandidateRecord c;
    Scored s;
  };
  std::vector<Row> rows;
  for (auto& c : store.candidates(p.def.name)) rows.push_back({c, score(store.measurements_of(c.hash))});
  std::sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) {
    if (a.s.passed != b.s.passed) return a.s.passed;
    if (a.s.passed) return a.s.geomean_us < b.s.geomean_us;
    return a.c.seq < b.c.seq;
  });
  json lb = json::array();
  std::string md = fmt::format("# Leaderboard: {}\n\n| rank | candidate | agent | family | knobs | passed | geomean µs | speedup vs reference |\n"
                               "| --- | --- | --- | --- | --- | --- | --- | --- |\n",
                               p.def.name);
  int rank = 0;
  for (const auto& r : rows) {
    ++rank;
    double sp = r.s.passed && r.s.ref_geomean_us > 0 ? r.s.ref_geomean_us / r.s.geomean_us : 0;
    lb.push_back({{"rank", rank}, {"candidate", r.c.hash}, {"name", r.c.solution.value("name", "")}, {"agent", r.c.agent},
                  {"family", r.c.family}, {"knobs", r.c.knobs}, {"passed_workloads", r.s.passed_workloads},
                  {"workloads", r.s.workloads}, {"geomean_us", r.s.geomean_us}, {"speedup", sp}, {"seq", r.c.seq}});
    md += fmt::format("| {} | {} | {} | {} | {} | {}/{} | {} | {} |\n", rank, r.c.solution.value("name", r.c.hash),
                      r.c.agent, r.c.family, r.c.knobs.dump(), r.s.passed_workloads, r.s.workloads,
                      r.s.passed ? fmt::format("{:.3f}", r.s.geomean_us) : "-", sp > 0 ? fmt::format("{:.2f}x", sp) : "-");
  }
  write_atomic(dir / "leaderboard.json", lb.dump(1) + "\n");
  write_atomic(dir / "leaderboard.md", md);
  json fs_json = json::array();
  for (const auto& f : store.findings(p.def.op_type))
    if (f.problem.empty() || f.problem == p.def.name)
      fs_json.push_back({{"id", f.id}, {"author", f.author}, {"kind", f.kind}, {"problem", f.problem},
                         {"op_type", f.op_type}, {"device", f.device}, {"bucket", f.bucket}, {"claim", f.claim},
                         {"cites", f.cites}, {"origin", f.origin}});
  write_atomic(dir / "findings.json", fs_json.dump(1) + "\n");
  if (best_hash.empty()) return;
  auto rec = store.candidate(best_hash);
  if (!rec) return;
  Candidate c = parse_solution_json(rec->solution, "campaign store");
  fs::create_directories(dir / "best");
  write_atomic(dir / "best" / "solution.json", rec->solution.dump(2) + "\n");
  for (const auto& s : c.sources) write_atomic(dir / "best" / s.path, s.content);
  write_atomic(dir / "best" / "solution_sol_execbench.json", to_solution_json(c, p.def).dump(2) + "\n");
}

}  // namespace

CampaignOutcome run_campaign(const CampaignOptions& opt) {
  const auto t0 = Clock::now();
  CampaignOutcome out;
  if (opt.budget < 1) user_error("--budget must be at least 1");
  if (opt.sharing != "findings" && opt.sharing != "none" && opt.sharing != "full")
    user_error("--sharing must be findings, none or full, not '{}'", opt.sharing);
  std::vector<std::string> agent_kinds = opt.agents.empty() ? builtin_agents() : opt.agents;
  for (const auto& a : agent_kinds) {
    auto all = builtin_agents();
    if (std::find(all.begin(), all.end(), a) == all.end())
      user_error("unknown agent '{}' (built in: {})", a, fmt::join(all, ", "));
  }
  std::vector<Problem> problems;
  for (const auto& p : opt.problems) problems.push_back(load_problem(p));
  std::vector<Family> families = load_families(opt.families);
  fs::create_directories(opt.out);
  const fs::path db = opt.out / "campaign.db";
  auto store = Store::open_judge(db);
  for (const auto& imp : opt.import_findings) {
    int n = store->import_findings(imp);
    spdlog::info("imported {} findings from {}", n, imp.string());
  }
  const int jobs = opt.build_jobs > 0 ? opt.build_jobs : std::max(1u, std::thread::hardware_concurrency());
  // Proposals run ahead of observations by `depth`: enough to keep the build pool busy, few enough
  // that agents learn from results (a deep pipeline turns every agent into an explorer).
  const int depth = opt.depth > 0 ? opt.depth : std::min(jobs, 4);
  BuildPool pool(jobs);
  const bool tty = ::isatty(2);

  for (const Problem& p : problems) {
    ProblemOutcome po;
    po.problem = p.def.name;
    std::vector<const Family*> fams;
    std::map<std::string, const Family*> by_name;
    for (const auto& f : families)
      if (f.target == opt.target && f.applies_to(p)) {
        fams.push_back(&f);
        by_name[f.name] = &f;
      }
    if (fams.empty()) {
      spdlog::warn("{}: no {} kernel family applies (op type {}); skipped", p.def.name, opt.target, p.def.op_type);
      out.problems.push_back(po);
      continue;
    }
    std::vector<const Workload*> wls;
    for (const auto& w : p.workloads) wls.push_back(&w);
    Oracle oracle(opt.target == "cuda" ? "cuda" : "cpu");
    EvalOptions eo = opt.eval;
    eo.target = opt.target;
    JudgeSession session(p, wls, oracle, eo);
    const std::string device = session.device().value("name", opt.target);
    const std::string gpu = session.device().value("uuid", "host");
    const int sm = session.sm();

    std::vector<std::unique_ptr<Agent>> agents;
    std::vector<std::unique_ptr<Store>> agent_store;
    for (const auto& k : agent_kinds) {
      agents.push_back(make_agent(k, opt.seed));
      agent_store.push_back(Store::open_agent(db, agents.back()->name()));
    }
    const size_t na = agents.size();
    std::vector<double> share(na, 1.0 / static_cast<double>(na));
    std::vector<int> used(na, 0);
    std::vector<bool> active(na, true);

    // What the store already holds for this problem (a resumed campaign).
    std::map<std::string, CandidateRecord> known;
    int64_t next_seq = 1;
    for (auto& c : store->candidates(p.def.name)) {
      next_seq = std::max(next_seq, c.seq + 1);
      known[c.hash] = c;
    }
    std::set<std::string> spent;  // candidates counted against this run's budget
    std::deque<Slot> q;
    std::string best_hash;
    double best = 0, best_ref = 0;
    int measured = 0, replayed = 0;

    // The findings digest is kept here, in observation order, so that it is the same on a
    // resumed run: what the store held when this problem started (earlier problems, imports;
    // not this problem's own findings from an interrupted run), plus what the agents concluded
    // so far in this run. A finding concluded again on replay is not stored twice.
    std::vector<Finding> digest, stored_here;
    for (auto& f : store->findings(p.def.op_type))
      (f.origin.empty() && f.problem == p.def.name ? stored_here : digest).push_back(f);
    auto same = [](const Finding& a, const Finding& b) {
      return a.author == b.author && a.kind == b.kind && a.claim == b.claim && a.cites == b.cites &&
             a.problem == b.problem && a.bucket == b.bucket;
    };
    auto context = [&](size_t a) {
      AgentContext ctx;
      ctx.problem = &p;
      ctx.families = fams;
      ctx.device = device;
      for (const auto& f : digest)
        if (opt.sharing != "none" || f.author == agents[a]->name()) ctx.digest.push_back(f);
      return ctx;
    };
    auto pick = [&]() -> int {
      int total = 0;
      for (int u : used) total += u;
      int bestA = -1;
      double bestD = -1e300;
      for (size_t a = 0; a < na; ++a) {
        if (!active[a]) continue;
        double deficit = share[a] * (total + 1) - used[a];
        if (deficit > bestD + 1e-12) {
          bestD = deficit;
          bestA = static_cast<int>(a);
        }
      }
      return bestA;
    };
    bool replaying = false;  // a replayed observation moves shares again but is not logged twice
    auto move_share = [&](size_t a, double factor, const std::string& reason) {
      double before = share[a];
      share[a] *= factor;
      double sum = 0;
      for (size_t i = 0; i < na; ++i) sum += active[i] ? share[i] : 0;
      for (size_t i = 0; i < na; ++i) share[i] = active[i] && sum > 0 ? share[i] / sum : 0;
      if (!replaying) store->record_budget_move({agents[a]->name(), before, share[a], reason});
    };

    auto progress = [&](bool final) {
      double el = secs(t0, Clock::now());
      std::string line = fmt::format("{} | {}/{} candidates | best {} | {:.1f} candidates/min", p.def.name,
                                     static_cast<int>(spent.size()), opt.budget,
                                     best > 0 ? fmt::format("{:.2f} us ({:.2f}x ref)", best, best_ref > 0 ? best_ref / best : 0.0)
                                              : "none yet",
                                     el > 0 ? (out.measured + measured) * 60.0 / el : 0.0);
      if (!opt.progress) return;
      if (tty) fmt::print(stderr, "\r\033[K{}{}", line, final ? "\n" : "");
      else if (final || spent.size() % 8 == 0) fmt::print(stderr, "{}\n", line);
    };

    for (;;) {
      // Fill the pipeline: proposal i waits only for the observations of candidates ≤ i − depth.
      while (static_cast<int>(q.size()) < depth && static_cast<int>(spent.size()) < opt.budget) {
        int a = pick();
        if (a < 0) break;
        auto prop = agents[static_cast<size_t>(a)]->propose(context(static_cast<size_t>(a)));
        if (!prop) {
          active[static_cast<size_t>(a)] = false;
          move_share(static_cast<size_t>(a), 0.0, "has nothing left to propose");
          continue;
        }
        auto fit = by_name.find(prop->family);
        if (fit == by_name.end()) {
          active[static_cast<size_t>(a)] = false;
          move_share(static_cast<size_t>(a), 0.0, fmt::format("proposed unknown family '{}'", prop->family));
          continue;
        }
        Slot s;
        s.agent = static_cast<size_t>(a);
        s.proposal = *prop;
        s.candidate = fit->second->instantiate(prop->knobs, p);
        s.candidate.definition = p.def.name;
        s.candidate.author = agents[s.agent]->name();
        s.hash = candidate_hash(s.candidate);
        ++used[s.agent];
        bool in_flight = false;
        for (const auto& o : q) in_flight |= o.hash == s.hash;
        if (known.count(s.hash) || in_flight) {
          s.replay = true;
        } else {
          s.build = pool.submit(s.candidate, sm);
        }
        if (!spent.count(s.hash)) spent.insert(s.hash);
        q.push_back(std::move(s));
      }
      if (q.empty()) break;
      Slot s = std::move(q.front());
      q.pop_front();
      std::vector<Measurement> ms;
      replaying = s.replay;
      if (s.replay) {
        ms = store->measurements_of(s.hash);
        ++replayed;
      } else {
        BuildResult b = s.build.get();
        out.build_s += b.seconds;
        auto m0 = Clock::now();
        CandidateEval ev = session.judge(s.candidate, b);
        out.measure_s += secs(m0, Clock::now());
        CandidateRecord rec;
        rec.hash = s.hash;
        rec.problem = p.def.name;
        rec.family = s.proposal.family;
        rec.knobs = json(s.proposal.knobs);
        rec.agent = agents[s.agent]->name();
        rec.seq = next_seq++;
        rec.solution = to_native_json(s.candidate);
        store->exec("BEGIN IMMEDIATE");
        try {
          store->record_candidate(rec);
          for (const auto& w : ev.workloads) {
            Measurement m;
            m.candidate = s.hash;
            m.problem = p.def.name;
            m.workload = w.uuid;
            m.verdict = std::string(verdict_name(w.verdict));
            m.message = w.message;
            m.median_us = w.timing ? w.timing->median_us : 0;
            m.spread = w.timing ? w.timing->spread : 0;
            m.reference_us = w.reference_us.value_or(0);
            m.device = device;
            m.gpu = gpu;
            m.extra = {{"build_cached", b.cached}, {"attempts", w.timing ? w.timing->attempts : 0}};
            m.id = store->record_measurement(m);
            ms.push_back(m);
          }
          store->exec("COMMIT");
        } catch (...) {
          store->exec("ROLLBACK");
          throw;
        }
        known[s.hash] = rec;
        ++measured;
      }
      Scored sc = score(ms);
      Observation o;
      o.problem = p.def.name;
      o.proposal = s.proposal;
      o.passed = sc.passed;
      o.score_us = sc.geomean_us;
      o.measurement_ids = sc.ids;
      o.median_us = sc.medians;
      o.author = agents[s.agent]->name();
      for (size_t a = 0; a < na; ++a)
        if (a == s.agent || opt.sharing == "full") agents[a]->observe(o);
      if (sc.passed && (best == 0 || sc.geomean_us < best)) {
        if (best > 0)
          move_share(s.agent, 1.5, fmt::format("{} improved the incumbent from {:.3f} to {:.3f} us", s.candidate.name, best,
                                               sc.geomean_us));
        best = sc.geomean_us;
        best_ref = sc.ref_geomean_us;
        best_hash = s.hash;
      }
      for (auto& f : agents[s.agent]->conclude(context(s.agent))) {
        f.author = agents[s.agent]->name();
        if (f.op_type.empty()) f.op_type = p.def.op_type;
        if (f.device.empty()) f.device = device;
        auto prior = std::find_if(stored_here.begin(), stored_here.end(), [&](const Finding& g) { return same(f, g); });
        if (prior != stored_here.end()) {
          digest.push_back(*prior);
          continue;
        }
        try {
          f.id = agent_store[s.agent]->publish(f);
          digest.push_back(f);
        } catch (const StoreError& e) {
          spdlog::debug("finding by {} refused: {}", f.author, e.what());
        }
      }
      progress(false);
    }
    progress(true);
    po.candidates = static_cast<int>(spent.size());
    po.measured_now = measured;
    po.replayed = replayed;
    po.solved = best > 0;
    po.best_geomean_us = best;
    po.reference_geomean_us = best_ref;
    if (!best_hash.empty()) po.best_name = known[best_hash].solution.value("name", best_hash);
    po.best_dir = opt.out / p.def.name;
    write_outputs(p, *store, po.best_dir, best_hash);
    out.measured += measured;
    out.problems.push_back(po);
  }
  out.wall_s = secs(t0, Clock::now());
  return out;
}

}  // namespace ka
