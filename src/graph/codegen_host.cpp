// graph/codegen_host.cpp — graph → host C++ (native ABI) over the graph_host runtime.
#include "graph/codegen_host.h"

#include <fmt/format.h>

#include <cctype>
#include <cmath>
#include <regex>

#include "graph/dispatch.h"
#include "graph/ops.h"
#include "graph/passes.h"
#include "util/error.h"

namespace ka::graph {
namespace {

// Values live in two arrays declared at the top of run (V: tensors, S: scalars), so that the
// node calls can be split into chunk functions (see emit_host) without passing anything.
std::string value_var(const Graph& g, int v) {
  return fmt::format("{}[{}]", g.value(v).kind == Value::Tensor ? 'V' : 'S', v);
}

// Nodes per chunk function of run. One function of thousands of calls (an unrolled loop) takes
// g++ minutes in register allocation; chunks of this size compile in linear time.
constexpr int kNodesPerChunk = 64;

std::string float_lit(double f) {
  if (std::isnan(f)) return "kg::kNaN";
  if (std::isinf(f)) return f > 0 ? "kg::kInf" : "(-kg::kInf)";
  return fmt::format("{:.17g}", f);
}

std::string arg_cpp(const Graph& g, const Arg& a) {
  switch (a.kind) {
    case Arg::ValueRef:
      return g.value(a.value).kind == Value::Tensor ? fmt::format("kg::A({})", value_var(g, a.value)) : value_var(g, a.value);
    case Arg::Int: return fmt::format("kg::A::I({}LL)", a.i);
    case Arg::Float: return fmt::format("kg::A::F({})", float_lit(a.f));
    case Arg::Bool: return fmt::format("kg::A::Bo({})", a.i ? "true" : "false");
    case Arg::Str: {
      std::string s;
      for (char c : a.s)
        if (std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == ' ' || c == '-') s += c;
      return fmt::format("kg::A::S(\"{}\")", s);
    }
    case Arg::DTypeArg: return fmt::format("kg::A::I({})", static_cast<int>(a.dtype));
    case Arg::Sym: return fmt::format("kg::A::I(static_cast<int64_t>({}))", expr_cpp(a.s));
    case Arg::List: {
      std::string s = "kg::A::L({";
      for (size_t i = 0; i < a.list.size(); ++i) s += (i ? ", " : "") + arg_cpp(g, a.list[i]);
      return s + "})";
    }
    default: return "kg::A()";
  }
}

std::string emit_constant(const Graph& g, const Constant& c) {
  const Value& v = g.value(c.value);
  std::string data;
  for (size_t i = 0; i < c.data.size(); ++i) data += (i ? "," : "") + float_lit(c.data[i]);
  if (v.kind == Value::Scalar)
    return fmt::format("  {} = kg::A::F({});\n", value_var(g, c.value), c.data.empty() ? "0" : float_lit(c.data[0]));
  std::string shape;
  for (size_t i = 0; i < v.type.shape.size(); ++i) shape += (i ? ", " : "") + expr_cpp(v.type.shape[i].expr);
  return fmt::format("  static const double c{}[] = {{{}}};\n  {} = kg::from_data(c{}, {}, {{{}}}, {});\n", c.value,
                     data.empty() ? "0" : data, value_var(g, c.value), c.value, c.data.size(), shape,
                     static_cast<int>(v.type.dtype));
}

std::string emit_node(const Graph& g, const Node& n) {
  std::string pos, kw, dts;
  for (size_t i = 0; i < n.args.size(); ++i) pos += (i ? ", " : "") + arg_cpp(g, n.args[i]);
  for (const auto& [k, a] : n.kwargs) kw += fmt::format("{}{{\"{}\", {}}}", kw.empty() ? "" : ", ", k, arg_cpp(g, a));
  for (size_t i = 0; i < n.outputs.size(); ++i)
    dts += (i ? ", " : "") + std::to_string(n.outputs[i] < 0 ? -1 : static_cast<int>(g.value(n.outputs[i]).type.dtype));
  std::string s = fmt::format("  {{ kg::R r = {}({{{}}}, {{{}}}, {{{}}});", op_symbol(n.op), pos, kw, dts);
  for (size_t i = 0; i < n.outputs.size(); ++i) {
    const int o = n.outputs[i];
    if (o < 0) continue;
    s += fmt::format(" {} = r.at({}){};", value_var(g, o), i, g.value(o).kind == Value::Tensor ? ".t" : "");
  }
  return s + " }\n";
}

}  // namespace

std::string expr_cpp(const std::string& expr, const std::string& prefix, const std::string& fn_prefix) {
  std::string out;
  for (size_t i = 0; i < expr.size();) {
    const char c = expr[i];
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      size_t j = i;
      while (j < expr.size() && (std::isalnum(static_cast<unsigned char>(expr[j])) || expr[j] == '_')) ++j;
      const std::string id = expr.substr(i, j - i);
      out += (id == "max" || id == "min") ? fn_prefix + id : prefix + id;
      i = j;
    } else if (c == '/' && i + 1 < expr.size() && expr[i + 1] == '/') {
      out += "/";
      i += 2;
    } else {
      out += c;
      ++i;
    }
  }
  return out;
}

namespace {

// "<input>.shape[d]" for the first input dimension named exactly `axis`; "" when none is.
std::string input_dim(const Graph& g, const std::string& axis) {
  for (const auto& in : g.inputs) {
    const Value& v = g.value(in.value);
    if (v.kind != Value::Tensor) continue;
    for (size_t d = 0; d < v.type.shape.size(); ++d)
      if (v.type.shape[d].expr == axis) return fmt::format("{}.shape[{}]", in.name, d);
  }
  return "";
}

}  // namespace

std::string emit_axes(const Graph& g, std::vector<std::string>* names) {
  std::string out;
  std::set<std::string> done;
  for (const auto& [name, a] : g.axes.items()) {
    const std::string type = a.value("type", std::string()), dim = input_dim(g, name);
    if (type == "const") {
      out += fmt::format("  const int64_t ax_{} = {};\n", name, a.value("value", int64_t(0)));
    } else if (type == "var") {
      out += dim.empty() ? fmt::format("  const int64_t ax_{} = 0;  // not the size of any input dimension\n", name)
                         : fmt::format("  const int64_t ax_{} = {};\n", name, dim);
    } else if (type == "expr" && !dim.empty()) {  // derived, but an input's size says it directly
      out += fmt::format("  const int64_t ax_{} = {};\n", name, dim);
    } else {
      continue;
    }
    done.insert(name);
  }
  // Integer scalar inputs may size tensors too.
  for (const auto& in : g.inputs) {
    const Value& v = g.value(in.value);
    if (v.kind == Value::Scalar && !dtype_is_float(v.type.dtype) && !done.count(in.name)) {
      out += fmt::format("  const int64_t ax_{} = static_cast<int64_t>({});\n", in.name, in.name);
      done.insert(in.name);
    }
  }
  // Derived axes, in dependency order.
  for (int round = 0; round < 8; ++round)
    for (const auto& [name, a] : g.axes.items()) {
      if (a.value("type", std::string()) != "expr" || done.count(name)) continue;
      const std::string e = a.value("expression", std::string("0"));
      bool ready = true;
      for (const auto& n : Expr::parse(e).names()) ready = ready && done.count(n);
      if (!ready) continue;
      out += fmt::format("  const int64_t ax_{} = static_cast<int64_t>({});\n", name, expr_cpp(e));
      done.insert(name);
    }
  for (const auto& n : done) out += fmt::format("  (void)ax_{};\n", n);
  if (names) names->assign(done.begin(), done.end());
  return out;
}

std::set<std::string> runtime_symbols(const std::string& src) {
  std::set<std::string> out;
  static const std::regex sc(R"(KG_SCALAR2\((\w+),)");
  for (std::sregex_iterator it(src.begin(), src.end(), sc), e; it != e; ++it) out.insert("scalar_" + (*it)[1].str());
  static const std::regex op(R"(KG_OP\((\w+)\))"), un(R"(KG_UNARY\((\w+),)"), bin(R"(KG_BINARY\((\w+),)"), bin2(R"(KG_BINARY2\((\w+),)");
  for (std::sregex_iterator it(src.begin(), src.end(), op), e; it != e; ++it) out.insert((*it)[1]);
  for (std::sregex_iterator it(src.begin(), src.end(), un), e; it != e; ++it) out.insert("aten_" + (*it)[1].str() + "_default");
  for (std::sregex_iterator it(src.begin(), src.end(), bin), e; it != e; ++it) {
    out.insert("aten_" + (*it)[1].str() + "_Tensor");
    out.insert("aten_" + (*it)[1].str() + "_Scalar");
  }
  for (std::sregex_iterator it(src.begin(), src.end(), bin2), e; it != e; ++it) out.insert((*it)[1]);
  return out;
}

std::vector<std::string> ops_not_lowered(const Graph& g, const std::set<std::string>& lowered) {
  std::vector<std::string> out;
  for (const auto& n : g.nodes)
    if (!n.dead && !lowered.count(op_symbol(n.op)) && std::find(out.begin(), out.end(), n.op) == out.end()) out.push_back(n.op);
  return out;
}

std::string emit_host(const Graph& g0, const std::set<std::string>& lowered, const HostCodegenOptions& opt) {
  Graph g = g0;
  if (auto missing = ops_not_lowered(g, lowered); !missing.empty())
    user_error("graph of '{}': no host lowering for {}", g.problem, missing.front());
  const auto groups = fuse_groups(g, opt.fuse);
  const MemoryPlan mem = plan_memory(g);
  std::string s = fmt::format("\n// ── generated by KernelArc's graph generator for {} ──\nvoid run({}) {{\n", g.problem, run_params(g));
  s += emit_axes(g);
  s += fmt::format("  std::vector<kg::T> V({0});\n  std::vector<kg::A> S({0});\n", g.values.size());
  for (const auto& in : g.inputs) {
    const Value& v = g.value(in.value);
    if (v.kind == Value::Tensor) s += fmt::format("  {} = kg::load({});\n", value_var(g, in.value), in.name);
    else if (dtype_is_float(v.type.dtype)) s += fmt::format("  {} = kg::A::F({});\n", value_var(g, in.value), in.name);
    else s += fmt::format("  {} = kg::A::I(static_cast<int64_t>({}));\n", value_var(g, in.value), in.name);
  }
  for (const auto& c : g.constants) s += emit_constant(g, c);
  int group = -1, in_chunk = 0;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    if (n.dead) continue;
    if (in_chunk == 0) s += "  [&]() KG_GLUE {\n";
    if (n.group != group) {
      group = n.group;
      s += fmt::format("  // group {} ({})\n", group, groups[static_cast<size_t>(group)].kind);
    }
    s += emit_node(g, n);
    for (int v : mem.free_after[i]) s += fmt::format("  {} = {{}};\n", value_var(g, v));
    if (++in_chunk == kNodesPerChunk) {
      s += "  }();\n";
      in_chunk = 0;
    }
  }
  if (in_chunk) s += "  }();\n";
  for (const auto& out : g.outputs) {
    if (g.value(out.value).kind != Value::Tensor) user_error("graph of '{}': output '{}' is not a tensor", g.problem, out.name);
    s += fmt::format("  kg::store({}, {});\n", value_var(g, out.value), out.name);
  }
  return s + "}\n";
}

}  // namespace ka::graph
