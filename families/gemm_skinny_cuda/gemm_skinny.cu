// families/gemm_skinny_cuda/gemm_skinny.cu — fp16/bf16 C = A·Bᵀ (A [M,K], B [N,K], C [M,N],
// row-major, fp32 accumulation) for small M, where a GEMM is a latency-bound stream of B: the
// decode-like workloads that dominate the GEMM problems' workload lists. KernelArc prepends
// `#define KA_<KNOB> v` lines (family.json):
//   KA_MMA     0: CUDA-core dot products (the skinny kernel); 1: tensor cores (mma.sync m16n8k16,
//              swap-AB, the MMA kernel)
//   KA_WARPS   warps per CTA (4, 8)
//   KA_KW      warps sharing one group of rows of B, each over a contiguous K range (1, 2, 4, 8;
//              <= WARPS); a CTA owns WARPS / KW groups, so the grid is ceil(N / rows per CTA) CTAs
//              (times KC)
//   KA_UNROLL  16-byte loads of B each lane issues before using them, per row (MMA = 0), or
//              stages of 64 K in flight (MMA = 1) (1, 2, 4)
//   KA_RW      rows of B per warp (1, 2, 4; MMA = 1: tiles of 16 rows): each 16-byte load of A
//              serves RW rows (tiles), so the traffic for A falls by RW (at M = 7 and up it, not B,
//              bounds the MMA = 0, RW = 1 kernel)
//   KA_MAXM    the most rows of A one CTA serves (8, 16, 32; 64, 128 with MMA = 1); a larger M takes
//              ceil(M / MAXM) CTAs along gridDim.y, each reading B again (mostly from L2): correct,
//              not fast (a piecewise candidate takes another family there, families/compose.h)
//   KA_KC      MMA = 1: CTAs of a thread-block cluster splitting K (1, 2, 4); each sums its share,
//              and the cluster adds the partial sums through distributed shared memory (no
//              workspace, no atomics). More CTAs for the same rows of B: a CTA can own more rows
//              (and share each row of A among them) while the grid still fills the GPU. On the
//              H200 KC = 4 gives the fastest small-M point on N = 128/256 (bench/HISTORY.md)
//
// The skinny kernel (MMA = 0): one launch, no workspace, no atomics. Lane l of a warp reads the
// warp's RW rows of B in 16-byte vectors l, l + 32, … (UNROLL · RW of them in flight), and for each
// the same 8 elements of every row of A (small, L1/L2-resident), into M fp32 accumulators (M is
// bucketed to 1, 2, 4, 8, 16 or 32 at compile time, rows beyond M skipped). Warp shuffles sum the
// lanes, shared memory sums the KW warps of a row, and one thread per (row, m) writes C. On the
// H200 it beats cuBLAS at M <= 2 and loses from M = 4 on the wide shapes (bench/HISTORY.md): the
// CUDA cores' multiply-adds, not the memory, bound it there.
// The MMA kernel (MMA = 1): the same grid, reduction and output, with the products on tensor
// cores (see mma_kernel). On the H200 it runs at the time of a bare read of B (1.00-1.06x) at
// M <= 16 on the wide shapes and falls behind cuBLAS from M = 32 (bench/HISTORY.md). Both need
// K % 8 == 0 and 16-byte aligned A and B (the judge's buffers are); otherwise a plain 64×64
// shared-memory tiled kernel runs.
//
// Under KA_EMULATE (tests/test_gemm_skinny.cpp) the source builds with g++ against the device
// layer's CPU emulator (kernelarc/emu/ka_emu.h: threads as fibers, warp shuffles and mma.sync as collectives), with
// software fp16/bf16 conversions.
#include <kernelarc/abi.h>
#include <kernelarc/device/convert.cuh>
#include <kernelarc/device/copy.cuh>
#include <kernelarc/device/mma.cuh>
#if !defined(KA_EMULATE) && KA_KC > 1
#include <cooperative_groups.h>
#endif

#include <cstdint>
#include <cstring>

#if !defined(KA_WARPS) || !defined(KA_KW) || !defined(KA_UNROLL) || !defined(KA_MAXM)
#error "gemm_skinny_cuda: KA_WARPS, KA_KW, KA_UNROLL and KA_MAXM must be defined (KernelArc does this)"
#endif
#ifndef KA_RW
#define KA_RW 1
#endif
#ifndef KA_MMA
#define KA_MMA 0
#endif
#ifndef KA_KC
#define KA_KC 1
#endif
static_assert(KA_KW >= 1 && KA_KW <= KA_WARPS && KA_WARPS % KA_KW == 0, "KW must divide WARPS");
static_assert(KA_MAXM == 8 || KA_MAXM == 16 || KA_MAXM == 32 || (KA_MMA && (KA_MAXM == 64 || KA_MAXM == 128)),
              "MAXM is 8, 16 or 32 (64 or 128 with MMA = 1)");
static_assert(KA_KC == 1 || (KA_MMA && (KA_KC == 2 || KA_KC == 4)), "KC is 1, or 2 or 4 with MMA = 1");
#if defined(KA_EMULATE) && KA_KC > 1
#error "gemm_skinny_cuda: the CPU emulator has no thread-block clusters (KC > 1)"
#endif

namespace ka_gemm_skinny {
namespace {

constexpr int kF16 = 1, kBF16 = 2;  // element type codes of the kernels' template argument

using namespace ka_dev;

// ── conversions (raw 16-bit storage) ────────────────────────────────────────────────────────────
template <int DT>
using Elem = typename std::conditional<DT == kF16, F16, Bf16>::type;
template <int DT>
KA_DEV float to_f(uint16_t u) { return to_float<Elem<DT>>(u); }
template <int DT>
KA_DEV uint16_t from_f(float x) { return from_float<Elem<DT>>(x); }

template <int DT>
__device__ __forceinline__ void unpack8(const uint4& v, float* f) {
  const uint32_t w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    f[2 * i] = to_f<DT>(static_cast<uint16_t>(w[i] & 0xffffu));
    f[2 * i + 1] = to_f<DT>(static_cast<uint16_t>(w[i] >> 16));
  }
}

// One m16n8k16 tensor-core product, fp32 accumulators (MMA = 1).
template <int DT>
KA_DEV void mma16816(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  if constexpr (DT == kF16) mma_f16(c, a, b0, b1);
  else mma_bf16(c, a, b0, b1);
}

constexpr int kGroups = KA_WARPS / KA_KW;         // row groups per CTA (KW warps each)
constexpr int kWarpRows = KA_MMA ? 16 * KA_RW : KA_RW;  // rows of B per warp
constexpr int kRows = kGroups * kWarpRows;        // rows of B per CTA

// ── the skinny kernel ───────────────────────────────────────────────────────────────────────────
template <int DT, int MB>
__global__ void __launch_bounds__(KA_WARPS * 32) skinny_kernel(const uint16_t* __restrict__ A, const uint16_t* __restrict__ B,
                                                               uint16_t* __restrict__ C, int M, int N, int K) {
  KA_DYN_SMEM(smem);
  float* part = reinterpret_cast<float*>(smem);  // [WARPS][MB][RW]
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  const int g = warp / KA_KW, kw = warp % KA_KW;
  const int n0 = (static_cast<int>(blockIdx.x) * kGroups + g) * KA_RW;  // the warp's first row of B
  // Rows of A beyond MB: blockIdx.y takes the next MB of them (B is read again, mostly from L2).
  const int m0 = static_cast<int>(blockIdx.y) * MB;
  A += static_cast<size_t>(m0) * K;
  C += static_cast<size_t>(m0) * N;
  M = M - m0 < MB ? M - m0 : MB;
  float acc[MB][KA_RW];
#pragma unroll
  for (int m = 0; m < MB; ++m)
#pragma unroll
    for (int rr = 0; rr < KA_RW; ++rr) acc[m][rr] = 0.f;
  if (n0 < N) {
    const int nvec = K / 8;
    const int per = (nvec + KA_KW - 1) / KA_KW;
    const int v0 = kw * per, v1 = nvec < v0 + per ? nvec : v0 + per;
    const uint4* b0 = reinterpret_cast<const uint4*>(B) + static_cast<size_t>(n0) * nvec;
    for (int v = v0 + lane; v < v1; v += 32 * KA_UNROLL) {
      uint4 b[KA_UNROLL][KA_RW];  // rows past N and vectors past the range read as zeros
#pragma unroll
      for (int u = 0; u < KA_UNROLL; ++u)
#pragma unroll
        for (int rr = 0; rr < KA_RW; ++rr)
          b[u][rr] = v + 32 * u < v1 && n0 + rr < N ? __ldg(b0 + static_cast<size_t>(rr) * nvec + v + 32 * u)
                                                    : make_uint4(0, 0, 0, 0);
#pragma unroll
      for (int u = 0; u < KA_UNROLL; ++u) {
        float bf[KA_RW][8];
#pragma unroll
        for (int rr = 0; rr < KA_RW; ++rr) unpack8<DT>(b[u][rr], bf[rr]);
        const uint4* arow = reinterpret_cast<const uint4*>(A) + (v + 32 * u < v1 ? v + 32 * u : v);
#pragma unroll
        for (int m = 0; m < MB; ++m) {
          if (m < M) {  // one load of A serves the warp's RW rows of B
            float af[8];
            unpack8<DT>(__ldg(arow + static_cast<size_t>(m) * nvec), af);
#pragma unroll
            for (int rr = 0; rr < KA_RW; ++rr)
#pragma unroll
              for (int j = 0; j < 8; ++j) acc[m][rr] += af[j] * bf[rr][j];
          }
        }
      }
    }
  }
#pragma unroll
  for (int m = 0; m < MB; ++m)
#pragma unroll
    for (int rr = 0; rr < KA_RW; ++rr)
#pragma unroll
      for (int off = 16; off > 0; off >>= 1) acc[m][rr] += __shfl_xor_sync(0xffffffffu, acc[m][rr], off);
  if (lane == 0)
#pragma unroll
    for (int m = 0; m < MB; ++m)
#pragma unroll
      for (int rr = 0; rr < KA_RW; ++rr) part[(warp * MB + m) * KA_RW + rr] = acc[m][rr];
  __syncthreads();
  for (int t = static_cast<int>(threadIdx.x); t < kRows * MB; t += KA_WARPS * 32) {
    const int gg = t / (KA_RW * MB), rr = (t / MB) % KA_RW, m = t % MB;
    const int nn = (static_cast<int>(blockIdx.x) * kGroups + gg) * KA_RW + rr;
    if (m >= M || nn >= N) continue;
    float sum = 0.f;
    for (int w = 0; w < KA_KW; ++w) sum += part[((gg * KA_KW + w) * MB + m) * KA_RW + rr];
    C[static_cast<size_t>(m) * N + nn] = from_f<DT>(sum);
  }
}

// ── the tensor-core kernel (MMA = 1) ─────────────────────────────────────────────────────────────
// Swap-AB with mma.sync m16n8k16: rows of B are the MMA's M side (16 per row tile, RW tiles per
// warp), rows of A its N side (MB / 8 tiles of 8). The WARPS / KW warps of one K slice (one per
// row group) share a ring of UNROLL + 1 stages in shared memory; a stage is 64 K of all the CTA's
// rows of B and of the MB rows of A (one 128-byte line each), copied by cp.async in whole lines (8
// lanes per line, 16 bytes each; vector v of stage row r stored at v ^ swz(r)), UNROLL stages in
// flight, rows of A at or past M zero-filled, not read. Each row
// of A is copied once per CTA and read by all WARPS / KW row groups, so its traffic falls with the
// rows a CTA owns (at M = 32-64 the per-warp rings of the first version re-read A for every 16
// rows of B and lost to cuBLAS, bench/HISTORY.md). The fragments come from the stage by ldmatrix,
// in the PTX ISA's register layout: no register shuffles. (Until 2026-12-04 a K permutation made
// one 16-byte read per row the fragment words, but the MMA operand needs rows r and r + 8
// interleaved, which cost ~4 register moves per MMA.) KW warps split K, shared memory (the rings,
// reused) sums them, and with KC > 1 the cluster's CTAs split K again and sum through distributed
// shared memory.
constexpr int kStages = KA_UNROLL + 1;  // MMA = 1: ring stages
// The XOR swizzle of a stage row's eight 16-byte vectors: vector v of row r is stored at v ^ swz(r).
// Shared memory serves 16-byte accesses eight lanes at a time: a copy phase is one row's eight
// vectors, an ldmatrix phase eight consecutive rows at one vector, so any swz that permutes r % 8
// keeps both conflict-free. (The first fragment reads, one 16-byte read per row under a K
// permutation, paired rows r and r + 1 in a phase and conflicted 2-way under this swizzle.)
__device__ __forceinline__ int swz(int r) { return r & 7; }  // (ka_emu.h maps the qualifiers to inline)
// MMA = 1, a ring stage: 64 K of the CTA's kRows rows of B (group g's at g · kWarpRows), then of MB
// rows of A; one ring per K slice kw, shared by the kGroups warps of that slice.
constexpr int stage_bytes(int mb) { return (kRows + mb) * 128; }
constexpr size_t mma_smem_bytes(int mb) {
  const size_t ring = static_cast<size_t>(KA_KW) * kStages * stage_bytes(mb);
  // The reduction: every warp's accumulators, then (KC > 1) the CTA's sums for its cluster peers.
  const size_t red = sizeof(float) * (static_cast<size_t>(KA_WARPS) * kWarpRows + (KA_KC > 1 ? kRows : 0)) * mb;
  return ring > red ? ring : red;
}
#if KA_KC > 1
#define KA_MMA_CLUSTER __cluster_dims__(1, 1, KA_KC)
#else
#define KA_MMA_CLUSTER
#endif

template <int DT, int MB>
__global__ void __launch_bounds__(KA_WARPS * 32) KA_MMA_CLUSTER
    mma_kernel(const uint16_t* __restrict__ A, const uint16_t* __restrict__ B, uint16_t* __restrict__ C, int M, int N, int K) {
  constexpr int kNT = MB / 8, kRT = KA_RW;  // A tiles of 8 rows, B tiles of 16 rows
  constexpr int kStageBytes = stage_bytes(MB);
  constexpr int kRingThreads = kGroups * 32;            // the threads sharing a ring
  KA_DYN_SMEM(smem);
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  const int g = warp / KA_KW, kw = warp % KA_KW, lg = lane / 4, lq = lane % 4;
  const int nb0 = static_cast<int>(blockIdx.x) * kRows;  // the CTA's first row of B
  const int m0 = static_cast<int>(blockIdx.y) * MB;
  A += static_cast<size_t>(m0) * K;
  C += static_cast<size_t>(m0) * N;
  M = M - m0 < MB ? M - m0 : MB;
  float acc[kRT][kNT][4];
#pragma unroll
  for (int r = 0; r < kRT; ++r)
#pragma unroll
    for (int t = 0; t < kNT; ++t)
#pragma unroll
      for (int i = 0; i < 4; ++i) acc[r][t][i] = 0.f;
  const int nvec = K / 8;  // 16-byte vectors per row
  // K tiles of 64: the cluster's KC CTAs (blockIdx.z) take contiguous shares, the KW slices of a
  // CTA contiguous shares of those.
  const int tiles = (K + 63) / 64;
  const int per_c = (tiles + KA_KC - 1) / KA_KC;
  const int c0 = static_cast<int>(blockIdx.z) * per_c, c1 = tiles < c0 + per_c ? tiles : c0 + per_c;
  const int per = ((c1 > c0 ? c1 - c0 : 0) + KA_KW - 1) / KA_KW;
  const int t0 = c0 + kw * per, t1 = c1 < t0 + per ? c1 : t0 + per;
  const int nt = t1 > t0 ? t1 - t0 : 0;  // this warp's K tiles
  const uint4* bv = reinterpret_cast<const uint4*>(B);
  const uint4* av = reinterpret_cast<const uint4*>(A);
  // Stage i <- K tile t0 + i, in 16-byte copies, 8 lanes per 128-byte line: the ring's thread rt
  // copies vector vv = rt % 8 of stage rows r0 + j * kRowStep (j = 0, 1, ...; r0 = rt / 8). kRows is
  // a multiple of kRowStep, so its first kBCopies copies are rows nb0 + r of B and the rest rows
  // r - kRows of A. Everything but the K tile is fixed per thread and computed once here: a copy
  // in the loop is one address, one predicate and the cp.async (the first version recomputed row,
  // bounds and pointers per copy, ~17 integer instructions for each of up to 20 copies a stage).
  constexpr int kRowStep = kRingThreads / 8;        // 4 * kGroups
  constexpr int kBCopies = kRows / kRowStep;        // 4 * RW
  constexpr int kACopies = (MB + kRowStep - 1) / kRowStep;
  static_assert(!KA_MMA || (kRows % kRowStep == 0 && kRows % 8 == 0), "stage rows of B: whole copy steps, whole swizzle atoms");
  const int rt = g * 32 + lane, r0 = rt / 8, vv = rt % 8;
  const int b_rows = N - nb0 - r0, a_rows = M - r0;  // copy j is a real row while j * kRowStep < these
  // Source of copy j: p + j * row_step + the K tile's vector offset. A copy past the last row or
  // K keeps its address but reads 0 bytes (cp.async zero-fills; nothing is read).
  const uint4* bp = bv + (static_cast<size_t>(nb0) + static_cast<size_t>(r0)) * static_cast<size_t>(nvec) + vv;
  const uint4* ap = av + static_cast<size_t>(r0) * static_cast<size_t>(nvec) + vv;
  const size_t row_step = static_cast<size_t>(kRowStep) * static_cast<size_t>(nvec);
  // Destination of copy j in a stage: row r0 + j * kRowStep at vector vv ^ swz(row). kRowStep and
  // kRows are multiples of 4 and 8, so swz(row) takes one of two values, by the parity of j when
  // kRowStep % 8 == 4 (one value otherwise): both computed once.
  const uint32_t d_even = static_cast<uint32_t>(r0 * 128 + ((vv ^ swz(r0)) * 16));
  const uint32_t d_odd = static_cast<uint32_t>(r0 * 128 + ((vv ^ swz(r0 + kRowStep)) * 16));
  const uint32_t ring0 = smem_u32(smem + static_cast<size_t>(kw) * kStages * kStageBytes);  // this K slice's ring
  auto issue = [&](int i) {
    if (i < nt) {
      const uint32_t st = ring0 + static_cast<uint32_t>((i % kStages) * kStageBytes);
      const int kv = (t0 + i) * 8;  // the K tile's first vector
      const bool k_in = kv + vv < nvec;
#pragma unroll
      for (int j = 0; j < kBCopies; ++j) {
        const bool in = k_in && j * kRowStep < b_rows;
        const uint32_t d = (j % 2 ? d_odd : d_even) + static_cast<uint32_t>(j * kRowStep * 128);
        cp_async_16(st + d, bp + (j * row_step + kv), in ? 16 : 0);
      }
#pragma unroll
      for (int j = 0; j < kACopies; ++j) {
        if (kACopies * kRowStep == MB || r0 + j * kRowStep < MB) {  // rows of A: MB in a stage
          const bool in = k_in && j * kRowStep < a_rows;
          const uint32_t d = (j % 2 ? d_odd : d_even) + static_cast<uint32_t>((kRows + j * kRowStep) * 128);
          cp_async_16(st + d, ap + (j * row_step + kv), in ? 16 : 0);
        }
      }
    }
    cp_async_commit();  // an empty group past the end keeps the wait counts uniform
  };
  // Fragments by ldmatrix.x4 (lane l gives the address of row l % 8 of matrix l / 8, and receives
  // the PTX fragment layout of mma.m16n8k16 directly). Every row base below is a multiple of 8, so
  // the row a lane addresses keeps swz(l % 8): a stage's reads differ from the first stage's only
  // by the stage base, and from each other by compile-time row offsets.
  //   rows of B (MMA operand A, 16 x 16 per k16 step ks): matrices (rows 0-7, k 0-7), (rows 8-15,
  //   k 0-7), (rows 0-7, k 8-15), (rows 8-15, k 8-15), i.e. row (m % 2) * 8 + l % 8, vector 2ks + m / 2;
  //   rows of A (operand B, per tile of 8 rows, two k16 steps 2c and 2c + 1): vectors 4c + m.
  const uint32_t lsw = static_cast<uint32_t>(swz(lane % 8)), lm = static_cast<uint32_t>(lane / 8);
  uint32_t off_b[4], off_a[2];
#pragma unroll
  for (int ks = 0; ks < 4; ++ks)
    off_b[ks] = static_cast<uint32_t>((g * kWarpRows + (lane / 8) % 2 * 8 + lane % 8) * 128) +
                (((2u * ks + lm / 2) ^ lsw) * 16u);
#pragma unroll
  for (int c = 0; c < 2; ++c) off_a[c] = static_cast<uint32_t>((kRows + lane % 8) * 128) + (((4u * c + lm) ^ lsw) * 16u);
  // With a shared ring every warp of the CTA runs the same number of steps (its barriers).
  const int steps = kGroups > 1 ? per : nt;
#pragma unroll
  for (int i = 0; i < kStages - 1; ++i) issue(i);
  for (int i = 0; i < steps; ++i) {
    cp_async_wait_n<kStages - 2>();
    if constexpr (kGroups > 1) __syncthreads();  // the ring's other warps' copies landed, and
    else __syncwarp();                            // every warp left stage i - 1 (refilled below)
    if (i < nt) {
      const uint32_t st = ring0 + static_cast<uint32_t>((i % kStages) * kStageBytes);
#pragma unroll
      for (int c = 0; c < 2; ++c) {  // two halves of 32 K per stage: k16 steps 2c and 2c + 1
        uint32_t bf[kNT][4];          // per tile of 8 rows of A: {b0, b1} of step 2c, then of 2c + 1
#pragma unroll
        for (int t = 0; t < kNT; ++t) ldsm_x4(st + off_a[c] + static_cast<uint32_t>(t * 8 * 128), bf[t]);
#pragma unroll
        for (int kk = 0; kk < 2; ++kk)
#pragma unroll
          for (int r = 0; r < kRT; ++r) {
            uint32_t fa[4];
            ldsm_x4(st + off_b[2 * c + kk] + static_cast<uint32_t>(r * 16 * 128), fa);
#pragma unroll
            for (int t = 0; t < kNT; ++t) mma16816<DT>(acc[r][t], fa, bf[t][2 * kk], bf[t][2 * kk + 1]);
          }
      }
    }
    issue(i + kStages - 1);  // into stage i - 1's slot
  }
  cp_async_wait_n<0>();
  __syncthreads();  // the rings become the reduction buffer
  float* part = reinterpret_cast<float*>(smem);  // [WARPS][16 * RW][MB]
  // acc[r][t]: {0, 1} = rows (of B) 16r + lg, columns (rows of A) 8t + 2lq + {0, 1}; {2, 3} = rows 16r + lg + 8.
#pragma unroll
  for (int r = 0; r < kRT; ++r)
#pragma unroll
    for (int t = 0; t < kNT; ++t)
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const int row = 16 * r + lg + 8 * (i / 2), col = 8 * t + 2 * lq + (i % 2);
        part[(warp * kWarpRows + row) * MB + col] = acc[r][t][i];
      }
  __syncthreads();
  // Output t = m * kRows + rr (consecutive threads, consecutive columns of C): the sum of the KW warps.
  auto ctasum = [&](int t) {
    const int rr = t % kRows, gg = rr / kWarpRows, row = rr % kWarpRows, m = t / kRows;
    float sum = 0.f;
    for (int w = 0; w < KA_KW; ++w) sum += part[((gg * KA_KW + w) * kWarpRows + row) * MB + m];
    return sum;
  };
#if KA_KC > 1
  // The cluster's KC CTAs hold partial sums of the same outputs over their K shares: each publishes
  // its sums in shared memory, and CTA q of the cluster adds up outputs q, q + KC, ... from all of
  // them through distributed shared memory.
  float* mine = part + KA_WARPS * kWarpRows * MB;  // [MB][kRows]
  for (int t = static_cast<int>(threadIdx.x); t < kRows * MB; t += KA_WARPS * 32) mine[t] = ctasum(t);
  cooperative_groups::cluster_group cluster = cooperative_groups::this_cluster();
  cluster.sync();
  const int q = static_cast<int>(cluster.block_rank());
  for (int t = q * KA_WARPS * 32 + static_cast<int>(threadIdx.x); t < kRows * MB; t += KA_KC * KA_WARPS * 32) {
    const int m = t / kRows, nn = nb0 + t % kRows;
    if (m >= M || nn >= N) continue;
    float sum = 0.f;
#pragma unroll
    for (int p = 0; p < KA_KC; ++p) sum += cluster.map_shared_rank(mine, p)[t];
    C[static_cast<size_t>(m) * N + nn] = from_f<DT>(sum);
  }
  cluster.sync();  // the peers read this CTA's shared memory until here
#else
  for (int t = static_cast<int>(threadIdx.x); t < kRows * MB; t += KA_WARPS * 32) {
    const int m = t / kRows, nn = nb0 + t % kRows;
    if (m >= M || nn >= N) continue;
    C[static_cast<size_t>(m) * N + nn] = from_f<DT>(ctasum(t));
  }
#endif
}

// ── the fallback for unaligned operands: 64×64 tiles, 16×16 threads, 4×4 outputs each, any M, N, K and alignment ──────
constexpr int kT = 64, kTK = 16;
template <int DT>
__global__ void __launch_bounds__(256) tiled_kernel(const uint16_t* A, const uint16_t* B, uint16_t* C, int M, int N, int K) {
  KA_DYN_SMEM(smem);
  float* As = reinterpret_cast<float*>(smem);  // [kT][kTK + 1]
  float* Bs = As + kT * (kTK + 1);             // [kT][kTK + 1]
  const int tx = static_cast<int>(threadIdx.x) % 16, ty = static_cast<int>(threadIdx.x) / 16;
  const int m0 = static_cast<int>(blockIdx.y) * kT, n0 = static_cast<int>(blockIdx.x) * kT;
  float acc[4][4] = {};
  for (int k0 = 0; k0 < K; k0 += kTK) {
    for (int i = static_cast<int>(threadIdx.x); i < kT * kTK; i += 256) {
      const int row = i / kTK, kk = i % kTK;
      const int am = m0 + row, bn = n0 + row, k = k0 + kk;
      As[row * (kTK + 1) + kk] = am < M && k < K ? to_f<DT>(A[static_cast<size_t>(am) * K + k]) : 0.f;
      Bs[row * (kTK + 1) + kk] = bn < N && k < K ? to_f<DT>(B[static_cast<size_t>(bn) * K + k]) : 0.f;
    }
    __syncthreads();
    for (int kk = 0; kk < kTK; ++kk)
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j) acc[i][j] += As[(ty + 16 * i) * (kTK + 1) + kk] * Bs[(tx + 16 * j) * (kTK + 1) + kk];
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int m = m0 + ty + 16 * i, n = n0 + tx + 16 * j;
      if (m < M && n < N) C[static_cast<size_t>(m) * N + n] = from_f<DT>(acc[i][j]);
    }
}

template <int DT, int MB>
void launch_skinny(const uint16_t* A, const uint16_t* B, uint16_t* C, int M, int N, int K) {
  const dim3 grid(static_cast<unsigned>((N + kRows - 1) / kRows), static_cast<unsigned>((M + MB - 1) / MB));
  auto* kernel = skinny_kernel<DT, MB>;  // (a template-id with a comma is not one macro argument)
  KA_LAUNCH(kernel, grid, dim3(KA_WARPS * 32), sizeof(float) * KA_WARPS * MB * KA_RW, A, B, C, M, N, K);
}

template <int DT, int MB>
void launch_mma(const uint16_t* A, const uint16_t* B, uint16_t* C, int M, int N, int K) {
  constexpr size_t smem = mma_smem_bytes(MB);
  const dim3 grid(static_cast<unsigned>((N + kRows - 1) / kRows), static_cast<unsigned>((M + MB - 1) / MB), KA_KC);
  auto* kernel = mma_kernel<DT, MB>;
  if constexpr (smem > 48 * 1024) {
    static bool set = false;  // once per instantiation (and process)
    if (!set) set = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem)) == cudaSuccess;
  }
  KA_LAUNCH(kernel, grid, dim3(KA_WARPS * 32), smem, A, B, C, M, N, K);
}

template <int DT>
void gemm(const uint16_t* A, const uint16_t* B, uint16_t* C, int M, int N, int K) {
  const bool aligned = reinterpret_cast<uintptr_t>(A) % 16 == 0 && reinterpret_cast<uintptr_t>(B) % 16 == 0 && K % 8 == 0;
  if constexpr (KA_MMA == 1) {  // MB: the narrowest of 8, 16, 32, 64 (up to MAXM) that holds M
    if (aligned && M < 65535 * 8) {
      if (M <= 8 || KA_MAXM == 8) return launch_mma<DT, 8>(A, B, C, M, N, K);
      if constexpr (KA_MAXM >= 16)
        if (M <= 16 || KA_MAXM == 16) return launch_mma<DT, 16>(A, B, C, M, N, K);
      if constexpr (KA_MAXM >= 32)
        if (M <= 32 || KA_MAXM == 32) return launch_mma<DT, 32>(A, B, C, M, N, K);
      if constexpr (KA_MAXM >= 64)
        if (M <= 64 || KA_MAXM == 64) return launch_mma<DT, 64>(A, B, C, M, N, K);
      if constexpr (KA_MAXM >= 128) return launch_mma<DT, 128>(A, B, C, M, N, K);
    }
  } else {
    if (aligned && M < 65535) {
      if (M <= 1) return launch_skinny<DT, 1>(A, B, C, M, N, K);
      if (M <= 2) return launch_skinny<DT, 2>(A, B, C, M, N, K);
      if (M <= 4) return launch_skinny<DT, 4>(A, B, C, M, N, K);
      if (M <= 8 || KA_MAXM == 8) return launch_skinny<DT, 8>(A, B, C, M, N, K);
      if (M <= 16 || KA_MAXM == 16) return launch_skinny<DT, 16>(A, B, C, M, N, K);
      return launch_skinny<DT, 32>(A, B, C, M, N, K);
    }
  }
  const dim3 grid(static_cast<unsigned>((N + kT - 1) / kT), static_cast<unsigned>((M + kT - 1) / kT));
  auto* kernel = tiled_kernel<DT>;
  KA_LAUNCH(kernel, grid, dim3(256), sizeof(float) * 2 * kT * (kTK + 1), A, B, C, M, N, K);
}

}  // namespace
}  // namespace ka_gemm_skinny

void run(const ka::TensorArg& A, const ka::TensorArg& B, const ka::TensorArg& C) {
  using namespace ka_gemm_skinny;
  const int64_t M = A.size(0), K = A.size(1), N = B.size(0);
  if (M <= 0 || N <= 0) return;
  const auto* a = A.ptr<const uint16_t>();
  const auto* b = B.ptr<const uint16_t>();
  auto* c = C.ptr<uint16_t>();
  if (A.dtype == ka::kBFloat16) gemm<kBF16>(a, b, c, static_cast<int>(M), static_cast<int>(N), static_cast<int>(K));
  else gemm<kF16>(a, b, c, static_cast<int>(M), static_cast<int>(N), static_cast<int>(K));
}
