// graph/pass_scaled_mm.cpp — fp8 `_scaled_mm` as ops every backend lowers: both operands converted
// to float32, their product, the scales multiplied in (per tensor, per row of a or per column of
// b, as torch allows), the bias added, the result converted to out_dtype. For a backend without
// fp8 GEMMs (the CUDA backend today): exact operands, float32 accumulation as the fp8 GEMM does.
#include "graph/ops.h"
#include "graph/passes.h"

namespace ka::graph {
namespace {

bool is_fp8(DType t) { return t == DType::f8_e4m3fn || t == DType::f8_e5m2; }

int new_value(Graph& g, DType dt, std::vector<Dim> shape) {
  Value v;
  v.kind = Value::Tensor;
  v.id = static_cast<int>(g.values.size());
  v.type.dtype = dt;
  v.type.shape = std::move(shape);
  g.values.push_back(v);
  return v.id;
}

Node make_node(const std::string& op, std::vector<Arg> args, int out, const std::string& source) {
  Node n;
  n.op = op;
  n.args = std::move(args);
  n.outputs = {out};
  n.source = source;
  return n;
}

Node to_dtype(int in, int out, DType dt, const std::string& source) {
  Node n = make_node("aten._to_copy.default", {Arg::ref(in)}, out, source);
  Arg d;
  d.kind = Arg::DTypeArg;
  d.dtype = dt;
  n.kwargs["dtype"] = d;
  return n;
}

// The nodes that replace one fp8 _scaled_mm (its output value kept), or {} when it is not one.
std::vector<Node> expand(Graph& g, const Node& n) {
  if (op_base(n.op) != "_scaled_mm" || n.args.size() < 4 || n.outputs.size() != 1) return {};
  for (int i = 0; i < 4; ++i)
    if (n.args[static_cast<size_t>(i)].kind != Arg::ValueRef) return {};
  const int a = n.args[0].value, b = n.args[1].value, sa = n.args[2].value, sb = n.args[3].value, out = n.outputs[0];
  if (!is_fp8(g.value(a).type.dtype) || !is_fp8(g.value(b).type.dtype)) return {};
  const Arg* bias = n.args.size() > 4 && n.args[4].kind == Arg::ValueRef ? &n.args[4] : nullptr;
  if (auto it = n.kwargs.find("bias"); it != n.kwargs.end() && it->second.kind == Arg::ValueRef) bias = &it->second;
  if (auto it = n.kwargs.find("scale_result"); it != n.kwargs.end() && it->second.kind != Arg::None) return {};
  const std::vector<Dim> oshape = g.value(out).type.shape;
  const DType odt = g.value(out).type.dtype;
  std::vector<Node> nodes;
  const int a32 = new_value(g, DType::f32, g.value(a).type.shape), b32 = new_value(g, DType::f32, g.value(b).type.shape);
  nodes.push_back(to_dtype(a, a32, DType::f32, n.source));
  nodes.push_back(to_dtype(b, b32, DType::f32, n.source));
  int cur = new_value(g, DType::f32, oshape);
  nodes.push_back(make_node("aten.mm.default", {Arg::ref(a32), Arg::ref(b32)}, cur, n.source));
  std::vector<int> terms{sa, sb};
  for (int s : terms) {
    const int next = new_value(g, DType::f32, oshape);
    nodes.push_back(make_node("aten.mul.Tensor", {Arg::ref(cur), Arg::ref(s)}, next, n.source));
    cur = next;
  }
  if (bias) {
    const int next = new_value(g, DType::f32, oshape);
    nodes.push_back(make_node("aten.add.Tensor", {Arg::ref(cur), Arg::ref(bias->value)}, next, n.source));
    cur = next;
  }
  nodes.push_back(to_dtype(cur, out, odt, n.source));
  return nodes;
}

}  // namespace

int expand_scaled_mm(Graph& g) {
  std::vector<Node> nodes;
  int changed = 0;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node n = g.nodes[i];  // a copy: expand() grows g.values, not g.nodes
    std::vector<Node> repl = n.dead ? std::vector<Node>{} : expand(g, n);
    if (repl.empty()) {
      nodes.push_back(n);
      continue;
    }
    ++changed;
    for (auto& r : repl) nodes.push_back(std::move(r));
  }
  if (changed) {
    g.nodes = std::move(nodes);
    for (auto& v : g.values) v.producer = -1;
    for (size_t i = 0; i < g.nodes.size(); ++i)
      for (int o : g.nodes[i].outputs)
        if (o >= 0) g.value(o).producer = static_cast<int>(i);
  }
  return changed;
}

}  // namespace ka::graph
