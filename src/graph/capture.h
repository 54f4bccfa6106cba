// graph/capture.h — a problem's captured graph as IR, through Oracle::capture (capture.py,
// docs/graph-format.md; cached by the oracle, refusals too, so `coverage` and the graph family
// never re-run a failed capture).
//
// A reference is captured once with its var axes symbolic. Where that fails for a reason other
// than this machine's memory or time (Python control flow over a var axis's size, a guard on a
// shape), it is captured per shape instead: once for each distinct shape binding among the
// problem's workloads, every size a constant, and the generated candidate dispatches on the
// shapes (docs/graph-format.md, "Per-shape captures").
#pragma once
#include <filesystem>
#include <string>
#include <vector>

#include "graph/ir.h"
#include "problem/problem.h"

namespace ka::graph {

struct Capture {
  bool captured = false;
  std::string reason;                // why not (empty when captured)
  // Captured per shape: why the symbolic capture failed (empty when the graph is symbolic).
  std::string per_shape_because;
  std::filesystem::path dir;         // the cache folder holding graph.json (the first graph's)
  // One symbolic graph, or one graph per distinct shape binding (in workload order).
  std::vector<Graph> graphs;
  bool per_shape() const { return !per_shape_because.empty(); }
};

// Captures (or reads the cached capture of) a problem. Never throws for a problem that does not
// capture; a missing capture script is a reason like any other.
Capture capture_problem(const Problem& p);

}  // namespace ka::graph
