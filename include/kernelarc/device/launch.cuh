// kernelarc/device/launch.cuh — host-side launch helpers shared by the families.
//   fit_kernel(kernel, threads, smem)   raises the kernel's dynamic shared-memory limit to smem
//                                       bytes and returns the device's SM count and the kernel's
//                                       co-resident CTAs per SM (at least 1); a family calls it once
//                                       per process and keeps the result (no state here: every
//                                       candidate library keeps its own)
//   plan_kv_split(...)                  the chunks a split-KV decode cuts its N flat positions into
//   FitOnce                             fit_kernel at its first call, that result at every later one
//   DeviceScratch::reserve(bytes, zero) a grow-only device buffer kept across calls (the split-KV
//                                       partials, the fused merge's counters)
//   SplitKvWorkspace::bind(p, …)        a split-KV decode's partials and counters, into its Params
// and what every attention family's launch does alike (Params duck-typed, tensors ka::TensorArg):
//   bind_attention_outputs(p, output, lse, B, sm_scale)
//                                       p.out (bf16), p.lse (fp32), p.B and p.scale_log2
//   fill_attention_nan(output, lse, rows, width)
//                                       every output and lse NaN (a prefill's answer to sm_scale <= 0)
//   prefill_tile_bound(total_q, B, qt)  an upper bound of a ragged prefill's query tiles, from shapes
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

// The fit of one kernel, taken at the first call and kept (the family's own state: one per
// candidate library).
struct FitOnce {
  bool done = false;
  KernelFit fit;
  template <typename K>
  const KernelFit& operator()(K kernel, int threads, int smem) {
    if (!done) {
      fit = fit_kernel(kernel, threads, smem);
      done = true;
    }
    return fit;
  }
};

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

// A split-KV decode's workspace: `rows` fp32 partial outputs of `width` values and their lses
// (p.part_o, p.part_lse) and, when fused, `ncounters` counters of the fused merge (p.counters;
// zeroed when allocated, and the merge leaves them zeroed). False when an allocation failed.
struct SplitKvWorkspace {
  DeviceScratch partials, counters;
  template <typename P>
  bool bind(P& p, size_t rows, size_t width, size_t ncounters, bool fused) {
    if (!partials.reserve(rows * (width + 1) * sizeof(float) + 256, false)) return false;
    p.part_o = static_cast<float*>(partials.ptr);
    p.part_lse = p.part_o + rows * width;
    if (!fused) return true;
    if (!counters.reserve(ncounters * sizeof(int), true)) return false;
    p.counters = static_cast<int*>(counters.ptr);
    return true;
  }
};

// The outputs and the scale of an attention call: out (bf16) and lse (fp32) of B sequences (or
// sequences of queries), scores kept in base 2 (scale_log2 = sm_scale * log2(e)).
template <typename P, typename Tensor>
inline void bind_attention_outputs(P& p, const Tensor& output, const Tensor& lse, int64_t B, double sm_scale) {
  p.out = static_cast<uint16_t*>(output.data);
  p.lse = static_cast<float*>(lse.data);
  p.B = static_cast<int>(B);
  p.scale_log2 = static_cast<float>(sm_scale * 1.4426950408889634);
}

// `rows` output rows of `width` bf16 values and their lses set to NaN (every bit set): the answer
// of a prefill that takes the row maxima over unscaled scores to a scale that is not positive.
template <typename Tensor>
inline void fill_attention_nan(const Tensor& output, const Tensor& lse, int64_t rows, int64_t width) {
  cudaMemsetAsync(output.data, 0xff, static_cast<size_t>(rows * width) * 2);
  cudaMemsetAsync(lse.data, 0xff, static_cast<size_t>(rows) * 4);
}

// The query tiles of qt rows a ragged prefill of total_q rows in B sequences has at most (from
// the shapes only): the leading rows, plus per sequence ceil(ql / qt) <= ql / qt + 1.
inline int64_t prefill_tile_bound(int64_t total_q, int64_t B, int64_t qt) { return (total_q + qt - 1) / qt + B + 1; }

}  // namespace ka_dev
