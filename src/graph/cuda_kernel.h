// graph/cuda_kernel.h — internals of the CUDA backend shared by its files:
//   cuda_expr.cpp      one device function per value a kernel computes: pointwise maths, views and
//                      layout ops as index maps, creations, leaf loads (which ops lower)
//   cuda_kernels.cpp   elementwise and row kernels (reductions, softmax, layer/group norm)
//   codegen_cuda.cpp   the plan (virtual groups, steps, GEMMs, memory) and the host `run`
// A Kernel collects, while its device functions are emitted, the stored tensors it reads (leaves):
// its Buf holds its outputs first, then the leaves. Device functions take (Env E, Buf B, coords i)
// and return the value's compute type at coordinate i of the value's shape.
#pragma once
#include <map>
#include <set>
#include <string>
#include <vector>

#include "graph/ir.h"
#include "graph/passes.h"

namespace ka::graph::cuda {

// Thrown where a node has no CUDA lowering (codegen_cuda.cpp turns it into a UserError or a list).
struct Unlowered {
  std::string op;
};

struct Plan {
  const Graph* g = nullptr;
  std::vector<Group> groups;
  std::vector<char> virtual_group;   // per group: views/creations only, recomputed by readers
  // Value's producer node (-1 for inputs and constants).
  int producer(int v) const { return g->value(v).producer; }
  int group_of(int v) const;
  bool is_virtual(int v) const;
};

struct Kernel {
  const Plan* plan = nullptr;
  int group = -1;                 // values of this group (and of virtual groups) are computed inline
  int outputs = 1;                // B.p[0 .. outputs) are written
  std::vector<int> leaves;        // stored values read, B.p[outputs + k]
  std::set<int> emitted;
  std::string code;               // device functions, dependencies first
  std::string fn(int v);          // emits f<v> (once) and returns its name
  std::string leaf(int v);        // "B.p[k]" of a stored value
  bool inline_value(int v) const;
};

// Helpers shared by the files.
std::string ctype(DType t);                       // "float", "double", "int64_t", "bool"
std::string dtcode(DType t);                      // "ka::kBFloat16"
std::string dim_expr(const Dim& d);               // "static_cast<I>(<axis expression over E.ax_*>)"
std::string numel_expr(const std::vector<Dim>& shape, const std::string& type = "int64_t");
std::string lin_expr(const std::string& coords, const std::vector<Dim>& shape);
// Statements that split linear index `idx` into coordinates `out[]` of `shape` (I-typed).
std::string delin_stmt(const std::string& idx, const std::string& out, const std::vector<Dim>& shape);
std::string arr_decl(const std::string& name, size_t rank);  // "I name[rank or 1]"
int norm_dim(int64_t d, size_t rank);
std::string scalar_arg(const Graph& g, const Arg& a, const std::string& T);  // literal or E field; "" when absent
bool scalar_ok(const Graph& g, const Arg& a);     // a scalar argument the kernels can read

// cuda_expr.cpp
bool expr_supported(const Graph& g, const Node& n);  // pointwise, view, layout and creation ops
std::string value_body(Kernel& k, int v);            // the body of f<v> for an inline value
bool is_scatter(const Node& n);                         // index_put, scatter_add, scatter: a scatter step
bool scatter_supported(const Graph& g, const Node& n);  // index_put, scatter_add, scatter
bool conv_supported(const Graph& g, const Node& n);     // convolution (direct, not transposed)
// The shape of x[indices] (index.Tensor's result; the elements index_put writes).
std::vector<Dim> index_result_shape(const Graph& g, const Node& n);
// The elements a scatter writes: index_result_shape for index_put, the index's shape for
// scatter_add and scatter.
std::vector<Dim> scatter_shape(const Graph& g, const Node& n);
// Device function `fput(E, B, i)` storing (or adding) the scatter's value for element i of
// scatter_shape into B.p[0] (the output, already holding the copied self).
std::string scatter_fn(Kernel& k, const Node& n);

// cuda_kernels.cpp
bool row_supported(const Graph& g, const Node& n);   // reductions and normalisations
// An elementwise kernel `name` storing one output: function `fn` (of k) over `shape`, as `dtype`.
struct EwOut {
  std::string fn;
  std::vector<Dim> shape;
  DType dtype = DType::f32;
  bool store = true;  // false: fn stores itself (called as a statement)
};
std::string ew_kernel(Kernel& k, const std::string& name, const EwOut& out);
std::string row_kernel(Kernel& k, const std::string& name, const Node& root);
// Host code launching a kernel with the buffer pointers `ptrs` (outputs, then leaves) and the
// leaves' element counts (host expressions; they pick 32- or 64-bit indexing).
std::string ew_launch(const Plan& p, const std::string& name, const std::vector<Dim>& shape, const std::vector<std::string>& ptrs,
                      const std::vector<std::string>& leaf_numels);
std::string row_launch(const Plan& p, const std::string& name, const Node& root, const std::vector<std::string>& ptrs,
                       const std::vector<std::string>& leaf_numels);

}  // namespace ka::graph::cuda
