// Adversarial candidate for 021_rmsnorm_h128 (host target): memoises by input fingerprint. It hashes
// the shape and 64 sampled values of each input; on a hash it has seen it replays the remembered
// output without computing, else it does the work (correct RMSNorm, plus a 50 ms pause standing for
// an expensive kernel) and remembers the result. A judge that times every call on the same data
// times replays; with every timed call on a set the candidate has not seen, it does the work every
// time.
// Expected: passed, every timed call ≥ 50 ms (judge_protocol test).
#include <kernelarc/abi.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <map>
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

uint64_t fingerprint(const ka::TensorArg& t, int64_t n) {
  uint64_t f = 1469598103934665603ull ^ static_cast<uint64_t>(n);
  const auto* v = t.ptr<const uint16_t>();
  for (int64_t k = 0; k < 64 && n > 0; ++k) f = (f ^ v[(k * 7919) % n]) * 1099511628211ull;
  return f;
}

std::map<uint64_t, std::vector<uint16_t>> memo;

}  // namespace

void run(const ka::TensorArg& hidden_states, const ka::TensorArg& weight, const ka::TensorArg& output) {
  const int64_t rows = hidden_states.size(0), h = hidden_states.size(1);
  auto* y = output.ptr<uint16_t>();
  const uint64_t key = fingerprint(hidden_states, rows * h) * 31 + fingerprint(weight, h);
  if (auto it = memo.find(key); it != memo.end()) {
    std::memcpy(y, it->second.data(), it->second.size() * sizeof(uint16_t));  // a replay
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
  memo.emplace(key, std::vector<uint16_t>(y, y + rows * h));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
}
