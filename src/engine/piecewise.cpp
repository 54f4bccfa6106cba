// engine/piecewise.cpp — the composition policy (engine/piecewise.h).
#include "engine/piecewise.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <set>

#include "engine/campaign.h"
#include "util/error.h"
#include "util/hash.h"

namespace ka {

PiecePlan piecewise_plan(const Problem& p, const DispatchAxis& ax, const std::vector<PassedCandidate>& passed,
                         const std::string& incumbent, double gain, int max_parts) {
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
  return plan_pieces(times, inc, gain, max_parts);
}

std::optional<PiecewiseCandidate> piecewise_candidate(const Problem& p, const std::vector<DispatchAxis>& axes,
                                                      const std::vector<PassedCandidate>& passed,
                                                      const std::string& incumbent, double incumbent_us,
                                                      const std::map<std::string, CandidateRecord>& known,
                                                      double gain, int max_parts) {
  if (axes.empty() || incumbent.empty() || passed.size() < 2) return std::nullopt;
  std::vector<PiecePlan> plans;
  std::vector<size_t> distinct;
  for (const auto& ax : axes) {
    plans.push_back(piecewise_plan(p, ax, passed, incumbent, gain, max_parts));
    std::set<int64_t> v;
    for (const auto& w : p.workloads) v.insert(w.axes.at(ax.axis));
    distinct.push_back(v.size());
  }
  const size_t ai = best_axis_plan(plans, distinct);
  const PiecePlan& plan = plans[ai];
  const DispatchAxis& ax = axes[ai];
  if (!plan_worth_judging(plan, incumbent_us)) return std::nullopt;
  std::vector<Piece> pieces;
  nlohmann::json parts = nlohmann::json::array();
  std::string ids;
  for (const auto& [h, hi] : plan.pieces) {
    pieces.push_back({parse_solution_json(known.at(h).solution, "campaign store"), hi});
    parts.push_back({{"candidate", h}, {"name", pieces.back().part.name}, {"hi", hi}});
    ids += fmt::format("{}:{};", h, hi);
  }
  PiecewiseCandidate out;
  try {
    out.candidate = compose_pieces(pieces, ax, p.def, "piecewise_" + sha256_hex(ids).substr(0, 8));
  } catch (const UserError& e) {  // parts the composition cannot hold
    spdlog::warn("{}: no piecewise candidate: {}", p.def.name, e.what());
    return std::nullopt;
  }
  out.candidate.author = "engine";
  out.hash = candidate_hash(out.candidate);
  out.knobs = {{"axis", ax.axis}, {"pieces", parts}};
  out.estimate_us = plan.estimated_geomean_us;
  return out;
}

}  // namespace ka
