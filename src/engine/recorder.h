// engine/recorder.h — the store writes of a problem's search: a judged job becomes its candidate
// record (none for a per-GPU check of one already recorded) and one measurement per workload, with
// the identity of the runner's device, written in one store transaction (Store::record_judged).
// The recorder also sums what the problem cost in this run: runner time and uncached build time.
#pragma once
#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

#include "agents/agent.h"
#include "engine/runner.h"
#include "store/store.h"

namespace ka {

// Where a runner's measurements come from: its device name and its identity (engine/runner.h).
struct RunnerIdentity {
  std::string device, gpu;
};

// What the store records as a candidate's knobs: the integer knobs and, as strings, the generated
// defines of its proposal (agent.h, Proposal::defines), so that findings can name either.
nlohmann::json recorded_knobs(const Proposal& p);

// The store's record of a candidate first proposed by `agent` as the seq-th of the campaign.
CandidateRecord candidate_record(const Candidate& c, const std::string& hash, const std::string& family,
                                 nlohmann::json knobs, const std::string& agent, int64_t seq);

// A judged job's measurements, ids unset; `check`: a per-GPU check of the incumbent.
std::vector<Measurement> job_measurements(const Job& job, const std::string& hash, const std::string& problem,
                                          const RunnerIdentity& runner, double cut_slow, bool check);

class Recorder {
 public:
  Recorder(Store& store, std::string problem, std::vector<RunnerIdentity> runners, double cut_slow)
      : store_(store), problem_(std::move(problem)), runners_(std::move(runners)), cut_slow_(cut_slow) {}
  // Records a judged job; returns its measurements with their ids.
  std::vector<Measurement> record(const std::string& hash, const Job& job, const std::optional<CandidateRecord>& rec);
  double gpu_s() const { return gpu_s_; }      // runner time of every recorded job
  double build_s() const { return build_s_; }  // build time of the recorded candidates

 private:
  Store& store_;
  std::string problem_;
  std::vector<RunnerIdentity> runners_;
  double cut_slow_;
  double gpu_s_ = 0, build_s_ = 0;
};

}  // namespace ka
