// graph/generate.cpp — glue between a problem, its captured graph and a backend.
#include "graph/generate.h"

#include <algorithm>
#include <map>
#include <mutex>

#include "graph/capture.h"
#include "graph/codegen_cuda.h"
#include "graph/codegen_host.h"
#include "graph/dispatch.h"
#include "graph/passes.h"
#include "util/error.h"
#include "util/hash.h"

namespace ka::graph {
namespace {

struct Entry {
  Lowering lowering;
  std::vector<Graph> graphs;  // after the passes: one symbolic graph, or one per captured shape
};

// The problem's identity for the caches: its definition, and (a per-shape capture depends on them)
// its workloads' shape bindings.
std::string problem_key(const Problem& p) {
  std::string bindings;
  for (const auto& w : p.workloads) bindings += w.shape_binding() + "\n";
  return p.def.hash + ":" + sha256_hex(bindings).substr(0, 16);
}

// One capture per problem and process, whichever targets ask: a capture that failed (it ran out of
// time or memory) is not cached on disk, and would otherwise be tried again for every target.
const Capture& captured(const Problem& p) {
  static std::map<std::string, Capture> cache;  // under cached()'s lock
  const std::string key = problem_key(p);
  if (auto it = cache.find(key); it != cache.end()) return it->second;
  return cache.emplace(key, capture_problem(p)).first->second;
}

// Ops of any of the graphs that the target does not lower, in first-use order.
std::vector<std::string> not_lowered(const std::vector<Graph>& graphs, const std::string& runtime_source, const std::string& target) {
  std::vector<std::string> out;
  for (const auto& g : graphs)
    for (auto& op : target == "cuda" ? cuda_ops_not_lowered(g) : ops_not_lowered(g, runtime_symbols(runtime_source)))
      if (std::find(out.begin(), out.end(), op) == out.end()) out.push_back(std::move(op));
  return out;
}

Entry& cached(const Problem& p, const std::string& runtime_source, const std::string& target) {
  static std::mutex mu;
  static std::map<std::string, Entry> cache;
  const std::string key = problem_key(p) + ":" + sha256_hex(runtime_source).substr(0, 16) + ":" + target;
  std::lock_guard<std::mutex> lock(mu);
  if (auto it = cache.find(key); it != cache.end()) return it->second;
  Entry e;
  const Capture& c = captured(p);
  e.lowering.captured = c.captured;
  e.lowering.reason = c.reason;
  if (c.captured) {
    e.lowering.shapes = c.per_shape() ? c.graphs.size() : 0;
    e.lowering.per_shape_because = c.per_shape_because;
    e.graphs = c.graphs;
    for (auto& g : e.graphs) {
      if (target == "cuda") {  // forms the CUDA kernels take: no fp8 GEMMs yet, no mask fills
        expand_scaled_mm(g);
        static_forms(g);
      }
      run_passes(g);
    }
    e.lowering.ops_not_lowered = not_lowered(e.graphs, runtime_source, target);
  }
  return cache.emplace(key, std::move(e)).first->second;
}

// The code of one graph for the target.
std::string emit_one(const Graph& g, const Problem& p, const std::string& runtime_source, const std::map<std::string, int64_t>& knobs,
                     const std::string& target) {
  const auto fuse = knobs.find("FUSE");
  if (target == "cuda") {
    CudaCodegenOptions opt;
    if (fuse != knobs.end()) opt.fuse = fuse->second != 0;
    const auto tf32 = knobs.find("TF32");
    opt.tf32 = tf32 != knobs.end() && tf32->second != 0 && tf32_allowed(p);
    return emit_cuda(g, opt);
  }
  HostCodegenOptions opt;
  if (fuse != knobs.end()) opt.fuse = fuse->second != 0;
  return emit_host(g, runtime_symbols(runtime_source), opt);
}

}  // namespace

Lowering check_lowering(const Problem& p, const std::string& runtime_source, const std::string& target) {
  return cached(p, runtime_source, target).lowering;
}

bool tf32_allowed(const Problem& p) {
  if (p.workloads.empty()) return false;
  for (const auto& w : p.workloads)
    if (w.tolerance.max_rtol < 1e-2 || w.tolerance.max_atol < 1e-2) return false;
  return true;
}

std::string generate_source(const Problem& p, const std::string& runtime_source, const std::map<std::string, int64_t>& knobs,
                            const std::string& target) {
  const Entry& e = cached(p, runtime_source, target);
  if (!e.lowering.captured) user_error("problem '{}' is not captured: {}", p.def.name, e.lowering.reason);
  if (!e.lowering.ops_not_lowered.empty())
    user_error("problem '{}': no lowering for {}", p.def.name, e.lowering.ops_not_lowered.front());
  if (e.lowering.shapes == 0) return emit_one(e.graphs.front(), p, runtime_source, knobs, target);
  std::vector<std::string> codes;
  for (const auto& g : e.graphs) codes.push_back(emit_one(g, p, runtime_source, knobs, target));
  // No captured shape matches: the host runtime throws (the worker reports it); a CUDA candidate
  // says so once on stderr and leaves the outputs unwritten, which the judge's check rejects.
  const std::string otherwise = target == "cuda"
      ? "static bool said = false;\n  if (!said) said = std::fprintf(stderr, \"graph_cuda: no captured shape matches this call\\n\") > 0;"
      : "kg::fail(\"no captured shape matches this call\");";
  return emit_dispatch(e.graphs, codes, otherwise);
}

}  // namespace ka::graph
