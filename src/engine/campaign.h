// engine/campaign.h — a campaign: agents search kernel families for each problem under a fixed
// candidate budget. The engine owns the flow: agents propose (scheduled by budget shares that move
// toward agents whose candidates improve the incumbent), a build pool compiles on every core
// (content-cached), measurement runners (one per GPU, engine/runner.h) judge built candidates as
// they become free, and every result goes into the campaign's store before an agent sees it.
// Results are observed in proposal order (a reorder buffer), and proposal i is made after the
// observations of candidates 1 … i−depth, whatever the timing and the number of runners, so a
// campaign is deterministic for its seed and depth and can be resumed from its store: a re-run
// replays stored results instead of measuring again. When candidates were measured on several
// GPUs, the incumbent is measured again on each of them and the spread is reported.
#pragma once
#include <nlohmann/json.hpp>

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "engine/runner.h"
#include "judge/evaluator.h"

namespace ka {

struct CampaignOptions {
  std::vector<std::filesystem::path> problems;
  std::string target = "cuda";
  int budget = 64;                         // candidates per problem
  std::vector<std::string> agents;         // default: every built-in agent
  std::string sharing = "findings";        // findings | none | full
  uint64_t seed = 0;
  std::filesystem::path out = "kernelarc-out";
  std::filesystem::path families;          // default: the shipped families/
  std::vector<std::filesystem::path> import_findings;  // earlier campaigns' stores
  int build_jobs = 0;                      // 0: every core
  int depth = 0;                           // proposals ahead of observations; 0: min(build_jobs, 4),
                                           // and at least 2 per runner when there are several
  std::string gpus;                        // --gpus: "" (one runner), "all", or "0,1,..." (runner.h)
  bool progress = true;
  // Speed-of-light (sol/problem_sol.h): with `sol`, each problem's workloads get a SOL time from the
  // device's calibration (measured once when missing) and the oracle's work count; candidates get a
  // SOL score, and a problem stops drawing budget once its incumbent's geometric-mean time is
  // within `sol_stop` of SOL (0: never stop early).
  bool sol = true;
  double sol_stop = 0.05;
  // Piecewise composition (families/compose.h): on a problem with one var axis and a budget of at
  // least 4, the agents spend budget − 1 candidates and the last one is kept for a piecewise
  // candidate: the incumbent with the candidates that beat it by at least compose_gain on some axis
  // values (at most compose_parts distinct parts), judged when it has two parts or more and its
  // estimate (each value's best measured time) is below the incumbent's geomean
  // (plan_worth_judging); it becomes the incumbent only if its own measurement beats it. When none
  // is judged, the kept candidate goes back to the agents.
  // false: the agents spend the whole budget.
  bool compose = true;
  double compose_gain = 0.02;
  int compose_parts = 4;
  // Per problem: once this many seconds have passed since it started (and something was
  // proposed), its agents propose no new candidates; those in flight finish and the piecewise
  // candidate is still judged, so a time-boxed run keeps what it measured composed (0: no limit;
  // the budget alone ends a problem).
  double time_limit_s = 0;
  EvalOptions eval;
};

// The incumbent's timing on one GPU (the per-GPU check).
struct GpuTiming {
  std::string gpu, device;
  bool passed = false;
  double geomean_us = 0;
  bool check = false;  // measured by the per-GPU check, not during the search
};

struct ProblemOutcome {
  std::string problem;
  int candidates = 0, measured_now = 0, replayed = 0;
  int checks = 0;                          // per-GPU re-measurements of the incumbent made now
  std::vector<GpuTiming> per_gpu;          // the incumbent per GPU, when several GPUs measured
  double gpu_spread = 0;                   // (max − min) / min of per_gpu's passed geomeans
  bool solved = false;                     // a candidate passed every workload
  std::string best_name;
  double best_geomean_us = 0, reference_geomean_us = 0;
  std::optional<double> best_sol_score, best_sol_ratio;  // the incumbent's (sol/problem_sol.h)
  bool stopped_at_sol = false;             // stopped drawing budget: within sol_stop of SOL
  bool stopped_at_time = false;            // stopped drawing budget: time_limit_s passed
  std::string oracle_cut_short;            // not searched: the oracle's time limit passed first (why)
  std::string not_searched;                // not searched for another reason: no family applies, or the
                                           // judge (its oracle) could not start for this problem (why)
  std::string composed;                    // the piecewise candidate judged, if any: its ranges
  bool composed_won = false;               // it became the incumbent
  // Search cost in this run: wall clock, runner time spent judging this problem's candidates and
  // checks (GPU time; replayed candidates cost none), and compile time of uncached builds.
  double wall_s = 0, gpu_s = 0, build_s = 0;
  std::filesystem::path best_dir;
};

struct CampaignOutcome {
  std::vector<ProblemOutcome> problems;
  double wall_s = 0, measure_s = 0, build_s = 0;  // measure_s: summed over runners
  int measured = 0, checks = 0;
  bool terminated = false;                // SIGTERM ended it early (outputs written for what ran)
  std::vector<RunnerStats> runners;       // per runner, summed over problems
  double candidates_per_minute() const { return wall_s > 0 ? measured * 60.0 / wall_s : 0; }
};

CampaignOutcome run_campaign(const CampaignOptions& opt);

// A candidate's identity in the store: its generated solution (name, sources, build options, entry),
// not the agent that proposed it, so two agents proposing the same point judge it once (the second
// proposal replays the first's measurements).
std::string candidate_hash(const Candidate& c);

}  // namespace ka
