// graph/pass_static_forms.cpp — static forms of ops the CUDA backend's kernels do not take as they
// are, each computing exactly what the op does:
//   * index_put through one boolean mask of self's shape with a one-element value and no
//     accumulation (`t[mask] = c`, the nvfp4 quantisers' code tables) is where(mask, c, t): the
//     mask selects elements, it does not gather them, so no size depends on data;
//   * max and min over every element (`torch.max(t)`) are amax and amin over every dim.
#include "graph/passes.h"

namespace ka::graph {
namespace {

bool same_shape(const std::vector<Dim>& a, const std::vector<Dim>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i].expr != b[i].expr) return false;
  return true;
}

int64_t numel_if_constant(const std::vector<Dim>& shape) {
  int64_t n = 1;
  for (const auto& d : shape) {
    auto c = d.constant();
    if (!c) return -1;
    n *= *c;
  }
  return n;
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
  if (mask.kind != Value::Tensor || mask.type.dtype != DType::boolean || !same_shape(mask.type.shape, self.type.shape)) return false;
  if (val.kind != Value::Tensor || val.type.dtype != self.type.dtype || numel_if_constant(val.type.shape) != 1 ||
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
