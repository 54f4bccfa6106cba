// graph/dispatch.cpp — run's parameter list and the per-shape dispatching `run`.
#include "graph/dispatch.h"

#include <fmt/format.h>

#include "util/error.h"

namespace ka::graph {

std::string run_params(const Graph& g) {
  std::string params;
  auto add = [&](const std::string& p) { params += (params.empty() ? "" : ", ") + p; };
  for (const auto& in : g.inputs) {
    const Value& v = g.value(in.value);
    if (v.kind == Value::Tensor) add("const ka::TensorArg& " + in.name);
    else if (dtype_is_float(v.type.dtype)) add("double " + in.name);
    else if (v.type.dtype == DType::boolean) add("bool " + in.name);
    else add("int64_t " + in.name);
  }
  for (const auto& out : g.outputs) add("const ka::TensorArg& " + out.name);
  return params;
}

std::string run_args(const Graph& g) {
  std::string args;
  for (const auto& in : g.inputs) args += (args.empty() ? "" : ", ") + in.name;
  for (const auto& out : g.outputs) args += (args.empty() ? "" : ", ") + out.name;
  return args;
}

std::string shape_condition(const Graph& g) {
  std::string c;
  auto add = [&](const std::string& t) { c += (c.empty() ? "" : " && ") + t; };
  for (const auto& in : g.inputs) {
    const Value& v = g.value(in.value);
    if (v.kind == Value::Tensor) {
      add(fmt::format("{}.ndim == {}", in.name, v.type.shape.size()));
      for (size_t d = 0; d < v.type.shape.size(); ++d) {
        const auto n = v.type.shape[d].constant();
        if (!n) user_error("graph of '{}': input '{}' has a symbolic size in a per-shape capture", g.problem, in.name);
        add(fmt::format("{}.shape[{}] == {}", in.name, d, *n));
      }
    } else if (in.specialized.is_boolean()) {
      add(fmt::format("{}{}", in.specialized.get<bool>() ? "" : "!", in.name));
    } else if (in.specialized.is_number_integer()) {
      add(fmt::format("{} == {}", in.name, in.specialized.get<int64_t>()));
    } else if (in.specialized.is_number()) {
      add(fmt::format("{} == {:.17g}", in.name, in.specialized.get<double>()));
    }
  }
  return c.empty() ? "true" : c;
}

std::string emit_dispatch(const std::vector<Graph>& graphs, const std::vector<std::string>& codes, const std::string& otherwise) {
  if (graphs.empty() || graphs.size() != codes.size()) user_error("per-shape dispatch: {} graphs, {} codes", graphs.size(), codes.size());
  std::string s;
  for (size_t i = 0; i < codes.size(); ++i) s += fmt::format("\nnamespace ka_shape{} {{\n{}}}  // namespace ka_shape{}\n", i, codes[i], i);
  s += fmt::format("\n// ── per-shape dispatch: {} captured shapes of {} ──\nvoid run({}) {{\n", graphs.size(), graphs[0].problem,
                   run_params(graphs[0]));
  const std::string args = run_args(graphs[0]);
  for (size_t i = 0; i < graphs.size(); ++i)
    s += fmt::format("  if ({}) return ka_shape{}::run({});\n", shape_condition(graphs[i]), i, args);
  return s + "  " + otherwise + "\n}\n";
}

}  // namespace ka::graph
