// kernelarc/device/launch.cuh — host-side launch helpers shared by the families.
//   fit_kernel(kernel, threads, smem)   raises the kernel's dynamic shared-memory limit to smem
//                                       bytes and returns the device's SM count and the kernel's
//                                       co-resident CTAs per SM (at least 1); a family calls it once
//                                       per process and keeps the result (no state here: every
//                                       candidate library keeps its own)
//   plan_kv_split(...)                  the chunks a split-KV decode cuts its N flat positions into
//   DeviceScratch::reserve(bytes, zero) a grow-only device buffer kept across calls (the split-KV
//                                       partials, the fused merge's counters)
#pragma once
#include <kernelarc/device/target.cuh>

namespace ka_dev {

struct KernelFit {
  int sms = 132;  // multiprocessors of the current device
  int occ = 1;    // CTAs of the kernel per multiprocessor
};

template <typename K>
inline KernelFit fit_kernel(K kernel, int threads, int smem) {
  KernelFit f;
  int dev = 0;
  cudaGetDevice(&dev);
  cudaDeviceGetAttribute(&f.sms, cudaDevAttrMultiProcessorCount, dev);
  cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
  int occ = 0;
  cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, kernel, threads, smem);
  f.occ = occ > 0 ? occ : 1;
  return f;
}

// Split-KV: with split_tokens > 0 the N positions are cut into chunks of a multiple of `tile`
// positions, enough of them for waves * sms * occ CTAs (ctas_per_chunk CTAs each), at most
// split_tokens and at least no_split_below positions long; otherwise one unit per sequence (chunk
// 0, nchunks = B).
struct KvSplit {
  int chunk = 0;    // positions per chunk; 0: no split
  int nchunks = 1;  // chunks (or sequences)
};
inline KvSplit plan_kv_split(int64_t B, int64_t N, int64_t ctas_per_chunk, int64_t tile, int64_t split_tokens,
                             int64_t no_split_below, int64_t waves, int sms, int occ) {
  auto ceil_div64 = [](int64_t a, int64_t b) { return (a + b - 1) / b; };
  KvSplit s;
  if (split_tokens <= 0) {
    s.nchunks = static_cast<int>(B);
    return s;
  }
  const int64_t cap = ceil_div64(split_tokens, tile) * tile;
  const int64_t floor_ = no_split_below > tile ? ceil_div64(no_split_below, tile) * tile : tile;
  const int64_t target = waves * sms * occ;
  int64_t chunk = ceil_div64(ceil_div64(N * ctas_per_chunk, target), tile) * tile;
  chunk = chunk > cap ? cap : chunk;
  chunk = chunk < floor_ ? floor_ : chunk;
  s.chunk = static_cast<int>(chunk);
  s.nchunks = static_cast<int>(N > 0 ? ceil_div64(N, chunk) : 1);
  return s;
}

// Grows (never shrinks) to at least `bytes`; zero: clear it when (re)allocated. False when the
// allocation fails (the buffer is then empty).
struct DeviceScratch {
  void* ptr = nullptr;
  size_t bytes = 0;
  bool reserve(size_t need, bool zero) {
    if (need <= bytes) return true;
    if (ptr) cudaFree(ptr);
    ptr = nullptr;
    bytes = 0;
    if (cudaMalloc(&ptr, need) != cudaSuccess) return false;
    if (zero) cudaMemset(ptr, 0, need);
    bytes = need;
    return true;
  }
};

}  // namespace ka_dev
