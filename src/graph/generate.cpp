// graph/generate.cpp — glue between a problem, its captured graph and a backend.
#include "graph/generate.h"

#include <map>
#include <mutex>

#include "graph/capture.h"
#include "graph/codegen_cuda.h"
#include "graph/codegen_host.h"
#include "graph/passes.h"
#include "util/error.h"
#include "util/hash.h"

namespace ka::graph {
namespace {

struct Entry {
  Lowering lowering;
  std::optional<Graph> graph;  // after the passes
};

// One capture per problem and process, whichever targets ask: a capture that failed (it ran out of
// time or memory) is not cached on disk, and would otherwise be tried again for every target.
const Capture& captured(const Problem& p) {
  static std::map<std::string, Capture> cache;  // under cached()'s lock
  if (auto it = cache.find(p.def.hash); it != cache.end()) return it->second;
  return cache.emplace(p.def.hash, capture_problem(p)).first->second;
}

Entry& cached(const Problem& p, const std::string& runtime_source, const std::string& target) {
  static std::mutex mu;
  static std::map<std::string, Entry> cache;
  const std::string key = p.def.hash + ":" + sha256_hex(runtime_source).substr(0, 16) + ":" + target;
  std::lock_guard<std::mutex> lock(mu);
  if (auto it = cache.find(key); it != cache.end()) return it->second;
  Entry e;
  const Capture& c = captured(p);
  e.lowering.captured = c.captured;
  e.lowering.reason = c.reason;
  if (c.captured && c.graph) {
    Graph g = *c.graph;
    run_passes(g);
    e.lowering.ops_not_lowered = target == "cuda" ? cuda_ops_not_lowered(g) : ops_not_lowered(g, runtime_symbols(runtime_source));
    e.graph = std::move(g);
  }
  return cache.emplace(key, std::move(e)).first->second;
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
  const auto fuse = knobs.find("FUSE");
  if (target == "cuda") {
    CudaCodegenOptions opt;
    if (fuse != knobs.end()) opt.fuse = fuse->second != 0;
    const auto tf32 = knobs.find("TF32");
    opt.tf32 = tf32 != knobs.end() && tf32->second != 0 && tf32_allowed(p);
    return emit_cuda(*e.graph, opt);
  }
  HostCodegenOptions opt;
  if (fuse != knobs.end()) opt.fuse = fuse->second != 0;
  return emit_host(*e.graph, runtime_symbols(runtime_source), opt);
}

}  // namespace ka::graph
