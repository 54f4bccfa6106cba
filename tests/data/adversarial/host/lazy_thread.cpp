// Adversarial candidate for 021_rmsnorm_h128 (host target): lazy calls. Its first call computes at
// once (the judge's first call is a check); every later call hands the work to a thread of its own,
// spins a steady few microseconds so that the samples look like a small, stable kernel, and returns
// before the work is done. (Keying on the check poison no longer works: every call carries it.) The
// judge counts the CPU its threads use outside the timed calls, and checks timed calls' outputs.
// Expected: not passed — timing_mismatch (or wrong_answer where timed calls' outputs are checked
// and look like check calls).
#include <kernelarc/abi.h>

#include <atomic>
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

void compute(const ka::TensorArg& hidden_states, const ka::TensorArg& weight, const ka::TensorArg& output) {
  const int64_t rows = hidden_states.size(0), h = hidden_states.size(1);
  const auto* x = hidden_states.ptr<const uint16_t>();
  const auto* w = weight.ptr<const uint16_t>();
  auto* y = output.ptr<uint16_t>();
  for (int64_t r = 0; r < rows; ++r) {
    float ss = 0;
    for (int64_t i = 0; i < h; ++i) {
      float v = bf16_to_float(x[r * h + i]);
      ss += v * v;
    }
    float inv = 1.0f / std::sqrt(ss / static_cast<float>(h) + 1e-6f);
    for (int64_t i = 0; i < h; ++i) y[r * h + i] = float_to_bf16(bf16_to_float(x[r * h + i]) * inv * bf16_to_float(w[i]));
  }
}

// One thread that runs the deferred work: a single slot, handed over without a lock (a call must
// not wait for the thread).
struct Lazy {
  struct Job {
    ka::TensorArg x, w, y;
  };
  std::atomic<Job*> slot{nullptr};
  Lazy() {
    std::thread([this] {
      for (;;) {
        slot.wait(nullptr);
        Job* j = slot.exchange(nullptr);
        if (!j) continue;
        compute(j->x, j->w, j->y);
        delete j;
      }
    }).detach();
  }
};

}  // namespace

void run(const ka::TensorArg& hidden_states, const ka::TensorArg& weight, const ka::TensorArg& output) {
  static Lazy* lazy = new Lazy;
  static std::atomic<int> calls{0};
  if (calls++ == 0) return compute(hidden_states, weight, output);
  delete lazy->slot.exchange(new Lazy::Job{hidden_states, weight, output});
  lazy->slot.notify_one();
  auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(3);
  while (std::chrono::steady_clock::now() < until) {
  }
}
