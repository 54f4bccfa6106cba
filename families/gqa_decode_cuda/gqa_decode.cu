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
//                            address, and bench/tools/gather_bw.cu measured on the H200 that reading
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

#if !defined(KA_NUM_QO_HEADS) || !defined(KA_NUM_KV_HEADS) || !defined(KA_HEAD_DIM) || !defined(KA_WARPS) || \
    !defined(KA_TILE) || !defined(KA_STAGES) || !defined(KA_SPLIT_TOKENS) || !defined(KA_WAVES) ||             \
    !defined(KA_FUSED_MERGE) || !defined(KA_NO_SPLIT_BELOW) || !defined(KA_L2_PREFETCH) || !defined(KA_BULK) ||     \
    !defined(KA_PRODUCER) || !defined(KA_QK_SPLIT) || !defined(KA_HEADS)
#error "gqa_decode_cuda: the problem defines and knobs must be defined (KernelArc does this)"
#endif
#if defined(KA_PAGE_SIZE) && KA_PAGE_SIZE != 1
#error "gqa_decode_cuda: page_size must be 1"
#endif

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
inline uint16_t to_bf16(float f) { return f2bf(f); }
inline uint32_t ld_u32(const uint16_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}
// BULK=1: mbarrier and bulk-copy primitives (mbar_init, mbar_fence_init, mbar_arrive_expect_tx,
// mbar_try_wait, bulk_copy_g2s, elect_one) come from ka_emu_ops with the CUDA signatures;
// PRODUCER=1's mbar_arrive and cp_async_mbar_arrive_noinc too, and named barriers from emu.
inline void consumer_sync() { emu::named_sync(1, NT); }
inline int atom_add_acq_rel_gpu(int* p, int v) { return atomicAdd(p, v); }
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
__device__ __forceinline__ void ldsm_x4(uint32_t a, uint32_t& r0, uint32_t& r1, uint32_t& r2, uint32_t& r3) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
               : "r"(a));
}
__device__ __forceinline__ void ldsm_x4_t(uint32_t a, uint32_t& r0, uint32_t& r1, uint32_t& r2, uint32_t& r3) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
               : "r"(a));
}
// c += A * B for one m16n8k16 tile (A row-major 16x16 bf16, B "col" 16x8 bf16, C 16x8 fp32).
__device__ __forceinline__ void mma_bf16(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
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
__device__ __forceinline__ uint16_t to_bf16(float f) { return __bfloat16_as_ushort(__float2bfloat16_rn(f)); }
__device__ __forceinline__ uint32_t ld_u32(const uint16_t* p) { return __ldg(reinterpret_cast<const unsigned int*>(p)); }
// BULK=1 (PTX ISA 8.0, sm_90). mbarriers live in shared memory (8 bytes, 8-byte aligned).
__device__ __forceinline__ void mbar_init(uint32_t bar, int count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}
// Makes the initialisation visible to the async proxy (the bulk copies' complete_tx) and to the
// other threads (after the __syncthreads that follows).
__device__ __forceinline__ void mbar_fence_init() { asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory"); }
__device__ __forceinline__ void mbar_arrive_expect_tx(uint32_t bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes) : "memory");
}
// True once the phase of parity `parity` has completed (acquire: the copies that completed it are
// visible to this thread).
__device__ __forceinline__ bool mbar_try_wait(uint32_t bar, uint32_t parity) {
  uint32_t ok;
  asm volatile(
      "{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n selp.u32 %0, 1, 0, p;\n}\n"
      : "=r"(ok)
      : "r"(bar), "r"(parity)
      : "memory");
  return ok != 0;
}
// One bulk copy global -> shared (this CTA's own shared memory is a valid ::cluster address);
// completes `bytes` of the barrier's transaction count.
__device__ __forceinline__ void bulk_copy_g2s(uint32_t dst, const void* src, uint32_t bytes, uint32_t bar) {
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(dst),
               "l"(src), "r"(bytes), "r"(bar)
               : "memory");
}
// PRODUCER=1. One arrival (release: this thread's shared-memory reads before it are done before a
// thread that observes the phase's completion refills the stage).
__device__ __forceinline__ void mbar_arrive(uint32_t bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}
// The arrival of this thread happens once all its prior cp.async have completed; .noinc: the
// barrier's count includes this arrival (it is not added to the pending count).
__device__ __forceinline__ void cp_async_mbar_arrive_noinc(uint32_t bar) {
  asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];\n" ::"r"(bar) : "memory");
}
// Named barrier 1 over the NT consumer threads (the producer warp never joins; barrier 0 is
// __syncthreads').
__device__ __forceinline__ void consumer_sync() { asm volatile("bar.sync 1, %0;\n" ::"n"(NT) : "memory"); }
// The fused merge's count (one thread per CTA, after a barrier over the writers of the partials):
// release, so the CTA's partials (ordered before by the barrier; release is cumulative) are
// visible device-wide before the count, and acquire, so the last CTA sees every other CTA's.
// One instruction instead of every writer's __threadfence, a second one around a relaxed
// atomicAdd and a third after it: each fence waits a round trip to L2, paid in every split CTA's
// tail at the end of the kernel, when the memory system is saturated.
__device__ __forceinline__ int atom_add_acq_rel_gpu(int* p, int v) {
  int old;
  asm volatile("atom.acq_rel.gpu.global.add.s32 %0, [%1], %2;\n" : "=r"(old) : "l"(p), "r"(v) : "memory");
  return old;
}
// True in exactly one lane of the (fully active) warp.
__device__ __forceinline__ bool elect_one() {
  uint32_t e;
  asm volatile("{\n .reg .pred e;\n elect.sync _|e, 0xffffffff;\n selp.u32 %0, 1, 0, e;\n}\n" : "=r"(e));
  return e != 0;
}
#endif
// The consumers' CTA-wide barrier: PRODUCER=1 leaves the producer warp out (named barrier 1).
__device__ __forceinline__ void csync() {
#if KA_PRODUCER
  consumer_sync();
#else
  __syncthreads();
#endif
}
__device__ __forceinline__ void mbar_wait(uint32_t bar, uint32_t parity) {
  while (!mbar_try_wait(bar, parity)) {
  }
}

__device__ __forceinline__ float bf_lo(uint32_t w) { return __uint_as_float(w << 16); }
__device__ __forceinline__ float bf_hi(uint32_t w) { return __uint_as_float(w & 0xffff0000u); }
__device__ __forceinline__ int imin(int a, int b) { return a < b ? a : b; }
__device__ __forceinline__ int imax(int a, int b) { return a > b ? a : b; }
__device__ __forceinline__ unsigned umin(unsigned a, unsigned b) { return a < b ? a : b; }

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

// #{b in [1, B] : indptr[b] <= x} for a non-decreasing indptr: a 32-ary search by one warp (all
// lanes get the result). Called by every (consumer) warp, in warp-uniform control flow.
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
        const float Mn = fmaxf(M, li[u]);
        const float fo = exp2f(M - Mn), fn = exp2f(li[u] - Mn);
        L = L * fo + fn;
        acc[0] = acc[0] * fo + fn * ov[u].x;
        acc[1] = acc[1] * fo + fn * ov[u].y;
        acc[2] = acc[2] * fo + fn * ov[u].z;
        acc[3] = acc[3] * fo + fn * ov[u].w;
        M = Mn;
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
#ifdef KA_TRACE
__device__ __forceinline__ void trace_at(int event, bool first_write = false) {  // event 0..3
  if (threadIdx.x == 0) ka_trace::at(event, first_write);
}
__device__ __forceinline__ void trace_tiles(int n) {
  if (threadIdx.x == 0) ka_trace::count(n);
}
#else
__device__ __forceinline__ void trace_at(int, bool = false) {}
__device__ __forceinline__ void trace_tiles(int) {}
#endif

__global__ void __launch_bounds__(NT) gqa_merge_kernel(Params p) {
  const int b = blockIdx.x / HKV, g = blockIdx.x % HKV;
  const int s = __ldg(p.indptr + b), e = __ldg(p.indptr + b + 1);
  if (e <= s || s / p.chunk == (e - 1) / p.chunk) return;  // empty, or written by its only CTA
  merge_group(p, b, g, threadIdx.x);
}

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
  const bool seq_mode = p.chunk == 0;
  const int* __restrict__ ip = p.indptr;

  // The token range [cs, ce) of this CTA (positions in kv_indices).
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
  const int ce_load = p.num_pages > 0 ? ce : cs;
  const unsigned last_page = static_cast<unsigned>(p.num_pages - 1);
  auto clamp_page = [&](int r) { return static_cast<int>(umin(static_cast<unsigned>(r), last_page)); };
  const unsigned char* const kbase = reinterpret_cast<const unsigned char*>(p.k + g * D + lcol * 8);
  const unsigned char* const vbase = reinterpret_cast<const unsigned char*>(p.v + g * D + lcol * 8);
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
    const uint32_t ks = smem_u32(stages + stage * STAGE_BYTES + lrow * ROWB + lcol * 16);
    const uint32_t vs = ks + T * ROWB;
#pragma unroll
    for (int i = 0; i < NR; ++i) {
      const int bytes = i * RPP < r.left ? 16 : 0;
      const int64_t off = static_cast<int64_t>(r.page[i]) * (HKV * D * 2);
      cp_async_16(ks + i * RPP * ROWB, kbase + off, bytes);
      cp_async_16(vs + i * RPP * ROWB, vbase + off, bytes);
    }
  };

#if KA_PRODUCER
  // Loads, PRODUCER=1 (warp specialisation). Warp W (the last) is the producer: it alone fills the
  // stages, the W consumer warps only read them.
  // Issue. Each of the producer's lanes copies 16-byte chunk (lane % KCH) of rows lane / KCH +
  // RPI*i (RPI = 32 / KCH rows per warp instruction) with cp.async.cg, K and V, so one warp
  // instruction moves 512 bytes (RPI whole rows, coalesced) and a tile costs per lane T/RPI
  // (K, V) pairs of cp.async, each pair one page-id load (issued a tile ahead), one clamp, the two
  // source addresses and a zero-fill predicate; the destinations are immediates off one base.
  // Why not bulk copies from one elected lane: those are uniform-datapath instructions whose
  // operands (the page id per row) must be moved to uniform registers one row at a time (~11
  // instructions per K+V row pair measured for BULK=1, so ~11*T per tile in one warp: ~700 at
  // TILE=64), while here a whole tile costs the producer ~228 SASS instructions at WARPS=4,
  // TILE=64, head_dim 128 (CUDA 13.0, counted on a full tile: 64 LDGSTS, 64 IMAD.WIDE for the
  // sources, 32 id loads with 32 clamps for the next tile, ~36 for the wait, the arrive and the
  // loop; ~413 per 128-token tile at WARPS=8, TILE=128) — about what ONE consumer warp spent per
  // tile on its loads with BULK=1 (~238), and the consumers now spend nothing. Bulk copies also cannot zero-fill, which cp.async does for free
  // (rows past the range and the no-pages case need no special code: their src-size is 0, so
  // masked V rows are finite zeros, as with BULK=0).
  // Page ids: plain loads by the producer's lanes of the ids of tile u+1 (into registers) before
  // tile u is issued, so their latency hides behind one tile's issue and the wait on "empty"
  // (at most 32 ids per lane; above that the ids of tile u just before its wait, see kAhead); the
  // shared-memory id ring and its cp.async groups are not used.
  // Protocol (per stage s two mbarriers, "full" with count 32 and "empty" with count W):
  //  - Fill k of stage s (tile u = s + k*STAGES): for k >= 1 the producer first waits "empty"
  //    for the completion of phase k-1 (parity (k-1)&1: all W consumer warps are done with tile
  //    u - STAGES); the first STAGES fills wait for nothing. Then every producer lane issues its
  //    copies and does cp.async.mbarrier.arrive.noinc on "full": its arrival happens once all its
  //    earlier cp.async completed, so phase k of "full" completes when all 32 lanes' chunks of the
  //    tile have landed (.noinc: the count 32 already includes these arrivals).
  //  - Consumer warp w at tile t waits "full" of stage t % STAGES with parity (t/STAGES)&1 (every
  //    lane: the acquire makes the cp.async data visible to it), computes, __syncwarp (all the
  //    warp's ldmatrix reads of the stage are done), then lane 0 arrives on "empty" (release).
  //  - Phases never alias: fill k+1 of stage s is issued only after "empty" phase k, i.e. after
  //    every consumer warp waited "full" phase k, so at most one phase of each barrier is
  //    outstanding and its parity identifies it; a consumer can only wait for fill k of a stage
  //    once it arrived on "empty" for fill k-1 (program order), so "empty" likewise.
  //  - Consumers arrive on "empty" for every tile of the range, also once the segment walk ended
  //    (`have` false), so the producer never waits forever; they wait "full" for those tiles too,
  //    so no fill of the ring is left unobserved.
  //  - Exit: the producer must not leave with cp.async in flight; after its last issue it waits
  //    for "full" of the last min(STAGES, ntiles) tiles (parity as the consumers; no later fill
  //    of those stages exists, so the phase is unambiguous). Every earlier fill completed before
  //    the producer could pass the "empty" wait of a later fill of its stage. Shared memory lives
  //    until all threads exit, so the consumers' reads need nothing more from the producer.
  //  - The CTA-wide barriers of the consumer path (segment finalize, the fused merge) are named
  //    barrier 1 over the NT consumer threads (csync): the producer never joins them and runs
  //    ahead by up to STAGES tiles. The only __syncthreads left is the one after the barriers'
  //    initialisation, before the roles split.
  const uint32_t full_bars = smem_u32(smem + BAR_OFF);
  const uint32_t empty_bars = full_bars + STAGES * 8;
  if (tid == 0) {
    for (int s = 0; s < STAGES; ++s) {
      mbar_init(full_bars + 8 * s, KA_HEADS ? 32 : 1);
      mbar_init(empty_bars + 8 * s, W);
    }
    mbar_fence_init();
  }
#if !KA_HEADS
  // Bulk copies cannot zero-fill: with no pages at all nothing is copied, so the stages are
  // zeroed once (finite, as cp.async's zero-fill; see "Loads, HEADS=0").
  if (p.num_pages <= 0)
    for (int i = tid; i < STAGES * STAGE_BYTES / 16; i += NTHREADS) reinterpret_cast<uint4*>(stages)[i] = make_uint4(0u, 0u, 0u, 0u);
#endif
  __syncthreads();  // barriers initialised before any arrival, wait or copy
#if !KA_HEADS
  if (warp == W) {
    // Loads, HEADS=0 (with PRODUCER=1, BULK=1). Every K and every V row of a tile is the whole
    // 2*HKV*D-byte row of a page (all kv heads, contiguous in the cache) and is ONE bulk copy
    // into the stage (row stride ROWB = 2*HKV*D + 16), completing on the stage's "full" mbarrier.
    // Lane j (< T) of the producer owns token j of every tile: it loads the page id of token j of
    // tile u+1 (a plain load, in flight while tile u waits for "empty" and issues) and issues the
    // K and the V copy of token j. Protocol as "Loads, PRODUCER=1" below but for "full": its count
    // is 1, the producer's lane 0 arrives once per fill with arrive.expect_tx(2*T*2*HKV*D) before
    // (__syncwarp) any lane issues a copy of that fill, so the phase completes once all 2*T rows
    // landed. Every row of a tile is copied, rows past the end of the range from page 0 (clamped):
    // bulk copies cannot zero-fill, and the V rows of masked tokens (P = 0) must be finite (0 * NaN
    // = NaN in P·V), so every fill brings exactly the expected bytes and no stage ever holds stale
    // or uninitialised rows. With no pages at all lane 0 arrives with 0 bytes and nothing is
    // copied (the stages were zeroed above). "empty" (count W) and the consumers are unchanged:
    // each consumer warp reads only its head's 2*D bytes of its TPW tokens of a stage, and the
    // refill of a stage waits for all W warps.
    // Why per-lane copies, not one elected lane: a bulk copy with per-lane operands is serialised
    // by the compiler over the active lanes (see "Loads, BULK=1"), which costs about what moving
    // each page id into a uniform register costs, and keeps the code short; either way a copy now
    // moves a 1 KB row, 4x the bytes of a HEADS=1 bulk copy, so the issue cost per byte falls
    // ~4x. (Not measured: no SASS tools on the machine that wrote this; the GPU run tells.)
    const bool no_pages = p.num_pages <= 0;
    constexpr uint32_t kRowBytes = 2u * HKV * D;
    const unsigned char* const kg = reinterpret_cast<const unsigned char*>(p.k);
    const unsigned char* const vg = reinterpret_cast<const unsigned char*>(p.v);
    auto page_of = [&](int u) {  // token `lane` of tile u: its page (0 past the range or past the last tile)
      const int pos = cs + u * T + lane;
      return u < ntiles && lane < T && pos < ce_load ? clamp_page(__ldg(p.indices + pos)) : 0;
    };
    int pg = page_of(0);
#pragma unroll 1
    for (int u = 0; u < ntiles; ++u) {
      const int nxt = page_of(u + 1);
      const int stage = u % STAGES;
      const uint32_t full = full_bars + stage * 8;
      if (u >= STAGES) mbar_wait(empty_bars + stage * 8, ((u / STAGES) - 1) & 1);
      if (lane == 0) mbar_arrive_expect_tx(full, no_pages ? 0u : 2u * T * kRowBytes);
      __syncwarp();  // the fill's bytes are expected before any of its copies is issued
      if (!no_pages && lane < T) {
        const uint32_t ks = smem_u32(stages + stage * STAGE_BYTES + lane * ROWB);
        const int64_t off = static_cast<int64_t>(pg) * kRowBytes;
        bulk_copy_g2s(ks, kg + off, kRowBytes, full);
        bulk_copy_g2s(ks + T * ROWB, vg + off, kRowBytes, full);
      }
      pg = nxt;
    }
    for (int u = imax(0, ntiles - STAGES); u < ntiles; ++u) mbar_wait(full_bars + (u % STAGES) * 8, (u / STAGES) & 1);
    return;
  }
#else
  if (warp == W) {
    constexpr int RPI = 32 / KCH;  // rows per warp instruction
    constexpr int NRP = T / RPI;   // K (and V) rows per lane per tile
    const int prow = lane / KCH, pcol = lane % KCH;
    const unsigned char* const kb = reinterpret_cast<const unsigned char*>(p.k + g * D + pcol * 8);
    const unsigned char* const vb = reinterpret_cast<const unsigned char*>(p.v + g * D + pcol * 8);
    // Pages of rows prow + RPI*i of tile u (0 past the range, also for u >= ntiles: no load). A
    // tile wholly inside the range (all but the last of a CTA; `full` is warp-uniform) takes the
    // branch without per-row predicates: its loads share one address (immediate offsets) and its
    // copies need no zero-fill test — per row one load, one clamp, two wide multiply-adds (K and V
    // sources) and the two cp.async.
    auto load_pages = [&](int u, int (&pg)[NRP], bool full) {
      const int* ids = p.indices + (cs + u * T + prow);
      const int left = ce_load - (cs + u * T + prow);
#pragma unroll
      for (int i = 0; i < NRP; ++i) pg[i] = full || RPI * i < left ? clamp_page(__ldg(ids + RPI * i)) : 0;
    };
    auto issue_rows = [&](uint32_t ks, const int (&pg)[NRP], int left, bool full) {
      const uint32_t vs = ks + T * ROWB;
#pragma unroll
      for (int i = 0; i < NRP; ++i) {
        const int bytes = full || RPI * i < left ? 16 : 0;
        const int64_t off = static_cast<int64_t>(pg[i]) * (HKV * D * 2);
        cp_async_16(ks + RPI * i * ROWB, kb + off, bytes);
        cp_async_16(vs + RPI * i * ROWB, vb + off, bytes);
      }
    };
    auto tile_full = [&](int u) { return ce_load - (cs + u * T) >= T; };  // u < ntiles: whole tile in range
    auto load_tile = [&](int u, int (&pg)[NRP]) {
      if (u < ntiles && tile_full(u)) load_pages(u, pg, true);
      else load_pages(u, pg, false);
    };
    // One tile. With kAhead the pages of tile u+1 go into `nxt` (in flight while tile u waits for
    // its stage and issues) and tile u's copies use `cur`; the loop alternates the two arrays
    // (unrolled by two) so that no register moves carry the pages from one tile to the next.
    // Without it (more than 32 rows per lane, e.g. TILE=128 at head_dim 128: two arrays of 64
    // pages made ptxas spill at WARPS=4) the pages of tile u are loaded into `cur` before the wait
    // on "empty", whose latency hides theirs once the ring is full (the producer's steady state).
    constexpr bool kAhead = NRP <= 32;
    auto step = [&](int u, int (&cur)[NRP], int (&nxt)[NRP]) {
      if (kAhead) load_tile(u + 1, nxt);
      else load_tile(u, cur);
      const int stage = u % STAGES;
      if (u >= STAGES) mbar_wait(empty_bars + stage * 8, ((u / STAGES) - 1) & 1);
      const uint32_t ks = smem_u32(stages + stage * STAGE_BYTES + prow * ROWB + pcol * 16);
      if (tile_full(u)) issue_rows(ks, cur, 0, true);
      else issue_rows(ks, cur, ce_load - (cs + u * T + prow), false);
      cp_async_mbar_arrive_noinc(full_bars + stage * 8);
    };
    int pa[NRP], pb[NRP];
    if (kAhead) load_tile(0, pa);
#pragma unroll 1
    for (int u = 0; u < ntiles; u += 2) {
      if (kAhead) {
        step(u, pa, pb);
        if (u + 1 < ntiles) step(u + 1, pb, pa);
      } else {
        step(u, pa, pa);
        if (u + 1 < ntiles) step(u + 1, pa, pa);
      }
    }
    for (int u = imax(0, ntiles - STAGES); u < ntiles; ++u) mbar_wait(full_bars + (u % STAGES) * 8, (u / STAGES) & 1);
    return;
  }
#endif  // KA_HEADS
#elif KA_BULK
  // Loads, BULK=1. Warp w fetches the K and V rows of its own tokens [w*TPW, +TPW) of a tile: one
  // elected lane issues the two bulk copies of 2*D bytes per token, the pages read from the id
  // ring at a warp-uniform address (the prologue's, read from global memory by lanes j < TPW, are
  // broadcast by shuffles). Why not one copy per thread: a bulk copy is a uniform-datapath
  // instruction on sm_90 (UBLKCP, operands in uniform registers); given per-lane operands the
  // compiler wraps it in a loop over the active lanes (~8 instructions per lane, 32 trips per
  // warp), while operands it can prove warp-uniform (the warp index and the tile broadcast by a
  // shuffle from lane 0, loads at uniform addresses, the kernel parameters) make each row about
  // 11 uniform instructions (id to a uniform register, clamp, two 64-bit addresses, and per copy
  // the destination, the barrier and the UBLKCP). Measured with CUDA 13.0 at WARPS=4, TILE=64:
  // ~238 SASS instructions per warp per tile from the loop barrier to the commit, against ~110
  // for BULK=0 (16 cp.async and their addresses): bulk copies of 256-byte rows do not issue
  // fewer instructions than 16-byte cp.async over 32 lanes (512 bytes each); what they change is
  // who does the work (one request per row for the copy engine, no per-thread LSU requests or
  // wait_group scoreboard) — the H200 decides.
  // Protocol: the mbarrier of each stage is initialised with count W; per fill, each warp's
  // elected lane does arrive.expect_tx(2*TPW*2*D) and then issues its 2*TPW copies, so a thread's
  // expect_tx precedes its own complete_tx in program order (the transaction count never goes
  // negative) and the phase completes once all W warps arrived and all 2*T rows landed. Every row
  // of a tile is copied, rows past the end of the range from a clamped page (the id ring holds 0
  // for them): bulk copies cannot zero-fill, and the V rows of masked tokens (P = 0) must be
  // finite (0 * NaN = NaN in P·V), so every fill brings exactly 2*T*2*D bytes and no stage ever
  // holds stale or uninitialised rows. With no pages at all (nothing valid to copy) the warps
  // arrive with a zero byte count and issue nothing, and the stages are zeroed once at the start
  // (finite, the same values as BULK=0's zero-fill).
  // Consumers: every thread waits on the barrier of tile t with parity (t / STAGES) & 1 (tile t is
  // fill number t / STAGES of stage t % STAGES).
  // Ordering. (1) Ids: the ids of tile u travel in the cp.async group committed with tile
  // u - (STAGES-1) (as with BULK=0; those groups now carry only ids); at iteration
  // t = u - (STAGES-1) every thread's cp.async.wait_group<STAGES-2> retires that group and the
  // __syncthreads makes the ids visible to the issuing warps. (2) Stage reuse: tile u goes to
  // stage (t-1) % STAGES, last read (ldmatrix) at iteration t-1, and every warp finished those
  // reads before the __syncthreads that opens iteration t, which precedes the issue. (3) Phases:
  // a fill of stage s is issued only after every thread waited for the previous fill (same
  // argument), so at most one phase per barrier is in flight and its parity identifies it.
  // (A warp reads and fills only its own rows, so the stages alone would not need the CTA barrier;
  // the ids do: those of warp w's tokens are brought by the cp.async of other threads' lanes.)
  // Copies still in flight when the tile loop ends early are waited for before the CTA exits.
  const uint32_t bars = smem_u32(smem + BAR_OFF);
  const bool no_pages = p.num_pages <= 0;
  const int wu = __shfl_sync(0xffffffffu, warp, 0);  // the warp index, provably warp-uniform
  const unsigned char* const kg = reinterpret_cast<const unsigned char*>(p.k + g * D);
  const unsigned char* const vg = reinterpret_cast<const unsigned char*>(p.v + g * D);
  // V row = K row + kv_delta (one uniform add per row instead of a second multiply-add)
  const uintptr_t kv_delta = reinterpret_cast<uintptr_t>(vg) - reinterpret_cast<uintptr_t>(kg);
  // Issues tile `tile_v` (the same in every lane); pages(stage, pg) gives the pages of the warp's
  // TPW tokens, the same in every lane (uniform), clamped into the cache.
  auto issue_bulk = [&](int tile_v, auto&& pages) {
    const int stage = __shfl_sync(0xffffffffu, tile_v, 0) % STAGES;
    const uint32_t bar = bars + stage * 8;
    const uint32_t ks = smem_u32(stages + stage * STAGE_BYTES + wu * TPW * ROWB);
    const uint32_t vs = ks + T * ROWB;
    if (elect_one()) {
      mbar_arrive_expect_tx(bar, no_pages ? 0u : 2u * TPW * 2 * D);
      if (!no_pages) {
        int pg[TPW];
        pages(stage, pg);
#pragma unroll
        for (int j = 0; j < TPW; ++j) {
          const unsigned char* src = kg + static_cast<int64_t>(pg[j]) * (HKV * D * 2);
          bulk_copy_g2s(ks + j * ROWB, src, 2 * D, bar);
          bulk_copy_g2s(vs + j * ROWB, reinterpret_cast<const void*>(reinterpret_cast<uintptr_t>(src) + kv_delta), 2 * D, bar);
        }
      }
    }
  };
  // Main loop: the pages from the id ring, read at a warp-uniform address 16 bytes at a time.
  auto ring_pages = [&](int stage, int (&pg)[TPW]) {
    const int4* slot = reinterpret_cast<const int4*>(idx_ring + stage * T + wu * TPW);
#pragma unroll
    for (int j = 0; j < TPW / 4; ++j) {
      const int4 q = slot[j];
      pg[4 * j] = clamp_page(q.x);
      pg[4 * j + 1] = clamp_page(q.y);
      pg[4 * j + 2] = clamp_page(q.z);
      pg[4 * j + 3] = clamp_page(q.w);
    }
  };
  if (tid == 0) {
    for (int s = 0; s < STAGES; ++s) mbar_init(bars + 8 * s, W);
    mbar_fence_init();
  }
  if (no_pages)
    for (int i = tid; i < STAGES * STAGE_BYTES / 16; i += NT) reinterpret_cast<uint4*>(stages)[i] = make_uint4(0u, 0u, 0u, 0u);
  __syncthreads();  // barriers initialised before any arrival or copy

  // Prologue (as below): the first STAGES-1 tiles in flight, their pages read directly first (lane
  // j < TPW reads token j's) and broadcast by shuffles.
  {
    int pre[STAGES - 1];
#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
      const int pos = cs + s * T + wu * TPW + lane;
      pre[s] = s < ntiles && lane < TPW && pos < ce ? clamp_page(__ldg(p.indices + pos)) : 0;
    }
#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
      int bc[TPW];
#pragma unroll
      for (int j = 0; j < TPW; ++j) bc[j] = __shfl_sync(0xffffffffu, pre[s], j);
      if (s < ntiles)
        issue_bulk(s, [&](int, int (&pg)[TPW]) {
#pragma unroll
          for (int j = 0; j < TPW; ++j) pg[j] = bc[j];
        });
      prefetch_idx(s + STAGES - 1);
      cp_async_commit();
    }
  }
#else
  // Prologue: the first STAGES-1 tiles in flight (their ids read directly, all before the first
  // issue so that those loads overlap), each group with the ids of the tile STAGES-1 later.
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
#endif

  // Segment walk state (uniform over the CTA).
  const bool first_chunk = seq_mode || unit == 0;
  const bool last_chunk = seq_mode || unit == p.nchunks - 1;
  const int b_limit = seq_mode ? unit + 1 : p.B;
  int cur_b = seq_mode ? unit : (unit == 0 ? 0 : count_le(ip, p.B, cs, lane));
  int seq_s = 0, seq_e = 0, seg_s = 0, seg_e = 0;

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
#pragma unroll
    for (int n = 0; n < NTD; ++n) o[n][0] = o[n][1] = o[n][2] = o[n][3] = 0.f;
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
    float mx0 = kNegInf, mx1 = kNegInf;
#pragma unroll
    for (int j = 0; j < NTT; ++j)
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const int pos = ts + tok0 + 8 * j + cq + e;
        const bool ok = pos >= lo && pos < hi;
        s[j][e] = ok ? s[j][e] * p.scale_log2 : kNegInf;
        s[j][2 + e] = ok ? s[j][2 + e] * p.scale_log2 : kNegInf;
        mx0 = fmaxf(mx0, s[j][e]);
        mx1 = fmaxf(mx1, s[j][2 + e]);
      }
    mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffffu, mx0, 1));
    mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffffu, mx0, 2));
    const float mn0 = fmaxf(m0, mx0);
    const float mu0 = mn0 == kNegInf ? 0.f : mn0;
    const float a0 = exp2f(m0 - mu0);
    m0 = mn0;
    float mu1 = 0.f, a1 = 1.f;
    if constexpr (kTwoRows) {
      mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffffu, mx1, 1));
      mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffffu, mx1, 2));
      const float mn1 = fmaxf(m1, mx1);
      mu1 = mn1 == kNegInf ? 0.f : mn1;
      a1 = exp2f(m1 - mu1);
      m1 = mn1;
    }
    // P = 2^(x - m) rounded to bf16, packed as the A operand of P·V; l sums the rounded values.
    uint32_t pk[NTT][2];
    float ls0 = 0.f, ls1 = 0.f, es0 = 0.f, es1 = 0.f;
#pragma unroll
    for (int j = 0; j < NTT; ++j) {
      const float p00 = exp2f(s[j][0] - mu0), p01 = exp2f(s[j][1] - mu0);
      pk[j][0] = pack_bf16(p00, p01);
      ls0 += bf_lo(pk[j][0]) + bf_hi(pk[j][0]);
      es0 += p00 + p01;
      if constexpr (kTwoRows) {
        const float p10 = exp2f(s[j][2] - mu1), p11 = exp2f(s[j][3] - mu1);
        pk[j][1] = pack_bf16(p10, p11);
        ls1 += bf_lo(pk[j][1]) + bf_hi(pk[j][1]);
        es1 += p10 + p11;
      } else {
        pk[j][1] = 0u;
      }
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
#pragma unroll
      for (int n2 = 0; n2 < NTD / 2; ++n2) {
        uint32_t b0, b1, b2, b3;
        ldsm_x4_t(base + n2 * 32, b0, b1, b2, b3);
        mma_bf16(o[2 * n2], pa, b0, b1);
        mma_bf16(o[2 * n2 + 1], pa, b2, b3);
      }
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
    const bool full = seq_mode || (seq_s >= cs && seq_e <= ce);
    const int slot = seg_s == cs ? 0 : 1;
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
        const int64_t orow = static_cast<int64_t>(cur_b) * HQ + gi * G + row;
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
      if (tid == 0) {
        const int n_b = (seq_e - 1) / p.chunk - seq_s / p.chunk + 1;
        // release: the CTA's partials before the count; acquire: the other CTAs' partials, read
        // below (ld.global.cg) by the consumers after the barrier
        const int old = atom_add_acq_rel_gpu(p.counters + cur_b * HKV + g, 1);
        *flag = old == n_b - 1;
      }
      csync();  // thread 0's *flag visible to every consumer
      if (*flag) {
        merge_group(p, cur_b, g, tid);
        if (tid == 0) p.counters[cur_b * HKV + g] = 0;  // ready for the next launch
      }
#else
      // Thread h counts head h (each head's CTAs of the sequence are the same ones, but the
      // counters stay per (sequence, kv head) as with HEADS=1, so the merge and its layout are one).
      if (tid < NH) {
        const int n_b = (seq_e - 1) / p.chunk - seq_s / p.chunk + 1;
        const int old = atom_add_acq_rel_gpu(p.counters + cur_b * HKV + tid, 1);  // as with HEADS=1
        flag[tid] = old == n_b - 1;
      }
      csync();  // the flags visible to every consumer
#pragma unroll 1
      for (int h = 0; h < NH; ++h)
        if (flag[h]) {
          merge_group(p, cur_b, h, tid);
          if (tid == 0) p.counters[cur_b * HKV + h] = 0;  // ready for the next launch
        }
#endif
    }
    csync();  // red_o / red_ml / flag are reused by the next segment
  };

  bool have = advance(cur_b);
  // The segments of tile t (its stage landed): each warp's share of every segment the tile
  // touches, finalizing the segments that end inside it; `have` turns false past the last one.
  auto walk_tile = [&](int t) {
    const int ts = cs + t * T, te = imin(ts + T, ce);
    const int stage = t % STAGES;
    while (true) {
      const int lo = imax(seg_s, ts), hi = imin(seg_e, te);
      if (lo < hi) warp_tile(stage, ts, lo, hi);
      if (seg_e > te) break;
      finalize();
      have = advance(cur_b + 1);
      if (!have) break;
    }
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
    {
      const int u = t + STAGES - 1;
#if KA_BULK
      if (u < ntiles) issue_bulk(u, ring_pages);
#else
      if (u < ntiles) {
        ring_idx(u, rows);
        issue(u % STAGES, rows);
      }
#endif
      prefetch_idx(u + STAGES - 1);
      cp_async_commit();
    }
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
inline State& state() { return g_state; }

inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

inline void launch(const ka::TensorArg& q, const ka::TensorArg& k_cache, const ka::TensorArg& v_cache,
                   const ka::TensorArg& kv_indptr, const ka::TensorArg& kv_indices, double sm_scale,
                   const ka::TensorArg& output, const ka::TensorArg& lse) {
  const int64_t B = q.size(0);
  if (B <= 0) return;
  const int64_t N = kv_indices.ndim >= 1 ? kv_indices.size(0) : 0;
  State& st = state();
  if (!st.init) {
    int dev = 0;
    cudaGetDevice(&dev);
    cudaDeviceGetAttribute(&st.sms, cudaDevAttrMultiProcessorCount, dev);
    cudaFuncSetAttribute(gqa_decode_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, SMEM_BYTES);
    int occ = 0;
    cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, gqa_decode_kernel, NTHREADS, SMEM_BYTES);
    st.occ = occ > 0 ? occ : 1;
    st.init = true;
  }
  Params p{};
  p.q = static_cast<const uint16_t*>(q.data);
  p.k = static_cast<const uint16_t*>(k_cache.data);
  p.v = static_cast<const uint16_t*>(v_cache.data);
  p.indptr = static_cast<const int*>(kv_indptr.data);
  p.indices = static_cast<const int*>(kv_indices.data);
  p.out = static_cast<uint16_t*>(output.data);
  p.lse = static_cast<float*>(lse.data);
  p.B = static_cast<int>(B);
  p.N = static_cast<int>(N);
  p.num_pages = static_cast<int>(k_cache.size(0));
  p.scale_log2 = static_cast<float>(sm_scale * 1.4426950408889634);

  const bool split = KA_SPLIT_TOKENS > 0;
  // CTAs per chunk (or per sequence): one per kv head (HEADS=1) or one for all of them (HEADS=0).
  constexpr int64_t kCtasPerUnit = HKV / NH;
  int64_t grid;
  if (!split) {
    p.chunk = 0;
    p.nchunks = static_cast<int>(B);
    grid = B * kCtasPerUnit;
  } else {
    const int64_t cap = ceil_div(KA_SPLIT_TOKENS, T) * T;
    const int64_t floor_ = KA_NO_SPLIT_BELOW > T ? ceil_div(KA_NO_SPLIT_BELOW, T) * T : T;
    const int64_t target = static_cast<int64_t>(KA_WAVES) * st.sms * st.occ;
    int64_t chunk = ceil_div(ceil_div(N * kCtasPerUnit, target), T) * T;
    chunk = chunk > cap ? cap : chunk;
    chunk = chunk < floor_ ? floor_ : chunk;
    p.chunk = static_cast<int>(chunk);
    p.nchunks = static_cast<int>(N > 0 ? ceil_div(N, chunk) : 1);
    grid = static_cast<int64_t>(p.nchunks) * kCtasPerUnit;
    if (p.nchunks > 1) {
      const size_t part = static_cast<size_t>(p.nchunks) * 2 * HKV * G;
      const size_t bytes = part * (D + 1) * sizeof(float) + 256;
      if (bytes > st.scratch_bytes) {
        if (st.scratch) cudaFree(st.scratch);
        st.scratch = nullptr;
        st.scratch_bytes = 0;
        if (cudaMalloc(&st.scratch, bytes) != cudaSuccess) return;
        st.scratch_bytes = bytes;
      }
      p.part_o = static_cast<float*>(st.scratch);
      p.part_lse = p.part_o + part * D;
      if (KA_FUSED_MERGE) {
        const size_t need = static_cast<size_t>(B) * HKV;
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
  KA_LAUNCH(gqa_decode_kernel, dim3(static_cast<unsigned>(grid)), dim3(NTHREADS), SMEM_BYTES, p);
  if (split && p.nchunks > 1 && !KA_FUSED_MERGE)
    KA_LAUNCH(gqa_merge_kernel, dim3(static_cast<unsigned>(B * HKV)), dim3(NT), 0, p);
}

}  // namespace
}  // namespace ka_gqa


void run(const ka::TensorArg& q, const ka::TensorArg& k_cache, const ka::TensorArg& v_cache,
         const ka::TensorArg& kv_indptr, const ka::TensorArg& kv_indices, double sm_scale,
         const ka::TensorArg& output, const ka::TensorArg& lse) {
  ka_gqa::launch(q, k_cache, v_cache, kv_indptr, kv_indices, sm_scale, output, lse);
}
