// graph/pass_memory.cpp — memory planning: the last reader of every intermediate value (so the
// generated code frees it right after), and buffer slots: an intermediate that owns storage
// (not a view, not a graph input/output) takes a freed slot of the same element count and dtype
// when one exists, else a new slot. Views keep their base alive until their own last use.
#include <algorithm>

#include "graph/ops.h"
#include "graph/passes.h"

namespace ka::graph {
namespace {

std::string size_key(const Value& v) {
  std::string k = std::to_string(static_cast<int>(v.type.dtype)) + ":";
  for (const auto& d : v.type.shape) k += "(" + d.expr + ")*";
  return k;
}

}  // namespace

MemoryPlan plan_memory(const Graph& g) {
  MemoryPlan plan;
  plan.free_after.resize(g.nodes.size());
  // A view's base lives as long as the view: extend last uses through view chains.
  std::vector<int> base(g.values.size());
  for (size_t v = 0; v < base.size(); ++v) base[v] = static_cast<int>(v);
  std::vector<int> last(g.values.size(), -1);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    if (n.dead) continue;
    const bool view = op_kind(n.op) == OpKind::View;
    for (int v : g.node_inputs(n)) last[static_cast<size_t>(base[static_cast<size_t>(v)])] = static_cast<int>(i);
    if (view && !n.args.empty() && n.args[0].kind == Arg::ValueRef)
      for (int o : n.outputs)
        if (o >= 0) base[static_cast<size_t>(o)] = base[static_cast<size_t>(n.args[0].value)];
  }
  for (size_t i = 0; i < g.nodes.size(); ++i)
    for (int v : g.node_inputs(g.nodes[i]))
      if (!g.nodes[i].dead) last[static_cast<size_t>(v)] = std::max(last[static_cast<size_t>(v)], last[static_cast<size_t>(base[static_cast<size_t>(v)])]);
  std::vector<std::pair<std::string, int>> free_slots;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    if (n.dead) continue;
    for (int o : n.outputs) {
      if (o < 0 || g.is_output(o) || op_kind(n.op) == OpKind::View) continue;
      const Value& val = g.value(o);
      if (val.kind != Value::Tensor) continue;
      const std::string key = size_key(val);
      auto it = std::find_if(free_slots.begin(), free_slots.end(), [&](const auto& s) { return s.first == key; });
      if (it != free_slots.end()) {
        plan.slot[o] = it->second;
        free_slots.erase(it);
      } else {
        plan.slot[o] = plan.slots++;
      }
    }
    std::vector<int> dead;
    for (int v : g.node_inputs(n))
      if (last[static_cast<size_t>(v)] == static_cast<int>(i) && !g.is_output(v) && !g.is_input(v) &&
          std::find(dead.begin(), dead.end(), v) == dead.end())
        dead.push_back(v);
    for (int v : dead)
      if (auto s = plan.slot.find(v); s != plan.slot.end()) free_slots.emplace_back(size_key(g.value(v)), s->second);
    plan.free_after[i] = std::move(dead);
  }
  return plan;
}

}  // namespace ka::graph
