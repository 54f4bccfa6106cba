// graph/cuda_kernels.cpp — the CUDA backend's kernels and their host launches: elementwise
// kernels (THREADS threads, EPT elements per thread per block step, grid-stride; the coordinate of
// each output element from its linear index) and row kernels (RTHREADS threads per row, ROWS rows
// per block, the rows grid-strided block-uniformly so every thread meets every barrier) for
// reductions (sum, mean, amax, amin, var, any, all, logsumexp), softmax / log-softmax and layer and
// group norm, accumulating in fp32 on the device layer's warp and block reductions. Index
// arithmetic is 32-bit when every extent fits (the host picks the instantiation), else 64-bit.
#include <fmt/format.h>

#include "graph/codegen_host.h"
#include "graph/cuda_kernel.h"
#include "graph/ops.h"

namespace ka::graph::cuda {

std::string ctype(DType t) {
  if (t == DType::f64) return "double";
  if (t == DType::boolean) return "bool";
  if (dtype_is_float(t)) return "float";
  return "int64_t";
}

std::string dtcode(DType t) {
  static const char* names[] = {"kFloat64", "kFloat32", "kFloat16", "kBFloat16", "kFloat8E4M3fn", "kFloat8E5M2", "kFloat4E2M1",
                                "kFloat4E2M1fnX2", "kInt64", "kInt32", "kInt16", "kInt8", "kUInt8", "kBool"};
  return std::string("ka::") + names[static_cast<int>(t)];
}

std::string dim_expr(const Dim& d) { return fmt::format("static_cast<I>({})", expr_cpp(d.expr, "E.ax_", "kg::i")); }

std::string numel_expr(const std::vector<Dim>& shape, const std::string& type) {
  std::string s = type + "(1)";
  for (const auto& d : shape) s += fmt::format(" * {}({})", type, expr_cpp(d.expr));
  return s;
}

std::string lin_expr(const std::string& c, const std::vector<Dim>& shape) {
  if (shape.empty()) return "I(0)";
  std::string s = fmt::format("{}[0]", c);
  for (size_t d = 1; d < shape.size(); ++d) s = fmt::format("({}) * {} + {}[{}]", s, dim_expr(shape[d]), c, d);
  return s;
}

std::string delin_stmt(const std::string& idx, const std::string& out, const std::vector<Dim>& shape) {
  if (shape.empty()) return "";
  std::string s = fmt::format("  {{\n    I r_ = {};\n", idx);
  for (size_t d = shape.size(); d-- > 1;) s += fmt::format("    {0}[{1}] = r_ % {2};\n    r_ /= {2};\n", out, d, dim_expr(shape[d]));
  return s + fmt::format("    {}[0] = r_;\n  }}\n", out);
}

std::string arr_decl(const std::string& name, size_t rank) { return fmt::format("I {}[{}]", name, rank ? rank : 1); }

int norm_dim(int64_t d, size_t rank) {
  const int64_t r = static_cast<int64_t>(rank);
  return static_cast<int>(d < 0 ? d + (r ? r : 1) : d);
}

bool scalar_ok(const Graph& g, const Arg& a) {
  if (a.kind != Arg::ValueRef) return a.kind == Arg::Int || a.kind == Arg::Float || a.kind == Arg::Bool || a.kind == Arg::Sym || a.kind == Arg::None;
  const Value& v = g.value(a.value);
  return v.kind == Value::Tensor || g.is_input(a.value) || g.constant(a.value);
}

std::string scalar_arg(const Graph& g, const Arg& a, const std::string& T) {
  switch (a.kind) {
    case Arg::None: return "";
    case Arg::Int: return fmt::format("static_cast<{}>({}LL)", T, a.i);
    case Arg::Bool: return fmt::format("static_cast<{}>({})", T, a.i ? "true" : "false");
    case Arg::Sym: return fmt::format("static_cast<{}>({})", T, expr_cpp(a.s, "E.ax_", "kg::i"));
    case Arg::Float:
      if (std::isnan(a.f)) return fmt::format("kgc::nan<{}>()", T == "bool" ? "float" : T);
      if (std::isinf(a.f)) return fmt::format("static_cast<{}>({}kgc::inf<double>())", T, a.f < 0 ? "-" : "");
      return fmt::format("static_cast<{}>({:.17g})", T, a.f);
    case Arg::ValueRef: {
      const Value& v = g.value(a.value);
      if (const Constant* c = g.constant(a.value); c && v.kind == Value::Scalar)
        return fmt::format("static_cast<{}>({:.17g})", T, c->data.empty() ? 0.0 : c->data[0]);
      for (const auto& in : g.inputs)
        if (in.value == a.value && v.kind == Value::Scalar)
          return fmt::format("static_cast<{}>(E.{}{})", T, dtype_is_float(v.type.dtype) || v.type.dtype == DType::boolean ? "s_" : "ax_",
                             in.name);
      throw Unlowered{v.producer >= 0 ? g.nodes[static_cast<size_t>(v.producer)].op : "a computed scalar"};
    }
    default: throw Unlowered{"an argument of kind " + std::to_string(static_cast<int>(a.kind))};
  }
}

// ── elementwise ──

std::string ew_kernel(Kernel& k, const std::string& name, const EwOut& out) {
  k.outputs = 1;
  std::string body = fmt::format("      {{\n        {};\n", arr_decl("i", out.shape.size()));
  body += delin_stmt("idx", "i", out.shape);
  body += out.store ? fmt::format("        kgc::st<{}>(B.p[0], idx, {}(E, B, i));\n      }}\n", dtcode(out.dtype), out.fn)
                    : fmt::format("        {}(E, B, i);\n      }}\n", out.fn);
  return fmt::format(
      "template <typename I, typename BB>\n__global__ void __launch_bounds__(KA_THREADS) {}(Env E, BB B, I n) {{\n"
      "  constexpr int kT = KA_THREADS, kE = KA_EPT;\n"
      "  for (I base = static_cast<I>(blockIdx.x) * (kT * kE); base < n; base += static_cast<I>(gridDim.x) * (kT * kE)) {{\n"
      "#pragma unroll\n    for (int e = 0; e < kE; ++e) {{\n"
      "      const I idx = base + static_cast<I>(e * kT) + static_cast<I>(threadIdx.x);\n      if (idx >= n) break;\n{}"
      "    }}\n  }}\n}}\n",
      name, body);
}

namespace {

std::string buf_init(const std::vector<std::string>& ptrs) {
  std::string s;
  for (const auto& p : ptrs) s += (s.empty() ? "" : ", ") + fmt::format("(void*)({})", p);
  return fmt::format("kgc::Buf<{}> ka_buf{{{{{}}}}};", ptrs.size(), s);
}

std::string launch_pair(const std::string& name, size_t nbuf, const std::string& fits, const std::string& grid, const std::string& block,
                        const std::string& smem, const std::string& args32, const std::string& args64) {
  return fmt::format(
      "      if ({fits}) {{\n        auto* ka_kf = &{name}<int32_t, kgc::Buf<{n}>>;\n        KA_LAUNCH(ka_kf, dim3({grid}), dim3({block}), {smem}, ka_env, ka_buf, {a32});\n"
      "      }} else {{\n        auto* ka_kf = &{name}<int64_t, kgc::Buf<{n}>>;\n        KA_LAUNCH(ka_kf, dim3({grid}), dim3({block}), {smem}, ka_env, ka_buf, {a64});\n      }}\n",
      fmt::arg("fits", fits), fmt::arg("name", name), fmt::arg("n", nbuf), fmt::arg("grid", grid), fmt::arg("block", block),
      fmt::arg("smem", smem), fmt::arg("a32", args32), fmt::arg("a64", args64));
}

std::string fits_list(const std::string& first, const std::vector<std::string>& more) {
  std::string s = "kgc::fits32({" + first;
  for (const auto& m : more) s += ", " + m;
  return s + "})";
}

}  // namespace

std::string ew_launch(const Plan&, const std::string& name, const std::vector<Dim>& shape, const std::vector<std::string>& ptrs,
                      const std::vector<std::string>& leaf_numels) {
  const std::string n = numel_expr(shape);
  std::string s = fmt::format("  {{\n    const int64_t ka_n = {};\n    if (ka_n > 0) {{\n      {}\n", n, buf_init(ptrs));
  s += "      const unsigned ka_grid = kgc::grid_for(ka_n, KA_THREADS * KA_EPT);\n";
  s += launch_pair(name, ptrs.size(), fits_list("ka_n + int64_t(ka_grid) * KA_THREADS * KA_EPT", leaf_numels), "ka_grid", "KA_THREADS", "0",
                   "static_cast<int32_t>(ka_n)", "ka_n");
  return s + "    }\n  }\n";
}

// ── row kernels ──

namespace {

struct RowSpec {
  int in = -1;                     // the value reduced / normalised
  std::vector<int> kept, reduced;  // dims of its shape (partition mode)
  bool flat = false;               // flat mode: element (row, j) is linear index row * len + j
};

std::vector<int> reduce_dims(const Node& n, size_t rank) {
  std::vector<int> dims;
  const std::string b = op_base(n.op);
  const Arg* a = n.args.size() > 1 ? &n.args[1] : nullptr;
  if (auto it = n.kwargs.find("dim"); it != n.kwargs.end()) a = &it->second;
  if (b == "_softmax" || b == "_log_softmax" || b == "_safe_softmax") dims.push_back(norm_dim(a ? a->i : -1, rank));
  else if (a && a->kind == Arg::Int) dims.push_back(norm_dim(a->i, rank));
  else if (a && a->kind == Arg::List)
    for (const auto& x : a->list) dims.push_back(norm_dim(x.i, rank));
  if (dims.empty())
    for (size_t d = 0; d < rank; ++d) dims.push_back(static_cast<int>(d));
  std::sort(dims.begin(), dims.end());
  dims.erase(std::unique(dims.begin(), dims.end()), dims.end());
  return dims;
}

RowSpec row_spec(const Graph& g, const Node& n) {
  RowSpec r;
  r.in = n.args.at(0).value;
  const auto& shape = g.value(r.in).type.shape;
  const std::string b = op_base(n.op);
  if (b == "native_layer_norm" || b == "native_group_norm") {
    r.flat = true;
    return r;
  }
  const auto red = reduce_dims(n, shape.size());
  for (size_t d = 0; d < shape.size(); ++d)
    (std::find(red.begin(), red.end(), static_cast<int>(d)) != red.end() ? r.reduced : r.kept).push_back(static_cast<int>(d));
  return r;
}

std::string coords_lambda(const Graph& g, const RowSpec& r) {
  const auto& shape = g.value(r.in).type.shape;
  std::string s = "    auto at = [&](I jj, I* c) {\n";
  if (r.flat) return s + "      const I f_ = row * len + jj;\n" + delin_stmt("f_", "c", shape) + "    };\n";
  auto split = [&](const std::string& idx, const std::vector<int>& dims) {
    if (dims.empty()) return std::string();
    std::string t = fmt::format("      {{\n        I r_ = {};\n", idx);
    for (size_t q = dims.size(); q-- > 1;)
      t += fmt::format("        c[{0}] = r_ % {1};\n        r_ /= {1};\n", dims[q], dim_expr(shape[static_cast<size_t>(dims[q])]));
    return t + fmt::format("        c[{}] = r_;\n      }}\n", dims[0]);
  };
  return s + split("row", r.kept) + split("jj", r.reduced) + "    };\n";
}

const char* kRowHead =
    "template <typename I, typename BB>\n__global__ void __launch_bounds__(KA_RTHREADS * KA_ROWS) {name}(Env E, BB B, I rows, I len) {{\n"
    "  constexpr int kRT = KA_RTHREADS, kRows = KA_ROWS;\n  KA_DYN_SMEM(smem);\n  float* red = reinterpret_cast<float*>(smem);\n"
    "  const int lane = static_cast<int>(threadIdx.x) % kRT, sub = static_cast<int>(threadIdx.x) / kRT;\n"
    "  for (I grp = static_cast<I>(blockIdx.x); grp * kRows < rows; grp += static_cast<I>(gridDim.x)) {{\n"
    "    const I row = grp * kRows + sub;\n    const bool live = row < rows;\n    (void)len;\n";

// A pass over the row: `init` accumulator, `step` folds X(jj) into acc, reduced by kgc::row_<red>.
std::string row_pass(const std::string& acc, const std::string& init, const std::string& step, const char* red) {
  return fmt::format(
      "    float {0} = {1};\n    if (live)\n      for (I jj = static_cast<I>(lane); jj < len; jj += kRT) {{\n        const float x = X(jj);\n"
      "        {2};\n      }}\n    {0} = kgc::row_{3}<kRT>({0}, red, sub);\n",
      acc, init, step, red);
}

std::string reduction_body(const Node& n, const Value& out) {
  const std::string b = op_base(n.op), DT = dtcode(out.type.dtype);
  std::string s, result = "acc";
  if (b == "sum" || b == "mean") {
    s = row_pass("acc", "0.f", "acc += x", "sum");
    if (b == "mean") result = "acc / static_cast<float>(len)";
  } else if (b == "amax" || b == "amin") {
    s = row_pass("acc", b == "amax" ? "-kgc::inf<float>()" : "kgc::inf<float>()", b == "amax" ? "acc = fmaxf(acc, x)" : "acc = fminf(acc, x)",
                 b == "amax" ? "max" : "min");
  } else if (b == "any" || b == "all") {
    s = row_pass("acc", b == "any" ? "0.f" : "1.f", b == "any" ? "acc = fmaxf(acc, x != 0.f ? 1.f : 0.f)" : "acc = fminf(acc, x != 0.f ? 1.f : 0.f)",
                 b == "any" ? "max" : "min");
    result = "acc != 0.f";
  } else if (b == "logsumexp") {
    s = row_pass("m", "-kgc::inf<float>()", "m = fmaxf(m, x)", "max");
    s += row_pass("acc", "0.f", "acc += expf(x - m)", "sum");
    result = "m + logf(acc)";
  } else {  // var
    const auto it = n.kwargs.find("correction");
    const double corr = it != n.kwargs.end() && it->second.kind != Arg::None ? (it->second.kind == Arg::Float ? it->second.f : static_cast<double>(it->second.i)) : 1.0;
    s = row_pass("mu", "0.f", "mu += x", "sum") + "    mu /= static_cast<float>(len);\n";
    s += row_pass("acc", "0.f", "acc += (x - mu) * (x - mu)", "sum");
    result = fmt::format("acc / fmaxf(static_cast<float>(len) - static_cast<float>({:.17g}), 0.f)", corr);
  }
  return s + fmt::format("    if (live && lane == 0) kgc::st<{}>(B.p[0], row, kgc::rnd<{}>({}));\n", DT, DT, result);
}

std::string softmax_body(const Graph& g, const Node& n, const Value& out, const RowSpec& r) {
  const std::string b = op_base(n.op), DT = dtcode(out.type.dtype);
  std::string s = row_pass("m", "-kgc::inf<float>()", "m = fmaxf(m, x)", "max");
  s += row_pass("acc", "0.f", "acc += expf(x - m)", "sum");
  const std::string y = b == "_log_softmax" ? "x - m - logf(acc)"
                        : b == "_safe_softmax" ? "(m == -kgc::inf<float>() ? 0.f : expf(x - m) / acc)"
                                               : "expf(x - m) / acc";
  s += fmt::format("    if (live)\n      for (I jj = static_cast<I>(lane); jj < len; jj += kRT) {{\n        {};\n        at(jj, c);\n",
                   arr_decl("c", g.value(r.in).type.shape.size()));
  return s + fmt::format("        const float x = X(jj);\n        kgc::st<{}>(B.p[0], {}, kgc::rnd<{}>({}));\n      }}\n", DT, lin_expr("c", out.type.shape), DT, y);
}

// cumsum: one thread per row adds along it in fp32, storing each prefix rounded to the output dtype.
std::string scan_body(const Graph& g, const Value& out, const RowSpec& r) {
  const std::string DT = dtcode(out.type.dtype);
  return fmt::format(
      "    if (live && lane == 0) {{\n      float acc = 0.f;\n      for (I jj = 0; jj < len; ++jj) {{\n        {};\n        at(jj, c);\n"
      "        acc += X(jj);\n        kgc::st<{}>(B.p[0], {}, kgc::rnd<{}>(acc));\n      }}\n    }}\n",
      arr_decl("c", g.value(r.in).type.shape.size()), DT, lin_expr("c", out.type.shape), DT);
}

std::string eps_arg(const Graph& g, const Node& n, size_t pos) { return n.args.size() > pos ? scalar_arg(g, n.args[pos], "float") : "1e-5f"; }

// native_layer_norm (x, shape, w, b, eps) and native_group_norm (x, w, b, N, C, HxW, G, eps):
// mean and variance in fp32 (two passes), y = (x - mean) * rstd [* w + b].
std::string norm_body(Kernel& k, const Node& n) {
  const Graph& g = *k.plan->g;
  const bool group = op_base(n.op) == "native_group_norm";
  const auto& shape = g.value(n.args.at(0).value).type.shape;
  const int wv = n.args.at(group ? 1 : 2).kind == Arg::ValueRef ? n.args.at(group ? 1 : 2).value : -1;
  const int bv = n.args.at(group ? 2 : 3).kind == Arg::ValueRef ? n.args.at(group ? 2 : 3).value : -1;
  std::string s = row_pass("mu", "0.f", "mu += x", "sum") + "    mu /= static_cast<float>(len);\n";
  s += row_pass("acc", "0.f", "acc += (x - mu) * (x - mu)", "sum");
  s += fmt::format("    const float rstd = kgc::rsqrt_(acc / static_cast<float>(len) + {});\n", eps_arg(g, n, group ? 7 : 4));
  std::string wc = "c";  // coordinates of the weight and bias
  if (group) {
    s += fmt::format("    const I hw_ = static_cast<I>({}), ch_ = static_cast<I>({});\n", scalar_arg(g, n.args.at(5), "int64_t"),
                     scalar_arg(g, n.args.at(4), "int64_t"));
    wc = "wc";
  } else {
    wc = fmt::format("(c + {})", shape.size() - n.args.at(1).list.size());
  }
  std::string y = "(x - mu) * rstd";
  std::string wb;
  if (group) wb = "        const I wc[1] = {((row * len + jj) / hw_) % ch_};\n";
  if (wv >= 0) y = fmt::format("({}) * static_cast<float>({}(E, B, {}))", y, k.fn(wv), wc);
  if (bv >= 0) y = fmt::format("{} + static_cast<float>({}(E, B, {}))", y, k.fn(bv), wc);
  const Value& out = g.value(n.outputs[0]);
  s += fmt::format("    if (live)\n      for (I jj = static_cast<I>(lane); jj < len; jj += kRT) {{\n        {};\n        at(jj, c);\n{}",
                   arr_decl("c", shape.size()), wb);
  s += fmt::format("        const float x = X(jj);\n        kgc::st<{0}>(B.p[0], row * len + jj, kgc::rnd<{0}>({1}));\n      }}\n", dtcode(out.type.dtype), y);
  for (size_t o = 1; o < 3 && o < n.outputs.size(); ++o) {
    if (n.outputs[o] < 0) continue;
    const std::string DT = dtcode(g.value(n.outputs[o]).type.dtype);
    s += fmt::format("    if (live && lane == 0) kgc::st<{0}>(B.p[{1}], row, kgc::rnd<{0}>({2}));\n", DT, o, o == 1 ? "mu" : "rstd");
  }
  return s;
}

}  // namespace

bool row_supported(const Graph& g, const Node& n) {
  static const std::set<std::string> ok{"sum", "mean", "amax", "amin", "var", "any", "all", "logsumexp", "_softmax",
                                        "_log_softmax", "_safe_softmax", "native_layer_norm", "native_group_norm", "cumsum"};
  if (!ok.count(op_base(n.op)) || n.args.empty() || n.args[0].kind != Arg::ValueRef) return false;
  if (g.value(n.args[0].value).type.dtype == DType::f64) return false;
  for (int o : n.outputs) {
    if (o < 0) continue;
    const DType t = g.value(o).type.dtype;
    if (t == DType::f64 || !(dtype_is_float(t) || t == DType::boolean)) return false;
  }
  return true;
}

std::string row_kernel(Kernel& k, const std::string& name, const Node& n) {
  const Graph& g = *k.plan->g;
  const RowSpec r = row_spec(g, n);
  k.outputs = op_kind(n.op) == OpKind::Normalization && n.outputs.size() > 1 ? 3 : 1;
  const std::string b = op_base(n.op);
  const std::string x = k.fn(r.in);
  std::string s = fmt::format(fmt::runtime(kRowHead), fmt::arg("name", name)) + coords_lambda(g, r);
  s += fmt::format("    auto X = [&](I jj) {{\n      {};\n      at(jj, c);\n      return static_cast<float>({}(E, B, c));\n    }};\n",
                   arr_decl("c", g.value(r.in).type.shape.size()), x);
  const Value& out = g.value(n.outputs.at(0));
  if (op_kind(n.op) == OpKind::Reduction) s += reduction_body(n, out);
  else if (b == "cumsum") s += scan_body(g, out, r);
  else if (b == "native_layer_norm" || b == "native_group_norm") s += norm_body(k, n);
  else s += softmax_body(g, n, out, r);
  return s + "  }\n}\n";
}

std::string row_launch(const Plan& p, const std::string& name, const Node& n, const std::vector<std::string>& ptrs,
                       const std::vector<std::string>& leaf_numels) {
  const Graph& g = *p.g;
  const RowSpec r = row_spec(g, n);
  const auto& shape = g.value(r.in).type.shape;
  std::string rows = "int64_t(1)", len = "int64_t(1)";
  if (op_base(n.op) == "native_group_norm") {
    auto host_int = [](const Arg& a) { return a.kind == Arg::Sym ? expr_cpp(a.s) : std::to_string(a.i); };
    rows = fmt::format("int64_t({}) * int64_t({})", host_int(n.args.at(3)), host_int(n.args.at(6)));
    len = fmt::format("({}) / std::max<int64_t>(1, {})", numel_expr(shape), rows);
  } else if (op_base(n.op) == "native_layer_norm") {
    const size_t k = n.args.at(1).list.size();
    rows = numel_expr(std::vector<Dim>(shape.begin(), shape.end() - static_cast<long>(k)));
    len = numel_expr(std::vector<Dim>(shape.end() - static_cast<long>(k), shape.end()));
  } else {
    for (int d : r.kept) rows += fmt::format(" * int64_t({})", expr_cpp(shape[static_cast<size_t>(d)].expr));
    for (int d : r.reduced) len += fmt::format(" * int64_t({})", expr_cpp(shape[static_cast<size_t>(d)].expr));
  }
  std::string s = fmt::format("  {{\n    const int64_t ka_rows = {}, ka_len = {};\n    if (ka_rows > 0) {{\n      {}\n", rows, len, buf_init(ptrs));
  s += "      const unsigned ka_grid = kgc::grid_for(ka_rows, KA_ROWS);\n";
  s += "      const size_t ka_smem = KA_ROWS * (KA_RTHREADS / 32 + 1) * sizeof(float) + 16;\n";
  s += launch_pair(name, ptrs.size(), fits_list("ka_rows * ka_len + int64_t(ka_grid) * KA_ROWS * ka_len", leaf_numels), "ka_grid",
                   "KA_RTHREADS * KA_ROWS", "ka_smem", "static_cast<int32_t>(ka_rows), static_cast<int32_t>(ka_len)", "ka_rows, ka_len");
  return s + "    }\n  }\n";
}

}  // namespace ka::graph::cuda
