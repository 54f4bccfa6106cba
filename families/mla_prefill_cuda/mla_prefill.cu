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

#if !defined(KA_NUM_QO_HEADS) || !defined(KA_HEAD_DIM_CKV) || !defined(KA_HEAD_DIM_KPE) || !defined(KA_MASKED_ROW_ZERO) || \
    !defined(KA_QTOK) || !defined(KA_WARPS) || !defined(KA_KV_TILE) || !defined(KA_STAGES) || !defined(KA_ORDER) || \
    !defined(KA_PERSIST) || !defined(KA_MMA) || !defined(KA_SAHEAD)
#error "mla_prefill_cuda: the problem defines and knobs must be defined (KernelArc does this)"
#endif

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
template <int N>
inline void wgmma_ss(float (&d)[N / 8][4], uint64_t da, uint64_t db) {
  ka_emu_ops::wgmma_issue({N, &d[0][0], false, {0, 0, 0, 0}, da, db, 0, 0, 1});
}
template <int N>
inline void wgmma_ss_tb(float (&d)[N / 8][4], uint64_t da, uint64_t db) {
  ka_emu_ops::wgmma_issue({N, &d[0][0], false, {0, 0, 0, 0}, da, db, 0, 1, 1});
}
template <int N>
inline void wgmma_rs_tb(float (&d)[N / 8][4], const uint32_t (&a)[4], uint64_t db) {
  ka_emu_ops::wgmma_issue({N, &d[0][0], true, {a[0], a[1], a[2], a[3]}, 0, db, 0, 1, 1});
}
template <int N>
inline void wgmma_rs(float (&d)[N / 8][4], const uint32_t (&a)[4], uint64_t db) {
  ka_emu_ops::wgmma_issue({N, &d[0][0], true, {a[0], a[1], a[2], a[3]}, 0, db, 0, 0, 1});
}
template <int N>
inline void setmaxnreg_inc() {}
template <int N>
inline void setmaxnreg_dec() {}
inline void cta_bar() { __syncthreads(); }
[[maybe_unused]] inline void wg0_bar() { emu::named_sync(2, 128); }
template <int N>
inline void wgmma_wait_n() { wgmma_wait(N); }
template <typename X, int R, int C>
inline void fence_operands(X (&)[R][C]) {}
#else
#define KA_DYN_SMEM(name) extern __shared__ __align__(16) unsigned char name[]
#define KA_LAUNCH(kernel, grid, block, smem, ...) kernel<<<grid, block, smem>>>(__VA_ARGS__)
__device__ __forceinline__ uint32_t smem_u32(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}
__device__ __forceinline__ void cp_async_16(uint32_t dst, const void* src, int src_bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(src_bytes) : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void cp_async_wait_n() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}
// (Only where used: no unused-function warnings.)
#if !KA_MMA || KA_WARPS == 12
__device__ __forceinline__ void ldsm_x4(uint32_t a, uint32_t& r0, uint32_t& r1, uint32_t& r2, uint32_t& r3) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
               : "r"(a));
}
#endif
#if !KA_MMA
__device__ __forceinline__ void ldsm_x4_t(uint32_t a, uint32_t& r0, uint32_t& r1, uint32_t& r2, uint32_t& r3) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
               : "r"(a));
}
__device__ __forceinline__ void mma_bf16(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
#endif
__device__ __forceinline__ uint32_t pack_bf16(float lo, float hi) {
  __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<uint32_t*>(&v);
}
#if KA_MMA
// Hopper warpgroup MMA (KA_MMA 1). Device code for an arch without wgmma (not sm_90a) gets bodies
// that trap, so that the mma.sync points of the same source still build there.
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
// Per-warpgroup register budget (the 3-warpgroup schedule).
template <int N>
__device__ __forceinline__ void setmaxnreg_inc() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(N));
}
template <int N>
__device__ __forceinline__ void setmaxnreg_dec() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(N));
}
// The accumulator operands of a wgmma m64nN (N/8 rows of 4 fp32 registers per thread) as inline-asm
// outputs, 8 rows (N = 64) per macro.
#define KA_WGMMA_D4(i) "+f"(d[i][0]), "+f"(d[i][1]), "+f"(d[i][2]), "+f"(d[i][3])
#define KA_WGMMA_D_0_7 KA_WGMMA_D4(0), KA_WGMMA_D4(1), KA_WGMMA_D4(2), KA_WGMMA_D4(3), KA_WGMMA_D4(4), KA_WGMMA_D4(5), KA_WGMMA_D4(6), KA_WGMMA_D4(7)
#define KA_WGMMA_D_8_15 KA_WGMMA_D4(8), KA_WGMMA_D4(9), KA_WGMMA_D4(10), KA_WGMMA_D4(11), KA_WGMMA_D4(12), KA_WGMMA_D4(13), KA_WGMMA_D4(14), KA_WGMMA_D4(15)
#define KA_WGMMA_D_16_23 KA_WGMMA_D4(16), KA_WGMMA_D4(17), KA_WGMMA_D4(18), KA_WGMMA_D4(19), KA_WGMMA_D4(20), KA_WGMMA_D4(21), KA_WGMMA_D4(22), KA_WGMMA_D4(23)
#define KA_WGMMA_D_24_31 KA_WGMMA_D4(24), KA_WGMMA_D4(25), KA_WGMMA_D4(26), KA_WGMMA_D4(27), KA_WGMMA_D4(28), KA_WGMMA_D4(29), KA_WGMMA_D4(30), KA_WGMMA_D4(31)
// The raw wrappers, one per shape (a build uses some of them).
[[maybe_unused]] __device__ __forceinline__ void wgmma_ss_n32(float (&d)[4][4], uint64_t da, uint64_t db, int scale_d) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %18, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n32k16.f32.bf16.bf16 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15}, "
      "%16, %17, p, 1, 1, 0, 0;\n}\n"
      : KA_WGMMA_D4(0), KA_WGMMA_D4(1), KA_WGMMA_D4(2), KA_WGMMA_D4(3)
      : "l"(da), "l"(db), "r"(scale_d));
}
[[maybe_unused]] __device__ __forceinline__ void wgmma_rs_n32(float (&d)[4][4], const uint32_t (&a)[4], uint64_t db, int scale_d) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %21, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n32k16.f32.bf16.bf16 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15}, "
      "{%16, %17, %18, %19}, %20, p, 1, 1, 0;\n}\n"
      : KA_WGMMA_D4(0), KA_WGMMA_D4(1), KA_WGMMA_D4(2), KA_WGMMA_D4(3)
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(scale_d));
}
[[maybe_unused]] __device__ __forceinline__ void wgmma_ss_n64(float (&d)[8][4], uint64_t da, uint64_t db, int scale_d) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, "
      "%32, %33, p, 1, 1, 0, 0;\n}\n"
      : KA_WGMMA_D_0_7
      : "l"(da), "l"(db), "r"(scale_d));
}
[[maybe_unused]] __device__ __forceinline__ void wgmma_rs_n64(float (&d)[8][4], const uint32_t (&a)[4], uint64_t db, int scale_d) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, "
      "{%32, %33, %34, %35}, %36, p, 1, 1, 0;\n}\n"
      : KA_WGMMA_D_0_7
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(scale_d));
}
[[maybe_unused]] __device__ __forceinline__ void wgmma_rs_tb_n256(float (&d)[32][4], const uint32_t (&a)[4], uint64_t db, int scale_d) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %133, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, %96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, %112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}, "
      "{%128, %129, %130, %131}, %132, p, 1, 1, 1;\n}\n"
      : KA_WGMMA_D_0_7, KA_WGMMA_D_8_15, KA_WGMMA_D_16_23, KA_WGMMA_D_24_31
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(scale_d));
}
[[maybe_unused]] __device__ __forceinline__ void wgmma_ss_tb_n256(float (&d)[32][4], uint64_t da, uint64_t db, int scale_d) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %130, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, %96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, %112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}, "
      "%128, %129, p, 1, 1, 0, 1;\n}\n"
      : KA_WGMMA_D_0_7, KA_WGMMA_D_8_15, KA_WGMMA_D_16_23, KA_WGMMA_D_24_31
      : "l"(da), "l"(db), "r"(scale_d));
}

#else
__device__ __forceinline__ void wgmma_fence() { __trap(); }
__device__ __forceinline__ void wgmma_commit() { __trap(); }
template <int N>
__device__ __forceinline__ void wgmma_wait_n() { __trap(); }
__device__ __forceinline__ void fence_proxy_async() { __trap(); }
template <int N>
__device__ __forceinline__ void setmaxnreg_inc() {}
template <int N>
__device__ __forceinline__ void setmaxnreg_dec() {}
[[maybe_unused]] __device__ __forceinline__ void wgmma_rs_n64(float (&)[8][4], const uint32_t (&)[4], uint64_t, int) { __trap(); }
[[maybe_unused]] __device__ __forceinline__ void wgmma_ss_n32(float (&)[4][4], uint64_t, uint64_t, int) { __trap(); }
[[maybe_unused]] __device__ __forceinline__ void wgmma_rs_n32(float (&)[4][4], const uint32_t (&)[4], uint64_t, int) { __trap(); }
[[maybe_unused]] __device__ __forceinline__ void wgmma_ss_n64(float (&)[8][4], uint64_t, uint64_t, int) { __trap(); }
[[maybe_unused]] __device__ __forceinline__ void wgmma_rs_tb_n256(float (&)[32][4], const uint32_t (&)[4], uint64_t, int) { __trap(); }
[[maybe_unused]] __device__ __forceinline__ void wgmma_ss_tb_n256(float (&)[32][4], uint64_t, uint64_t, int) { __trap(); }
#endif
// S (+)= A B with A and B from descriptors, both K-major.
template <int N>
__device__ __forceinline__ void wgmma_ss(float (&d)[N / 8][4], uint64_t da, uint64_t db) {
  static_assert(N == 32 || N == 64, "wgmma N");
  if constexpr (N == 32) wgmma_ss_n32(d, da, db, 1);
  else wgmma_ss_n64(d, da, db, 1);
}
// O += A B with A from a descriptor (K-major) and B from a descriptor, MN-major (transpose bit set).
template <int N>
__device__ __forceinline__ void wgmma_ss_tb(float (&d)[N / 8][4], uint64_t da, uint64_t db) {
  static_assert(N == 256, "wgmma N");
  wgmma_ss_tb_n256(d, da, db, 1);
}
// S (+)= A B with A from registers and B from a descriptor, K-major.
template <int N>
__device__ __forceinline__ void wgmma_rs(float (&d)[N / 8][4], const uint32_t (&a)[4], uint64_t db) {
  static_assert(N == 32 || N == 64, "wgmma N");
  if constexpr (N == 32) wgmma_rs_n32(d, a, db, 1);
  else wgmma_rs_n64(d, a, db, 1);
}
// A CTA barrier for code where the warpgroups run different branches (barrier.sync without
// .aligned: the warps need not reach the same instruction); barrier 1, every thread.
[[maybe_unused]] __device__ __forceinline__ void cta_bar() { asm volatile("barrier.sync 1, %0;\n" ::"n"(NT) : "memory"); }
// Warpgroup 0 alone (the item stream's Q loads).
[[maybe_unused]] __device__ __forceinline__ void wg0_bar() { asm volatile("barrier.sync 2, 128;\n" ::: "memory"); }
// O += A B with A from registers and B from a descriptor, MN-major (transpose bit set).
template <int N>
__device__ __forceinline__ void wgmma_rs_tb(float (&d)[N / 8][4], const uint32_t (&a)[4], uint64_t db) {
  static_assert(N == 256, "wgmma N");
  wgmma_rs_tb_n256(d, a, db, 1);
}
// Keeps the compiler from moving accesses of wgmma operands (accumulators, A fragments) across a
// wgmma wait: the asm "redefines" them after the wait.
template <int R, int C>
__device__ __forceinline__ void fence_operands(float (&d)[R][C]) {
#pragma unroll
  for (int i = 0; i < R; ++i)
#pragma unroll
    for (int j = 0; j < C; ++j) asm volatile("" : "+f"(d[i][j])::"memory");
}
template <int R, int C>
__device__ __forceinline__ void fence_operands(uint32_t (&d)[R][C]) {
#pragma unroll
  for (int i = 0; i < R; ++i)
#pragma unroll
    for (int j = 0; j < C; ++j) asm volatile("" : "+r"(d[i][j])::"memory");
}
#endif  // KA_MMA
#endif

#if KA_MMA
// Shared-memory matrix descriptor for a 128-byte-swizzled operand (PTX ISA "Matrix Descriptor"):
// start address, leading byte offset lbo (K-major: unused, 16; MN-major: between 64-element column
// blocks), stride byte offset 1024 (between groups of 8 rows), swizzle mode 1 (128 B).
__device__ __forceinline__ uint64_t sw128_desc(uint32_t addr, uint32_t lbo) {
  return static_cast<uint64_t>((addr & 0x3ffffu) >> 4) | (static_cast<uint64_t>((lbo >> 4) & 0x3fffu) << 16) |
         (static_cast<uint64_t>(1024 >> 4) << 32) | (1ull << 62);
}
// The same for a 64-byte-swizzled K-major operand whose rows are 64 bytes (P of a 32-key tile):
// stride byte offset 512 (8 rows), swizzle mode 2 (64 B).
[[maybe_unused]] __device__ __forceinline__ uint64_t sw64_desc(uint32_t addr) {
  return static_cast<uint64_t>((addr & 0x3ffffu) >> 4) | (static_cast<uint64_t>(1) << 16) |
         (static_cast<uint64_t>(512 >> 4) << 32) | (2ull << 62);
}
// Byte offset of 16-byte chunk c of row r in a swizzled tile of `rows` rows: column block c/8 (64
// bf16 columns, rows x 128 bytes), row r at r*128, chunk (c%8) ^ (r%8) within the row.
__host__ __device__ constexpr int sw_off(int r, int c, int rows) {
  return (c >> 3) * rows * 128 + r * 128 + (((c & 7) ^ (r & 7)) << 4);
}

// 2^x by the SFU (ex2.approx.ftz: ~2 ulp, subnormal results flushed to 0, 2^-inf = 0).
#ifdef KA_EMULATE
inline float ex2(float x) { return exp2f(x); }
#else
__device__ __forceinline__ float ex2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}
#endif

// ── online softmax of one S tile (the wgmma paths) ──────────────────────────────────────────────
// As gqa_prefill_cuda's: a thread holds rows r0 (s[j][0..1]) and r0 + 8 (s[j][2..3]), keys 8j + cq +
// {0, 1}; raw scores go through one FFMA into ex2, the row maxima are taken over raw s (the scale is
// positive), and a row's running maximum m moves only when a tile's maximum exceeds it by more than
// kSlack (P stays below 2^kSlack), so most tiles leave the rescale factors at 1 and the warps that
// hold O skip its rescale (warp vote on the factors). l sums the unrounded P.
constexpr float kSlack = 8.f;
struct Rows {
  float m0, m1, l0, l1;
};
// MASK (diagonal tiles): keys past lim0 / lim1 (capped at kv_len - 1) are -inf. store(j, w0, w1)
// takes P of n8 block j (bf16 pairs of rows r0 and r0 + 8); a0 / a1 get the rows' rescale factors.
template <bool MASK, int NTT, typename Store>
__device__ __forceinline__ void softmax_tile(float (&s)[NTT][4], Rows& st, float scale, int kbase, int lim0, int lim1,
                                             int cq, float& a0, float& a1, Store&& store) {
  float mx0 = kNegInf, mx1 = kNegInf;
#pragma unroll
  for (int j = 0; j < NTT; ++j) {
    if (MASK) {
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const int key = kbase + 8 * j + cq + e;
        if (key > lim0) s[j][e] = kNegInf;
        if (key > lim1) s[j][2 + e] = kNegInf;
      }
    }
    mx0 = fmaxf(mx0, fmaxf(s[j][0], s[j][1]));
    mx1 = fmaxf(mx1, fmaxf(s[j][2], s[j][3]));
  }
  mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffffu, mx0, 1));
  mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffffu, mx0, 2));
  mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffffu, mx1, 1));
  mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffffu, mx1, 2));
  mx0 *= scale;
  mx1 *= scale;
  a0 = 1.f;
  a1 = 1.f;
  if (mx0 > st.m0 + kSlack) {  // (a row's first key: m = -inf, factor 0)
    a0 = ex2(st.m0 - mx0);
    st.m0 = mx0;
  }
  if (mx1 > st.m1 + kSlack) {
    a1 = ex2(st.m1 - mx1);
    st.m1 = mx1;
  }
  const float mu0 = st.m0 == kNegInf ? 0.f : st.m0, mu1 = st.m1 == kNegInf ? 0.f : st.m1;  // no key yet: P = 0
  float e0 = 0.f, e1 = 0.f;
#pragma unroll
  for (int j = 0; j < NTT; ++j) {
    const float p00 = ex2(fmaf(s[j][0], scale, -mu0)), p01 = ex2(fmaf(s[j][1], scale, -mu0));
    const float p10 = ex2(fmaf(s[j][2], scale, -mu1)), p11 = ex2(fmaf(s[j][3], scale, -mu1));
    store(j, pack_bf16(p00, p01), pack_bf16(p10, p11));
    e0 += p00 + p01;
    e1 += p10 + p11;
  }
  st.l0 = st.l0 * a0 + e0;
  st.l1 = st.l1 * a1 + e1;
}
// O *= the rows' factors, skipped when every row of the warp keeps its scale.
template <int N>
__device__ __forceinline__ void rescale_o(float (&o)[N][4], float a0, float a1) {
  if (!__any_sync(0xffffffffu, a0 != 1.f || a1 != 1.f)) return;
#pragma unroll
  for (int n = 0; n < N; ++n) {
    o[n][0] *= a0;
    o[n][1] *= a0;
    o[n][2] *= a1;
    o[n][3] *= a1;
  }
}
#endif

__device__ __forceinline__ float bf_lo(uint32_t w) { return __uint_as_float(w << 16); }
__device__ __forceinline__ float bf_hi(uint32_t w) { return __uint_as_float(w & 0xffff0000u); }
__device__ __forceinline__ int imin(int a, int b) { return a < b ? a : b; }
__device__ __forceinline__ int imax(int a, int b) { return a > b ? a : b; }
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
// Quad transpose: lanes 4q .. 4q+3 hold v[0..3] (word i of lane j = v_j[i]); after it lane j holds
// word i = v_i[j] (two xor exchanges of half the words each, as a 2 x 2 block transpose then a
// transpose within the blocks). j = lane & 3. Every lane of the warp takes part.
__device__ __forceinline__ void quad_transpose(uint32_t (&v)[4], int j) {
  const bool b1 = j & 2, b0 = j & 1;
  {
    const uint32_t x0 = static_cast<uint32_t>(__shfl_xor_sync(0xffffffffu, static_cast<int>(b1 ? v[0] : v[2]), 2));
    const uint32_t x1 = static_cast<uint32_t>(__shfl_xor_sync(0xffffffffu, static_cast<int>(b1 ? v[1] : v[3]), 2));
    if (b1) v[0] = x0, v[1] = x1;
    else v[2] = x0, v[3] = x1;
  }
  {
    const uint32_t x0 = static_cast<uint32_t>(__shfl_xor_sync(0xffffffffu, static_cast<int>(b0 ? v[0] : v[1]), 1));
    const uint32_t x1 = static_cast<uint32_t>(__shfl_xor_sync(0xffffffffu, static_cast<int>(b0 ? v[2] : v[3]), 1));
    if (b0) v[0] = x0, v[2] = x1;
    else v[1] = x0, v[3] = x1;
  }
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

// Unmasked score count of a sequence (its share of the work), plus its rows (for the writes).
__device__ __forceinline__ float seq_cost(int ql, int kl) {
  if (ql <= 0) return 0.f;
  if (kl <= 0) return static_cast<float>(ql);
  const int vlo = imax(1, kl - ql + 1);
  return 0.5f * static_cast<float>(kl + vlo) * static_cast<float>(kl - vlo + 1) + static_cast<float>(ql);
}

// One step of a warp's search for rank rem: lane i holds a count n; finds the first lane src whose
// running total passes rem and the rank within it (true), or takes the 32 counts off rem (false).
// Warp-uniform; every lane gets the result.
__device__ __forceinline__ bool warp_find(int n, int lane, int& rem, int& src, int& within) {
  int incl = n;
#pragma unroll
  for (int d = 1; d < 32; d <<= 1) {
    const int o = __shfl_sync(0xffffffffu, incl, (lane - d) & 31);
    if (lane >= d) incl += o;
  }
  const unsigned bal = __ballot_sync(0xffffffffu, incl > rem);
  if (bal) {
    src = __popc((bal & (~bal + 1u)) - 1u);
    within = rem - __shfl_sync(0xffffffffu, incl - n, src);
    return true;
  }
  rem -= __shfl_sync(0xffffffffu, incl, 31);
  return false;
}
// The warp's search for rank rem among positions i = 0 .. B-1 holding cnt(i) each: i and the rank
// within it (false when rem is past them all). Warp-uniform; every lane gets the result.
template <typename Cnt>
__device__ __forceinline__ bool warp_rank(int B, int lane, int rem, Cnt&& cnt, int& b_out, int& r_out) {
  for (int base = 0; base < B; base += 32) {
    const int b = base + lane;
    int src;
    if (warp_find(b < B ? cnt(b) : 0, lane, rem, src, r_out)) {
      b_out = base + src;
      return true;
    }
  }
  return false;
}
// A query tile (an item: up to QT tokens of one sequence, or of the leading rows when b < 0) and what
// its computation needs: keys k0 .. k0+kl-1 of the page table, query i sees keys j <= i + delta, the
// tile's tokens i0 .. i0+nq-1 (output rows from token rowtok on), keys below kv_hi seen by any of them
// (<= 0: none, the rows are filled instead), key tiles below nomask seen whole by every token.
struct Item {
  int k0, kl, delta, i0, nq, rowtok, kv_hi, nomask;
};
// Tile `tile` (tokens QT * tile on, natural order) of a sequence whose query start q0 and length ql
// and key start k0 and length kl are already read.
__device__ __forceinline__ Item item_geometry(int q0, int ql, int k0, int kl, int tile) {
  Item it;
  it.k0 = k0;
  it.kl = kl;
  it.delta = kl - ql;
  it.i0 = tile * QT;
  it.nq = imin(QT, ql - it.i0);
  it.rowtok = q0 + it.i0;
  it.kv_hi = imin(kl, imax(it.i0 + it.nq - 1 + it.delta + 1, 0));
  it.nomask = imin(kl, imax(it.i0 + it.delta + 1, 0)) / T;
  return it;
}
// Tile `tile` of sequence b (-1: the leading rows) in natural order; item_of takes the tile number
// in work order (ORDER >= 1: the sequence's last, heaviest, tile first).
__device__ __forceinline__ Item item_natural(const Params& p, int b, int tile) {
  if (b < 0) return item_geometry(0, __ldg(p.qo_indptr), 0, 0, tile);
  const int q0 = __ldg(p.qo_indptr + b), k0 = __ldg(p.kv_indptr + b);
  return item_geometry(q0, __ldg(p.qo_indptr + b + 1) - q0, k0, imax(__ldg(p.kv_indptr + b + 1) - k0, 0), tile);
}
// A sequence's tile number in work order (of its ql query tokens) as a tile in natural order.
__device__ __forceinline__ int natural_tile(int ql, int tile) {
  return KA_ORDER >= 1 ? ceil_div_i(ql, QT) - 1 - tile : tile;
}
__device__ __forceinline__ Item item_of(const Params& p, int b, int tile) {
  if (b < 0) return item_natural(p, b, tile);
  const int q0 = __ldg(p.qo_indptr + b), ql = __ldg(p.qo_indptr + b + 1) - q0, k0 = __ldg(p.kv_indptr + b);
  return item_geometry(q0, ql, k0, imax(__ldg(p.kv_indptr + b + 1) - k0, 0), natural_tile(ql, tile));
}
// Query tile t in work order (the leading rows before qo_indptr[0] first, then the sequences in the
// order ord, identity when null; within a sequence as item_of) and its Item, in one round trip of
// index reads (what a CTA of PERSIST 0 waits for before its first loads): each lane reads its
// sequence's query and key bounds together (and qo_indptr[0] beside them, not before), the warp
// scans the tile counts, and the lane that holds tile t's sequence hands its bounds over by
// shuffles. Warp-uniform; false when t is past the last tile.
__device__ __forceinline__ bool map_item(const Params& p, const int* ord, int t, int lane, Item& it) {
  const int lead = __ldg(p.qo_indptr);
  int rem = t;
  for (int base = 0; base < imax(p.B, 1); base += 32) {
    const int j = base + lane;
    const bool in = j < p.B;
    const int b = in ? (ord ? ord[j] : j) : 0;
    int q0 = 0, q1 = 0, k0 = 0, k1 = 0;
    if (in) {
      q0 = __ldg(p.qo_indptr + b);
      q1 = __ldg(p.qo_indptr + b + 1);
      k0 = __ldg(p.kv_indptr + b);
      k1 = __ldg(p.kv_indptr + b + 1);
    }
    if (base == 0) {  // the leading rows before qo_indptr[0] come first
      const int lead_tiles = lead > 0 ? ceil_div_i(lead, QT) : 0;
      if (t < lead_tiles) {
        it = item_geometry(0, lead, 0, 0, t);
        return true;
      }
      rem = t - lead_tiles;
      if (p.B <= 0) return false;
    }
    const int ql = q1 - q0;
    int src, tile;
    if (warp_find(ql > 0 ? ceil_div_i(ql, QT) : 0, lane, rem, src, tile)) {
      const int sq0 = __shfl_sync(0xffffffffu, q0, src), sql = __shfl_sync(0xffffffffu, ql, src);
      const int sk0 = __shfl_sync(0xffffffffu, k0, src), sk1 = __shfl_sync(0xffffffffu, k1, src);
      it = item_geometry(sq0, sql, sk0, imax(sk1 - sk0, 0), natural_tile(sql, tile));
      return true;
    }
  }
  return false;
}
// The rows of an item that sees no key (threads first, first + stride, ...): out 0 where the reference
// skips them (no key in the sequence, or KA_MASKED_ROW_ZERO), NaN where its softmax of an all -inf
// row makes them NaN; lse -inf.
__device__ __forceinline__ void fill_empty(const Params& p, const Item& it, int first, int stride) {
  const bool nan_rows = !KA_MASKED_ROW_ZERO && it.kl > 0;
  const uint32_t fill = nan_rows ? 0x7fc07fc0u : 0u;
  const int64_t row0 = static_cast<int64_t>(it.rowtok) * H;
  constexpr int C16 = DC / 8;
  for (int i = first; i < it.nq * H * C16; i += stride) {
    uint4* dst = reinterpret_cast<uint4*>(p.out + (row0 + i / C16) * DC) + i % C16;
    *dst = make_uint4(fill, fill, fill, fill);
  }
  for (int r = first; r < it.nq * H; r += stride) p.lse[row0 + r] = kNegInf;
}

// A forward-only walk over the tiles in work order for a persistent CTA, whose tile numbers only
// grow: pos is a position in the order (-1: the leading rows), before the first tile number of pos.
struct Cursor {
  int pos = -1, before = 0;
};
__device__ __forceinline__ int tiles_at(const Params& p, const int* ord, int pos) {
  if (pos < 0) {
    const int lead = __ldg(p.qo_indptr);
    return lead > 0 ? ceil_div_i(lead, QT) : 0;
  }
  const int b = ord ? ord[pos] : pos;
  const int ql = __ldg(p.qo_indptr + b + 1) - __ldg(p.qo_indptr + b);
  return ql > 0 ? ceil_div_i(ql, QT) : 0;
}
__device__ __forceinline__ bool advance(const Params& p, const int* ord, Cursor& c, int t, int& b_out, int& tile_out) {
  while (c.pos < p.B) {
    const int n = tiles_at(p, ord, c.pos);
    if (t < c.before + n) {
      b_out = c.pos < 0 ? -1 : (ord ? ord[c.pos] : c.pos);
      tile_out = t - c.before;
      return true;
    }
    c.before += n;
    ++c.pos;
  }
  return false;
}

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
      for (int b = tid; b < p.B; b += NT) {
        const int ql = __ldg(p.qo_indptr + b + 1) - __ldg(p.qo_indptr + b);
        const int kl = __ldg(p.kv_indptr + b + 1) - __ldg(p.kv_indptr + b);
        cost[b] = seq_cost(ql, kl);
      }
      __syncthreads();
      for (int b = tid; b < p.B; b += NT) {
        const float c = cost[b];
        int rank = 0;
        for (int o = 0; o < p.B; ++o) {
          const float co = cost[o];
          rank += (co > c || (co == c && o < b)) ? 1 : 0;
        }
        order[rank] = b;
      }
      __syncthreads();
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
    Cursor cur;
    for (int w = blockIdx.x; w < p.tiles; w += gridDim.x) {
      int b, tile;
      if (!advance(p, ord, cur, w, b, tile)) break;  // CTA-uniform
      __syncthreads();  // the previous item's readers of shared memory are done
      do_tile(p, smem, item_of(p, b, tile));
    }
  }
}

// One K/V tile (keys j0 .. j0+T-1 of the sequence, zero-filled from kv_hi on) gathered into a stage
// in the 128-byte swizzle layout by LT loader threads: eight threads per 128-byte line (thread lt
// copies 16-byte chunk lt % 8 of every 128-byte block of rows lt / 8 + (LT / 8) i), so a warp's copy
// covers four whole lines, a thread reads each of its rows' page index once, and its copies differ
// by constant offsets (a chunk-per-iteration loop paid an index load, a division and the address
// arithmetic per 16 bytes, and ncu found the ALU the busiest pipe). tile_pages reads the pages of
// the thread's rows (-1 past kv_hi), so that a loop can read the next tile's pages a tile ahead and
// gather_tile issue the copies without waiting for those loads.
template <int LT>
struct TilePages {
  static constexpr int R = T * 8 / LT;  // rows per thread
  int v[R];
};
template <int LT>
__device__ __forceinline__ TilePages<LT> tile_pages(const Params& p, int j0, int kv_hi, int k0, int lt) {
  static_assert(LT % 8 == 0 && (T * 8) % LT == 0 && (LT / 8) % 8 == 0, "gather mapping");
  TilePages<LT> pg;
#pragma unroll
  for (int i = 0; i < TilePages<LT>::R; ++i) {
    const int j = j0 + lt / 8 + (LT / 8) * i;
    pg.v[i] = j < kv_hi ? imin(imax(__ldg(p.indices + k0 + j), 0), p.num_rows - 1) : -1;
  }
  return pg;
}
template <int LT>
__device__ __forceinline__ void gather_tile(const Params& p, unsigned char* ks, const TilePages<LT>& pg, int lt) {
  static_assert(CPC % 8 == 0 && (CPR - CPC) % 8 == 0, "whole 128-byte blocks of ckv and kpe");
  const int sub = lt % 8, row0 = lt / 8;
  const uint32_t base = smem_u32(ks) + row0 * 128 + ((sub ^ (row0 & 7)) << 4);  // (LT / 8) % 8 == 0: same swizzle for every row
#pragma unroll
  for (int i = 0; i < TilePages<LT>::R; ++i) {
    const int page = pg.v[i];
    const bool ok = page >= 0;
    const uint16_t* const ckv = p.ckv + static_cast<int64_t>(ok ? page : 0) * DC + sub * 8;
    const uint16_t* const kpe = p.kpe + static_cast<int64_t>(ok ? page : 0) * DP + sub * 8;
    const uint32_t dst = base + (LT / 8) * i * 128;
    const int sz = ok ? 16 : 0;
#pragma unroll
    for (int b = 0; b < CPR / 8; ++b)
      cp_async_16(dst + b * T * 128, b < CPC / 8 ? ckv + b * 64 : kpe + (b - CPC / 8) * 64, sz);
  }
}

#if KA_MMA && KA_WARPS == 8
// One query tile on the wgmma path (KA_MMA 1; the header's "KA_MMA" describes the schedule).
// Warpgroup 0 (threads 0-127): S = Q K^T over all DQ dims, the softmax, P to shared memory and O
// dims [0, 256); warpgroup 1 (threads 128-255): the K/V loads and O dims [256, 512) with P from
// shared memory. Thread t of a warpgroup (warp w = t/32 of it, g = lane/4, q = lane%4) holds rows
// 16w+g and 16w+g+8 of the 64 (token row/16, head row%16), columns 8j+2q, 8j+2q+1 of each n8 block j.
__device__ __forceinline__ void tile_wgmma(const Params& p, unsigned char* smem, int k0, int kl, int delta, int i0,
                                           int nq, int kv_hi, int ntiles, int nomask, int64_t row0) {
  constexpr int NB = DC / 2;            // O dims per warpgroup (one wgmma N)
  constexpr int KSTEPS = DQ / 16;       // S k-steps
  constexpr int NTT = T / 8;            // S n8 blocks
  constexpr int KT = T / 16;            // P·V k-steps
  constexpr int KCH = CPR;              // 16-byte chunks per row
  constexpr int KCC = CPC;              // of which ckv
  unsigned char* const stages = smem;
  unsigned char* const q_smem = stages + STAGES * WG_STAGE_BYTES;
  unsigned char* const p_smem = q_smem + WG_Q_BYTES;
  float* const alpha_smem = reinterpret_cast<float*>(smem + WG_ALPHA_OFF);
  float* const inv_smem = alpha_smem + M;
  const int tid = threadIdx.x, lane = tid & 31;
  const int wg = tid >> 7, wt = tid & 127;
  const int r0 = ((tid >> 5) & 3) * 16 + (lane >> 2), r1 = r0 + 8;  // this thread's rows
  const int cq = 2 * (lane & 3);

  // ── loads (warpgroup 1) ──
  auto page_of = [&](int t) { return tile_pages<128>(p, t * T, kv_hi, k0, wt); };
  auto gather = [&](int stage, const TilePages<128>& pg) { gather_tile<128>(p, stages + stage * WG_STAGE_BYTES, pg, wt); };
  auto issue = [&](int stage, int t) { gather(stage, page_of(t)); };
  // Q (all threads; rows past the tile's tokens are zero-filled).
  for (int c = tid; c < M * KCH; c += NT) {
    const int r = c / KCH, col = c % KCH;
    const bool ok = r / H < nq;
    const int64_t qrow = ok ? row0 + r : 0;
    const uint16_t* src = col < KCC ? p.q_nope + qrow * DC + col * 8 : p.q_pe + qrow * DP + (col - KCC) * 8;
    cp_async_16(smem_u32(q_smem + sw_off(r, col, M)), src, ok ? 16 : 0);
  }
  cp_async_commit();
  if (wg == 1) {
#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
      if (s < ntiles) issue(s, s);
      cp_async_commit();
    }
  }

  float o[NB / 8][4];
#pragma unroll
  for (int n = 0; n < NB / 8; ++n) o[n][0] = o[n][1] = o[n][2] = o[n][3] = 0.f;
  // Softmax state (warpgroup 0): running max and sum per row, over this thread's columns (the
  // quad's four threads share m; the sums are reduced at the end).
  Rows st{kNegInf, kNegInf, 0.f, 0.f};
  const int lim0 = imin(i0 + r0 / H + delta, kl - 1), lim1 = imin(i0 + r1 / H + delta, kl - 1);  // last keys r0, r1 see
  const uint32_t q_base = smem_u32(q_smem), p_base = smem_u32(p_smem);
  TilePages<128> next_page = page_of(wg == 1 ? STAGES - 1 : ntiles);  // warpgroup 1: the pages it gathers next

  for (int t = 0; t < ntiles; ++t) {
    // Tile t (and Q) landed and visible to the async proxy; every warpgroup is done with tile t-1,
    // its stage and P.
    if (wg == 1) cp_async_wait_n<STAGES - 2>();
    else cp_async_wait_n<0>();
    fence_proxy_async();
    __syncthreads();
    const uint32_t ks = smem_u32(stages + (t % STAGES) * WG_STAGE_BYTES);
    uint32_t pa[KT][4];  // warpgroup 0: P as the A fragments of its P V
    float a0 = 1.f, a1 = 1.f;  // the rows' rescale factors
    if (wg == 1) {
      const int u = t + STAGES - 1;  // into the stage of tile t-1
      if (u < ntiles) gather(u % STAGES, next_page);
      cp_async_commit();
      next_page = page_of(u + 1);  // read a tile ahead
    } else {
      // ── S = Q K^T: k-step kk reads 16 columns, column block kk/4, 32 bytes kk%4 into its rows ──
      float s[NTT][4];
#pragma unroll
      for (int j = 0; j < NTT; ++j) s[j][0] = s[j][1] = s[j][2] = s[j][3] = 0.f;
      const uint64_t dq0 = sw128_desc(q_base, 16), dk0 = sw128_desc(ks, 16);
      wgmma_fence();
#pragma unroll
      for (int kk = 0; kk < KSTEPS; ++kk)
        wgmma_ss<T>(s, dq0 + static_cast<uint64_t>(((kk >> 2) * M * 128 + (kk & 3) * 32) >> 4),
                    dk0 + static_cast<uint64_t>(((kk >> 2) * T * 128 + (kk & 3) * 32) >> 4));
      wgmma_commit();
      wgmma_wait_n<0>();
      fence_operands(s);
      // ── softmax in base 2 (mask on diagonal tiles only); P (bf16) as A fragments for this
      // warpgroup's P V and, swizzled, into shared memory for the other's: row r at r*128, keys
      // 8j .. 8j+7 in chunk j ^ (r%8) ──
      auto store = [&](int j, uint32_t w0, uint32_t w1) {
        pa[j >> 1][(j & 1) * 2] = w0;  // the S layout of n8 blocks 2kt, 2kt+1 is the A layout of k-step kt
        pa[j >> 1][(j & 1) * 2 + 1] = w1;
        *reinterpret_cast<uint32_t*>(p_smem + r0 * 128 + ((j ^ (r0 & 7)) << 4) + cq * 2) = w0;
        *reinterpret_cast<uint32_t*>(p_smem + r1 * 128 + ((j ^ (r1 & 7)) << 4) + cq * 2) = w1;
      };
      if (t >= nomask) softmax_tile<true>(s, st, p.scale_log2, t * T, lim0, lim1, cq, a0, a1, store);
      else softmax_tile<false>(s, st, p.scale_log2, t * T, lim0, lim1, cq, a0, a1, store);
      if ((lane & 3) == 0) {
        alpha_smem[r0] = a0;
        alpha_smem[r1] = a1;
      }
      fence_proxy_async();  // P, before warpgroup 1's wgmma reads it
    }
    __syncthreads();  // P and alpha of tile t ready
    // ── O[:, 256 wg, +256) = O * alpha + P V (V: the ckv columns of the stage, MN-major) ──
    if (wg == 1) {
      a0 = alpha_smem[r0];
      a1 = alpha_smem[r1];
    }
    rescale_o(o, a0, a1);
    if (wg == 0) {
      const uint64_t dv0 = sw128_desc(ks, T * 128);
      wgmma_fence();
#pragma unroll
      for (int kt = 0; kt < KT; ++kt) wgmma_rs_tb<NB>(o, pa[kt], dv0 + static_cast<uint64_t>((kt * 16 * 128) >> 4));
      wgmma_commit();
      wgmma_wait_n<0>();
      fence_operands(o);
    } else {  // A = P from shared memory, K-major
      pv_ss(o, sw128_desc(p_base, 16), sw128_desc(ks + (NB / 64) * T * 128, T * 128));
    }
  }
  cp_async_wait_n<0>();

  // ── epilogue: 1/l per row from warpgroup 0, then each warpgroup writes its half of every row ──
  if (wg == 0) row_stats(p, st, inv_smem, row0, nq, r0, lane);
  __syncthreads();
  write_o_rows(p, o, inv_smem, row0, nq, wg, r0, r1, cq);
}
#endif

#if KA_MMA && KA_WARPS == 12
// The steps both WARPS 12 schedules (tile_wgmma3, stream_wgmma3) run per key tile.
constexpr int W3_KSC = (DC - QTAIL_CKV) / 16;  // S k-steps with A (Q's ckv dims) from registers
constexpr int W3_KSP = (QTAIL_CKV + DP) / 16;  // with A from shared memory (Q's tail)
constexpr int W3_NB = DC / 2;                  // O dims per O warpgroup (one wgmma N)
constexpr int W3_PBLK = CPC / 8;               // the kpe column block of a stage (P goes there)
constexpr int W3_PROW = 2 * T;                 // bytes per P row (swizzle 128 B for 64 keys, 64 B for 32)
// Warpgroup 0: S = Q K^T of the tile in the stage at ks into s, issued and committed (not waited
// for): W3_KSC k-steps with A = qf, then W3_KSP with A = Q's tail at descriptor dqp.
__device__ __forceinline__ void w3_issue_s(float (&s)[T / 8][4], const uint32_t (&qf)[W3_KSC][4], uint32_t ks,
                                           uint64_t dqp) {
#pragma unroll
  for (int j = 0; j < T / 8; ++j) s[j][0] = s[j][1] = s[j][2] = s[j][3] = 0.f;
  const uint64_t dk0 = sw128_desc(ks, 16);
  wgmma_fence();
#pragma unroll
  for (int kk = 0; kk < W3_KSC; ++kk)
    wgmma_rs<T>(s, qf[kk], dk0 + static_cast<uint64_t>(((kk >> 2) * T * 128 + (kk & 3) * 32) >> 4));
#pragma unroll
  for (int kk = 0; kk < W3_KSP; ++kk)
    wgmma_ss<T>(s, dqp + static_cast<uint64_t>(((kk >> 2) * M * 128 + (kk & 3) * 32) >> 4),
                dk0 + static_cast<uint64_t>((((W3_KSC + kk) >> 2) * T * 128 + (kk & 3) * 32) >> 4));
  wgmma_commit();
}
// Warpgroup 0: the softmax of key tile t of an item (mask from tile nomask on; lim: the last key rows
// r0 and r1 see), P into the kpe block of the tile's stage at stage (S was its last reader; P V of
// the previous tile reads another stage), K-major rows of W3_PROW bytes, chunk j of row r at
// (j ^ swizzle(r)); the rows' rescale factors into alpha_b (clear: 0, an item's first tile in a
// stream, so that P V also clears the previous item's O).
__device__ __forceinline__ void w3_softmax_p(const Params& p, float (&s)[T / 8][4], Rows& st, unsigned char* stage,
                                             float* alpha_b, int t, int nomask, int lim, int r0, int r1, int cq,
                                             int lane, bool clear) {
  unsigned char* const pb = stage + W3_PBLK * T * 128;
  auto p_off = [](int r, int j) {
    const int a = r * W3_PROW + j * 16;
    return a ^ (((a >> 7) & (W3_PROW / 16 - 1)) << 4);
  };
  auto store = [&](int j, uint32_t w0, uint32_t w1) {
    *reinterpret_cast<uint32_t*>(pb + p_off(r0, j) + cq * 2) = w0;
    *reinterpret_cast<uint32_t*>(pb + p_off(r1, j) + cq * 2) = w1;
  };
  float a0, a1;
  if (t >= nomask) softmax_tile<true>(s, st, p.scale_log2, t * T, lim, lim, cq, a0, a1, store);
  else softmax_tile<false>(s, st, p.scale_log2, t * T, lim, lim, cq, a0, a1, store);
  if ((lane & 3) == 0) {
    alpha_b[r0] = clear ? 0.f : a0;
    alpha_b[r1] = clear ? 0.f : a1;
  }
}
// O warpgroup og: O = O alpha + P V for the tile in the stage at vs (P in its kpe block), waited for.
__device__ __forceinline__ void w3_pv(float (&o)[W3_NB / 8][4], const unsigned char* vs, const float* alpha_b, int og,
                                      int r0, int r1) {
  rescale_o(o, alpha_b[r0], alpha_b[r1]);
  const uint32_t pa = smem_u32(vs + W3_PBLK * T * 128);
  const uint64_t dp0 = W3_PROW == 128 ? sw128_desc(pa, 16) : sw64_desc(pa);
  pv_ss(o, dp0, sw128_desc(smem_u32(vs + og * (W3_NB / 64) * T * 128), T * 128));
}
// Q of an item (output rows from row0 on, nq tokens), rows [rlo, rlo + rows) of the 64: the ckv
// dims held in warpgroup 0's registers into the staging buffer qs, the rest (Q's tail: the last
// QTAIL_CKV ckv dims and the kpe part) into qtail, both swizzled; threads first, first + stride, ...
// of the rows' 16-byte chunks; rows past the item's tokens zero-filled.
__device__ __forceinline__ void w3_load_q(const Params& p, int64_t row0, int nq, unsigned char* qs, unsigned char* qtail,
                                          int rlo, int rows, int first, int stride) {
  constexpr int QCH = (DC - QTAIL_CKV) / 8;  // 16-byte chunks of a Q row held in registers
  for (int c = first; c < rows * CPR; c += stride) {
    const int r = rlo + c / CPR, col = c % CPR;
    const bool ok = r / H < nq;
    const int64_t qrow = ok ? row0 + r : 0;
    const uint16_t* src = col < CPC ? p.q_nope + qrow * DC + col * 8 : p.q_pe + qrow * DP + (col - CPC) * 8;
    const uint32_t dst = col < QCH ? smem_u32(qs + sw_off(r, col, M)) : smem_u32(qtail + sw_off(r, col - QCH, M));
    cp_async_16(dst, src, ok ? 16 : 0);
  }
}

// One query tile on the pipelined wgmma path (KA_MMA 1, WARPS 12; see the header's "KA_MMA").
// Warpgroup 0 holds the ckv part of Q as wgmma A fragments in registers for the whole tile and
// computes S(t) = Q K(t)^T (32 k-steps from registers, the 4 kpe ones with A from shared memory)
// and the softmax; warpgroups 1 and 2 issue the loads and add P(t-1) V(t-1) for O dims [0, 256)
// and [256, 512), P from shared memory. P(t) goes into the kpe column block of tile t's stage (read
// only by S(t), refilled only after P V(t)). Per iteration t (0 .. ntiles), two CTA barriers:
//   A(t)  tile t landed; P V(t-2) done.  wg0: S(t) (alone on the tensor cores).  wg1-2: loads of
//         tile t+AH (AH = STAGES-2) into the stage of tile t-2.
//   B(t)  S(t) done; P(t-1) and alpha(t-1) written.  wg0: softmax(t), P(t) and alpha(t) to shared
//         memory.  wg1-2: O = O alpha(t-1) + P(t-1) V(t-1) on the tensor cores meanwhile; then wait
//         for tile t+1.
// SAHEAD 1 folds the two barriers into one, Y(t), and issues S(t+1) right after it, before the
// softmax of t (see KA_SAHEAD); the O warpgroups' side is the same with one barrier.
__device__ __forceinline__ void tile_wgmma3(const Params& p, unsigned char* smem, int k0, int kl, int delta, int i0,
                                            int nq, int kv_hi, int ntiles, int nomask, int64_t row0) {
  constexpr int NB = W3_NB;         // O dims per O warpgroup (one wgmma N)
  constexpr int KSC = W3_KSC;       // S k-steps with A (Q's ckv dims) from registers
  constexpr int NTT = T / 8;        // S n8 blocks
  constexpr int AH = STAGES - 2;    // tiles whose loads are in flight ahead of the one computed
  // Registers per thread: REGS_LAUNCH at launch; warpgroup 0 (Q fragments, S) takes 184, the O
  // warpgroups 160 (184 + 2 x 160 = 3 x 168).
  constexpr bool SA = KA_SAHEAD;    // S one tile ahead (see KA_SAHEAD)
  static_assert(!SA || STAGES >= 4, "SAHEAD=1: STAGES >= 4");
  constexpr int REGS_S = 184, REGS_O = 160;
  static_assert(REGS_S + 2 * REGS_O == 3 * REGS_LAUNCH, "setmaxnreg split");
  unsigned char* const stages = smem;
  unsigned char* const qpe_smem = stages + STAGES * WG_STAGE_BYTES;  // Q's tail
  float* const alpha_smem = reinterpret_cast<float*>(qpe_smem + M * 2 * (QTAIL_CKV + DP));
  float* const inv_smem = alpha_smem + 2 * M;  // after two alpha buffers
  const int tid = threadIdx.x, lane = tid & 31;
  const int wg = tid >> 7;
  const int r0 = ((tid >> 5) & 3) * 16 + (lane >> 2), r1 = r0 + 8;  // this thread's rows
  const int cq = 2 * (lane & 3);

  // ── loads (warpgroups 1-2, 256 threads) ──
  auto page_of = [&](int t) { return tile_pages<256>(p, t * T, kv_hi, k0, tid - 128); };
  auto gather = [&](int stage, const TilePages<256>& pg) { gather_tile<256>(p, stages + stage * WG_STAGE_BYTES, pg, tid - 128); };
  auto issue = [&](int stage, int t) { gather(stage, page_of(t)); };
  // Q: the ckv part into the last two stages (staging for warpgroup 0's registers), the kpe part into
  // its own block; rows past the tile's tokens are zero-filled. Tiles 0 .. AH-1 into their stages.
  {
    w3_load_q(p, row0, nq, stages + (STAGES - 2) * WG_STAGE_BYTES, qpe_smem, 0, M, tid, NT);
    if (wg > 0) issue(0, 0);
    cp_async_commit();
    if (wg > 0) {
#pragma unroll
      for (int u = 1; u < AH; ++u) {
        if (u < ntiles) issue(u, u);
        cp_async_commit();
      }
      // Q and tile 0 (SAHEAD: and tile 1)
      if constexpr (SA) cp_async_wait_n<AH - 2>();
      else cp_async_wait_n<AH - 1>();
    } else {
      cp_async_wait_n<0>();
    }
    fence_proxy_async();
    __syncthreads();
  }
  trace_at(tid == 0, 1);
  trace_count(tid == 0, ntiles);

  if (wg == 0) {
    setmaxnreg_inc<REGS_S>();
    // Q ckv A fragments (k-step kk: chunks 2kk, 2kk+1 of rows 16w .. 16w+15 of the warp).
    uint32_t qf[KSC][4];
    {
      const unsigned char* qs = stages + (STAGES - 2) * WG_STAGE_BYTES;
      const int qr = ((tid >> 5) & 3) * 16 + (lane & 15);
#pragma unroll
      for (int kk = 0; kk < KSC; ++kk)
        ldsm_x4(smem_u32(qs + sw_off(qr, 2 * kk + (lane >> 4), M)), qf[kk][0], qf[kk][1], qf[kk][2], qf[kk][3]);
    }
    Rows st{kNegInf, kNegInf, 0.f, 0.f};
    // The last key rows r0 and r1 see (one token: r0 % 16 < 8), and below kv_len.
    const int lim = imin(i0 + r0 / H + delta, kl - 1);
    const uint64_t dqp = sw128_desc(smem_u32(qpe_smem), 16);
    // S(t) = Q K(t)^T into acc, issued and committed (not waited for).
    auto issue_s = [&](float(&acc)[NTT][4], int t) {
      w3_issue_s(acc, qf, smem_u32(stages + (t % STAGES) * WG_STAGE_BYTES), dqp);
    };
    // ── softmax(t) in base 2 (mask on diagonal tiles only); P(t) into tile t's stage, the rescale
    // factors into alpha buffer t%2 (P V(t-1) reads the other one). ──
    auto softmax_p = [&](float(&s)[NTT][4], int t) {
      w3_softmax_p(p, s, st, stages + (t % STAGES) * WG_STAGE_BYTES, alpha_smem + (t & 1) * M, t, nomask, lim, r0,
                   r1, cq, lane, false);
    };
    if constexpr (SA) {
      // S(0) before the loop; at Y(t) S(t+1) goes to the tensor cores (for the last tile too: its
      // result is dropped, and the stage it reads is not being refilled) while the softmax of t runs.
      float s[NTT][4];
      issue_s(s, 0);
      wgmma_wait_n<0>();
      fence_operands(s);
      for (int t = 0; t < ntiles; ++t) {
        cta_bar();  // Y(t)
        float sn[NTT][4];
        issue_s(sn, t + 1);
        softmax_p(s, t);
        wgmma_wait_n<0>();
        fence_operands(sn);
#pragma unroll
        for (int j = 0; j < NTT; ++j)
#pragma unroll
          for (int e = 0; e < 4; ++e) s[j][e] = sn[j][e];
        fence_proxy_async();  // P(t), before warpgroups 1-2's wgmma reads it
      }
      cta_bar();  // Y(ntiles)
    } else {
      for (int t = 0; t <= ntiles; ++t) {
        cta_bar();  // A(t)
        float s[NTT][4];
        if (t < ntiles) {
          issue_s(s, t);
          wgmma_wait_n<0>();
          fence_operands(s);
        }
        cta_bar();  // B(t)
        if (t == ntiles) break;
        softmax_p(s, t);
        fence_proxy_async();  // P, before warpgroups 1-2's wgmma reads it
      }
    }
    // ── epilogue: 1/l and the lse per row ──
    trace_at(tid == 0, 2);
    row_stats(p, st, inv_smem, row0, nq, r0, lane);
    cta_bar();  // 1/l ready
    setmaxnreg_dec<REGS_LAUNCH>();
  } else {
    setmaxnreg_dec<REGS_O>();
    const int og = wg - 1;  // O dims [og * NB, +NB)
    float o[NB / 8][4];
#pragma unroll
    for (int n = 0; n < NB / 8; ++n) o[n][0] = o[n][1] = o[n][2] = o[n][3] = 0.f;
    TilePages<256> next_page = page_of(AH);  // the pages of the tile to gather next, read a tile ahead
    for (int t = 0; t <= ntiles; ++t) {
      cta_bar();  // A(t) (SAHEAD: Y(t))
      if (t + AH < ntiles) gather((t + AH) % STAGES, next_page);  // the stage of tile t-2
      cp_async_commit();
      next_page = page_of(t + AH + 1);
      if constexpr (!SA) cta_bar();  // B(t)
      if (t > 0) w3_pv(o, stages + ((t - 1) % STAGES) * WG_STAGE_BYTES, alpha_smem + ((t - 1) & 1) * M, og, r0, r1);
      // tile t+1 landed (SAHEAD: tile t+2, which S(t+2) reads after Y(t+1))
      if constexpr (SA) cp_async_wait_n<AH - 2>();
      else cp_async_wait_n<AH - 1>();
      fence_proxy_async();
    }
    cta_bar();  // 1/l ready
    write_o_rows(p, o, inv_smem, row0, nq, og, r0, r1, cq);
    trace_at(tid == 128, 3);
    setmaxnreg_inc<REGS_LAUNCH>();
  }
}
#endif

#if KA_MMA && KA_WARPS == 12 && KA_PERSIST == 1
// ORDER 2 of the item stream: every query tile of the launch in decreasing order of its key tiles
// (ties: leading rows, then sequence order, then token order), dealt to the CTAs in snake order
// (round r: position r * G + c for even r, r * G + G - 1 - c for odd r, G CTAs), so each CTA gets
// the same mix of large and small items (greedy-like balance without a run-time counter; a plain
// stride over the per-sequence orders left one CTA 8-25% above the mean on 019's large workloads).
// The order comes from counts, not a sort: a sequence's tiles in natural order have nondecreasing
// key counts, so those with exactly v key tiles form one range of tiles.
// First tile (natural order) of a sequence with ql queries and kl keys whose tile count is >= v (nt
// when none; v <= 0: 0).
__device__ __forceinline__ int first_with_tiles(int ql, int kl, int v) {
  const int nt = ql > 0 ? ceil_div_i(ql, QT) : 0;
  if (v <= 0 || nt == 0) return 0;
  const int thr = T * (v - 1) + 1;  // ceil(kv_hi / T) >= v  <=>  kv_hi >= thr
  if (kl < thr) return nt;
  // A tile but the last: kv_hi = min(kl, QT * i + QT + delta); the last one's is kl.
  const int num = thr - QT - (kl - ql);
  return imin(num <= 0 ? 0 : ceil_div_i(num, QT), nt - 1);
}
struct SeqQK {
  int ql, kl;
};
__device__ __forceinline__ SeqQK seq_qk(const Params& p, int b) {
  const int q0 = __ldg(p.qo_indptr + b), k0 = __ldg(p.kv_indptr + b);
  return SeqQK{__ldg(p.qo_indptr + b + 1) - q0, imax(__ldg(p.kv_indptr + b + 1) - k0, 0)};
}
// Fills suf[v] (v = 0 .. vmax + 1) with the number of the launch's items with at least v key tiles
// (suf[0]: all of them) and returns vmax, or -1 when it exceeds cap - 2 (the caller falls back to the
// stride order). All threads of the CTA; suf in shared memory; ends with a barrier.
__device__ __forceinline__ int tile_count_suffix(const Params& p, int* suf, int cap, int* scratch) {
  const int tid = threadIdx.x;
  if (tid == 0) *scratch = 0;
  __syncthreads();
  int mk = 0;
  for (int b = tid; b < p.B; b += NT) mk = imax(mk, seq_qk(p, b).kl);
  atomicMax(scratch, mk);
  __syncthreads();
  const int vmax = ceil_div_i(*scratch, T);
  if (vmax + 2 > cap) {
    __syncthreads();
    return -1;
  }
  for (int v = tid; v <= vmax + 1; v += NT) suf[v] = 0;
  __syncthreads();
  // Items with exactly v key tiles: a warp per sequence, a lane per v (a sequence's tiles with v key
  // tiles are one range).
  const int lane = tid & 31;
  if (tid == 0) {
    const int lead = __ldg(p.qo_indptr);
    if (lead > 0) atomicAdd(&suf[0], ceil_div_i(lead, QT));
  }
  for (int b = tid >> 5; b < p.B; b += W) {
    const SeqQK s = seq_qk(p, b);
    const int vb = ceil_div_i(s.kl, T);
    for (int v = lane; v <= vb; v += 32) {
      const int c = first_with_tiles(s.ql, s.kl, v + 1) - first_with_tiles(s.ql, s.kl, v);
      if (c > 0) atomicAdd(&suf[v], c);
    }
  }
  __syncthreads();
  if (tid < 32) {  // suffix sums, 32 entries a step from the top
    int carry = 0;
    for (int top = vmax + 1; top >= 0; top -= 32) {
      const int v = top - tid;
      int x = v >= 0 ? suf[v] : 0;
#pragma unroll
      for (int d = 1; d < 32; d <<= 1) {
        const int o = __shfl_sync(0xffffffffu, x, (tid - d) & 31);
        if (tid >= d) x += o;
      }
      if (v >= 0) suf[v] = x + carry;
      carry += __shfl_sync(0xffffffffu, x, 31);
    }
  }
  __syncthreads();
  return vmax;
}
// The item at position pos of that order (pos < suf[0]); warp-uniform.
__device__ __forceinline__ Item item_at_rank(const Params& p, const int* suf, int vmax, int pos, int lane) {
  int lo = 0, hi = vmax;  // the largest v with suf[v] > pos
  while (lo < hi) {
    const int mid = (lo + hi + 1) >> 1;
    if (suf[mid] > pos) lo = mid;
    else hi = mid - 1;
  }
  const int v = lo;
  int rem = pos - suf[v + 1];
  const int lead = __ldg(p.qo_indptr);
  const int lead_items = v == 0 && lead > 0 ? ceil_div_i(lead, QT) : 0;
  if (rem < lead_items) return item_natural(p, -1, rem);
  rem -= lead_items;
  int b = 0, r = 0;
  warp_rank(p.B, lane, rem, [&](int bb) {
    const SeqQK s = seq_qk(p, bb);
    return first_with_tiles(s.ql, s.kl, v + 1) - first_with_tiles(s.ql, s.kl, v);
  }, b, r);
  const SeqQK s = seq_qk(p, b);
  return item_natural(p, b, first_with_tiles(s.ql, s.kl, v) + r);
}

// PERSIST 1 on the pipelined schedule (WARPS 12, STAGES 3): the CTA's items (query tiles; ORDER 2:
// dealt in snake order, see above) as one stream of key tiles g = 0 .. G-1 run by tile_wgmma3's
// two-barrier protocol without a break between items, so that the next item's Q and first tile
// and the previous item's output overlap the tensor-core work (a CTA per item paid the Q load, the
// pipeline fill and the output write with the tensor cores idle, one CTA per SM). Per iteration g
// (tile g of item k, its local tile t), besides tile_wgmma3's work:
//   warpgroup 0  at A(g), t == 0: waits for its own loads of Q(k) (then a warpgroup barrier), takes
//                Q(k)'s fragments from the staging buffer, issues S(g) (Q's tail from buffer k%2),
//                and while S runs issues Q(k+1)'s loads (each warp its own 16 rows of the staging
//                buffer, which only it has read; tail buffer (k+1)%2, item k-1's). Its cp.async
//                groups are its own, so the O warpgroups' per-tile waits do not wait for Q.
//                After B(g), t == 0: item k-1's row statistics (1/l into buffer (k-1)%2, its lse)
//                and a fresh softmax state; the alpha of an item's first tile is 0.
//   warpgroups   after A(g): the gather of tile g+AH (its item's pages); if tile g-1 was the first of
//   1-2          item k (k > 0), item k-1's O (complete since P V(g-2)) is written with 1/l from
//                buffer (k-1)%2; P V(g) then clears O (alpha 0). After B(g): P(g-1) V(g-1).
// The item list (geometry, empty items filled at once) is built in shared memory first.
__device__ __forceinline__ void stream_wgmma3(const Params& p, unsigned char* smem, const int* ord) {
  constexpr int NB = W3_NB;
  constexpr int KSC = W3_KSC;
  constexpr int QPE_BYTES = M * 2 * (QTAIL_CKV + DP);
  constexpr int NTT = T / 8;
  constexpr int AH = STAGES - 2;
  static_assert(QTAIL_CKV == 64 && AH == 1, "stream_wgmma3: STAGES 3");
  unsigned char* const stages = smem;
  unsigned char* const qstg = stages + STAGES * WG_STAGE_BYTES;  // next Q's ckv part (registers' share)
  unsigned char* const qpe0 = qstg + M * 2 * (DC - QTAIL_CKV);   // Q's tail, two buffers
  float* const alpha_smem = reinterpret_cast<float*>(smem + WG_ALPHA_OFF);
  float* const inv_smem = alpha_smem + 2 * M;
  int* const items = reinterpret_cast<int*>(inv_smem + 2 * M);  // MAXI x 8 ints (Item)
  int* const meta = items + MAXI * 8;                           // item count, tile count
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int wg = tid >> 7;
  const int r0 = ((tid >> 5) & 3) * 16 + (lane >> 2), r1 = r0 + 8;
  const int cq = 2 * (lane & 3);
  static_assert(sizeof(Item) == 32, "an item is 8 ints");
  auto item_at = [&](int k) { return reinterpret_cast<const Item*>(items)[k]; };
  auto ntiles_at = [&](int k) { return ceil_div_i(item_at(k).kv_hi, T); };

  // ── the item list: warp i decodes candidates i, i + W, ... (fills the empty ones), thread 0
  // compacts the others in order. ORDER 2: candidate r is position r * G + (r even ? c : G - 1 - c)
  // of the order by key tiles (tile_count_suffix, its counts in stage 0 before any load); ORDER 0/1
  // (or a launch past its counts' room): tile blockIdx.x + r * gridDim.x of map_item's order. ──
  const int G_ = static_cast<int>(gridDim.x), c_ = static_cast<int>(blockIdx.x);
  int* const suf = reinterpret_cast<int*>(stages);
  const int vmax = KA_ORDER == 2 ? tile_count_suffix(p, suf, WG_STAGE_BYTES / 4, meta) : -1;
  const int total = vmax >= 0 ? suf[0] : p.tiles;
  const int cand = imin(vmax >= 0 ? ceil_div_i(total, G_) : total > c_ ? ceil_div_i(total - c_, G_) : 0, MAXI);
  for (int i = warp; i < cand; i += W) {
    Item it{};
    if (vmax >= 0) {
      const int pos = i * G_ + ((i & 1) ? G_ - 1 - c_ : c_);
      if (pos < total) {
        it = item_at_rank(p, suf, vmax, pos, lane);
        if (it.kv_hi <= 0) fill_empty(p, it, lane, 32);
      }
    } else if (map_item(p, ord, c_ + i * G_, lane, it)) {
      if (it.kv_hi <= 0) fill_empty(p, it, lane, 32);
    } else {
      it.kv_hi = 0;  // past the last tile
    }
    if (lane == 0) reinterpret_cast<Item*>(items)[i] = it;
  }
  __syncthreads();
  if (tid == 0) {
    int n = 0, g = 0;
    Item* const list = reinterpret_cast<Item*>(items);
    for (int i = 0; i < cand; ++i) {
      const Item it = list[i];
      if (it.kv_hi <= 0) continue;
      list[n++] = it;
      g += ceil_div_i(it.kv_hi, T);
    }
    meta[0] = n;
    meta[1] = g;
  }
  __syncthreads();
  const int n = meta[0], G = meta[1];
  if (G == 0) return;  // CTA-uniform

  auto load_q = [&](const Item& it, int kb, int rlo, int rows, int first, int stride) {  // into tail buffer kb
    w3_load_q(p, static_cast<int64_t>(it.rowtok) * H, it.nq, qstg, qpe0 + kb * QPE_BYTES, rlo, rows, first, stride);
  };
  // The gather walk: item gk, its local tile gt (of gn), stream tile gs.
  int gk = 0, gt = 0, gn = ntiles_at(0);
  auto gather_next = [&]() {  // the pages of the walk's tile, then the walk moves on
    const Item it = item_at(gk);
    const TilePages<256> pg = tile_pages<256>(p, gt * T, it.kv_hi, it.k0, tid - 128);
    if (++gt == gn) {
      ++gk;
      gt = 0;
      gn = gk < n ? ntiles_at(gk) : 0;
    }
    return pg;
  };
  {
    load_q(item_at(0), 0, 0, M, tid, NT);
    if (wg > 0) gather_tile<256>(p, stages, gather_next(), tid - 128);
    cp_async_commit();
    if (wg > 0) {
#pragma unroll
      for (int u = 1; u < AH; ++u) {
        if (u < G) gather_tile<256>(p, stages + u * WG_STAGE_BYTES, gather_next(), tid - 128);
        cp_async_commit();
      }
      cp_async_wait_n<AH - 1>();
    } else {
      cp_async_wait_n<0>();
    }
    fence_proxy_async();
    __syncthreads();
  }
  trace_at(tid == 0, 1);
  trace_count(tid == 0, G);

  if (wg == 0) {
    uint32_t qf[KSC][4];
    const int qr = ((tid >> 5) & 3) * 16 + (lane & 15);
    auto load_qf = [&]() {
#pragma unroll
      for (int kk = 0; kk < KSC; ++kk)
        ldsm_x4(smem_u32(qstg + sw_off(qr, 2 * kk + (lane >> 4), M)), qf[kk][0], qf[kk][1], qf[kk][2], qf[kk][3]);
    };
    load_qf();
    Rows st{kNegInf, kNegInf, 0.f, 0.f};
    int k = 0, t = 0;
    Item cur = item_at(0);
    int nt = ceil_div_i(cur.kv_hi, T);
    for (int g = 0; g <= G; ++g) {
      cta_bar();  // A(g)
      float s[NTT][4];
      if (g < G) {
        if (t == 0 && g > 0) {  // Q(k): this warpgroup's own loads, issued at item k-1's start
          cp_async_wait_n<0>();
          fence_proxy_async();  // (its tail is a wgmma operand)
          wg0_bar();
          load_qf();
        }
        w3_issue_s(s, qf, smem_u32(stages + (g % STAGES) * WG_STAGE_BYTES),
                   sw128_desc(smem_u32(qpe0 + (k & 1) * QPE_BYTES), 16));
        if (t == 0 && k + 1 < n) {  // Q(k+1) while S runs: each warp its own 16 rows of the staging
          // buffer (only it reads them, by its ldmatrix above); tail buffer (k+1)%2 was item k-1's
          load_q(item_at(k + 1), (k + 1) & 1, 16 * ((tid >> 5) & 3), 16, lane, 32);
          cp_async_commit();
        }
        wgmma_wait_n<0>();
        fence_operands(s);
      }
      cta_bar();  // B(g)
      if (g == G) break;
      if (t == 0 && g > 0) {  // item k-1 is done
        const Item pv = item_at(k - 1);
        row_stats(p, st, inv_smem + ((k - 1) & 1) * M, static_cast<int64_t>(pv.rowtok) * H, pv.nq, r0, lane);
        st = Rows{kNegInf, kNegInf, 0.f, 0.f};
      }
      // P(g); an item's first tile writes alpha 0, which also clears the previous item's O.
      w3_softmax_p(p, s, st, stages + (g % STAGES) * WG_STAGE_BYTES, alpha_smem + (g & 1) * M, t, cur.nomask,
                   imin(cur.i0 + r0 / H + cur.delta, cur.kl - 1), r0, r1, cq, lane, t == 0);
      fence_proxy_async();  // P(g), before warpgroups 1-2's wgmma reads it
      if (++t == nt) {
        ++k;
        t = 0;
        if (k < n) {
          cur = item_at(k);
          nt = ceil_div_i(cur.kv_hi, T);
        }
      }
    }
    trace_at(tid == 0, 2);
    {
      const Item pv = item_at(n - 1);
      row_stats(p, st, inv_smem + ((n - 1) & 1) * M, static_cast<int64_t>(pv.rowtok) * H, pv.nq, r0, lane);
    }
    cta_bar();  // F: the last item's 1/l ready
  } else {
    const int og = wg - 1;
    float o[NB / 8][4];
#pragma unroll
    for (int j = 0; j < NB / 8; ++j) o[j][0] = o[j][1] = o[j][2] = o[j][3] = 0.f;
    auto write_o = [&](int kk) {  // item kk's O rows (this warpgroup's dims), 1/l from buffer kk % 2
      const Item it = item_at(kk);
      write_o_rows(p, o, inv_smem + (kk & 1) * M, static_cast<int64_t>(it.rowtok) * H, it.nq, og, r0, r1, cq);
    };
    TilePages<256> next_page{};
    if (AH < G) next_page = gather_next();
    int k = 0, t = 0, nt = ntiles_at(0);  // item and local tile of tile g
    int due = -1;                          // item whose O is written after the next A
    for (int g = 0; g <= G; ++g) {
      cta_bar();  // A(g)
      trace_mark(tid == 128, 2 * g, g < G && t == 0);
      if (g + AH < G) gather_tile<256>(p, stages + ((g + AH) % STAGES) * WG_STAGE_BYTES, next_page, tid - 128);
      cp_async_commit();
      if (g + AH + 1 < G) next_page = gather_next();
      const bool wrote = due >= 0;
      if (wrote) {  // (P V(g) then scales O by 0: alpha of an item's first tile)
        write_o(due);
        due = -1;
      }
      trace_mark(tid == 128, 2 * g + 1, wrote);
      cta_bar();  // B(g)
      const bool first = g < G && t == 0;
      if (g > 0) w3_pv(o, stages + ((g - 1) % STAGES) * WG_STAGE_BYTES, alpha_smem + ((g - 1) & 1) * M, og, r0, r1);
      if (g == G) break;
      if (first && k > 0) due = k - 1;  // its last P V was the one just done
      if (++t == nt) {
        ++k;
        t = 0;
        nt = k < n ? ntiles_at(k) : 0;
      }
      cp_async_wait_n<AH - 1>();  // tile g+1 landed (this iteration's gather)
      fence_proxy_async();
    }
    cta_bar();  // F
    write_o(n - 1);
    trace_at(tid == 128, 3);
  }
}
#endif

__device__ __forceinline__ void do_tile(const Params& p, unsigned char* smem, const Item& it) {
  unsigned char* const stages = smem;
  unsigned char* const q_smem = stages + STAGES * STAGE_BYTES;
  float* const s_smem = reinterpret_cast<float*>(q_smem + Q_BYTES);
  unsigned char* const p_smem = reinterpret_cast<unsigned char*>(s_smem + M * SROW);
  float* const alpha_smem = reinterpret_cast<float*>(p_smem + P_BYTES);
  float* const inv_smem = alpha_smem + M;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int k0 = it.k0, kl = it.kl, delta = it.delta, i0 = it.i0, nq = it.nq, kv_hi = it.kv_hi;
  const int64_t row0 = static_cast<int64_t>(it.rowtok) * H;  // output row of CTA row 0 (token-major)
  if (kv_hi <= 0) {
    fill_empty(p, it, tid, NT);
    return;
  }
  const int ntiles = ceil_div_i(kv_hi, T);
  const int nomask = it.nomask;
#if KA_MMA
  (void)s_smem, (void)alpha_smem, (void)inv_smem, (void)lane, (void)warp;
#if KA_WARPS == 12
  tile_wgmma3(p, smem, k0, kl, delta, i0, nq, kv_hi, ntiles, nomask, row0);
#else
  tile_wgmma(p, smem, k0, kl, delta, i0, nq, kv_hi, ntiles, nomask, row0);
#endif
#else

  // ── loads: chunk c of a tile = row c / CPR, 16-byte column c % CPR ([ckv | kpe]) ──
  auto issue = [&](int stage, int t) {
    unsigned char* ks = stages + stage * STAGE_BYTES;
    for (int c = tid; c < T * CPR; c += NT) {
      const int row = c / CPR, col = c % CPR;
      const int j = t * T + row;
      const bool ok = j < kv_hi;
      const int page = ok ? imin(imax(__ldg(p.indices + k0 + j), 0), p.num_rows - 1) : 0;
      const uint16_t* src = col < CPC ? p.ckv + static_cast<int64_t>(page) * DC + col * 8
                                      : p.kpe + static_cast<int64_t>(page) * DP + (col - CPC) * 8;
      cp_async_16(smem_u32(ks + row * ROWB + col * 16), src, ok ? 16 : 0);
    }
  };
  for (int c = tid; c < M * CPR; c += NT) {
    const int r = c / CPR, col = c % CPR;
    const bool ok = r / H < nq;
    const int64_t qrow = ok ? row0 + r : 0;
    const uint16_t* src = col < CPC ? p.q_nope + qrow * DC + col * 8 : p.q_pe + qrow * DP + (col - CPC) * 8;
    cp_async_16(smem_u32(q_smem + r * ROWB + col * 16), src, ok ? 16 : 0);
  }
  cp_async_commit();
#pragma unroll
  for (int s = 0; s < STAGES - 1; ++s) {
    if (s < ntiles) issue(s, s);
    cp_async_commit();
  }

  // Warp roles.
  const int mi = warp % MT, grp = warp / MT;
  const int r0 = lane >> 2, cq = 2 * (lane & 3);
  // Softmax roles: row srow, columns [ssub * CPT, +CPT).
  const int srow = tid / TPR, ssub = tid % TPR;
  const int slim = i0 + srow / H + delta;  // last key the row sees
  float sm = kNegInf, sl = 0.f, se = 0.f;
  constexpr int NTO = DB / 8;
  float o[NTO][4];
#pragma unroll
  for (int n = 0; n < NTO; ++n) o[n][0] = o[n][1] = o[n][2] = o[n][3] = 0.f;
  const uint32_t qa_base = smem_u32(q_smem + (mi * 16 + (lane & 15)) * ROWB + (lane >> 4) * 16);
  const uint32_t pa_base = smem_u32(p_smem + (mi * 16 + (lane & 15)) * PROWB + (lane >> 4) * 16);

  for (int t = 0; t < ntiles; ++t) {
    cp_async_wait_n<STAGES - 2>();
    __syncthreads();  // tile t (and Q) landed; every warp is done with tile t-1
    {
      const int u = t + STAGES - 1;
      if (u < ntiles) issue(u % STAGES, u);
      cp_async_commit();
    }
    const unsigned char* ks = stages + (t % STAGES) * STAGE_BYTES;
    // ── S phase ──
    {
      constexpr int NJ = KW / 8;
      float s[NJ][4];
#pragma unroll
      for (int j = 0; j < NJ; ++j) s[j][0] = s[j][1] = s[j][2] = s[j][3] = 0.f;
      const uint32_t kb_base = smem_u32(ks + (grp * KW + (lane & 7)) * ROWB + (lane >> 3) * 16);
#pragma unroll 2
      for (int kk = 0; kk < DQ / 16; kk += 2) {
        uint32_t a0[4], a1[4];
        ldsm_x4(qa_base + kk * 32, a0[0], a0[1], a0[2], a0[3]);
        ldsm_x4(qa_base + kk * 32 + 32, a1[0], a1[1], a1[2], a1[3]);
#pragma unroll
        for (int j = 0; j < NJ; ++j) {
          uint32_t b0, b1, b2, b3;
          ldsm_x4(kb_base + j * 8 * ROWB + kk * 32, b0, b1, b2, b3);
          mma_bf16(s[j], a0, b0, b1);
          mma_bf16(s[j], a1, b2, b3);
        }
      }
#pragma unroll
      for (int j = 0; j < NJ; ++j) {
        const int col = grp * KW + 8 * j + cq;
        float* d0 = s_smem + (mi * 16 + r0) * SROW + col;
        float* d1 = d0 + 8 * SROW;
        d0[0] = s[j][0] * p.scale_log2;
        d0[1] = s[j][1] * p.scale_log2;
        d1[0] = s[j][2] * p.scale_log2;
        d1[1] = s[j][3] * p.scale_log2;
      }
    }
    __syncthreads();
    // ── softmax phase ──
    {
      float x[CPT];
      const float* src = s_smem + srow * SROW + ssub * CPT;
      const int key0 = t * T + ssub * CPT;
      float mx = kNegInf;
#pragma unroll
      for (int c = 0; c < CPT; ++c) {
        x[c] = src[c];
        if (t >= nomask && (key0 + c > slim || key0 + c >= kl)) x[c] = kNegInf;
        mx = fmaxf(mx, x[c]);
      }
#pragma unroll
      for (int d = 1; d < TPR; d <<= 1) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, d));
      const float mn = fmaxf(sm, mx);
      const float mu = mn == kNegInf ? 0.f : mn;
      const float a = exp2f(sm - mu);
      sm = mn;
      float ls = 0.f, es = 0.f;
      uint32_t* pd = reinterpret_cast<uint32_t*>(p_smem + srow * PROWB + ssub * CPT * 2);
#pragma unroll
      for (int c = 0; c < CPT; c += 2) {
        const float pa = exp2f(x[c] - mu), pb = exp2f(x[c + 1] - mu);
        const uint32_t w = pack_bf16(pa, pb);
        pd[c / 2] = w;
        ls += bf_lo(w) + bf_hi(w);
        es += pa + pb;
      }
#pragma unroll
      for (int d = 1; d < TPR; d <<= 1) {
        ls += __shfl_xor_sync(0xffffffffu, ls, d);
        es += __shfl_xor_sync(0xffffffffu, es, d);
      }
      sl = sl * a + ls;
      se = se * a + es;
      if (ssub == 0) alpha_smem[srow] = a;
    }
    __syncthreads();
    // ── P·V phase ──
    {
      const float a0 = alpha_smem[mi * 16 + r0], a1 = alpha_smem[mi * 16 + r0 + 8];
#pragma unroll
      for (int n = 0; n < NTO; ++n) {
        o[n][0] *= a0;
        o[n][1] *= a0;
        o[n][2] *= a1;
        o[n][3] *= a1;
      }
      const uint32_t vb = smem_u32(ks + ((lane & 7) + 8 * ((lane >> 3) & 1)) * ROWB + (lane >> 4) * 16) + grp * DB * 2;
#pragma unroll
      for (int kt = 0; kt < T / 16; ++kt) {
        uint32_t pa[4];
        ldsm_x4(pa_base + kt * 32, pa[0], pa[1], pa[2], pa[3]);
#pragma unroll
        for (int n2 = 0; n2 < NTO / 2; ++n2) {
          uint32_t b0, b1, b2, b3;
          ldsm_x4_t(vb + kt * 16 * ROWB + n2 * 32, b0, b1, b2, b3);
          mma_bf16(o[2 * n2], pa, b0, b1);
          mma_bf16(o[2 * n2 + 1], pa, b2, b3);
        }
      }
    }
  }
  cp_async_wait_n<0>();

  // ── epilogue ──
  if (ssub == 0) {
    const bool none = sm == kNegInf;
    inv_smem[srow] = none ? -1.f : 1.f / sl;  // -1: the row saw no key
    if (srow / H < nq) p.lse[row0 + srow] = none ? kNegInf : sm + log2f(se);
  }
  __syncthreads();
  const uint32_t empty = KA_MASKED_ROW_ZERO ? 0u : 0x7fc07fc0u;
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int r = mi * 16 + r0 + 8 * h;
    if (r / H >= nq) continue;
    const float inv = inv_smem[r];
    uint32_t* dst = reinterpret_cast<uint32_t*>(p.out + (row0 + r) * DC + grp * DB);
#pragma unroll
    for (int n = 0; n < NTO; ++n)
      dst[(8 * n + cq) / 2] = inv < 0.f ? empty : pack_bf16(o[n][2 * h] * inv, o[n][2 * h + 1] * inv);
  }
#endif
}

// ── host ───────────────────────────────────────────────────────────────────────────────────────
bool g_init = false;
bool g_regs_ok = true;  // WARPS 12: the kernel has REGS_LAUNCH registers per thread
int g_sms = 132, g_occ = 1;

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
    cudaMemsetAsync(output.data, 0xff, static_cast<size_t>(total_q) * H * DC * 2);
    cudaMemsetAsync(lse.data, 0xff, static_cast<size_t>(total_q) * H * 4);
    return;
  }
  if (!g_init) {
    int dev = 0;
    cudaGetDevice(&dev);
    cudaDeviceGetAttribute(&g_sms, cudaDevAttrMultiProcessorCount, dev);
    cudaFuncSetAttribute(mla_prefill_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, KERNEL_SMEM);
    int occ = 0;
    cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, mla_prefill_kernel, NT, KERNEL_SMEM);
    g_occ = occ > 0 ? occ : 1;
#ifndef KA_EMULATE
    if constexpr (WG3) {
      cudaFuncAttributes fa{};
      g_regs_ok = cudaFuncGetAttributes(&fa, mla_prefill_kernel) == cudaSuccess && fa.numRegs == REGS_LAUNCH;
    }
#endif
    g_init = true;
  }
  Params p{};
  p.q_nope = static_cast<const uint16_t*>(q_nope.data);
  p.q_pe = static_cast<const uint16_t*>(q_pe.data);
  p.ckv = static_cast<const uint16_t*>(ckv_cache.data);
  p.kpe = static_cast<const uint16_t*>(kpe_cache.data);
  p.qo_indptr = static_cast<const int*>(qo_indptr.data);
  p.kv_indptr = static_cast<const int*>(kv_indptr.data);
  p.indices = static_cast<const int*>(kv_indices.data);
  p.out = static_cast<uint16_t*>(output.data);
  p.lse = static_cast<float*>(lse.data);
  p.B = static_cast<int>(B);
  p.total_q = static_cast<int>(total_q);
  p.num_rows = static_cast<int>(ckv_cache.size(0));
  p.scale_log2 = static_cast<float>(sm_scale * 1.4426950408889634);
  const int64_t tiles = (total_q + QT - 1) / QT + B + 1;
  p.tiles = static_cast<int>(tiles);
  int64_t ctas = tiles;
  if (KA_PERSIST != 0 && ctas > static_cast<int64_t>(g_sms) * g_occ) ctas = static_cast<int64_t>(g_sms) * g_occ;
  if (WG3P && ctas * MAXI < tiles) ctas = (tiles + MAXI - 1) / MAXI;  // a CTA's item list holds MAXI
  if (!g_regs_ok) return;  // a build whose setmaxnreg split cannot hold: outputs left unwritten, not a hang
#ifdef KA_TRACE
  ka_trace::set_grid(ctas);
#endif
  KA_LAUNCH(mla_prefill_kernel, dim3(static_cast<unsigned>(ctas)), dim3(NT), KERNEL_SMEM, p);
}
