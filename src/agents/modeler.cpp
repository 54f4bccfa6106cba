// agents/modeler.cpp — the surrogate-model agent (see builtin.h).
#include <algorithm>
#include <cmath>
#include <limits>

#include "agents/builtin.h"

namespace ka::search {
namespace {

// An additive model of log time for one family: y ≈ mu + Σ_knobs effect[knob][value index].
struct Additive {
  double mu = 0;
  std::vector<std::vector<double>> effect;
  double predict(const Point& p) const {
    double y = mu;
    for (size_t k = 0; k < effect.size(); ++k) y += effect[k][p.idx[k]];
    return y;
  }
};

Additive fit(const Family& f, const std::vector<const Point*>& xs, const std::vector<double>& ys) {
  constexpr double kRidge = 1.0;  // shrinks the effect of a value seen once towards the mean
  constexpr int kSweeps = 30;
  Additive m;
  for (double y : ys) m.mu += y;
  m.mu /= static_cast<double>(ys.size());
  for (const auto& [n, dom] : f.knobs) m.effect.emplace_back(dom.size(), 0.0);
  for (int sweep = 0; sweep < kSweeps; ++sweep) {
    for (size_t k = 0; k < m.effect.size(); ++k) {
      std::vector<double> num(m.effect[k].size(), 0.0), cnt(m.effect[k].size(), 0.0);
      for (size_t i = 0; i < xs.size(); ++i) {
        const int v = xs[i]->idx[k];
        num[v] += ys[i] - (m.predict(*xs[i]) - m.effect[k][v]);
        cnt[v] += 1;
      }
      for (size_t v = 0; v < num.size(); ++v) m.effect[k][v] = num[v] / (cnt[v] + kRidge);
    }
  }
  return m;
}

}  // namespace

std::optional<size_t> Modeler::choose(const AgentContext& ctx, ProblemState& st) {
  std::vector<size_t> cand = candidates(ctx, st);
  if (cand.empty()) return std::nullopt;
  const Space& sp = *st.space;
  const std::vector<Scored> ok = passed(st);
  const std::vector<size_t> bad = failed(st);
  size_t max_knobs = 1;
  for (const Family* f : sp.families) max_knobs = std::max(max_knobs, f->knobs.size());
  const size_t warmup = std::max<size_t>(4, max_knobs + 1);
  // Explore while the data is thin, and now and then afterwards (the model may be wrong).
  const bool explore = unit() < 0.1;
  if (ok.size() < warmup || explore) {
    if (!explore)
      if (auto s = first_seed(st, cand)) return s;  // thin data: the seeds not yet taken first
    return pick(cand);
  }

  // Per family: observed points with log time; a failure counts as twice the slowest time seen.
  double worst = -std::numeric_limits<double>::infinity();
  for (const auto& s : ok) worst = std::max(worst, std::log(s.score));
  std::vector<std::vector<const Point*>> xs(sp.families.size());
  std::vector<std::vector<double>> ys(sp.families.size());
  std::vector<std::vector<size_t>> ids(sp.families.size());
  for (const auto& s : ok) {
    const Point& p = sp.points[s.point];
    xs[p.family].push_back(&p);
    ys[p.family].push_back(std::log(s.score));
    ids[p.family].push_back(s.point);
  }
  for (size_t b : bad) {
    const Point& p = sp.points[b];
    if (std::any_of(ids[p.family].begin(), ids[p.family].end(), [&](size_t i) { return i == b; })) continue;
    xs[p.family].push_back(&p);
    ys[p.family].push_back(worst + std::log(2.0));
    ids[p.family].push_back(b);
  }
  std::vector<std::optional<Additive>> model(sp.families.size());
  std::vector<std::vector<double>> resid(sp.families.size());
  for (size_t f = 0; f < sp.families.size(); ++f) {
    if (xs[f].empty()) continue;
    model[f] = fit(*sp.families[f], xs[f], ys[f]);
    for (size_t i = 0; i < xs[f].size(); ++i) resid[f].push_back(ys[f][i] - model[f]->predict(*xs[f][i]));
  }

  // Prediction: the additive model plus the distance-weighted residual of the 3 nearest observed points.
  shuffle(cand);  // the seeded order breaks ties
  std::optional<size_t> best;
  double best_y = std::numeric_limits<double>::infinity();
  for (size_t c : cand) {
    const Point& p = sp.points[c];
    if (!model[p.family]) continue;  // a family with no observation is reached by exploration
    double y = model[p.family]->predict(p);
    std::vector<std::pair<double, double>> near;  // (distance, residual)
    for (size_t i = 0; i < ids[p.family].size(); ++i) near.emplace_back(sp.distance(c, ids[p.family][i]), resid[p.family][i]);
    const size_t k = std::min<size_t>(3, near.size());
    std::partial_sort(near.begin(), near.begin() + k, near.end());
    double wsum = 0, rsum = 0;
    for (size_t i = 0; i < k; ++i) {
      const double w = 1.0 / (near[i].first + 0.05);
      wsum += w;
      rsum += w * near[i].second;
    }
    if (wsum > 0) y += rsum / wsum;
    if (y < best_y) {
      best_y = y;
      best = c;
    }
  }
  return best ? best : pick(cand);
}

}  // namespace ka::search
