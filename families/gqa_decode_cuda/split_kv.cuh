// split_kv.cuh — the kernel's parameters, the split-KV merge of partials (the merge kernel and the
// fused last-CTA merge's body) and the KA_TRACE hooks.
// A part of gqa_decode.cu (family.json "sources"), expanded where the entry includes it: no include guard.
struct Params {
  const uint16_t* q;     // [B][HQ][D]
  const uint16_t* k;     // [P][1][HKV][D]
  const uint16_t* v;     // [P][1][HKV][D]
  const int* indptr;     // [B+1]
  const int* indices;    // [N]
  uint16_t* out;         // [B][HQ][D]
  float* lse;            // [B][HQ]
  float* part_o;         // [nchunks*2][HKV][G][D]
  float* part_lse;       // [nchunks*2][HKV][G]
  int* counters;         // [B*HKV], zero between launches
  int B, N, num_pages;
  int chunk;             // tokens per chunk; 0: no split (one CTA per sequence)
  int nchunks;
  float scale_log2;      // sm_scale * log2(e)
};

// Merges the partials of sequence b, kv head g into out/lse (threads 0..NT-1 take part: the whole
// merge kernel's CTA, or the decode CTA's consumer warps).
__device__ __forceinline__ void merge_group(const Params& p, int b, int g, int tid) {
  const int s = __ldg(p.indptr + b), e = __ldg(p.indptr + b + 1);
  const int c0 = s / p.chunk, c1 = (e - 1) / p.chunk;
  constexpr int D4 = D / 4;
  for (int idx = tid; idx < G * D4; idx += NT) {
    const int row = idx / D4, d4 = idx % D4;
    float M = kNegInf, L = 0.f;
    float acc[4] = {0.f, 0.f, 0.f, 0.f};
    // MB chunks' partials loaded at once, then combined: one L2 round trip per MB chunks instead
    // of one per chunk (this runs in the last CTA's tail, on the kernel's critical path).
    constexpr int MB = 4;
    for (int cb = c0; cb <= c1; cb += MB) {
      float li[MB];
      float4 ov[MB];
#pragma unroll
      for (int u = 0; u < MB; ++u) {
        const int c = cb + u;
        li[u] = kNegInf;
        ov[u] = make_float4(0.f, 0.f, 0.f, 0.f);
        if (c <= c1) {
          const int slot = (c == c0 && s != c0 * p.chunk) ? 1 : 0;
          const int64_t pidx = (static_cast<int64_t>(c) * 2 + slot) * HKV + g;
          li[u] = __ldcg(p.part_lse + pidx * G + row);
          ov[u] = __ldcg(reinterpret_cast<const float4*>(p.part_o + (pidx * G + row) * D) + d4);
        }
      }
#pragma unroll
      for (int u = 0; u < MB; ++u) {
        if (cb + u > c1) break;
        lse_merge(M, L, acc, li[u], ov[u]);
      }
    }
    const float inv = 1.f / L;
    const int64_t orow = static_cast<int64_t>(b) * HQ + g * G + row;
    uint2 w;
    w.x = pack_bf16(acc[0] * inv, acc[1] * inv);
    w.y = pack_bf16(acc[2] * inv, acc[3] * inv);
    *reinterpret_cast<uint2*>(p.out + orow * D + 4 * d4) = w;
    if (d4 == 0) p.lse[orow] = M + log2f(L);
  }
}

// KA_TRACE (a diagnostic build, never a KernelArc candidate: bench/tools/attention_selftest.py --trace
// adds -DKA_TRACE): thread 0 of each CTA records when it entered, when tile 0's and the last tile's
// data were ready for the consumers (PRODUCER=1), and when it left, in %globaltimer ns (comparable
// across SMs) and %clock64 cycles (precise within one SM), with its SM and tile count
// (kernelarc/trace.h; its ka_trace_read copies the last launch's records out). Where a decode
// call's time goes: the spread of the CTAs' ends (a one-wave tail) against the fixed cost each CTA
// pays before its first tile and after its last.

__global__ void __launch_bounds__(NT) gqa_merge_kernel(Params p) {
  const int b = blockIdx.x / HKV, g = blockIdx.x % HKV;
  const int s = __ldg(p.indptr + b), e = __ldg(p.indptr + b + 1);
  if (e <= s || s / p.chunk == (e - 1) / p.chunk) return;  // empty, or written by its only CTA
  merge_group(p, b, g, threadIdx.x);
}
