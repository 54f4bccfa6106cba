// graph/ir.cpp — small queries over the graph IR (users, inputs of a node, reference renaming).
#include "graph/ir.h"

#include <algorithm>
#include <cctype>

namespace ka::graph {

std::optional<int64_t> Dim::constant() const {
  if (expr.empty()) return std::nullopt;
  size_t i = expr[0] == '-' ? 1 : 0;
  if (i == expr.size()) return std::nullopt;
  for (size_t k = i; k < expr.size(); ++k)
    if (!std::isdigit(static_cast<unsigned char>(expr[k]))) return std::nullopt;
  return std::stoll(expr);
}

std::vector<int> Graph::node_inputs(const Node& n) const {
  std::vector<int> out;
  for (const auto& a : n.args) for_each_ref(a, [&](int v) { out.push_back(v); });
  for (const auto& [k, a] : n.kwargs) for_each_ref(a, [&](int v) { out.push_back(v); });
  return out;
}

std::vector<std::vector<int>> Graph::users() const {
  std::vector<std::vector<int>> u(values.size());
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (nodes[i].dead) continue;
    for (int v : node_inputs(nodes[i])) {
      auto& list = u.at(static_cast<size_t>(v));
      if (list.empty() || list.back() != static_cast<int>(i)) list.push_back(static_cast<int>(i));
    }
  }
  return u;
}

const Constant* Graph::constant(int value_id) const {
  for (const auto& c : constants)
    if (c.value == value_id) return &c;
  return nullptr;
}

bool Graph::is_input(int value_id) const {
  return std::any_of(inputs.begin(), inputs.end(), [&](const NamedValue& n) { return n.value == value_id; });
}

bool Graph::is_output(int value_id) const {
  return std::any_of(outputs.begin(), outputs.end(), [&](const NamedValue& n) { return n.value == value_id; });
}

void remap_refs(Arg& a, const std::map<int, int>& map) {
  if (a.kind == Arg::ValueRef)
    if (auto it = map.find(a.value); it != map.end()) a.value = it->second;
  for (auto& x : a.list) remap_refs(x, map);
}

void replace_uses(Graph& g, int from, int to) {
  const std::map<int, int> m{{from, to}};
  for (auto& n : g.nodes) {
    for (auto& a : n.args) remap_refs(a, m);
    for (auto& [k, a] : n.kwargs) remap_refs(a, m);
  }
  for (auto& o : g.outputs)
    if (o.value == from) o.value = to;
}

}  // namespace ka::graph
