// engine/campaign.cpp — the campaign loop: schedule, propose, build in parallel, judge on the
// runners (engine/runner.h) as they become free, record each result as it arrives, observe in
// proposal order, conclude; then check the incumbent on every GPU that measured, and write the
// best solution, the leaderboard and the findings.
#include "engine/campaign.h"

#include <signal.h>
#include <time.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <deque>
#include <fstream>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include "agents/agent.h"
#include "families/compose.h"
#include "families/family.h"
#include "oracle/oracle.h"
#include "sol/calibrate.h"
#include "sol/problem_sol.h"
#include "store/store.h"
#include "util/error.h"
#include "util/files.h"
#include "util/hash.h"

namespace ka {
namespace {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

double secs(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double>(b - a).count(); }

// SIGTERM (e.g. from `timeout`) ends a campaign gracefully: no new proposals, the candidates in
// flight are judged and recorded, the outputs and the report are written. A second SIGTERM more
// than kTermGrace after the first terminates at once (the default action; the store loses nothing
// either way); one sooner is the same request: `timeout` signals its child and then the child's
// whole process group, so the campaign gets two SIGTERMs microseconds apart.
std::atomic<bool> g_terminate{false};
std::atomic<int64_t> g_first_term_ns{0};
constexpr int64_t kTermGraceNs = 2'000'000'000;
extern "C" void on_sigterm(int) {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);  // async-signal-safe
  const int64_t now = static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
  if (!g_terminate.exchange(true)) {
    g_first_term_ns.store(now);
    return;
  }
  if (now - g_first_term_ns.load() > kTermGraceNs) {
    ::signal(SIGTERM, SIG_DFL);
    ::raise(SIGTERM);  // delivered when the handler returns
  }
}

// A tiny fixed-size thread pool for builds. Jobs still queued when it is destroyed are dropped
// (the campaign is stopping on an error).
class BuildPool {
 public:
  explicit BuildPool(int n) {
    for (int i = 0; i < n; ++i) threads_.emplace_back([this] { loop(); });
  }
  ~BuildPool() {
    {
      std::lock_guard<std::mutex> l(mu_);
      stop_ = true;
      jobs_.clear();
    }
    cv_.notify_all();
    for (auto& t : threads_) t.join();
  }
  void submit(std::function<void()> job) {
    {
      std::lock_guard<std::mutex> l(mu_);
      jobs_.push_back(std::move(job));
    }
    cv_.notify_one();
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
        if (stop_) return;
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
  std::vector<std::string> workloads_of, verdicts;  // per measurement, in ids' order
};

Scored score(const std::vector<Measurement>& ms) {
  Scored s;
  double lt = 0, lr = 0;
  int nr = 0;
  for (const auto& m : ms) {
    ++s.workloads;
    s.ids.push_back(m.id);
    s.medians.push_back(m.median_us);
    s.workloads_of.push_back(m.workload);
    s.verdicts.push_back(m.verdict);
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

// A candidate's own measurements: those of the GPU that measured it first. (The per-GPU check
// of an incumbent adds measurements on other GPUs; they are not its score.)
std::vector<Measurement> primary(std::vector<Measurement> ms) {
  if (ms.empty()) return ms;
  auto first = std::min_element(ms.begin(), ms.end(),
                                [](const Measurement& a, const Measurement& b) { return a.id < b.id; });
  const std::string gpu = first->gpu;
  ms.erase(std::remove_if(ms.begin(), ms.end(), [&](const Measurement& m) { return m.gpu != gpu; }), ms.end());
  return ms;
}

// One proposal in the pipeline (the reorder buffer): observed when it reaches the front.
struct Slot {
  size_t agent;
  Proposal proposal;
  std::string name, hash;
  bool replay = false;     // results already in the store (resume, or another agent's duplicate)
  int64_t seq = 0;         // measured ones: the candidate's place in the campaign (proposal order)
  std::shared_ptr<Job> job;  // measured ones: its build and judging
  bool recorded = false;   // measured ones: its results are in the store
  std::vector<Measurement> ms;
};

// The incumbent on each GPU that measured it, and the GPUs that measured other candidates but not
// it (no runner on them in this run).
struct PerGpu {
  std::vector<GpuTiming> gpus;
  std::vector<std::string> unchecked;
  double spread = 0;
};

// What the store records as a candidate's knobs: the integer knobs and, as strings, the generated
// defines of its proposal (agent.h, Proposal::defines), so that findings can name either.
json recorded_knobs(const Proposal& p) {
  json k = json(p.knobs);
  for (const auto& [n, v] : p.defines) k[n] = v;
  return k;
}

PerGpu incumbent_per_gpu(const Store& store, const std::string& problem, const std::string& best_hash) {
  PerGpu out;
  if (best_hash.empty()) return out;
  std::set<std::string> used;
  for (const auto& m : store.measurements(problem)) used.insert(m.gpu);
  if (used.size() < 2) return out;
  std::map<std::string, std::vector<Measurement>> by_gpu;
  auto ms = store.measurements_of(best_hash);
  if (ms.empty()) return out;
  for (const auto& m : ms) by_gpu[m.gpu].push_back(m);
  const std::string first = primary(ms).front().gpu;
  auto add = [&](const std::string& gpu) {
    Scored sc = score(by_gpu[gpu]);
    GpuTiming t;
    t.gpu = gpu;
    t.device = by_gpu[gpu].front().device;
    t.passed = sc.passed;
    t.geomean_us = sc.geomean_us;
    t.check = gpu != first;
    out.gpus.push_back(t);
  };
  add(first);
  for (const auto& [gpu, v] : by_gpu)
    if (gpu != first) add(gpu);
  for (const auto& gpu : used)
    if (!by_gpu.count(gpu)) out.unchecked.push_back(gpu);
  double lo = 0, hi = 0;
  int n = 0;
  for (const auto& t : out.gpus) {
    if (!t.passed) continue;
    lo = n ? std::min(lo, t.geomean_us) : t.geomean_us;
    hi = n ? std::max(hi, t.geomean_us) : t.geomean_us;
    ++n;
  }
  out.spread = n > 1 && lo > 0 ? (hi - lo) / lo : 0;
  return out;
}

void write_outputs(const Problem& p, Store& store, const std::filesystem::path& dir, const std::string& best_hash,
                   const PerGpu& per_gpu, const std::map<std::string, double>& sol_us) {
  fs::create_directories(dir);
  struct Row {
    CandidateRecord c;
    Scored s;
    SolStats sol;
  };
  std::vector<Row> rows;
  for (auto& c : store.candidates(p.def.name)) {
    auto ms = primary(store.measurements_of(c.hash));
    rows.push_back({c, score(ms), sol_stats(ms, sol_us)});
  }
  std::sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) {
    if (a.s.passed != b.s.passed) return a.s.passed;
    if (a.s.passed) return a.s.geomean_us < b.s.geomean_us;
    return a.c.seq < b.c.seq;
  });
  json lb = json::array();
  std::string md = fmt::format("# Leaderboard: {}\n\n", p.def.name);
  if (!sol_us.empty())
    md += fmt::format("SOL score: SOL-ExecBench's S = 1 / (1 + (T_k − T_sol) / (T_b − T_sol)) per workload, mean over the "
                      "workloads; T_b the eager reference (or torch.compile's when timed and faster); × SOL: geometric "
                      "mean of T_k / T_sol. Speed-of-light bounds for {} of {} workloads.\n\n",
                      sol_us.size(), p.workloads.size());
  md += "| rank | candidate | agent | family | knobs | passed | geomean µs | speedup vs reference | SOL score | × SOL |\n"
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n";
  int rank = 0;
  for (const auto& r : rows) {
    ++rank;
    double sp = r.s.passed && r.s.ref_geomean_us > 0 ? r.s.ref_geomean_us / r.s.geomean_us : 0;
    json row = {{"rank", rank}, {"candidate", r.c.hash}, {"name", r.c.solution.value("name", "")}, {"agent", r.c.agent},
                {"family", r.c.family}, {"knobs", r.c.knobs}, {"passed_workloads", r.s.passed_workloads},
                {"workloads", r.s.workloads}, {"geomean_us", r.s.geomean_us}, {"speedup", sp}, {"seq", r.c.seq},
                {"sol_score", r.sol.score ? json(*r.sol.score) : json()}, {"sol_ratio", r.sol.ratio ? json(*r.sol.ratio) : json()}};
    if (r.c.hash == best_hash && !per_gpu.gpus.empty()) {
      row["per_gpu"] = json::array();
      for (const auto& t : per_gpu.gpus)
        row["per_gpu"].push_back({{"gpu", t.gpu}, {"device", t.device}, {"passed", t.passed}, {"geomean_us", t.geomean_us},
                                  {"measured_by", t.check ? "per-GPU check" : "search"}});
      row["gpu_spread"] = per_gpu.spread;
      row["unchecked_gpus"] = per_gpu.unchecked;
    }
    lb.push_back(std::move(row));
    md += fmt::format("| {} | {} | {} | {} | {} | {}/{} | {} | {} | {} | {} |\n", rank, r.c.solution.value("name", r.c.hash),
                      r.c.agent, r.c.family, r.c.knobs.dump(), r.s.passed_workloads, r.s.workloads,
                      r.s.passed ? fmt::format("{:.3f}", r.s.geomean_us) : "-", sp > 0 ? fmt::format("{:.2f}x", sp) : "-",
                      r.sol.score ? fmt::format("{:.3f}", *r.sol.score) : "-",
                      r.sol.ratio ? fmt::format("{:.2f}", *r.sol.ratio) : "-");
  }
  if (!per_gpu.gpus.empty()) {
    md += "\n## The incumbent on each GPU\n\nTimings from different GPUs are comparable only after a per-GPU check of the "
          "incumbent: noise and drift between cards are measured, not assumed.\n\n| gpu | device | geomean µs | measured by |\n"
          "| --- | --- | --- | --- |\n";
    for (const auto& t : per_gpu.gpus)
      md += fmt::format("| {} | {} | {} | {} |\n", t.gpu, t.device, t.passed ? fmt::format("{:.3f}", t.geomean_us) : "failed",
                        t.check ? "per-GPU check" : "search");
    md += fmt::format("\nSpread (max − min) / min: {:.1f}%.\n", 100 * per_gpu.spread);
    if (!per_gpu.unchecked.empty())
      md += fmt::format("Not checked (no runner on them in this run): {}.\n", fmt::join(per_gpu.unchecked, ", "));
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
  write_atomic(dir / "sol.json", json(sol_us).dump(1) + "\n");  // per workload SOL µs (for the report)
  if (best_hash.empty()) return;
  auto rec = store.candidate(best_hash);
  if (!rec) return;
  Candidate c = parse_solution_json(rec->solution, "campaign store");
  fs::create_directories(dir / "best");
  write_atomic(dir / "best" / "solution.json", rec->solution.dump(2) + "\n");
  for (const auto& s : c.sources) write_atomic(dir / "best" / s.path, s.content);
  write_atomic(dir / "best" / "solution_sol_execbench.json", to_solution_json(c, p.def).dump(2) + "\n");
}

// The piecewise plan (families/compose.h) from the candidates that passed every workload: their
// medians grouped by the dispatch axis's value of each workload, the incumbent among them.
PiecePlan piecewise_plan(const Problem& p, const DispatchAxis& ax, const std::vector<std::pair<std::string, Scored>>& passed,
                         const std::string& incumbent, const CampaignOptions& opt) {
  std::map<std::string, int64_t> value_of;
  for (const auto& w : p.workloads) value_of[w.uuid] = w.axes.at(ax.axis);
  std::vector<AxisTimes> times;
  size_t inc = 0;
  for (const auto& [h, sc] : passed) {
    if (h == incumbent) inc = times.size();
    AxisTimes t{h, {}};
    for (size_t i = 0; i < sc.medians.size(); ++i) t.us_at[value_of.at(sc.workloads_of[i])].push_back(sc.medians[i]);
    times.push_back(std::move(t));
  }
  return plan_pieces(times, inc, opt.compose_gain, opt.compose_parts);
}

}  // namespace

std::string candidate_hash(const Candidate& c) {
  Candidate anon = c;
  anon.author.clear();  // who proposed it is not what it is
  return sha256_hex(to_native_json(anon).dump()).substr(0, 32);
}

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
  const std::vector<int> gpus = parse_gpus(opt.gpus, opt.target);
  const int nrun = static_cast<int>(gpus.size());
  // Proposals run ahead of observations by `depth`: enough to keep the build pool and every runner
  // busy, few enough that agents learn from results (a deep pipeline turns every agent into an
  // explorer). The depth decides what agents have seen when they propose, so campaigns with
  // different numbers of runners give the same proposals only at the same --depth.
  const int depth = opt.depth > 0 ? opt.depth : std::max(std::min(jobs, 4), nrun > 1 ? 2 * nrun : 1);
  const bool tty = ::isatty(2);
  g_terminate.store(false);
  g_first_term_ns.store(0);
  struct sigaction sa{}, old_sa{};
  sa.sa_handler = on_sigterm;
  sigemptyset(&sa.sa_mask);
  ::sigaction(SIGTERM, &sa, &old_sa);
  struct Restore {
    struct sigaction s;
    ~Restore() { ::sigaction(SIGTERM, &s, nullptr); }
  } restore{old_sa};
  std::optional<Ceilings> ceilings;
  if (opt.sol) {
    try {
      ceilings = ceilings_from(calibrate_device(opt.target, false));
    } catch (const std::exception& e) {
      spdlog::warn("no speed-of-light figures: {}", e.what());
    }
  }

  for (const Problem& p : problems) {
    const auto p_start = Clock::now();
    ProblemOutcome po;
    po.problem = p.def.name;
    if (g_terminate.load()) {
      spdlog::warn("{}: not started (SIGTERM)", p.def.name);
      out.terminated = true;
      out.problems.push_back(po);
      continue;
    }
    std::vector<const Family*> fams;
    std::map<std::string, const Family*> by_name;
    for (const auto& f : families)
      if (f.target == opt.target && f.applies_to(p)) {
        fams.push_back(&f);
        by_name[f.name] = &f;
      }
    if (fams.empty()) {
      spdlog::warn("{}: no {} kernel family applies (op type {}); skipped", p.def.name, opt.target, p.def.op_type);
      po.not_searched = fmt::format("no {} kernel family applies (op type {})", opt.target, p.def.op_type);
      out.problems.push_back(po);
      continue;
    }
    // Speed-of-light time per workload (the oracle caches its counts): scores the candidates and
    // tells when the problem is done.
    std::map<std::string, double> sol_us;
    if (ceilings) {
      try {
        Oracle oracle(opt.target == "cuda" ? "cuda" : "cpu");
        std::vector<const Workload*> ws;
        for (const auto& w : p.workloads) ws.push_back(&w);
        sol_us = workload_sol_us(p, ws, oracle, *ceilings);
      } catch (const std::exception& e) {
        spdlog::warn("{}: no speed-of-light bounds: {}", p.def.name, e.what());
      }
    }
    // A problem with a var axis to dispatch on keeps its last candidate for a piecewise composition
    // (with several, on the one whose plan is best once the candidates are measured); the agents
    // organise their range findings by the axis only when it is the definition's one var axis.
    const std::vector<DispatchAxis> daxes =
        opt.compose && opt.budget >= 4 ? dispatch_axes(p.def) : std::vector<DispatchAxis>{};
    const std::optional<DispatchAxis> agent_axis = daxes.empty() ? std::nullopt : dispatch_axis(p.def);
    int search_budget = opt.budget - (daxes.empty() ? 0 : 1);  // the whole budget again if nothing is composed
    EvalOptions eo = opt.eval;
    eo.target = opt.target;
    std::optional<RunnerPool> pool_of_runners;  // before the build pool, whose jobs hand builds to it
    try {
      pool_of_runners.emplace(p, eo, gpus);
    } catch (const OracleCutShort& e) {
      // The oracle's time limit passed before every input set was made: nothing can be judged yet
      // (the missing workloads would count as failed for good); what it made is cached.
      spdlog::warn("{}: {}", p.def.name, e.what());
      po.oracle_cut_short = e.what();
      po.wall_s = secs(p_start, Clock::now());
      out.problems.push_back(po);
      continue;
    } catch (const std::exception& e) {  // e.g. its reference fails in the oracle: the other problems go on
      spdlog::error("{}: the judge could not start: {}", p.def.name, e.what());
      po.not_searched = fmt::format("the judge could not start: {}", one_line(e.what()));
      po.wall_s = secs(p_start, Clock::now());
      out.problems.push_back(po);
      continue;
    }
    RunnerPool& runners = *pool_of_runners;
    const std::string device = runners.device(0).value("name", opt.target);
    const int sm = runners.device(0).value("sm", 0);
    BuildPool pool(jobs);

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
    std::deque<Slot> q;             // the pipeline, in proposal order
    std::map<int64_t, Slot*> judging;  // measured slots not yet recorded, by job order
    int64_t next_order = 1;
    std::string best_hash;
    double best = 0, best_ref = 0;
    SolStats best_sol;
    bool at_sol = false;  // the incumbent is within sol_stop of SOL: no more proposals
    bool time_up = false;  // time_limit_s passed: no more proposals
    int measured = 0, replayed = 0;
    std::vector<std::pair<std::string, Scored>> passed_seen;  // every passed candidate, in observation order

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
      ctx.sol_us = &sol_us;
      ctx.budget_left = search_budget - static_cast<int>(spent.size());
      ctx.piecewise_axis = agent_axis ? agent_axis->axis : std::string();
      ctx.record_dir = opt.out / p.def.name;
      for (const auto& f : digest)
        if (opt.sharing != "none" || f.author == agents[a]->name()) ctx.digest.push_back(f);
      if (opt.sharing != "none")
        for (const auto& s : q)
          if (s.agent != a) ctx.in_flight.emplace_back(s.proposal.family, s.proposal.knobs);
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
      std::string line = fmt::format("{} | {}/{} candidates | best {}{} | {:.1f} candidates/min", p.def.name,
                                     static_cast<int>(spent.size()), opt.budget,
                                     best > 0 ? fmt::format("{:.2f} us ({:.2f}x ref)", best, best_ref > 0 ? best_ref / best : 0.0)
                                              : "none yet",
                                     best_sol.score ? fmt::format(", SOL score {:.3f}", *best_sol.score) : "",
                                     el > 0 ? (out.measured + measured) * 60.0 / el : 0.0);
      if (!opt.progress) return;
      if (tty) fmt::print(stderr, "\r\033[K{}{}", line, final ? "\n" : "");
      else if (final || spent.size() % 8 == 0) fmt::print(stderr, "{}\n", line);
    };

    // Records a judged job in one transaction: the candidate (`rec`; none for a per-GPU check of
    // one already recorded) and a measurement per workload, with its runner's GPU identity.
    auto record = [&](const std::string& hash, const Job& job, const std::optional<CandidateRecord>& rec) {
      const size_t r = static_cast<size_t>(job.runner);
      std::vector<Measurement> ms;
      store->exec("BEGIN IMMEDIATE");
      try {
        if (rec) store->record_candidate(*rec);
        for (const auto& w : job.workloads) {
          Measurement m;
          m.candidate = hash;
          m.problem = p.def.name;
          m.workload = w.uuid;
          m.verdict = w.verdict;
          m.message = w.message;
          m.median_us = w.median_us;
          m.spread = w.spread;
          m.reference_us = w.reference_us;
          m.device = runners.device(r).value("name", opt.target);
          m.gpu = runners.gpu(r);
          m.extra = {{"build_cached", job.build.cached}, {"attempts", w.attempts}, {"runner", r}};
          if (w.compile_us > 0) m.extra["compile_us"] = w.compile_us;
          if (w.timings_borrowed) m.extra["reference_timed"] = "earlier (oracle-timings cache)";
          if (w.cut) m.extra["cut"] = fmt::format("probe of 1 + 3 calls: slower than {}x the reference", opt.eval.cut_slow);
          if (!rec) m.extra["check"] = "incumbent";
          m.id = store->record_measurement(m);
          ms.push_back(m);
        }
        store->exec("COMMIT");
      } catch (...) {
        store->exec("ROLLBACK");
        throw;
      }
      if (rec) {
        out.build_s += job.build.seconds;
        po.build_s += job.build.seconds;
      }
      out.measure_s += job.seconds;
      po.gpu_s += job.seconds;
      return ms;
    };

    // A judged search candidate: recorded at once, observed when it reaches the pipeline's front.
    auto record_search = [&](const Job& job) {
      Slot& s = *judging.at(job.order);
      judging.erase(job.order);
      CandidateRecord rec;
      rec.hash = s.hash;
      rec.problem = p.def.name;
      rec.family = s.proposal.family;
      rec.knobs = recorded_knobs(s.proposal);
      rec.agent = agents[s.agent]->name();
      rec.seq = s.seq;
      rec.solution = to_native_json(job.candidate);
      s.ms = record(s.hash, job, rec);
      s.recorded = true;
      known[s.hash] = rec;
      ++measured;
    };

    // The search, then the piecewise candidate; when none is judged (nothing to compose, or no gain
    // expected), the candidate kept for it goes back to the agents in a second round.
    for (bool compose_round = true;; compose_round = false) {
      for (;;) {
        // Fill the pipeline: proposal i waits only for the observations of candidates ≤ i − depth.
        if (g_terminate.load() && !out.terminated) {
          out.terminated = true;
          spdlog::warn("SIGTERM: no new candidates; finishing the {} in flight", q.size());
        }
        // (checked once something was proposed: a problem judges at least its first candidates)
        if (!time_up && opt.time_limit_s > 0 && !spent.empty() && secs(p_start, Clock::now()) > opt.time_limit_s) {
          time_up = true;
          spdlog::info("{}: time limit of {:g} s reached after {} candidates: no new search candidates; finishing the {} "
                       "in flight{}",
                       p.def.name, opt.time_limit_s, spent.size(), q.size(), daxes.empty() ? "" : ", then the piecewise candidate");
        }
        while (!at_sol && !g_terminate.load() && !time_up && static_cast<int>(q.size()) < depth &&
               static_cast<int>(spent.size()) < search_budget) {
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
          Candidate c = fit->second->instantiate(prop->knobs, p, prop->defines);
          c.definition = p.def.name;
          c.author = agents[s.agent]->name();
          s.name = c.name;
          s.hash = candidate_hash(c);
          ++used[s.agent];
          bool in_flight = false;
          for (const auto& o : q) in_flight |= o.hash == s.hash;
          if (known.count(s.hash) || in_flight) {
            s.replay = true;
          } else {
            s.seq = next_seq++;
            s.job = std::make_shared<Job>();
            s.job->order = next_order++;
            s.job->candidate = std::move(c);
          }
          if (!spent.count(s.hash)) spent.insert(s.hash);
          q.push_back(std::move(s));
          if (auto job = q.back().job) {
            judging[job->order] = &q.back();  // deque: push_back and pop_front keep references valid
            pool.submit([job, sm, &runners] {
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
        }
        if (q.empty()) break;
        // Record results as they arrive (any order); observe only the front of the pipeline.
        while (!q.front().replay && !q.front().recorded)
          for (const auto& job : runners.wait_judged()) record_search(*job);
        Slot s = std::move(q.front());
        q.pop_front();
        std::vector<Measurement> ms;
        replaying = s.replay;
        if (s.replay) {
          ms = primary(store->measurements_of(s.hash));
          ++replayed;
        } else {
          ms = std::move(s.ms);
        }
        Scored sc = score(ms);
        SolStats ss = sol_stats(ms, sol_us);
        Observation o;
        o.problem = p.def.name;
        o.proposal = s.proposal;
        o.passed = sc.passed;
        o.score_us = sc.geomean_us;
        o.measurement_ids = sc.ids;
        o.median_us = sc.medians;
        o.workloads = sc.workloads_of;
        o.verdicts = sc.verdicts;
        o.author = agents[s.agent]->name();
        o.sol_score = ss.score;
        for (size_t a = 0; a < na; ++a)
          if (a == s.agent || opt.sharing == "full") agents[a]->observe(o);
        if (sc.passed && std::none_of(passed_seen.begin(), passed_seen.end(), [&](const auto& e) { return e.first == s.hash; }))
          passed_seen.emplace_back(s.hash, sc);
        if (sc.passed && (best == 0 || sc.geomean_us < best)) {
          if (best > 0)
            move_share(s.agent, 1.5, fmt::format("{} improved the incumbent from {:.3f} to {:.3f} us", s.name, best,
                                                 sc.geomean_us));
          best = sc.geomean_us;
          best_ref = sc.ref_geomean_us;
          best_hash = s.hash;
          best_sol = ss;
          if (opt.sol_stop > 0 && ss.ratio && *ss.ratio <= 1 + opt.sol_stop && !at_sol) {
            at_sol = true;
            if (!replaying)
              store->record_budget_move({"engine", 1.0, 0.0,
                                         fmt::format("{}: incumbent {} at {:.3f}x speed-of-light (stop at {:.3f}x): the "
                                                     "problem stops drawing budget",
                                                     p.def.name, s.name, *ss.ratio, 1 + opt.sol_stop)});
            spdlog::info("{}: incumbent at {:.3f}x speed-of-light; no further candidates", p.def.name, *ss.ratio);
          }
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

      // The last candidate: a piecewise composition of the incumbent and the candidates that beat it
      // on some values of the var axis (judged like any other; replayed on a resumed run).
      bool composed_now = false;
      if (compose_round && !daxes.empty() && !best_hash.empty() && passed_seen.size() >= 2 && !g_terminate.load()) {
        std::vector<PiecePlan> plans;
        std::vector<size_t> distinct;
        for (const auto& ax : daxes) {
          plans.push_back(piecewise_plan(p, ax, passed_seen, best_hash, opt));
          std::set<int64_t> v;
          for (const auto& w : p.workloads) v.insert(w.axes.at(ax.axis));
          distinct.push_back(v.size());
        }
        const size_t ai = best_axis_plan(plans, distinct);
        const PiecePlan& plan = plans[ai];
        const DispatchAxis& dax = daxes[ai];
        if (plan_worth_judging(plan, best)) {
          std::vector<Piece> pieces;
          json parts = json::array();
          std::string ids;
          for (const auto& [h, hi] : plan.pieces) {
            pieces.push_back({parse_solution_json(known.at(h).solution, "campaign store"), hi});
            parts.push_back({{"candidate", h}, {"name", pieces.back().part.name}, {"hi", hi}});
            ids += fmt::format("{}:{};", h, hi);
          }
          Candidate comp;
          try {
            comp = compose_pieces(pieces, dax, p.def, "piecewise_" + sha256_hex(ids).substr(0, 8));
          } catch (const UserError& e) {  // parts the composition cannot hold: the slot goes back
            spdlog::warn("{}: no piecewise candidate: {}", p.def.name, e.what());
            pieces.clear();
          }
          if (!pieces.empty()) {
            comp.author = "engine";
            const std::string hash = candidate_hash(comp);
            spent.insert(hash);
            composed_now = true;
            po.composed = comp.description;
            spdlog::info("{}: piecewise candidate {} (estimate {:.3f} us, incumbent {:.3f} us): {}", p.def.name, comp.name,
                         plan.estimated_geomean_us, best, comp.description);
            std::vector<Measurement> ms;
            if (known.count(hash)) {
              ms = primary(store->measurements_of(hash));
              ++replayed;
            } else {
              auto job = std::make_shared<Job>();
              job->order = next_order++;
              job->candidate = comp;
              try {
                job->build = build_candidate(comp, sm);
                runners.submit(job);
                for (bool done = false; !done;)
                  for (const auto& j : runners.wait_judged()) done |= j->order == job->order;
                CandidateRecord rec;
                rec.hash = hash;
                rec.problem = p.def.name;
                rec.family = "piecewise";
                rec.knobs = {{"axis", dax.axis}, {"pieces", parts}};
                rec.agent = "engine";
                rec.seq = next_seq++;
                rec.solution = to_native_json(comp);
                ms = record(hash, *job, rec);
                known[hash] = rec;
                ++measured;
              } catch (const std::exception& e) {
                spdlog::warn("{}: the piecewise candidate could not be judged: {}", p.def.name, e.what());
              }
            }
            Scored sc = score(ms);
            spdlog::info("{}: piecewise candidate {}: {}", p.def.name, comp.name,
                         sc.passed ? fmt::format("{:.3f} us (incumbent {:.3f} us)", sc.geomean_us, best)
                                   : fmt::format("passed {} of {} workloads", sc.passed_workloads, sc.workloads));
            if (sc.passed) po.composed += fmt::format(" [{:.3f} us]", sc.geomean_us);
            if (sc.passed && sc.geomean_us < best) {
              best = sc.geomean_us;
              best_ref = sc.ref_geomean_us;
              best_hash = hash;
              best_sol = sol_stats(ms, sol_us);
              po.composed_won = true;
            }
          }
        }
      }
      if (!compose_round || composed_now || search_budget >= opt.budget || g_terminate.load() || at_sol || time_up) break;
      search_budget = opt.budget;
    }
    progress(true);

    // Timings from different GPUs are comparable only after a per-GPU check of the incumbent:
    // when this problem's candidates were measured on several GPUs, the incumbent is measured on
    // each of them that has a runner here and has not measured it yet.
    if (!best_hash.empty()) {
      std::set<std::string> used_gpus, have;
      for (const auto& m : store->measurements(p.def.name)) used_gpus.insert(m.gpu);
      for (const auto& m : store->measurements_of(best_hash)) have.insert(m.gpu);
      if (used_gpus.size() > 1) {
        Candidate inc = parse_solution_json(known[best_hash].solution, "campaign store");
        BuildResult b = build_candidate(inc, sm);
        int pending = 0;
        for (size_t r = 0; r < runners.size(); ++r) {
          if (!used_gpus.count(runners.gpu(r)) || !have.insert(runners.gpu(r)).second) continue;
          auto job = std::make_shared<Job>();
          job->order = next_order++;
          job->pin = static_cast<int>(r);
          job->candidate = inc;
          job->build = b;
          runners.submit(job);
          ++pending;
        }
        while (pending > 0)
          for (const auto& job : runners.wait_judged()) {
            record(best_hash, *job, std::nullopt);
            ++po.checks;
            --pending;
          }
      }
    }
    PerGpu per_gpu = incumbent_per_gpu(*store, p.def.name, best_hash);
    po.per_gpu = per_gpu.gpus;
    po.gpu_spread = per_gpu.spread;
    po.candidates = static_cast<int>(spent.size());
    po.wall_s = secs(p_start, Clock::now());
    po.measured_now = measured;
    po.replayed = replayed;
    po.solved = best > 0;
    po.best_geomean_us = best;
    po.reference_geomean_us = best_ref;
    po.best_sol_score = best_sol.score;
    po.best_sol_ratio = best_sol.ratio;
    po.stopped_at_sol = at_sol;
    po.stopped_at_time = time_up;
    if (!best_hash.empty()) po.best_name = known[best_hash].solution.value("name", best_hash);
    po.best_dir = opt.out / p.def.name;
    write_outputs(p, *store, po.best_dir, best_hash, per_gpu, sol_us);
    out.measured += measured;
    out.checks += po.checks;
    for (const auto& rs : runners.stats()) {
      if (out.runners.size() <= static_cast<size_t>(rs.index)) out.runners.push_back(rs);
      else {
        out.runners[rs.index].judged += rs.judged;
        out.runners[rs.index].restarts += rs.restarts;
        out.runners[rs.index].busy_s += rs.busy_s;
      }
    }
    out.problems.push_back(po);
  }
  out.wall_s = secs(t0, Clock::now());
  return out;
}

}  // namespace ka
