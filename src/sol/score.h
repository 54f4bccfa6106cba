// sol/score.h — SOL-ExecBench's score (docs/sol-execbench-rules.md §5.5):
//   S = 1 / (1 + (T_k − T_sol) / (T_b − T_sol)),  T_b = the faster of the eager and compiled
// reference. Upstream's edge rule: when T_b − T_sol ≤ 0, S = 1 if T_k ≤ T_sol, else 0. No
// clamping (S > 1 when T_k < T_sol). A problem's score is the mean over its scored workloads.
#pragma once
#include <optional>
#include <vector>

namespace ka {

double sol_score(double t_k, double t_sol, double t_b);
// The faster of the two baselines that exist (nullopt when neither does).
std::optional<double> baseline_time(std::optional<double> eager, std::optional<double> compiled);
std::optional<double> mean_score(const std::vector<double>& scores);

}  // namespace ka
