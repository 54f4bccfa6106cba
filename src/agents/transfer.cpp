// agents/transfer.cpp — the transfer agent (see builtin.h).
#include <algorithm>
#include <tuple>

#include "agents/builtin.h"

namespace ka::search {

std::optional<size_t> Transfer::choose(const AgentContext& ctx, ProblemState& st) {
  const Definition& d = ctx.problem->def;
  const Space& sp = *st.space;
  // Configs found elsewhere, ranked: same op type first; then the same problem (another device or
  // an imported campaign) before other problems; the same device before others; the config found
  // best most often; the earliest finding.
  struct Source {
    std::tuple<int, int, int> tier;
    int votes = 0;
    size_t first = 0;  // position in the digest
    std::string family;
    Knobs knobs;
  };
  std::map<std::string, Source> sources;  // by point key
  for (size_t i = 0; i < ctx.digest.size(); ++i) {
    const Finding& f = ctx.digest[i];
    if (f.kind != "best_config" || !f.claim.is_object() || !f.claim.contains("family") || !f.claim["family"].is_string())
      continue;
    const bool same_problem = f.problem == d.name, same_device = f.device.empty() || f.device == ctx.device;
    if (same_problem && same_device && f.origin.empty()) continue;  // this campaign's own scope: the exploiter's centres
    const std::string family = f.claim["family"].get<std::string>();
    if (sp.family_index(family) < 0) continue;  // a family that does not apply here
    auto k = knobs_from_json(f.claim.value("knobs", nlohmann::json()));
    if (!k) continue;
    const std::tuple<int, int, int> tier{f.op_type == d.op_type ? 0 : 1, same_problem ? 0 : 1, same_device ? 0 : 1};
    auto [it, fresh] = sources.emplace(point_key(family, *k), Source{tier, 0, i, family, *k});
    it->second.tier = std::min(it->second.tier, tier);
    ++it->second.votes;
  }
  std::vector<const Source*> ranked;
  for (const auto& [key, s] : sources) ranked.push_back(&s);
  std::sort(ranked.begin(), ranked.end(), [](const Source* a, const Source* b) {
    return std::tie(a->tier, b->votes, a->first) < std::tie(b->tier, a->votes, b->first);
  });

  auto take = [&](size_t point, const std::string& why) -> std::optional<size_t> {
    if (st.seen.count(sp.points[point].key) || st.considered.count(why)) return std::nullopt;
    st.considered.insert(why);
    return point;
  };
  // The configs valid here, as they are.
  for (const Source* s : ranked)
    if (auto i = sp.find(s->family, s->knobs))
      if (auto p = take(*i, "exact|" + point_key(s->family, s->knobs))) return p;
  // The nearest valid point to each of the others.
  for (const Source* s : ranked) {
    if (sp.find(s->family, s->knobs)) continue;
    if (auto i = sp.nearest(sp.family_index(s->family), s->knobs))
      if (auto p = take(*i, "near|" + point_key(s->family, s->knobs))) return p;
  }
  return Exploiter::choose(ctx, st);
}

}  // namespace ka::search
