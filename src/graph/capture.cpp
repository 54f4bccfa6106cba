// graph/capture.cpp — the problem's graph through Oracle::capture (cached there), loaded as IR:
// symbolic first, per shape where the symbolic capture is refused.
#include "graph/capture.h"

#include <fmt/format.h>

#include <set>

#include "graph/load.h"
#include "oracle/oracle.h"
#include "util/error.h"

namespace ka::graph {
namespace {

// The refusal of one capture as a sentence: reason, op and reference line.
std::string refusal(const CaptureResult& r) {
  std::string s = r.reason().empty() ? "not captured" : r.reason();
  if (r.summary.contains("op") && r.summary["op"].is_string()) s += fmt::format(" (op {})", r.summary["op"].get<std::string>());
  if (r.summary.contains("source") && r.summary["source"].is_string())
    s += fmt::format(" at {}", r.summary["source"].get<std::string>());
  return s;
}

// Loads a captured graph into c (false and c.reason set when it cannot be read).
bool load_into(Capture& c, const CaptureResult& r) {
  try {
    c.graphs.push_back(load_graph(r.dir));
    return true;
  } catch (const UserError& e) {
    c.reason = fmt::format("captured graph unreadable: {}", e.what());
    return false;
  }
}

// One static capture per distinct shape binding of p's workloads; c.captured when all succeed.
void capture_per_shape(const Problem& p, const Oracle& oracle, Capture& c) {
  std::set<std::string> seen;
  for (const auto& w : p.workloads) {
    if (!seen.insert(w.shape_binding()).second) continue;
    const CaptureResult r = oracle.capture(p, &w);
    if (!r.captured) {
      c.reason = fmt::format("{}; per shape, workload {}: {}", c.per_shape_because, w.line, refusal(r));
      c.graphs.clear();
      return;
    }
    if (c.graphs.empty()) c.dir = r.dir;
    if (!load_into(c, r)) {
      c.graphs.clear();
      return;
    }
  }
  c.captured = !c.graphs.empty();
  if (c.captured) c.reason.clear();
}

}  // namespace

Capture capture_problem(const Problem& p) {
  Capture c;
  try {
    const Oracle oracle("cpu");
    const CaptureResult r = oracle.capture(p);
    c.dir = r.dir;
    if (r.captured) {
      c.captured = load_into(c, r);
      return c;
    }
    c.reason = refusal(r);
    if (r.transient || p.workloads.empty()) return c;
    c.per_shape_because = c.reason;
    capture_per_shape(p, oracle, c);
    if (!c.captured) c.per_shape_because.clear();
  } catch (const UserError& e) {
    c.reason = fmt::format("capture failed: {}", e.what());
    c.per_shape_because.clear();
    c.graphs.clear();
    c.captured = false;
  }
  return c;
}

}  // namespace ka::graph
