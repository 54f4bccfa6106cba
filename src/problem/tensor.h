// problem/tensor.h — a host-side tensor: dtype, shape and contiguous row-major bytes. Inputs,
// reference outputs and candidate outputs all travel through the judge as these.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "problem/dtype.h"

namespace ka {

struct Tensor {
  DType dtype = DType::f32;
  std::vector<int64_t> shape;  // [] for a 0-D tensor
  bool scalar = false;         // the definition says `shape: null` (passed by value, not pointer)
  std::vector<std::byte> data;

  int64_t numel() const {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    return n;
  }
  size_t nbytes() const { return dtype_storage_bytes(dtype, numel()); }
  // Logical values (2 per element for float4_e2m1fn_x2).
  int64_t num_values() const { return numel() * dtype_values_per_element(dtype); }
  double value(int64_t i) const { return load_value(dtype, data.data(), i); }
};

std::string shape_str(const std::vector<int64_t>& shape);

}  // namespace ka
