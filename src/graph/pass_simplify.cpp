// graph/pass_simplify.cpp — removes what computes nothing: exported assertions, identity ops
// (aliases and copies of the same dtype, views and expands to the same shape, identity permutes,
// x*1, x+0) and nodes no output depends on.
#include <algorithm>

#include "graph/ops.h"
#include "graph/passes.h"

namespace ka::graph {
namespace {

bool same_type(const Graph& g, int a, int b) {
  const Value& x = g.value(a);
  const Value& y = g.value(b);
  return x.kind == Value::Tensor && y.kind == Value::Tensor && x.type.dtype == y.type.dtype &&
         x.type.shape == y.type.shape;
}

bool is_number(const Arg& a, double v) {
  return (a.kind == Arg::Int && a.i == static_cast<int64_t>(v) && static_cast<double>(a.i) == v) ||
         (a.kind == Arg::Float && a.f == v);
}

bool identity_perm(const Arg& a) {
  for (size_t i = 0; i < a.list.size(); ++i)
    if (a.list[i].kind != Arg::Int || a.list[i].i != static_cast<int64_t>(i)) return false;
  return true;
}

// The input value a node merely passes through, or -1.
int passthrough(const Graph& g, const Node& n) {
  if (n.outputs.size() != 1 || n.outputs[0] < 0 || n.args.empty() || n.args[0].kind != Arg::ValueRef) return -1;
  const int in = n.args[0].value, out = n.outputs[0];
  const std::string b = op_base(n.op);
  if (!same_type(g, in, out)) return -1;
  if (b == "alias" || b == "detach" || b == "lift_fresh_copy" || b == "clone" || b == "contiguous" || b == "_to_copy" ||
      b == "convert_element_type" || b == "view" || b == "_unsafe_view" || b == "reshape" || b == "expand")
    return in;
  if (b == "permute" && n.args.size() > 1 && identity_perm(n.args[1])) return in;
  if (n.args.size() > 1 && ((b == "mul" || b == "div") && is_number(n.args[1], 1.0))) return in;
  if (n.args.size() > 1 && ((b == "add" || b == "sub") && is_number(n.args[1], 0.0)) && !n.kwargs.count("alpha")) return in;
  return -1;
}

int remove_dead(Graph& g) {
  int removed = 0;
  auto users = g.users();
  for (int i = static_cast<int>(g.nodes.size()) - 1; i >= 0; --i) {
    Node& n = g.nodes[static_cast<size_t>(i)];
    if (n.dead) continue;
    bool used = false;
    for (int o : n.outputs)
      if (o >= 0 && (!users[static_cast<size_t>(o)].empty() || g.is_output(o))) used = true;
    if (used) continue;
    n.dead = true;
    ++removed;
    for (int v : g.node_inputs(n)) {
      auto& u = users[static_cast<size_t>(v)];
      u.erase(std::remove(u.begin(), u.end(), i), u.end());
    }
  }
  return removed;
}

}  // namespace

int simplify(Graph& g) {
  int changed = 0;
  for (auto& n : g.nodes) {
    if (n.dead) continue;
    if (op_kind(n.op) == OpKind::NoOp) {
      n.dead = true;
      ++changed;
      continue;
    }
    const int in = passthrough(g, n);
    if (in < 0) continue;
    // A graph input or output keeps its own value when both ends are definition tensors.
    if (g.is_output(n.outputs[0]) && (g.is_input(in) || g.is_output(in))) continue;
    replace_uses(g, n.outputs[0], in);
    n.dead = true;
    ++changed;
  }
  return changed + remove_dead(g);
}

}  // namespace ka::graph
