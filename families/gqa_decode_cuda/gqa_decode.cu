// gqa_decode.cu — KernelArc family gqa_decode_cuda: batched GQA decode over a paged KV cache with
// page size 1 (FlashInfer-Bench gqa_paged_decode_*_ps1), bf16 in and out, fp32 accumulation, on
// tensor cores (mma.sync m16n8k16, bf16 x bf16 -> fp32), with split-KV and a log-sum-exp merge.
//
// Semantics (the definition's reference, in the order of rounding):
//   logits[t]  = sum_d float(q[b,h,d]) * float(k[idx[t], kvh, d])        (fp32)
//   z[t]       = logits[t] * sm_scale
//   lse[b,h]   = log2(sum_t exp(z[t]))                                    (base 2, fp32)
//   out[b,h,:] = bf16(sum_t softmax(z)[t] * float(v[idx[t], kvh, :]))
//   a sequence with no KV (kv_indptr[b] == kv_indptr[b+1]): out[b] = 0 and lse[b] = -inf, as the
//   reference leaves them (`output[b].zero_()`, lse initialised by torch.full(..., -inf)).
// Here the scores are kept in base 2 (x = logits * sm_scale * log2(e)), so that exp2 applies and
// the log-sum-exp is directly the base-2 one; P is rounded to bf16 for the P·V product, and the
// softmax denominator sums the rounded values, so the weights stay normalised (the lse uses the
// exact sum).
//
// KernelArc prepends the defines (family.json):
//   problem  KA_NUM_QO_HEADS, KA_NUM_KV_HEADS, KA_HEAD_DIM, KA_PAGE_SIZE (must be 1)
//   knobs    KA_WARPS        warps per CTA; each warp owns TILE/WARPS consecutive tokens of a tile
//            KA_TILE         KV tokens per pipeline stage (a multiple of 16*WARPS)
//            KA_STAGES       cp.async pipeline depth (stages in flight = STAGES-1)
//            KA_SPLIT_TOKENS most KV tokens per CTA (split-KV chunk cap); 0: no split, one CTA per
//                            (sequence, kv head)
//            KA_WAVES        split-KV aims at WAVES x (SMs x CTAs per SM) CTAs in all
//            KA_FUSED_MERGE  1: the last CTA of a split sequence merges its partials (counter per
//                            (sequence, kv head), self-resetting); 0: a second, merge kernel
//            KA_NO_SPLIT_BELOW  smallest split-KV chunk (tokens): sequences shorter than this are
//                            cut by at most one chunk boundary, and a problem with fewer KV tokens in
//                            all runs in one chunk (0: one tile)
//            (no L2 cache-policy knob: cp.async with a createpolicy.fractional evict-first policy
//            raised "illegal instruction" on the H200 with CUDA 13.0's ptxas, a known ptxas
//            miscompile of fractional policies on cp.async; K/V use plain cp.async.cg)
//            KA_L2_PREFETCH  0: K/V copies fetch what they touch; 256: cp.async with the .L2::256B
//                            prefetch-size hint, so the first 16-byte copy of a row brings the 256
//                            aligned bytes around it into L2 in one request (a page-size-1 gather
//                            reads 256-byte pieces of rows at random pages)
//            KA_BULK         0: K/V rows gathered with 16-byte cp.async by every thread (NR per K
//                            and per V row set per tile); 1: each K and each V row of a tile (the
//                            2*D contiguous bytes of kv head g of one page) is ONE Hopper bulk copy
//                            (cp.async.bulk ... mbarrier::complete_tx) completing on the stage's
//                            mbarrier; cp.async then carries only the page ids (see "Loads, BULK=1").
//                            Requires L2_PREFETCH == 0 (no prefetch-size hint on bulk copies).
//            KA_PRODUCER     0: every warp issues its own loads (as above); 1 (requires BULK=1 and a
//                            head_dim dividing 256): warp specialisation — one extra warp (index
//                            WARPS, the CTA has 32*(WARPS+1) threads) is the producer and issues every
//                            K/V copy of every tile (16-byte cp.async.cg by all its lanes, signalled
//                            by cp.async.mbarrier.arrive.noinc on a per-stage "full" mbarrier), the
//                            page ids read by plain loads one tile ahead; the WARPS consumer warps only
//                            wait "full", compute, and arrive on a per-stage "empty" mbarrier; no CTA
//                            barrier in the tile loop, the segment finalize syncs the consumers on a
//                            named barrier (see "Loads, PRODUCER=1").
//            KA_QK_SPLIT     1: Q·K^T accumulates the even and the odd head-dim k-steps into two
//                            accumulators summed before the softmax (halves the chain of dependent
//                            mma per 8-token n-tile); 0: one accumulator. Offered with PRODUCER=1
//                            only (family.json), to keep the space small; the code does not need it.
//            KA_HEADS        1: one CTA per (KV chunk, kv head), as described below; every K and V
//                            row read is the 2*D-byte piece of head g of a page's row. 0 (requires
//                            BULK=1, PRODUCER=1, TILE <= 32, WARPS a multiple of num_kv_heads): one
//                            CTA per KV chunk for ALL kv heads, so each token's K row and V row
//                            (2*HKV*D contiguous bytes: 1 KB at 012) are each read whole, by ONE
//                            bulk copy per row issued by the producer warp (see "Loads, HEADS=0").
//                            Why: with page size 1 and random page ids every row is a random
//                            address, and bench/gather_bw.cu measured on the H200 that reading
//                            256-byte pieces of random rows tops out at ~2.3-2.4 TB/s while whole
//                            1 KB rows at random reach ~2.8 TB/s; HEADS=1's best point already
//                            reads 012's largest workload at ~2.28 TB/s, the ceiling of its access
//                            pattern. Consumer warps split by kv head: warps h*WPH .. h*WPH+WPH-1
//                            (WPH = WARPS/HKV) take head h with its G query heads, each over
//                            TILE/WPH consecutive tokens of a tile (the same mma code as HEADS=1,
//                            reading at byte offset h*2*D of each staged row). A stage holds TILE
//                            whole K rows and TILE whole V rows (row stride 2*HKV*D + 16 bytes:
//                            4x HEADS=1's for the same TILE, hence TILE 16 or 32 and the STAGES
//                            value 6, offered for HEADS=0 only). The segment finalize reduces each
//                            head over its own warps (into its slice of red_o, HKV*G*D fp32), and
//                            the partials, the merge and the fused-merge counters stay per
//                            (sequence, kv head), in the same layout as HEADS=1. The CTA count is
//                            nchunks (not nchunks*HKV), so the chunk sizing aims at
//                            WAVES*SMs*occupancy CTAs with N (not N*HKV) tokens.
//
// Work decomposition. Split-KV cuts the flat token range [0, num_kv_indices) (the concatenation of
// all sequences, in kv_indices order) into chunks of `chunk` tokens; CTA (chunk c, kv head g) runs
// over its chunk with all G = HQ/HKV query heads of group g, so every K/V row is read once for its
// group (HEADS=0: CTA c runs all HKV groups, each on its own warps). A chunk may hold the end of
// one sequence, whole short sequences and the start of another: the CTA walks those "segments" in
// order, resetting the online softmax at each boundary. A sequence that lies inside one chunk is
// written directly; a sequence cut by chunk boundaries leaves one partial (normalised output in
// fp32 and its base-2 lse) per chunk it touches, in slot 0 of that chunk when the piece starts at
// the chunk's start and in slot 1 otherwise (at most one piece of each kind per chunk), and the
// merge combines them:
//   LSE = log2(sum_i 2^lse_i),  out = sum_i 2^(lse_i - LSE) * out_i.
// The chunk size is chosen per call on the host from the total token count (kv_indices' length),
// so no device-to-host copy is needed: chunk = ceil(N*C / (WAVES*SMs*occupancy)) rounded up to a
// tile, C the CTAs per chunk (HKV; HEADS=0: 1), clamped to [max(TILE, NO_SPLIT_BELOW),
// SPLIT_TOKENS]. An empty sequence is written (zeros, -inf) by exactly one CTA per kv head: the
// one whose chunk holds its position (with ties at a chunk boundary going to the earlier chunk);
// with HEADS=0 that CTA writes all HQ rows.
#include <kernelarc/abi.h>
#include <kernelarc/device/convert.cuh>
#include <kernelarc/device/copy.cuh>
#include <kernelarc/device/launch.cuh>
#include <kernelarc/device/mma.cuh>
#include <kernelarc/device/paged.cuh>
#include <kernelarc/device/softmax.cuh>
#include <kernelarc/device/sync.cuh>
#include <kernelarc/device/trace.cuh>

#include <climits>
#include <cstdint>

KA_REQUIRE_DEFINES("gqa_decode_cuda", KA_PAGE_SIZE, KA_NUM_QO_HEADS, KA_NUM_KV_HEADS, KA_HEAD_DIM, KA_WARPS, KA_TILE,
                   KA_STAGES, KA_SPLIT_TOKENS, KA_WAVES, KA_FUSED_MERGE, KA_NO_SPLIT_BELOW, KA_L2_PREFETCH, KA_BULK,
                   KA_PRODUCER, KA_QK_SPLIT, KA_HEADS);

// Everything but the entry has internal linkage: a judge worker keeps earlier candidates loaded
// (RTLD_LOCAL), and vague-linkage objects (statics of inline functions, template statics) would
// otherwise be merged across them as GNU unique symbols.
namespace ka_gqa {
namespace {

constexpr int HQ = KA_NUM_QO_HEADS;
constexpr int HKV = KA_NUM_KV_HEADS;
constexpr int D = KA_HEAD_DIM;
constexpr int G = HQ / HKV;  // query heads per kv head (mma rows; rows >= G are zero padding)
constexpr int W = KA_WARPS;
constexpr int NT = 32 * W;                     // consumer threads (all of them with PRODUCER=0)
constexpr int NTHREADS = NT + 32 * KA_PRODUCER;  // PRODUCER=1: plus the producer warp (index W)
constexpr int T = KA_TILE;
constexpr int NH = KA_HEADS ? 1 : HKV;  // kv heads per CTA (HEADS=0: all of them)
constexpr int WPH = W / NH;             // consumer warps per kv head (HEADS=1: all W)
constexpr int TPW = T / WPH;  // tokens per warp per tile
constexpr int STAGES = KA_STAGES;
// smem bytes per K or V row: the NH heads' pieces (HEADS=0: the whole 2*HKV*D-byte row, as in
// global memory) plus a 16 B pad (conflict-free ldmatrix: consecutive rows 16 bytes apart mod 128)
constexpr int ROWB = NH * 2 * D + 16;
constexpr int KCH = 2 * D / 16;         // 16-byte chunks per row
constexpr int RPP = NT / KCH;           // rows covered by one pass of all threads
constexpr int NR = T / RPP;             // K (and V) rows per thread per tile
constexpr int KSTEPS = D / 16;          // mma k-steps over the head dim
constexpr int NTT = TPW / 8;            // S n-tiles (8 tokens) per warp
constexpr int KT = TPW / 16;            // P·V k-steps (16 tokens) per warp
constexpr int NTD = D / 8;              // O n-tiles (8 dims)
constexpr int STAGE_BYTES = 2 * T * ROWB;
constexpr int RED_O_BYTES = NH * G * D * 4;
constexpr int RED_ML_BYTES = W * G * 3 * 4;
// Fused-merge flags, one per kv head of the CTA (16-byte aligned after them).
constexpr int FLAG_BYTES = KA_HEADS ? 16 : (NH * 4 + 15) / 16 * 16;
// Ring of page ids, one tile per slot (see the loads); PRODUCER=1 has none (the producer keeps the
// ids in registers).
constexpr int IDX_BYTES = KA_PRODUCER ? 0 : STAGES * T * 4;
constexpr int BAR_OFF = STAGES * STAGE_BYTES + RED_O_BYTES + RED_ML_BYTES + FLAG_BYTES + IDX_BYTES;
// BULK=1: one mbarrier per stage after the id ring; PRODUCER=1: "full" then "empty" per stage.
constexpr int BAR_BYTES = KA_BULK ? STAGES * 8 * (1 + KA_PRODUCER) : 0;
constexpr int SMEM_BYTES = BAR_OFF + BAR_BYTES;
constexpr bool kTwoRows = G > 8;        // mma rows 8..15 carry real heads
constexpr float kNegInf = -__builtin_huge_valf();

static_assert(KA_PAGE_SIZE == 1, "page_size must be 1");
static_assert(HQ % HKV == 0 && G >= 1 && G <= 16, "query heads per kv head must be 1..16");
static_assert(D % 32 == 0 && D <= 256, "head_dim must be a multiple of 32, at most 256");
static_assert(W >= 1 && W <= 16 && NT % KCH == 0 && W % NH == 0, "WARPS (HEADS=0: a multiple of num_kv_heads)");
static_assert(T % (16 * WPH) == 0 && T % RPP == 0, "TILE must be a multiple of 16*WARPS (HEADS=0: 16*WARPS/num_kv_heads)");
static_assert(KA_HEADS == 0 || KA_HEADS == 1, "HEADS");
static_assert(KA_HEADS || (KA_BULK && KA_PRODUCER && T <= 32 && (NH * 2 * D) % 16 == 0),
              "HEADS=0 requires BULK=1, PRODUCER=1 and TILE <= 32 (one page id per producer lane)");
static_assert(STAGES >= 2 && STAGES <= 8, "STAGES");
static_assert(SMEM_BYTES <= 227 * 1024, "shared memory above 227 KB");
static_assert(KA_BULK == 0 || KA_BULK == 1, "BULK");
static_assert(!KA_BULK || KA_L2_PREFETCH == 0, "BULK=1 requires L2_PREFETCH=0");
static_assert(KA_PRODUCER == 0 || KA_PRODUCER == 1, "PRODUCER");
static_assert(KA_QK_SPLIT == 0 || KA_QK_SPLIT == 1, "QK_SPLIT");
static_assert(!KA_PRODUCER || (KA_BULK && (!KA_HEADS || 32 % KCH == 0) && BAR_OFF % 8 == 0),
              "PRODUCER=1 requires BULK=1 and 32 a multiple of the 16-byte chunks per row (head_dim dividing 256)");
static_assert(!KA_BULK || (BAR_OFF % 8 == 0 && RED_ML_BYTES % 16 == 0 && TPW % 4 == 0 && TPW <= 32 && ROWB % 16 == 0),
              "BULK=1: 8-byte aligned mbarriers and 16-byte aligned id ring slots (WARPS*G a multiple of 4), "
              "TILE/WARPS a multiple of 4 and at most 32, 16-byte rows");

// ── primitives (the device layer, kernelarc/device/) ───────────────────────────────────────────
using namespace ka_dev;
// Named barrier 1 over the NT consumer threads (the producer warp never joins; barrier 0 is
// __syncthreads').
__device__ __forceinline__ void consumer_sync() { named_sync<1, NT>(); }
// The consumers' CTA-wide barrier: PRODUCER=1 leaves the producer warp out (named barrier 1).
__device__ __forceinline__ void csync() {
#if KA_PRODUCER
  consumer_sync();
#else
  __syncthreads();
#endif
}

#include "split_kv.cuh"

__global__ void __launch_bounds__(NTHREADS) gqa_decode_kernel(Params p) {
  trace_at(0, true);
  KA_DYN_SMEM(smem);
  unsigned char* const stages = smem;
  float* const red_o = reinterpret_cast<float*>(smem + STAGES * STAGE_BYTES);  // [NH][G][D]
  float* const red_ml = red_o + NH * G * D;                                      // [W][G][3]
  int* const flag = reinterpret_cast<int*>(red_ml + W * G * 3);                  // [NH]
  int* const idx_ring = flag + FLAG_BYTES / 4;                                   // [STAGES][T]

  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  // HEADS=1: the CTA's kv head; HEADS=0: this consumer warp's (warps g*WPH .. g*WPH+WPH-1 share
  // head g; meaningless in the producer warp, which uses none of it).
  const int g = KA_HEADS ? static_cast<int>(blockIdx.x % HKV) : warp / WPH;
  const int wsub = KA_HEADS ? warp : warp % WPH;  // the warp's index among its head's warps
  const int unit = KA_HEADS ? static_cast<int>(blockIdx.x / HKV) : static_cast<int>(blockIdx.x);
  // The token range [cs, ce) of this CTA (positions in kv_indices).
  const KvRange<T> kv(p.indptr, unit, p.chunk, p.N);
  const int cs = kv.cs, ce = kv.ce, ntiles = kv.ntiles;

  // Loads: thread tid copies 16-byte chunk (tid % KCH) of rows tid/KCH + i*RPP of a tile (K and V).
  // The page ids of a tile travel ahead of it: the cp.async group that brings K/V of tile u also
  // brings the ids of tile u + STAGES-1 into slot (u + STAGES-1) % STAGES of idx_ring, so when tile
  // u + STAGES-1 is issued, STAGES-1 iterations later, its ids are in shared memory. (Read with a
  // plain load one tile ahead, the ids' memory latency stalled every issue: ncu on the H200 showed
  // half of all stall cycles on that dependency and 37% of DRAM bandwidth.) The slot written at
  // iteration t was last read at iteration t-1, before the barrier that opens iteration t.
  // Per row the issue costs one 32x32->64-bit multiply and two 64-bit adds: the thread's K and V
  // base pointers (kv head g, its 16-byte column) are formed once, an id is clamped into the cache
  // with one unsigned min (a negative id wraps and clamps to the last page), and the rows past the
  // end of the range are known from one count (`left`): they keep a clamped id and zero-fill.
  // With no pages at all every row counts as past the end.
  const int lcol = tid % KCH, lrow = tid / KCH;
  const PageIds<T, NR, RPP, STAGES> ids(p.indices, idx_ring, kv, p.num_pages, lrow, tid);
  using Rows = PageIds<T, NR, RPP, STAGES>::Rows;
  const int ce_load = ids.ce_load;
  const unsigned char* const kbase = reinterpret_cast<const unsigned char*>(p.k + g * D + lcol * 8);
  const unsigned char* const vbase = reinterpret_cast<const unsigned char*>(p.v + g * D + lcol * 8);
  auto issue = [&](int stage, const Rows& r) {
    const uint32_t ks = smem_u32(stages + stage * STAGE_BYTES + lrow * ROWB + lcol * 16);
    const uint32_t vs = ks + T * ROWB;
#pragma unroll
    for (int i = 0; i < NR; ++i) {
      const int bytes = i * RPP < r.left ? 16 : 0;
      const int64_t off = static_cast<int64_t>(r.page[i]) * (HKV * D * 2);
      cp_async_16_hint<KA_L2_PREFETCH>(ks + i * RPP * ROWB, kbase + off, bytes);
      cp_async_16_hint<KA_L2_PREFETCH>(vs + i * RPP * ROWB, vbase + off, bytes);
    }
  };

#if KA_PRODUCER
#include "producer_loads.cuh"
#elif KA_BULK
#include "bulk_loads.cuh"
#else
  ids.start(ntiles, issue);  // the first STAGES-1 tiles in flight
#endif

  // Segment walk state (uniform over the CTA).
  KvSegments seg(p.indptr, p.B, unit, p.nchunks, kv, lane);

  // Per-warp online-softmax state for rows r0 = lane/4 and r1 = r0 + 8 of the mma tile.
  // l sums P as rounded to bf16 (it normalises O, whose P·V used those values); e sums the exact
  // values (it gives the lse).
  float m0 = kNegInf, m1 = kNegInf, l0 = 0.f, l1 = 0.f, e0 = 0.f, e1 = 0.f;
  float o[NTD][4];
  uint32_t qa[KSTEPS][4];
  const int r0 = lane >> 2, r1 = r0 + 8, cq = 2 * (lane & 3);

  auto reset_state = [&]() {
    m0 = m1 = kNegInf;
    l0 = l1 = e0 = e1 = 0.f;
    zero_acc(o);
  };
  auto load_q = [&](int b) {
    const uint16_t* qb = p.q + (static_cast<int64_t>(b) * HQ + g * G) * D;
#pragma unroll
    for (int kk = 0; kk < KSTEPS; ++kk) {
      qa[kk][0] = r0 < G ? ld_u32(qb + r0 * D + 16 * kk + cq) : 0u;
      qa[kk][2] = r0 < G ? ld_u32(qb + r0 * D + 16 * kk + 8 + cq) : 0u;
      qa[kk][1] = (kTwoRows && r1 < G) ? ld_u32(qb + r1 * D + 16 * kk + cq) : 0u;
      qa[kk][3] = (kTwoRows && r1 < G) ? ld_u32(qb + r1 * D + 16 * kk + 8 + cq) : 0u;
    }
  };
  // (HEADS=0: all HQ = NH*G rows of the sequence.)
  const int g_rows = KA_HEADS ? g * G : 0;
  auto write_empty = [&](int b) {
    uint32_t* ob = reinterpret_cast<uint32_t*>(p.out + (static_cast<int64_t>(b) * HQ + g_rows) * D);
    for (int i = tid; i < NH * G * D / 2; i += NT) ob[i] = 0u;
    if (tid < NH * G) p.lse[static_cast<int64_t>(b) * HQ + g_rows + tid] = kNegInf;
  };
  // Moves to the first sequence >= b with tokens in this CTA's range, writing the empty sequences
  // this CTA owns on the way; false when there is none.
  auto advance = [&](int b) -> bool {
    if (!seg.advance(b, write_empty)) return false;
    load_q(seg.cur_b);
    reset_state();
    return true;
  };

  // One warp's share (tokens [warp*TPW, +TPW) of the tile) of the current segment [lo, hi).
  // (HEADS=0: the 2*D bytes of the warp's head g in each row, at byte g*2*D.)
  auto warp_tile = [&](int stage, int ts, int lo, int hi) {
    const int tok0 = wsub * TPW;
    if (ts + tok0 >= hi || ts + tok0 + TPW <= lo) return;  // warp-uniform
    const unsigned char* ks = stages + stage * STAGE_BYTES + (KA_HEADS ? 0 : g * 2 * D);
    const unsigned char* vs = ks + T * ROWB;
    float s[NTT][4];
#pragma unroll
    for (int j = 0; j < NTT; ++j) {
      s[j][0] = s[j][1] = s[j][2] = s[j][3] = 0.f;
      const uint32_t base = smem_u32(ks + (tok0 + 8 * j + (lane & 7)) * ROWB + (lane >> 3) * 16);
#if KA_QK_SPLIT
      // Even k-steps into s[j], odd ones into s2: two chains of KSTEPS/2 dependent mma instead of
      // one of KSTEPS (fp32 sums in another order; the sum of the two is the logit).
      float s2[4] = {0.f, 0.f, 0.f, 0.f};
#endif
#pragma unroll
      for (int kk = 0; kk < KSTEPS; kk += 2) {
        uint32_t b0, b1, b2, b3;
        ldsm_x4(base + kk * 32, b0, b1, b2, b3);
        mma_bf16(s[j], qa[kk], b0, b1);
#if KA_QK_SPLIT
        mma_bf16(s2, qa[kk + 1], b2, b3);
#else
        mma_bf16(s[j], qa[kk + 1], b2, b3);
#endif
      }
#if KA_QK_SPLIT
#pragma unroll
      for (int e = 0; e < 4; ++e) s[j][e] += s2[e];
#endif
    }
    // Scale to base 2, mask tokens outside the segment, row maxima over the quad.
    float mx0, mx1;
    scale_mask_scores(s, p.scale_log2, ts + tok0 + cq, lo, hi, mx0, mx1);
    float mu0, a0, mu1 = 0.f, a1 = 1.f;
    decode_row_max(m0, mx0, mu0, a0);
    if constexpr (kTwoRows) decode_row_max(m1, mx1, mu1, a1);
    // P = 2^(x - m) rounded to bf16, packed as the A operand of P·V; l sums the rounded values.
    uint32_t pk[NTT][2];
    float ls0 = 0.f, ls1 = 0.f, es0 = 0.f, es1 = 0.f;
#pragma unroll
    for (int j = 0; j < NTT; ++j) {
      pk[j][0] = decode_p_pair(s[j][0], s[j][1], mu0, ls0, es0);
      pk[j][1] = kTwoRows ? decode_p_pair(s[j][2], s[j][3], mu1, ls1, es1) : 0u;
    }
    l0 = l0 * a0 + ls0;
    e0 = e0 * a0 + es0;
    if constexpr (kTwoRows) {
      l1 = l1 * a1 + ls1;
      e1 = e1 * a1 + es1;
    }
#pragma unroll
    for (int n = 0; n < NTD; ++n) {
      o[n][0] *= a0;
      o[n][1] *= a0;
      if constexpr (kTwoRows) {
        o[n][2] *= a1;
        o[n][3] *= a1;
      }
    }
    // O += P · V over the warp's tokens.
#pragma unroll
    for (int kt = 0; kt < KT; ++kt) {
      const uint32_t pa[4] = {pk[2 * kt][0], pk[2 * kt][1], pk[2 * kt + 1][0], pk[2 * kt + 1][1]};
      const uint32_t base =
          smem_u32(vs + (tok0 + 16 * kt + (lane & 7) + 8 * ((lane >> 3) & 1)) * ROWB + (lane >> 4) * 16);
      mma_bf16_ldsm_t(o, pa, base);
    }
  };

  // Ends the current segment: combines the warps' states and writes the output (whole sequence)
  // or a partial (and, with FUSED_MERGE, merges when this CTA is the sequence's last). The warps'
  // O tiles are summed one warp after the other into red_o (G x D fp32), scaled to the common max.
  // Its barriers (csync) order the consumer warps' use of red_ml / red_o / flag and of the
  // partials among the NT consumer threads only: the producer warp (PRODUCER=1) touches none of
  // them (it writes only the stages, ordered by the mbarriers), so a named barrier over the
  // consumers suffices, and the producer keeps filling the ring while a segment is finalized.
  // HEADS=0: the same for each kv head h over its warps h*WPH.. (wb), into red_o's [h] slice; the
  // heads' sums run side by side (WPH rounds), and every consumer thread writes elements of all
  // heads; the fused merge counts and merges each head of the sequence separately.
  const int wb = KA_HEADS ? 0 : g * WPH;  // the first warp of this warp's head
  float* const red_og = red_o + (KA_HEADS ? 0 : g * G * D);
  auto finalize = [&]() {
    l0 += __shfl_xor_sync(0xffffffffu, l0, 1);
    l0 += __shfl_xor_sync(0xffffffffu, l0, 2);
    e0 += __shfl_xor_sync(0xffffffffu, e0, 1);
    e0 += __shfl_xor_sync(0xffffffffu, e0, 2);
    if constexpr (kTwoRows) {
      l1 += __shfl_xor_sync(0xffffffffu, l1, 1);
      l1 += __shfl_xor_sync(0xffffffffu, l1, 2);
      e1 += __shfl_xor_sync(0xffffffffu, e1, 1);
      e1 += __shfl_xor_sync(0xffffffffu, e1, 2);
    }
    if ((lane & 3) == 0) {
      if (r0 < G) {
        red_ml[(warp * G + r0) * 3] = m0;
        red_ml[(warp * G + r0) * 3 + 1] = l0;
        red_ml[(warp * G + r0) * 3 + 2] = e0;
      }
      if (kTwoRows && r1 < G) {
        red_ml[(warp * G + r1) * 3] = m1;
        red_ml[(warp * G + r1) * 3 + 1] = l1;
        red_ml[(warp * G + r1) * 3 + 2] = e1;
      }
    }
    csync();  // every warp's (m, l, e) in red_ml before any warp reads all of them
    // This warp's factor 2^(m_w - M) per row (0 for a warp that saw no token of the segment).
    float f0 = 0.f, f1 = 0.f;
    if (r0 < G) {
      float M = kNegInf;
#pragma unroll
      for (int w = 0; w < WPH; ++w) M = fmaxf(M, red_ml[((wb + w) * G + r0) * 3]);
      f0 = m0 == kNegInf ? 0.f : exp2f(m0 - M);
    }
    if (kTwoRows && r1 < G) {
      float M = kNegInf;
#pragma unroll
      for (int w = 0; w < WPH; ++w) M = fmaxf(M, red_ml[((wb + w) * G + r1) * 3]);
      f1 = m1 == kNegInf ? 0.f : exp2f(m1 - M);
    }
#pragma unroll 1
    for (int w = 0; w < WPH; ++w) {
      if (wsub == w) {
#pragma unroll
        for (int n = 0; n < NTD; ++n) {
          if (r0 < G) {
            float2* dst = reinterpret_cast<float2*>(red_og + r0 * D + 8 * n + cq);
            float2 v = make_float2(o[n][0] * f0, o[n][1] * f0);
            if (w > 0) {
              const float2 prev = *dst;
              v.x += prev.x;
              v.y += prev.y;
            }
            *dst = v;
          }
          if (kTwoRows && r1 < G) {
            float2* dst = reinterpret_cast<float2*>(red_og + r1 * D + 8 * n + cq);
            float2 v = make_float2(o[n][2] * f1, o[n][3] * f1);
            if (w > 0) {
              const float2 prev = *dst;
              v.x += prev.x;
              v.y += prev.y;
            }
            *dst = v;
          }
        }
      }
      csync();  // warp w's sum in red_o before warp w+1 adds to it (and, after the last, before the writes below)
    }
    const bool full = kv.seq_mode || (seg.seq_s >= cs && seg.seq_e <= ce);
    const int slot = seg.seg_s == cs ? 0 : 1;
    const int64_t pidx0 = (static_cast<int64_t>(unit) * 2 + slot) * HKV + (KA_HEADS ? g : 0);
    constexpr int D4 = D / 4;
    for (int i = tid; i < NH * G * D4; i += NT) {
      const int gi = KA_HEADS ? g : i / (G * D4);  // the kv head of element i
      const int wbi = KA_HEADS ? 0 : gi * WPH;     // its first warp
      const int row = (KA_HEADS ? i : i % (G * D4)) / D4, d4 = i % D4;
      const int64_t pidx = pidx0 + (KA_HEADS ? 0 : gi);
      float M = kNegInf;
#pragma unroll
      for (int w = 0; w < WPH; ++w) M = fmaxf(M, red_ml[((wbi + w) * G + row) * 3]);
      float L = 0.f, E = 0.f;
#pragma unroll
      for (int w = 0; w < WPH; ++w) {
        const float mw = red_ml[((wbi + w) * G + row) * 3];
        const float f = mw == kNegInf ? 0.f : exp2f(mw - M);
        L += f * red_ml[((wbi + w) * G + row) * 3 + 1];
        E += f * red_ml[((wbi + w) * G + row) * 3 + 2];
      }
      const float4 acc = *reinterpret_cast<const float4*>(red_o + ((KA_HEADS ? 0 : gi * G) + row) * D + 4 * d4);
      const float inv = 1.f / L;
      const float lse2 = M + log2f(E);
      if (full) {
        const int64_t orow = static_cast<int64_t>(seg.cur_b) * HQ + gi * G + row;
        uint2 wv;
        wv.x = pack_bf16(acc.x * inv, acc.y * inv);
        wv.y = pack_bf16(acc.z * inv, acc.w * inv);
        *reinterpret_cast<uint2*>(p.out + orow * D + 4 * d4) = wv;
        if (d4 == 0) p.lse[orow] = lse2;
      } else {
        *reinterpret_cast<float4*>(p.part_o + (pidx * G + row) * D + 4 * d4) =
            make_float4(acc.x * inv, acc.y * inv, acc.z * inv, acc.w * inv);
        if (d4 == 0) p.part_lse[pidx * G + row] = lse2;
      }
    }
    if (KA_FUSED_MERGE && !full) {
      csync();  // every consumer's partial writes before thread 0 counts this CTA as done
#if KA_HEADS
      // (the other CTAs' partials are read (ld.global.cg) by the consumers after the barrier)
      if (tid == 0) *flag = last_arrival(p.counters + seg.cur_b * HKV + g, seg.seq_chunks(p.chunk));
      csync();  // thread 0's *flag visible to every consumer
      if (*flag) {
        merge_group(p, seg.cur_b, g, tid);
        if (tid == 0) p.counters[seg.cur_b * HKV + g] = 0;  // ready for the next launch
      }
#else
      // Thread h counts head h (each head's CTAs of the sequence are the same ones, but the
      // counters stay per (sequence, kv head) as with HEADS=1, so the merge and its layout are one).
      if (tid < NH) flag[tid] = last_arrival(p.counters + seg.cur_b * HKV + tid, seg.seq_chunks(p.chunk));
      csync();  // the flags visible to every consumer
#pragma unroll 1
      for (int h = 0; h < NH; ++h)
        if (flag[h]) {
          merge_group(p, seg.cur_b, h, tid);
          if (tid == 0) p.counters[seg.cur_b * HKV + h] = 0;  // ready for the next launch
        }
#endif
    }
    csync();  // red_o / red_ml / flag are reused by the next segment
  };

  bool have = advance(seg.cur_b);
  // The segments of tile t (its stage landed): each warp's share of every segment the tile
  // touches, finalizing the segments that end inside it; `have` turns false past the last one.
  auto walk_tile = [&](int t) {
    const int ts = kv.tile_start(t), te = kv.tile_end(t);
    const int stage = t % STAGES;
    seg.walk(ts, te, have, [&](int lo, int hi) { warp_tile(stage, ts, lo, hi); }, [&] {
      finalize();
      return advance(seg.cur_b + 1);
    });
  };
#if KA_PRODUCER
  // Consumers (PRODUCER=1): wait "full", compute, release the stage on "empty"; see "Loads,
  // PRODUCER=1". No CTA barrier: each warp reads only its own rows of a stage, and the producer's
  // refill waits for every warp's arrival.
#pragma unroll 1
  for (int t = 0; t < ntiles; ++t) {
    const int stage = t % STAGES;
    mbar_wait(full_bars + stage * 8, (t / STAGES) & 1);
    if (t == 0) trace_at(1);
    if (t == ntiles - 1) trace_at(2);
    __syncwarp();  // the lanes leave the spin loop together before the .aligned ldmatrix / mma
    if (have) walk_tile(t);
    __syncwarp();  // the warp's reads of the stage are done before lane 0 releases it
    if (lane == 0) mbar_arrive(empty_bars + stage * 8);
  }
  trace_at(3);
#else
#if KA_BULK
  int waited = 0;  // tiles 0..waited-1 were waited for
#endif
  for (int t = 0; t < ntiles && have; ++t) {
    cp_async_wait_n<STAGES - 2>();
    __syncthreads();  // tile t landed for every thread (BULK=1: the ids of tile t+STAGES-1); every warp is done with tile t-1
#if KA_BULK
    {
      const int u = t + STAGES - 1;
      if (u < ntiles) issue_bulk(u, ring_pages);
      ids.prefetch(u + STAGES - 1);
      cp_async_commit();
    }
#else
    ids.issue_next(t + STAGES - 1, ntiles, issue);
#endif
#if KA_BULK
    // After the issue, so that the next fill is not held behind this tile's arrival.
    mbar_wait(bars + (t % STAGES) * 8, (t / STAGES) & 1);
    waited = t + 1;
#endif
    walk_tile(t);
  }
#if KA_BULK
  // A CTA must not exit with bulk copies into its shared memory in flight: wait for the tiles
  // issued (min(ntiles, waited + STAGES-1) of them) but not consumed.
  for (int u = waited; u < imin(ntiles, waited + STAGES - 1); ++u) mbar_wait(bars + (u % STAGES) * 8, (u / STAGES) & 1);
#endif
  cp_async_wait_n<0>();
  trace_at(3);
#endif  // KA_PRODUCER
}

#include "host.cuh"

}  // namespace
}  // namespace ka_gqa


void run(const ka::TensorArg& q, const ka::TensorArg& k_cache, const ka::TensorArg& v_cache,
         const ka::TensorArg& kv_indptr, const ka::TensorArg& kv_indices, double sm_scale,
         const ka::TensorArg& output, const ka::TensorArg& lse) {
  ka_gqa::launch(q, k_cache, v_cache, kv_indptr, kv_indices, sm_scale, output, lse);
}
