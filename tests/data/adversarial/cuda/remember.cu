// Adversarial candidate for 021_rmsnorm_h128 (cuda target): a caching cheat. The first call for a
// given shape computes the correct RMSNorm and keeps a device copy of the result; every later call
// with that shape copies the remembered result into `output` without reading the inputs at all.
// It passes the first correctness check of each workload, but the timed calls run on input sets of
// their own and are checked: the first one sees the stale result.
// Expected verdict: wrong_answer.
#include <kernelarc/abi.h>

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <map>

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

void run(const ka::TensorArg& hidden_states, const ka::TensorArg& weight, const ka::TensorArg& output) {
  static std::map<int64_t, void*> remembered;  // numel -> device copy of the first result
  const int64_t rows = hidden_states.size(0), h = hidden_states.size(1);
  if (rows <= 0 || h <= 0) return;
  const size_t bytes = static_cast<size_t>(rows * h) * sizeof(uint16_t);
  auto it = remembered.find(rows * h);
  if (it != remembered.end()) {
    cudaMemcpyAsync(output.data, it->second, bytes, cudaMemcpyDeviceToDevice, 0);  // inputs never read
    return;
  }
  rmsnorm_rows<<<static_cast<unsigned>((rows + 7) / 8), 256>>>(hidden_states.ptr<const uint16_t>(),
                                                               weight.ptr<const uint16_t>(), output.ptr<uint16_t>(),
                                                               rows, h);
  void* stash = nullptr;
  if (cudaMalloc(&stash, bytes) != cudaSuccess) return;
  cudaMemcpyAsync(stash, output.data, bytes, cudaMemcpyDeviceToDevice, 0);
  remembered.emplace(rows * h, stash);
}
