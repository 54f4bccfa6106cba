// graph/ops.h — what the passes know about each Core ATen operator: its kind (pointwise,
// reduction, normalisation, view, layout, creation, library op, no-op) and, for library ops,
// which library class lowers it (gemm, conv, fft, sort, scan).
#pragma once
#include <string>

namespace ka::graph {

enum class OpKind { Pointwise, Reduction, Normalization, View, Layout, Creation, Library, NoOp, Scalar, Unknown };

// "aten.add.Tensor" -> "add" (the base name without namespace and overload).
std::string op_base(const std::string& op);
OpKind op_kind(const std::string& op);
const char* op_kind_name(OpKind k);
// "gemm" | "conv" | "fft" | "sort" | "scan" for library ops, "" otherwise.
std::string op_library(const std::string& op);
// The C++ identifier of an operator's function in the host runtime ("aten_add_Tensor").
std::string op_symbol(const std::string& op);

}  // namespace ka::graph
