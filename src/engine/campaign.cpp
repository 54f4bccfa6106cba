// engine/campaign.cpp — a campaign: checks its options, opens the store, then for each problem
// finds the families that apply, its speed-of-light bounds and its runners, and runs its search
// (engine/search.h); sums what each problem cost.
#include "engine/campaign.h"

#include <fmt/ranges.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <thread>

#include "agents/agent.h"
#include "engine/outputs.h"
#include "engine/search.h"
#include "engine/sigterm.h"
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

using Clock = std::chrono::steady_clock;

double secs_since(Clock::time_point a) { return std::chrono::duration<double>(Clock::now() - a).count(); }

std::vector<std::string> checked_agents(const CampaignOptions& opt) {
  if (opt.budget < 1) user_error("--budget must be at least 1");
  if (opt.sharing != "findings" && opt.sharing != "none" && opt.sharing != "full")
    user_error("--sharing must be findings, none or full, not '{}'", opt.sharing);
  std::vector<std::string> kinds = opt.agents.empty() ? builtin_agents() : opt.agents;
  const auto all = builtin_agents();
  for (const auto& a : kinds)
    if (std::find(all.begin(), all.end(), a) == all.end())
      user_error("unknown agent '{}' (built in: {})", a, fmt::join(all, ", "));
  return kinds;
}

// Proposals run ahead of observations by `depth`: enough to keep the build pool and every runner
// busy, few enough that agents learn from results (a deep pipeline turns every agent into an
// explorer). The depth decides what agents have seen when they propose, so campaigns with
// different numbers of runners give the same proposals only at the same --depth.
int pipeline_depth(const CampaignOptions& opt, int build_jobs, int runners) {
  return opt.depth > 0 ? opt.depth : std::max(std::min(build_jobs, 4), runners > 1 ? 2 * runners : 1);
}

std::optional<Ceilings> device_ceilings(const CampaignOptions& opt) {
  if (!opt.sol) return std::nullopt;
  try {
    return ceilings_from(calibrate_device(opt.target, false));
  } catch (const std::exception& e) {
    spdlog::warn("no speed-of-light figures: {}", e.what());
    return std::nullopt;
  }
}

// Speed-of-light time per workload (the oracle caches its counts): scores the candidates and tells
// when the problem is done.
std::map<std::string, double> problem_sol_us(const Problem& p, const std::optional<Ceilings>& ceilings,
                                             const std::string& target) {
  if (!ceilings) return {};
  try {
    Oracle oracle(target == "cuda" ? "cuda" : "cpu");
    std::vector<const Workload*> ws;
    for (const auto& w : p.workloads) ws.push_back(&w);
    return workload_sol_us(p, ws, oracle, *ceilings);
  } catch (const std::exception& e) {
    spdlog::warn("{}: no speed-of-light bounds: {}", p.def.name, e.what());
    return {};
  }
}

void add_runner_stats(std::vector<RunnerStats>& total, const std::vector<RunnerStats>& problem) {
  for (const auto& rs : problem) {
    if (total.size() <= static_cast<size_t>(rs.index)) {
      total.push_back(rs);
    } else {
      total[rs.index].judged += rs.judged;
      total[rs.index].restarts += rs.restarts;
      total[rs.index].busy_s += rs.busy_s;
    }
  }
}

// What every problem of a campaign shares.
struct CampaignContext {
  const CampaignOptions& opt;
  std::vector<std::string> agent_kinds;
  std::vector<Family> families;
  std::filesystem::path db;
  std::unique_ptr<Store> store;
  int build_jobs = 1, depth = 1;
  std::vector<int> gpus;
  std::optional<Ceilings> ceilings;
  Clock::time_point start;
  ProgressPrinter progress;
};

// One problem: skipped when SIGTERM came first or no family applies; cut short when the oracle's
// time limit passes before its inputs are made; else searched.
ProblemOutcome run_problem(CampaignContext& cc, const Problem& p, CampaignOutcome& out) {
  const CampaignOptions& opt = cc.opt;
  const auto p_start = Clock::now();
  ProblemOutcome po;
  po.problem = p.def.name;
  if (termination_requested()) {
    spdlog::warn("{}: not started (SIGTERM)", p.def.name);
    out.terminated = true;
    return po;
  }
  SearchSetup s;
  for (const auto& f : cc.families)
    if (f.target == opt.target && f.applies_to(p)) s.families.push_back(&f);
  if (s.families.empty()) {
    spdlog::warn("{}: no {} kernel family applies (op type {}); skipped", p.def.name, opt.target, p.def.op_type);
    po.not_searched = fmt::format("no {} kernel family applies (op type {})", opt.target, p.def.op_type);
    return po;
  }
  s.sol_us = problem_sol_us(p, cc.ceilings, opt.target);
  // A problem with a var axis to dispatch on keeps its last candidate for a piecewise composition
  // (with several, on the one whose plan is best once the candidates are measured).
  if (opt.compose && opt.budget >= 4) s.dispatch_axes = dispatch_axes(p.def);
  EvalOptions eo = opt.eval;
  eo.target = opt.target;
  std::optional<RunnerPool> runners;
  try {
    runners.emplace(p, eo, cc.gpus);
  } catch (const OracleCutShort& e) {
    // The oracle's time limit passed before every input set was made: nothing can be judged yet
    // (the missing workloads would count as failed for good); what it made is cached.
    spdlog::warn("{}: {}", p.def.name, e.what());
    po.oracle_cut_short = e.what();
    po.wall_s = secs_since(p_start);
    return po;
  } catch (const std::exception& e) {  // e.g. its reference fails in the oracle: the other problems go on
    spdlog::error("{}: the judge could not start: {}", p.def.name, e.what());
    po.not_searched = fmt::format("the judge could not start: {}", one_line(e.what()));
    po.wall_s = secs_since(p_start);
    return po;
  }
  s.opt = &opt;
  s.problem = &p;
  s.store = cc.store.get();
  s.db = cc.db;
  s.agent_kinds = cc.agent_kinds;
  s.runners = &*runners;
  s.build_jobs = cc.build_jobs;
  s.depth = cc.depth;
  s.campaign_start = cc.start;
  s.problem_start = p_start;
  s.measured_before = out.measured;
  s.callbacks = {&cc.progress};
  ProblemSearch search(s);
  po = search.run();
  out.terminated |= search.terminated();
  add_runner_stats(out.runners, runners->stats());
  return po;
}

}  // namespace

std::string candidate_hash(const Candidate& c) {
  Candidate anon = c;
  anon.author.clear();  // who proposed it is not what it is
  return sha256_hex(to_native_json(anon).dump()).substr(0, 32);
}

CampaignOutcome run_campaign(const CampaignOptions& opt) {
  CampaignContext cc{opt, checked_agents(opt), {}, {}, {}, 1, 1, {}, {}, Clock::now(), {opt.progress, ::isatty(2) != 0}};
  std::vector<Problem> problems;
  for (const auto& p : opt.problems) problems.push_back(load_problem(p));
  cc.families = load_families(opt.families);
  fs::create_directories(opt.out);
  cc.db = opt.out / "campaign.db";
  cc.store = Store::open_judge(cc.db);
  for (const auto& imp : opt.import_findings) {
    int n = cc.store->import_findings(imp);
    spdlog::info("imported {} findings from {}", n, imp.string());
  }
  cc.build_jobs = opt.build_jobs > 0 ? opt.build_jobs : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  cc.gpus = parse_gpus(opt.gpus, opt.target);
  cc.depth = pipeline_depth(opt, cc.build_jobs, static_cast<int>(cc.gpus.size()));
  SigtermGuard sigterm;
  cc.ceilings = device_ceilings(opt);

  CampaignOutcome out;
  for (const Problem& p : problems) {
    ProblemOutcome po = run_problem(cc, p, out);
    out.measured += po.measured_now;
    out.checks += po.checks;
    out.build_s += po.build_s;
    out.measure_s += po.gpu_s;
    out.problems.push_back(std::move(po));
  }
  out.wall_s = secs_since(cc.start);
  return out;
}

}  // namespace ka
