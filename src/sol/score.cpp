// sol/score.cpp — the SOL score and its per-problem mean.
#include "sol/score.h"

#include <algorithm>

namespace ka {

double sol_score(double t_k, double t_sol, double t_b) {
  if (t_b - t_sol <= 0) return t_k <= t_sol ? 1.0 : 0.0;
  return 1.0 / (1.0 + (t_k - t_sol) / (t_b - t_sol));
}

std::optional<double> baseline_time(std::optional<double> eager, std::optional<double> compiled) {
  if (eager && compiled) return std::min(*eager, *compiled);
  return eager ? eager : compiled;
}

std::optional<double> mean_score(const std::vector<double>& scores) {
  if (scores.empty()) return std::nullopt;
  double s = 0;
  for (double x : scores) s += x;
  return s / static_cast<double>(scores.size());
}

}  // namespace ka
