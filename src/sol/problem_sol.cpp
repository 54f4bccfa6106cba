// sol/problem_sol.cpp — per-workload SOL times and a candidate's SOL score and ratio.
#include "sol/problem_sol.h"

#include <cmath>

#include "sol/score.h"

namespace ka {

std::map<std::string, double> workload_sol_us(const Problem& p, const std::vector<const Workload*>& ws, Oracle& oracle,
                                              const Ceilings& ceilings) {
  std::map<std::string, double> out;
  auto counts = oracle.count(p, ws);
  const std::string precision = input_precision(p.def);
  for (size_t i = 0; i < ws.size() && i < counts.size(); ++i) {
    if (!counts[i].value("ok", false)) continue;
    SolBound b = sol_bound(at_input_precision(WorkCount::from_json(counts[i]), precision), ceilings);
    if (b.ok && b.t_sol_s > 0) out[ws[i]->uuid] = b.t_sol_s * 1e6;
  }
  return out;
}

SolStats sol_stats(const std::vector<Measurement>& ms, const std::map<std::string, double>& sol_us) {
  SolStats s;
  if (ms.empty() || sol_us.empty()) return s;
  std::vector<double> scores;
  double log_ratio = 0;
  for (const auto& m : ms) {
    if (m.verdict != "passed" || m.median_us <= 0) return s;
    auto it = sol_us.find(m.workload);
    if (it == sol_us.end()) return s;
    log_ratio += std::log(m.median_us / it->second);
    std::optional<double> compile;
    if (m.extra.is_object() && m.extra.contains("compile_us") && m.extra["compile_us"].is_number())
      compile = m.extra["compile_us"].get<double>();
    auto tb = baseline_time(m.reference_us > 0 ? std::optional<double>(m.reference_us) : std::nullopt, compile);
    if (tb) scores.push_back(sol_score(m.median_us, it->second, *tb));
  }
  s.ratio = std::exp(log_ratio / static_cast<double>(ms.size()));
  if (scores.size() == ms.size()) s.score = mean_score(scores);
  return s;
}

}  // namespace ka
