// mla_decode.cu — KernelArc family mla_decode_cuda: batched MLA decode with matrix absorption over a
// paged compressed-KV cache with page size 1 (FlashInfer-Bench mla_paged_decode_*_ps1), bf16 in and
// out, fp32 accumulation, on tensor cores (mma.sync m16n8k16, bf16 x bf16 -> fp32), with split-KV
// and a log-sum-exp merge.
//
// Semantics (the definition's reference, in the order of rounding):
//   logits[h,t] = q_nope[b,h,:] . ckv[idx[t],:] + q_pe[b,h,:] . kpe[idx[t],:]   (fp32)
//   z           = logits * sm_scale
//   lse[b,h]    = log2(sum_t exp(z[h,t]))                                      (base 2, fp32)
//   out[b,h,:]  = bf16(sum_t softmax(z[h])[t] * ckv[idx[t],:])
//   a sequence with no KV (kv_indptr[b] == kv_indptr[b+1]): out[b] = 0 and lse[b] = -inf, as the
//   reference leaves them (`output[b].zero_()`, lse from torch.full(..., -inf)).
// Scores are kept in base 2 (x = logits * sm_scale * log2(e)); P is rounded to bf16 for P·V and the
// normaliser sums the rounded values (the lse uses the exact ones).
//
// KernelArc prepends the defines (family.json):
//   problem  KA_NUM_QO_HEADS (16: the mma tile's rows), KA_HEAD_DIM_CKV, KA_HEAD_DIM_KPE,
//            KA_PAGE_SIZE (1)
//   knobs    KA_WARPS        warps per CTA. Q·K^T is split over the warps by the 576 q/k dims (each
//                            warp keeps its slice of Q in registers; partial scores are summed
//                            through shared memory), P·V by the 512 output dims (each warp keeps
//                            its slice of O), so every warp sees every token of a tile
//            KA_TILE         KV tokens per pipeline stage
//            KA_STAGES       cp.async pipeline depth
//            KA_SPLIT_TOKENS most KV tokens per CTA (split-KV chunk cap); 0: one CTA per sequence
//            KA_WAVES        split-KV aims at WAVES x (SMs x CTAs per SM) CTAs in all
//            KA_FUSED_MERGE  1: the last CTA of a split sequence merges its partials; 0: a second,
//                            merge kernel (one CTA per (sequence, head))
//            KA_NO_SPLIT_BELOW  smallest split-KV chunk (tokens); 0: one tile
//            (no L2 cache-policy knob: cp.async with a createpolicy.fractional evict-first policy
//            raised "illegal instruction" on the H200 with CUDA 13.0's ptxas, a known ptxas
//            miscompile of fractional policies on cp.async; K/V use plain cp.async.cg)
//            KA_L2_PREFETCH  0: K/V copies fetch what they touch; 256: cp.async with the .L2::256B
//                            prefetch-size hint, so the first 16-byte copy of a row brings the 256
//                            aligned bytes around it into L2 in one request (a page-size-1 gather
//                            reads 256-byte pieces of rows at random pages)
//            KA_EARLY        MMA=1 with WARPS 8 only (one warpgroup's registers spill). 0: a
//                            tile's loads are issued once the tile before it has landed (its
//                            page indices ride in that tile's copy group), so with 2 stages the
//                            waited tile is the only one in flight. 1: they are issued
//                            as soon as their stage is free (a CTA barrier after the last reads
//                            of the tile before), before waiting for the current tile, with the
//                            page indices read into registers a tile ahead: two tiles in flight
//                            during the wait (the 018 trace of 2026-12-05 found the loop waiting
//                            for its data: 2.7-3.5 us per 73 KB tile); one CTA barrier more a tile
//            KA_MMA          0: mma.sync m16n8k16 with the 16 heads as the M rows (above; any
//                            sm_80+ GPU). 1: Hopper wgmma (sm_90a), swap-AB: the 64 tokens of a
//                            tile are the wgmma M, S^T = K·Q^T and O^T += V^T·P^T with m64n16k16
//                            (see "the wgmma kernel" below for layouts and the per-tile protocol).
//                            Needs TILE 64 (one warpgroup's M) and STAGES 2 (a stage is 64 rows x
//                            1152 bytes = 72 KB, unpadded in the 128-byte swizzle layout, plus Q's
//                            18 KB), WARPS 4 (one warpgroup: all 36 S k-steps, all 8 O^T m64
//                            blocks, 64 accumulator registers) or 8 (two: 18 k-steps each, the
//                            partial S^T summed through shared memory, 4 O^T blocks each). An
//                            MMA=1 build for a GPU without wgmma compiles but traps if called.
//                            Status: passes the emulator (bench/tools/attention_selftest.py --mode emu)
//                            and compiles without spills (CUDA 13: 167 registers at WARPS 8, 255
//                            at WARPS 4); not yet run on a GPU. Simplest schedule only: every
//                            warp issues copies, per tile a CTA barrier for the landed stage, one
//                            to sum S (WARPS 8), one for the column maxima, one after P is stored,
//                            and each wgmma group is waited for at once (no overlap of the softmax
//                            with the tensor cores, no producer warp).
// Work decomposition, segments, partial slots and the merge are those of gqa_decode_cuda (see
// families/gqa_decode_cuda/gqa_decode.cu), with one "kv head" holding all 16 query heads: CTA c
// runs over the flat token range [c*chunk, (c+1)*chunk) of kv_indices, walking the sequences it
// meets; a sequence cut by a chunk boundary leaves one fp32 partial (16 x 512 outputs and 16 lses)
// per chunk it touches.
#ifdef KA_EMULATE
#include KA_EMULATE
#else
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#endif
#include <kernelarc/abi.h>
#ifdef KA_TRACE
#include <kernelarc/trace.h>  // diagnostic builds only (see trace_at)
#endif

#include <climits>
#include <cstdint>

#if !defined(KA_NUM_QO_HEADS) || !defined(KA_HEAD_DIM_CKV) || !defined(KA_HEAD_DIM_KPE) || !defined(KA_WARPS) || \
    !defined(KA_TILE) || !defined(KA_STAGES) || !defined(KA_SPLIT_TOKENS) || !defined(KA_WAVES) ||              \
    !defined(KA_FUSED_MERGE) || !defined(KA_NO_SPLIT_BELOW) || !defined(KA_L2_PREFETCH) || !defined(KA_MMA) || \
    !defined(KA_EARLY)
#error "mla_decode_cuda: the problem defines and knobs must be defined (KernelArc does this)"
#endif
#if defined(KA_PAGE_SIZE) && KA_PAGE_SIZE != 1
#error "mla_decode_cuda: page_size must be 1"
#endif

// Everything but the entry has internal linkage: a judge worker keeps earlier candidates loaded
// (RTLD_LOCAL), and vague-linkage objects would otherwise be merged across them.
namespace ka_mla {
namespace {

constexpr int H = KA_NUM_QO_HEADS;
constexpr int DC = KA_HEAD_DIM_CKV;
constexpr int DP = KA_HEAD_DIM_KPE;
constexpr int DQ = DC + DP;             // q/k dims of a score
constexpr int W = KA_WARPS;
constexpr int NT = 32 * W;
constexpr int T = KA_TILE;
constexpr int STAGES = KA_STAGES;
constexpr int ROWB = 2 * DQ + 16;       // smem bytes per token row: ckv | kpe | 16 B pad
constexpr int CCH = 2 * DC / 16;        // 16-byte chunks of a ckv row (64)
constexpr int PCH = 2 * DP / 16;        // ... of a kpe row (8)
constexpr int RPP = NT / CCH;           // rows covered by one pass of all threads
constexpr int NR = T / RPP;             // rows per thread per tile
constexpr int KS_ALL = DQ / 16;         // k-steps of a score (36)
[[maybe_unused]] constexpr int KSW = (KS_ALL + W - 1) / W;  // k-steps per warp, at most
constexpr int DW = DC / W;              // output dims per warp
[[maybe_unused]] constexpr int NTO = DW / 8;             // O n-tiles per warp
constexpr int NTT = T / 8;              // S n-tiles (8 tokens)
[[maybe_unused]] constexpr int KT = T / 16;              // P·V k-steps (16 tokens)
constexpr int STAGE_BYTES = T * ROWB;
constexpr int SX_BYTES = W * NTT * 32 * 16;  // partial scores, [W][NTT][32 lanes] float4
constexpr int IDX_BYTES = STAGES * T * 4;  // ring of page ids, one tile per slot (see the loads)
constexpr int SMEM_BYTES = STAGES * STAGE_BYTES + SX_BYTES + 16 + IDX_BYTES;
constexpr float kNegInf = -__builtin_huge_valf();

static_assert(H == 16, "num_qo_heads must be 16 (the rows of an mma tile)");
static_assert(DC % 128 == 0 && DP % 16 == 0 && DC % (16 * W) == 0 && (DC / W) % 16 == 0, "head dims");
static_assert(NT % CCH == 0 && PCH <= CCH, "WARPS");
static_assert(T % 16 == 0 && T % RPP == 0, "TILE");
static_assert(STAGES >= 2 && STAGES <= 8, "STAGES");
static_assert(KA_MMA || SMEM_BYTES <= 227 * 1024, "shared memory above 227 KB");

// ── primitives ─────────────────────────────────────────────────────────────────────────────────
#ifdef KA_EMULATE
using namespace ka_emu_ops;
#define KA_DYN_SMEM(name) unsigned char* name = emu::smem_base()
#define KA_LAUNCH(kernel, grid, block, smem, ...) emu::launch(grid, block, smem, [=] { kernel(__VA_ARGS__); })
template <int N>
inline void cp_async_wait_n() { cp_async_wait(N); }
inline void ldsm_x4(uint32_t a, uint32_t& r0, uint32_t& r1, uint32_t& r2, uint32_t& r3) {
  ka_emu_ops::ldsm_x4(a, r0, r1, r2, r3, false);
}
inline void ldsm_x4_t(uint32_t a, uint32_t& r0, uint32_t& r1, uint32_t& r2, uint32_t& r3) {
  ka_emu_ops::ldsm_x4(a, r0, r1, r2, r3, true);
}
inline uint32_t pack_bf16(float lo, float hi) { return uint32_t(f2bf(lo)) | (uint32_t(f2bf(hi)) << 16); }
inline uint32_t ld_u32(const uint16_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}
#else
#define KA_DYN_SMEM(name) extern __shared__ __align__(16) unsigned char name[]
#define KA_LAUNCH(kernel, grid, block, smem, ...) kernel<<<grid, block, smem>>>(__VA_ARGS__)
__device__ __forceinline__ uint32_t smem_u32(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}
__device__ __forceinline__ void cp_async_16(uint32_t dst, const void* src, int src_bytes) {
#if KA_L2_PREFETCH == 256
  asm volatile("cp.async.cg.shared.global.L2::256B [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(src_bytes) : "memory");
#else
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(src_bytes) : "memory");
#endif
}
__device__ __forceinline__ void cp_async_4(uint32_t dst, const void* src, int src_bytes) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(dst), "l"(src), "r"(src_bytes) : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void cp_async_wait_n() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}
[[maybe_unused]] __device__ __forceinline__ void ldsm_x4(uint32_t a, uint32_t& r0, uint32_t& r1, uint32_t& r2, uint32_t& r3) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
               : "r"(a));
}
[[maybe_unused]] __device__ __forceinline__ void ldsm_x4_t(uint32_t a, uint32_t& r0, uint32_t& r1, uint32_t& r2, uint32_t& r3) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
               : "r"(a));
}
[[maybe_unused]] __device__ __forceinline__ void mma_bf16(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
__device__ __forceinline__ uint32_t pack_bf16(float lo, float hi) {
  __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);  // .x (low half) = lo
  return *reinterpret_cast<uint32_t*>(&v);
}
[[maybe_unused]] __device__ __forceinline__ uint32_t ld_u32(const uint16_t* p) { return __ldg(reinterpret_cast<const unsigned int*>(p)); }
#endif

#if KA_MMA
// ── Hopper warpgroup MMA (KA_MMA 1, sm_90a) ──
// Device code for an arch without wgmma (not sm_90a) gets bodies that trap, so that an MMA=1 point
// still builds there.
#ifdef KA_EMULATE
// S^T += K · Q^T: A (the K tile) and B (Q) from descriptors, both K-major.
inline void wgmma_s16(float (&d)[2][4], uint64_t da, uint64_t db) {
  ka_emu_ops::wgmma_issue({16, &d[0][0], false, {0, 0, 0, 0}, da, db, 0, 0, 1});
}
// O^T += V^T · P^T: A (V^T) from a descriptor, MN-major (transpose-A bit), B (P) K-major.
inline void wgmma_pv16(float (&d)[2][4], uint64_t da, uint64_t db) {
  ka_emu_ops::wgmma_issue({16, &d[0][0], false, {0, 0, 0, 0}, da, db, 1, 0, 1});
}
template <int N>
inline void wgmma_wait_n() { wgmma_wait(N); }
template <int R, int C>
inline void fence_operands(float (&)[R][C]) {}
#else
#if defined(__CUDA_ARCH__) && !defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define KA_WGMMA_HW 0
#else
#define KA_WGMMA_HW 1
#endif
#if KA_WGMMA_HW
__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void wgmma_wait_n() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}
// Orders generic-proxy writes to shared memory (cp.async, st.shared) before async-proxy reads (wgmma).
__device__ __forceinline__ void fence_proxy_async() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_s16(float (&d)[2][4], uint64_t da, uint64_t db) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %10, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n16k16.f32.bf16.bf16 "
      "{%0, %1, %2, %3, %4, %5, %6, %7}, %8, %9, p, 1, 1, 0, 0;\n}\n"
      : "+f"(d[0][0]), "+f"(d[0][1]), "+f"(d[0][2]), "+f"(d[0][3]), "+f"(d[1][0]), "+f"(d[1][1]), "+f"(d[1][2]),
        "+f"(d[1][3])
      : "l"(da), "l"(db), "r"(1));
}
__device__ __forceinline__ void wgmma_pv16(float (&d)[2][4], uint64_t da, uint64_t db) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %10, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n16k16.f32.bf16.bf16 "
      "{%0, %1, %2, %3, %4, %5, %6, %7}, %8, %9, p, 1, 1, 1, 0;\n}\n"
      : "+f"(d[0][0]), "+f"(d[0][1]), "+f"(d[0][2]), "+f"(d[0][3]), "+f"(d[1][0]), "+f"(d[1][1]), "+f"(d[1][2]),
        "+f"(d[1][3])
      : "l"(da), "l"(db), "r"(1));
}
#else
__device__ __forceinline__ void wgmma_fence() { __trap(); }
__device__ __forceinline__ void wgmma_commit() { __trap(); }
template <int N>
__device__ __forceinline__ void wgmma_wait_n() { __trap(); }
__device__ __forceinline__ void fence_proxy_async() { __trap(); }
__device__ __forceinline__ void wgmma_s16(float (&)[2][4], uint64_t, uint64_t) { __trap(); }
__device__ __forceinline__ void wgmma_pv16(float (&)[2][4], uint64_t, uint64_t) { __trap(); }
#endif
// Keeps the compiler from moving accesses of wgmma accumulators across a wgmma wait.
template <int R, int C>
__device__ __forceinline__ void fence_operands(float (&d)[R][C]) {
#pragma unroll
  for (int i = 0; i < R; ++i)
#pragma unroll
    for (int j = 0; j < C; ++j) asm volatile("" : "+f"(d[i][j])::"memory");
}
#endif
// Shared-memory matrix descriptor for a 128-byte-swizzled operand (PTX ISA "Matrix Descriptor"):
// start address, leading byte offset lbo (K-major: unused, 16; MN-major: between 64-element blocks
// along M/N), stride byte offset 1024 (between groups of 8 rows), swizzle mode 1 (128 B).
__device__ __forceinline__ uint64_t sw128_desc(uint32_t addr, uint32_t lbo) {
  return static_cast<uint64_t>((addr & 0x3ffffu) >> 4) | (static_cast<uint64_t>((lbo >> 4) & 0x3fffu) << 16) |
         (static_cast<uint64_t>(1024 >> 4) << 32) | (1ull << 62);
}
#endif  // KA_MMA

__device__ __forceinline__ float bf_lo(uint32_t w) { return __uint_as_float(w << 16); }
__device__ __forceinline__ float bf_hi(uint32_t w) { return __uint_as_float(w & 0xffff0000u); }
__device__ __forceinline__ int imin(int a, int b) { return a < b ? a : b; }
__device__ __forceinline__ int imax(int a, int b) { return a > b ? a : b; }
__device__ __forceinline__ unsigned umin(unsigned a, unsigned b) { return a < b ? a : b; }

struct Params {
  const uint16_t* qn;    // [B][H][DC]
  const uint16_t* qp;    // [B][H][DP]
  const uint16_t* ckv;   // [P][1][DC]
  const uint16_t* kpe;   // [P][1][DP]
  const int* indptr;     // [B+1]
  const int* indices;    // [N]
  uint16_t* out;         // [B][H][DC]
  float* lse;            // [B][H]
  float* part_o;         // [nchunks*2][H][DC]
  float* part_lse;       // [nchunks*2][H]
  int* counters;         // [B], zero between launches
  int B, N, num_pages;
  int chunk;             // tokens per chunk; 0: no split (one CTA per sequence)
  int nchunks;
  float scale_log2;      // sm_scale * log2(e)
};

// #{b in [1, B] : indptr[b] <= x} for a non-decreasing indptr (32-ary search by one warp).
__device__ __forceinline__ int count_le(const int* __restrict__ ip, int B, int x, int lane) {
  int lo = 1, hi = B, count = 0;
  while (lo <= hi) {
    const int n = hi - lo + 1;
    const int step = (n + 31) / 32;
    const int p = lo + lane * step;
    const bool in = p <= hi;
    const int v = in ? __ldg(ip + p) : INT_MAX;
    const unsigned bal = __ballot_sync(0xffffffffu, in && v <= x);
    const int k = __popc(bal);
    if (k == 0) break;
    const int plast = lo + (k - 1) * step;
    count += plast - lo + 1;
    if (step == 1) break;
    lo = plast + 1;
    hi = imin(hi, plast + step - 1);
  }
  return count;
}

// Merges the partials of sequence b for heads [h0, h1) (threads tid, tid+nthr, ... of the caller).
__device__ __forceinline__ void merge_rows(const Params& p, int b, int h0, int h1, int tid, int nthr) {
  const int s = __ldg(p.indptr + b), e = __ldg(p.indptr + b + 1);
  const int c0 = s / p.chunk, c1 = (e - 1) / p.chunk;
  constexpr int D4 = DC / 4;
  for (int idx = tid; idx < (h1 - h0) * D4; idx += nthr) {
    const int row = h0 + idx / D4, d4 = idx % D4;
    float M = kNegInf, L = 0.f;
    float acc[4] = {0.f, 0.f, 0.f, 0.f};
    for (int c = c0; c <= c1; ++c) {
      const int slot = (c == c0 && s != c0 * p.chunk) ? 1 : 0;
      const int64_t pidx = static_cast<int64_t>(c) * 2 + slot;
      const float li = __ldcg(p.part_lse + pidx * H + row);
      const float4 ov = __ldcg(reinterpret_cast<const float4*>(p.part_o + (pidx * H + row) * DC) + d4);
      const float Mn = fmaxf(M, li);
      const float fo = exp2f(M - Mn), fn = exp2f(li - Mn);
      L = L * fo + fn;
      acc[0] = acc[0] * fo + fn * ov.x;
      acc[1] = acc[1] * fo + fn * ov.y;
      acc[2] = acc[2] * fo + fn * ov.z;
      acc[3] = acc[3] * fo + fn * ov.w;
      M = Mn;
    }
    const float inv = 1.f / L;
    const int64_t orow = static_cast<int64_t>(b) * H + row;
    uint2 w;
    w.x = pack_bf16(acc[0] * inv, acc[1] * inv);
    w.y = pack_bf16(acc[2] * inv, acc[3] * inv);
    *reinterpret_cast<uint2*>(p.out + orow * DC + 4 * d4) = w;
    if (d4 == 0) p.lse[orow] = M + log2f(L);
  }
}

// One CTA per (sequence, head): merges the partials of a split sequence.
// KA_TRACE (a diagnostic build, never a KernelArc candidate: bench/tools/attention_selftest.py --trace
// adds -DKA_TRACE; kernelarc/trace.h): thread 0 of each CTA records when it entered, when its first
// and its last tile had landed, and when it left (after its partials, its outputs and any fused
// merge), with its SM and tile count. Where a decode call's time goes besides reading the KV rows.
#ifdef KA_TRACE
__device__ __forceinline__ void trace_at(int event, bool first = false) {
  if (threadIdx.x == 0) ka_trace::at(event, first);
}
__device__ __forceinline__ void trace_tiles(int n) {
  if (threadIdx.x == 0) ka_trace::count(n);
}
#else
__device__ __forceinline__ void trace_at(int, bool = false) {}
__device__ __forceinline__ void trace_tiles(int) {}
#endif

__global__ void __launch_bounds__(128) mla_merge_kernel(Params p) {
  const int b = blockIdx.x / H, h = blockIdx.x % H;
  const int s = __ldg(p.indptr + b), e = __ldg(p.indptr + b + 1);
  if (e <= s || s / p.chunk == (e - 1) / p.chunk) return;  // empty, or written by its only CTA
  merge_rows(p, b, h, h + 1, threadIdx.x, 128);
}

#if !KA_MMA
__global__ void __launch_bounds__(NT, 1) mla_decode_kernel(Params p) {
  trace_at(0, true);
  KA_DYN_SMEM(smem);
  unsigned char* const stages = smem;
  float4* const sx = reinterpret_cast<float4*>(smem + STAGES * STAGE_BYTES);  // [W][NTT][32]
  int* const flag = reinterpret_cast<int*>(smem + STAGES * STAGE_BYTES + SX_BYTES);
  int* const idx_ring = flag + 4;  // [STAGES][T]

  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int unit = blockIdx.x;
  const bool seq_mode = p.chunk == 0;
  const int* __restrict__ ip = p.indptr;

  int cs, ce;
  if (seq_mode) {
    cs = __ldg(ip + unit);
    ce = imax(__ldg(ip + unit + 1), cs);
  } else {
    cs = unit * p.chunk;
    ce = imin(cs + p.chunk, p.N);
  }
  const int ntiles = (ce - cs + T - 1) / T;
  trace_tiles(ntiles);

  // Loads: thread tid copies ckv chunk (tid % CCH) of rows tid/CCH + i*RPP, and the kpe chunk of
  // the same index when tid % CCH < PCH; a warp covers 512 contiguous bytes of a row.
  const int lcol = tid % CCH, lrow = tid / CCH;
  // The page ids travel one pipeline depth ahead of their tile through idx_ring, as in
  // gqa_decode_cuda (see there): the group of tile u also brings the ids of tile u + STAGES-1.
  // The issue per row is as cheap as there too: base pointers formed once, one unsigned min per
  // id, rows past the range's end known from one count (zero-filled; no pages: none valid).
  const int ce_load = p.num_pages > 0 ? ce : cs;
  const unsigned last_page = static_cast<unsigned>(p.num_pages - 1);
  auto clamp_page = [&](int r) { return static_cast<int>(umin(static_cast<unsigned>(r), last_page)); };
  const unsigned char* const cbase = reinterpret_cast<const unsigned char*>(p.ckv + lcol * 8);
  const unsigned char* const pbase = reinterpret_cast<const unsigned char*>(p.kpe + lcol * 8);
  struct Rows {
    int page[NR];
    int left;  // rows lrow + i*RPP with i*RPP < left hold tokens
  };
  auto load_idx = [&](int tile, Rows& r) {
    r.left = ce_load - (cs + tile * T + lrow);
#pragma unroll
    for (int i = 0; i < NR; ++i)
      r.page[i] = i * RPP < r.left ? clamp_page(__ldg(p.indices + cs + tile * T + lrow + i * RPP)) : 0;
  };
  auto ring_idx = [&](int tile, Rows& r) {
    const int* slot = idx_ring + (tile % STAGES) * T + lrow;
    r.left = ce_load - (cs + tile * T + lrow);
#pragma unroll
    for (int i = 0; i < NR; ++i) r.page[i] = clamp_page(slot[i * RPP]);  // any value is clamped; unused past left
  };
  auto prefetch_idx = [&](int tile) {  // T <= NT: one id per thread
    if (tid < T && tile * T < ce - cs) {
      const int pos = cs + tile * T + tid;
      const bool ok = pos < ce;
      cp_async_4(smem_u32(idx_ring + (tile % STAGES) * T + tid), p.indices + (ok ? pos : 0), ok ? 4 : 0);
    }
  };
  auto issue = [&](int stage, const Rows& r) {
    const uint32_t st = smem_u32(stages + stage * STAGE_BYTES + lrow * ROWB + lcol * 16);
#pragma unroll
    for (int i = 0; i < NR; ++i) {
      const int bytes = i * RPP < r.left ? 16 : 0;
      const int64_t page = r.page[i];
      cp_async_16(st + i * RPP * ROWB, cbase + page * (DC * 2), bytes);
      if (lcol < PCH) cp_async_16(st + i * RPP * ROWB + 2 * DC, pbase + page * (DP * 2), bytes);
    }
  };

  Rows rows;
  {
    Rows pre[STAGES - 1];
#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s)
      if (s < ntiles) load_idx(s, pre[s]);
#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
      if (s < ntiles) issue(s, pre[s]);
      prefetch_idx(s + STAGES - 1);
      cp_async_commit();
    }
  }

  const bool first_chunk = seq_mode || unit == 0;
  const bool last_chunk = seq_mode || unit == p.nchunks - 1;
  const int b_limit = seq_mode ? unit + 1 : p.B;
  int cur_b = seq_mode ? unit : (unit == 0 ? 0 : count_le(ip, p.B, cs, lane));
  int seq_s = 0, seq_e = 0, seg_s = 0, seg_e = 0;

  // This warp's k-steps of the score ([ks0, ks0 + nks)) and output dims ([warp*DW, +DW)).
  const int ks0 = warp * KS_ALL / W;
  const int nks = (warp + 1) * KS_ALL / W - ks0;
  const int r0 = lane >> 2, r1 = r0 + 8, cq = 2 * (lane & 3);

  // Online-softmax state (the same in every warp: each sums the same partial scores in the same
  // order) for rows r0, r1; l: sum of P as rounded to bf16, e: exact sum.
  float m0 = kNegInf, m1 = kNegInf, l0 = 0.f, l1 = 0.f, e0 = 0.f, e1 = 0.f;
  float o[NTO][4];
  uint32_t qa[KSW][4];

  auto reset_state = [&]() {
    m0 = m1 = kNegInf;
    l0 = l1 = e0 = e1 = 0.f;
#pragma unroll
    for (int n = 0; n < NTO; ++n) o[n][0] = o[n][1] = o[n][2] = o[n][3] = 0.f;
  };
  auto load_q = [&](int b) {
    const uint16_t* qn = p.qn + static_cast<int64_t>(b) * H * DC;
    const uint16_t* qp = p.qp + static_cast<int64_t>(b) * H * DP;
#pragma unroll
    for (int i = 0; i < KSW; ++i) {
      if (i < nks) {
        const int d = 16 * (ks0 + i) + cq;  // a k-step lies wholly in q_nope or in q_pe
        if (d < DC) {
          qa[i][0] = ld_u32(qn + r0 * DC + d);
          qa[i][1] = ld_u32(qn + r1 * DC + d);
          qa[i][2] = ld_u32(qn + r0 * DC + d + 8);
          qa[i][3] = ld_u32(qn + r1 * DC + d + 8);
        } else {
          qa[i][0] = ld_u32(qp + r0 * DP + d - DC);
          qa[i][1] = ld_u32(qp + r1 * DP + d - DC);
          qa[i][2] = ld_u32(qp + r0 * DP + d - DC + 8);
          qa[i][3] = ld_u32(qp + r1 * DP + d - DC + 8);
        }
      } else {
        qa[i][0] = qa[i][1] = qa[i][2] = qa[i][3] = 0u;
      }
    }
  };
  auto write_empty = [&](int b) {
    uint32_t* ob = reinterpret_cast<uint32_t*>(p.out + static_cast<int64_t>(b) * H * DC);
    for (int i = tid; i < H * DC / 2; i += NT) ob[i] = 0u;
    if (tid < H) p.lse[static_cast<int64_t>(b) * H + tid] = kNegInf;
  };
  auto advance = [&](int b) -> bool {
    for (; b < b_limit; ++b) {
      const int s = __ldg(ip + b), e = __ldg(ip + b + 1);
      if (e <= s) {
        if (seq_mode || ((s > cs || first_chunk) && (s <= ce || last_chunk))) write_empty(b);
        continue;
      }
      if (!seq_mode && s >= ce) return false;
      cur_b = b;
      seq_s = s;
      seq_e = e;
      seg_s = imax(s, cs);
      seg_e = imin(e, ce);
      load_q(b);
      reset_state();
      return true;
    }
    return false;
  };

  // The current segment's part [lo, hi) of a tile, by the whole CTA (two barriers inside).
  auto cta_tile = [&](int stage, int ts, int lo, int hi) {
    const unsigned char* st = stages + stage * STAGE_BYTES;
    // Partial scores over this warp's k-steps, for all T tokens.
    float s[NTT][4];
#pragma unroll
    for (int j = 0; j < NTT; ++j) s[j][0] = s[j][1] = s[j][2] = s[j][3] = 0.f;
    const uint32_t sbase = smem_u32(st + ((lane & 7) + 8 * (lane >> 4)) * ROWB + ((lane >> 3) & 1) * 16);
#pragma unroll
    for (int i = 0; i < KSW; ++i) {
      if (i < nks) {
        const uint32_t kb = sbase + (ks0 + i) * 32;
#pragma unroll
        for (int jp = 0; jp < NTT / 2; ++jp) {
          uint32_t b0, b1, b2, b3;
          ldsm_x4(kb + jp * 16 * ROWB, b0, b1, b2, b3);
          mma_bf16(s[2 * jp], qa[i], b0, b1);
          mma_bf16(s[2 * jp + 1], qa[i], b2, b3);
        }
      }
    }
#pragma unroll
    for (int j = 0; j < NTT; ++j) sx[(warp * NTT + j) * 32 + lane] = make_float4(s[j][0], s[j][1], s[j][2], s[j][3]);
    __syncthreads();
#pragma unroll
    for (int j = 0; j < NTT; ++j) {
      float4 a = sx[j * 32 + lane];
#pragma unroll
      for (int w = 1; w < W; ++w) {
        const float4 b = sx[(w * NTT + j) * 32 + lane];
        a.x += b.x;
        a.y += b.y;
        a.z += b.z;
        a.w += b.w;
      }
      s[j][0] = a.x;
      s[j][1] = a.y;
      s[j][2] = a.z;
      s[j][3] = a.w;
    }
    // Scale, mask tokens outside [lo, hi), online softmax (rows r0 and r1).
    float mx0 = kNegInf, mx1 = kNegInf;
#pragma unroll
    for (int j = 0; j < NTT; ++j)
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const int pos = ts + 8 * j + cq + e;
        const bool ok = pos >= lo && pos < hi;
        s[j][e] = ok ? s[j][e] * p.scale_log2 : kNegInf;
        s[j][2 + e] = ok ? s[j][2 + e] * p.scale_log2 : kNegInf;
        mx0 = fmaxf(mx0, s[j][e]);
        mx1 = fmaxf(mx1, s[j][2 + e]);
      }
    mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffffu, mx0, 1));
    mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffffu, mx0, 2));
    mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffffu, mx1, 1));
    mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffffu, mx1, 2));
    const float mn0 = fmaxf(m0, mx0), mn1 = fmaxf(m1, mx1);
    const float mu0 = mn0 == kNegInf ? 0.f : mn0, mu1 = mn1 == kNegInf ? 0.f : mn1;
    const float a0 = exp2f(m0 - mu0), a1 = exp2f(m1 - mu1);
    m0 = mn0;
    m1 = mn1;
    uint32_t pk[NTT][2];
    float ls0 = 0.f, ls1 = 0.f, es0 = 0.f, es1 = 0.f;
#pragma unroll
    for (int j = 0; j < NTT; ++j) {
      const float p00 = exp2f(s[j][0] - mu0), p01 = exp2f(s[j][1] - mu0);
      const float p10 = exp2f(s[j][2] - mu1), p11 = exp2f(s[j][3] - mu1);
      pk[j][0] = pack_bf16(p00, p01);
      pk[j][1] = pack_bf16(p10, p11);
      ls0 += bf_lo(pk[j][0]) + bf_hi(pk[j][0]);
      ls1 += bf_lo(pk[j][1]) + bf_hi(pk[j][1]);
      es0 += p00 + p01;
      es1 += p10 + p11;
    }
    l0 = l0 * a0 + ls0;
    l1 = l1 * a1 + ls1;
    e0 = e0 * a0 + es0;
    e1 = e1 * a1 + es1;
#pragma unroll
    for (int n = 0; n < NTO; ++n) {
      o[n][0] *= a0;
      o[n][1] *= a0;
      o[n][2] *= a1;
      o[n][3] *= a1;
    }
    // O[:, warp's dims] += P · ckv rows.
#pragma unroll
    for (int kt = 0; kt < KT; ++kt) {
      const uint32_t pa[4] = {pk[2 * kt][0], pk[2 * kt][1], pk[2 * kt + 1][0], pk[2 * kt + 1][1]};
      const uint32_t vb = smem_u32(st + (16 * kt + (lane & 7) + 8 * ((lane >> 3) & 1)) * ROWB +
                                   (warp * (DW / 8) + (lane >> 4)) * 16);
#pragma unroll
      for (int n2 = 0; n2 < NTO / 2; ++n2) {
        uint32_t b0, b1, b2, b3;
        ldsm_x4_t(vb + n2 * 32, b0, b1, b2, b3);
        mma_bf16(o[2 * n2], pa, b0, b1);
        mma_bf16(o[2 * n2 + 1], pa, b2, b3);
      }
    }
  };

  // Ends the current segment: every warp writes its output dims (the softmax state is the same in
  // all warps), as the final output or as a partial; with FUSED_MERGE the sequence's last CTA merges.
  auto finalize = [&]() {
    l0 += __shfl_xor_sync(0xffffffffu, l0, 1);
    l0 += __shfl_xor_sync(0xffffffffu, l0, 2);
    l1 += __shfl_xor_sync(0xffffffffu, l1, 1);
    l1 += __shfl_xor_sync(0xffffffffu, l1, 2);
    e0 += __shfl_xor_sync(0xffffffffu, e0, 1);
    e0 += __shfl_xor_sync(0xffffffffu, e0, 2);
    e1 += __shfl_xor_sync(0xffffffffu, e1, 1);
    e1 += __shfl_xor_sync(0xffffffffu, e1, 2);
    const float i0 = 1.f / l0, i1 = 1.f / l1;
    const float lse0 = m0 + log2f(e0), lse1 = m1 + log2f(e1);
    const bool full = seq_mode || (seq_s >= cs && seq_e <= ce);
    const int d0 = warp * DW + cq;
    if (full) {
      uint16_t* ob = p.out + static_cast<int64_t>(cur_b) * H * DC;
#pragma unroll
      for (int n = 0; n < NTO; ++n) {
        *reinterpret_cast<uint32_t*>(ob + r0 * DC + d0 + 8 * n) = pack_bf16(o[n][0] * i0, o[n][1] * i0);
        *reinterpret_cast<uint32_t*>(ob + r1 * DC + d0 + 8 * n) = pack_bf16(o[n][2] * i1, o[n][3] * i1);
      }
      if (warp == 0 && (lane & 3) == 0) {
        p.lse[static_cast<int64_t>(cur_b) * H + r0] = lse0;
        p.lse[static_cast<int64_t>(cur_b) * H + r1] = lse1;
      }
    } else {
      const int slot = seg_s == cs ? 0 : 1;
      const int64_t pidx = static_cast<int64_t>(unit) * 2 + slot;
      float* po = p.part_o + pidx * H * DC;
#pragma unroll
      for (int n = 0; n < NTO; ++n) {
        *reinterpret_cast<float2*>(po + r0 * DC + d0 + 8 * n) = make_float2(o[n][0] * i0, o[n][1] * i0);
        *reinterpret_cast<float2*>(po + r1 * DC + d0 + 8 * n) = make_float2(o[n][2] * i1, o[n][3] * i1);
      }
      if (warp == 0 && (lane & 3) == 0) {
        p.part_lse[pidx * H + r0] = lse0;
        p.part_lse[pidx * H + r1] = lse1;
      }
      if (KA_FUSED_MERGE) {
        __threadfence();  // this thread's partial writes, visible device-wide before the count
        __syncthreads();
        if (tid == 0) {
          const int n_b = (seq_e - 1) / p.chunk - seq_s / p.chunk + 1;
          __threadfence();  // release: the CTA's partials (ordered before by the barrier) before the count
          const int old = atomicAdd(p.counters + cur_b, 1);
          __threadfence();  // acquire: the other CTAs' partials, read below with ld.global.cg
          *flag = old == n_b - 1;
        }
        __syncthreads();
        if (*flag) {
          merge_rows(p, cur_b, 0, H, tid, NT);
          if (tid == 0) p.counters[cur_b] = 0;  // ready for the next launch
        }
      }
    }
    __syncthreads();  // sx and flag are reused by the next segment
  };

  bool have = advance(cur_b);
  for (int t = 0; t < ntiles && have; ++t) {
    cp_async_wait_n<STAGES - 2>();
    __syncthreads();  // tile t landed for every thread; every warp is done with tile t-1
    if (t == 0) trace_at(1);
    if (t == ntiles - 1) trace_at(2);
    {
      const int u = t + STAGES - 1;
      if (u < ntiles) {
        ring_idx(u, rows);
        issue(u % STAGES, rows);
      }
      prefetch_idx(u + STAGES - 1);
      cp_async_commit();
    }
    const int ts = cs + t * T, te = imin(ts + T, ce);
    const int stage = t % STAGES;
    while (true) {
      const int lo = imax(seg_s, ts), hi = imin(seg_e, te);
      if (lo < hi) cta_tile(stage, ts, lo, hi);
      if (seg_e > te) break;
      finalize();
      have = advance(cur_b + 1);
      if (!have) break;
    }
  }
  cp_async_wait_n<0>();
  trace_at(3);
}
#endif  // !KA_MMA

#if KA_MMA
// ── the wgmma kernel (KA_MMA 1): swap-AB, the 64 tokens of a tile are the wgmma M ──
// Warpgroup g (warps 4g .. 4g+3; NWG = WARPS/4 of them) computes the partial S^T[64 tok x 16 heads]
// over its KSG k-steps of the 576 q/k dims (m64n16k16, A = the K tile, B = Q, both K-major from
// shared memory), the partials are summed through shared memory (NWG = 2), and every warpgroup
// runs the same online softmax on the full S^T (thread t of a warpgroup holds tokens 16w+g and
// 16w+g+8 of heads 8j+2q, 8j+2q+1, j = 0, 1: the wgmma accumulator layout, w = warp in the
// warpgroup, g = lane/4, q = lane%4). Column maxima: shuffles over g, then the 4 warps through
// shared memory. P (bf16) goes to the warpgroup's own P buffer [16 heads][64 tokens] (K-major, 128-
// byte swizzle: one 2 KB block), and O^T[dims x 16] += V^T · P^T over the warpgroup's MBG m64
// blocks of the 512 output dims: A = V^T, i.e. the ckv part of the same K tile read MN-major
// (transpose-A), B = P (K-major). One stage: T = 64 token rows of 1152 bytes, stored unpadded in
// the 128-byte swizzle layout (DQ/64 = 9 column blocks of 64 rows x 128 bytes, 16-byte chunk c of
// row r at block c/8, byte r*128 + ((c%8) ^ (r%8))*16; blocks 1024-byte aligned), filled by 16-byte
// cp.async per thread (the same row/chunk assignment as MMA=0). Q: 16 rows x 1152 bytes, same
// layout, written with plain loads/stores per segment.
constexpr int NWG = W / 4;
constexpr int WSTAGE = T * 2 * DQ;           // bytes of one stage (73728 at T = 64)
constexpr int QBYTES = H * 2 * DQ;           // 18432
constexpr int PBYTES = H * T * 2;            // 2048: P of one warpgroup
constexpr int SXW_BYTES = NWG > 1 ? NWG * 2 * 128 * 16 : 0;  // partial S^T, [NWG][2][128 thr] float4
constexpr int RED_BYTES = 3 * NWG * 4 * H * 4;  // [3: max, l, e][NWG][4 warps][16 heads] float
constexpr int W_Q_OFF = STAGES * WSTAGE;
constexpr int W_P_OFF = W_Q_OFF + QBYTES;
constexpr int W_SX_OFF = W_P_OFF + NWG * PBYTES;
constexpr int W_RED_OFF = W_SX_OFF + SXW_BYTES;
constexpr int W_FLAG_OFF = W_RED_OFF + RED_BYTES;
constexpr int W_IDX_OFF = W_FLAG_OFF + 16;
constexpr int SMEM_W = W_IDX_OFF + IDX_BYTES + 1024;  // + slack to align the tiles to 1024 bytes
constexpr int KSG = KS_ALL / NWG;            // S k-steps per warpgroup
constexpr int MBG = DC / 64 / NWG;           // O^T m64 blocks per warpgroup
constexpr int QCH = DQ / 8;                  // 16-byte chunks of a Q / K row (72)
static_assert(T == 64 && W % 4 == 0 && DC % 64 == 0 && DP % 64 == 0 && KS_ALL % NWG == 0 && (DC / 64) % NWG == 0,
              "MMA=1: TILE 64, WARPS % 4 == 0, head dims multiples of 64 split evenly over the warpgroups");
static_assert(SMEM_W <= 227 * 1024, "MMA=1: shared memory above 227 KB");

// Byte offset of 16-byte chunk c of row r in a 128-byte-swizzled tile of `rows` rows.
__host__ __device__ constexpr int sw_off(int r, int c, int rows) {
  return (c >> 3) * rows * 128 + r * 128 + (((c & 7) ^ (r & 7)) << 4);
}

__global__ void __launch_bounds__(NT, 1) mla_decode_kernel(Params p) {
  trace_at(0, true);
  KA_DYN_SMEM(smem_raw);
  unsigned char* const smem = smem_raw + ((1024u - (smem_u32(smem_raw) & 1023u)) & 1023u);
  unsigned char* const stages = smem;
  unsigned char* const qs = smem + W_Q_OFF;
  float* const red = reinterpret_cast<float*>(smem + W_RED_OFF);  // [3][NWG][4][H]
  int* const flag = reinterpret_cast<int*>(smem + W_FLAG_OFF);
#if !KA_EARLY
  int* const idx_ring = reinterpret_cast<int*>(smem + W_IDX_OFF);  // [STAGES][T] (EARLY: unused)
#endif

  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int wg = warp >> 2, wq = warp & 3, wtid = tid & 127;
  const int g = lane >> 2, q = lane & 3;
  const int unit = blockIdx.x;
  const bool seq_mode = p.chunk == 0;
  const int* __restrict__ ip = p.indptr;

  int cs, ce;
  if (seq_mode) {
    cs = __ldg(ip + unit);
    ce = imax(__ldg(ip + unit + 1), cs);
  } else {
    cs = unit * p.chunk;
    ce = imin(cs + p.chunk, p.N);
  }
  const int ntiles = (ce - cs + T - 1) / T;
  trace_tiles(ntiles);

  // Loads: as MMA=0 (thread tid copies ckv chunk tid % CCH of rows tid/CCH + i*RPP, and kpe chunk
  // tid % CCH of the same rows when tid % CCH < PCH), each chunk to its swizzled place.
  const int lcol = tid % CCH, lrow = tid / CCH;
  const int ce_load = p.num_pages > 0 ? ce : cs;
  const unsigned last_page = static_cast<unsigned>(p.num_pages - 1);
  auto clamp_page = [&](int r) { return static_cast<int>(umin(static_cast<unsigned>(r), last_page)); };
  const unsigned char* const cbase = reinterpret_cast<const unsigned char*>(p.ckv + lcol * 8);
  const unsigned char* const pbase = reinterpret_cast<const unsigned char*>(p.kpe + lcol * 8);
  struct Rows {
    int page[NR];
    int left;
  };
  auto load_idx = [&](int tile, Rows& r) {
    r.left = ce_load - (cs + tile * T + lrow);
#pragma unroll
    for (int i = 0; i < NR; ++i)
      r.page[i] = i * RPP < r.left ? clamp_page(__ldg(p.indices + cs + tile * T + lrow + i * RPP)) : 0;
  };
#if !KA_EARLY  // (EARLY reads the page indices into registers a tile ahead instead of the ring)
  auto ring_idx = [&](int tile, Rows& r) {
    const int* slot = idx_ring + (tile % STAGES) * T + lrow;
    r.left = ce_load - (cs + tile * T + lrow);
#pragma unroll
    for (int i = 0; i < NR; ++i) r.page[i] = clamp_page(slot[i * RPP]);
  };
  auto prefetch_idx = [&](int tile) {
    if (tid < T && tile * T < ce - cs) {
      const int pos = cs + tile * T + tid;
      const bool ok = pos < ce;
      cp_async_4(smem_u32(idx_ring + (tile % STAGES) * T + tid), p.indices + (ok ? pos : 0), ok ? 4 : 0);
    }
  };
#endif
  auto issue = [&](int stage, const Rows& r) {
    const uint32_t st = smem_u32(stages + stage * WSTAGE);
#pragma unroll
    for (int i = 0; i < NR; ++i) {
      const int bytes = i * RPP < r.left ? 16 : 0;
      const int64_t page = r.page[i];
      const int row = lrow + i * RPP;
      cp_async_16(st + sw_off(row, lcol, T), cbase + page * (DC * 2), bytes);
      if (lcol < PCH) cp_async_16(st + sw_off(row, CCH + lcol, T), pbase + page * (DP * 2), bytes);
    }
  };

  Rows rows;
  {
    Rows pre[STAGES - 1];
#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s)
      if (s < ntiles) load_idx(s, pre[s]);
#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
      if (s < ntiles) issue(s, pre[s]);
#if !KA_EARLY
      prefetch_idx(s + STAGES - 1);
#endif
      cp_async_commit();
    }
  }

  const bool first_chunk = seq_mode || unit == 0;
  const bool last_chunk = seq_mode || unit == p.nchunks - 1;
  const int b_limit = seq_mode ? unit + 1 : p.B;
  int cur_b = seq_mode ? unit : (unit == 0 ? 0 : count_le(ip, p.B, cs, lane));
  int seq_s = 0, seq_e = 0, seg_s = 0, seg_e = 0;

  // Online-softmax state of this thread's 4 heads (c = 2j + e: head 8j + 2q + e), the same in
  // every warpgroup; m: running max, l: this thread's sum of P as rounded to bf16 (its 2 tokens per
  // tile; summed over the warpgroup at the end), x: the exact sum likewise.
  float m[4], l[4], x[4];
  float o[MBG][2][4];  // O^T of this warpgroup's m64 blocks (dims 64*(wg*MBG+mb) + 16*wq + g (+8))

  auto reset_state = [&]() {
#pragma unroll
    for (int c = 0; c < 4; ++c) {
      m[c] = kNegInf;
      l[c] = x[c] = 0.f;
    }
#pragma unroll
    for (int mb = 0; mb < MBG; ++mb)
#pragma unroll
      for (int j = 0; j < 2; ++j) o[mb][j][0] = o[mb][j][1] = o[mb][j][2] = o[mb][j][3] = 0.f;
  };
  // Q of sequence b into shared memory (every wgmma that read the previous Q has retired: each
  // warpgroup waits for its S wgmmas before the softmax barriers of the tile).
  auto load_q = [&](int b) {
    const uint16_t* qn = p.qn + static_cast<int64_t>(b) * H * DC;
    const uint16_t* qp = p.qp + static_cast<int64_t>(b) * H * DP;
    for (int i = tid; i < H * QCH; i += NT) {
      const int h = i / QCH, c = i % QCH;
      const uint16_t* src = c < CCH ? qn + h * DC + c * 8 : qp + h * DP + (c - CCH) * 8;
      *reinterpret_cast<uint4*>(qs + sw_off(h, c, H)) = __ldg(reinterpret_cast<const uint4*>(src));
    }
    fence_proxy_async();  // the generic-proxy stores, before the wgmmas (async proxy) read them
    __syncthreads();
  };
  auto write_empty = [&](int b) {
    uint32_t* ob = reinterpret_cast<uint32_t*>(p.out + static_cast<int64_t>(b) * H * DC);
    for (int i = tid; i < H * DC / 2; i += NT) ob[i] = 0u;
    if (tid < H) p.lse[static_cast<int64_t>(b) * H + tid] = kNegInf;
  };
  auto advance = [&](int b) -> bool {
    for (; b < b_limit; ++b) {
      const int s = __ldg(ip + b), e = __ldg(ip + b + 1);
      if (e <= s) {
        if (seq_mode || ((s > cs || first_chunk) && (s <= ce || last_chunk))) write_empty(b);
        continue;
      }
      if (!seq_mode && s >= ce) return false;
      cur_b = b;
      seq_s = s;
      seq_e = e;
      seg_s = imax(s, cs);
      seg_e = imin(e, ce);
      load_q(b);
      reset_state();
      return true;
    }
    return false;
  };

  // The current segment's part [lo, hi) of a tile, by the whole CTA.
  auto cta_tile = [&](int stage, int ts, int lo, int hi) {
    const uint32_t kb = smem_u32(stages + stage * WSTAGE);
    const uint32_t qb = smem_u32(qs);
    // S^T partial over this warpgroup's k-steps [wg*KSG, +KSG).
    float s[2][4];
#pragma unroll
    for (int j = 0; j < 2; ++j) s[j][0] = s[j][1] = s[j][2] = s[j][3] = 0.f;
    wgmma_fence();
#pragma unroll
    for (int i = 0; i < KSG; ++i) {
      const int kk = wg * KSG + i;  // 16 dims: column block kk/4, 32 bytes kk%4 into its rows
      wgmma_s16(s, sw128_desc(kb + (kk >> 2) * T * 128 + (kk & 3) * 32, 16),
                sw128_desc(qb + (kk >> 2) * H * 128 + (kk & 3) * 32, 16));
    }
    wgmma_commit();
    wgmma_wait_n<0>();
    fence_operands(s);
    if constexpr (NWG > 1) {
      float4* const sx = reinterpret_cast<float4*>(smem + W_SX_OFF);  // [NWG][2][128]
#pragma unroll
      for (int j = 0; j < 2; ++j) sx[(wg * 2 + j) * 128 + wtid] = make_float4(s[j][0], s[j][1], s[j][2], s[j][3]);
      __syncthreads();
#pragma unroll
      for (int j = 0; j < 2; ++j) {
        float4 a = sx[j * 128 + wtid];  // the same order in every warpgroup: the same sums
#pragma unroll
        for (int w2 = 1; w2 < NWG; ++w2) {
          const float4 b = sx[(w2 * 2 + j) * 128 + wtid];
          a.x += b.x;
          a.y += b.y;
          a.z += b.z;
          a.w += b.w;
        }
        s[j][0] = a.x;
        s[j][1] = a.y;
        s[j][2] = a.z;
        s[j][3] = a.w;
      }
    }
    // Scale, mask tokens outside [lo, hi), column maxima.
    const int pos0 = ts + 16 * wq + g, pos1 = pos0 + 8;
    const bool ok0 = pos0 >= lo && pos0 < hi, ok1 = pos1 >= lo && pos1 < hi;
    float mx[4];
#pragma unroll
    for (int j = 0; j < 2; ++j)
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        s[j][e] = ok0 ? s[j][e] * p.scale_log2 : kNegInf;
        s[j][2 + e] = ok1 ? s[j][2 + e] * p.scale_log2 : kNegInf;
        float v = fmaxf(s[j][e], s[j][2 + e]);
        v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, 4));
        v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, 8));
        v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, 16));
        mx[2 * j + e] = v;
      }
    float* const rmax = red + wg * 4 * H;  // [4 warps][H]
    if (g == 0) {
#pragma unroll
      for (int c = 0; c < 4; ++c) rmax[wq * H + 8 * (c >> 1) + 2 * q + (c & 1)] = mx[c];
    }
    __syncthreads();
    float a[4], mu[4];
#pragma unroll
    for (int c = 0; c < 4; ++c) {
      const int h = 8 * (c >> 1) + 2 * q + (c & 1);
      const float v = fmaxf(fmaxf(rmax[h], rmax[H + h]), fmaxf(rmax[2 * H + h], rmax[3 * H + h]));
      const float mn = fmaxf(m[c], v);
      mu[c] = mn == kNegInf ? 0.f : mn;
      a[c] = exp2f(m[c] - mu[c]);
      m[c] = mn;
    }
    // P (bf16) into this warpgroup's P buffer, [head][token] K-major swizzled; sums; rescale O.
    unsigned char* const pbuf = smem + W_P_OFF + wg * PBYTES;
    const int t0 = 16 * wq + g;  // t0 and t0 + 8: chunks t0/8 and t0/8 + 1, element t0 % 8
#pragma unroll
    for (int j = 0; j < 2; ++j)
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const int c = 2 * j + e, h = 8 * j + 2 * q + e;
        const float p0 = exp2f(s[j][e] - mu[c]), p1 = exp2f(s[j][2 + e] - mu[c]);
        const uint32_t pk = pack_bf16(p0, p1);
        l[c] = l[c] * a[c] + (bf_lo(pk) + bf_hi(pk));
        x[c] = x[c] * a[c] + (p0 + p1);
        *reinterpret_cast<uint16_t*>(pbuf + h * 128 + ((((t0 >> 3)) ^ (h & 7)) << 4) + (t0 & 7) * 2) =
            static_cast<uint16_t>(pk & 0xffffu);
        *reinterpret_cast<uint16_t*>(pbuf + h * 128 + ((((t0 >> 3) + 1) ^ (h & 7)) << 4) + (t0 & 7) * 2) =
            static_cast<uint16_t>(pk >> 16);
#pragma unroll
        for (int mb = 0; mb < MBG; ++mb) {
          o[mb][j][e] *= a[c];
          o[mb][j][2 + e] *= a[c];
        }
      }
    fence_proxy_async();  // P stores (generic proxy) before the wgmma reads them
    __syncthreads();
    // O^T[this warpgroup's dims] += V^T · P^T: 4 k-steps of 16 tokens per m64 block.
    const uint32_t pb = smem_u32(pbuf);
    wgmma_fence();
#pragma unroll
    for (int mb = 0; mb < MBG; ++mb)
#pragma unroll
      for (int kt = 0; kt < T / 16; ++kt)
        wgmma_pv16(o[mb], sw128_desc(kb + (wg * MBG + mb) * T * 128 + kt * 16 * 128, T * 128),
                   sw128_desc(pb + kt * 32, 16));
    wgmma_commit();
    wgmma_wait_n<0>();
#pragma unroll
    for (int mb = 0; mb < MBG; ++mb) fence_operands(o[mb]);
  };

  // Ends the current segment (see MMA=0): sums l and x over the warpgroup, writes this warpgroup's
  // output dims as the final output or as a partial; with FUSED_MERGE the sequence's last CTA merges.
  auto finalize = [&]() {
    float* const rl = red + NWG * 4 * H + wg * 4 * H;
    float* const rx = red + 2 * NWG * 4 * H + wg * 4 * H;
#pragma unroll
    for (int c = 0; c < 4; ++c) {
      float vl = l[c], vx = x[c];
      vl += __shfl_xor_sync(0xffffffffu, vl, 4);
      vl += __shfl_xor_sync(0xffffffffu, vl, 8);
      vl += __shfl_xor_sync(0xffffffffu, vl, 16);
      vx += __shfl_xor_sync(0xffffffffu, vx, 4);
      vx += __shfl_xor_sync(0xffffffffu, vx, 8);
      vx += __shfl_xor_sync(0xffffffffu, vx, 16);
      if (g == 0) {
        const int h = 8 * (c >> 1) + 2 * q + (c & 1);
        rl[wq * H + h] = vl;
        rx[wq * H + h] = vx;
      }
    }
    __syncthreads();
    float inv[4], lse_c[4];
#pragma unroll
    for (int c = 0; c < 4; ++c) {
      const int h = 8 * (c >> 1) + 2 * q + (c & 1);
      const float L = ((rl[h] + rl[H + h]) + rl[2 * H + h]) + rl[3 * H + h];
      const float X = ((rx[h] + rx[H + h]) + rx[2 * H + h]) + rx[3 * H + h];
      inv[c] = 1.f / L;
      lse_c[c] = m[c] + log2f(X);
    }
    const bool full = seq_mode || (seq_s >= cs && seq_e <= ce);
    const int dbase = 64 * wg * MBG + 16 * wq + g;
    if (full) {
      uint16_t* ob = p.out + static_cast<int64_t>(cur_b) * H * DC;
#pragma unroll
      for (int mb = 0; mb < MBG; ++mb)
#pragma unroll
        for (int c = 0; c < 4; ++c) {
          const int h = 8 * (c >> 1) + 2 * q + (c & 1), j = c >> 1, e = c & 1;
          const uint32_t pk = pack_bf16(o[mb][j][e] * inv[c], o[mb][j][2 + e] * inv[c]);
          ob[h * DC + dbase + 64 * mb] = static_cast<uint16_t>(pk & 0xffffu);
          ob[h * DC + dbase + 64 * mb + 8] = static_cast<uint16_t>(pk >> 16);
        }
      if (wg == 0 && wq == 0 && g == 0) {
#pragma unroll
        for (int c = 0; c < 4; ++c) p.lse[static_cast<int64_t>(cur_b) * H + 8 * (c >> 1) + 2 * q + (c & 1)] = lse_c[c];
      }
    } else {
      const int slot = seg_s == cs ? 0 : 1;
      const int64_t pidx = static_cast<int64_t>(unit) * 2 + slot;
      float* po = p.part_o + pidx * H * DC;
#pragma unroll
      for (int mb = 0; mb < MBG; ++mb)
#pragma unroll
        for (int c = 0; c < 4; ++c) {
          const int h = 8 * (c >> 1) + 2 * q + (c & 1), j = c >> 1, e = c & 1;
          po[h * DC + dbase + 64 * mb] = o[mb][j][e] * inv[c];
          po[h * DC + dbase + 64 * mb + 8] = o[mb][j][2 + e] * inv[c];
        }
      if (wg == 0 && wq == 0 && g == 0) {
#pragma unroll
        for (int c = 0; c < 4; ++c) p.part_lse[pidx * H + 8 * (c >> 1) + 2 * q + (c & 1)] = lse_c[c];
      }
      if (KA_FUSED_MERGE) {
        __threadfence();  // this thread's partial writes, visible device-wide before the count
        __syncthreads();
        if (tid == 0) {
          const int n_b = (seq_e - 1) / p.chunk - seq_s / p.chunk + 1;
          __threadfence();
          const int old = atomicAdd(p.counters + cur_b, 1);
          __threadfence();
          *flag = old == n_b - 1;
        }
        __syncthreads();
        if (*flag) {
          merge_rows(p, cur_b, 0, H, tid, NT);
          if (tid == 0) p.counters[cur_b] = 0;
        }
      }
    }
    __syncthreads();  // red and flag are reused by the next segment
  };

  bool have = advance(cur_b);
#if KA_EARLY
  load_idx(STAGES - 1, rows);  // the pages of the first tile the loop issues, a tile ahead
#endif
  for (int t = 0; t < ntiles && have; ++t) {
#if KA_EARLY
    __syncthreads();  // every warpgroup is done with tile t-1: its stage takes tile t+STAGES-1 now
    {
      const int u = t + STAGES - 1;
      if (u < ntiles) issue(u % STAGES, rows);
      cp_async_commit();
      load_idx(u + 1, rows);  // (used at the next tile: its latency hides behind this one)
    }
    cp_async_wait_n<STAGES - 1>();  // tile t landed (this thread's copies); tile u may be in flight
    fence_proxy_async();  // this thread's landed copies (generic proxy), before the wgmmas read them
    __syncthreads();      // tile t landed for every thread
    if (t == 0) trace_at(1);
    if (t == ntiles - 1) trace_at(2);
#else
    cp_async_wait_n<STAGES - 2>();
    fence_proxy_async();  // this thread's landed copies (generic proxy), before the wgmmas read them
    __syncthreads();      // tile t landed for every thread; every warpgroup is done with tile t-1
    if (t == 0) trace_at(1);
    if (t == ntiles - 1) trace_at(2);
    {
      const int u = t + STAGES - 1;
      if (u < ntiles) {
        ring_idx(u, rows);
        issue(u % STAGES, rows);
      }
      prefetch_idx(u + STAGES - 1);
      cp_async_commit();
    }
#endif
    const int ts = cs + t * T, te = imin(ts + T, ce);
    const int stage = t % STAGES;
    while (true) {
      const int lo = imax(seg_s, ts), hi = imin(seg_e, te);
      if (lo < hi) cta_tile(stage, ts, lo, hi);
      if (seg_e > te) break;
      finalize();
      have = advance(cur_b + 1);
      if (!have) break;
    }
  }
  cp_async_wait_n<0>();
  trace_at(3);
}
#endif  // KA_MMA

#if KA_MMA
constexpr int KERNEL_SMEM = SMEM_W;
#else
constexpr int KERNEL_SMEM = SMEM_BYTES;
#endif

// ── host ───────────────────────────────────────────────────────────────────────────────────────
struct State {
  bool init = false;
  int sms = 132, occ = 1;
  void* scratch = nullptr;
  size_t scratch_bytes = 0;
  int* counters = nullptr;
  size_t counters_n = 0;
};
State g_state;

inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

inline void launch(const ka::TensorArg& q_nope, const ka::TensorArg& q_pe, const ka::TensorArg& ckv_cache,
                   const ka::TensorArg& kpe_cache, const ka::TensorArg& kv_indptr, const ka::TensorArg& kv_indices,
                   double sm_scale, const ka::TensorArg& output, const ka::TensorArg& lse) {
  const int64_t B = q_nope.size(0);
  if (B <= 0) return;
  const int64_t N = kv_indices.ndim >= 1 ? kv_indices.size(0) : 0;
  State& st = g_state;
  if (!st.init) {
    int dev = 0;
    cudaGetDevice(&dev);
    cudaDeviceGetAttribute(&st.sms, cudaDevAttrMultiProcessorCount, dev);
    cudaFuncSetAttribute(mla_decode_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, KERNEL_SMEM);
    int occ = 0;
    cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, mla_decode_kernel, NT, KERNEL_SMEM);
    st.occ = occ > 0 ? occ : 1;
    st.init = true;
  }
  Params p{};
  p.qn = static_cast<const uint16_t*>(q_nope.data);
  p.qp = static_cast<const uint16_t*>(q_pe.data);
  p.ckv = static_cast<const uint16_t*>(ckv_cache.data);
  p.kpe = static_cast<const uint16_t*>(kpe_cache.data);
  p.indptr = static_cast<const int*>(kv_indptr.data);
  p.indices = static_cast<const int*>(kv_indices.data);
  p.out = static_cast<uint16_t*>(output.data);
  p.lse = static_cast<float*>(lse.data);
  p.B = static_cast<int>(B);
  p.N = static_cast<int>(N);
  p.num_pages = static_cast<int>(ckv_cache.size(0));
  p.scale_log2 = static_cast<float>(sm_scale * 1.4426950408889634);

  const bool split = KA_SPLIT_TOKENS > 0;
  int64_t grid;
  if (!split) {
    p.chunk = 0;
    p.nchunks = static_cast<int>(B);
    grid = B;
  } else {
    const int64_t cap = ceil_div(KA_SPLIT_TOKENS, T) * T;
    const int64_t floor_ = KA_NO_SPLIT_BELOW > T ? ceil_div(KA_NO_SPLIT_BELOW, T) * T : T;
    const int64_t target = static_cast<int64_t>(KA_WAVES) * st.sms * st.occ;
    int64_t chunk = ceil_div(ceil_div(N, target), T) * T;
    chunk = chunk > cap ? cap : chunk;
    chunk = chunk < floor_ ? floor_ : chunk;
    p.chunk = static_cast<int>(chunk);
    p.nchunks = static_cast<int>(N > 0 ? ceil_div(N, chunk) : 1);
    grid = p.nchunks;
    if (p.nchunks > 1) {
      const size_t part = static_cast<size_t>(p.nchunks) * 2 * H;
      const size_t bytes = part * (DC + 1) * sizeof(float) + 256;
      if (bytes > st.scratch_bytes) {
        if (st.scratch) cudaFree(st.scratch);
        st.scratch = nullptr;
        st.scratch_bytes = 0;
        if (cudaMalloc(&st.scratch, bytes) != cudaSuccess) return;
        st.scratch_bytes = bytes;
      }
      p.part_o = static_cast<float*>(st.scratch);
      p.part_lse = p.part_o + part * DC;
      if (KA_FUSED_MERGE) {
        const size_t need = static_cast<size_t>(B);
        if (need > st.counters_n) {
          if (st.counters) cudaFree(st.counters);
          st.counters = nullptr;
          st.counters_n = 0;
          if (cudaMalloc(reinterpret_cast<void**>(&st.counters), need * sizeof(int)) != cudaSuccess) return;
          cudaMemset(st.counters, 0, need * sizeof(int));
          st.counters_n = need;
        }
        p.counters = st.counters;
      }
    }
  }
#ifdef KA_TRACE
  ka_trace::set_grid(grid);
#endif
  KA_LAUNCH(mla_decode_kernel, dim3(static_cast<unsigned>(grid)), dim3(NT), KERNEL_SMEM, p);
  if (split && p.nchunks > 1 && !KA_FUSED_MERGE)
    KA_LAUNCH(mla_merge_kernel, dim3(static_cast<unsigned>(B * H)), dim3(128), 0, p);
}

}  // namespace
}  // namespace ka_mla

void run(const ka::TensorArg& q_nope, const ka::TensorArg& q_pe, const ka::TensorArg& ckv_cache,
         const ka::TensorArg& kpe_cache, const ka::TensorArg& kv_indptr, const ka::TensorArg& kv_indices,
         double sm_scale, const ka::TensorArg& output, const ka::TensorArg& lse) {
  ka_mla::launch(q_nope, q_pe, ckv_cache, kpe_cache, kv_indptr, kv_indices, sm_scale, output, lse);
}
