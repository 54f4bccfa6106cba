// mla_prefill.cu — KernelArc family mla_prefill_cuda: batched causal MLA prefill with absorbed
// weights over a paged cache with page size 1 (FlashInfer-Bench mla_paged_prefill_causal_*_ps1),
// bf16 in and out, fp32 accumulation, on tensor cores: mma.sync m16n8k16 bf16 with ldmatrix (KA_MMA
// 0, any sm_80+ GPU) or Hopper warpgroup MMA, wgmma.mma_async m64nNk16 (KA_MMA 1, sm_90a).
//
// Semantics (the definition's reference):
//   sequence b: queries qo_indptr[b] .. qo_indptr[b+1), keys = pages kv_indices[kv_indptr[b] ..
//   kv_indptr[b+1]); qo_len, kv_len; query i sees keys j <= i + kv_len - qo_len.
//   x[h][j] = (q_nope[h]·ckv[j] + q_pe[h]·kpe[j]) * sm_scale;  lse = log2 sum_j exp(x)  (base 2)
//   out[h]  = bf16(softmax(x[h]) · ckv)   (the values are the compressed rows themselves)
//   qo_len == 0 or kv_len == 0 sequences, and rows before qo_indptr[0]: out 0, lse -inf (as
//   initialised). A row of a non-empty sequence that sees no key (kv_len < qo_len): the reference
//   takes the softmax of an all -inf row, so out = NaN (KA_MASKED_ROW_ZERO = 0) and lse = -inf.
//   Scores are kept in base 2; P is rounded to bf16 for P·V. The wgmma paths (MMA=1) normalise by
//   the sum of the unrounded values, which the lse sums too, and move a row's running maximum lazily
//   (softmax_tile, as in gqa_prefill_cuda: O is rescaled only when some row of a warp moved); the
//   mma.sync path normalises by the sum of the rounded values. The softmax scale must be positive
//   (every definition's is 1/sqrt(d)): any other value gives NaN everywhere (out and lse).
//
// KernelArc prepends the defines (family.json):
//   problem  KA_NUM_QO_HEADS (16: one mma m-tile is one token's heads), KA_HEAD_DIM_CKV,
//            KA_HEAD_DIM_KPE, KA_MASKED_ROW_ZERO
//   knobs    KA_QTOK      query tokens per CTA (M = 16*QTOK rows, m-tile i = token i)
//            KA_WARPS     warps per CTA
//            KA_KV_TILE   keys per pipeline stage (a stage holds T gathered [ckv | kpe] rows; the
//                         ckv part is also the V operand, so each row is read from memory once)
//            KA_STAGES    cp.async pipeline depth
//            KA_ORDER     0 natural; 1 heaviest tile of each sequence first; 2 as 1 with sequences
//                         by decreasing work (as in gqa_prefill_cuda); with PERSIST 1 on WARPS 12:
//                         every tile of the launch by decreasing key tiles, dealt in snake order
//            KA_PERSIST   0: one CTA per possible query tile; 1: SMs x occupancy persistent CTAs
//                         stride over the tiles (as in gqa_prefill_cuda); with WARPS 12 (STAGES 3)
//                         a CTA runs its tiles' key tiles as one stream (stream_wgmma3: the next
//                         item's Q and first keys load, and the last item's output is written,
//                         while the tensor cores work)
//            KA_MMA       0: mma.sync, the three phases below (any QTOK / WARPS / KV_TILE / STAGES
//                         up to 3 that fit). 1: wgmma (sm_90a; an MMA=1 build for another arch
//                         compiles, its device code traps), QTOK 4: M = 64 rows = 4 tokens x 16
//                         heads, one wgmma M. O is 64 x 512 fp32, 256 registers per thread of a
//                         warpgroup, so the output dims are split over two warpgroups (256 each, one
//                         m64n256k16 per k-step); S = Q K^T (64 x T over 576 dims) belongs to one
//                         warpgroup, which also does the softmax and hands P (bf16) and the row
//                         rescale factors to the other(s) through shared memory. Tiles are stored
//                         unpadded in the 128-byte swizzle layout the descriptors name (as in
//                         gqa_prefill_cuda): R rows of D bf16 are D/64 column blocks of R x 128
//                         bytes, 16-byte chunk c of row r at block c/8, byte r*128 + ((c%8)^(r%8))*16,
//                         blocks 1024-byte aligned; a K/V stage is 9 blocks (8 ckv, 1 kpe). S: A = Q,
//                         B = the K rows, both K-major; P V: B = the ckv blocks of the same stage,
//                         MN-major (transpose bit), N = 256 across 4 blocks (LBO = T*128).
//              WARPS 8 (KV_TILE 64, STAGES 2: Q 72 KB + 2 x 72 KB stages + P 8 KB): per tile,
//                         warpgroup 0 computes S (36 m64n64k16, A and B from shared memory) and
//                         the softmax, keeps P as A fragments for its own O += P V (dims 0-255, A
//                         from registers) and writes P (swizzled, K-major) and the rescale factors
//                         to shared memory; after a CTA barrier warpgroup 1 adds P V for dims
//                         256-511 with A = P from shared memory. Warpgroup 1 issues the loads (it
//                         is idle during S). Loads run one tile ahead; nothing overlaps the softmax
//                         (a third 72 KB stage does not fit next to Q).
//              WARPS 12 (KV_TILE 32, STAGES 3-6, PERSIST 0): Q's ckv part leaves shared memory:
//                         warpgroup 0 holds it as wgmma A fragments (32 k-steps x 4 registers) for
//                         the whole query tile and computes S(t) (32 m64n32k16 with A from registers,
//                         the 4 kpe k-steps with A = Q's kpe part from shared memory) and the
//                         softmax; warpgroups 1 and 2 issue the loads and own O dims 0-255 and
//                         256-511 (A = P from shared memory). Registers are rebalanced with
//                         setmaxnreg (168 per thread at launch: 184 for warpgroup 0, 160 for the O
//                         warpgroups). P(t) goes into the kpe block of tile t's own stage (S(t) was
//                         its last reader; the stage is refilled only after P V(t)), 32-key rows of
//                         64 bytes in the 64-byte swizzle layout; the rescale factors alternate
//                         between two buffers. Per tile two CTA barriers: A(t) (tile t landed, P
//                         V(t-2) done): S(t) alone on the tensor cores while the O warpgroups issue
//                         the loads of tile t+STAGES-2 into the stage of tile t-2; B(t) (S(t) done,
//                         P(t-1) written): warpgroup 0 computes the softmax of tile t and writes
//                         P(t), while the O warpgroups rescale and add P(t-1) V(t-1) on the tensor
//                         cores. KV_TILE 64 would need ~210 registers in warpgroup 0 (it spills at
//                         184), so it is left out; PERSIST 1 is stream_wgmma3 (below).
//            KA_SAHEAD    WARPS 12 only (STAGES >= 4). 1: S runs one tile ahead, as FlashAttention-3's
//                         intra-warpgroup overlap: warpgroup 0 issues S(t+1) = Q K(t+1)^T into a
//                         second accumulator set before the softmax of tile t and waits for it only
//                         after, so the tensor cores run S(t+1) and the O warpgroups' P(t-1) V(t-1)
//                         while the softmax of t runs; one CTA barrier per tile, Y(t): tile t+1
//                         landed, S(t) in registers, P(t-1) written, P V(t-2) done. At Y(t) the O
//                         warpgroups load tile t+STAGES-2 into the stage of tile t-2, so a stage
//                         more is needed for the same load lead (three are busy: P V(t-1), P(t),
//                         S(t+1)). Warpgroup 0 keeps Q's last 64 ckv dims in shared memory
//                         (QTAIL_CKV: 16 registers fewer) to make room for its second S set.
//              Both wgmma schedules issue every wgmma batch after a wgmma.fence with its A fragments
//              and accumulators already defined, and wait for it (wait_group 0) before leaving the
//              branch that issued it, so ptxas does not serialize them; cp.async and st.shared
//              writes are followed by fence.proxy.async before the barrier that publishes them to
//              wgmma.
//
// Per K/V tile of the mma.sync path (KA_MMA 0), three phases separated by CTA barriers (the rows
// are too wide, 576 for Q·K and 512 for P·V, for one warp to own whole rows of S and O in
// registers):
//   S   warp w computes S for m-tile w % QTOK and keys [(w / QTOK) * KW, +KW) over all 576 dims
//       (Q and K from shared memory by ldmatrix), scaled to base 2, into an fp32 S tile in smem;
//   softmax  NT/M threads per row: mask (diagonal tiles only), running max, P = 2^(x - m) as bf16
//       into a P tile, running sums, the rescale factor per row into smem;
//   P·V warp w owns m-tile w % QTOK and output dims [(w / QTOK) * DB, +DB) in registers, rescales
//       them and adds P·V (P and the ckv part of the stage by ldmatrix / ldmatrix.trans).
// Work decomposition as in gqa_prefill_cuda: grid.x bounds the query tiles from shapes only, each
// CTA finds its (sequence, tile) by a warp scan over qo_indptr; a tile whose rows see no key writes
// the empty-row values only; masks only on tiles that cross the diagonal.
#include <kernelarc/abi.h>
#include <kernelarc/device/convert.cuh>
#include <kernelarc/device/copy.cuh>
#include <kernelarc/device/launch.cuh>
#include <kernelarc/device/mma.cuh>
#include <kernelarc/device/ragged.cuh>
#include <kernelarc/device/softmax.cuh>
#include <kernelarc/device/sync.cuh>
#include <kernelarc/device/wgmma.cuh>
#ifdef KA_TRACE
#include <kernelarc/trace.h>  // diagnostic builds only (see trace_at)
#endif

#include <climits>
#include <cstdint>

KA_REQUIRE_DEFINES("mla_prefill_cuda", KA_NUM_QO_HEADS, KA_HEAD_DIM_CKV, KA_HEAD_DIM_KPE, KA_MASKED_ROW_ZERO, KA_QTOK,
                   KA_WARPS, KA_KV_TILE, KA_STAGES, KA_ORDER, KA_PERSIST, KA_MMA, KA_SAHEAD);

namespace ka_mlap {
namespace {

constexpr int H = KA_NUM_QO_HEADS;
constexpr int DC = KA_HEAD_DIM_CKV;
constexpr int DP = KA_HEAD_DIM_KPE;
constexpr int DQ = DC + DP;               // Q·K width
constexpr int MT = KA_QTOK;               // m-tiles = tokens per CTA
constexpr int M = 16 * MT;
constexpr int QT = MT;                    // query tokens per tile (for the shared tile mapping)
constexpr int W = KA_WARPS;
constexpr int NT = 32 * W;
constexpr int T = KA_KV_TILE;
constexpr int STAGES = KA_STAGES;
constexpr int ROWB = 2 * DQ + 16;         // bytes per Q or K row in smem ([ckv | kpe] + 16 B pad)
constexpr int CPR = 2 * DQ / 16;          // 16-byte chunks per row
constexpr int CPC = 2 * DC / 16;          // of which ckv
constexpr int KG = W / MT;                // key groups (S) = dim groups (P·V)
constexpr int KW = T / KG;                // keys per warp in S
constexpr int DB = DC / KG;               // output dims per warp in P·V
constexpr int TPR = NT / M;               // softmax threads per row
constexpr int CPT = T / TPR;              // softmax columns per thread
constexpr int SROW = T + 4;               // fp32 S row stride (elements)
constexpr int PROWB = 2 * T + 16;         // bf16 P row stride (bytes)
constexpr int STAGE_BYTES = T * ROWB;
constexpr int Q_BYTES = M * ROWB;
constexpr int S_BYTES = M * SROW * 4;
constexpr int P_BYTES = M * PROWB;
constexpr int ROWSTAT_BYTES = M * 4 * 2;  // alpha, 1/l
constexpr int MAXB_SORT = 1024;
constexpr int SORT_BYTES = KA_ORDER == 2 ? MAXB_SORT * 8 : 0;
constexpr int SMEM_BYTES = STAGES * STAGE_BYTES + Q_BYTES + S_BYTES + P_BYTES + ROWSTAT_BYTES + SORT_BYTES + 16;
constexpr float kNegInf = -__builtin_huge_valf();
// KA_MMA 1 (wgmma): 2 warpgroups, M = 64 rows; shared memory (1024-byte aligned base) =
// STAGES x [T keys x DQ] K/V stages | Q [64 x DQ] | P bf16 [64 x T] | alpha [64] | 1/l [64] |
// (ORDER 2) the order of at most MAXB_SORT_W sequences (their costs go to stage 0 while sorting).
// Every tile is stored in the 128-byte swizzle layout (see KA_MMA in the header).
constexpr int MMA = KA_MMA;
constexpr int WG_STAGE_BYTES = T * 2 * DQ;
constexpr int WG_Q_BYTES = M * 2 * DQ;
constexpr int WG_P_BYTES = M * T * 2;
constexpr int MAXB_SORT_W = 256;
constexpr bool WG3 = MMA && W == 12;  // the pipelined 3-warpgroup schedule
// WARPS 12: registers per thread at launch (__launch_bounds__(384, 1): 65536 / 384 rounded down to
// a multiple of 8), which the setmaxnreg split of tile_wgmma3 redistributes; the host checks that
// the kernel was compiled to exactly this many (with fewer, setmaxnreg.inc would wait forever).
constexpr int REGS_LAUNCH = 168;
// After the stages: WARPS 8: Q [64 x DQ] | P bf16 [64 x T]; WARPS 12: Q's tail, the kpe part of Q
// [64 x DP] after the last QTAIL_CKV ckv dims (the rest lives in registers, P in the kpe block of its
// tile's stage).
// WARPS 12, SAHEAD 1: the last QTAIL_CKV ckv dims of Q stay in shared memory too, beside the kpe part
// (16 registers fewer per thread of warpgroup 0 for its second S accumulator set).
// WARPS 12, PERSIST 1 (stream_wgmma3): after the stages, a staging buffer for the next item's Q ckv
// part but its last QTAIL_CKV dims [64 x (DC - 64)] (swizzled; warpgroup 0 loads its fragments from
// it), the rest of Q [64 x (64 + DP)] in two buffers (item parity), then two alpha and two 1/l
// buffers and the CTA's item list (MAXI x 32 bytes, its length and tile count). Its warpgroups keep
// the launch's 168 registers each (with tile_wgmma3's 184 / 160 split the O warpgroups spilled).
constexpr bool WG3P = WG3 && KA_PERSIST == 1;
constexpr int QTAIL_CKV = WG3 && (KA_SAHEAD || WG3P) ? 64 : 0;
constexpr int MAXI = 256;  // items per persistent CTA at most (the host sizes the grid for it)
constexpr int WG_ALPHA_OFF = STAGES * WG_STAGE_BYTES + (WG3P ? M * 2 * (DC - QTAIL_CKV) + 2 * M * 2 * (QTAIL_CKV + DP)
                                                        : WG3 ? M * 2 * (QTAIL_CKV + DP) : WG_Q_BYTES + WG_P_BYTES);
constexpr int WG_ROWSTAT_BYTES = WG3P ? M * 4 * 4 + MAXI * 32 + 16  // alpha x 2, 1/l x 2, items
                                      : M * 4 * (WG3 ? 3 : 2);      // alpha (WARPS 12: two buffers), 1/l
constexpr int WG_SMEM_BYTES = WG_ALPHA_OFF + WG_ROWSTAT_BYTES + (KA_ORDER == 2 ? MAXB_SORT_W * 4 : 0) + 1024;
constexpr int KERNEL_SMEM = MMA ? WG_SMEM_BYTES : SMEM_BYTES;

static_assert(MMA == 0 || (MT == 4 && (W == 8 || W == 12) && (T == 64 || (W == 12 && T == 32)) && DC == 512 && DP == 64),
              "MMA=1: QTOK 4, WARPS 8 (KV_TILE 64) or 12 (KV_TILE 32; 64 builds but spills), head dims 512 + 64");
static_assert(!WG3 || (STAGES >= 3 && 2 * WG_STAGE_BYTES >= M * 2 * DC),
              "MMA=1, WARPS 12: three stages at least (Q's ckv part is staged in the last two)");
static_assert(!WG3P || (STAGES == 3 && !KA_SAHEAD), "MMA=1, WARPS 12, PERSIST 1: STAGES 3, SAHEAD 0");
static_assert(MMA == 0 || WG_SMEM_BYTES <= 227 * 1024, "MMA=1: shared memory above 227 KB");

static_assert(H == 16, "one m-tile must be one token's 16 heads");
static_assert(DC % 128 == 0 && DP % 16 == 0 && DQ % 32 == 0, "head dims");
static_assert(MMA == 1 || W % MT == 0 && KW % 8 == 0 && KW >= 8 && DB % 16 == 0 && DB <= 256, "QTOK / WARPS / KV_TILE");
static_assert(MMA == 1 || NT % M == 0 && TPR <= 32 && (TPR & (TPR - 1)) == 0 && T % TPR == 0 && CPT % 2 == 0, "softmax mapping");
static_assert(STAGES >= 2 && STAGES <= 6, "STAGES");
static_assert(MMA == 1 || SMEM_BYTES <= 227 * 1024, "shared memory above 227 KB");

// KA_TRACE (a diagnostic build, never a KernelArc candidate: bench/tools/attention_selftest.py --trace
// adds -DKA_TRACE; kernelarc/trace.h): per CTA, when it entered (0), when Q and its first key tile
// had landed (1), when warpgroup 0's loop over the key tiles ended (2) and when the O warpgroups had
// written the output (3), with its SM and its key-tile count (the item stream: all its items'
// tiles). Where the time of a CTA goes besides its tiles: the prologue, the epilogue, the gaps
// between the CTAs of one SM. The item stream also marks each iteration g < 32 of its loop, from
// the O warpgroups' thread 128 (mark 2g: at A(g), tagged on an item's first tile; mark 2g+1: at
// B(g), tagged when it wrote an item's output in that iteration): where an item boundary's time
// goes. (The marks cost that trace build a 4-byte spill, nvcc 13.0; builds without KA_TRACE have
// none.)
#ifdef KA_TRACE
__device__ __forceinline__ void trace_at(bool who, int event, bool first = false) {
  if (who) ka_trace::at(event, first);
}
__device__ __forceinline__ void trace_count(bool who, int n) {
  if (who) ka_trace::count(n);
}
__device__ __forceinline__ void trace_mark(bool who, int i, bool tag) {
  if (who) ka_trace::mark(i, tag);
}
#else
__device__ __forceinline__ void trace_at(bool, int, bool = false) {}
__device__ __forceinline__ void trace_count(bool, int) {}
__device__ __forceinline__ void trace_mark(bool, int, bool) {}
#endif

// ── primitives (the device layer, kernelarc/device/) ───────────────────────────────────────────
using namespace ka_dev;
#ifdef KA_EMULATE
inline void cta_bar() { __syncthreads(); }
[[maybe_unused]] inline void wg0_bar() { emu::named_sync(2, 128); }
#else
// A CTA barrier for code where the warpgroups run different branches (barrier.sync without
// .aligned: the warps need not reach the same instruction); barrier 1, every thread.
[[maybe_unused]] __device__ __forceinline__ void cta_bar() { asm volatile("barrier.sync 1, %0;\n" ::"n"(NT) : "memory"); }
// Warpgroup 0 alone (the item stream's Q loads).
[[maybe_unused]] __device__ __forceinline__ void wg0_bar() { asm volatile("barrier.sync 2, 128;\n" ::: "memory"); }
#endif

#if KA_MMA
// Byte offset of 16-byte chunk c of row r in a swizzled tile of `rows` rows: column block c/8 (64
// bf16 columns, rows x 128 bytes), row r at r*128, chunk (c%8) ^ (r%8) within the row.
__host__ __device__ constexpr int sw_off(int r, int c, int rows) {
  return (c >> 3) * rows * 128 + r * 128 + (((c & 7) ^ (r & 7)) << 4);
}


// The online softmax of one S tile (the wgmma paths): kernelarc/device/softmax.cuh's softmax_tile
// (as gqa_prefill_cuda's), with the state of a thread's two rows.
using Rows = SoftmaxRows;
#endif

__device__ __forceinline__ int ceil_div_i(int a, int b) { return (a + b - 1) / b; }

struct Params {
  const uint16_t* q_nope;  // [total_q][H][DC]
  const uint16_t* q_pe;    // [total_q][H][DP]
  const uint16_t* ckv;     // [P][1][DC]
  const uint16_t* kpe;     // [P][1][DP]
  const int* qo_indptr;    // [B+1]
  const int* kv_indptr;    // [B+1]
  const int* indices;      // [N]
  uint16_t* out;           // [total_q][H][DC]
  float* lse;              // [total_q][H]
  int B, total_q, num_rows;
  int tiles;  // upper bound of the query tiles (from shapes)
  float scale_log2;
};

#if KA_MMA
// Warpgroup 0's epilogue: the quad's sums, then for rows r0 and r0 + 8, 1/l into inv_smem (-1: the
// row saw no key) and the lse of the rows of the item's nq tokens.
__device__ __forceinline__ void row_stats(const Params& p, Rows st, float* inv_smem, int64_t row0, int nq, int r0,
                                          int lane) {
  st.l0 += __shfl_xor_sync(0xffffffffu, st.l0, 1);
  st.l0 += __shfl_xor_sync(0xffffffffu, st.l0, 2);
  st.l1 += __shfl_xor_sync(0xffffffffu, st.l1, 1);
  st.l1 += __shfl_xor_sync(0xffffffffu, st.l1, 2);
  if ((lane & 3) == 0) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int r = r0 + 8 * h;
      const float m = h ? st.m1 : st.m0, l = h ? st.l1 : st.l0;
      const bool none = m == kNegInf;  // the row saw no key
      inv_smem[r] = none ? -1.f : 1.f / l;
      if (r / H < nq) p.lse[row0 + r] = none ? kNegInf : m + log2f(l);
    }
  }
}
// O (an O warpgroup's DC / 2 dims) += P V of a key tile, waited for: A = P from shared memory
// (descriptor dp0, K-major, 32 bytes per k-step), B = the tile's ckv rows MN-major (dv0, 16 rows of
// 128 bytes per k-step).
__device__ __forceinline__ void pv_ss(float (&o)[(DC / 2) / 8][4], uint64_t dp0, uint64_t dv0) {
  wgmma_fence();
#pragma unroll
  for (int kt = 0; kt < T / 16; ++kt)
    wgmma_ss_tb<DC / 2>(o, dp0 + static_cast<uint64_t>((kt * 32) >> 4), dv0 + static_cast<uint64_t>((kt * 16 * 128) >> 4));
  wgmma_commit();
  wgmma_wait_n<0>();
  fence_operands(o);
}
// The wgmma paths' output: O warpgroup og writes its DC / 2 dims of rows r0 and r1 of an item (the
// rows of its nq tokens from row0 on), scaled by 1/l from inv_b (-1: the row saw no key: NaN, or 0
// with KA_MASKED_ROW_ZERO). A thread's accumulators hold two columns of every 8; the quad's four
// lanes trade them (quad_transpose) so that each stores whole 16-byte chunks: a warp's store covers
// 64 contiguous bytes of each of its 8 rows (4-byte stores covered 16, and took 4 times the
// instructions and line accesses).
__device__ __forceinline__ void write_o_rows(const Params& p, const float (&o)[(DC / 2) / 8][4], const float* inv_b,
                                           int64_t row0, int nq, int og, int r0, int r1, int cq) {
  const uint32_t empty = KA_MASKED_ROW_ZERO ? 0u : 0x7fc07fc0u;
  const int j = cq >> 1;
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int r = h ? r1 : r0;
    if (r / H >= nq) continue;  // warp-uniform: a warp's 16 rows are one token's heads
    const float inv = inv_b[r];
    uint4* dst = reinterpret_cast<uint4*>(p.out + (row0 + r) * DC + og * (DC / 2));
#pragma unroll
    for (int m = 0; m < (DC / 2) / 32; ++m) {
      uint32_t v[4];
#pragma unroll
      for (int i = 0; i < 4; ++i)
        v[i] = inv < 0.f ? empty : pack_bf16(o[4 * m + i][2 * h] * inv, o[4 * m + i][2 * h + 1] * inv);
      quad_transpose(v, j);
      dst[4 * m + j] = make_uint4(v[0], v[1], v[2], v[3]);
    }
  }
}
#endif

#include "work_items.cuh"

__device__ __forceinline__ void do_tile(const Params& p, unsigned char* smem, const Item& it);
#if KA_MMA && KA_WARPS == 12 && KA_PERSIST == 1
__device__ __forceinline__ void stream_wgmma3(const Params& p, unsigned char* smem, const int* ord);
#endif

// Shared memory: STAGES x [T][ROWB] K/V stages | Q [M][ROWB] | S fp32 [M][SROW] | P bf16 [M][PROWB] |
// alpha [M] | 1/l [M] | (ORDER 2) sequence costs and order.
// KA_MMA 1: see WG_SMEM_BYTES.
#if KA_MMA
#define KA_MLAP_BOUNDS __launch_bounds__(NT, 1)  // WARPS 12: 168 registers per thread at launch
#else
#define KA_MLAP_BOUNDS __launch_bounds__(NT)
#endif
__global__ void KA_MLAP_BOUNDS mla_prefill_kernel(Params p) {
  trace_at(threadIdx.x == 0, 0, true);
#if KA_MMA
  KA_DYN_SMEM(smem_raw);
  unsigned char* const smem = smem_raw + ((1024 - (smem_u32(smem_raw) & 1023)) & 1023);  // the swizzled tiles
  float* const inv_smem = reinterpret_cast<float*>(smem + WG_ALPHA_OFF + WG_ROWSTAT_BYTES) - M;
  constexpr int MAXB = MAXB_SORT_W;
#else
  KA_DYN_SMEM(smem);
  float* const inv_smem = reinterpret_cast<float*>(smem + STAGES * STAGE_BYTES + Q_BYTES + S_BYTES + P_BYTES) + M;
  constexpr int MAXB = MAXB_SORT;
#endif
  const int tid = threadIdx.x, lane = tid & 31;

  // ── which tile ──
  const int* ord = nullptr;
  if constexpr (KA_ORDER == 2 && !WG3P) {  // (the item stream orders its items by their own counts)
    if (p.B > 1 && p.B <= MAXB) {  // (one sequence: the order is ORDER 1's, no index reads)
#if KA_MMA
      float* cost = reinterpret_cast<float*>(smem);  // stage 0, before any load
      int* order = reinterpret_cast<int*>(inv_smem + M);
#else
      float* cost = reinterpret_cast<float*>(inv_smem + M);
      int* order = reinterpret_cast<int*>(cost + MAXB_SORT);
#endif
      order_by_causal_cost(p.qo_indptr, p.kv_indptr, p.B, cost, order, tid, NT);
      ord = order;
    }
  }
  if constexpr (KA_PERSIST == 0) {
    Item it;
    if (!map_item(p, ord, static_cast<int>(blockIdx.x), lane, it)) return;  // CTA-uniform
    do_tile(p, smem, it);
  } else if constexpr (WG3P) {
#if KA_MMA && KA_WARPS == 12 && KA_PERSIST == 1
    stream_wgmma3(p, smem, ord);
#endif
  } else {
    TileCursor<QT> cur;
    for (int w = blockIdx.x; w < p.tiles; w += gridDim.x) {
      int b, tile;
      if (!cur.advance(p.qo_indptr, p.B, ord, w, b, tile)) break;  // CTA-uniform
      __syncthreads();  // the previous item's readers of shared memory are done
      do_tile(p, smem, item_of(p, b, tile));
    }
  }
}

#include "wgmma8_tile.cuh"

#include "wgmma3_tile.cuh"

#include "wgmma3_stream.cuh"

#include "do_tile.cuh"

// ── host ───────────────────────────────────────────────────────────────────────────────────────
FitOnce g_fit;
bool g_regs_ok = true;  // WARPS 12: the kernel has REGS_LAUNCH registers per thread

}  // namespace
}  // namespace ka_mlap

void run(const ka::TensorArg& q_nope, const ka::TensorArg& q_pe, const ka::TensorArg& ckv_cache,
         const ka::TensorArg& kpe_cache, const ka::TensorArg& qo_indptr, const ka::TensorArg& kv_indptr,
         const ka::TensorArg& kv_indices, double sm_scale, const ka::TensorArg& output, const ka::TensorArg& lse) {
  using namespace ka_mlap;
  const int64_t total_q = q_nope.size(0);
  const int64_t B = qo_indptr.size(0) - 1;
  if (total_q <= 0 || B < 0) return;
  if (ckv_cache.ndim == 3 && ckv_cache.size(1) != 1) return;  // page size 1 only
  if (MMA && !(sm_scale > 0.0)) {  // the wgmma paths take the row maxima over unscaled scores
    fill_attention_nan(output, lse, total_q * H, DC);
    return;
  }
#ifndef KA_EMULATE
  if constexpr (WG3) {
    cudaFuncAttributes fa{};
    if (!g_fit.done) g_regs_ok = cudaFuncGetAttributes(&fa, mla_prefill_kernel) == cudaSuccess && fa.numRegs == REGS_LAUNCH;
  }
#endif
  const KernelFit& fit = g_fit(mla_prefill_kernel, NT, KERNEL_SMEM);
  Params p{};
  p.q_nope = static_cast<const uint16_t*>(q_nope.data);
  p.q_pe = static_cast<const uint16_t*>(q_pe.data);
  p.ckv = static_cast<const uint16_t*>(ckv_cache.data);
  p.kpe = static_cast<const uint16_t*>(kpe_cache.data);
  p.qo_indptr = static_cast<const int*>(qo_indptr.data);
  p.kv_indptr = static_cast<const int*>(kv_indptr.data);
  p.indices = static_cast<const int*>(kv_indices.data);
  bind_attention_outputs(p, output, lse, B, sm_scale);
  p.total_q = static_cast<int>(total_q);
  p.num_rows = static_cast<int>(ckv_cache.size(0));
  const int64_t tiles = prefill_tile_bound(total_q, B, QT);
  p.tiles = static_cast<int>(tiles);
  int64_t ctas = tiles;
  if (KA_PERSIST != 0 && ctas > static_cast<int64_t>(fit.sms) * fit.occ) ctas = static_cast<int64_t>(fit.sms) * fit.occ;
  if (WG3P && ctas * MAXI < tiles) ctas = (tiles + MAXI - 1) / MAXI;  // a CTA's item list holds MAXI
  if (!g_regs_ok) return;  // a build whose setmaxnreg split cannot hold: outputs left unwritten, not a hang
#ifdef KA_TRACE
  ka_trace::set_grid(ctas);
#endif
  KA_LAUNCH(mla_prefill_kernel, dim3(static_cast<unsigned>(ctas)), dim3(NT), KERNEL_SMEM, p);
}
