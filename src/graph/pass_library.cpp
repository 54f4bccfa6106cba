// graph/pass_library.cpp — library-op selection: matmul-like nodes become GEMMs (cuBLASLt on
// CUDA, blocked loops on host), convolutions cuDNN, FFTs cuFFT, sort/topk CUB radix sorts and
// cumulative ops CUB scans. The code generators read Node::library.
#include "graph/ops.h"
#include "graph/passes.h"

namespace ka::graph {

int select_library(Graph& g) {
  int n = 0;
  for (auto& node : g.nodes) {
    node.library = node.dead ? "" : op_library(node.op);
    if (!node.library.empty()) ++n;
  }
  return n;
}

void run_passes(Graph& g) {
  for (int round = 0; round < 8; ++round)
    if (fold_views(g) + simplify(g) == 0) break;
  select_library(g);
}

}  // namespace ka::graph
