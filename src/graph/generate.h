// graph/generate.h — the graph family's generator: captured graph → passes → backend source.
// Families whose family.json says "generator": "graph" (families/graph_host) apply to a problem
// exactly when its reference is captured and every op of the graph has a lowering in the
// family's runtime; their candidate source is the runtime followed by the generated `run`.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "problem/problem.h"

namespace ka::graph {

struct Lowering {
  bool captured = false;
  std::string reason;                      // why not captured
  std::vector<std::string> ops_not_lowered;
  bool ok() const { return captured && ops_not_lowered.empty(); }
};

// Capture + passes + lowering check against a runtime source (cached per definition and runtime).
Lowering check_lowering(const Problem& p, const std::string& runtime_source);
// The generated code to append to the runtime (UserError when the problem does not lower).
std::string generate_source(const Problem& p, const std::string& runtime_source, const std::map<std::string, int64_t>& knobs);

}  // namespace ka::graph
