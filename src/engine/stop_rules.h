// engine/stop_rules.h — when a problem stops drawing budget before it is spent: its incumbent is
// within `sol_stop` of speed-of-light, or `time_limit_s` has passed since it started (checked once
// something was proposed, so a problem judges at least its first candidates). Each rule fires
// once; the engine logs it. A time well below the bound (further below it than the stop margin
// or kBoundSlack, whichever is wider) proves the bound wrong — a stale or busy-machine calibration — so it never stops a problem; the rules
// remember it (bound_suspect) for the engine to say so once. SIGTERM (engine/sigterm.h) is the third reason, campaign-wide.
#pragma once
#include <cstddef>
#include <optional>

namespace ka {

class StopRules {
 public:
  StopRules(double sol_stop, double time_limit_s) : sol_stop_(sol_stop), time_limit_s_(time_limit_s) {}
  // Measurement noise allowed below the bound before the bound counts as wrong.
  static constexpr double kBoundSlack = 0.1;
  // A new incumbent's time over SOL (geometric mean); true when this one stops the problem.
  bool incumbent_at(const std::optional<double>& sol_ratio);
  // Seconds since the problem started and candidates proposed so far; true when this check stops it.
  bool elapsed(double seconds, size_t proposed);
  bool at_sol() const { return at_sol_; }
  bool time_up() const { return time_up_; }
  bool bound_suspect() const { return bound_suspect_; }
  bool stopped() const { return at_sol_ || time_up_; }
  double sol_stop() const { return sol_stop_; }

 private:
  double sol_stop_, time_limit_s_;
  bool at_sol_ = false, time_up_ = false, bound_suspect_ = false;
};

}  // namespace ka
