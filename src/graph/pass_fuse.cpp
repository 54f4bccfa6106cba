// graph/pass_fuse.cpp — kernel groups, Inductor-like: reductions, normalisations (softmax, layer
// and group norm), layout and library ops each root a group; a pointwise or view node joins the
// group of its only consumer (so pointwise chains and broadcasts fold into the reduction, layout op
// or other pointwise op that reads them), else it roots a pointwise group of its own. Library ops
// never absorb producers (their prologue is the library's) but pointwise consumers stay separate
// epilogue groups for the code generator to merge where the library allows.
#include <algorithm>

#include "graph/ops.h"
#include "graph/passes.h"

namespace ka::graph {
namespace {

bool joins_consumer(OpKind k) { return k == OpKind::Pointwise || k == OpKind::View; }

bool absorbs_producers(OpKind k) {
  return k == OpKind::Pointwise || k == OpKind::View || k == OpKind::Reduction || k == OpKind::Normalization ||
         k == OpKind::Layout;
}

}  // namespace

std::vector<Group> fuse_groups(Graph& g, bool fuse) {
  const auto users = g.users();
  int next = 0;
  for (int i = static_cast<int>(g.nodes.size()) - 1; i >= 0; --i) {
    Node& n = g.nodes[static_cast<size_t>(i)];
    n.group = -1;
    if (n.dead) continue;
    const OpKind k = op_kind(n.op);
    if (fuse && joins_consumer(k) && n.outputs.size() == 1 && n.outputs[0] >= 0 && !g.is_output(n.outputs[0])) {
      const auto& u = users[static_cast<size_t>(n.outputs[0])];
      if (u.size() == 1) {
        const Node& c = g.nodes[static_cast<size_t>(u[0])];
        if (c.group >= 0 && absorbs_producers(op_kind(c.op))) {
          n.group = c.group;
          continue;
        }
      }
    }
    n.group = next++;
  }
  // Renumber in topological order of the first node and collect members.
  std::vector<int> renum(static_cast<size_t>(next), -1);
  std::vector<Group> groups;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    Node& n = g.nodes[i];
    if (n.dead) continue;
    int& r = renum[static_cast<size_t>(n.group)];
    if (r < 0) {
      r = static_cast<int>(groups.size());
      groups.push_back(Group{r, {}, -1, ""});
    }
    n.group = r;
    groups[static_cast<size_t>(r)].nodes.push_back(static_cast<int>(i));
  }
  // The root: the last node (the consumer all others flow into).
  for (auto& gr : groups) {
    gr.root = gr.nodes.back();
    gr.kind = op_kind_name(op_kind(g.nodes[static_cast<size_t>(gr.root)].op));
  }
  return groups;
}

}  // namespace ka::graph
