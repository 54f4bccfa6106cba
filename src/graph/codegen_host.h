// graph/codegen_host.h — the host C++ backend: emits, for a graph after its passes, the native-ABI
// `run(inputs..., outputs...)` that calls the graph_host runtime (families/graph_host/graph_rt.cpp)
// once per live node, frees intermediates after their last use (the memory plan), and writes the
// outputs in the definition's dtypes.
#pragma once
#include <set>
#include <string>
#include <vector>

#include "graph/ir.h"

namespace ka::graph {

struct HostCodegenOptions {
  bool fuse = true;  // annotate kernel groups (fusion pass) in the emitted code
};

// The source text to append to the runtime. Throws UserError when an op has no runtime function
// (`lowered` names the runtime's functions, see runtime_symbols).
std::string emit_host(const Graph& g, const std::set<std::string>& lowered, const HostCodegenOptions& opt = {});
// The operator symbols ("aten_add_Tensor") a runtime source defines (KG_OP, KG_UNARY, KG_BINARY, KG_BINARY2).
std::set<std::string> runtime_symbols(const std::string& runtime_source);
// Ops of the graph (live nodes) that the runtime does not define, in first-use order.
std::vector<std::string> ops_not_lowered(const Graph& g, const std::set<std::string>& lowered);
// An axis expression as C++ over `ax_<name>` variables (Python // of non-negative sizes is /);
// `prefix` replaces "ax_" (the CUDA backend reads "E.ax_<name>" inside kernels), `fn_prefix` the
// namespace of max/min.
std::string expr_cpp(const std::string& expr, const std::string& prefix = "ax_", const std::string& fn_prefix = "kg::i");
// `const int64_t ax_<axis> = ...;` for every axis the graph's shapes or sym args can name: const
// axes as literals, var axes from the first input dimension naming them, integer scalar inputs,
// derived axes from their expressions. `names` (optional) receives the axis names bound.
std::string emit_axes(const Graph& g, std::vector<std::string>* names = nullptr);

}  // namespace ka::graph
