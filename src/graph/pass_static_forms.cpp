// graph/pass_static_forms.cpp — static forms of ops the CUDA backend's kernels do not take as they
// are, each computing exactly what the op does:
//   * index_put through one boolean mask of self's shape with a one-element value and no
//     accumulation (`t[mask] = c`, the nvfp4 quantisers' code tables) is where(mask, c, t): the
//     mask selects elements, it does not gather them, so no size depends on data;
//   * max and min over every element (`torch.max(t)`) are amax and amin over every dim.
#include <algorithm>

#include "graph/passes.h"

namespace ka::graph {
namespace {

bool one_element(const std::vector<Dim>& shape) {
  return std::all_of(shape.begin(), shape.end(), [](const Dim& d) { return d.constant() == 1; });
}

bool mask_fill_to_where(const Graph& g, Node& n) {
  if (n.op != "aten.index_put.default" && n.op != "aten.index_put_.default") return false;
  if (n.args.size() < 3 || n.args[0].kind != Arg::ValueRef || n.args[1].kind != Arg::List || n.args[1].list.size() != 1 ||
      n.args[1].list[0].kind != Arg::ValueRef || n.args[2].kind != Arg::ValueRef)
    return false;
  const Arg* acc = n.args.size() > 3 ? &n.args[3] : n.kwargs.count("accumulate") ? &n.kwargs.at("accumulate") : nullptr;
  if (acc && acc->kind == Arg::Bool && acc->i) return false;
  const Value& self = g.value(n.args[0].value);
  const Value& mask = g.value(n.args[1].list[0].value);
  const Value& val = g.value(n.args[2].value);
  if (mask.kind != Value::Tensor || mask.type.dtype != DType::boolean || mask.type.shape != self.type.shape) return false;
  if (val.kind != Value::Tensor || val.type.dtype != self.type.dtype || !one_element(val.type.shape) ||
      val.type.shape.size() > self.type.shape.size())
    return false;
  n.op = "aten.where.self";
  n.args = {n.args[1].list[0], n.args[2], n.args[0]};
  n.kwargs.clear();
  return true;
}

bool full_reduction_to_dims(const Graph& g, Node& n) {
  const bool mx = n.op == "aten.max.default", mn = n.op == "aten.min.default";
  if ((!mx && !mn) || n.args.size() != 1 || n.args[0].kind != Arg::ValueRef) return false;
  const size_t rank = g.value(n.args[0].value).type.shape.size();
  if (rank == 0) return false;
  Arg dims;
  dims.kind = Arg::List;
  for (size_t d = 0; d < rank; ++d) dims.list.push_back(Arg::of_int(static_cast<int64_t>(d)));
  Arg keep;
  keep.kind = Arg::Bool;
  keep.i = 0;
  n.op = mx ? "aten.amax.default" : "aten.amin.default";
  n.args = {n.args[0], dims, keep};
  return true;
}

}  // namespace

int static_forms(Graph& g) {
  int changed = 0;
  for (auto& n : g.nodes) {
    if (n.dead) continue;
    changed += mask_fill_to_where(g, n) || full_reduction_to_dims(g, n);
  }
  return changed;
}

}  // namespace ka::graph
