// graph/pass_reroll.cpp — re-rolling: finds where a Python loop with a fixed trip count was
// unrolled by the tracer, as maximal runs of one op sequence (ops and non-value arguments equal,
// value ids free) repeated back to back at least `min_count` times. The regions let a code
// generator emit one loop body instead of `count` copies.
#include <functional>

#include "graph/passes.h"

namespace ka::graph {
namespace {

std::string arg_sig(const Arg& a) {
  switch (a.kind) {
    case Arg::ValueRef: return "v";
    case Arg::Int: return std::to_string(a.i);
    case Arg::Float: return std::to_string(a.f);
    case Arg::Bool: return a.i ? "T" : "F";
    case Arg::List: {
      std::string s = "[";
      for (const auto& x : a.list) s += arg_sig(x) + ",";
      return s + "]";
    }
    default: return a.s + "#" + std::to_string(static_cast<int>(a.kind));
  }
}

std::string node_sig(const Node& n) {
  std::string s = n.op + "(";
  for (const auto& a : n.args) s += arg_sig(a) + ",";
  for (const auto& [k, a] : n.kwargs) s += k + "=" + arg_sig(a) + ",";
  return s + ")";
}

}  // namespace

std::vector<RepeatRegion> find_repeats(const Graph& g, int min_count) {
  std::vector<std::string> sig;
  for (const auto& n : g.nodes)
    if (!n.dead) sig.push_back(node_sig(n));
  const int n = static_cast<int>(sig.size());
  std::vector<RepeatRegion> out;
  int i = 0;
  while (i < n) {
    RepeatRegion best;
    for (int p = 1; p <= (n - i) / min_count; ++p) {
      int count = 1;
      while (i + (count + 1) * p <= n) {
        bool same = true;
        for (int k = 0; k < p && same; ++k) same = sig[static_cast<size_t>(i + k)] == sig[static_cast<size_t>(i + count * p + k)];
        if (!same) break;
        ++count;
      }
      if (count >= min_count && count * p > best.count * best.period) best = RepeatRegion{i, p, count};
    }
    if (best.count >= min_count) {
      out.push_back(best);
      i += best.count * best.period;
    } else {
      ++i;
    }
  }
  return out;
}

}  // namespace ka::graph
