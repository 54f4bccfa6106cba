// graph/cuda_expr.cpp — the CUDA backend's device functions, one per value a kernel computes:
// the value at coordinate i of its shape, from its inputs at mapped coordinates. Pointwise ops
// broadcast their operands (size-1 dims read coordinate 0) and compute in the output dtype's
// compute type (comparisons in their operands' promoted type), each result rounded to its dtype as
// PyTorch rounds; views and layout ops are index maps onto their inputs (reshape through the
// linear index, permute, expand, slice, select, split, cat, pad, gather-like indexing, scatter of a
// slice); creations are closed forms; stored values are loads.
#include <fmt/format.h>

#include <cmath>

#include "graph/codegen_host.h"
#include "graph/cuda_kernel.h"
#include "graph/ops.h"

namespace ka::graph::cuda {
namespace {

const Value& val(const Kernel& k, int v) { return k.plan->g->value(v); }
const Node& node_of(const Kernel& k, int v) { return k.plan->g->nodes.at(static_cast<size_t>(val(k, v).producer)); }

int out_index(const Node& n, int v) {
  for (size_t i = 0; i < n.outputs.size(); ++i)
    if (n.outputs[i] == v) return static_cast<int>(i);
  return 0;
}

const Arg* arg_at(const Node& n, size_t pos, const char* kw) {
  if (auto it = n.kwargs.find(kw); it != n.kwargs.end()) return &it->second;
  return pos < n.args.size() ? &n.args[pos] : nullptr;
}
int64_t int_arg(const Node& n, size_t pos, const char* kw, int64_t dflt) {
  const Arg* a = arg_at(n, pos, kw);
  return a && (a->kind == Arg::Int || a->kind == Arg::Bool) ? a->i : dflt;
}
std::vector<int64_t> int_list(const Arg* a) {
  std::vector<int64_t> out;
  if (!a) return out;
  if (a->kind == Arg::Int) out.push_back(a->i);
  for (const auto& x : a->list) out.push_back(x.i);
  return out;
}
// An integer argument (int or symbolic) as an int64_t device expression; "" when None.
std::string index_arg(const Arg* a) {
  if (!a || a->kind == Arg::None) return "";
  if (a->kind == Arg::Int || a->kind == Arg::Bool) return fmt::format("int64_t({}LL)", a->i);
  if (a->kind == Arg::Sym) return fmt::format("static_cast<int64_t>({})", expr_cpp(a->s, "E.ax_", "kg::i"));
  return "";
}
std::string dim64(const Dim& d) { return fmt::format("static_cast<int64_t>({})", expr_cpp(d.expr, "E.ax_", "kg::i")); }
// A slice bound clamped into [0, size] in 64 bits (ends are often INT64_MAX), then as I.
std::string bound(const Arg* a, const Dim& size, bool end) {
  const std::string x = index_arg(a);
  if (x.empty()) return end ? dim_expr(size) : "I(0)";
  return fmt::format("static_cast<I>(kgc::clampi<int64_t>({}, {}))", x, dim64(size));
}

struct Body {
  std::string s;
  int n = 0;
  std::string fresh(const char* p) { return fmt::format("{}{}", p, n++); }
};

// Coordinates of `a` (rank of its shape) broadcast from the coordinates `i` of `out`.
std::string bcast_coords(Body& b, const std::vector<Dim>& a, const std::vector<Dim>& out, const std::string& i) {
  const std::string j = b.fresh("j");
  b.s += "  " + arr_decl(j, a.size()) + ";\n";
  const size_t lead = out.size() - std::min(out.size(), a.size());
  for (size_t d = 0; d < a.size(); ++d) {
    const bool one = a[d].expr == "1" && out.at(lead + d).expr != "1";
    b.s += fmt::format("  {}[{}] = {};\n", j, d, one ? "I(0)" : fmt::format("{}[{}]", i, lead + d));
  }
  return j;
}

// A tensor operand read at the broadcast of coordinates `i` of `out`, as type T.
std::string operand(Kernel& k, Body& b, int a, const std::vector<Dim>& out, const std::string& T) {
  const std::string j = bcast_coords(b, val(k, a).type.shape, out, "i");
  const std::string x = b.fresh("x");
  b.s += fmt::format("  const {} {} = static_cast<{}>({}(E, B, {}));\n", T, x, T, k.fn(a), j);
  return x;
}

bool is_float(DType t) { return dtype_is_float(t); }

// The type comparisons and logical ops compute in: the promotion of their operands.
std::string promoted_type(const Graph& g, const Node& n) {
  bool dbl = false, flt = false, lit_float = false;
  for (const auto& a : n.args) {
    if (a.kind == Arg::Float) lit_float = true;
    if (a.kind != Arg::ValueRef) continue;
    const Value& v = g.value(a.value);
    if (v.type.dtype == DType::f64 && v.kind == Value::Tensor) dbl = true;
    else if (v.kind == Value::Tensor && is_float(v.type.dtype)) flt = true;
    else if (v.kind == Value::Scalar && is_float(v.type.dtype)) lit_float = true;
  }
  return dbl ? "double" : (flt || lit_float) ? "float" : "int64_t";
}

const std::set<std::string>& compare_ops() {
  static const std::set<std::string> s{"eq", "ne", "lt", "le", "gt", "ge", "isnan", "isinf", "isfinite",
                                       "logical_and", "logical_or", "logical_xor", "logical_not"};
  return s;
}

std::string alpha_times(const Node& n, const Graph& g, const std::string& x, const std::string& T) {
  const Arg* a = arg_at(n, 2, "alpha");
  if (!a || a->kind == Arg::None || (a->kind == Arg::Int && a->i == 1) || (a->kind == Arg::Float && a->f == 1.0)) return x;
  return fmt::format("({} * {})", scalar_arg(g, *a, T), x);
}

std::string unary_fn(const std::string& b) {
  static const std::set<std::string> fns{"exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sqrt", "sin",
                                         "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh", "asinh",
                                         "acosh", "atanh", "erf", "erfc", "floor", "ceil", "trunc", "round", "abs",
                                         "rsqrt", "sigmoid", "silu", "relu", "isnan", "isinf", "isfinite"};
  return fns.count(b) ? "kgc::" + b + "_" : "";
}

// The expression of a pointwise op over its operands x (already of type T; "" where absent).
std::string pointwise_expr(const Graph& g, const Node& n, const std::vector<std::string>& x, const std::string& T) {
  const std::string b = op_base(n.op);
  auto X = [&](size_t i) { return i < x.size() ? x[i] : std::string(); };
  if (const std::string f = unary_fn(b); !f.empty()) return f + "(" + X(0) + ")";
  if (b == "neg") return "(-" + X(0) + ")";
  if (b == "reciprocal") return fmt::format("({}(1) / {})", T, X(0));
  if (b == "square") return fmt::format("({0} * {0})", X(0));
  if (b == "sign" || b == "sgn") return "kgc::sign_(" + X(0) + ")";
  if (b == "frac") return fmt::format("({0} - kgc::trunc_({0}))", X(0));
  if (b == "gelu") {
    const Arg* a = arg_at(n, 1, "approximate");
    return (a && a->kind == Arg::Str && a->s == "tanh" ? "kgc::gelu_tanh_(" : "kgc::gelu_(") + X(0) + ")";
  }
  if (b == "logical_not") return "(!" + X(0) + ")";
  if (b == "bitwise_not") return T == "bool" ? "(!" + X(0) + ")" : "(~" + X(0) + ")";
  if (b == "add") return fmt::format("({} + {})", X(0), alpha_times(n, g, X(1), T));
  if (b == "sub") return fmt::format("({} - {})", X(0), alpha_times(n, g, X(1), T));
  if (b == "rsub") return fmt::format("({} - {})", X(1), alpha_times(n, g, X(0), T));
  if (b == "mul") return fmt::format("({} * {})", X(0), X(1));
  if (b == "div") {
    const Arg* r = arg_at(n, 2, "rounding_mode");
    const std::string mode = r && r->kind == Arg::Str ? r->s : "";
    if (mode == "trunc") return fmt::format("kgc::truncdiv_({}, {})", X(0), X(1));
    if (mode == "floor") return fmt::format("kgc::floordiv_({}, {})", X(0), X(1));
    return fmt::format("({} / {})", X(0), X(1));
  }
  static const std::map<std::string, std::string> infix{
      {"eq", "=="}, {"ne", "!="}, {"lt", "<"}, {"le", "<="}, {"gt", ">"}, {"ge", ">="}, {"logical_and", "&&"},
      {"logical_or", "||"}, {"logical_xor", "!="}, {"bitwise_and", "&"}, {"bitwise_or", "|"}, {"bitwise_xor", "^"},
      {"bitwise_left_shift", "<<"}, {"__lshift__", "<<"}, {"bitwise_right_shift", ">>"}, {"__rshift__", ">>"}};
  if (auto it = infix.find(b); it != infix.end()) return fmt::format("({} {} {})", X(0), it->second, X(1));
  static const std::map<std::string, std::string> binary{
      {"maximum", "kgc::maxp"}, {"minimum", "kgc::minp"}, {"fmax", "kgc::fmax_"}, {"fmin", "kgc::fmin_"},
      {"atan2", "kgc::atan2_"}, {"hypot", "kgc::hypot_"}, {"copysign", "kgc::copysign_"}, {"fmod", "kgc::fmod_"},
      {"remainder", "kgc::remainder_"}, {"floor_divide", "kgc::floordiv_"}, {"pow", "kgc::pow_"},
      {"xlogy", "kgc::xlogy_"}};
  if (auto it = binary.find(b); it != binary.end()) return fmt::format("{}({}, {})", it->second, X(0), X(1));
  if (b == "where") return fmt::format("({} ? {} : {})", X(0), X(1), X(2));
  if (b == "masked_fill") return fmt::format("({} ? {} : {})", X(1), X(2), X(0));
  if (b == "lerp") return fmt::format("kgc::lerp_({}, {}, {})", X(0), X(1), X(2));
  if (b == "clamp" || b == "clamp_min" || b == "clamp_max") {
    std::string e = X(0);
    const std::string lo = b == "clamp_max" ? "" : X(1), hi = b == "clamp" ? X(2) : b == "clamp_max" ? X(1) : "";
    if (!lo.empty()) e = fmt::format("kgc::clamp_lo_({}, {})", e, lo);
    if (!hi.empty()) e = fmt::format("kgc::clamp_hi_({}, {})", e, hi);
    return e;
  }
  if (b == "copy") return X(1);
  static const std::set<std::string> identity{"_to_copy", "convert_element_type", "clone", "lift_fresh_copy", "contiguous"};
  if (identity.count(b)) return X(0);
  return "";
}

std::string pointwise_body(Kernel& k, const Node& n, int v) {
  const Graph& g = *k.plan->g;
  const Value& out = g.value(v);
  const std::string b = op_base(n.op);
  const std::string T = compare_ops().count(b) && !b.starts_with("logical") ? promoted_type(g, n) : ctype(out.type.dtype);
  Body body;
  std::vector<std::string> x(n.args.size());
  for (size_t a = 0; a < n.args.size(); ++a) {
    const bool cond = (b == "where" && a == 0) || (b == "masked_fill" && a == 1) || b.starts_with("logical");
    const std::string t = cond ? "bool" : T;
    const Arg& arg = n.args[a];
    if (arg.kind == Arg::ValueRef && g.value(arg.value).kind == Value::Tensor) x[a] = operand(k, body, arg.value, out.type.shape, t);
    else x[a] = scalar_arg(g, arg, t);
  }
  const std::string e = pointwise_expr(g, n, x, T);
  if (e.empty()) throw Unlowered{n.op};
  return body.s + fmt::format("  return kgc::rnd<{}>({});\n", dtcode(out.type.dtype), e);
}

// ── views: coordinates of the input from the view's coordinates i ──

std::vector<size_t> non_unit(const std::vector<Dim>& s) {
  std::vector<size_t> out;
  for (size_t d = 0; d < s.size(); ++d)
    if (s[d].expr != "1") out.push_back(d);
  return out;
}

// reshape: unit dims inserted or removed map directly, anything else through the linear index.
void reshape_map(Body& b, const std::vector<Dim>& in, const std::vector<Dim>& out, const std::string& j) {
  const auto ni = non_unit(in), no = non_unit(out);
  bool direct = ni.size() == no.size();
  for (size_t t = 0; direct && t < ni.size(); ++t) direct = in[ni[t]] == out[no[t]];
  if (direct) {
    for (size_t d = 0; d < in.size(); ++d) b.s += fmt::format("  {}[{}] = I(0);\n", j, d);
    for (size_t t = 0; t < ni.size(); ++t) b.s += fmt::format("  {}[{}] = i[{}];\n", j, ni[t], no[t]);
    return;
  }
  const std::string l = b.fresh("l");
  b.s += fmt::format("  const I {} = {};\n", l, lin_expr("i", out));
  b.s += delin_stmt(l, j, in);
}

void view_map(const Kernel& k, Body& b, const Node& n, int v, const std::string& j) {
  const Graph& g = *k.plan->g;
  const std::string base = op_base(n.op);
  const auto& in = g.value(n.args.at(0).value).type.shape;
  const auto& out = g.value(v).type.shape;
  auto copy_all = [&] {
    for (size_t d = 0; d < in.size(); ++d) b.s += fmt::format("  {}[{}] = i[{}];\n", j, d, d);
  };
  if (base == "view" || base == "_unsafe_view" || base == "reshape") return reshape_map(b, in, out, j);
  if (base == "alias" || base == "detach") return copy_all();
  if (base == "permute") {
    const auto p = int_list(arg_at(n, 1, "dims"));
    for (size_t d = 0; d < p.size(); ++d) b.s += fmt::format("  {}[{}] = i[{}];\n", j, norm_dim(p[d], in.size()), d);
    return;
  }
  if (base == "t" || base == "transpose") {
    const int d0 = base == "t" ? 0 : norm_dim(int_arg(n, 1, "dim0", 0), in.size());
    const int d1 = base == "t" ? 1 : norm_dim(int_arg(n, 2, "dim1", 1), in.size());
    copy_all();
    if (in.size() >= 2) b.s += fmt::format("  {0}[{1}] = i[{2}];\n  {0}[{2}] = i[{1}];\n", j, d0, d1);
    return;
  }
  if (base == "unsqueeze") {
    const int d = norm_dim(int_arg(n, 1, "dim", 0), out.size());
    for (size_t s = 0, t = 0; s < out.size(); ++s)
      if (static_cast<int>(s) != d) b.s += fmt::format("  {}[{}] = i[{}];\n", j, t++, s);
    return;
  }
  if (base == "squeeze") {
    std::vector<int64_t> dims = int_list(arg_at(n, 1, "dim"));
    for (size_t s = 0, t = 0; s < in.size(); ++s) {
      bool listed = dims.empty();
      for (int64_t d : dims) listed = listed || norm_dim(d, in.size()) == static_cast<int>(s);
      const bool gone = listed && in[s].expr == "1";
      b.s += fmt::format("  {}[{}] = {};\n", j, s, gone ? "I(0)" : fmt::format("i[{}]", t++));
    }
    return;
  }
  if (base == "expand" || base == "expand_copy") {
    const size_t lead = out.size() - in.size();
    for (size_t d = 0; d < in.size(); ++d)
      b.s += fmt::format("  {}[{}] = {};\n", j, d, in[d].expr == "1" && out[lead + d].expr != "1" ? "I(0)" : fmt::format("i[{}]", lead + d));
    return;
  }
  if (base == "slice") {
    const int d = norm_dim(int_arg(n, 1, "dim", 0), in.size());
    const std::string start = bound(arg_at(n, 2, "start"), in[static_cast<size_t>(d)], false);
    const int64_t step = int_arg(n, 4, "step", 1);
    copy_all();
    b.s += fmt::format("  {}[{}] = {} + i[{}] * I({});\n", j, d, start, d, step);
    return;
  }
  if (base == "select") {
    const int d = norm_dim(int_arg(n, 1, "dim", 0), in.size());
    const std::string idx = index_arg(arg_at(n, 2, "index"));
    for (size_t s = 0, t = 0; s < in.size(); ++s)
      b.s += fmt::format("  {}[{}] = {};\n", j, s,
                         static_cast<int>(s) == d ? fmt::format("static_cast<I>(kgc::wrap<int64_t>({}, {}))", idx, dim64(in[s])) : fmt::format("i[{}]", t++));
    return;
  }
  if (base == "split_with_sizes" || base == "split") {
    const int d = norm_dim(int_arg(n, 2, "dim", 0), in.size());
    const int o = out_index(n, v);
    std::string off = "I(0)";
    if (base == "split") off = fmt::format("I({}) * static_cast<I>({})", o, index_arg(arg_at(n, 1, "split_size")));
    else
      for (int t = 0; t < o; ++t) off += " + static_cast<I>(" + index_arg(&n.args.at(1).list.at(static_cast<size_t>(t))) + ")";
    copy_all();
    b.s += fmt::format("  {}[{}] += {};\n", j, d, off);
    return;
  }
  if (base == "unbind") {
    const int d = norm_dim(int_arg(n, 1, "dim", 0), in.size());
    for (size_t s = 0, t = 0; s < in.size(); ++s)
      b.s += fmt::format("  {}[{}] = {};\n", j, s, static_cast<int>(s) == d ? fmt::format("I({})", out_index(n, v)) : fmt::format("i[{}]", t++));
    return;
  }
  throw Unlowered{n.op};
}

std::string view_body(Kernel& k, const Node& n, int v) {
  const Graph& g = *k.plan->g;
  const int a = n.args.at(0).value;
  Body b;
  const std::string j = b.fresh("j");
  b.s += "  " + arr_decl(j, g.value(a).type.shape.size()) + ";\n";
  view_map(k, b, n, v, j);
  return b.s + fmt::format("  return {}(E, B, {});\n", k.fn(a), j);
}


// ── layout ops: the output at i from inputs at computed coordinates ──

std::string call_at(Kernel& k, int a, const std::string& j, DType out) {
  return fmt::format("static_cast<{}>(kgc::rnd<{}>({}(E, B, {})))", ctype(out), dtcode(out), k.fn(a), j);
}

std::string copy_coords(Body& b, size_t rank) {
  const std::string j = b.fresh("j");
  b.s += "  " + arr_decl(j, rank) + ";\n";
  for (size_t d = 0; d < rank; ++d) b.s += fmt::format("  {}[{}] = i[{}];\n", j, d, d);
  return j;
}

std::string cat_body(Kernel& k, const Node& n, const Value& out) {
  const Graph& g = *k.plan->g;
  const int d = norm_dim(int_arg(n, 1, "dim", 0), out.type.shape.size());
  const bool stack = op_base(n.op) == "stack";
  Body b;
  b.s += "  I o = I(0);\n  (void)o;\n";
  int t = 0;
  for (const auto& e : n.args.at(0).list) {
    const Value& in = g.value(e.value);
    if (!stack && in.type.shape.size() == 1 && in.type.shape[0].expr == "0" && out.type.shape.size() > 1) continue;
    std::string j;
    if (stack) {
      j = b.fresh("j");
      b.s += "  " + arr_decl(j, in.type.shape.size()) + ";\n";
      for (size_t s = 0, u = 0; s < out.type.shape.size(); ++s)
        if (static_cast<int>(s) != d) b.s += fmt::format("  {}[{}] = i[{}];\n", j, u++, s);
      b.s += fmt::format("  if (i[{}] == I({})) return {};\n", d, t++, call_at(k, e.value, j, out.type.dtype));
      continue;
    }
    j = copy_coords(b, in.type.shape.size());
    const std::string size = dim_expr(in.type.shape[static_cast<size_t>(d)]);
    b.s += fmt::format("  {0}[{1}] = i[{1}] - o;\n  if ({0}[{1}] < {2}) return {3};\n  o += {2};\n", j, d, size,
                       call_at(k, e.value, j, out.type.dtype));
  }
  return b.s + fmt::format("  return {}(0);\n", ctype(out.type.dtype));
}

std::string pad_body(Kernel& k, const Node& n, const Value& out) {
  const Graph& g = *k.plan->g;
  const int a = n.args.at(0).value;
  const auto& in = g.value(a).type.shape;
  const Arg* pad = arg_at(n, 1, "pad");
  Body b;
  const std::string j = copy_coords(b, in.size());
  b.s += "  bool in = true;\n";
  for (size_t q = 0; pad && 2 * q + 1 < pad->list.size() + 1 && 2 * q < pad->list.size(); ++q) {
    const size_t d = in.size() - 1 - q;
    b.s += fmt::format("  {0}[{1}] = i[{1}] - static_cast<I>({2});\n  in = in && {0}[{1}] >= 0 && {0}[{1}] < {3};\n", j, d,
                       index_arg(&pad->list[2 * q]), dim_expr(in[d]));
  }
  const Arg* v = arg_at(n, 2, "value");
  const std::string fill = v && v->kind != Arg::None ? scalar_arg(g, *v, ctype(out.type.dtype)) : ctype(out.type.dtype) + "(0)";
  return b.s + fmt::format("  return in ? {} : kgc::rnd<{}>({});\n", call_at(k, a, j, out.type.dtype), dtcode(out.type.dtype), fill);
}

std::string scatter_slice_body(Kernel& k, const Node& n, const Value& out) {
  const Graph& g = *k.plan->g;
  const int a = n.args.at(0).value, src = n.args.at(1).value;
  const auto& shape = out.type.shape;
  const int d = norm_dim(int_arg(n, 2, "dim", 0), shape.size());
  Body b;
  if (op_base(n.op) == "select_scatter") {
    const std::string j = b.fresh("j");
    b.s += "  " + arr_decl(j, g.value(src).type.shape.size()) + ";\n";
    for (size_t s = 0, u = 0; s < shape.size(); ++s)
      if (static_cast<int>(s) != d) b.s += fmt::format("  {}[{}] = i[{}];\n", j, u++, s);
    b.s += fmt::format("  if (i[{}] == static_cast<I>(kgc::wrap<int64_t>({}, {}))) return {};\n", d, index_arg(arg_at(n, 3, "index")),
                       dim64(shape[static_cast<size_t>(d)]), call_at(k, src, j, out.type.dtype));
    return b.s + fmt::format("  return {};\n", call_at(k, a, "i", out.type.dtype));
  }
  const Dim& size = shape[static_cast<size_t>(d)];
  const int64_t step = int_arg(n, 5, "step", 1);
  const std::string j = copy_coords(b, shape.size());
  b.s += fmt::format("  const I s = {}, e = {}, q = i[{}] - s;\n", bound(arg_at(n, 3, "start"), size, false),
                     bound(arg_at(n, 4, "end"), size, true), d);
  b.s += fmt::format("  if (i[{0}] >= s && i[{0}] < e && q % I({1}) == 0) {{\n    {2}[{0}] = q / I({1});\n    return {3};\n  }}\n", d,
                     step, j, call_at(k, src, j, out.type.dtype));
  return b.s + fmt::format("  return {};\n", call_at(k, a, "i", out.type.dtype));
}

// An index read: the index tensor at coordinates `c` (a coordinate pointer), wrapped by `size`.
std::string index_read(Kernel& k, Body& b, int idx, const std::vector<Dim>& from, const std::string& c, const Dim& size) {
  const std::string j = bcast_coords(b, k.plan->g->value(idx).type.shape, from, c);
  return fmt::format("static_cast<I>(kgc::wrap<int64_t>(static_cast<int64_t>({}(E, B, {})), {}))", k.fn(idx), j, dim64(size));
}

std::vector<Dim> broadcast_shape(const Graph& g, const std::vector<int>& vs) {
  size_t r = 0;
  for (int v : vs) r = std::max(r, g.value(v).type.shape.size());
  std::vector<Dim> out(r, Dim{"1", std::nullopt});
  for (int v : vs) {
    const auto& s = g.value(v).type.shape;
    for (size_t d = 0; d < s.size(); ++d)
      if (s[d].expr != "1") out[r - s.size() + d] = s[d];
  }
  return out;
}

struct IndexSpec {
  std::vector<int> pos, idx;  // indexed dims of x and their index tensors
  std::vector<Dim> bs;        // the index tensors' broadcast shape
  bool adjacent = true;       // the broadcast dims replace the indexed ones in place (else they lead)
};

IndexSpec index_spec(const Graph& g, const Node& n) {
  IndexSpec s;
  const auto& list = n.args.at(1).list;
  for (size_t d = 0; d < list.size(); ++d)
    if (list[d].kind == Arg::ValueRef) s.pos.push_back(static_cast<int>(d)), s.idx.push_back(list[d].value);
  if (s.idx.empty()) throw Unlowered{n.op};
  s.adjacent = s.pos.back() - s.pos.front() + 1 == static_cast<int>(s.pos.size());
  s.bs = broadcast_shape(g, s.idx);
  return s;
}

// Coordinates j of x (the indexed tensor) for coordinate i of x[indices].
std::string index_coords(Kernel& k, Body& b, const Node& n, const IndexSpec& s) {
  const auto& in = k.plan->g->value(n.args.at(0).value).type.shape;
  const int first = s.adjacent ? s.pos.front() : 0;  // where the broadcast dims sit in the result
  const std::string j = b.fresh("j");
  b.s += "  " + arr_decl(j, in.size()) + ";\n";
  for (size_t t = 0; t < s.idx.size(); ++t)
    b.s += fmt::format("  {}[{}] = {};\n", j, s.pos[t],
                       index_read(k, b, s.idx[t], s.bs, fmt::format("(i + {})", first), in[static_cast<size_t>(s.pos[t])]));
  size_t o = s.adjacent ? 0 : s.bs.size();
  for (size_t d = 0; d < in.size(); ++d) {
    if (std::find(s.pos.begin(), s.pos.end(), static_cast<int>(d)) != s.pos.end()) {
      if (s.adjacent && static_cast<int>(d) == s.pos.front()) o += s.bs.size();
      continue;
    }
    b.s += fmt::format("  {}[{}] = i[{}];\n", j, d, o++);
  }
  return j;
}

std::string index_tensor_body(Kernel& k, const Node& n, const Value& out) {
  Body b;
  const std::string j = index_coords(k, b, n, index_spec(*k.plan->g, n));
  return b.s + fmt::format("  return {};\n", call_at(k, n.args.at(0).value, j, out.type.dtype));
}

std::string gather_like_body(Kernel& k, const Node& n, const Value& out) {
  const Graph& g = *k.plan->g;
  const std::string base = op_base(n.op);
  const auto& os = out.type.shape;
  Body b;
  if (base == "embedding") {
    const int w = n.args.at(0).value, ind = n.args.at(1).value;
    const std::string j = b.fresh("j");
    b.s += "  " + arr_decl(j, 2) + ";\n";
    b.s += fmt::format("  {}[0] = {};\n  {}[1] = i[{}];\n", j, index_read(k, b, ind, g.value(ind).type.shape, "i", g.value(w).type.shape[0]), j, os.size() - 1);
    return b.s + fmt::format("  return {};\n", call_at(k, w, j, out.type.dtype));
  }
  const int a = n.args.at(0).value;
  const auto& in = g.value(a).type.shape;
  const int d = norm_dim(int_arg(n, 1, "dim", 0), in.size());
  const int ind = n.args.at(2).value;
  const std::string j = copy_coords(b, in.size());
  if (base == "index_select") {
    b.s += fmt::format("  const I c[1] = {{i[{}]}};\n", d);
    b.s += fmt::format("  {}[{}] = {};\n", j, d, index_read(k, b, ind, g.value(ind).type.shape, "c", in[static_cast<size_t>(d)]));
  } else {  // gather: the output has the index's shape
    b.s += fmt::format("  {}[{}] = {};\n", j, d, index_read(k, b, ind, g.value(ind).type.shape, "i", in[static_cast<size_t>(d)]));
  }
  return b.s + fmt::format("  return {};\n", call_at(k, a, j, out.type.dtype));
}

std::string reorder_body(Kernel& k, const Node& n, const Value& out) {
  const Graph& g = *k.plan->g;
  const std::string base = op_base(n.op);
  const int a = n.args.at(0).value;
  const auto& in = g.value(a).type.shape;
  const auto& os = out.type.shape;
  Body b;
  const std::string j = b.fresh("j");
  b.s += "  " + arr_decl(j, in.size()) + ";\n";
  if (base == "repeat") {
    for (size_t d = 0; d < in.size(); ++d) b.s += fmt::format("  {}[{}] = i[{}] % {};\n", j, d, os.size() - in.size() + d, dim_expr(in[d]));
  } else {
    for (size_t d = 0; d < in.size(); ++d) b.s += fmt::format("  {}[{}] = i[{}];\n", j, d, d);
  }
  if (base == "flip")
    for (int64_t d : int_list(arg_at(n, 1, "dims"))) {
      const int x = norm_dim(d, in.size());
      b.s += fmt::format("  {}[{}] = {} - I(1) - i[{}];\n", j, x, dim_expr(in[static_cast<size_t>(x)]), x);
    }
  if (base == "roll") {
    const auto shifts = int_list(arg_at(n, 1, "shifts")), dims = int_list(arg_at(n, 2, "dims"));
    if (dims.empty() || dims.size() != shifts.size()) throw Unlowered{n.op};
    for (size_t t = 0; t < dims.size(); ++t) {
      const int x = norm_dim(dims[t], in.size());
      const std::string S = dim_expr(in[static_cast<size_t>(x)]);
      b.s += fmt::format("  {0}[{1}] = ((i[{1}] - I({2}LL % {3})) % {3} + {3}) % {3};\n", j, x, shifts[t], S);
    }
  }
  std::string keep = "true";
  if (base == "tril" || base == "triu") {
    if (in.size() < 2) throw Unlowered{n.op};
    const int64_t diag = int_arg(n, 1, "diagonal", 0);
    keep = fmt::format("(i[{}] - i[{}] {} I({}))", in.size() - 1, in.size() - 2, base == "tril" ? "<=" : ">=", diag);
  }
  return b.s + fmt::format("  return {} ? {} : {}(0);\n", keep, call_at(k, a, j, out.type.dtype), ctype(out.type.dtype));
}

std::string one_hot_body(Kernel& k, const Node& n, const Value& out) {
  const int ind = n.args.at(0).value;
  const auto& os = out.type.shape;
  Body b;
  b.s += fmt::format("  const int64_t c = static_cast<int64_t>({}(E, B, i));\n", k.fn(ind));
  return b.s + fmt::format("  return {}(c == static_cast<int64_t>(i[{}]) ? 1 : 0);\n", ctype(out.type.dtype), os.size() - 1);
}

std::string layout_body(Kernel& k, const Node& n, int v) {
  const Value& out = k.plan->g->value(v);
  const std::string b = op_base(n.op);
  if (b == "cat" || b == "stack") return cat_body(k, n, out);
  if (b == "constant_pad_nd") return pad_body(k, n, out);
  if (b == "slice_scatter" || b == "select_scatter") return scatter_slice_body(k, n, out);
  if (b == "index") return index_tensor_body(k, n, out);
  if (b == "index_select" || b == "embedding" || b == "gather") return gather_like_body(k, n, out);
  if (b == "repeat" || b == "flip" || b == "roll" || b == "tril" || b == "triu") return reorder_body(k, n, out);
  if (b == "one_hot") return one_hot_body(k, n, out);
  throw Unlowered{n.op};
}

// ── creations ──

std::string creation_body(Kernel& k, const Node& n, int v) {
  const Graph& g = *k.plan->g;
  const Value& out = g.value(v);
  const std::string b = op_base(n.op), T = ctype(out.type.dtype), DT = dtcode(out.type.dtype);
  if (b == "arange") {
    const size_t na = n.args.size();
    const Arg* start = na >= 2 ? &n.args[0] : nullptr;
    const Arg* step = na >= 3 ? &n.args[2] : nullptr;
    const std::string acc = dtype_is_float(out.type.dtype) ? "double" : "int64_t";
    const std::string s0 = start ? scalar_arg(g, *start, acc) : acc + "(0)";
    const std::string st = step ? scalar_arg(g, *step, acc) : acc + "(1)";
    return fmt::format("  return kgc::rnd<{}>({} + static_cast<{}>(i[0]) * {});\n", DT, s0, acc, st);
  }
  std::string fill = T + "(0)";
  if (b == "ones" || b == "ones_like" || b == "new_ones") fill = T + "(1)";
  const Arg* f = b == "full" || b == "full_like" ? arg_at(n, 1, "fill_value")
                 : b == "new_full"               ? arg_at(n, 2, "fill_value")
                 : b == "scalar_tensor"          ? arg_at(n, 0, "s")
                                                 : nullptr;
  if (f) fill = scalar_arg(g, *f, T);
  return fmt::format("  return kgc::rnd<{}>({});\n", DT, fill);
}


// ── convolution (not transposed): a direct loop per output element, fp32 accumulation (fp64 for
// fp64), bias first; input channels of the output channel's group, kernel taps inside the input ──

std::string conv_body(Kernel& k, const Node& n, int v) {
  const Graph& g = *k.plan->g;
  const Value& out = g.value(v);
  const int x = n.args.at(0).value, w = n.args.at(1).value;
  const int bias = n.args.size() > 2 && n.args[2].kind == Arg::ValueRef ? n.args[2].value : -1;
  const auto& xs = g.value(x).type.shape;
  const auto& ws = g.value(w).type.shape;
  const size_t sp = xs.size() - 2;  // spatial dims
  auto at = [&](size_t arg, size_t d, int64_t dflt) {
    const auto l = int_list(n.args.size() > arg ? &n.args[arg] : nullptr);
    return l.empty() ? dflt : l[l.size() == 1 ? 0 : d];
  };
  const int64_t groups = n.args.size() > 8 && n.args[8].kind == Arg::Int ? n.args[8].i : 1;
  const std::string acc = out.type.dtype == DType::f64 ? "double" : "float";
  Body b;
  b.s += fmt::format("  {} acc = {}(0);\n", acc, acc);
  if (bias >= 0) b.s += fmt::format("  {{\n    const I c[1] = {{i[1]}};\n    acc = static_cast<{}>({}(E, B, c));\n  }}\n", acc, k.fn(bias));
  b.s += fmt::format("  const I cg = {}, og = {} / I({}), c0 = (i[1] / og) * cg;\n", dim_expr(ws[1]), dim_expr(ws[0]), groups);
  b.s += fmt::format("  {};\n  {};\n  jx[0] = i[0];\n  jw[0] = i[1];\n", arr_decl("jx", xs.size()), arr_decl("jw", ws.size()));
  b.s += "  for (I ci = 0; ci < cg; ++ci) {\n    jx[1] = c0 + ci;\n    jw[1] = ci;\n";
  std::string ind = "    ";
  for (size_t d = 0; d < sp; ++d) {
    b.s += fmt::format("{0}for (I k{1} = 0; k{1} < {2}; ++k{1}) {{\n{0}  jw[{3}] = k{1};\n{0}  jx[{3}] = i[{3}] * I({4}) - I({5}) + k{1} * I({6});\n"
                       "{0}  if (jx[{3}] < 0 || jx[{3}] >= {7}) continue;\n",
                       ind, d, dim_expr(ws[d + 2]), d + 2, at(3, d, 1), at(4, d, 0), at(5, d, 1), dim_expr(xs[d + 2]));
    ind += "  ";
  }
  b.s += fmt::format("{}acc += static_cast<{}>({}(E, B, jx)) * static_cast<{}>({}(E, B, jw));\n", ind, acc, k.fn(x), acc, k.fn(w));
  for (size_t d = 0; d < sp; ++d) {
    ind.resize(ind.size() - 2);
    b.s += ind + "}\n";
  }
  b.s += "  }\n";
  return b.s + fmt::format("  return kgc::rnd<{}>(acc);\n", dtcode(out.type.dtype));
}

}  // namespace

bool conv_supported(const Graph& g, const Node& n) {
  if (op_base(n.op) != "convolution" || n.args.size() < 9 || n.args[0].kind != Arg::ValueRef || n.args[1].kind != Arg::ValueRef) return false;
  const size_t rank = g.value(n.args[0].value).type.shape.size();
  const bool transposed = n.args[6].kind == Arg::Bool && n.args[6].i;
  for (size_t a : {3u, 4u, 5u})
    for (const auto& x : n.args[a].list)
      if (x.kind != Arg::Int) return false;
  return !transposed && rank >= 3 && rank <= 5 && n.args[8].kind == Arg::Int;
}

std::string value_body(Kernel& k, int v) {
  const Node& n = node_of(k, v);
  switch (op_kind(n.op)) {
    case OpKind::Pointwise: return pointwise_body(k, n, v);
    case OpKind::View: return view_body(k, n, v);
    case OpKind::Layout: return layout_body(k, n, v);
    case OpKind::Creation: return creation_body(k, n, v);
    case OpKind::Library:
      if (op_base(n.op) == "convolution") return conv_body(k, n, v);
      throw Unlowered{n.op};
    default: throw Unlowered{n.op};
  }
}

bool expr_supported(const Graph&, const Node& n) {
  static const std::set<std::string> ok{
      "view", "_unsafe_view", "reshape", "permute", "expand", "expand_copy", "alias", "detach", "unsqueeze", "squeeze",
      "t", "transpose", "slice", "select", "split_with_sizes", "split", "unbind", "cat", "stack", "constant_pad_nd",
      "flip", "roll", "repeat", "tril", "triu", "index_select", "embedding", "gather", "index", "slice_scatter",
      "select_scatter", "one_hot", "full", "full_like", "zeros", "zeros_like", "ones", "ones_like", "empty",
      "empty_strided", "empty_like", "new_zeros", "new_empty", "new_full", "new_ones", "arange", "scalar_tensor"};
  return op_kind(n.op) == OpKind::Pointwise || ok.count(op_base(n.op));
}


std::vector<Dim> index_result_shape(const Graph& g, const Node& n) {
  const IndexSpec s = index_spec(g, n);
  const auto& in = g.value(n.args.at(0).value).type.shape;
  std::vector<Dim> out;
  if (!s.adjacent) out = s.bs;
  for (size_t d = 0; d < in.size(); ++d) {
    if (std::find(s.pos.begin(), s.pos.end(), static_cast<int>(d)) == s.pos.end()) out.push_back(in[d]);
    else if (s.adjacent && static_cast<int>(d) == s.pos.front()) out.insert(out.end(), s.bs.begin(), s.bs.end());
  }
  return out;
}

bool dim_scatter(const Node& n) { return op_base(n.op) == "scatter_add" || op_base(n.op) == "scatter"; }

bool is_scatter(const Node& n) { return op_base(n.op).starts_with("index_put") || dim_scatter(n); }

std::vector<Dim> scatter_shape(const Graph& g, const Node& n) {
  return dim_scatter(n) ? g.value(n.args.at(2).value).type.shape : index_result_shape(g, n);
}

namespace {

bool accumulates(DType t) {
  return t == DType::f32 || t == DType::f64 || t == DType::bf16 || t == DType::f16 || t == DType::i64 || t == DType::i32;
}

// scatter_add / scatter (self, dim, index, src or value): element i of index goes to the output at
// i with coordinate `dim` replaced by index[i]; src is read at i (it may be larger than index).
bool dim_scatter_supported(const Graph& g, const Node& n) {
  if (n.args.size() < 4 || n.args[2].kind != Arg::ValueRef || n.args[1].kind != Arg::Int) return false;
  if (n.kwargs.count("reduce")) return false;
  const bool add = op_base(n.op) == "scatter_add";
  const size_t rank = g.value(n.args[0].value).type.shape.size();
  if (g.value(n.args[2].value).type.shape.size() != rank) return false;
  if (n.args[3].kind == Arg::ValueRef && g.value(n.args[3].value).type.shape.size() != rank) return false;
  return !add || accumulates(g.value(n.outputs.at(0)).type.dtype);
}

std::string dim_scatter_fn(Kernel& k, const Node& n) {
  const Graph& g = *k.plan->g;
  const Value& out = g.value(n.outputs.at(0));
  const auto& shape = out.type.shape;
  const int d = norm_dim(n.args[1].i, shape.size());
  const int idx = n.args[2].value;
  Body b;
  const std::string j = copy_coords(b, shape.size());
  b.s += fmt::format("  {}[{}] = {};\n", j, d, index_read(k, b, idx, g.value(idx).type.shape, "i", shape[static_cast<size_t>(d)]));
  const std::string v = n.args[3].kind == Arg::ValueRef ? call_at(k, n.args[3].value, "i", out.type.dtype)
                                                        : scalar_arg(g, n.args[3], ctype(out.type.dtype));
  b.s += fmt::format("  kgc::{}<{}>(B.p[0], {}, {});\n", op_base(n.op) == "scatter_add" ? "atomic_add" : "st",
                     dtcode(out.type.dtype), lin_expr(j, shape), v);
  return fmt::format("template <typename I, typename BB>\nKA_DEV void fput(const Env& E, const BB& B, const I* i) {{\n{}}}\n", b.s);
}

}  // namespace

bool scatter_supported(const Graph& g, const Node& n) {
  const std::string b = op_base(n.op);
  if (dim_scatter(n)) return dim_scatter_supported(g, n);
  if ((b != "index_put" && b != "index_put_") || n.args.size() < 3 || n.args[2].kind != Arg::ValueRef) return false;
  for (const auto& a : n.args.at(1).list)
    if (a.kind == Arg::ValueRef && g.value(a.value).type.dtype == DType::boolean) return false;  // masks: data-dependent
  const DType t = g.value(n.outputs.at(0)).type.dtype;
  const Arg* acc = arg_at(n, 3, "accumulate");
  const bool accumulate = acc && acc->kind == Arg::Bool && acc->i;
  return !accumulate || accumulates(t);
}

std::string scatter_fn(Kernel& k, const Node& n) {
  if (dim_scatter(n)) return dim_scatter_fn(k, n);
  const Graph& g = *k.plan->g;
  const Value& out = g.value(n.outputs.at(0));
  const Arg* acc = arg_at(n, 3, "accumulate");
  const bool accumulate = acc && acc->kind == Arg::Bool && acc->i;
  const auto rshape = index_result_shape(g, n);
  Body b;
  const std::string j = index_coords(k, b, n, index_spec(g, n));
  const std::string v = operand(k, b, n.args.at(2).value, rshape, ctype(out.type.dtype));
  b.s += fmt::format("  kgc::{}<{}>(B.p[0], {}, {});\n", accumulate ? "atomic_add" : "st", dtcode(out.type.dtype),
                     lin_expr(j, out.type.shape), v);
  return fmt::format("template <typename I, typename BB>\nKA_DEV void fput(const Env& E, const BB& B, const I* i) {{\n{}}}\n", b.s);
}

bool Kernel::inline_value(int v) const {
  const int p = plan->producer(v);
  if (p < 0) return false;
  return plan->group_of(v) == group || plan->is_virtual(v);
}

std::string Kernel::leaf(int v) {
  auto it = std::find(leaves.begin(), leaves.end(), v);
  if (it == leaves.end()) {
    leaves.push_back(v);
    it = leaves.end() - 1;
  }
  return fmt::format("B.p[{}]", outputs + (it - leaves.begin()));
}

std::string Kernel::fn(int v) {
  const std::string name = fmt::format("f{}", v);
  if (emitted.count(v)) return name;
  emitted.insert(v);
  const Graph& g = *plan->g;
  const Value& x = g.value(v);
  if (x.type.complex || x.type.dtype == DType::f4_e2m1 || x.type.dtype == DType::f4_e2m1fn_x2)
    throw Unlowered{x.producer >= 0 ? g.nodes[static_cast<size_t>(x.producer)].op : "complex or fp4 input"};
  std::string body;
  if (!inline_value(v)) {
    const std::string off = lin_expr("i", x.type.shape);
    body = g.constant(v) ? fmt::format("  return kgc::rnd<{}>(kgc::ld<ka::kFloat64>({}, {}));\n", dtcode(x.type.dtype), leaf(v), off)
                         : fmt::format("  return kgc::ld<{}>({}, {});\n", dtcode(x.type.dtype), leaf(v), off);
  } else {
    body = value_body(*this, v);
  }
  code += fmt::format("template <typename I, typename BB>\nKA_DEV {} {}(const Env& E, const BB& B, const I* i) {{\n  (void)E; (void)B; (void)i;\n{}}}\n",
                      ctype(x.type.dtype), name, body);
  return name;
}

}  // namespace ka::graph::cuda
