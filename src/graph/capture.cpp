// graph/capture.cpp — the problem's graph through Oracle::capture (cached there), loaded as IR.
#include "graph/capture.h"

#include <fmt/format.h>

#include "graph/load.h"
#include "oracle/oracle.h"
#include "util/error.h"

namespace ka::graph {

Capture capture_problem(const Problem& p) {
  Capture c;
  CaptureResult r;
  try {
    r = Oracle("cpu").capture(p);
  } catch (const UserError& e) {
    c.reason = fmt::format("capture failed: {}", e.what());
    return c;
  }
  c.dir = r.dir;
  if (!r.captured) {
    c.reason = r.reason().empty() ? "not captured" : r.reason();
    if (r.summary.contains("op") && r.summary["op"].is_string()) c.reason += fmt::format(" (op {})", r.summary["op"].get<std::string>());
    if (r.summary.contains("source") && r.summary["source"].is_string())
      c.reason += fmt::format(" at {}", r.summary["source"].get<std::string>());
    return c;
  }
  try {
    c.graph = load_graph(r.dir);
    c.captured = true;
  } catch (const UserError& e) {
    c.reason = fmt::format("captured graph unreadable: {}", e.what());
  }
  return c;
}

}  // namespace ka::graph
