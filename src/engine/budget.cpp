// engine/budget.cpp — the share-based budget policy (engine/budget.h).
#include "engine/budget.h"

namespace ka {

ShareBudget::ShareBudget(size_t agents)
    : share_(agents, agents ? 1.0 / static_cast<double>(agents) : 0.0), used_(agents, 0), active_(agents, true) {}

int ShareBudget::next() const {
  int total = 0;
  for (int u : used_) total += u;
  int best = -1;
  double best_deficit = -1e300;
  for (size_t a = 0; a < share_.size(); ++a) {
    if (!active_[a]) continue;
    const double deficit = share_[a] * (total + 1) - used_[a];
    if (deficit > best_deficit + 1e-12) {
      best_deficit = deficit;
      best = static_cast<int>(a);
    }
  }
  return best;
}

ShareChange ShareBudget::retire(size_t a) {
  active_[a] = false;
  return scale(a, 0.0);
}

ShareChange ShareBudget::scale(size_t a, double factor) {
  ShareChange c{share_[a], 0};
  share_[a] *= factor;
  double sum = 0;
  for (size_t i = 0; i < share_.size(); ++i) sum += active_[i] ? share_[i] : 0;
  for (size_t i = 0; i < share_.size(); ++i) share_[i] = active_[i] && sum > 0 ? share_[i] / sum : 0;
  c.after = share_[a];
  return c;
}

}  // namespace ka
