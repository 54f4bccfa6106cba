// graph/passes.h — the generator's passes over the IR, one file each:
//   pass_simplify.cpp  no-ops, identities (same-dtype copies, same-shape views), dead code
//   pass_views.cpp     view/permute folding: chains of reshapes and of permutes become one op
//   pass_fuse.cpp      kernel groups: reductions, normalisations, layout and library ops are roots;
//                      pointwise and view ops join their only consumer's group (Inductor-like)
//   pass_library.cpp   library-op selection: gemm / conv / fft / sort / scan per heavy node
//   pass_memory.cpp    liveness, frees after last use, buffer slots reused by equal size
//   pass_reroll.cpp    repeated subgraphs of unrolled loops (period and trip count)
//   pass_scaled_mm.cpp fp8 _scaled_mm as float32 conversions, a GEMM and the scales (backends
//                      without fp8 GEMMs)
//   pass_static_forms.cpp  mask fills as where, max/min of every element as amax/amin (CUDA)
#pragma once
#include <map>
#include <string>
#include <vector>

#include "graph/ir.h"

namespace ka::graph {

// Each returns how many nodes it changed or removed.
int simplify(Graph& g);
int fold_views(Graph& g);

struct Group {
  int id = -1;
  std::vector<int> nodes;     // node indices, topological order
  int root = -1;              // the node whose kind names the group
  std::string kind;           // "pointwise", "reduction", "normalization", "layout", "library", ...
};
// Assigns Node::group; `fuse` 0 keeps every node in a group of its own.
std::vector<Group> fuse_groups(Graph& g, bool fuse = true);

// Sets Node::library; returns the number of library nodes.
int select_library(Graph& g);

struct MemoryPlan {
  std::vector<std::vector<int>> free_after;  // per node: values dead after it
  std::map<int, int> slot;                   // materialised intermediate value -> buffer slot
  int slots = 0;
};
MemoryPlan plan_memory(const Graph& g);

struct RepeatRegion {
  int start = 0;    // first node index of the first repetition (live-node order)
  int period = 0;   // nodes per repetition
  int count = 0;    // repetitions
};
// Maximal runs of an identical op sequence (same ops and constant arguments) repeated ≥ 3 times.
std::vector<RepeatRegion> find_repeats(const Graph& g, int min_count = 3);

// Replaces each fp8 `_scaled_mm` by float32 conversions of its operands, mm, the scale products,
// the bias and the conversion to out_dtype (its output value kept); returns how many.
int expand_scaled_mm(Graph& g);

// Static forms for the CUDA backend (pass_static_forms.cpp): `t[mask] = c` (index_put through a
// boolean mask of t's shape, one-element value) as where(mask, c, t); max/min of every element as
// amax/amin over every dim. Returns how many nodes changed.
int static_forms(Graph& g);

// Runs simplify and fold_views to a fixed point, then library selection.
void run_passes(Graph& g);

}  // namespace ka::graph
