// engine/piecewise.h — the composition policy of a campaign: after the search, a problem with a var
// axis to dispatch on may spend its last candidate on a piecewise one (families/compose.h) made of
// the incumbent and the candidates that beat it on some values of the axis. Plans are made on each
// dispatchable axis from the measured medians; the best is kept when it is worth judging.
#pragma once
#include <nlohmann/json.hpp>

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "engine/scoring.h"
#include "families/compose.h"
#include "problem/problem.h"
#include "solution/solution.h"
#include "store/store.h"

namespace ka {

// A candidate that passed every workload, with its score (observation order).
using PassedCandidate = std::pair<std::string, Scored>;  // (hash, score)

// The plan on one axis: the passed candidates' medians grouped by the axis value of each workload.
PiecePlan piecewise_plan(const Problem& p, const DispatchAxis& ax, const std::vector<PassedCandidate>& passed,
                         const std::string& incumbent, double gain, int max_parts);

struct PiecewiseCandidate {
  Candidate candidate;  // author "engine"
  std::string hash;     // candidate_hash
  nlohmann::json knobs; // as the store records it: {"axis", "pieces": [{"candidate", "name", "hi"}]}
  double estimate_us = 0;
};

// The piecewise candidate to judge, its parts read from `known` (the store's records by hash);
// nullopt when no plan is worth judging, or its parts cannot be composed (a warning says why).
std::optional<PiecewiseCandidate> piecewise_candidate(const Problem& p, const std::vector<DispatchAxis>& axes,
                                                      const std::vector<PassedCandidate>& passed,
                                                      const std::string& incumbent, double incumbent_us,
                                                      const std::map<std::string, CandidateRecord>& known,
                                                      double gain, int max_parts);

}  // namespace ka
