// graph/codegen_cuda.cpp — graph → CUDA C++ over the graph_cuda runtime: the plan (fusion groups;
// groups of views and creations only are virtual: never stored, recomputed by their readers), one
// step per stored group in root order (an elementwise kernel per stored output, a row kernel, or a
// GEMM whose operands are stored tensors, transposed or reshaped views of them, or materialised
// copies), copies into outputs that are inputs or repeated, the intermediates' arena (buffers of
// equal size reuse a slot once their last reader ran), and the host `run` binding axes and scalars.
#include "graph/codegen_cuda.h"

#include <fmt/format.h>

#include <algorithm>

#include "graph/codegen_host.h"
#include "graph/cuda_kernel.h"
#include "graph/dispatch.h"
#include "graph/ops.h"
#include "graph/passes.h"
#include "util/error.h"

namespace ka::graph {
namespace cuda {

int Plan::group_of(int v) const {
  const int p = producer(v);
  return p < 0 ? -1 : g->nodes.at(static_cast<size_t>(p)).group;
}

bool Plan::is_virtual(int v) const {
  const int gr = group_of(v);
  return gr >= 0 && virtual_group.at(static_cast<size_t>(gr));
}

}  // namespace cuda

namespace {

using namespace cuda;

struct WsBuf {
  std::string bytes;  // host expression
  int def = 0, last = 0;
};

struct Gen {
  const Graph& g;
  Plan plan;
  CudaCodegenOptions opt;
  std::string kernels, body;
  std::map<int, std::string> loc;  // stored value -> host pointer expression
  std::set<std::string> outputs_taken;
  std::map<int, std::string> alias_out;  // stored value -> the output that is a reshape of it
  std::map<int, int> alias_view;         // group of such a reshape -> the value it reshapes
  std::vector<WsBuf> ws;
  std::map<std::string, int> ws_index;  // "ka_w<k>" -> k
  int nk = 0, step = 0;

  explicit Gen(const Graph& graph) : g(graph) {}
  std::string new_ws(const Value& v);
  void read(const std::string& ptr);
  std::string store_loc(int v);
  void launch_kernel(Kernel& k, const std::string& name, const std::vector<std::string>& outs, bool row, const Node* root,
                     const std::vector<Dim>& shape);
  void ew_step(int v, const std::string& ptr, int group);
  void ew_step_as(int v, const Value& as, const std::string& ptr, int group);
  void row_step(const Group& gr);
  void gemm_step(const Group& gr);
  void scatter_step(const Group& gr);
  std::pair<std::string, bool> gemm_operand(int v);
  void output_copies();
};

std::string Gen::new_ws(const Value& v) {
  const int k = static_cast<int>(ws.size());
  ws.push_back({fmt::format("size_t({}) * {}", numel_expr(v.type.shape), std::max(1, dtype_bits(v.type.dtype) / 8)), step, step});
  const std::string name = fmt::format("ka_w{}", k);
  ws_index[name] = k;
  return name;
}

void Gen::read(const std::string& ptr) {
  if (auto it = ws_index.find(ptr); it != ws_index.end()) ws[static_cast<size_t>(it->second)].last = step;
}

// Where a group root's output goes: the graph output it is (first time), else a new buffer.
std::string Gen::store_loc(int v) {
  if (auto it = alias_out.find(v); it != alias_out.end() && !outputs_taken.count(it->second)) {
    outputs_taken.insert(it->second);
    return loc[v] = it->second + ".data";
  }
  for (const auto& o : g.outputs)
    if (o.value == v && !outputs_taken.count(o.name)) {
      outputs_taken.insert(o.name);
      return loc[v] = o.name + ".data";
    }
  return loc[v] = new_ws(g.value(v));
}

void Gen::launch_kernel(Kernel& k, const std::string& name, const std::vector<std::string>& outs, bool row, const Node* root,
                        const std::vector<Dim>& shape) {
  std::vector<std::string> ptrs = outs, numels;
  for (int l : k.leaves) {
    auto it = loc.find(l);
    if (it == loc.end()) throw Unlowered{"a value read before it is stored (" + std::to_string(l) + ")"};
    ptrs.push_back(it->second);
    read(it->second);
    numels.push_back(numel_expr(g.value(l).type.shape));
  }
  body += row ? row_launch(plan, name, *root, ptrs, numels) : ew_launch(plan, name, shape, ptrs, numels);
}

// An elementwise kernel storing value v (computed as in `group`; -1: only virtual values inline).
void Gen::ew_step(int v, const std::string& ptr, int group) { ew_step_as(v, g.value(v), ptr, group); }

// Value v (computed as in `group`) stored at `ptr` with the shape and dtype of `as`.
void Gen::ew_step_as(int v, const Value& as, const std::string& ptr, int group) {
  Kernel k;
  k.plan = &plan;
  k.group = group;
  const std::string f = k.fn(v);
  const std::string ns = fmt::format("kg{}", nk++);
  kernels += fmt::format("namespace {} {{\n{}{}}}  // namespace {}\n", ns, k.code, ew_kernel(k, "kern", EwOut{f, as.type.shape, as.type.dtype}), ns);
  read(ptr);
  launch_kernel(k, ns + "::kern", {ptr}, false, nullptr, as.type.shape);
}

void Gen::row_step(const Group& gr) {
  const Node& n = g.nodes[static_cast<size_t>(gr.root)];
  Kernel k;
  k.plan = &plan;
  k.group = gr.id;
  std::vector<std::string> outs;
  for (size_t o = 0; o < n.outputs.size() && o < 3; ++o) outs.push_back(n.outputs[o] < 0 ? "nullptr" : store_loc(n.outputs[o]));
  const std::string ns = fmt::format("kg{}", nk++);
  const std::string kern = row_kernel(k, "kern", n);
  while (static_cast<int>(outs.size()) < k.outputs) outs.push_back("nullptr");
  outs.resize(static_cast<size_t>(k.outputs));
  kernels += fmt::format("namespace {} {{\n{}{}}}  // namespace {}\n", ns, k.code, kern, ns);
  launch_kernel(k, ns + "::kern", outs, true, &n, {});
}

bool swaps_last_two(const Node& n, size_t rank) {
  const std::string b = op_base(n.op);
  if (rank < 2) return false;
  if (b == "t") return rank == 2;
  if (b == "transpose") {
    const auto d0 = norm_dim(n.args.at(1).i, rank), d1 = norm_dim(n.args.at(2).i, rank);
    return std::min(d0, d1) == static_cast<int>(rank) - 2 && std::max(d0, d1) == static_cast<int>(rank) - 1;
  }
  if (b != "permute") return false;
  const auto& p = n.args.at(1).list;
  for (size_t d = 0; d < rank; ++d) {
    const int want = d + 2 < rank ? static_cast<int>(d) : static_cast<int>(2 * rank - 3 - d);
    if (norm_dim(p.at(d).i, rank) != want) return false;
  }
  return true;
}

// A GEMM operand: a stored tensor, a stored tensor read transposed (its last two dims swapped by a
// virtual view) or reshaped (a virtual reshape of contiguous data), else a copy made here.
std::pair<std::string, bool> Gen::gemm_operand(int v) {
  if (auto it = loc.find(v); it != loc.end()) return {it->second, false};
  if (plan.is_virtual(v)) {
    const Node& n = g.nodes[static_cast<size_t>(plan.producer(v))];
    const std::string b = op_base(n.op);
    const int a = n.args.at(0).kind == Arg::ValueRef ? n.args[0].value : -1;
    if (a >= 0 && loc.count(a)) {
      if (swaps_last_two(n, g.value(v).type.shape.size())) return {loc[a], true};
      if (b == "view" || b == "_unsafe_view" || b == "reshape" || b == "unsqueeze" || b == "squeeze" || b == "alias" ||
          b == "detach")
        return {loc[a], false};
    }
  }
  const std::string p = new_ws(g.value(v));
  ew_step(v, p, -1);
  return {p, false};
}

std::string host_scalar(const Graph& g, const Node& n, const char* kw, size_t pos) {
  const Arg* a = nullptr;
  if (auto it = n.kwargs.find(kw); it != n.kwargs.end()) a = &it->second;
  else if (pos < n.args.size()) a = &n.args[pos];
  if (!a || a->kind == Arg::None) return "1.0";
  if (a->kind == Arg::Int) return fmt::format("{}.0", a->i);
  if (a->kind == Arg::Float) return fmt::format("{:.17g}", a->f);
  if (a->kind == Arg::ValueRef)
    for (const auto& in : g.inputs)
      if (in.value == a->value && g.value(a->value).kind == Value::Scalar) return fmt::format("static_cast<double>({})", in.name);
  throw Unlowered{n.op};
}

// A bias that holds one value per output column and repeats down the rows (shape [N], [1, N], ...).
bool is_row_bias(const std::vector<Dim>& bias, const std::vector<Dim>& out) {
  if (bias.empty() || out.empty() || bias.back().expr != out.back().expr) return false;
  for (size_t d = 0; d + 1 < bias.size(); ++d)
    if (bias[d].expr != "1") return false;
  return true;
}

void Gen::gemm_step(const Group& gr) {
  const Node& n = g.nodes[static_cast<size_t>(gr.root)];
  const std::string b = op_base(n.op);
  const bool add = b == "addmm" || b == "baddbmm";
  const int out = n.outputs.at(0);
  const Value& ov = g.value(out);
  const int av = n.args.at(add ? 1 : 0).value, bv = n.args.at(add ? 2 : 1).value;
  const std::string dst = store_loc(out);
  std::string beta = add ? host_scalar(g, n, "beta", 3) : "0.0";
  const std::string alpha = add ? host_scalar(g, n, "alpha", 4) : "1.0";
  std::string bias_ptr = "nullptr";
  if (add && (beta == "1.0" || beta == "1") && is_row_bias(g.value(n.args.at(0).value).type.shape, ov.type.shape)) {
    // one bias value per output column (F.linear's): cuBLASLt's bias epilogue, nothing to broadcast
    bias_ptr = gemm_operand(n.args.at(0).value).first;
    read(bias_ptr);
    beta = "0.0";
  } else if (add) {  // the bias broadcast into the output, then C = alpha * A·B + beta * C
    Kernel k;
    k.plan = &plan;
    k.group = -1;
    const int bias = n.args.at(0).value;
    const auto& bs = g.value(bias).type.shape;
    std::string fb = fmt::format("template <typename I, typename BB>\nKA_DEV {} fb(const Env& E, const BB& B, const I* i) {{\n  {};\n",
                                 ctype(ov.type.dtype), arr_decl("j", bs.size()));
    for (size_t d = 0; d < bs.size(); ++d)
      fb += fmt::format("  j[{}] = {};\n", d, bs[d].expr == "1" ? "I(0)" : fmt::format("i[{}]", ov.type.shape.size() - bs.size() + d));
    fb += fmt::format("  return static_cast<{}>({}(E, B, j));\n}}\n", ctype(ov.type.dtype), k.fn(bias));
    const std::string ns = fmt::format("kg{}", nk++);
    kernels += fmt::format("namespace {} {{\n{}{}{}}}  // namespace {}\n", ns, k.code, fb, ew_kernel(k, "kern", EwOut{"fb", ov.type.shape, ov.type.dtype}), ns);
    launch_kernel(k, ns + "::kern", {dst}, false, nullptr, ov.type.shape);
  }
  const auto [pa, ta] = gemm_operand(av);
  const auto [pb, tb] = gemm_operand(bv);
  read(pa), read(pb), read(dst);
  const auto& as = g.value(av).type.shape;
  const auto& bsh = g.value(bv).type.shape;
  const size_t r = as.size();
  const std::string batch = r == 3 ? fmt::format("int64_t({})", expr_cpp(as[0].expr)) : "int64_t(1)";
  body += fmt::format("  kgc::gemm(kgc::Gemm{{{}, {}, {}, {}, {}, {}, {}, int64_t({}), int64_t({}), int64_t({}), {}, {}, {}, {}}});\n",
                      dtcode(ov.type.dtype), pa, pb, dst, ta, tb, batch, expr_cpp(as[r - 2].expr), expr_cpp(bsh[r - 1].expr),
                      expr_cpp(as[r - 1].expr), alpha, beta, opt.tf32, bias_ptr);
}

// index_put, scatter_add, scatter: the output is a copy of self, then the values are stored (or
// added) at the indices.
void Gen::scatter_step(const Group& gr) {
  const Node& n = g.nodes[static_cast<size_t>(gr.root)];
  const int out = n.outputs.at(0);
  const Value& ov = g.value(out);
  const std::string dst = store_loc(out);
  ew_step_as(n.args.at(0).value, ov, dst, gr.id);
  Kernel k;
  k.plan = &plan;
  k.group = gr.id;
  const std::string fput = scatter_fn(k, n);
  const std::string ns = fmt::format("kg{}", nk++);
  const auto rshape = scatter_shape(g, n);
  kernels += fmt::format("namespace {} {{\n{}{}{}}}  // namespace {}\n", ns, k.code, fput, ew_kernel(k, "kern", EwOut{"fput", rshape, ov.type.dtype, false}), ns);
  launch_kernel(k, ns + "::kern", {dst}, false, nullptr, rshape);
}

void Gen::output_copies() {
  for (const auto& o : g.outputs) {
    if (outputs_taken.count(o.name)) continue;
    if (g.value(o.value).kind != Value::Tensor) throw Unlowered{"a scalar output"};
    outputs_taken.insert(o.name);
    ew_step(o.value, o.name + ".data", -1);
    ++step;
  }
}

bool gemm_supported(const Graph& g, const Node& n) {
  const std::string b = op_base(n.op);
  if (b != "mm" && b != "bmm" && b != "addmm" && b != "baddbmm") return false;
  const DType t = g.value(n.outputs.at(0)).type.dtype;
  if (t != DType::f32 && t != DType::f16 && t != DType::bf16 && t != DType::f64) return false;
  for (const auto& a : n.args)
    if (a.kind == Arg::ValueRef && g.value(a.value).kind == Value::Tensor && g.value(a.value).type.dtype != t) return false;
  return true;
}

bool node_lowers(const Graph& g, const Node& n) {
  for (const auto& a : n.args)
    for_each_ref(a, [&](int v) {
      if (g.value(v).kind == Value::Scalar && !scalar_ok(g, Arg::ref(v))) throw Unlowered{n.op};
    });
  switch (op_kind(n.op)) {
    case OpKind::Pointwise:
    case OpKind::View:
    case OpKind::Layout:
      if (is_scatter(n)) return scatter_supported(g, n);
      return expr_supported(g, n);
    case OpKind::Creation: return expr_supported(g, n);
    case OpKind::Reduction:
    case OpKind::Normalization: return row_supported(g, n);
    case OpKind::Library:
      return gemm_supported(g, n) || (op_base(n.op) == "cumsum" && row_supported(g, n)) || conv_supported(g, n);
    default: return false;
  }
}

void make_plan(Gen& gen, Graph& g, bool fuse) {
  gen.plan.g = &g;
  gen.plan.groups = fuse_groups(g, fuse);
  for (const auto& gr : gen.plan.groups) {
    bool virt = true;
    for (int i : gr.nodes) {
      const Node& n = g.nodes[static_cast<size_t>(i)];
      const OpKind k = op_kind(n.op);
      virt = virt && (k == OpKind::View || k == OpKind::Creation);
      for (int o : n.outputs) virt = virt && (o < 0 || !g.is_output(o));
    }
    gen.plan.virtual_group.push_back(virt);
  }
}

bool reshape_like(const std::string& b) {
  return b == "view" || b == "_unsafe_view" || b == "reshape" || b == "unsqueeze" || b == "squeeze" || b == "alias" ||
         b == "detach";
}

// An output that is only a reshape of a value some kernel or GEMM stores: that value is stored in
// the output's buffer (contiguous either way) and the reshape costs nothing.
void plan_output_aliases(Gen& gen) {
  const Graph& g = gen.g;
  for (const auto& o : g.outputs) {
    const int p = gen.plan.producer(o.value);
    if (p < 0) continue;
    const Node& n = g.nodes[static_cast<size_t>(p)];
    const Group& gr = gen.plan.groups[static_cast<size_t>(n.group)];
    if (!reshape_like(op_base(n.op)) || gr.nodes.size() != 1 || n.args.empty() || n.args[0].kind != Arg::ValueRef) continue;
    const int src = n.args[0].value, sp = gen.plan.producer(src);
    if (sp < 0 || gen.plan.is_virtual(src) || g.is_output(src) || gen.alias_out.count(src)) continue;
    const Node& sn = g.nodes[static_cast<size_t>(sp)];
    if (gen.plan.groups[static_cast<size_t>(sn.group)].root != sp) continue;
    int outs = 0;
    for (const auto& q : g.outputs) outs += q.value == o.value;
    if (outs != 1) continue;
    gen.alias_out[src] = o.name;
    gen.alias_view[n.group] = src;
  }
}

void run_steps(Gen& gen) {
  const Graph& g = gen.g;
  plan_output_aliases(gen);
  for (const auto& in : g.inputs)
    if (g.value(in.value).kind == Value::Tensor) gen.loc[in.value] = in.name + ".data";
  for (const auto& c : g.constants)
    if (g.value(c.value).kind == Value::Tensor) gen.loc[c.value] = fmt::format("ka_kc{}", c.value);
  std::vector<const Group*> order;
  for (const auto& gr : gen.plan.groups) order.push_back(&gr);
  std::sort(order.begin(), order.end(), [](const Group* a, const Group* b) { return a->root < b->root; });
  for (const Group* gr : order) {
    const Node& root = g.nodes[static_cast<size_t>(gr->root)];
    if (!node_lowers(g, root)) throw Unlowered{root.op};
    for (int i : gr->nodes)
      if (!node_lowers(g, g.nodes[static_cast<size_t>(i)])) throw Unlowered{g.nodes[static_cast<size_t>(i)].op};
    if (gen.plan.virtual_group[static_cast<size_t>(gr->id)]) continue;
    if (auto it = gen.alias_view.find(gr->id); it != gen.alias_view.end()) {  // stored in place already
      gen.loc[root.outputs.at(0)] = gen.loc.at(it->second);
      continue;
    }
    const OpKind k = op_kind(root.op);
    if (k == OpKind::Library && op_base(root.op) == "cumsum") gen.row_step(*gr);
    else if (k == OpKind::Library && op_base(root.op) == "convolution") gen.ew_step(root.outputs.at(0), gen.store_loc(root.outputs.at(0)), gr->id);
    else if (k == OpKind::Library) gen.gemm_step(*gr);
    else if (k == OpKind::Reduction || k == OpKind::Normalization) gen.row_step(*gr);
    else if (is_scatter(root)) gen.scatter_step(*gr);
    else
      for (int o : root.outputs)
        if (o >= 0) gen.ew_step(o, gen.store_loc(o), gr->id);
    ++gen.step;
  }
  gen.output_copies();
}

// The arena: buffers of equal byte expressions share a slot when their lifetimes do not overlap.
std::string emit_arena(const Gen& gen) {
  std::vector<int> slot_of(gen.ws.size(), -1);
  std::vector<std::string> slot_bytes;
  std::vector<int> slot_free_at;  // the step after which the slot's current buffer is dead
  for (size_t w = 0; w < gen.ws.size(); ++w) {
    const WsBuf& b = gen.ws[w];
    for (size_t s = 0; s < slot_bytes.size() && slot_of[w] < 0; ++s)
      if (slot_bytes[s] == b.bytes && slot_free_at[s] < b.def) slot_of[w] = static_cast<int>(s);
    if (slot_of[w] < 0) {
      slot_of[w] = static_cast<int>(slot_bytes.size());
      slot_bytes.push_back(b.bytes);
      slot_free_at.push_back(b.last);
    }
    slot_free_at[static_cast<size_t>(slot_of[w])] = b.last;
  }
  if (slot_bytes.empty()) return "";
  std::string s, total;
  for (size_t k = 0; k < slot_bytes.size(); ++k) {
    s += fmt::format("  const size_t ka_zb{} = kgc::align256({});\n", k, slot_bytes[k]);
    total += (k ? " + " : "") + fmt::format("ka_zb{}", k);
  }
  s += fmt::format("  char* const ka_ws = kgc::workspace({});\n  if (!ka_ws) return;\n", total);
  for (size_t k = 0; k < slot_bytes.size(); ++k)
    s += fmt::format("  char* const ka_sl{} = {};\n", k, k ? fmt::format("ka_sl{} + ka_zb{}", k - 1, k - 1) : "ka_ws");
  for (size_t w = 0; w < gen.ws.size(); ++w) s += fmt::format("  void* const ka_w{} = ka_sl{};\n", w, slot_of[w]);
  return s;
}

// struct Env (axes and float/bool scalar inputs, read by every kernel) and its initialisation.
std::pair<std::string, std::string> emit_env(const Graph& g, const std::vector<std::string>& axes) {
  std::string decl = "struct Env {\n  int64_t unused_ = 0;\n", init = "  Env ka_env{};\n";
  for (const auto& a : axes) decl += fmt::format("  int64_t ax_{} = 0;\n", a), init += fmt::format("  ka_env.ax_{0} = ax_{0};\n", a);
  for (const auto& in : g.inputs) {
    const Value& v = g.value(in.value);
    if (v.kind == Value::Scalar && (dtype_is_float(v.type.dtype) || v.type.dtype == DType::boolean))
      decl += fmt::format("  double s_{} = 0;\n", in.name), init += fmt::format("  ka_env.s_{0} = static_cast<double>({0});\n", in.name);
  }
  return {decl + "};\n", init};
}

std::string emit_constants(const Graph& g) {
  std::string s;
  for (const auto& c : g.constants) {
    if (g.value(c.value).kind != Value::Tensor) continue;
    std::string data;
    for (size_t i = 0; i < c.data.size(); ++i)
      data += (i ? "," : "") + (std::isfinite(c.data[i]) ? fmt::format("{:.17g}", c.data[i])
                                : std::isnan(c.data[i]) ? std::string("kgc::nan<double>()")
                                                        : std::string(c.data[i] > 0 ? "kgc::inf<double>()" : "-kgc::inf<double>()"));
    s += fmt::format("  static const double ka_kcd{0}[] = {{{1}}};\n  static const void* const ka_kc{0} = kgc::upload(ka_kcd{0}, {2});\n", c.value,
                     data.empty() ? "0" : data, std::max<size_t>(1, c.data.size()));
  }
  return s;
}

std::string generate(const Graph& g0, const CudaCodegenOptions& opt) {
  Graph g = g0;
  Gen gen(g);
  gen.opt = opt;
  make_plan(gen, g, opt.fuse);
  run_steps(gen);
  std::vector<std::string> axes;
  const std::string bind = emit_axes(g, &axes);
  const auto [env_decl, env_init] = emit_env(g, axes);
  std::string s = fmt::format("\n// ── generated by KernelArc's graph generator (CUDA backend) for {} ──\n", g.problem);
  s += env_decl + gen.kernels;
  s += fmt::format("\nvoid run({}) {{\n", run_params(g)) + bind + env_init + emit_constants(g) + emit_arena(gen) + gen.body;
  return s + "}\n";
}

}  // namespace

std::string emit_cuda(const Graph& g, const CudaCodegenOptions& opt) {
  try {
    return generate(g, opt);
  } catch (const Unlowered& u) {
    user_error("graph of '{}': no CUDA lowering for {}", g.problem, u.op);
  }
}

std::vector<std::string> cuda_ops_not_lowered(const Graph& g) {
  std::vector<std::string> out;
  for (const auto& n : g.nodes) {
    if (n.dead || std::find(out.begin(), out.end(), n.op) != out.end()) continue;
    bool ok = false;
    try {
      ok = node_lowers(g, n);
    } catch (const Unlowered&) {
      ok = false;
    }
    if (!ok) out.push_back(n.op);
  }
  if (!out.empty()) return out;
  try {
    generate(g, {});
  } catch (const Unlowered& u) {
    out.push_back(u.op);
  }
  return out;
}

}  // namespace ka::graph
