// graph/codegen_cuda.h — the CUDA backend of the graph generator: for a graph after its passes,
// CUDA C++ over the graph_cuda runtime (families/graph_cuda/) ending in the native-ABI
// `run(inputs..., outputs...)`. Per fusion group (pass_fuse) of pointwise, broadcast, view, layout
// and creation ops one generated elementwise kernel computes the group's output from the output
// coordinate (index maths over the symbolic shapes, bound at run time; nothing inside a group is
// stored); reductions, softmax and layer/group norms are generated row kernels on the device
// layer's warp/block reductions (fp32 accumulation); mm/bmm/addmm/baddbmm are strided batched
// cuBLASLt GEMMs; groups made only of views and creations are never stored but recomputed inside
// the kernels that read them; intermediates live in one arena laid out by a liveness plan over
// the kernels. What it lowers is `cuda_ops_not_lowered`'s complement.
#pragma once
#include <string>
#include <vector>

#include "graph/ir.h"

namespace ka::graph {

struct CudaCodegenOptions {
  bool fuse = true;   // fusion groups (false: one kernel per op)
  bool tf32 = false;  // float32 GEMMs in TF32 (the caller decides whether the tolerance allows it)
};

// The source text to append to the runtime (UserError when a node does not lower).
std::string emit_cuda(const Graph& g, const CudaCodegenOptions& opt = {});
// Ops of the graph (live nodes) the CUDA backend does not lower, in first-use order; an op that
// lowers in general but not in this use (a dtype, a data-dependent scalar) is listed too.
std::vector<std::string> cuda_ops_not_lowered(const Graph& g);

}  // namespace ka::graph
