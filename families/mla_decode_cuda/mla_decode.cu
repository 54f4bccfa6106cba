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
#include <kernelarc/abi.h>
#include <kernelarc/device/convert.cuh>
#include <kernelarc/device/copy.cuh>
#include <kernelarc/device/launch.cuh>
#include <kernelarc/device/mma.cuh>
#include <kernelarc/device/paged.cuh>
#include <kernelarc/device/softmax.cuh>
#include <kernelarc/device/sync.cuh>
#include <kernelarc/device/trace.cuh>
#include <kernelarc/device/wgmma.cuh>

#include <climits>
#include <cstdint>

KA_REQUIRE_DEFINES("mla_decode_cuda", KA_PAGE_SIZE, KA_NUM_QO_HEADS, KA_HEAD_DIM_CKV, KA_HEAD_DIM_KPE, KA_WARPS,
                   KA_TILE, KA_STAGES, KA_SPLIT_TOKENS, KA_WAVES, KA_FUSED_MERGE, KA_NO_SPLIT_BELOW, KA_L2_PREFETCH,
                   KA_MMA, KA_EARLY);

// Internal linkage for everything but the entry (as in gqa_decode_cuda, which says why).
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

static_assert(KA_PAGE_SIZE == 1, "page_size must be 1");
static_assert(H == 16, "num_qo_heads must be 16 (the rows of an mma tile)");
static_assert(DC % 128 == 0 && DP % 16 == 0 && DC % (16 * W) == 0 && (DC / W) % 16 == 0, "head dims");
static_assert(NT % CCH == 0 && PCH <= CCH, "WARPS");
static_assert(T % 16 == 0 && T % RPP == 0, "TILE");
static_assert(STAGES >= 2 && STAGES <= 8, "STAGES");
static_assert(KA_MMA || SMEM_BYTES <= 227 * 1024, "shared memory above 227 KB");

// ── primitives (the device layer, kernelarc/device/) ───────────────────────────────────────────
using namespace ka_dev;
#if KA_MMA
// S^T += K · Q^T: A (the K tile) and B (Q) from descriptors, both K-major.
__device__ __forceinline__ void wgmma_s16(float (&d)[2][4], uint64_t da, uint64_t db) {
  Wgmma<16, Bf16, 0, 0>::ss(d, da, db, 1);
}
// O^T += V^T · P^T: A (V^T) from a descriptor, MN-major (transpose-A bit), B (P) K-major.
__device__ __forceinline__ void wgmma_pv16(float (&d)[2][4], uint64_t da, uint64_t db) {
  Wgmma<16, Bf16, 1, 0>::ss(d, da, db, 1);
}
#endif

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
      lse_merge(M, L, acc, li, ov);
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

using KvIds = PageIds<T, NR, RPP, STAGES>;
using Rows = KvIds::Rows;

// A thread's share of a tile's loads: ckv chunk lcol = tid % CCH of rows lrow + i*RPP (lrow =
// tid / CCH), and the kpe chunk of the same index when lcol < PCH; a warp covers 512 contiguous
// bytes of a row. The base pointers are formed once, so a row costs one multiply and two adds.
struct RowLoads {
  int lcol, lrow;
  const unsigned char* cbase;
  const unsigned char* pbase;
  __device__ __forceinline__ RowLoads(const Params& p, int tid)
      : lcol(tid % CCH), lrow(tid / CCH), cbase(reinterpret_cast<const unsigned char*>(p.ckv + lcol * 8)),
        pbase(reinterpret_cast<const unsigned char*>(p.kpe + lcol * 8)) {}
  // The rows r of a tile into the stage at st; chunk_off(row, c): where the stage keeps 16-byte
  // chunk c (ckv, then kpe) of a row.
  template <typename ChunkOff>
  __device__ __forceinline__ void issue(uint32_t st, const Rows& r, ChunkOff chunk_off) const {
#pragma unroll
    for (int i = 0; i < NR; ++i) {
      const int bytes = i * RPP < r.left ? 16 : 0;
      const int64_t page = r.page[i];
      const int row = lrow + i * RPP;
      cp_async_16_hint<KA_L2_PREFETCH>(st + chunk_off(row, lcol), cbase + page * (DC * 2), bytes);
      if (lcol < PCH) cp_async_16_hint<KA_L2_PREFETCH>(st + chunk_off(row, CCH + lcol), pbase + page * (DP * 2), bytes);
    }
  }
};

// Sequence b has no KV: zeros and lse -inf (threads tid, tid + NT, ... of the CTA).
__device__ __forceinline__ void write_empty_seq(const Params& p, int b, int tid) {
  uint32_t* ob = reinterpret_cast<uint32_t*>(p.out + static_cast<int64_t>(b) * H * DC);
  for (int i = tid; i < H * DC / 2; i += NT) ob[i] = 0u;
  if (tid < H) p.lse[static_cast<int64_t>(b) * H + tid] = kNegInf;
}

// FUSED_MERGE, after this CTA's partial of the current sequence: the sequence's last CTA to
// arrive merges its partials (the counter is left zeroed for the next launch).
__device__ __forceinline__ void merge_if_last(const Params& p, const KvSegments& seg, int* flag, int tid) {
  __syncthreads();  // every thread's partial writes, before thread 0 counts this CTA as done
  if (tid == 0) *flag = last_arrival(p.counters + seg.cur_b, seg.seq_chunks(p.chunk));
  __syncthreads();  // the flag visible to every thread
  if (*flag) {
    merge_rows(p, seg.cur_b, 0, H, tid, NT);
    if (tid == 0) p.counters[seg.cur_b] = 0;
  }
}

// Partial scores s[N][4] of NP warps (or warpgroups) summed through shared memory sx
// ([NP][N][L] float4, L threads each; i: this thread's index among them), in the same order in
// every one of them: every one gets the same sums.
template <int NP, int N, int L>
__device__ __forceinline__ void sum_partial_scores(float (&s)[N][4], float4* sx, int self, int i) {
#pragma unroll
  for (int j = 0; j < N; ++j) sx[(self * N + j) * L + i] = make_float4(s[j][0], s[j][1], s[j][2], s[j][3]);
  __syncthreads();
#pragma unroll
  for (int j = 0; j < N; ++j) {
    float4 a = sx[j * L + i];
#pragma unroll
    for (int w = 1; w < NP; ++w) {
      const float4 b = sx[(w * N + j) * L + i];
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

// One CTA per (sequence, head): merges the partials of a split sequence.
// KA_TRACE (a diagnostic build, never a KernelArc candidate: bench/tools/attention_selftest.py --trace
// adds -DKA_TRACE; kernelarc/trace.h): thread 0 of each CTA records when it entered, when its first
// and its last tile had landed, and when it left (after its partials, its outputs and any fused
// merge), with its SM and tile count. Where a decode call's time goes besides reading the KV rows.

__global__ void __launch_bounds__(128) mla_merge_kernel(Params p) {
  const int b = blockIdx.x / H, h = blockIdx.x % H;
  const int s = __ldg(p.indptr + b), e = __ldg(p.indptr + b + 1);
  if (e <= s || s / p.chunk == (e - 1) / p.chunk) return;  // empty, or written by its only CTA
  merge_rows(p, b, h, h + 1, threadIdx.x, 128);
}

#if !KA_MMA
#include "mma_sync_kernel.cuh"
#endif  // !KA_MMA

#if KA_MMA
#include "wgmma_kernel.cuh"
#endif  // KA_MMA

#if KA_MMA
constexpr int KERNEL_SMEM = SMEM_W;
#else
constexpr int KERNEL_SMEM = SMEM_BYTES;
#endif

// ── host ───────────────────────────────────────────────────────────────────────────────────────
FitOnce g_fit;
SplitKvWorkspace g_work;

inline void launch(const ka::TensorArg& q_nope, const ka::TensorArg& q_pe, const ka::TensorArg& ckv_cache,
                   const ka::TensorArg& kpe_cache, const ka::TensorArg& kv_indptr, const ka::TensorArg& kv_indices,
                   double sm_scale, const ka::TensorArg& output, const ka::TensorArg& lse) {
  const int64_t B = q_nope.size(0);
  if (B <= 0) return;
  const int64_t N = kv_indices.ndim >= 1 ? kv_indices.size(0) : 0;
  const KernelFit& fit = g_fit(mla_decode_kernel, NT, KERNEL_SMEM);
  Params p{};
  p.qn = static_cast<const uint16_t*>(q_nope.data);
  p.qp = static_cast<const uint16_t*>(q_pe.data);
  p.ckv = static_cast<const uint16_t*>(ckv_cache.data);
  p.kpe = static_cast<const uint16_t*>(kpe_cache.data);
  p.indptr = static_cast<const int*>(kv_indptr.data);
  p.indices = static_cast<const int*>(kv_indices.data);
  bind_attention_outputs(p, output, lse, B, sm_scale);
  p.N = static_cast<int>(N);
  p.num_pages = static_cast<int>(ckv_cache.size(0));

  const bool split = KA_SPLIT_TOKENS > 0;
  const KvSplit sp = plan_kv_split(B, N, 1, T, KA_SPLIT_TOKENS, KA_NO_SPLIT_BELOW, KA_WAVES, fit.sms, fit.occ);
  p.chunk = sp.chunk;
  p.nchunks = sp.nchunks;
  const int64_t grid = static_cast<int64_t>(p.nchunks);
  // partials: two slots per chunk and head
  if (split && p.nchunks > 1 && !g_work.bind(p, static_cast<size_t>(p.nchunks) * 2 * H, DC, B, KA_FUSED_MERGE))
    return;
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
