// agents/explorer.cpp — the space-filling agent (see builtin.h).
#include <algorithm>
#include <limits>

#include "agents/builtin.h"

namespace ka::search {

std::optional<size_t> Explorer::choose(const AgentContext& ctx, ProblemState& st) {
  std::vector<size_t> cand = candidates(ctx, st);
  if (cand.empty()) return std::nullopt;
  // The families' seeds first (points measured good elsewhere, family.json), in family and file
  // order, those valid here and not yet seen.
  for (const Family* f : st.space->families)
    for (const auto& seed : f->seeds)
      if (auto i = st.space->find(f->name, seed.knobs))
        if (std::find(cand.begin(), cand.end(), *i) != cand.end()) return *i;
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
