// kernelarc/abi.h — the native candidate ABI. A candidate is one C++ (host target) or CUDA C++
// (cuda target) source with an entry function in destination-passing style: every input in the
// definition's order, then every output, e.g.
//
//     void run(const ka::TensorArg& hidden_states, const ka::TensorArg& weight, double eps,
//              const ka::TensorArg& output);
//
// Tensors arrive as ka::TensorArg (device memory on cuda, host memory on host; contiguous,
// row-major; any pointer, never assume one seen before). Scalar inputs (`shape: null`) arrive by
// value as double/float (float dtypes), int64_t/int (integer dtypes) or bool. On cuda, launch on
// the default stream (or any stream; the judge waits for the whole device). The judge appends
// KA_ENTRY(<entry>) to the entry file; nothing else is needed. This header needs no CUDA or torch.
#pragma once
#include <cstdint>
#include <cstddef>
#include <type_traits>
#include <utility>

namespace ka {

// Element type codes; the order matches KernelArc's DType enum.
enum DTypeCode : int32_t {
  kFloat64 = 0, kFloat32, kFloat16, kBFloat16, kFloat8E4M3fn, kFloat8E5M2, kFloat4E2M1, kFloat4E2M1fnX2,
  kInt64, kInt32, kInt16, kInt8, kUInt8, kBool,
};

constexpr int kMaxDims = 8;

struct TensorArg {
  void* data;               // first element; for a scalar input, a host pointer to its value
  int32_t dtype;            // DTypeCode
  int32_t ndim;             // -1 for a scalar input
  int64_t shape[kMaxDims];
  int64_t strides[kMaxDims];  // in elements

  template <typename T>
  T* ptr() const { return static_cast<T*>(data); }
  int64_t size(int d) const { return shape[d < 0 ? d + ndim : d]; }
  int64_t numel() const {
    int64_t n = 1;
    for (int i = 0; i < ndim; ++i) n *= shape[i];
    return n;
  }
};

namespace detail {

template <typename T>
T scalar_as(const TensorArg& a) {
  switch (a.dtype) {
    case kFloat64: return static_cast<T>(*static_cast<const double*>(a.data));
    case kFloat32: return static_cast<T>(*static_cast<const float*>(a.data));
    case kInt64: return static_cast<T>(*static_cast<const int64_t*>(a.data));
    case kInt32: return static_cast<T>(*static_cast<const int32_t*>(a.data));
    case kInt16: return static_cast<T>(*static_cast<const int16_t*>(a.data));
    case kInt8: return static_cast<T>(*static_cast<const int8_t*>(a.data));
    case kUInt8:
    case kBool: return static_cast<T>(*static_cast<const uint8_t*>(a.data));
    default: return static_cast<T>(*static_cast<const double*>(a.data));
  }
}

template <typename P>
decltype(auto) convert_arg(const TensorArg& a) {
  using D = std::remove_cv_t<std::remove_reference_t<P>>;
  if constexpr (std::is_same_v<D, TensorArg>) return (a);
  else if constexpr (std::is_arithmetic_v<D>) return scalar_as<D>(a);
  else static_assert(sizeof(D) == 0, "entry parameters must be ka::TensorArg or arithmetic scalars");
}

template <typename R, typename... P, size_t... I>
int invoke(R (*fn)(P...), const TensorArg* args, int nargs, std::index_sequence<I...>) {
  if (nargs != static_cast<int>(sizeof...(P))) return -1;  // arity mismatch with the definition
  fn(convert_arg<P>(args[I])...);
  return 0;
}

}  // namespace detail
}  // namespace ka

// Exports the entry function with C linkage for the judge's worker: args are the inputs then the
// outputs, in definition order. Returns 0, or -1 when the count differs from the entry's arity.
namespace ka::detail {
template <typename R, typename... P>
constexpr size_t arity(R (*)(P...)) { return sizeof...(P); }
}  // namespace ka::detail

#define KA_ENTRY(fn)                                                                          \
  extern "C" int kernelarc_entry(const ka::TensorArg* args, int nargs) {                      \
    return ka::detail::invoke(&fn, args, nargs, std::make_index_sequence<ka::detail::arity(&fn)>{}); \
  }
