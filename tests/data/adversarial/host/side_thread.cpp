// Control candidate for 021_rmsnorm_h128 (host target), legitimate: the host analogue of a kernel
// on a side stream. The rows are computed on a second thread (half of them) and this one, joined
// before returning, so the call is done when it returns.
// Expected: passed, timed like the single-thread solution.
#include <kernelarc/abi.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <thread>

namespace {

float bf16_to_float(uint16_t h) {
  uint32_t u = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

uint16_t float_to_bf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7fffffff) > 0x7f800000) return static_cast<uint16_t>((u >> 16) | 0x40);
  u += 0x7fff + ((u >> 16) & 1);
  return static_cast<uint16_t>(u >> 16);
}

}  // namespace

namespace {
void rows_range(const ka::TensorArg& hidden_states, const ka::TensorArg& weight, const ka::TensorArg& output,
                int64_t r0, int64_t r1) {
  const int64_t h = hidden_states.size(1);
  auto* y = output.ptr<uint16_t>();
  const auto* x = hidden_states.ptr<const uint16_t>();
  const auto* w = weight.ptr<const uint16_t>();
  for (int64_t r = r0; r < r1; ++r) {
    float ss = 0;
    for (int64_t i = 0; i < h; ++i) {
      float v = bf16_to_float(x[r * h + i]);
      ss += v * v;
    }
    float inv = 1.0f / std::sqrt(ss / static_cast<float>(h) + 1e-6f);
    for (int64_t i = 0; i < h; ++i) y[r * h + i] = float_to_bf16(bf16_to_float(x[r * h + i]) * inv * bf16_to_float(w[i]));
  }
}
}  // namespace

void run(const ka::TensorArg& hidden_states, const ka::TensorArg& weight, const ka::TensorArg& output) {
  const int64_t rows = hidden_states.size(0);
  std::thread side(rows_range, std::cref(hidden_states), std::cref(weight), std::cref(output), rows / 2, rows);
  rows_range(hidden_states, weight, output, 0, rows / 2);
  side.join();
}
