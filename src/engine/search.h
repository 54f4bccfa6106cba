// engine/search.h — one problem's search: the campaign's loop. Each turn it fills the pipeline
// (engine/pipeline.h) with proposals from the agent the budget policy picks (engine/budget.h) until
// the stop rules (engine/stop_rules.h), SIGTERM or the budget say no more; builds run on the build
// pool and judged results are recorded as they arrive (engine/recorder.h); the front of the
// pipeline is observed: agents learn, the incumbent moves, findings are published, the measure
// callbacks are told. Then the composition policy (engine/piecewise.h) may spend the last
// candidate; then the incumbent is checked on every GPU that measured the problem and the outputs
// are written (engine/outputs.h).
//
// Proposal i is made after the observations of candidates 1 … i−depth, whatever the timing and the
// number of runners, so a search is deterministic for its seed and depth, and a re-run replays
// stored results instead of measuring again.
#pragma once
#include <chrono>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "agents/agent.h"
#include "engine/budget.h"
#include "engine/build_pool.h"
#include "engine/campaign.h"
#include "engine/outputs.h"
#include "engine/pipeline.h"
#include "engine/piecewise.h"
#include "engine/recorder.h"
#include "engine/runner.h"
#include "engine/stop_rules.h"
#include "sol/problem_sol.h"
#include "store/store.h"

namespace ka {

// What the campaign gives a problem's search.
struct SearchSetup {
  const CampaignOptions* opt = nullptr;
  const Problem* problem = nullptr;
  std::vector<const Family*> families;     // those that apply to the problem
  std::map<std::string, double> sol_us;    // SOL time per workload uuid (may be empty)
  std::vector<DispatchAxis> dispatch_axes; // empty: no piecewise candidate
  Store* store = nullptr;                  // the judge's connection
  std::filesystem::path db;                // the store's file (the agents open their own connections)
  std::vector<std::string> agent_kinds;
  RunnerPool* runners = nullptr;
  int build_jobs = 1, depth = 1;
  std::chrono::steady_clock::time_point campaign_start, problem_start;  // (its time limit counts from the latter)
  int measured_before = 0;                 // candidates measured by earlier problems (for the rate)
  std::vector<MeasureCallback*> callbacks;
};

// The best candidate so far: passed every workload with the least geometric-mean time.
struct Incumbent {
  std::string hash;
  double us = 0, ref_us = 0;
  SolStats sol;
  bool beaten_by(const Scored& sc) const { return sc.passed && (us == 0 || sc.geomean_us < us); }
  void take(const std::string& h, const Scored& sc, const SolStats& s) { hash = h, us = sc.geomean_us, ref_us = sc.ref_geomean_us, sol = s; }
};

class ProblemSearch {
 public:
  explicit ProblemSearch(const SearchSetup& setup);
  // Runs the search to its end and writes the problem's outputs; terminated() then says whether
  // SIGTERM stopped its proposals.
  ProblemOutcome run();
  bool terminated() const { return terminated_; }

 private:
  const SearchSetup& s_;
  const CampaignOptions& opt_;
  const Problem& p_;
  Store& store_;
  RunnerPool& runners_;
  std::map<std::string, const Family*> by_name_;
  std::optional<DispatchAxis> agent_axis_;
  int search_budget_;
  std::string device_;
  int sm_ = 0;
  std::vector<std::unique_ptr<Agent>> agents_;
  std::vector<std::unique_ptr<Store>> agent_store_;
  ShareBudget budget_;
  StopRules stop_;
  Recorder recorder_;
  std::map<std::string, CandidateRecord> known_;  // the store's candidates of the problem, by hash
  int64_t next_seq_ = 1, next_order_ = 1;
  std::set<std::string> spent_;                  // candidates counted against this run's budget
  Pipeline pipeline_;
  Incumbent best_;
  std::vector<PassedCandidate> passed_seen_;     // every passed candidate, in observation order
  std::vector<Finding> digest_, stored_here_;
  bool replaying_ = false;  // a replayed observation moves shares again but is not logged twice
  bool terminated_ = false;
  int measured_ = 0, replayed_ = 0;
  ProblemOutcome po_;
  BuildPool pool_;  // last: its threads stop before the rest goes

  bool may_propose() const;
  void check_stop();
  void fill();
  void propose(size_t a);
  void build_and_submit(std::shared_ptr<Job> job);
  void record_search(const Job& job);
  void observe(Slot s);
  void take_incumbent(const Slot& s, const Scored& sc, const SolStats& ss);
  void publish_findings(size_t a);
  bool compose();
  std::vector<Measurement> judge_piecewise(const PiecewiseCandidate& pc);
  void check_per_gpu();
  ProblemOutcome finish();
  AgentContext context(size_t a) const;
  void log_share(size_t a, const ShareChange& c, const std::string& reason);
  void report_progress(bool final) const;
};

}  // namespace ka
