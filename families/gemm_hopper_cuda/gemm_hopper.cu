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
// Under KA_EMULATE (tests/test_gemm_hopper.cpp) the source builds with g++ against the device
// layer's CPU emulator (threads as fibers; mbarriers, TMA tensor loads and stores, wgmma and named
// barriers, clusters with multicast and remote arrivals emulated and checked), with software
// fp16/bf16 conversions.
// (cuda.h, through copy.cuh, gives CUtensorMap and its enums only: cuTensorMapEncodeTiled is
// fetched at run time through cudaGetDriverEntryPointByVersion, so no -lcuda is needed.)
#include <kernelarc/abi.h>
#include <kernelarc/device/copy.cuh>
#include <kernelarc/device/mma.cuh>
#include <kernelarc/device/sync.cuh>
#include <kernelarc/device/wgmma.cuh>

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
// bench/h200_next.sh): 1 skips the epilogue (no conversion, no store), 2 also the wgmmas (the
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
// A static __shared__ int: the 16 bytes past the dynamic shared memory (the emulator keeps them).
#define KA_SHARED_INT(name) int& name = *reinterpret_cast<int*>(emu::cta()->smem.data() + emu::cta()->smem.size() - 16)
#else
#define KA_SHARED_INT(name) __shared__ int name
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
// The device layer (kernelarc/device/): named one by one, as this family has its own to_float /
// from_float over CUDA's 16-bit types.
using ka_dev::bulk_commit;
using ka_dev::bulk_wait_all;
using ka_dev::bulk_wait_read;
using ka_dev::cluster_ctarank;
using ka_dev::cluster_sync;
using ka_dev::fence_operand;
using ka_dev::fence_proxy_async_smem;
using ka_dev::mbar_arrive;
using ka_dev::mbar_arrive_cluster;
using ka_dev::mbar_arrive_expect_tx;
using ka_dev::mbar_fence_init;
using ka_dev::mbar_init;
using ka_dev::mbar_wait;
using ka_dev::named_arrive;
using ka_dev::named_sync;
using ka_dev::prefetch_tmap;
using ka_dev::smem_u32;
using ka_dev::st_shared_u32;
using ka_dev::tma_load_2d;
using ka_dev::tma_load_2d_multicast;
using ka_dev::tma_store_2d;
using ka_dev::wgmma_commit;
using ka_dev::wgmma_fence;
using ka_dev::wgmma_wait_n;
// wgmma.mma_async m64nNk16, fp32 accumulate, A and B from shared memory, both K-major, scale-d = 1
// (accumulators start at zero); d holds N/2 floats per thread (the layer's [N/8][4]).
template <int N, typename T>
struct Wgmma {
  using In = typename std::conditional<std::is_same<T, __half>::value, ka_dev::F16, ka_dev::Bf16>::type;
  static KA_DEV void mma(float* d, uint64_t da, uint64_t db) {
    ka_dev::Wgmma<N, In, 0, 0>::ss(*reinterpret_cast<float(*)[N / 8][4]>(d), da, db, 1);
  }
};

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

// Split-K, after a CTA's share of tile t (TP×TQ outputs; TQ/2 accumulators a thread in the wgmma
// m64nTQ layout: rows pl0 + 8h, columns ql0 + 8j). splitk_add: the partial sums are added into the
// tile's slice of the workspace ws (tile-local TP×TQ, so every float2 is aligned whatever M and N
// are) and the CTA counts itself on counters[t]; `last` (a shared int) is set in the last of the
// tile's `splits` CTAs to arrive, which then calls splitk_take: the full sums back into acc, the
// slice and the counter left zeroed for the next call. Every consumer thread (WG warpgroups) calls
// them. (The addresses are formed from ws, counters and t at each use: pointers kept across the
// barriers cost ptxas registers.)
template <int WG, int TP, int TQ>
__device__ __forceinline__ void splitk_add(const float (&acc)[TQ / 2], float* ws, unsigned* counters, int t, int splits,
                                           int pl0, int ql0, int& last) {
  float* wt = ws + static_cast<size_t>(t) * TP * TQ;
#pragma unroll
  for (int j = 0; j < TQ / 8; ++j)
#pragma unroll
    for (int h = 0; h < 2; ++h)
      atomicAdd(reinterpret_cast<float2*>(wt + (pl0 + 8 * h) * TQ + j * 8 + ql0),
                make_float2(acc[4 * j + 2 * h], acc[4 * j + 2 * h + 1]));
  __threadfence();
  named_sync(1, WG * 128);
  if (threadIdx.x == 0) last = atomicAdd(&counters[t], 1u) == static_cast<unsigned>(splits - 1);
  named_sync(1, WG * 128);
}
template <int WG, int TP, int TQ>
__device__ __forceinline__ void splitk_take(float (&acc)[TQ / 2], float* ws, unsigned* counters, int t, int pl0, int ql0) {
  float* wt = ws + static_cast<size_t>(t) * TP * TQ;
  __threadfence();
#pragma unroll
  for (int j = 0; j < TQ / 8; ++j)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      float2* p = reinterpret_cast<float2*>(wt + (pl0 + 8 * h) * TQ + j * 8 + ql0);
      const float2 v = __ldcg(p);
      __stcg(p, make_float2(0.f, 0.f));
      acc[4 * j + 2 * h] = v.x;
      acc[4 * j + 2 * h + 1] = v.y;
    }
  if (threadIdx.x == 0) counters[t] = 0u;
}

#include "tile_kernel.cuh"

#include "persistent_kernel.cuh"

#include "fallback_kernels.cuh"

#include "host.cuh"
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
