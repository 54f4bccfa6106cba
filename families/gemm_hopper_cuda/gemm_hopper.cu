// gemm_hopper.cu — KernelArc family gemm_hopper_cuda: C[M,N] = A[M,K] · B[N,K]ᵀ for fp16 or bf16
// (row-major A, B, C; fp32 accumulation; output rounded to nearest), native ABI
// run(A, B, C). KernelArc prepends `#define KA_<KNOB> v` lines (see family.json):
//
//   KA_BM, KA_BN  tile of the large-M path: BM rows of A (64: one consumer warpgroup, 128: two),
//                 BN rows of B (64, 128, 256 = the wgmma N of each warpgroup)
//   KA_BK         64 (one 128-byte swizzle row of fp16/bf16; the only value)
//   KA_STAGES     depth of the TMA → WGMMA shared-memory ring of the large-M path (2..6)
//   KA_SPLITK     most K slices per output tile: the host picks the fewest s ≤ SPLITK whose
//                 tiles·s CTAs fill ≥ 90% of the GPU's resident slots in their last wave (and
//                 2s ≤ #k-tiles; splitting only when tiles < #SMs); s > 1 accumulates fp32
//                 partials with float2 atomics in a cached, self-cleaning workspace, and the last
//                 CTA of a tile (per-tile arrival counter) converts and stores the tile.
//                 PERSIST = 1 instead splits only the partial last wave: whole waves of tiles over
//                 the co-resident CTAs (clusters) first, then the remaining tiles in the largest
//                 power-of-two number of slices s ≤ SPLITK that still fits one round (tail·s ≤
//                 #CTAs); with fewer tiles than CTAs that is the whole problem, as before but never
//                 more slices than one round holds
//   KA_RASTER     0: row-major tile order (CTAs that run together share an A tile),
//                 1: grouped by 8 tile-rows (L2 reuse of B as well)
//   KA_SMALLN     0, or the largest M served by the small-M path (8, 16, 32, 64, 128, 256): a
//                 swap-AB kernel computing Cᵀ = B·Aᵀ, 64·SMALL_WG rows of B per CTA as the wgmma M
//                 side and all of A as the wgmma N side (the narrowest compiled width 8, 16, ...,
//                 SMALLN that holds M), ring of up to 8 stages (as many as fit). The decode path: B
//                 is read once.
//   KA_SMALL_WG   consumer warpgroups of the small-M path (1 or 2; 2 needs SMALLN > 0): 2 doubles
//                 the rows of B per CTA, so A (re-read from L2 by every CTA along N) moves half as
//                 often, at half the CTAs before split-K (for M of 32..256 A's re-reads rival B)
//   KA_PERSIST    0: the large-M path launches one CTA per work unit (tile, or tile × K slice);
//                 1: a persistent kernel (hopper_gemm_persistent): min(#units, #SMs) CTAs loop over
//                 the units in RASTER order, the producer streams the next unit's k-tiles while the
//                 consumers run the epilogue, and the epilogue stages 64×64 output chunks in shared
//                 memory (two 8 KB buffers per consumer warpgroup, BM·256 bytes more shared memory)
//                 and writes them with TMA stores that drain under the next tile's MMAs (direct
//                 stores when C is not 16-byte aligned or N % 8 != 0). Split-K units run in the
//                 same loop. The small-M path is unchanged.
//                 2 (BM = 128): the persistent kernel in ping-pong: each consumer warpgroup computes
//                 its own 64×BN tile (64-row A tiles, a stage holds one warpgroup's k-tile) and the
//                 two run their mainloops in turn, so one warpgroup's epilogue runs under the other's
//                 MMAs instead of idling the tensor cores (CUTLASS's "ping-pong" schedule); no
//                 split-K. A 64×256 unit moves (64+256)/(64·256) bytes per MAC from L2, 1.67× a
//                 128×256 tile's: CLUSTER = 2 (B multicast) brings it back to 1.0×.
//   KA_EPI_BUFS   2 or 4 (PERSIST >= 1): 64×64 output staging buffers per consumer warpgroup of the
//                 TMA-store epilogue (8 KB each); a chunk waits only for the store EPI_BUFS chunks
//                 before it to have read its buffer
//   KA_CLUSTER    1, or 2 or 4 (needs PERSIST >= 1): clusters of CL CTAs along M compute the tiles
//                 (CL·i + r, j), r < CL; each loads its own A tile and 1/CL of the common B tile,
//                 multicast to all of them (1/CL of the L2 → SM traffic of B; for skinny N, B is the
//                 larger part of it). The grid is sized by cudaOccupancyMaxActiveClusters.
//
// Structure (sm_90a): per CTA, 1 or 2 consumer warpgroups + 1 producer warp (warp-specialised).
// The producer's elected lane issues cp.async.bulk.tensor (TMA, 128B swizzle, zero fill out of
// bounds) into stage s and arms full[s] with expect_tx; consumers wait full[s], issue 4 wgmma
// m64nNk16 (both operands K-major from shared memory, descriptors with 128B swizzle, SBO 1024),
// keep one wgmma group in flight and release stage s-1 to the producer through empty[s-1] (one
// arrive per consumer warp). Epilogue: fp32 → fp16/bf16 with bounds checks on M (any M ≥ 1) and N.
// PERSIST = 1: the ring's stage and mbarrier parity come from a k-tile counter that both sides carry
// across units; consumers release every stage (the last of a unit after wgmma.wait_group 0). With
// CLUSTER > 1, empty[s] counts the consumer warps of all CTAs of the cluster (local and remote
// arrives), full[s] expects the whole stage (own A + all B parts, the others written by the peers'
// multicasts), and cluster barriers after the mbarrier init and before exit keep the peers' arrives
// and writes inside the lifetime of the CTA they target.
//
// Epilogue hook: define KA_EPILOGUE(v, m, n) (float v = the fp32 sum of C[m][n], int64 m, n) before
// this file to fuse an elementwise op (bias, activation, residual, scale); identity by default.
//
// Element types: both fp16 and bf16 are compiled and chosen at run time from A's dtype, unless
// KA_GEMM_DTYPE is defined (1: fp16 only, 2: bf16 only) to halve the compile time.
//
// Other paths, chosen at run time: not sm_90a (e.g. sm_80, sm_89, or an sm_90 build without the
// 'a' features): an mma.sync m16n8k16 + ldmatrix + cp.async kernel (64×64×32 tiles, 2 stages);
// pointers not 16-byte aligned, K not a multiple of 8 or N odd: a plain fp32 kernel. Every size is
// read from the arguments (N and K need not match the definition). Launches on the default stream.
// Under KA_EMULATE (tests/test_gemm_hopper.cpp) the source builds with g++ against the attention
// families' CPU emulator (threads as fibers; mbarriers, TMA tensor loads and stores, wgmma and named
// barriers, clusters with multicast and remote arrivals emulated and checked), with software
// fp16/bf16 conversions.
#ifdef KA_EMULATE
#include KA_EMULATE
#else
#include <cuda.h>  // CUtensorMap and its enums only: cuTensorMapEncodeTiled is fetched at run time
                   // through cudaGetDriverEntryPointByVersion, so no -lcuda is needed
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#endif
#include <kernelarc/abi.h>

#include <cstdint>
#include <mutex>
#include <type_traits>

#if !defined(KA_BM) || !defined(KA_BN) || !defined(KA_BK) || !defined(KA_STAGES) || !defined(KA_SPLITK) || \
    !defined(KA_RASTER) || !defined(KA_SMALLN)
#error "gemm_hopper_cuda: KA_BM, KA_BN, KA_BK, KA_STAGES, KA_SPLITK, KA_RASTER and KA_SMALLN must be defined (KernelArc does this)"
#endif
#ifndef KA_PERSIST
#define KA_PERSIST 0  // knobs added later default to the behaviour before them
#endif
#ifndef KA_SMALL_WG
#define KA_SMALL_WG 1
#endif
#ifndef KA_EPI_BUFS
#define KA_EPI_BUFS 2
#endif
#ifndef KA_CLUSTER
#define KA_CLUSTER 1
#endif
#ifndef KA_DIAG
// Timing diagnostics of the persistent kernel, never a knob (its outputs are wrong; see
// bench/regress/queue.sh): 1 skips the epilogue (no conversion, no store), 2 also the wgmmas (the
// consumers release each stage as soon as it is full: the TMA ring's own rate); 3 (outputs right)
// stores C from registers (the unaligned path) instead of through shared memory and TMA.
#define KA_DIAG 0
#endif
#ifndef KA_EPILOGUE
#define KA_EPILOGUE(v, m, n) (v)
#endif
#ifndef KA_GEMM_DTYPE
#define KA_GEMM_DTYPE 0  // 0: both, 1: fp16, 2: bf16
#endif

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900 && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define KA_GEMM_WGMMA 1
#else
#define KA_GEMM_WGMMA 0
#endif
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
#define KA_GEMM_MMA_SYNC 1
#else
#define KA_GEMM_MMA_SYNC 0
#endif
#ifdef KA_EMULATE
#undef KA_GEMM_WGMMA
#define KA_GEMM_WGMMA 1  // the emulator runs the sm_90a kernels (not the mma.sync fallback)
// fp16 / bf16 as 16-bit values, converted by the emulator's round-to-nearest-even functions.
struct __half {
  uint16_t x;
};
struct __nv_bfloat16 {
  uint16_t x;
};
struct __half2 {
  __half a, b;
};
struct __nv_bfloat162 {
  __nv_bfloat16 a, b;
};
inline __half __float2half_rn(float f) { return {ka_emu_ops::f2h(f)}; }
inline float __half2float(__half h) { return ka_emu_ops::hf(h.x); }
inline __nv_bfloat16 __float2bfloat16_rn(float f) { return {ka_emu_ops::f2bf(f)}; }
inline float __bfloat162float(__nv_bfloat16 h) { return ka_emu_ops::bf(h.x); }
inline __half2 __floats2half2_rn(float a, float b) { return {__float2half_rn(a), __float2half_rn(b)}; }
inline __nv_bfloat162 __floats2bfloat162_rn(float a, float b) { return {__float2bfloat16_rn(a), __float2bfloat16_rn(b)}; }
using CUtensorMap = emu::TensorMap2D;
using std::max;  // CUDA's integer min / max
using std::min;
#define __grid_constant__
#define __restrict__
#define KA_DYN_SMEM(name) uint8_t* name = emu::smem_base()
// A static __shared__ int: the 16 bytes past the dynamic shared memory (the emulator keeps them).
#define KA_SHARED_INT(name) int& name = *reinterpret_cast<int*>(emu::cta()->smem.data() + emu::cta()->smem.size() - 16)
#define KA_LAUNCH(kernel, grid, block, smem, ...) emu::launch(dim3(grid), dim3(block), smem, [=] { kernel(__VA_ARGS__); })
#else
#define KA_DYN_SMEM(name) extern __shared__ uint8_t name[]
#define KA_SHARED_INT(name) __shared__ int name
#define KA_LAUNCH(kernel, grid, block, smem, ...) kernel<<<grid, block, smem>>>(__VA_ARGS__)
#endif

namespace ka_gemm_hopper {

constexpr int kBM = KA_BM, kBN = KA_BN, kBK = KA_BK, kStages = KA_STAGES, kSplitK = KA_SPLITK, kRaster = KA_RASTER,
              kSmallN = KA_SMALLN, kSmallWG = KA_SMALL_WG, kPersist = KA_PERSIST, kCluster = KA_CLUSTER,
              kEpiBufs = KA_EPI_BUFS;
constexpr int kRasterGroup = 8;   // tile-rows per group for RASTER=1
static_assert(kBM == 64 || kBM == 128, "BM must be 64 or 128");
static_assert(kBN == 64 || kBN == 128 || kBN == 256, "BN must be 64, 128 or 256");
static_assert(kBK == 64, "BK must be 64 (one 128-byte swizzle row)");
static_assert(kStages >= 2 && kStages <= 8, "STAGES must be in 2..8");
static_assert(kSplitK >= 1 && kSplitK <= 64, "SPLITK must be in 1..64");
static_assert(kSmallN == 0 || kSmallN == 8 || kSmallN == 16 || kSmallN == 32 || kSmallN == 64 || kSmallN == 128 ||
                  kSmallN == 256,
              "SMALLN: 0, 8, 16, 32, 64, 128 or 256");

// Shared memory of one kernel configuration: TP rows of X and TQ rows of Y per stage, 128 bytes per
// row (64 K elements), plus 1024 bytes of alignment slack and the barriers.
constexpr int smem_bytes(int tp, int tq, int stages) { return 1024 + stages * (tp + tq) * 128 + 16 * stages + 64; }
static_assert(kPersist == 0 || kPersist == 1 || kPersist == 2, "PERSIST must be 0, 1 or 2");
static_assert(kPersist != 2 || kBM == 128, "PERSIST = 2 (ping-pong) needs BM = 128: two consumer warpgroups");
static_assert(kCluster == 1 || kCluster == 2 || kCluster == 4, "CLUSTER must be 1, 2 or 4");
static_assert(kCluster == 1 || kPersist >= 1, "CLUSTER > 1 needs PERSIST >= 1");
static_assert(kEpiBufs == 2 || kEpiBufs == 4, "EPI_BUFS must be 2 or 4");
// The persistent kernel adds EPI_BUFS 64×64 output staging buffers (8 KB each) per consumer
// warpgroup for its TMA-store epilogue: TP · 128 · EPI_BUFS bytes.
constexpr int smem_bytes_persist(int tp, int tq, int stages) { return smem_bytes(tp, tq, stages) + tp * 128 * kEpiBufs; }
// PERSIST = 2: a stage holds one warpgroup's unit (64 rows of A); EPI_BUFS staging buffers for each
// of the two warpgroups.
constexpr int smem_bytes_pingpong(int tq, int stages) { return smem_bytes(64, tq, stages) + 128 * 128 * kEpiBufs; }
static_assert(kPersist == 2 || smem_bytes(kBM, kBN, kStages) <= 232448,
              "STAGES * (BM + BN) * 128 exceeds the 227 KB of shared memory");
static_assert(kPersist != 1 || smem_bytes_persist(kBM, kBN, kStages) <= 232448,
              "PERSIST = 1: STAGES * (BM + BN) * 128 + BM * 256 exceeds the 227 KB of shared memory");
static_assert(kPersist != 2 || smem_bytes_pingpong(kBN, kStages) <= 232448,
              "PERSIST = 2: STAGES * (64 + BN) * 128 + 32768 exceeds the 227 KB of shared memory");
static_assert(kSmallWG == 1 || kSmallWG == 2, "SMALL_WG must be 1 or 2");
// Ring depth of the small-M (swap-AB) path of width w: 8 stages, fewer where they do not fit.
constexpr int small_stages(int w) {
  return (225000 / ((64 * kSmallWG + w) * 128)) < 8 ? (225000 / ((64 * kSmallWG + w) * 128)) : 8;
}
static_assert(smem_bytes(64 * kSmallWG, 256, small_stages(256)) <= 232448, "small-M ring too deep");

// ------------------------------------------------------------------------------------------------
// PTX helpers (sm_90a)
// ------------------------------------------------------------------------------------------------
#ifdef KA_EMULATE
using ka_emu_ops::smem_u32;
inline void mbar_init(uint32_t bar, uint32_t count) { ka_emu_ops::mbar_init(bar, static_cast<int>(count)); }
inline void mbar_arrive_expect_tx(uint32_t bar, uint32_t bytes) { ka_emu_ops::mbar_arrive_expect_tx(bar, bytes); }
inline void mbar_arrive(uint32_t bar) { ka_emu_ops::mbar_arrive(bar); }
inline void mbar_wait(uint32_t bar, uint32_t parity) { ka_emu_ops::mbar_try_wait(bar, parity); }
inline void fence_mbarrier_init() {}
inline void tma_load_2d(uint32_t dst, const CUtensorMap* map, int c0, int c1, uint32_t bar) {
  ka_emu_ops::tma_load_2d(dst, *map, c0, c1, bar);
}
inline void wgmma_fence() { ka_emu_ops::wgmma_fence(); }
inline void wgmma_commit() { ka_emu_ops::wgmma_commit(); }
template <int N>
inline void wgmma_wait() {
  ka_emu_ops::wgmma_wait(N);
}
inline void fence_operand(float&) {}
inline void named_barrier(int id, int threads) { emu::named_sync(id, threads); }
inline void named_arrive(int id, int threads) { emu::named_arrive(id, threads); }
inline void tma_store_2d(const CUtensorMap* map, uint32_t src, int c0, int c1) { ka_emu_ops::tma_store_2d(*map, src, c0, c1); }
inline void bulk_commit() { ka_emu_ops::bulk_commit(); }
template <int N>
inline void bulk_wait_read() {
  ka_emu_ops::bulk_wait(N);
}
inline void bulk_wait_all() { ka_emu_ops::bulk_wait(0); }
inline void fence_proxy_async_smem() {}
inline void prefetch_tmap(const CUtensorMap*) {}
inline void st_shared_u32(uint32_t addr, uint32_t v) { ka_emu_ops::st_shared_u32(addr, v); }
inline void tma_load_2d_mc(uint32_t dst, const CUtensorMap* map, int c0, int c1, uint32_t bar, uint16_t mask) {
  ka_emu_ops::tma_load_2d_multicast(dst, *map, c0, c1, bar, mask);
}
inline void mbar_arrive_cluster(uint32_t bar, uint32_t rank) { ka_emu_ops::mbar_arrive_remote(bar, rank); }
inline uint32_t cluster_ctarank() { return ka_emu_ops::cluster_ctarank(); }
inline void cluster_sync() { ka_emu_ops::cluster_sync(); }
#else
__device__ __forceinline__ uint32_t smem_u32(const void* p) { return static_cast<uint32_t>(__cvta_generic_to_shared(p)); }
__device__ __forceinline__ void fence_mbarrier_init() { asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory"); }
__device__ __forceinline__ void st_shared_u32(uint32_t addr, uint32_t v) {
  asm volatile("st.shared.b32 [%0], %1;" ::"r"(addr), "r"(v) : "memory");
}
#endif

#if KA_GEMM_WGMMA && !defined(KA_EMULATE)
__device__ __forceinline__ void mbar_init(uint32_t bar, uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(bar), "r"(count) : "memory");
}
__device__ __forceinline__ void mbar_arrive_expect_tx(uint32_t bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes) : "memory");
}
__device__ __forceinline__ void mbar_arrive(uint32_t bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(bar) : "memory");
}
// Waits until the phase of the given parity has completed (a fresh barrier counts its phase
// "parity 1" as complete, so the producer's first pass over the ring does not block).
__device__ __forceinline__ void mbar_wait(uint32_t bar, uint32_t parity) {
  uint32_t done = 0;
  while (!done) {
    asm volatile(
        "{\n.reg .pred p;\n"
        "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
        "selp.u32 %0, 1, 0, p;\n}\n"
        : "=r"(done)
        : "r"(bar), "r"(parity)
        : "memory");
  }
}
// 2-D tiled TMA load: box at (c0 = K element, c1 = row) into shared memory, completing on `bar`.
__device__ __forceinline__ void tma_load_2d(uint32_t dst, const CUtensorMap* map, int c0, int c1, uint32_t bar) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];" ::"r"(dst),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(c0), "r"(c1), "r"(bar)
      : "memory");
}
__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }
template <int N>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(N) : "memory");
}
__device__ __forceinline__ void fence_operand(float& r) { asm volatile("" : "+f"(r)::"memory"); }
__device__ __forceinline__ void named_barrier(int id, int threads) {
  asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(threads) : "memory");
}
__device__ __forceinline__ void named_arrive(int id, int threads) {
  asm volatile("bar.arrive %0, %1;" ::"r"(id), "r"(threads) : "memory");
}
// Multicast variant (CLUSTER = 2): the box lands at the same shared-memory offset in every CTA of
// `mask` and completes `bytes` on the mbarrier at the same offset in each of them.
__device__ __forceinline__ void tma_load_2d_mc(uint32_t dst, const CUtensorMap* map, int c0, int c1, uint32_t bar,
                                               uint16_t mask) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster"
      " [%0], [%1, {%2, %3}], [%4], %5;" ::"r"(dst),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(c0), "r"(c1), "r"(bar), "h"(mask)
      : "memory");
}
// 2-D tiled TMA store of a shared-memory box to (c0 = column, c1 = row); rows/columns outside the
// tensor are not written. Bulk async-group bookkeeping: commit, wait until read / until done.
__device__ __forceinline__ void tma_store_2d(const CUtensorMap* map, uint32_t src, int c0, int c1) {
  asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%1, %2}], [%3];" ::"l"(
                   reinterpret_cast<uint64_t>(map)),
               "r"(c0), "r"(c1), "r"(src)
               : "memory");
}
__device__ __forceinline__ void bulk_commit() { asm volatile("cp.async.bulk.commit_group;" ::: "memory"); }
// The shared-memory source of every bulk store group but the newest N has been read.
template <int N>
__device__ __forceinline__ void bulk_wait_read() {
  asm volatile("cp.async.bulk.wait_group.read %0;" ::"n"(N) : "memory");
}
__device__ __forceinline__ void bulk_wait_all() { asm volatile("cp.async.bulk.wait_group 0;" ::: "memory"); }
// Generic-proxy writes to shared memory made visible to the async proxy (before a TMA store).
__device__ __forceinline__ void fence_proxy_async_smem() { asm volatile("fence.proxy.async.shared::cta;" ::: "memory"); }
// Arrive on the mbarrier at the same offset in CTA `rank` of the cluster (may be this CTA), with the
// instruction's default semantics (release at CTA scope), as CUTLASS's TMA pipeline releases a stage
// to the CTAs that multicast into it; the producers wait on these barriers with the plain mbar_wait.
// What is ordered is the consumers' wgmma reads (retired by wgmma.wait_group before the arrival)
// before the next multicast write, which the barrier's phase alone gives. (Until 2026-12-05 this was
// release.cluster, and the producers waited with acquire.cluster: every CLUSTER = 2 point then took
// ~1 us per k-tile whatever its tile, 0.34-0.62x cuBLAS, bench/HISTORY.md.)
__device__ __forceinline__ void mbar_arrive_cluster(uint32_t bar, uint32_t rank) {
  asm volatile(
      "{\n.reg .b32 ra;\n"
      "mapa.shared::cluster.u32 ra, %0, %1;\n"
      "mbarrier.arrive.shared::cluster.b64 _, [ra];\n}\n" ::"r"(bar),
      "r"(rank)
      : "memory");
}
__device__ __forceinline__ uint32_t cluster_ctarank() {
  uint32_t r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
  return r;
}
// Full cluster barrier (every thread of every CTA of the cluster), release/acquire.
__device__ __forceinline__ void cluster_sync() {
  asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;" ::: "memory");
}
__device__ __forceinline__ void prefetch_tmap(const CUtensorMap* map) {
  asm volatile("prefetch.tensormap [%0];" ::"l"(reinterpret_cast<uint64_t>(map)) : "memory");
}
// wgmma.mma_async m64nNk16, fp32 accumulate, A and B from shared memory, both K-major (no
// transpose), scale-d = 1 (accumulators start at zero). d holds N/2 floats per thread.
template <int N, typename T>
struct Wgmma;
template <> struct Wgmma<8, __half> {
  static __device__ __forceinline__ void mma(float* d, uint64_t da, uint64_t db) {
    asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %6, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {"
      "%0, %1, %2, %3"
      "}, %4, %5, p, 1, 1, 0, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "l"(da), "l"(db), "r"(1));
  }
};
template <> struct Wgmma<8, __nv_bfloat16> {
  static __device__ __forceinline__ void mma(float* d, uint64_t da, uint64_t db) {
    asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %6, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n8k16.f32.bf16.bf16 {"
      "%0, %1, %2, %3"
      "}, %4, %5, p, 1, 1, 0, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "l"(da), "l"(db), "r"(1));
  }
};
template <> struct Wgmma<16, __half> {
  static __device__ __forceinline__ void mma(float* d, uint64_t da, uint64_t db) {
    asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %10, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n16k16.f32.f16.f16 {"
      "%0, %1, %2, %3, %4, %5, %6, %7"
      "}, %8, %9, p, 1, 1, 0, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7])
      : "l"(da), "l"(db), "r"(1));
  }
};
template <> struct Wgmma<16, __nv_bfloat16> {
  static __device__ __forceinline__ void mma(float* d, uint64_t da, uint64_t db) {
    asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %10, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n16k16.f32.bf16.bf16 {"
      "%0, %1, %2, %3, %4, %5, %6, %7"
      "}, %8, %9, p, 1, 1, 0, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7])
      : "l"(da), "l"(db), "r"(1));
  }
};
template <> struct Wgmma<32, __half> {
  static __device__ __forceinline__ void mma(float* d, uint64_t da, uint64_t db) {
    asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %18, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n32k16.f32.f16.f16 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15"
      "}, %16, %17, p, 1, 1, 0, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15])
      : "l"(da), "l"(db), "r"(1));
  }
};
template <> struct Wgmma<32, __nv_bfloat16> {
  static __device__ __forceinline__ void mma(float* d, uint64_t da, uint64_t db) {
    asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %18, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n32k16.f32.bf16.bf16 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15"
      "}, %16, %17, p, 1, 1, 0, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15])
      : "l"(da), "l"(db), "r"(1));
  }
};
template <> struct Wgmma<64, __half> {
  static __device__ __forceinline__ void mma(float* d, uint64_t da, uint64_t db) {
    asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15,"
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31"
      "}, %32, %33, p, 1, 1, 0, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
      : "l"(da), "l"(db), "r"(1));
  }
};
template <> struct Wgmma<64, __nv_bfloat16> {
  static __device__ __forceinline__ void mma(float* d, uint64_t da, uint64_t db) {
    asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15,"
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31"
      "}, %32, %33, p, 1, 1, 0, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
      : "l"(da), "l"(db), "r"(1));
  }
};
template <> struct Wgmma<128, __half> {
  static __device__ __forceinline__ void mma(float* d, uint64_t da, uint64_t db) {
    asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15,"
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31,"
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47,"
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
      "}, %64, %65, p, 1, 1, 0, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
        "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
        "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
        "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
      : "l"(da), "l"(db), "r"(1));
  }
};
template <> struct Wgmma<128, __nv_bfloat16> {
  static __device__ __forceinline__ void mma(float* d, uint64_t da, uint64_t db) {
    asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15,"
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31,"
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47,"
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
      "}, %64, %65, p, 1, 1, 0, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
        "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
        "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
        "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
      : "l"(da), "l"(db), "r"(1));
  }
};
template <> struct Wgmma<256, __half> {
  static __device__ __forceinline__ void mma(float* d, uint64_t da, uint64_t db) {
    asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %130, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15,"
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31,"
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47,"
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63,"
      "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79,"
      "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95,"
      "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111,"
      "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127"
      "}, %128, %129, p, 1, 1, 0, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
        "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
        "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
        "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]),
        "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]),
        "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]),
        "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]),
        "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]),
        "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]),
        "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]),
        "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]),
        "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
      : "l"(da), "l"(db), "r"(1));
  }
};
template <> struct Wgmma<256, __nv_bfloat16> {
  static __device__ __forceinline__ void mma(float* d, uint64_t da, uint64_t db) {
    asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %130, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15,"
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31,"
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47,"
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63,"
      "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79,"
      "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95,"
      "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111,"
      "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127"
      "}, %128, %129, p, 1, 1, 0, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
        "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
        "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
        "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]),
        "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]),
        "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]),
        "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]),
        "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]),
        "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]),
        "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]),
        "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]),
        "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
      : "l"(da), "l"(db), "r"(1));
  }
};
#endif  // KA_GEMM_WGMMA
#ifdef KA_EMULATE
template <int N, typename T>
struct Wgmma {
  static void mma(float* d, uint64_t da, uint64_t db) {
    ka_emu_ops::WgmmaIn in{N, d, false, {0, 0, 0, 0}, da, db, 0, 0, 1};
    in.f16 = std::is_same<T, __half>::value ? 1 : 0;
    ka_emu_ops::wgmma_issue(in);
  }
};
#endif

// wgmma shared-memory descriptor of a K-major operand in the 128B-swizzle layout written by TMA:
// rows of 128 bytes, 8-row swizzle atoms of 1024 bytes stacked along M/N (stride byte offset 1024;
// the leading byte offset is unused for swizzled K-major layouts and set to 1 as CUTLASS does).
// Advancing K by 16 elements inside the 128-byte row adds 32 bytes to the start address.
__device__ __forceinline__ uint64_t make_desc(uint32_t saddr) {
  return static_cast<uint64_t>((saddr & 0x3FFFFu) >> 4) | (static_cast<uint64_t>(1) << 16) |
         (static_cast<uint64_t>(1024 >> 4) << 32) | (static_cast<uint64_t>(1) << 62);
}

template <typename T> __device__ __forceinline__ T from_float(float v);
template <> __device__ __forceinline__ __half from_float<__half>(float v) { return __float2half_rn(v); }
template <> __device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }
template <typename T> __device__ __forceinline__ float to_float(T v);
template <> __device__ __forceinline__ float to_float<__half>(__half v) { return __half2float(v); }
template <> __device__ __forceinline__ float to_float<__nv_bfloat16>(__nv_bfloat16 v) { return __bfloat162float(v); }
// Two adjacent outputs C[m][n], C[m][n+1] as one 4-byte store.
template <typename T> __device__ __forceinline__ void store2(T* p, float a, float b);
template <> __device__ __forceinline__ void store2<__half>(__half* p, float a, float b) {
  *reinterpret_cast<__half2*>(p) = __floats2half2_rn(a, b);
}
template <> __device__ __forceinline__ void store2<__nv_bfloat16>(__nv_bfloat16* p, float a, float b) {
  *reinterpret_cast<__nv_bfloat162*>(p) = __floats2bfloat162_rn(a, b);
}

// ------------------------------------------------------------------------------------------------
// The sm_90a kernel. D[P,Q] = X[P,K]·Y[Q,K]ᵀ on tiles of TP = 64·WG rows of X and TQ rows of Y.
// SWAP = false: X = A, Y = B, D = C (P = M, Q = N). SWAP = true: X = B, Y = A, D = Cᵀ (P = N, Q = M).
// Grid: x = output tile (tilesP·tilesQ, in RASTER order), y = K slice. Block: WG·128 consumer
// threads (warps 0..4·WG-1) then one producer warp.
// ------------------------------------------------------------------------------------------------
template <typename T, int WG, int TQ, int STAGES, bool SWAP>
__global__ void __launch_bounds__(WG * 128 + 32, 1)
    hopper_gemm_kernel(const __grid_constant__ CUtensorMap tmX, const __grid_constant__ CUtensorMap tmY, T* __restrict__ C,
                       float* __restrict__ ws, unsigned* __restrict__ counters, int M, int N, int K, int tilesP,
                       int tilesQ, int splits, int raster) {
#if KA_GEMM_WGMMA
  constexpr int TP = 64 * WG;
  constexpr int X_BYTES = TP * 128, Y_BYTES = TQ * 128;
  constexpr uint32_t STAGE_TX = X_BYTES + Y_BYTES;
  KA_DYN_SMEM(smem_raw);
  KA_SHARED_INT(s_last);
  // 128B swizzle: every tile starts on a 1024-byte boundary (X_BYTES, Y_BYTES are multiples of 1024).
  const uint32_t base = (smem_u32(smem_raw) + 1023u) & ~1023u;
  const uint32_t sX = base, sY = base + STAGES * X_BYTES, bars = sY + STAGES * Y_BYTES;
  auto full = [&](int s) { return bars + 8u * s; };
  auto empty = [&](int s) { return bars + 8u * (STAGES + s); };

  // Tile of this CTA.
  const int t = blockIdx.x;
  int tp, tq;
  if (raster == 0) {
    tp = t / tilesQ;
    tq = t - tp * tilesQ;
  } else {
    const int group = t / (kRasterGroup * tilesQ);
    const int first = group * kRasterGroup;
    const int rows = min(kRasterGroup, tilesP - first);
    const int within = t - group * kRasterGroup * tilesQ;
    tp = first + within % rows;
    tq = within / rows;
  }
  const int kTiles = (K + 63) / 64;
  const int z = blockIdx.y;
  const int kb = static_cast<int>(static_cast<long long>(z) * kTiles / splits);
  const int ke = static_cast<int>(static_cast<long long>(z + 1) * kTiles / splits);
  const int nk = ke - kb;

  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  if (threadIdx.x == 0) {
    for (int s = 0; s < STAGES; ++s) {
      mbar_init(full(s), 1);
      mbar_init(empty(s), WG * 4);  // one arrive per consumer warp
    }
    fence_mbarrier_init();
  }
  __syncthreads();

  if (warp == WG * 4) {  // producer warp: one lane issues every TMA load
    if (lane == 0) {
      for (int i = 0; i < nk; ++i) {
        const int s = i % STAGES;
        const uint32_t ph = (i / STAGES) & 1;
        mbar_wait(empty(s), ph ^ 1u);
        mbar_arrive_expect_tx(full(s), STAGE_TX);
        const int kc = (kb + i) * 64;
        tma_load_2d(sX + s * X_BYTES, &tmX, kc, tp * TP, full(s));
        tma_load_2d(sY + s * Y_BYTES, &tmY, kc, tq * TQ, full(s));
      }
    }
    return;
  }

  // Consumers: warpgroup g owns rows [64g, 64g+64) of the X tile.
  const int g = warp >> 2;
  float acc[TQ / 2];
#pragma unroll
  for (int i = 0; i < TQ / 2; ++i) acc[i] = 0.f;
  for (int i = 0; i < nk; ++i) {
    const int s = i % STAGES;
    const uint32_t ph = (i / STAGES) & 1;
    mbar_wait(full(s), ph);
    __syncwarp();  // wgmma.* are .sync.aligned: the warp must be converged after the spin loop
    const uint32_t xa = sX + s * X_BYTES + g * (64 * 128);
    const uint32_t ya = sY + s * Y_BYTES;
    wgmma_fence();
#pragma unroll
    for (int k = 0; k < 4; ++k) Wgmma<TQ, T>::mma(acc, make_desc(xa + 32 * k), make_desc(ya + 32 * k));
    wgmma_commit();
    wgmma_wait<1>();  // the group of stage i-1 is done: give that stage back
    __syncwarp();
    if (i > 0 && lane == 0) mbar_arrive(empty((i - 1) % STAGES));
  }
  wgmma_wait<0>();
#pragma unroll
  for (int i = 0; i < TQ / 2; ++i) fence_operand(acc[i]);

  // Accumulator layout of wgmma m64nN (per warpgroup): warp w of the group holds rows 16w..16w+15;
  // acc[4j + 2h + e] is row 16w + lane/4 + 8h, column 8j + 2(lane%4) + e.
  const int wr = warp & 3;
  const int pl0 = g * 64 + wr * 16 + (lane >> 2);
  const int ql0 = (lane & 3) * 2;

  if (splits > 1) {
    // Partial sums into this tile's slice of the workspace (tile-local layout TP×TQ, so every float2
    // is aligned whatever M and N are); the last CTA of the tile to arrive finishes it.
    float* wt = ws + static_cast<size_t>(t) * TP * TQ;
#pragma unroll
    for (int j = 0; j < TQ / 8; ++j)
#pragma unroll
      for (int h = 0; h < 2; ++h)
        atomicAdd(reinterpret_cast<float2*>(wt + (pl0 + 8 * h) * TQ + j * 8 + ql0),
                  make_float2(acc[4 * j + 2 * h], acc[4 * j + 2 * h + 1]));
    __threadfence();
    named_barrier(1, WG * 128);
    if (threadIdx.x == 0) s_last = atomicAdd(&counters[t], 1u) == static_cast<unsigned>(splits - 1);
    named_barrier(1, WG * 128);
    if (!s_last) return;
    __threadfence();
#pragma unroll
    for (int j = 0; j < TQ / 8; ++j)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        float2* p = reinterpret_cast<float2*>(wt + (pl0 + 8 * h) * TQ + j * 8 + ql0);
        const float2 v = __ldcg(p);
        __stcg(p, make_float2(0.f, 0.f));  // leave the workspace zeroed for the next call
        acc[4 * j + 2 * h] = v.x;
        acc[4 * j + 2 * h + 1] = v.y;
      }
    if (threadIdx.x == 0) counters[t] = 0u;
  }

  const int p0 = tp * TP + pl0, q0 = tq * TQ + ql0;
#pragma unroll
  for (int j = 0; j < TQ / 8; ++j)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int p = p0 + 8 * h, q = q0 + 8 * j;
      const float v0 = acc[4 * j + 2 * h], v1 = acc[4 * j + 2 * h + 1];
      if (!SWAP) {  // (p, q) = (m, n), (m, n+1); N is even, so n < N implies n + 1 < N
        if (p < M && q < N) {
          const int64_t m = p, n = q;
          store2<T>(C + m * N + n, KA_EPILOGUE(v0, m, n), KA_EPILOGUE(v1, m, n + 1));
        }
      } else {  // (p, q) = (n, m), (n, m+1)
        if (p < N) {
          const int64_t n = p, m = q;
          if (q < M) C[m * N + n] = from_float<T>(KA_EPILOGUE(v0, m, n));
          if (q + 1 < M) C[(m + 1) * N + n] = from_float<T>(KA_EPILOGUE(v1, m + 1, n));
        }
      }
    }
#endif  // KA_GEMM_WGMMA
}

// ------------------------------------------------------------------------------------------------
// Persistent sm_90a kernel (PERSIST = 1, large-M path only): C[M,N] = A·Bᵀ, TP = 64·WG rows of A and
// TQ rows of B per tile. Grid = #co-resident CTAs; CTA b takes work units b, b + G, b + 2G, ...
// (G = gridDim.x / CL clusters; a unit is one output tile, or, for the tiles of the partial last wave,
// one K slice of it (split-K); units in the RASTER order of the non-persistent kernel, so the CTAs
// running together cover the same tiles as one of its waves). The producer lane runs through the k-tiles of all its units without pause
// (ring stage and mbarrier phase come from one running k-tile counter shared by producer and
// consumers), so the next tile's loads proceed while the consumers run the epilogue.
// Epilogue (tma_store != 0: C 16-byte aligned, N % 8 == 0): each consumer warpgroup writes its
// 64×TQ block as 64×64 chunks into one of EPI_BUFS 8 KB staging buffers (128B-swizzled rows, bank-
// conflict free) and one thread issues a TMA store per chunk; the store drains while the next tile's
// MMAs run (a buffer is rewritten only after its previous store has been read: bulk wait_group.read).
// The TMA unit serves the stores behind the loads the producer has queued for the next tile (up to
// STAGES stages): with 2 buffers the third chunk of a tile waits for that queue; with EPI_BUFS = 4
// (= TQ / 64 at BN 256) no chunk waits within a tile.
// Otherwise direct 4-byte stores as in the non-persistent kernel.
// CL = 2 or 4 (CLUSTER): the CL CTAs of a cluster take the tiles (CL·pg + rank, tq) of one unit; each
// CTA loads its own A tile and 1/CL of the shared B tile (TQ/CL rows), multicast to all of them (the
// L2 → SM traffic of B divided by CL). A stage is refilled only when the consumers of every CTA of the
// cluster have released it: empty[s] counts the consumer warps of all CL CTAs (each warp arrives on
// every CTA's barrier). A CTA whose tile row is past the last (tilesP % CL != 0) still loads and
// computes (zero-filled A) but stores nothing.
// ------------------------------------------------------------------------------------------------
template <typename T, int WG, int TQ, int STAGES, int CL, bool PP>
__global__ void __launch_bounds__(WG * 128 + 32, 1)
    hopper_gemm_persistent(const __grid_constant__ CUtensorMap tmX, const __grid_constant__ CUtensorMap tmY,
                           const __grid_constant__ CUtensorMap tmC, T* __restrict__ C, float* __restrict__ ws,
                           unsigned* __restrict__ counters, int M, int N, int K, int tilesP, int tilesQ,
                           int full_units, int tail, int tsplit, int raster, int tma_store) {
#if KA_GEMM_WGMMA
  static_assert(!PP || WG == 2, "PERSIST = 2: two consumer warpgroups");
  constexpr int TP = PP ? 64 : 64 * WG;  // rows of A per unit (and per stage)
  constexpr int X_BYTES = TP * 128, Y_BYTES = TQ * 128, YH_BYTES = Y_BYTES / CL;
  constexpr uint32_t STAGE_TX = X_BYTES + Y_BYTES;  // own A tile + both halves of the B tile
  constexpr int E_BYTES = 64 * 128;                  // one 64×64 staging buffer
  static_assert(TQ % (8 * CL) == 0, "B tile halves must be whole 8-row swizzle atoms");
  KA_DYN_SMEM(smem_raw);
  KA_SHARED_INT(s_last);
  const uint32_t base = (smem_u32(smem_raw) + 1023u) & ~1023u;
  const uint32_t sX = base, sY = base + STAGES * X_BYTES, sE = sY + STAGES * Y_BYTES,
                 bars = sE + WG * kEpiBufs * E_BYTES;
  auto full = [&](int s) { return bars + 8u * s; };
  auto empty = [&](int s) { return bars + 8u * (STAGES + s); };

  const uint32_t rank = CL > 1 ? cluster_ctarank() : 0u;
  const int cid = CL > 1 ? static_cast<int>(blockIdx.x) / CL : static_cast<int>(blockIdx.x);
  const int ncl = static_cast<int>(gridDim.x) / CL;
  const int tilesPg = (tilesP + CL - 1) / CL;  // tile rows per cluster-row group
  const int units = full_units + tail * tsplit;
  const int kTiles = (K + 63) / 64;
  // Unit u → tile (tp, tq) of this CTA, its k-tile range [kb, kb + nk) and the number of K slices ns
  // of that tile (> 1: split-K, workspace slot wi). Units [0, full_units) are whole tiles (the first
  // full_units tile groups in RASTER order, whole waves of the grid); the remaining `tail` tile groups
  // are cut into tsplit K slices each, unit full_units + z·tail + i being slice z of group full_units + i.
  auto decode = [&](int u, int& tp, int& tq, int& kb, int& nk, int& ns, int& wi) {
    int t, z;
    if (u < full_units) {
      t = u;
      z = 0;
      ns = 1;
    } else {
      const int v = u - full_units;
      z = v / tail;
      t = full_units + (v - z * tail);
      ns = tsplit;
    }
    wi = (t - full_units) * CL + static_cast<int>(rank);
    int pg;
    if (raster == 0) {
      pg = t / tilesQ;
      tq = t - pg * tilesQ;
    } else {
      const int group = t / (kRasterGroup * tilesQ);
      const int first = group * kRasterGroup;
      const int rows = min(kRasterGroup, tilesPg - first);
      const int within = t - group * kRasterGroup * tilesQ;
      pg = first + within % rows;
      tq = within / rows;
    }
    tp = pg * CL + static_cast<int>(rank);
    kb = static_cast<int>(static_cast<long long>(z) * kTiles / ns);
    nk = static_cast<int>(static_cast<long long>(z + 1) * kTiles / ns) - kb;
  };

  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  if (threadIdx.x == 0) {
    for (int s = 0; s < STAGES; ++s) {
      mbar_init(full(s), 1);
      mbar_init(empty(s), CL * (PP ? 4 : WG * 4));  // one arrive per consuming warp of every CTA of the cluster
    }
    fence_mbarrier_init();
  }
  if (CL > 1) cluster_sync();  // the peer's barriers exist before any multicast or remote arrive
  else __syncthreads();

  if (warp == WG * 4) {  // producer warp: lane 0 issues every TMA load
    if (lane == 0) {
      prefetch_tmap(&tmX);
      prefetch_tmap(&tmY);
      uint32_t it = 0;
      for (int u = cid; u < units; u += ncl) {
        int tp, tq, kb, nk, ns, wi;
        decode(u, tp, tq, kb, nk, ns, wi);
        for (int i = 0; i < nk; ++i, ++it) {
          const int s = static_cast<int>(it % STAGES);
          const uint32_t ph = (it / STAGES) & 1u;
          mbar_wait(empty(s), ph ^ 1u);  // CL > 1: released by the consumers of every CTA of the cluster
          mbar_arrive_expect_tx(full(s), STAGE_TX);
          const int kc = (kb + i) * 64;
          tma_load_2d(sX + s * X_BYTES, &tmX, kc, tp * TP, full(s));
          if (CL == 1) {
            tma_load_2d(sY + s * Y_BYTES, &tmY, kc, tq * TQ, full(s));
          } else {
            tma_load_2d_mc(sY + s * Y_BYTES + rank * YH_BYTES, &tmY, kc, tq * TQ + static_cast<int>(rank) * (TQ / CL),
                           full(s), static_cast<uint16_t>((1u << CL) - 1u));
          }
        }
      }
    }
    __syncwarp();
  } else {
    // Consumers: warpgroup g owns rows [64g, 64g+64) of the tile.
    const int g = warp >> 2, wr = warp & 3;
    const int pl0 = (PP ? 0 : g * 64) + wr * 16 + (lane >> 2);
    const int ql0 = (lane & 3) * 2;
    const bool leader = (threadIdx.x & 127) == 0;  // issues this warpgroup's TMA stores
    uint32_t it = 0, chunk = 0;
    // PP: warpgroup g runs its CTA's units g, g + 2, ... (the ring holds them in the CTA's order, all
    // with kTiles k-tiles: no split), its mainloops in turn with the other's (barrier 4 + g: the other
    // warpgroup arrives once it has issued its last wgmma), so one's epilogue runs under the other's
    // MMAs. Warpgroup 1 arrives first, so warpgroup 0 starts; one arrival is left at exit.
    if (PP && g == 1) named_arrive(4, 256);
    float acc[TQ / 2];
    auto release = [&](int s) {
      if (CL == 1) {
        mbar_arrive(empty(s));
      } else {
#pragma unroll
        for (int r = 0; r < CL; ++r) mbar_arrive_cluster(empty(s), static_cast<uint32_t>(r));
      }
    };
    for (int u = cid + (PP ? g * ncl : 0); u < units; u += (PP ? 2 : 1) * ncl) {
      int tp, tq, kb, nk, ns, wi;
      decode(u, tp, tq, kb, nk, ns, wi);
      if (PP) {
        it = static_cast<uint32_t>((u - cid) / ncl) * static_cast<uint32_t>(kTiles);
        named_barrier(4 + g, 256);
      }
#pragma unroll
      for (int i = 0; i < TQ / 2; ++i) acc[i] = 0.f;
      int prev = 0;
      for (int i = 0; i < nk; ++i, ++it) {
        const int s = static_cast<int>(it % STAGES);
        const uint32_t ph = (it / STAGES) & 1u;
        mbar_wait(full(s), ph);
        __syncwarp();  // wgmma.* are .sync.aligned: the warp must be converged after the spin loop
        if (KA_DIAG == 2) {
          if (lane == 0) release(s);
          continue;
        }
        const uint32_t xa = sX + s * X_BYTES + (PP ? 0 : g * (64 * 128));
        const uint32_t ya = sY + s * Y_BYTES;
        wgmma_fence();
#pragma unroll
        for (int k = 0; k < 4; ++k) Wgmma<TQ, T>::mma(acc, make_desc(xa + 32 * k), make_desc(ya + 32 * k));
        wgmma_commit();
        wgmma_wait<1>();  // the group of the previous k-tile is done: give its stage back
        __syncwarp();
        if (i > 0 && lane == 0) release(prev);
        prev = s;
      }
      if (PP) named_arrive(4 + (g ^ 1), 256);  // the other warpgroup's turn: our MMAs are issued
      wgmma_wait<0>();
#pragma unroll
      for (int i = 0; i < TQ / 2; ++i) fence_operand(acc[i]);
      __syncwarp();
      if (KA_DIAG != 2 && nk > 0 && lane == 0) release(prev);  // the last stage of this unit (the ring carries on)
      if (tp >= tilesP) continue;  // CL > 1, tilesP % CL != 0: a padding tile row, nothing to store
      if (KA_DIAG == 1 || KA_DIAG == 2) {
        if (M < 0) {  // never: keeps the accumulators (and so the wgmmas) alive for ptxas
#pragma unroll
          for (int i = 0; i < TQ / 2; ++i) ws[threadIdx.x * (TQ / 2) + i] = acc[i];
        }
        continue;
      }

      if (ns > 1) {
        const int t = wi;  // < CL · tail ≤ #SMs: one workspace tile and counter per split tile
        float* wt = ws + static_cast<size_t>(t) * TP * TQ;
#pragma unroll
        for (int j = 0; j < TQ / 8; ++j)
#pragma unroll
          for (int h = 0; h < 2; ++h)
            atomicAdd(reinterpret_cast<float2*>(wt + (pl0 + 8 * h) * TQ + j * 8 + ql0),
                      make_float2(acc[4 * j + 2 * h], acc[4 * j + 2 * h + 1]));
        __threadfence();
        named_barrier(1, WG * 128);
        if (threadIdx.x == 0) s_last = atomicAdd(&counters[t], 1u) == static_cast<unsigned>(ns - 1);
        named_barrier(1, WG * 128);
        if (!s_last) continue;
        __threadfence();
#pragma unroll
        for (int j = 0; j < TQ / 8; ++j)
#pragma unroll
          for (int h = 0; h < 2; ++h) {
            float2* p = reinterpret_cast<float2*>(wt + (pl0 + 8 * h) * TQ + j * 8 + ql0);
            const float2 v = __ldcg(p);
            __stcg(p, make_float2(0.f, 0.f));  // leave the workspace zeroed for the next call
            acc[4 * j + 2 * h] = v.x;
            acc[4 * j + 2 * h + 1] = v.y;
          }
        if (threadIdx.x == 0) counters[t] = 0u;
      }

      const int p0 = tp * TP + pl0, q0 = tq * TQ + ql0;
      if (tma_store) {
        // Row r of a staging buffer holds 64 outputs (128 bytes) with 16-byte chunk c at c ^ (r & 7)
        // (the 128B swizzle of tmC); this thread's rows have r & 7 == lane / 4.
        const int rsw = lane >> 2;
#pragma unroll
        for (int c = 0; c < TQ / 64; ++c, ++chunk) {
          const uint32_t buf = sE + static_cast<uint32_t>(g * kEpiBufs + chunk % kEpiBufs) * E_BYTES;
          if (leader) bulk_wait_read<kEpiBufs - 1>();  // the store that last used this buffer has read it
          named_barrier(2 + g, 128);
#pragma unroll
          for (int jj = 0; jj < 8; ++jj) {
            const int j = 8 * c + jj;
#pragma unroll
            for (int h = 0; h < 2; ++h) {
              const int rl = wr * 16 + (lane >> 2) + 8 * h;  // row within the warpgroup's 64
              float v0 = acc[4 * j + 2 * h], v1 = acc[4 * j + 2 * h + 1];
              const int64_t m = p0 + 8 * h, n = q0 + 8 * j;
              if (m < M && n < N) {
                v0 = KA_EPILOGUE(v0, m, n);
                v1 = KA_EPILOGUE(v1, m, n + 1);
              }
              uint32_t bits;
              if (std::is_same<T, __half>::value) {
                __half2 hv = __floats2half2_rn(v0, v1);
                bits = *reinterpret_cast<uint32_t*>(&hv);
              } else {
                __nv_bfloat162 bv = __floats2bfloat162_rn(v0, v1);
                bits = *reinterpret_cast<uint32_t*>(&bv);
              }
              const uint32_t addr = buf + rl * 128 + ((jj ^ rsw) << 4) + (lane & 3) * 4;
              st_shared_u32(addr, bits);
            }
          }
          fence_proxy_async_smem();
          named_barrier(2 + g, 128);
          if (leader) {
            tma_store_2d(&tmC, buf, tq * TQ + 64 * c, tp * TP + (PP ? 0 : 64 * g));
            bulk_commit();
          }
        }
      } else {
#pragma unroll
        for (int j = 0; j < TQ / 8; ++j)
#pragma unroll
          for (int h = 0; h < 2; ++h) {
            const int p = p0 + 8 * h, q = q0 + 8 * j;
            if (p < M && q < N) {  // N is even, so n < N implies n + 1 < N
              const int64_t m = p, n = q;
              store2<T>(C + m * N + n, KA_EPILOGUE(acc[4 * j + 2 * h], m, n),
                        KA_EPILOGUE(acc[4 * j + 2 * h + 1], m, n + 1));
            }
          }
      }
    }
    if (leader) bulk_wait_all();  // staging buffers stay valid until the last store has read them
    __syncwarp();
  }
  // CL > 1: no CTA leaves while a peer may still arrive on its barriers or multicast into it.
  if (CL > 1) cluster_sync();
#endif  // KA_GEMM_WGMMA
}

// ------------------------------------------------------------------------------------------------
// Pre-Hopper path (sm_80+): mma.sync m16n8k16, ldmatrix, cp.async double buffer. 64×64 tile per
// CTA, 4 warps (2×2) of 32×32, BK = 32. Needs K % 8 == 0, 16-byte aligned A and B, N even.
// ------------------------------------------------------------------------------------------------
template <typename T>
__global__ void __launch_bounds__(128) sm80_gemm_kernel(const T* __restrict__ A, const T* __restrict__ B,
                                                         T* __restrict__ C, int M, int N, int K) {
#if KA_GEMM_MMA_SYNC
  constexpr int LD = 40;  // 32 + 8 elements: 80-byte rows, ldmatrix rows stay 16-byte aligned
  __shared__ __align__(128) T sA[2][64 * LD];
  __shared__ __align__(128) T sB[2][64 * LD];
  const int m0 = blockIdx.y * 64, n0 = blockIdx.x * 64;
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  const int wm = warp >> 1, wn = warp & 1;
  float acc[2][4][4];
#pragma unroll
  for (int a = 0; a < 2; ++a)
#pragma unroll
    for (int b = 0; b < 4; ++b)
#pragma unroll
      for (int c = 0; c < 4; ++c) acc[a][b][c] = 0.f;
  const int kTiles = (K + 31) / 32;

  auto load = [&](int stage, int kt) {
#pragma unroll
    for (int c = 0; c < 2; ++c) {
      const int idx = tid + c * 128, row = idx >> 2, chunk = idx & 3;
      const int k = kt * 32 + chunk * 8;
      {
        const int gm = m0 + row;
        const bool ok = gm < M && k < K;
        const T* src = ok ? A + static_cast<int64_t>(gm) * K + k : A;
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(smem_u32(&sA[stage][row * LD + chunk * 8])),
                     "l"(src), "r"(ok ? 16 : 0)
                     : "memory");
      }
      {
        const int gn = n0 + row;
        const bool ok = gn < N && k < K;
        const T* src = ok ? B + static_cast<int64_t>(gn) * K + k : B;
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(smem_u32(&sB[stage][row * LD + chunk * 8])),
                     "l"(src), "r"(ok ? 16 : 0)
                     : "memory");
      }
    }
    asm volatile("cp.async.commit_group;" ::: "memory");
  };

  load(0, 0);
  for (int kt = 0; kt < kTiles; ++kt) {
    if (kt + 1 < kTiles) load((kt + 1) & 1, kt + 1);
    else asm volatile("cp.async.commit_group;" ::: "memory");
    asm volatile("cp.async.wait_group 1;" ::: "memory");
    __syncthreads();
    const T* a_s = sA[kt & 1];
    const T* b_s = sB[kt & 1];
#pragma unroll
    for (int kk = 0; kk < 2; ++kk) {
      uint32_t af[2][4], bf[4][2];
#pragma unroll
      for (int mi = 0; mi < 2; ++mi) {
        const int row = wm * 32 + mi * 16 + (lane & 15), col = kk * 16 + (lane >> 4) * 8;
        asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
                     : "=r"(af[mi][0]), "=r"(af[mi][1]), "=r"(af[mi][2]), "=r"(af[mi][3])
                     : "r"(smem_u32(a_s + row * LD + col)));
      }
#pragma unroll
      for (int nj = 0; nj < 2; ++nj) {
        const int n = wn * 32 + nj * 16 + (lane & 7) + (lane >> 4) * 8, col = kk * 16 + ((lane >> 3) & 1) * 8;
        asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
                     : "=r"(bf[2 * nj][0]), "=r"(bf[2 * nj][1]), "=r"(bf[2 * nj + 1][0]), "=r"(bf[2 * nj + 1][1])
                     : "r"(smem_u32(b_s + n * LD + col)));
      }
#pragma unroll
      for (int mi = 0; mi < 2; ++mi)
#pragma unroll
        for (int ni = 0; ni < 4; ++ni) {
          if constexpr (sizeof(T) == 2 && std::is_same<T, __half>::value) {
            asm volatile(
                "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
                "{%0, %1, %2, %3};"
                : "+f"(acc[mi][ni][0]), "+f"(acc[mi][ni][1]), "+f"(acc[mi][ni][2]), "+f"(acc[mi][ni][3])
                : "r"(af[mi][0]), "r"(af[mi][1]), "r"(af[mi][2]), "r"(af[mi][3]), "r"(bf[ni][0]), "r"(bf[ni][1]));
          } else {
            asm volatile(
                "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
                "{%0, %1, %2, %3};"
                : "+f"(acc[mi][ni][0]), "+f"(acc[mi][ni][1]), "+f"(acc[mi][ni][2]), "+f"(acc[mi][ni][3])
                : "r"(af[mi][0]), "r"(af[mi][1]), "r"(af[mi][2]), "r"(af[mi][3]), "r"(bf[ni][0]), "r"(bf[ni][1]));
          }
        }
    }
    __syncthreads();
  }
  asm volatile("cp.async.wait_group 0;" ::: "memory");
#pragma unroll
  for (int mi = 0; mi < 2; ++mi)
#pragma unroll
    for (int ni = 0; ni < 4; ++ni)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int64_t m = m0 + wm * 32 + mi * 16 + (lane >> 2) + 8 * h;
        const int64_t n = n0 + wn * 32 + ni * 8 + (lane & 3) * 2;
        if (m < M && n < N)
          store2<T>(C + m * N + n, KA_EPILOGUE(acc[mi][ni][2 * h], m, n), KA_EPILOGUE(acc[mi][ni][2 * h + 1], m, n + 1));
      }
#endif  // KA_GEMM_MMA_SYNC
}

// Any shape, any alignment: one thread per output, fp32 accumulation. Slow, always correct.
template <typename T>
__global__ void simple_gemm_kernel(const T* __restrict__ A, const T* __restrict__ B, T* __restrict__ C, int M, int N,
                                   int K) {
  const int64_t n = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t m = blockIdx.y;
  if (n >= N || m >= M) return;
  float acc = 0.f;
  for (int64_t k = 0; k < K; ++k) acc = fmaf(to_float<T>(A[m * K + k]), to_float<T>(B[n * K + k]), acc);
  C[m * N + n] = from_float<T>(KA_EPILOGUE(acc, m, n));
}

// 2: the sm_90a path was compiled into this image, 1: the mma.sync path, 0: neither.
__global__ void arch_probe_kernel(int* out) {
#if KA_GEMM_WGMMA
  *out = 2;
#elif KA_GEMM_MMA_SYNC
  *out = 1;
#else
  *out = 0;
#endif
}

// ------------------------------------------------------------------------------------------------
// Host side
// ------------------------------------------------------------------------------------------------
struct DeviceState {
  bool init = false;
  int sms = 0, path = 0, smem_optin = 0;
  float* ws = nullptr;          // split-K partial sums, kept all-zero between launches
  unsigned* counters = nullptr; // per-tile arrival counters, kept zero between launches
  size_t ws_floats = 0;
  int n_counters = 0;
  bool ws_failed = false;
};
constexpr int kMaxDevices = 64;
std::mutex g_mu;
DeviceState g_dev[kMaxDevices];

DeviceState& device_state(int dev) {
  DeviceState& d = g_dev[dev];
  if (d.init) return d;
  cudaDeviceGetAttribute(&d.sms, cudaDevAttrMultiProcessorCount, dev);
  cudaDeviceGetAttribute(&d.smem_optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev);
#ifdef KA_EMULATE
  d.path = 2;  // the emulated sm_90a kernels
#else
  int* p = nullptr;
  d.path = 0;
  if (cudaMalloc(&p, sizeof(int)) == cudaSuccess) {
    arch_probe_kernel<<<1, 1>>>(p);
    int h = 0;
    if (cudaMemcpy(&h, p, sizeof(int), cudaMemcpyDeviceToHost) == cudaSuccess) d.path = h;
    cudaFree(p);
  }
#endif
  (void)cudaGetLastError();
  d.init = true;
  return d;
}

// The workspace for split-K: at most #SMs tiles are ever split (splits > 1 only when tiles < #SMs;
// PERSIST = 1: only the tail of < #co-resident-clusters tile groups, CL tiles each, slot (i·CL + rank)),
// so #SMs · (largest tile) floats and #SMs counters, allocated once, zeroed once.
bool ensure_workspace(DeviceState& d, size_t tile_floats) {
  const size_t need = static_cast<size_t>(d.sms) * tile_floats;
  if (d.ws && d.ws_floats >= need && d.n_counters >= d.sms) return true;
  if (d.ws_failed) return false;
  if (d.ws) {
    cudaDeviceSynchronize();
    cudaFree(d.ws);
    cudaFree(d.counters);
    d.ws = nullptr;
    d.counters = nullptr;
  }
  if (cudaMalloc(&d.ws, need * sizeof(float)) != cudaSuccess ||
      cudaMalloc(&d.counters, static_cast<size_t>(d.sms) * sizeof(unsigned)) != cudaSuccess ||
      cudaMemset(d.ws, 0, need * sizeof(float)) != cudaSuccess ||
      cudaMemset(d.counters, 0, static_cast<size_t>(d.sms) * sizeof(unsigned)) != cudaSuccess ||
      cudaDeviceSynchronize() != cudaSuccess) {
    (void)cudaGetLastError();
    d.ws_failed = true;
    d.ws = nullptr;
    d.counters = nullptr;
    return false;
  }
  d.ws_floats = need;
  d.n_counters = d.sms;
  return true;
}

#ifdef KA_EMULATE
template <typename T>
bool make_map(CUtensorMap* map, const void* ptr, int rows, int K, int box_rows) {
  map->base = static_cast<const unsigned char*>(ptr);
  map->dims[0] = K;
  map->dims[1] = rows;
  map->row_bytes = static_cast<int64_t>(K) * 2;
  map->box[0] = 64;
  map->box[1] = box_rows;
  map->elem = 2;
  map->swizzle = 128;
  return true;
}
#else
// cuTensorMapEncodeTiled's signature (CUDA 12.0 ABI), as cudaTypedefs.h spells it.
using EncodeTiledFn = CUresult (*)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*, const cuuint64_t*,
                                   const cuuint64_t*, const cuuint32_t*, const cuuint32_t*, CUtensorMapInterleave,
                                   CUtensorMapSwizzle, CUtensorMapL2promotion, CUtensorMapFloatOOBfill);
EncodeTiledFn encode_fn() {
  static EncodeTiledFn fn = [] {
    void* p = nullptr;
    cudaDriverEntryPointQueryResult q{};
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000, cudaEnableDefault, &q) != cudaSuccess ||
        q != cudaDriverEntryPointSuccess)
      p = nullptr;
    (void)cudaGetLastError();
    return reinterpret_cast<EncodeTiledFn>(p);
  }();
  return fn;
}

// A row-major [rows, K] operand as a 2-D tensor map: boxes of 64 K-elements × box_rows rows, 128B
// swizzle, zero fill outside the tensor (rows ≥ `rows`, columns ≥ K).
template <typename T>
bool make_map(CUtensorMap* map, const void* ptr, int rows, int K, int box_rows) {
  auto fn = encode_fn();
  if (!fn) return false;
  const cuuint64_t dims[2] = {static_cast<cuuint64_t>(K), static_cast<cuuint64_t>(rows)};
  const cuuint64_t strides[1] = {static_cast<cuuint64_t>(K) * sizeof(T)};
  const cuuint32_t box[2] = {64, static_cast<cuuint32_t>(box_rows)};
  const cuuint32_t estr[2] = {1, 1};
  const CUtensorMapDataType dt =
      std::is_same<T, __half>::value ? CU_TENSOR_MAP_DATA_TYPE_FLOAT16 : CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
  return fn(map, dt, 2, const_cast<void*>(ptr), dims, strides, box, estr, CU_TENSOR_MAP_INTERLEAVE_NONE,
            CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}
#endif

// K slices per tile when the tiles alone leave SMs idle: the fewest (≤ SPLITK, ≥ 2 k-tiles each)
// whose CTAs keep ≥ 90% of the resident slots (#SMs × CTAs per SM) busy in their last wave, else
// the count that keeps the most busy. (The smallest power of two with tiles · s ≥ #SMs, the rule
// before, gave 64 tiles 4 slices, two waves of one CTA per SM where 2 slices fill one.)
int choose_splits(int tiles, int k_tiles, int slots) {
  int best = 1;
  double best_busy = 0;
  for (int s = 1; s <= kSplitK && (s == 1 || 2 * s <= k_tiles); ++s) {
    const long long ctas = static_cast<long long>(tiles) * s, waves = (ctas + slots - 1) / slots;
    const double busy = static_cast<double>(ctas) / static_cast<double>(waves * slots);
    if (busy >= 0.9) return s;
    if (busy > best_busy + 1e-9) {
      best_busy = busy;
      best = s;
    }
  }
  return best;
}

// One launch of hopper_gemm_kernel<T, WG, TQ, STAGES, SWAP>; false when it cannot run (the caller
// then takes another path).
template <typename T, int WG, int TQ, int STAGES, bool SWAP>
bool launch_hopper(DeviceState& d, int dev, const T* A, const T* B, T* C, int M, int N, int K) {
  constexpr int TP = 64 * WG;
  constexpr int smem = smem_bytes(TP, TQ, STAGES);
  if (smem > d.smem_optin) return false;
  auto kernel = hopper_gemm_kernel<T, WG, TQ, STAGES, SWAP>;
  static bool attr_set[kMaxDevices] = {};
  if (!attr_set[dev]) {
    if (cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem) != cudaSuccess) {
      (void)cudaGetLastError();
      return false;
    }
    attr_set[dev] = true;
  }
  const int P = SWAP ? N : M, Q = SWAP ? M : N;
  const T* X = SWAP ? B : A;
  const T* Y = SWAP ? A : B;
  CUtensorMap mx, my;
  if (!make_map<T>(&mx, X, P, K, TP) || !make_map<T>(&my, Y, Q, K, TQ)) return false;
  const int tilesP = (P + TP - 1) / TP, tilesQ = (Q + TQ - 1) / TQ;
  const long long tiles = static_cast<long long>(tilesP) * tilesQ;
  if (tiles > 0x7fffffffLL) return false;
  const int k_tiles = (K + 63) / 64;
  int per_sm = 1;  // resident CTAs per SM (the small rings of narrow widths fit several)
  if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, WG * 128 + 32, smem) != cudaSuccess || per_sm < 1) {
    (void)cudaGetLastError();
    per_sm = 1;
  }
  // (split only while tiles < #SMs: the workspace holds #SMs tiles)
  int splits = tiles < d.sms ? choose_splits(static_cast<int>(tiles), k_tiles, d.sms * per_sm) : 1;
  if (splits > 1 && !ensure_workspace(d, static_cast<size_t>(TP) * TQ)) splits = 1;
  dim3 grid(static_cast<unsigned>(tiles), static_cast<unsigned>(splits));
  KA_LAUNCH(kernel, grid, WG * 128 + 32, smem, mx, my, C, d.ws, d.counters, M, N, K, tilesP, tilesQ, splits, kRaster);
  return cudaPeekAtLastError() == cudaSuccess;
}

// One launch of hopper_gemm_persistent<T, WG, TQ, STAGES, CL, PP> (PERSIST = 1, or 2 with PP); false
// when it cannot run.
template <typename T, int WG, int TQ, int STAGES, int CL, bool PP>
bool launch_persistent(DeviceState& d, int dev, const T* A, const T* B, T* C, int M, int N, int K) {
  constexpr int TP = PP ? 64 : 64 * WG;
  constexpr int smem = PP ? smem_bytes_pingpong(TQ, STAGES) : smem_bytes_persist(TP, TQ, STAGES);
  if (smem > d.smem_optin) return false;
  auto kernel = hopper_gemm_persistent<T, WG, TQ, STAGES, CL, PP>;
  static bool attr_set[kMaxDevices] = {};
  static int max_clusters[kMaxDevices] = {};  // co-resident clusters of CL CTAs (CL > 1)
  if (!attr_set[dev]) {
    if (cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem) != cudaSuccess) {
      (void)cudaGetLastError();
      return false;
    }
#ifndef KA_EMULATE
    if (CL > 1) {
      cudaLaunchConfig_t cfg{};
      cudaLaunchAttribute at[1];
      at[0].id = cudaLaunchAttributeClusterDimension;
      at[0].val.clusterDim.x = CL;
      at[0].val.clusterDim.y = 1;
      at[0].val.clusterDim.z = 1;
      cfg.gridDim = dim3(static_cast<unsigned>(CL * (d.sms / CL)), 1, 1);
      cfg.blockDim = dim3(WG * 128 + 32, 1, 1);
      cfg.dynamicSmemBytes = smem;
      cfg.attrs = at;
      cfg.numAttrs = 1;
      int n = 0;
      if (cudaOccupancyMaxActiveClusters(&n, kernel, &cfg) != cudaSuccess || n <= 0) {
        (void)cudaGetLastError();
        return false;
      }
      max_clusters[dev] = n;
    }
#else
    max_clusters[dev] = d.sms / CL > 0 ? d.sms / CL : 1;  // one CTA per emulated SM
#endif
    attr_set[dev] = true;
  }
  const T* X = A;
  const T* Y = B;
  CUtensorMap mx, my, mc;
  if (!make_map<T>(&mx, X, M, K, TP) || !make_map<T>(&my, Y, N, K, TQ / CL)) return false;
  // TMA-store epilogue: C as a [M, N] tensor, 64×64 boxes, 128B swizzle (needs 16-byte rows pitch).
  int tma_store = reinterpret_cast<uintptr_t>(C) % 16 == 0 && N % 8 == 0 && KA_DIAG != 3 ? 1 : 0;
  if (tma_store && !make_map<T>(&mc, C, M, N, 64)) tma_store = 0;
  if (!tma_store) mc = mx;  // unused by the kernel
  const int tilesP = (M + TP - 1) / TP, tilesQ = (N + TQ - 1) / TQ;
  const long long groups_ll = static_cast<long long>((tilesP + CL - 1) / CL) * tilesQ;  // tile groups of CL rows
  if (groups_ll > 0x3fffffffLL) return false;
  const int groups = static_cast<int>(groups_ll);
  const int k_tiles = (K + 63) / 64;
  // Work units: whole waves of tile groups over the co-resident clusters (P of them), then the
  // remaining `tail` groups (the partial last wave) cut into tsplit K slices, the largest power of
  // two ≤ SPLITK with tail · tsplit ≤ P (and ≥ 2 k-tiles per slice): the tail takes one round of
  // 1/tsplit of a tile instead of a whole tile. (Fewer groups than P: the whole problem is the tail.)
  const int P = CL == 1 ? d.sms : max_clusters[dev];
  const int full_units = (groups / P) * P, tail = groups - full_units;
  int tsplit = 1;  // PP: no split (each warpgroup's ring positions assume whole tiles)
  while (!PP && tail > 0 && 2 * tsplit <= kSplitK && static_cast<long long>(tail) * 2 * tsplit <= P && 4 * tsplit <= k_tiles)
    tsplit *= 2;
  if (tsplit > 1 && !ensure_workspace(d, static_cast<size_t>(TP) * TQ)) tsplit = 1;
  const long long units = static_cast<long long>(full_units) + static_cast<long long>(tail) * tsplit;
  if (units > 0x7fffffffLL) return false;
  if (CL == 1) {
    const int grid = static_cast<int>(units < d.sms ? units : d.sms);
    KA_LAUNCH(kernel, grid, WG * 128 + 32, smem, mx, my, mc, C, d.ws, d.counters, M, N, K, tilesP, tilesQ, full_units,
              tail, tsplit, kRaster, tma_store);
  } else {
    const int ncl = static_cast<int>(units < max_clusters[dev] ? units : max_clusters[dev]);
#ifndef KA_EMULATE
    cudaLaunchConfig_t cfg{};
    cudaLaunchAttribute at[1];
    at[0].id = cudaLaunchAttributeClusterDimension;
    at[0].val.clusterDim.x = CL;
    at[0].val.clusterDim.y = 1;
    at[0].val.clusterDim.z = 1;
    cfg.gridDim = dim3(static_cast<unsigned>(CL * ncl), 1, 1);
    cfg.blockDim = dim3(WG * 128 + 32, 1, 1);
    cfg.dynamicSmemBytes = smem;
    cfg.stream = 0;
    cfg.attrs = at;
    cfg.numAttrs = 1;
    if (cudaLaunchKernelEx(&cfg, kernel, mx, my, mc, C, d.ws, d.counters, M, N, K, tilesP, tilesQ, full_units, tail,
                           tsplit, static_cast<int>(kRaster), tma_store) != cudaSuccess)
      return false;
#else
    emu::launch_cluster(dim3(CL * ncl), dim3(WG * 128 + 32), smem, CL, [=] {
      kernel(mx, my, mc, C, d.ws, d.counters, M, N, K, tilesP, tilesQ, full_units, tail, tsplit, static_cast<int>(kRaster),
             tma_store);
    });
#endif
  }
  return cudaPeekAtLastError() == cudaSuccess;
}

// The small-M path: the narrowest compiled swap-AB width (8, 16, ..., SMALLN) that holds M.
template <typename T>
bool launch_small(DeviceState& d, int dev, const T* A, const T* B, T* C, int M, int N, int K) {
  if constexpr (kSmallN >= 8) if (M <= 8) return launch_hopper<T, kSmallWG, 8, small_stages(8), true>(d, dev, A, B, C, M, N, K);
  if constexpr (kSmallN >= 16) if (M <= 16) return launch_hopper<T, kSmallWG, 16, small_stages(16), true>(d, dev, A, B, C, M, N, K);
  if constexpr (kSmallN >= 32) if (M <= 32) return launch_hopper<T, kSmallWG, 32, small_stages(32), true>(d, dev, A, B, C, M, N, K);
  if constexpr (kSmallN >= 64) if (M <= 64) return launch_hopper<T, kSmallWG, 64, small_stages(64), true>(d, dev, A, B, C, M, N, K);
  if constexpr (kSmallN >= 128) if (M <= 128) return launch_hopper<T, kSmallWG, 128, small_stages(128), true>(d, dev, A, B, C, M, N, K);
  if constexpr (kSmallN >= 256) if (M <= 256) return launch_hopper<T, kSmallWG, 256, small_stages(256), true>(d, dev, A, B, C, M, N, K);
  return false;
}

template <typename T>
void gemm(const T* A, const T* B, T* C, int M, int N, int K) {
  int dev = 0;
  cudaGetDevice(&dev);
  if (dev < 0 || dev >= kMaxDevices) dev = 0;
  std::lock_guard<std::mutex> lock(g_mu);
  DeviceState& d = device_state(dev);
  auto al = [](const void* p, uintptr_t a) { return reinterpret_cast<uintptr_t>(p) % a == 0; };
  const bool vec_ok = al(A, 16) && al(B, 16) && al(C, 4) && K % 8 == 0 && N % 2 == 0;
  if (d.path == 2 && vec_ok) {
    bool ok = false;
    if (kSmallN > 0 && M <= kSmallN) ok = launch_small<T>(d, dev, A, B, C, M, N, K);
    if constexpr (kPersist >= 1) {
      if (!ok) ok = launch_persistent<T, kBM / 64, kBN, kStages, kCluster, kPersist == 2>(d, dev, A, B, C, M, N, K);
    } else {
      if (!ok) ok = launch_hopper<T, kBM / 64, kBN, kStages, false>(d, dev, A, B, C, M, N, K);
    }
    if (ok) return;
    (void)cudaGetLastError();
  }
  if (d.path >= 1 && vec_ok) {
    dim3 grid(static_cast<unsigned>((N + 63) / 64), static_cast<unsigned>((M + 63) / 64));
    KA_LAUNCH(sm80_gemm_kernel<T>, grid, 128, 0, A, B, C, M, N, K);
    if (cudaPeekAtLastError() == cudaSuccess) return;
    (void)cudaGetLastError();
  }
  dim3 grid(static_cast<unsigned>((N + 127) / 128), static_cast<unsigned>(M));
  KA_LAUNCH(simple_gemm_kernel<T>, grid, 128, 0, A, B, C, M, N, K);
}

}  // namespace ka_gemm_hopper

void run(const ka::TensorArg& A, const ka::TensorArg& B, const ka::TensorArg& C) {
  using namespace ka_gemm_hopper;
  const int64_t M = A.size(0), K = A.size(1), N = B.size(0);
  if (M <= 0 || N <= 0) return;
  const size_t out_bytes = static_cast<size_t>(M) * static_cast<size_t>(N) * 2;
  if (K <= 0) {
    cudaMemsetAsync(C.data, 0, out_bytes);
    return;
  }
#if KA_GEMM_DTYPE != 2
  if (A.dtype == ka::kFloat16) {
    gemm<__half>(A.ptr<const __half>(), B.ptr<const __half>(), C.ptr<__half>(), static_cast<int>(M), static_cast<int>(N),
                 static_cast<int>(K));
    return;
  }
#endif
#if KA_GEMM_DTYPE != 1
  if (A.dtype == ka::kBFloat16) {
    gemm<__nv_bfloat16>(A.ptr<const __nv_bfloat16>(), B.ptr<const __nv_bfloat16>(), C.ptr<__nv_bfloat16>(),
                        static_cast<int>(M), static_cast<int>(N), static_cast<int>(K));
    return;
  }
#endif
  // A dtype this build does not serve: the plain kernel, so the answer is still right.
  if (A.dtype == ka::kFloat16) {
    dim3 grid(static_cast<unsigned>((N + 127) / 128), static_cast<unsigned>(M));
    KA_LAUNCH(simple_gemm_kernel<__half>, grid, 128, 0, A.ptr<const __half>(), B.ptr<const __half>(), C.ptr<__half>(),
              static_cast<int>(M), static_cast<int>(N), static_cast<int>(K));
  } else if (A.dtype == ka::kBFloat16) {
    dim3 grid(static_cast<unsigned>((N + 127) / 128), static_cast<unsigned>(M));
    KA_LAUNCH(simple_gemm_kernel<__nv_bfloat16>, grid, 128, 0, A.ptr<const __nv_bfloat16>(), B.ptr<const __nv_bfloat16>(),
              C.ptr<__nv_bfloat16>(), static_cast<int>(M), static_cast<int>(N), static_cast<int>(K));
  }
}
