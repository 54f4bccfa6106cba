// Adversarial candidate for 021_rmsnorm_h128 (host target): counts on every timed call getting the
// same data. A call whose input sits exactly 256 bytes past the previous call's (the next buffer of
// a timing run's pool) copies the previous call's output back without reading the inputs; any
// other call (a check, the first call of a run) computes.
// A judge that gives the timed calls one set and checks none of them times copies; with timed
// calls rotating among sets and their outputs checked, a replay is caught.
// Expected verdict: wrong_answer.
#include <kernelarc/abi.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>

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

std::vector<uint16_t> last;
const char* last_input = nullptr;

}  // namespace

void run(const ka::TensorArg& hidden_states, const ka::TensorArg& weight, const ka::TensorArg& output) {
  const int64_t rows = hidden_states.size(0), h = hidden_states.size(1);
  auto* y = output.ptr<uint16_t>();
  const char* input = static_cast<const char*>(hidden_states.data);
  const bool next_in_pool = input == last_input + 256;
  last_input = input;
  if (static_cast<int64_t>(last.size()) == rows * h && next_in_pool) {
    std::memcpy(y, last.data(), last.size() * sizeof(uint16_t));  // inputs never read
    return;
  }
  const auto* x = hidden_states.ptr<const uint16_t>();
  const auto* w = weight.ptr<const uint16_t>();
  for (int64_t r = 0; r < rows; ++r) {
    float ss = 0;
    for (int64_t i = 0; i < h; ++i) {
      float v = bf16_to_float(x[r * h + i]);
      ss += v * v;
    }
    float inv = 1.0f / std::sqrt(ss / static_cast<float>(h) + 1e-6f);
    for (int64_t i = 0; i < h; ++i) y[r * h + i] = float_to_bf16(bf16_to_float(x[r * h + i]) * inv * bf16_to_float(w[i]));
  }
  last.assign(y, y + rows * h);
}
