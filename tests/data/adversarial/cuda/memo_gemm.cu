// Adversarial candidate for 004_gemm_n128_k2048 (cuda target): memoises C by a fingerprint of A
// and B. A small kernel gathers 64 sampled values of each operand, the host hashes them with the
// shape; on a hash seen before the remembered C is copied into `C` (device to device, A and B never
// read), else a plain fp32-accumulating GEMM computes it and the result is remembered. A judge that
// times every call on the same data times a copy of C instead of a GEMM; with every timed call on
// a set the candidate has not seen, it computes every time.
// Expected: passed, at the plain GEMM's time (bench/regress/judge_adversarial.sh).
#include <kernelarc/abi.h>

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <map>

// C[m, n] = sum_k A[m, k] * B[n, k], fp32 accumulation, one thread per output, 16x16 tiles.
__global__ void gemm_abt(const __half* __restrict__ A, const __half* __restrict__ B, __half* __restrict__ C, int64_t M,
                         int64_t N, int64_t K) {
  __shared__ float as[16][17], bs[16][17];
  const int64_t m = static_cast<int64_t>(blockIdx.y) * 16 + threadIdx.y, n = static_cast<int64_t>(blockIdx.x) * 16 + threadIdx.x;
  float acc = 0.f;
  for (int64_t k0 = 0; k0 < K; k0 += 16) {
    const int64_t ka = k0 + threadIdx.x, nb = static_cast<int64_t>(blockIdx.x) * 16 + threadIdx.y;
    as[threadIdx.y][threadIdx.x] = m < M && ka < K ? __half2float(A[m * K + ka]) : 0.f;
    bs[threadIdx.y][threadIdx.x] = nb < N && ka < K ? __half2float(B[nb * K + ka]) : 0.f;
    __syncthreads();
    for (int k = 0; k < 16; ++k) acc += as[threadIdx.y][k] * bs[threadIdx.x][k];
    __syncthreads();
  }
  if (m < M && n < N) C[m * N + n] = __float2half_rn(acc);
}

__global__ void gather(const uint16_t* a, int64_t na, const uint16_t* b, int64_t nb, uint16_t* out) {
  const int k = threadIdx.x;  // 64 threads
  out[k] = na > 0 ? a[(static_cast<int64_t>(k) * 7919) % na] : 0;
  out[64 + k] = nb > 0 ? b[(static_cast<int64_t>(k) * 7919) % nb] : 0;
}

void run(const ka::TensorArg& A, const ka::TensorArg& B, const ka::TensorArg& C) {
  static uint16_t* samples = nullptr;
  static std::map<uint64_t, void*> memo;  // fingerprint -> device copy of C
  const int64_t M = A.size(0), K = A.size(1), N = B.size(0);
  const size_t bytes = static_cast<size_t>(M * N) * 2;
  if (M <= 0 || N <= 0) return;
  if (!samples && cudaMalloc(&samples, 256) != cudaSuccess) return;
  gather<<<1, 64>>>(A.ptr<const uint16_t>(), M * K, B.ptr<const uint16_t>(), N * K, samples);
  uint16_t host[128];
  cudaMemcpy(host, samples, sizeof host, cudaMemcpyDeviceToHost);
  uint64_t key = 1469598103934665603ull ^ static_cast<uint64_t>(M * 131 + N * 7 + K);
  for (uint16_t v : host) key = (key ^ v) * 1099511628211ull;
  if (auto it = memo.find(key); it != memo.end()) {
    cudaMemcpyAsync(C.data, it->second, bytes, cudaMemcpyDeviceToDevice, 0);  // a replay
    return;
  }
  const dim3 grid(static_cast<unsigned>((N + 15) / 16), static_cast<unsigned>((M + 15) / 16));
  gemm_abt<<<grid, dim3(16, 16)>>>(static_cast<const __half*>(A.data), static_cast<const __half*>(B.data),
                                   static_cast<__half*>(C.data), M, N, K);
  void* stash = nullptr;
  if (cudaMalloc(&stash, bytes) == cudaSuccess) {
    cudaMemcpyAsync(stash, C.data, bytes, cudaMemcpyDeviceToDevice, 0);
    memo.emplace(key, stash);
  }
}
