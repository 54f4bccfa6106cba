// Adversarial candidate for 021_rmsnorm_h128 (cuda target): tells check calls from timed ones by
// the outputs' prefill. It reads the output's first and last values back; only when both still
// hold the judge's NaN poison (0xFFFF) does it launch RMSNorm, otherwise a kernel that does nothing.
// A judge that prefills timed calls differently (zeros) times an empty kernel; with every call
// prefilled alike it computes every time.
// Expected: passed, at about the honest kernel's time plus a 2-byte read-back (bench/regress/judge_adversarial.sh).
#include <kernelarc/abi.h>

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

// One warp per row; y = bf16((x * rsqrt(mean(x^2) + 1e-6)) * w), all in fp32.
__global__ void rmsnorm_rows(const uint16_t* __restrict__ x, const uint16_t* __restrict__ w, uint16_t* __restrict__ y,
                             int64_t rows, int64_t h) {
  const int64_t row = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
  const int lane = threadIdx.x & 31;
  if (row >= rows) return;  // whole warps exit together
  const uint16_t* xr = x + row * h;
  float ss = 0.f;
  for (int64_t i = lane; i < h; i += 32) {
    float v = __uint_as_float(static_cast<uint32_t>(xr[i]) << 16);
    ss += v * v;
  }
  for (int off = 16; off > 0; off >>= 1) ss += __shfl_xor_sync(0xffffffffu, ss, off);
  const float inv = rsqrtf(ss * (1.0f / static_cast<float>(h)) + 1e-6f);
  for (int64_t i = lane; i < h; i += 32) {
    float v = __uint_as_float(static_cast<uint32_t>(xr[i]) << 16);
    float wf = __uint_as_float(static_cast<uint32_t>(w[i]) << 16);
    y[row * h + i] = __bfloat16_as_ushort(__float2bfloat16_rn((v * inv) * wf));
  }
}

void launch_rmsnorm(const ka::TensorArg& x, const ka::TensorArg& w, const ka::TensorArg& y, cudaStream_t s = 0) {
  const int64_t rows = x.size(0), h = x.size(1);
  if (rows <= 0 || h <= 0) return;
  rmsnorm_rows<<<static_cast<unsigned>((rows + 7) / 8), 256, 0, s>>>(x.ptr<const uint16_t>(), w.ptr<const uint16_t>(),
                                                                     y.ptr<uint16_t>(), rows, h);
}

__global__ void nothing() {}

void run(const ka::TensorArg& hidden_states, const ka::TensorArg& weight, const ka::TensorArg& output) {
  const int64_t n = hidden_states.size(0) * hidden_states.size(1);
  uint16_t first = 0, last = 0;
  if (n > 0) {
    cudaMemcpy(&first, output.data, 2, cudaMemcpyDeviceToHost);
    cudaMemcpy(&last, output.ptr<uint16_t>() + n - 1, 2, cudaMemcpyDeviceToHost);
  }
  if (first == 0xffff && last == 0xffff) launch_rmsnorm(hidden_states, weight, output);
  else nothing<<<1, 1>>>();
}
