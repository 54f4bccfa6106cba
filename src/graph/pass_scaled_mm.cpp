// graph/pass_scaled_mm.cpp — `_scaled_mm` as ops every backend lowers, for a backend without fp8
// or fp4 GEMMs (the CUDA backend today): exact float32 operands, float32 accumulation as the
// low-precision GEMM does, then the scales, the bias and the conversion to out_dtype.
//   fp8:   both operands converted to float32; the scales (per tensor, per row of a, per column
//          of b) multiply the product.
//   nvfp4: each operand's bytes (fp4 pairs, even column in the low nibble) split into codes, the
//          codes looked up in the e2m1 table, times the 1×16 e4m3 scales read out of cuBLAS's
//          blocked layout (views of the 1-D scale tensor): the oracle's emulation, in graph ops
//          (src/oracle/kaoracle/scaled_mm.py). The fp4 values' type becomes uint8 (their bytes).
#include <fmt/format.h>

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

Arg int_list(const std::vector<int64_t>& v) {
  Arg a;
  a.kind = Arg::List;
  for (int64_t x : v) a.list.push_back(Arg::of_int(x));
  return a;
}

// A size as an argument: an int when it is a literal, else a symbolic int.
Arg dim_arg(const Dim& d) {
  if (auto c = d.constant()) return Arg::of_int(*c);
  Arg s;
  s.kind = Arg::Sym;
  s.s = d.expr;
  return s;
}

Arg dim_list(const std::vector<Dim>& v) {
  Arg a;
  a.kind = Arg::List;
  for (const auto& d : v) a.list.push_back(dim_arg(d));
  return a;
}

// Appends op(args) -> a new value of (dt, shape) to `nodes`; returns the value.
struct Emitter {
  Graph& g;
  std::vector<Node>& nodes;
  std::string source;
  int op(const std::string& name, std::vector<Arg> args, DType dt, std::vector<Dim> shape) {
    const int v = new_value(g, dt, std::move(shape));
    nodes.push_back(make_node(name, std::move(args), v, source));
    return v;
  }
  int view(int x, std::vector<Dim> shape) {
    return op("aten.view.default", {Arg::ref(x), dim_list(shape)}, g.value(x).type.dtype, shape);
  }
  int permute(int x, const std::vector<int64_t>& perm) {
    std::vector<Dim> s;
    for (int64_t p : perm) s.push_back(g.value(x).type.shape[static_cast<size_t>(p)]);
    return op("aten.permute.default", {Arg::ref(x), int_list(perm)}, g.value(x).type.dtype, s);
  }
  int convert(int x, DType dt) {
    const int v = new_value(g, dt, g.value(x).type.shape);
    nodes.push_back(to_dtype(x, v, dt, source));
    return v;
  }
};

Dim expr(const std::string& s) { return Dim{s, std::nullopt}; }

// The (rows, 2 * cols) float32 values of an (rows, cols) matrix of fp4 pairs (uint8 bytes) with its
// blocked 1×16 e4m3 scales.
int dequant_nvfp4(Emitter& e, int x, int scales, int table) {
  const Dim rows = e.g.value(x).type.shape.at(0), half = e.g.value(x).type.shape.at(1);
  const Dim k = expr(fmt::format("({}) * 2", half.expr)), blocks = expr(fmt::format("({}) // 8", half.expr));
  const int lo = e.op("aten.bitwise_and.Scalar", {Arg::ref(x), Arg::of_int(15)}, DType::u8, {rows, half});
  const int hi = e.op("aten.bitwise_right_shift.Tensor_Scalar", {Arg::ref(x), Arg::of_int(4)}, DType::u8, {rows, half});
  Arg pair;
  pair.kind = Arg::List;
  pair.list = {Arg::ref(lo), Arg::ref(hi)};
  const int both = e.op("aten.stack.default", {pair, Arg::of_int(-1)}, DType::u8, {rows, half, expr("2")});
  const int codes = e.convert(e.view(both, {rows, k}), DType::i64);
  Arg idx;
  idx.kind = Arg::List;
  idx.list = {Arg::ref(codes)};
  const int vals = e.op("aten.index.Tensor", {Arg::ref(table), idx}, DType::f32, {rows, k});
  // cuBLAS's blocked layout: 128×4 tiles of (row, block), each stored as 32×4×4 (lane, quarter, column).
  const Dim rt = expr(fmt::format("(({}) + 127) // 128", rows.expr)), ct = expr(fmt::format("(({}) + 3) // 4", blocks.expr));
  const Dim tiles = expr(fmt::format("({}) * ({})", rt.expr, ct.expr));
  int s = e.convert(scales, DType::f32);
  s = e.view(s, {tiles, expr("32"), expr("4"), expr("4")});
  s = e.permute(s, {0, 2, 1, 3});                      // (tile, quarter, lane, column)
  s = e.view(s, {rt, ct, expr("128"), expr("4")});
  s = e.permute(s, {0, 2, 1, 3});                      // (row tile, row, column tile, column)
  s = e.view(s, {expr(fmt::format("({}) * 128", rt.expr)), expr(fmt::format("({}) * 4", ct.expr))});
  s = e.op("aten.slice.Tensor", {Arg::ref(s), Arg::of_int(0), Arg::of_int(0), dim_arg(rows)}, DType::f32,
           {rows, expr(fmt::format("({}) * 4", ct.expr))});
  s = e.op("aten.slice.Tensor", {Arg::ref(s), Arg::of_int(1), Arg::of_int(0), dim_arg(blocks)}, DType::f32, {rows, blocks});
  const int s3 = e.view(s, {rows, blocks, expr("1")});
  const int v3 = e.view(vals, {rows, blocks, expr("16")});
  const int deq = e.op("aten.mul.Tensor", {Arg::ref(v3), Arg::ref(s3)}, DType::f32, {rows, blocks, expr("16")});
  return e.view(deq, {rows, k});
}

// The e2m1 code table as a graph constant.
int e2m1_table(Graph& g) {
  const int v = new_value(g, DType::f32, {Dim{"16", std::nullopt}});
  Constant c;
  c.value = v;
  c.data = {0, .5, 1, 1.5, 2, 3, 4, 6, -0.0, -.5, -1, -1.5, -2, -3, -4, -6};
  g.constants.push_back(c);
  return v;
}

// The nodes that replace one fp8 or nvfp4 _scaled_mm (its output value kept), or {} when it is not one.
std::vector<Node> expand(Graph& g, const Node& n) {
  if (op_base(n.op) != "_scaled_mm" || n.args.size() < 4 || n.outputs.size() != 1) return {};
  for (int i = 0; i < 4; ++i)
    if (n.args[static_cast<size_t>(i)].kind != Arg::ValueRef) return {};
  const int a = n.args[0].value, b = n.args[1].value, sa = n.args[2].value, sb = n.args[3].value, out = n.outputs[0];
  const bool fp4 = g.value(a).type.dtype == DType::u8 && g.value(b).type.dtype == DType::u8;  // retyped by expand_scaled_mm
  if (!fp4 && (!is_fp8(g.value(a).type.dtype) || !is_fp8(g.value(b).type.dtype))) return {};
  const Arg* bias = n.args.size() > 4 && n.args[4].kind == Arg::ValueRef ? &n.args[4] : nullptr;
  if (auto it = n.kwargs.find("bias"); it != n.kwargs.end() && it->second.kind == Arg::ValueRef) bias = &it->second;
  if (auto it = n.kwargs.find("scale_result"); it != n.kwargs.end() && it->second.kind != Arg::None) return {};
  const std::vector<Dim> oshape = g.value(out).type.shape;
  const DType odt = g.value(out).type.dtype;
  std::vector<Node> nodes;
  Emitter e{g, nodes, n.source};
  int a32, b32;
  std::vector<int> terms;
  if (fp4) {
    const int table = e2m1_table(g);
    a32 = dequant_nvfp4(e, a, sa, table);
    b32 = e.permute(dequant_nvfp4(e, e.permute(b, {1, 0}), sb, table), {1, 0});
  } else {
    a32 = e.convert(a, DType::f32);
    b32 = e.convert(b, DType::f32);
    terms = {sa, sb};
  }
  int cur = new_value(g, DType::f32, oshape);
  nodes.push_back(make_node("aten.mm.default", {Arg::ref(a32), Arg::ref(b32)}, cur, n.source));
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

// fp4 pair values become their bytes (uint8) where every node touching them is a view or a
// _scaled_mm; returns whether any did.
bool fp4_as_bytes(Graph& g) {
  std::vector<int> fp4;
  for (const auto& v : g.values)
    if (v.kind == Value::Tensor && v.type.dtype == DType::f4_e2m1fn_x2) fp4.push_back(v.id);
  if (fp4.empty()) return false;
  for (const auto& n : g.nodes) {
    if (n.dead) continue;
    bool touches = false;
    for (int v : g.node_inputs(n)) touches = touches || g.value(v).type.dtype == DType::f4_e2m1fn_x2;
    for (int o : n.outputs) touches = touches || (o >= 0 && g.value(o).type.dtype == DType::f4_e2m1fn_x2);
    if (touches && op_kind(n.op) != OpKind::View && op_base(n.op) != "_scaled_mm") return false;
  }
  for (int v : fp4) g.value(v).type.dtype = DType::u8;
  return true;
}

int expand_scaled_mm(Graph& g) {
  fp4_as_bytes(g);
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
