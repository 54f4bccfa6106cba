// graph/capture.h — a problem's captured graph as IR, through Oracle::capture (capture.py,
// docs/graph-format.md; cached by the oracle, refusals too, so `coverage` and the graph family
// never re-run a failed capture).
#pragma once
#include <filesystem>
#include <optional>
#include <string>

#include "graph/ir.h"
#include "problem/problem.h"

namespace ka::graph {

struct Capture {
  bool captured = false;
  std::string reason;                // why not (empty when captured)
  std::filesystem::path dir;         // the cache folder holding graph.json
  std::optional<Graph> graph;
};

// Captures (or reads the cached capture of) a problem. Never throws for a problem that does not
// capture; a missing capture script is a reason like any other.
Capture capture_problem(const Problem& p);

}  // namespace ka::graph
