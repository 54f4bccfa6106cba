// engine/campaign.h — a campaign: agents search kernel families for each problem under a fixed
// candidate budget. The engine owns the flow: agents propose (scheduled by budget shares that move
// toward agents whose candidates improve the incumbent), a build pool compiles on every core
// (content-cached), one measurement runner per GPU judges in order, and every result goes into the
// campaign's store before an agent sees it. Proposal i is made after the observations of
// candidates 1 … i−depth, whatever the timing, so a campaign is deterministic for its seed and
// can be resumed from its store: a re-run replays stored results instead of measuring again.
#pragma once
#include <nlohmann/json.hpp>

#include <filesystem>
#include <string>
#include <vector>

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
  int depth = 0;                           // proposals ahead of observations; 0: min(build_jobs, 4)
  bool progress = true;
  EvalOptions eval;
};

struct ProblemOutcome {
  std::string problem;
  int candidates = 0, measured_now = 0, replayed = 0;
  bool solved = false;                     // a candidate passed every workload
  std::string best_name;
  double best_geomean_us = 0, reference_geomean_us = 0;
  std::filesystem::path best_dir;
};

struct CampaignOutcome {
  std::vector<ProblemOutcome> problems;
  double wall_s = 0, measure_s = 0, build_s = 0;
  int measured = 0;
  double candidates_per_minute() const { return wall_s > 0 ? measured * 60.0 / wall_s : 0; }
};

CampaignOutcome run_campaign(const CampaignOptions& opt);

}  // namespace ka
