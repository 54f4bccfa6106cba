// graph/dispatch.h — what both backends' `run` share: the native-ABI parameter list of a graph,
// and the per-shape candidate (graph/capture.h): each shape's generated code in a namespace of
// its own, then a `run` that calls the one whose input shapes and baked-in scalars match.
#pragma once
#include <string>
#include <vector>

#include "graph/ir.h"

namespace ka::graph {

// `run`'s parameters: tensor inputs and every output as `const ka::TensorArg&`, float scalar
// inputs `double`, bool `bool`, other scalars `int64_t`, in the definition's order.
std::string run_params(const Graph& g);
// The parameters' names, comma-separated, in the same order.
std::string run_args(const Graph& g);
// The condition (C++) under which a static graph's code applies to a call: every tensor input's
// rank and sizes, every specialized scalar input's value.
std::string shape_condition(const Graph& g);
// Variant i's code (`codes[i]`, ending in its `run`) inside namespace ka_shape<i>, then `run`
// choosing among them by shape_condition; `otherwise` is the statement run when none matches.
std::string emit_dispatch(const std::vector<Graph>& graphs, const std::vector<std::string>& codes, const std::string& otherwise);

}  // namespace ka::graph
