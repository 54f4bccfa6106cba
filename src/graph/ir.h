// graph/ir.h — the operator-graph IR the generator works on: SSA values (tensors with symbolic
// shapes in the problem's own axis expression language, optional strides; scalars), nodes calling
// Core ATen ops with their encoded arguments, the definition's inputs and outputs, constants, and
// the annotations the passes add (kernel groups, library kinds, buffer slots).
//
// A dimension is an expression string over the definition's axes ("batch_size * 4", "4096").
// Dims keep an optional upper bound so that a bounded data-dependent size (MoE token counts,
// ragged lengths) can later be a Dim whose expression names a runtime symbol and whose bound
// sizes its buffers; nothing today produces one.
#pragma once
#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "problem/dtype.h"
#include "problem/expr.h"

namespace ka::graph {

struct Dim {
  std::string expr;                // axis expression ("seq_len", "4096", "batch_size * 2")
  std::optional<int64_t> bound;    // upper bound of a data-dependent size (unused until dynamic dims)
  // The integer when the expression is a literal; nullopt otherwise.
  std::optional<int64_t> constant() const;
  bool operator==(const Dim& o) const { return expr == o.expr; }
};

struct TensorType {
  DType dtype = DType::f32;
  std::vector<Dim> shape;
  std::vector<Dim> strides;        // empty: contiguous row-major
  bool complex = false;            // complex64/complex128 (dtype: the f32/f64 of each part)
};

struct Value {
  enum Kind { Tensor, Scalar } kind = Tensor;
  int id = -1;
  TensorType type;                 // scalars use type.dtype only
  int producer = -1;               // node index, -1 for inputs and constants
};

// One argument of a node, in the contract's encoding.
struct Arg {
  enum Kind { None, ValueRef, Int, Float, Bool, Str, DTypeArg, Sym, List, Device, Layout, MemoryFormat } kind = None;
  int value = -1;                  // ValueRef
  int64_t i = 0;                   // Int, Bool (0/1)
  double f = 0;                    // Float (inf/nan allowed)
  std::string s;                   // Str, Sym (expression), Device, Layout, MemoryFormat
  DType dtype = DType::f32;        // DTypeArg
  std::vector<Arg> list;           // List
  static Arg ref(int v) { Arg a; a.kind = ValueRef; a.value = v; return a; }
  static Arg of_int(int64_t v) { Arg a; a.kind = Int; a.i = v; return a; }
  static Arg of_float(double v) { Arg a; a.kind = Float; a.f = v; return a; }
};

struct Node {
  std::string op;                          // "aten.add.Tensor"
  std::vector<Arg> args;
  std::map<std::string, Arg> kwargs;
  std::vector<int> outputs;                // value ids, -1 for an unused tuple element
  std::string source;                      // reference line, for messages
  // Pass annotations.
  int group = -1;                          // kernel group (fusion pass)
  std::string library;                     // "gemm", "conv", "fft", "sort", "scan" (library pass)
  bool dead = false;                       // removed by a pass (kept for stable indices)
};

struct Constant {
  int value = -1;
  std::vector<double> data;                // inline data, or loaded from constants.safetensors
  std::string key;                         // safetensors key when not inline
};

struct NamedValue {
  std::string name;
  int value = -1;
  nlohmann::json specialized;              // inputs: the value the capture baked in (null: none)
};

struct Graph {
  std::string problem;
  nlohmann::json axes;                     // the definition's axes, verbatim
  std::vector<Value> values;               // indexed by id
  std::vector<NamedValue> inputs, outputs;
  std::vector<Constant> constants;
  std::vector<Node> nodes;                 // topological order

  const Value& value(int id) const { return values.at(static_cast<size_t>(id)); }
  Value& value(int id) { return values.at(static_cast<size_t>(id)); }
  // Nodes (indices, live only) reading each value.
  std::vector<std::vector<int>> users() const;
  // Value ids a node reads, in argument order (lists flattened; kwargs after args).
  std::vector<int> node_inputs(const Node& n) const;
  const Constant* constant(int value_id) const;
  bool is_input(int value_id) const;
  bool is_output(int value_id) const;
};

// Visits every value reference inside an argument (lists included).
template <typename F>
void for_each_ref(const Arg& a, F&& f) {
  if (a.kind == Arg::ValueRef) f(a.value);
  for (const auto& x : a.list) for_each_ref(x, f);
}

// Renames value references in an argument (old id -> new id where `map` has an entry).
void remap_refs(Arg& a, const std::map<int, int>& map);
// Every read of value `from` (node arguments and graph outputs) reads `to` instead.
void replace_uses(Graph& g, int from, int to);

}  // namespace ka::graph
