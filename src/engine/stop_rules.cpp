// engine/stop_rules.cpp — a problem's stop rules (engine/stop_rules.h).
#include "engine/stop_rules.h"

#include <algorithm>

namespace ka {

bool StopRules::incumbent_at(const std::optional<double>& sol_ratio) {
  if (sol_ratio && *sol_ratio < 1 - std::max(kBoundSlack, sol_stop_)) bound_suspect_ = true;
  if (at_sol_ || bound_suspect_ || sol_stop_ <= 0 || !sol_ratio || *sol_ratio > 1 + sol_stop_) return false;
  return at_sol_ = true;
}

bool StopRules::elapsed(double seconds, size_t proposed) {
  if (time_up_ || time_limit_s_ <= 0 || proposed == 0 || seconds <= time_limit_s_) return false;
  return time_up_ = true;
}

}  // namespace ka
