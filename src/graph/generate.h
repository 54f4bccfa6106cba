// graph/generate.h — the graph family's generator: captured graph → passes → backend source.
// Families whose family.json says "generator": "graph" (families/graph_host, families/graph_cuda) apply to a problem
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
  size_t shapes = 0;                       // captured per shape: how many (0: one symbolic graph)
  std::string per_shape_because;           // why the symbolic capture was refused
  bool ok() const { return captured && ops_not_lowered.empty(); }
};

// Capture + passes + lowering check for a backend ("host": against the runtime source's functions;
// "cuda": the CUDA code generator's op set), cached per definition, runtime and target.
Lowering check_lowering(const Problem& p, const std::string& runtime_source, const std::string& target = "host");
// The generated code to append to the runtime (UserError when the problem does not lower). Knobs
// the generator reads: FUSE (both backends), TF32 (cuda: honoured only where every workload's
// tolerance is at least 1e-2 relative and absolute).
std::string generate_source(const Problem& p, const std::string& runtime_source, const std::map<std::string, int64_t>& knobs,
                            const std::string& target = "host");
// Whether TF32 GEMMs stay within the problem's tolerance (every workload's max_rtol and max_atol >= 1e-2).
bool tf32_allowed(const Problem& p);

}  // namespace ka::graph
