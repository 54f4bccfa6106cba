// rmsnorm.cpp — KernelArc family rmsnorm_host: bf16 RMSNorm and fused add + RMSNorm on the CPU
// (host target, native ABI). KernelArc prepends the defines (see family.json):
//   from the problem  KA_HIDDEN, KA_FUSED_ADD (1: a `residual` input), KA_EPS
//   knobs             KA_CHUNK    rows per chunk: the sums of squares of a chunk first, then its
//                                 outputs (x of the chunk stays in a float buffer in cache)
//                     KA_UNROLL   independent accumulators in the sum of squares
//                     KA_ACC      0: float accumulators; 1: double accumulators; 2: pairwise float
//                                 (blocks of 64 elements, then a tree of block sums)
//                     KA_WORKERS  threads for inputs of 64 Ki elements or more
// y = bf16_rn((x * inv_rms) * float(w)), x = float(hidden) [+ float(residual)],
// inv_rms = 1 / sqrt(sum(x²) / H + eps), all in fp32 apart from the accumulation mode. Inputs are
// only read; any row count and any hidden size (the width is read from the tensor) work.
#include <kernelarc/abi.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#if !defined(KA_FUSED_ADD) || !defined(KA_EPS) || !defined(KA_CHUNK) || !defined(KA_UNROLL) || !defined(KA_ACC) || \
    !defined(KA_WORKERS)
#error "rmsnorm_host: the problem defines and knobs must be defined (KernelArc does this)"
#endif

namespace {

constexpr int64_t kChunk = KA_CHUNK;
constexpr int kUnroll = KA_UNROLL;
constexpr int kAcc = KA_ACC;
constexpr int kWorkers = KA_WORKERS;
constexpr bool kAdd = KA_FUSED_ADD != 0;
static_assert(kChunk >= 1 && kUnroll >= 1 && kWorkers >= 1 && kAcc >= 0 && kAcc <= 2, "bad knob values");

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

// Sum of x[i]² over [0, n) with kUnroll accumulators of type T, combined pairwise.
template <typename T>
T sum_sq_lanes(const float* x, int64_t n) {
  T acc[kUnroll] = {};
  int64_t i = 0;
  for (; i + kUnroll <= n; i += kUnroll)
    for (int u = 0; u < kUnroll; ++u) acc[u] += static_cast<T>(x[i + u]) * static_cast<T>(x[i + u]);
  for (int u = 0; i < n; ++i, ++u) acc[u] += static_cast<T>(x[i]) * static_cast<T>(x[i]);
  for (int w = kUnroll; w > 1; w = (w + 1) / 2)
    for (int u = 0; u + (w + 1) / 2 < w; ++u) acc[u] += acc[u + (w + 1) / 2];
  return acc[0];
}

float sum_squares(const float* x, int64_t n) {
  if constexpr (kAcc == 0) {
    return sum_sq_lanes<float>(x, n);
  } else if constexpr (kAcc == 1) {
    return static_cast<float>(sum_sq_lanes<double>(x, n));
  } else {
    constexpr int64_t kBlock = 64;
    const int64_t nb = (n + kBlock - 1) / kBlock;
    float stack[64];  // block sums, combined pairwise as they complete (a binary counter)
    int64_t count[64];
    int top = 0;
    for (int64_t b = 0; b < nb; ++b) {
      stack[top] = sum_sq_lanes<float>(x + b * kBlock, std::min(kBlock, n - b * kBlock));
      count[top++] = 1;
      while (top >= 2 && count[top - 1] == count[top - 2]) {
        stack[top - 2] += stack[top - 1];
        count[top - 2] *= 2;
        --top;
      }
    }
    float s = 0.f;
    while (top > 0) s += stack[--top];
    return s;
  }
}

struct Args {
  const uint16_t* hs;
  const uint16_t* res;
  const float* w;
  uint16_t* out;
  int64_t h;
  float eps;
};

// Rows [r0, r1), a chunk at a time.
void rows_range(const Args& a, int64_t r0, int64_t r1) {
  std::vector<float> xbuf(static_cast<size_t>(kChunk * a.h));
  float inv[kChunk];
  for (int64_t c0 = r0; c0 < r1; c0 += kChunk) {
    const int64_t c1 = std::min(r1, c0 + kChunk);
    for (int64_t r = c0; r < c1; ++r) {
      float* x = xbuf.data() + (r - c0) * a.h;
      const uint16_t* hs = a.hs + r * a.h;
      for (int64_t i = 0; i < a.h; ++i) x[i] = bf16_to_float(hs[i]);
      if constexpr (kAdd) {
        const uint16_t* rs = a.res + r * a.h;
        for (int64_t i = 0; i < a.h; ++i) x[i] += bf16_to_float(rs[i]);
      }
      inv[r - c0] = 1.0f / std::sqrt(sum_squares(x, a.h) / static_cast<float>(a.h) + a.eps);
    }
    for (int64_t r = c0; r < c1; ++r) {
      const float* x = xbuf.data() + (r - c0) * a.h;
      const float s = inv[r - c0];
      uint16_t* y = a.out + r * a.h;
      for (int64_t i = 0; i < a.h; ++i) {
        const float t = x[i] * s;
        y[i] = float_to_bf16(t * a.w[i]);
      }
    }
  }
}

void launch(const ka::TensorArg& hidden_states, const ka::TensorArg* residual, const ka::TensorArg& weight,
            const ka::TensorArg& output) {
  if (hidden_states.ndim < 1) return;
  const int64_t h = hidden_states.size(-1);
  if (h <= 0) return;
  const int64_t rows = hidden_states.numel() / h;
  if (rows <= 0) return;
  std::vector<float> wf(static_cast<size_t>(h));
  const auto* w = weight.ptr<const uint16_t>();
  for (int64_t i = 0; i < h; ++i) wf[i] = bf16_to_float(w[i]);
  const Args a{hidden_states.ptr<const uint16_t>(), kAdd ? residual->ptr<const uint16_t>() : nullptr, wf.data(),
               output.ptr<uint16_t>(), h, static_cast<float>(KA_EPS)};
  int64_t workers = kWorkers;
  if (rows * h < (int64_t(1) << 16)) workers = 1;
  workers = std::min(workers, (rows + kChunk - 1) / kChunk);
  if (workers <= 1) {
    rows_range(a, 0, rows);
    return;
  }
  // Contiguous ranges of whole chunks; this thread takes the first (and any a thread could not take).
  const int64_t chunks = (rows + kChunk - 1) / kChunk;
  std::vector<std::pair<int64_t, int64_t>> ranges;
  for (int64_t t = 0, start = 0; t < workers; ++t) {
    const int64_t n = chunks / workers + (t < chunks % workers ? 1 : 0);
    const int64_t end = std::min(rows, start + n * kChunk);
    ranges.emplace_back(start, end);
    start = end;
  }
  std::vector<std::thread> pool;
  for (size_t t = 1; t < ranges.size(); ++t) {
    try {
      pool.emplace_back(rows_range, std::cref(a), ranges[t].first, ranges[t].second);
    } catch (const std::system_error&) {
      rows_range(a, ranges[t].first, ranges[t].second);
    }
  }
  rows_range(a, ranges[0].first, ranges[0].second);
  for (auto& th : pool) th.join();
}

}  // namespace

#if KA_FUSED_ADD
void run(const ka::TensorArg& hidden_states, const ka::TensorArg& residual, const ka::TensorArg& weight,
         const ka::TensorArg& output) {
  launch(hidden_states, &residual, weight, output);
}
#else
void run(const ka::TensorArg& hidden_states, const ka::TensorArg& weight, const ka::TensorArg& output) {
  launch(hidden_states, nullptr, weight, output);
}
#endif
