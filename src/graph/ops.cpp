// graph/ops.cpp — the operator classification table used by the passes.
#include "graph/ops.h"

#include <map>
#include <set>

namespace ka::graph {
namespace {

const std::set<std::string>& pointwise() {
  static const std::set<std::string> s{
      "abs", "neg", "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sqrt", "rsqrt", "sin", "cos", "tan",
      "asin", "acos", "atan", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh", "erf", "erfc", "sigmoid",
      "reciprocal", "sign", "sgn", "floor", "ceil", "trunc", "frac", "round", "relu", "silu", "gelu", "logical_not",
      "bitwise_not", "isnan", "isinf", "isfinite", "square", "add", "sub", "rsub", "mul", "div", "maximum", "minimum",
      "fmax", "fmin", "eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or", "logical_xor", "bitwise_and",
      "bitwise_or", "bitwise_xor", "bitwise_left_shift", "bitwise_right_shift", "__lshift__", "__rshift__", "atan2",
      "hypot", "copysign", "fmod", "remainder", "floor_divide", "pow", "xlogy", "where", "clamp", "clamp_min",
      "clamp_max", "lerp", "masked_fill", "_to_copy", "convert_element_type", "clone", "lift_fresh_copy",
      "contiguous", "copy"};
  return s;
}

const std::map<std::string, OpKind>& others() {
  static const std::map<std::string, OpKind> m{
      {"sum", OpKind::Reduction}, {"mean", OpKind::Reduction}, {"prod", OpKind::Reduction},
      {"amax", OpKind::Reduction}, {"amin", OpKind::Reduction}, {"max", OpKind::Reduction},
      {"min", OpKind::Reduction}, {"argmax", OpKind::Reduction}, {"argmin", OpKind::Reduction},
      {"var", OpKind::Reduction}, {"var_mean", OpKind::Reduction}, {"any", OpKind::Reduction},
      {"all", OpKind::Reduction}, {"logsumexp", OpKind::Reduction},
      {"_softmax", OpKind::Normalization}, {"_log_softmax", OpKind::Normalization},
      {"_safe_softmax", OpKind::Normalization}, {"native_layer_norm", OpKind::Normalization},
      {"native_group_norm", OpKind::Normalization}, {"_native_batch_norm_legit_no_training", OpKind::Normalization},
      {"view", OpKind::View}, {"_unsafe_view", OpKind::View}, {"reshape", OpKind::View},
      {"permute", OpKind::View}, {"expand", OpKind::View}, {"expand_copy", OpKind::View},
      {"alias", OpKind::View}, {"detach", OpKind::View}, {"unsqueeze", OpKind::View},
      {"squeeze", OpKind::View}, {"t", OpKind::View}, {"transpose", OpKind::View}, {"slice", OpKind::View},
      {"select", OpKind::View}, {"as_strided", OpKind::View}, {"split_with_sizes", OpKind::View},
      {"split", OpKind::View}, {"unbind", OpKind::View}, {"unfold", OpKind::View}, {"diagonal", OpKind::View},
      {"cat", OpKind::Layout}, {"stack", OpKind::Layout}, {"constant_pad_nd", OpKind::Layout},
      {"flip", OpKind::Layout}, {"roll", OpKind::Layout}, {"repeat", OpKind::Layout}, {"tril", OpKind::Layout},
      {"triu", OpKind::Layout}, {"index_select", OpKind::Layout}, {"embedding", OpKind::Layout},
      {"gather", OpKind::Layout}, {"scatter", OpKind::Layout}, {"scatter_add", OpKind::Layout},
      {"scatter_reduce", OpKind::Layout}, {"index", OpKind::Layout}, {"index_put", OpKind::Layout},
      {"index_put_", OpKind::Layout}, {"index_add", OpKind::Layout}, {"one_hot", OpKind::Layout},
      {"slice_scatter", OpKind::Layout}, {"select_scatter", OpKind::Layout},
      {"full", OpKind::Creation}, {"full_like", OpKind::Creation}, {"zeros", OpKind::Creation},
      {"zeros_like", OpKind::Creation}, {"ones", OpKind::Creation}, {"ones_like", OpKind::Creation},
      {"empty", OpKind::Creation}, {"empty_strided", OpKind::Creation}, {"empty_like", OpKind::Creation},
      {"new_zeros", OpKind::Creation}, {"new_empty", OpKind::Creation}, {"new_full", OpKind::Creation},
      {"new_ones", OpKind::Creation}, {"arange", OpKind::Creation}, {"iota", OpKind::Creation},
      {"scalar_tensor", OpKind::Creation},
      {"mm", OpKind::Library}, {"bmm", OpKind::Library}, {"addmm", OpKind::Library},
      {"baddbmm", OpKind::Library}, {"matmul", OpKind::Library}, {"_scaled_mm", OpKind::Library},
      {"convolution", OpKind::Library}, {"_fft_r2c", OpKind::Library}, {"_fft_c2r", OpKind::Library},
      {"_fft_c2c", OpKind::Library}, {"sort", OpKind::Library}, {"topk", OpKind::Library},
      {"argsort", OpKind::Library}, {"cumsum", OpKind::Library}, {"cumprod", OpKind::Library},
      {"_assert_tensor_metadata", OpKind::NoOp}, {"_assert_scalar", OpKind::NoOp},
      {"sym_constrain_range_for_size", OpKind::NoOp}, {"_assert_async", OpKind::NoOp},
      {"sym_size", OpKind::Scalar}, {"sym_numel", OpKind::Scalar}, {"sym_stride", OpKind::Scalar},
      {"_local_scalar_dense", OpKind::Scalar}, {"item", OpKind::Scalar},
  };
  return m;
}

}  // namespace

std::string op_base(const std::string& op) {
  std::string s = op;
  const auto first = s.find('.');
  if (first != std::string::npos) s = s.substr(first + 1);
  const auto dot = s.find('.');
  if (dot != std::string::npos) s = s.substr(0, dot);
  return s;
}

OpKind op_kind(const std::string& op) {
  if (op.rfind("scalar.", 0) == 0) return OpKind::Scalar;
  const std::string b = op_base(op);
  if (pointwise().count(b)) return OpKind::Pointwise;
  auto it = others().find(b);
  return it == others().end() ? OpKind::Unknown : it->second;
}

const char* op_kind_name(OpKind k) {
  switch (k) {
    case OpKind::Pointwise: return "pointwise";
    case OpKind::Reduction: return "reduction";
    case OpKind::Normalization: return "normalization";
    case OpKind::View: return "view";
    case OpKind::Layout: return "layout";
    case OpKind::Creation: return "creation";
    case OpKind::Library: return "library";
    case OpKind::NoOp: return "noop";
    case OpKind::Scalar: return "scalar";
    default: return "unknown";
  }
}

std::string op_library(const std::string& op) {
  const std::string b = op_base(op);
  if (b == "mm" || b == "bmm" || b == "addmm" || b == "baddbmm" || b == "matmul" || b == "_scaled_mm") return "gemm";
  if (b == "convolution") return "conv";
  if (b.rfind("_fft", 0) == 0) return "fft";
  if (b == "sort" || b == "topk" || b == "argsort") return "sort";
  if (b == "cumsum" || b == "cumprod") return "scan";
  return "";
}

std::string op_symbol(const std::string& op) {
  std::string s;
  for (char c : op) s += (c == '.') ? '_' : c;
  return s;
}

}  // namespace ka::graph
