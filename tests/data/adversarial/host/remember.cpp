// Adversarial candidate for 021_rmsnorm_h128 (host target): a caching cheat. The first call for a
// given shape computes the correct RMSNorm and keeps a copy of the result; every later call with
// that shape copies the remembered result into `output` without reading the inputs at all. It
// passes the first correctness check of each workload, but the timed calls run on input sets of
// their own and are checked: the first one sees the stale result.
// Expected verdict: wrong_answer.
#include <kernelarc/abi.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <map>
#include <vector>

namespace {

float bf16_to_float(uint16_t h) {
  uint32_t u = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

uint16_t float_to_bf16(float f) {  // round to nearest even; NaN stays NaN
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40);
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}

std::map<int64_t, std::vector<uint16_t>> remembered;  // numel -> the first result of that shape

}  // namespace

void run(const ka::TensorArg& hidden_states, const ka::TensorArg& weight, const ka::TensorArg& output) {
  const int64_t rows = hidden_states.size(0), h = hidden_states.size(1);
  auto* y = output.ptr<uint16_t>();
  if (auto it = remembered.find(rows * h); it != remembered.end()) {
    std::memcpy(y, it->second.data(), it->second.size() * sizeof(uint16_t));  // inputs never read
    return;
  }
  const auto* x = hidden_states.ptr<const uint16_t>();
  const auto* w = weight.ptr<const uint16_t>();
  for (int64_t r = 0; r < rows; ++r) {
    float ss = 0.f;
    for (int64_t i = 0; i < h; ++i) {
      float v = bf16_to_float(x[r * h + i]);
      ss += v * v;
    }
    const float inv = 1.0f / std::sqrt(ss * (1.0f / static_cast<float>(h)) + 1e-6f);
    for (int64_t i = 0; i < h; ++i) y[r * h + i] = float_to_bf16((bf16_to_float(x[r * h + i]) * inv) * bf16_to_float(w[i]));
  }
  remembered.emplace(rows * h, std::vector<uint16_t>(y, y + rows * h));
}
