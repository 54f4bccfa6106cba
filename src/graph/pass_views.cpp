// graph/pass_views.cpp — view/permute folding: a reshape of a reshape reads the original tensor
// (one reshape), a permute of a permute becomes one composed permute, and an unsqueeze/squeeze
// feeding a reshape is absorbed by it. The intermediate views die in the next simplify.
#include "graph/ops.h"
#include "graph/passes.h"

namespace ka::graph {
namespace {

bool is_reshape(const std::string& b) {
  return b == "view" || b == "_unsafe_view" || b == "reshape" || b == "unsqueeze" || b == "squeeze";
}

// The producing node of a value when it is a live node with op base `pred`, else nullptr.
const Node* producer_if(const Graph& g, int v, bool (*pred)(const std::string&)) {
  const Value& val = g.value(v);
  if (val.producer < 0) return nullptr;
  const Node& p = g.nodes[static_cast<size_t>(val.producer)];
  return (!p.dead && pred(op_base(p.op))) ? &p : nullptr;
}

bool is_permute(const std::string& b) { return b == "permute"; }

}  // namespace

int fold_views(Graph& g) {
  int changed = 0;
  for (auto& n : g.nodes) {
    if (n.dead || n.args.empty() || n.args[0].kind != Arg::ValueRef) continue;
    const std::string b = op_base(n.op);
    if (b == "view" || b == "_unsafe_view" || b == "reshape") {
      // reshape(reshape(x)) -> reshape(x): the target shape alone decides a contiguous reshape.
      if (const Node* p = producer_if(g, n.args[0].value, is_reshape); p && !p->args.empty() && p->args[0].kind == Arg::ValueRef) {
        n.args[0].value = p->args[0].value;
        n.op = "aten.reshape.default";
        ++changed;
      }
    } else if (b == "permute" && n.args.size() > 1) {
      const Node* p = producer_if(g, n.args[0].value, is_permute);
      if (!p || p->args.size() < 2 || p->args[1].list.size() != n.args[1].list.size()) continue;
      Arg composed = n.args[1];
      const size_t rank = composed.list.size();
      bool ok = true;
      for (size_t i = 0; i < rank && ok; ++i) {
        int64_t d = n.args[1].list[i].i;
        if (d < 0) d += static_cast<int64_t>(rank);
        if (d < 0 || static_cast<size_t>(d) >= rank) { ok = false; break; }
        composed.list[i] = p->args[1].list[static_cast<size_t>(d)];
      }
      if (!ok) continue;
      n.args[0].value = p->args[0].value;
      n.args[1] = composed;
      ++changed;
    }
  }
  return changed;
}

}  // namespace ka::graph
