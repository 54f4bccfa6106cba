// agents/search.cpp — the shared part of the built-in search agents (see search.h).
#include "agents/search.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "util/error.h"

namespace ka::search {

using json = nlohmann::json;

uint64_t fnv1a(std::string_view s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

namespace {

uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

bool scope_device(const Finding& f, const AgentContext& ctx) { return f.device.empty() || f.device == ctx.device; }

}  // namespace

std::string point_key(const std::string& family, const Knobs& k) {
  std::string s = family + "|";
  for (const auto& [n, v] : k) s += fmt::format("{}={};", n, v);
  return s;
}

std::optional<Knobs> knobs_from_json(const json& j) {
  if (!j.is_object()) return std::nullopt;
  Knobs k;
  for (const auto& [n, v] : j.items()) {
    if (!v.is_number_integer()) return std::nullopt;
    k[n] = v.get<int64_t>();
  }
  return k;
}

// ---------------------------------------------------------------------------------------------
// Space

Space Space::build(const AgentContext& ctx) {
  Space s;
  s.families = ctx.families;
  std::sort(s.families.begin(), s.families.end(), [](const Family* a, const Family* b) { return a->name < b->name; });
  size_t max_knobs = 1;
  for (int fi = 0; fi < static_cast<int>(s.families.size()); ++fi) {
    const Family& f = *s.families[fi];
    max_knobs = std::max(max_knobs, f.knobs.size());
    for (auto& k : f.space(*ctx.problem)) {
      Point p;
      p.family = fi;
      for (const auto& [n, dom] : f.knobs)
        p.idx.push_back(static_cast<int>(std::find(dom.begin(), dom.end(), k.at(n)) - dom.begin()));
      p.key = point_key(f.name, k);
      p.knobs = std::move(k);
      s.by_key.emplace(p.key, s.points.size());
      s.points.push_back(std::move(p));
    }
  }
  s.far_ = 1.0 + std::sqrt(static_cast<double>(max_knobs));
  return s;
}

std::optional<size_t> Space::find(const std::string& family, const Knobs& k) const {
  auto it = by_key.find(point_key(family, k));
  if (it == by_key.end()) return std::nullopt;
  return it->second;
}

int Space::family_index(const std::string& name) const {
  for (size_t i = 0; i < families.size(); ++i)
    if (families[i]->name == name) return static_cast<int>(i);
  return -1;
}

double Space::distance(size_t a, size_t b) const {
  const Point &p = points[a], &q = points[b];
  if (p.family != q.family) return far_;
  const Family& f = *families[p.family];
  double d = 0;
  for (size_t i = 0; i < p.idx.size(); ++i) {
    const size_t n = f.knobs[i].second.size();
    if (n < 2) continue;
    const double t = static_cast<double>(p.idx[i] - q.idx[i]) / static_cast<double>(n - 1);
    d += t * t;
  }
  return std::sqrt(d);
}

int Space::steps(size_t a, size_t b) const {
  const Point &p = points[a], &q = points[b];
  if (p.family != q.family) return std::numeric_limits<int>::max() / 2;
  int s = 0;
  for (size_t i = 0; i < p.idx.size(); ++i) s += std::abs(p.idx[i] - q.idx[i]);
  return s;
}

std::optional<size_t> Space::nearest(int family, const Knobs& k) const {
  if (family < 0 || family >= static_cast<int>(families.size())) return std::nullopt;
  const Family& f = *families[family];
  if (k.size() != f.knobs.size()) return std::nullopt;
  // Each wanted value as a fractional index into its domain (nearest value by magnitude).
  std::vector<double> want;
  for (const auto& [n, dom] : f.knobs) {
    auto it = k.find(n);
    if (it == k.end()) return std::nullopt;
    size_t best = 0;
    for (size_t i = 1; i < dom.size(); ++i)
      if (std::llabs(dom[i] - it->second) < std::llabs(dom[best] - it->second)) best = i;
    want.push_back(static_cast<double>(best));
  }
  std::optional<size_t> out;
  double best_d = std::numeric_limits<double>::infinity();
  for (size_t i = 0; i < points.size(); ++i) {
    if (points[i].family != family) continue;
    double d = 0;
    for (size_t j = 0; j < want.size(); ++j) {
      const size_t n = f.knobs[j].second.size();
      const double t = n < 2 ? 0 : (points[i].idx[j] - want[j]) / static_cast<double>(n - 1);
      d += t * t;
    }
    if (d < best_d) {
      best_d = d;
      out = i;
    }
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// SearchAgent

SearchAgent::SearchAgent(std::string name, uint64_t seed)
    : rng_(splitmix64(seed ^ splitmix64(fnv1a(name)))), name_(std::move(name)) {}

uint64_t SearchAgent::below(uint64_t n) {
  // Rejection sampling: the same numbers on every standard library (unlike the distributions).
  const uint64_t limit = std::numeric_limits<uint64_t>::max() - std::numeric_limits<uint64_t>::max() % n;
  uint64_t x;
  do x = rng_();
  while (x >= limit);
  return x % n;
}

double SearchAgent::unit() { return static_cast<double>(rng_() >> 11) * 0x1.0p-53; }

ProblemState& SearchAgent::state(const AgentContext& ctx) {
  if (!ctx.problem) throw std::logic_error("agent context without a problem");
  ProblemState& st = problems_[ctx.problem->def.name];
  // (Re)build the space when the families differ from those it was built from.
  std::vector<const Family*> fams = ctx.families;
  std::sort(fams.begin(), fams.end(), [](const Family* a, const Family* b) { return a->name < b->name; });
  if (!st.space || st.space->families != fams) st.space = Space::build(ctx);
  return st;
}

std::optional<Proposal> SearchAgent::propose(const AgentContext& ctx) {
  ProblemState& st = state(ctx);
  auto i = choose(ctx, st);
  if (!i) return std::nullopt;
  const Point& p = st.space->points.at(*i);
  if (!st.seen.insert(p.key).second)
    throw std::logic_error(fmt::format("agent {} chose a point it had already seen: {}", name_, p.key));
  ++st.chosen;
  return Proposal{st.space->families[p.family]->name, p.knobs, {}};
}

void SearchAgent::observe(const Observation& o) {
  ProblemState& st = problems_[o.problem];
  st.seen.insert(point_key(o.proposal.family, o.proposal.knobs));
  st.obs.push_back(o);
}

std::vector<size_t> SearchAgent::seen_points(const ProblemState& st) const {
  std::vector<size_t> out;
  for (const auto& k : st.seen)
    if (auto it = st.space->by_key.find(k); it != st.space->by_key.end()) out.push_back(it->second);
  std::sort(out.begin(), out.end());
  return out;
}

bool SearchAgent::in_dead_region(const AgentContext& ctx, const Space& space, const Point& p) const {
  const Definition& d = ctx.problem->def;
  const Family& f = *space.families[p.family];
  for (const auto& fd : ctx.digest) {
    if (fd.kind != "dead_region") continue;
    if (!(fd.problem == d.name || (fd.problem.empty() && fd.op_type == d.op_type))) continue;
    const json& c = fd.claim;
    if (!c.is_object() || c.value("family", "") != f.name) continue;
    if (!c.contains("knob") || !c["knob"].is_string() || !c.contains("value") || !c["value"].is_number_integer()) continue;
    // A knob value that fails fails everywhere; one that is slow is slow on its device.
    if (c.value("reason", "") != "fails" && !scope_device(fd, ctx)) continue;
    auto it = p.knobs.find(c["knob"].get<std::string>());
    if (it != p.knobs.end() && it->second == c["value"].get<int64_t>()) return true;
  }
  return false;
}

std::vector<size_t> SearchAgent::candidates(const AgentContext& ctx, const ProblemState& st) const {
  // Configs this campaign already measured here (someone's best_config) are not worth a second run.
  std::set<std::string> measured;
  for (const auto& f : ctx.digest)
    if (f.kind == "best_config" && f.origin.empty() && f.problem == ctx.problem->def.name && scope_device(f, ctx) &&
        f.claim.is_object() && f.claim.contains("family") && f.claim["family"].is_string())
      if (auto k = knobs_from_json(f.claim.value("knobs", json()))) measured.insert(point_key(f.claim["family"], *k));
  for (const auto& [family, knobs] : ctx.in_flight) measured.insert(point_key(family, knobs));
  std::vector<size_t> all, alive;
  for (size_t i = 0; i < st.space->points.size(); ++i) {
    const Point& p = st.space->points[i];
    if (st.seen.count(p.key) || measured.count(p.key)) continue;
    all.push_back(i);
    if (!in_dead_region(ctx, *st.space, p)) alive.push_back(i);
  }
  return alive.empty() ? all : alive;
}

std::optional<size_t> SearchAgent::first_seed(const ProblemState& st, const std::vector<size_t>& cand) const {
  for (const Family* f : st.space->families)
    for (const auto& seed : f->seeds)
      if (auto i = st.space->find(f->name, seed.knobs))
        if (std::find(cand.begin(), cand.end(), *i) != cand.end()) return *i;
  return std::nullopt;
}

std::vector<Scored> SearchAgent::passed(const ProblemState& st) const {
  std::map<size_t, double> best;
  for (const auto& o : st.obs) {
    if (!o.passed || !(o.score_us > 0) || !std::isfinite(o.score_us)) continue;
    auto i = st.space->find(o.proposal.family, o.proposal.knobs);
    if (!i) continue;
    auto [it, fresh] = best.emplace(*i, o.score_us);
    if (!fresh) it->second = std::min(it->second, o.score_us);
  }
  std::vector<Scored> out;
  for (const auto& [i, s] : best) out.push_back({i, s});
  std::stable_sort(out.begin(), out.end(), [](const Scored& a, const Scored& b) { return a.score < b.score; });
  return out;
}

std::vector<size_t> SearchAgent::failed(const ProblemState& st) const {
  std::set<size_t> out;
  for (const auto& o : st.obs)
    if (!o.passed)
      if (auto i = st.space->find(o.proposal.family, o.proposal.knobs)) out.insert(*i);
  return {out.begin(), out.end()};
}

std::vector<Scored> SearchAgent::digest_best(const AgentContext& ctx, const ProblemState& st) const {
  std::map<size_t, double> best;
  for (const auto& f : ctx.digest) {
    if (f.kind != "best_config" || f.problem != ctx.problem->def.name || !scope_device(f, ctx) || !f.bucket.empty())
      continue;
    if (!f.claim.is_object() || !f.claim.contains("family") || !f.claim["family"].is_string()) continue;
    auto k = knobs_from_json(f.claim.value("knobs", json()));
    if (!k) continue;
    auto i = st.space->find(f.claim["family"].get<std::string>(), *k);
    if (!i) continue;
    const double us = f.claim.contains("median_us") && f.claim["median_us"].is_number()
                          ? f.claim["median_us"].get<double>()
                          : std::numeric_limits<double>::infinity();
    auto [it, fresh] = best.emplace(*i, us);
    if (!fresh) it->second = std::min(it->second, us);
  }
  std::vector<Scored> out;
  for (const auto& [i, s] : best) out.push_back({i, s});
  std::stable_sort(out.begin(), out.end(), [](const Scored& a, const Scored& b) { return a.score < b.score; });
  return out;
}

std::vector<size_t> SearchAgent::digest_range_best(const AgentContext& ctx, const ProblemState& st) const {
  std::vector<size_t> out;
  for (const auto& f : ctx.digest) {
    if (f.kind != "best_config" || f.problem != ctx.problem->def.name || !scope_device(f, ctx) || f.bucket.empty())
      continue;
    if (!f.claim.is_object() || !f.claim.contains("family") || !f.claim["family"].is_string()) continue;
    auto k = knobs_from_json(f.claim.value("knobs", json()));
    if (!k) continue;
    if (auto i = st.space->find(f.claim["family"].get<std::string>(), *k))
      if (std::find(out.begin(), out.end(), *i) == out.end()) out.push_back(*i);
  }
  return out;
}

std::vector<RangeWin> SearchAgent::range_winners(const AgentContext& ctx, const ProblemState& st, bool own_only) const {
  if (ctx.piecewise_axis.empty()) return {};
  std::map<std::string, int64_t> axis_of;  // workload uuid -> value of the dispatch axis
  for (const auto& w : ctx.problem->workloads)
    if (auto it = w.axes.find(ctx.piecewise_axis); it != w.axes.end()) axis_of[w.uuid] = it->second;
  // Per workload: the fastest point's (median, measurement id) and the runner-up's median.
  struct Best {
    size_t point = 0;
    double us = std::numeric_limits<double>::infinity(), second = std::numeric_limits<double>::infinity();
    int64_t id = 0;
  };
  std::map<std::string, Best> best;
  for (const auto& o : st.obs) {
    if (own_only && !(o.author.empty() || o.author == name_)) continue;
    if (!o.passed || o.problem != ctx.problem->def.name || o.workloads.size() != o.median_us.size() ||
        o.measurement_ids.size() != o.median_us.size())
      continue;
    auto i = st.space->find(o.proposal.family, o.proposal.knobs);
    if (!i) continue;
    for (size_t k = 0; k < o.workloads.size(); ++k) {
      const double us = o.median_us[k];
      if (!(us > 0) || (k < o.verdicts.size() && o.verdicts[k] != "passed")) continue;
      Best& b = best[o.workloads[k]];
      if (b.point == *i && std::isfinite(b.us)) {  // the same point measured again: keep its best
        if (us < b.us) b.us = us, b.id = o.measurement_ids[k];
      } else if (us < b.us) {
        b.second = b.us, b.us = us, b.point = *i, b.id = o.measurement_ids[k];
      } else {
        b.second = std::min(b.second, us);
      }
    }
  }
  std::map<size_t, RangeWin> by_point;
  for (const auto& [uuid, b] : best) {
    auto ax = axis_of.find(uuid);
    if (ax == axis_of.end() || !std::isfinite(b.us) || b.us > b.second * (1 - kRangeWinGain)) continue;
    RangeWin& r = by_point[b.point];
    if (r.won == 0) r.point = b.point, r.lo = r.hi = ax->second;
    ++r.won;
    r.cites.push_back(b.id);
    r.worst_us = std::max(r.worst_us, b.us);
    r.lo = std::min(r.lo, ax->second);
    r.hi = std::max(r.hi, ax->second);
  }
  std::vector<RangeWin> out;
  for (auto& [p, r] : by_point) out.push_back(std::move(r));
  std::stable_sort(out.begin(), out.end(), [](const RangeWin& a, const RangeWin& b) { return a.won > b.won; });
  return out;
}

std::vector<Finding> SearchAgent::conclude(const AgentContext& ctx) {
  ProblemState& st = state(ctx);
  const Definition& d = ctx.problem->def;
  std::vector<Finding> out;
  auto mine = [&](const Observation& o) { return o.author.empty() || o.author == name_; };
  auto base = [&](const char* kind) {
    Finding f;
    f.author = name_;
    f.kind = kind;
    f.problem = d.name;
    f.op_type = d.op_type;
    f.device = ctx.device;
    return f;
  };

  // best_config: the agent's own best, when it improved on what it published before, is checkable
  // (per-measurement medians and ids) and is no worse than a best_config already in the digest.
  const Observation* best = nullptr;
  for (const auto& o : st.obs)
    if (mine(o) && o.problem == d.name && o.passed && o.score_us > 0 && !o.measurement_ids.empty() &&
        o.median_us.size() == o.measurement_ids.size() &&
        std::all_of(o.median_us.begin(), o.median_us.end(), [](double m) { return m > 0; }) &&  // timed
        (!best || o.score_us < best->score_us))
      best = &o;
  if (best && best->score_us < st.published_best) {
    const double claim_us = *std::max_element(best->median_us.begin(), best->median_us.end());
    bool beaten = false;
    for (const auto& s : digest_best(ctx, st)) beaten |= s.score <= claim_us;
    if (!beaten) {
      Finding f = base("best_config");
      f.claim = {{"family", best->proposal.family}, {"knobs", json(best->proposal.knobs)}, {"median_us", claim_us}};
      f.cites = best->measurement_ids;
      out.push_back(std::move(f));
    }
    st.published_best = best->score_us;  // published, or already beaten: wait for a better one
  }

  // Range winners (with a piecewise axis): a point of the agent's own that is the fastest, by
  // kRangeWinGain, on some workloads, once per point, as a best_config scoped to the axis range
  // those workloads span (bucket) and citing their measurements; not the agent's whole-problem best.
  for (const RangeWin& r : range_winners(ctx, st, /*own_only=*/true)) {
    const Point& p = st.space->points[r.point];
    if (best && st.space->find(best->proposal.family, best->proposal.knobs) == std::optional<size_t>(r.point)) continue;
    if (!st.range_published.insert(p.key).second) continue;
    Finding f = base("best_config");
    f.bucket = r.lo == r.hi ? fmt::format("{}={}", ctx.piecewise_axis, r.lo)
                            : fmt::format("{}<={}<={}", r.lo, ctx.piecewise_axis, r.hi);
    f.claim = {{"family", st.space->families[p.family]->name},
               {"knobs", json(p.knobs)},
               {"median_us", r.worst_us},
               {"workloads_won", r.won}};
    f.cites = r.cites;
    out.push_back(std::move(f));
  }

  // dead_region: a knob value that failed every time it was tried (at least twice), in a family
  // where other values of that knob passed.
  struct Tally {
    int fails = 0, passes = 0;
    std::vector<int64_t> cites;
    bool citable = true;
  };
  std::map<std::tuple<std::string, std::string, int64_t>, Tally> tally;
  for (const auto& o : st.obs) {
    if (!mine(o) || o.problem != d.name) continue;
    for (const auto& [knob, value] : o.proposal.knobs) {
      Tally& t = tally[{o.proposal.family, knob, value}];
      if (o.passed) {
        ++t.passes;
      } else {
        ++t.fails;
        if (o.measurement_ids.empty()) t.citable = false;
        t.cites.insert(t.cites.end(), o.measurement_ids.begin(), o.measurement_ids.end());
      }
    }
  }
  std::map<std::pair<std::string, std::string>, int> other_passes;  // (family, knob) -> passes at any value
  for (const auto& [key, t] : tally) other_passes[{std::get<0>(key), std::get<1>(key)}] += t.passes;
  for (const auto& [key, t] : tally) {
    const auto& [family, knob, value] = key;
    if (t.passes > 0 || t.fails < 2 || !t.citable || other_passes[{family, knob}] == 0) continue;
    const std::string pkey = fmt::format("dead|{}|{}|{}", family, knob, value);
    if (st.published.count(pkey)) continue;
    bool known = false;
    for (const auto& fd : ctx.digest)
      known |= fd.kind == "dead_region" && fd.problem == d.name && fd.claim.is_object() &&
               fd.claim.value("family", "") == family && fd.claim.value("knob", "") == knob &&
               fd.claim.contains("value") && fd.claim["value"] == value;
    st.published.insert(pkey);
    if (known) continue;
    Finding f = base("dead_region");
    f.claim = {{"family", family}, {"knob", knob}, {"value", value}, {"reason", "fails"}};
    f.cites = t.cites;
    std::sort(f.cites.begin(), f.cites.end());
    f.cites.erase(std::unique(f.cites.begin(), f.cites.end()), f.cites.end());
    out.push_back(std::move(f));
  }
  return out;
}

}  // namespace ka::search
