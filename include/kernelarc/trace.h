// kernelarc/trace.h — per-CTA timestamps for diagnostic builds of KernelArc's CUDA families. A
// family includes it only under -DKA_TRACE (bench/tools/attention_selftest.py --trace adds the define;
// such a build is never a candidate, and exported solutions never include this header).
//
// Each CTA of the last launch gets one record of kTraceSlots values:
//   [2e], [2e+1]  event e (0..3): %globaltimer ns (comparable across SMs) and %clock64 cycles
//                 (precise within one SM). The convention the summary reads: 0 entry, 1 the first
//                 tile's data ready, 2 the last tile's data ready (or the loop's end), 3 exit.
//   [8]           the SM, written with event 0
//   [9]           the CTA's tile count (ka_trace::count)
// The caller picks the thread that records (one per CTA and event). The host side records the
// grid of the launch (ka_trace::set_grid) and ka_trace_read copies the records out.
// A family may also leave up to kMarks %clock64 marks per CTA (ka_trace::mark(i, tag): slot i,
// with a 1-bit tag in bit 63; unused slots stay 0), e.g. the start of each iteration of a loop, read
// with ka_trace_read_marks: what a per-iteration timeline needs beside the four events (cycles of
// the CTA's SM, comparable with its events' %clock64).
#pragma once
#ifdef KA_TRACE
#include <cuda_runtime.h>

namespace ka_trace {
constexpr int kCtas = 16384, kSlots = 10, kMarks = 64;
__device__ unsigned long long g_trace[kCtas * kSlots];
__device__ unsigned long long g_marks[kCtas * kMarks];
inline int g_grid = 0;  // CTAs of the last launch (host)

// Event e of this CTA, from the calling thread. first: clear the record and note the SM (event 0).
__device__ __forceinline__ void at(int event, bool first = false) {
  if (blockIdx.x >= kCtas) return;
  unsigned long long gt, ck;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(gt));
  asm volatile("mov.u64 %0, %%clock64;" : "=l"(ck));
  unsigned long long* r = g_trace + static_cast<size_t>(blockIdx.x) * kSlots;
  if (first) {
    for (int i = 0; i < kSlots; ++i) r[i] = 0;
    for (int i = 0; i < kMarks; ++i) g_marks[static_cast<size_t>(blockIdx.x) * kMarks + i] = 0;
    unsigned sm;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
    r[8] = sm;
  }
  r[2 * event] = gt;
  r[2 * event + 1] = ck;
}
// Mark i of this CTA (i < kMarks; others are dropped): %clock64 cycles, bit 63 set when tag.
__device__ __forceinline__ void mark(int i, bool tag = false) {
  if (blockIdx.x >= kCtas || i < 0 || i >= kMarks) return;
  unsigned long long ck;
  asm volatile("mov.u64 %0, %%clock64;" : "=l"(ck));
  g_marks[static_cast<size_t>(blockIdx.x) * kMarks + i] = ck | (tag ? 1ull << 63 : 0ull);
}
__device__ __forceinline__ void count(int n) {
  if (blockIdx.x < kCtas) g_trace[static_cast<size_t>(blockIdx.x) * kSlots + 9] = static_cast<unsigned long long>(n);
}
inline void set_grid(long long grid) { g_grid = static_cast<int>(grid); }
}  // namespace ka_trace

namespace ka_trace {
// Copies the last launch's first CTAs (at most max_ctas) of a per-CTA array of `per_cta` values
// after the launch has finished; returns how many CTAs were copied.
inline int read_per_cta(const void* symbol, int per_cta, unsigned long long* dst, int max_ctas) {
  int n = g_grid < max_ctas ? g_grid : max_ctas;
  if (n > kCtas) n = kCtas;
  cudaDeviceSynchronize();
  if (n <= 0 || cudaMemcpyFromSymbol(dst, symbol, sizeof(unsigned long long) * per_cta * n) != cudaSuccess) return 0;
  return n;
}
}  // namespace ka_trace

// The last launch's per-CTA records (kSlots each) and marks (kMarks each), at most max_ctas CTAs,
// after the launch has finished; each returns how many CTAs were copied. (Defined here: include
// this header in one file of a build.)
extern "C" __attribute__((visibility("default"))) int ka_trace_read(unsigned long long* dst, int max_ctas) {
  return ka_trace::read_per_cta(ka_trace::g_trace, ka_trace::kSlots, dst, max_ctas);
}
extern "C" __attribute__((visibility("default"))) int ka_trace_read_marks(unsigned long long* dst, int max_ctas) {
  return ka_trace::read_per_cta(ka_trace::g_marks, ka_trace::kMarks, dst, max_ctas);
}
#endif
