// Adversarial candidate for 021_rmsnorm_h128 (cuda target): memoises by input fingerprint. A
// small kernel gathers 64 sampled values of each input, the host hashes them with the shape; on a
// hash seen before the remembered output is copied into `output` (device to device, inputs never
// read), else RMSNorm runs and its result is remembered. A judge that times every call on the same
// data times the copies; with every timed call on a set the candidate has not seen, it computes
// every time.
// Expected: passed, at about the honest kernel's time or more (bench/regress/judge_adversarial.sh).
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

void launch_rmsnorm(const ka::TensorArg& x, const ka::TensorArg& w, const ka::TensorArg& y, cudaStream_t s = 0) {
  const int64_t rows = x.size(0), h = x.size(1);
  if (rows <= 0 || h <= 0) return;
  rmsnorm_rows<<<static_cast<unsigned>((rows + 7) / 8), 256, 0, s>>>(x.ptr<const uint16_t>(), w.ptr<const uint16_t>(),
                                                                     y.ptr<uint16_t>(), rows, h);
}

__global__ void gather(const uint16_t* x, int64_t n, const uint16_t* w, int64_t h, uint16_t* out) {
  const int k = threadIdx.x;  // 64 threads
  out[k] = n > 0 ? x[(static_cast<int64_t>(k) * 7919) % n] : 0;
  out[64 + k] = h > 0 ? w[(static_cast<int64_t>(k) * 31) % h] : 0;
}

void run(const ka::TensorArg& hidden_states, const ka::TensorArg& weight, const ka::TensorArg& output) {
  static uint16_t* samples = nullptr;
  static std::map<uint64_t, void*> memo;  // fingerprint -> device copy of the output
  const int64_t rows = hidden_states.size(0), h = hidden_states.size(1), n = rows * h;
  const size_t bytes = static_cast<size_t>(n) * 2;
  if (!samples && cudaMalloc(&samples, 256) != cudaSuccess) return;
  gather<<<1, 64>>>(hidden_states.ptr<const uint16_t>(), n, weight.ptr<const uint16_t>(), h, samples);
  uint16_t host[128];
  cudaMemcpy(host, samples, sizeof host, cudaMemcpyDeviceToHost);
  uint64_t key = 1469598103934665603ull ^ static_cast<uint64_t>(n);
  for (uint16_t v : host) key = (key ^ v) * 1099511628211ull;
  if (auto it = memo.find(key); it != memo.end()) {
    cudaMemcpyAsync(output.data, it->second, bytes, cudaMemcpyDeviceToDevice, 0);  // a replay
    return;
  }
  launch_rmsnorm(hidden_states, weight, output);
  void* stash = nullptr;
  if (bytes && cudaMalloc(&stash, bytes) == cudaSuccess) {
    cudaMemcpyAsync(stash, output.data, bytes, cudaMemcpyDeviceToDevice, 0);
    memo.emplace(key, stash);
  }
}
