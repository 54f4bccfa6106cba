// agents/explorer.cpp — the space-filling agent (see builtin.h).
#include <algorithm>
#include <limits>

#include "agents/builtin.h"

namespace ka::search {

std::optional<size_t> Explorer::choose(const AgentContext& ctx, ProblemState& st) {
  std::vector<size_t> cand = candidates(ctx, st);
  if (cand.empty()) return std::nullopt;
  // The families' seeds first (points measured good elsewhere), those valid here and not yet seen.
  if (auto s = first_seed(st, cand)) return s;
  const std::vector<size_t> anchors = seen_points(st);
  if (anchors.empty()) return pick(cand);
  shuffle(cand);  // the seeded order breaks ties
  std::optional<size_t> best;
  double best_d = -1;
  for (size_t c : cand) {
    double d = std::numeric_limits<double>::infinity();
    for (size_t a : anchors) {
      d = std::min(d, st.space->distance(c, a));
      if (d <= best_d) break;  // cannot beat the best any more
    }
    if (d > best_d) {
      best_d = d;
      best = c;
    }
  }
  return best;
}

}  // namespace ka::search
