// families/gemm_skinny_cuda/gemm_skinny.cu — fp16/bf16 C = A·Bᵀ (A [M,K], B [N,K], C [M,N],
// row-major, fp32 accumulation) for small M, where a GEMM is a latency-bound stream of B: the
// decode-like workloads that dominate the GEMM problems' workload lists. KernelArc prepends
// `#define KA_<KNOB> v` lines (family.json):
//   KA_MMA     0: CUDA-core dot products (the skinny kernel); 1: tensor cores (mma.sync m16n8k16,
//              swap-AB, the MMA kernel)
//   KA_WARPS   warps per CTA (4, 8)
//   KA_KW      warps sharing one group of rows of B, each over a contiguous K range (1, 2, 4, 8;
//              <= WARPS); a CTA owns WARPS / KW groups, so the grid is ceil(N / rows per CTA) CTAs
//   KA_UNROLL  16-byte loads of B each lane issues before using them, per row (MMA = 0), or
//              chunks of 32 K in flight (MMA = 1) (1, 2, 4)
//   KA_RW      rows of B per warp (1, 2, 4; MMA = 1: tiles of 16 rows): each 16-byte load of A
//              serves RW rows (tiles), so the traffic for A falls by RW (at M = 7 and up it, not B,
//              bounds the MMA = 0, RW = 1 kernel)
//   KA_MAXM    the most rows of A one CTA serves (8, 16, 32; 64 with MMA = 1); a larger M takes
//              ceil(M / MAXM) CTAs along gridDim.y, each reading B again (mostly from L2): correct,
//              not fast (a piecewise candidate takes another family there, families/compose.h)
//
// The skinny kernel (MMA = 0): one launch, no workspace, no atomics. Lane l of a warp reads the
// warp's RW rows of B in 16-byte vectors l, l + 32, … (UNROLL · RW of them in flight), and for each
// the same 8 elements of every row of A (small, L1/L2-resident), into M fp32 accumulators (M is
// bucketed to 1, 2, 4, 8, 16 or 32 at compile time, rows beyond M skipped). Warp shuffles sum the
// lanes, shared memory sums the KW warps of a row, and one thread per (row, m) writes C. On the
// H200 it beats cuBLAS at M <= 2 and loses from M = 4 on the wide shapes (bench/RESULTS.md): the
// CUDA cores' multiply-adds, not the memory, bound it there.
// The MMA kernel (MMA = 1): the same grid, reduction and output, with the products on tensor
// cores (see mma_kernel). Both need K % 8 == 0 and 16-byte aligned A and B (the judge's buffers
// are); otherwise a plain 64×64 shared-memory tiled kernel runs.
//
// Under KA_EMULATE (tests/test_gemm_skinny.cpp) the source builds with g++ against the attention
// families' CPU emulator (threads as fibers, warp shuffles and mma.sync as collectives), with
// software fp16/bf16 conversions.
#ifdef KA_EMULATE
#include KA_EMULATE
#else
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#endif
#include <kernelarc/abi.h>

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
static_assert(KA_KW >= 1 && KA_KW <= KA_WARPS && KA_WARPS % KA_KW == 0, "KW must divide WARPS");
static_assert(KA_MAXM == 8 || KA_MAXM == 16 || KA_MAXM == 32 || (KA_MMA && KA_MAXM == 64),
              "MAXM is 8, 16 or 32 (64 with MMA = 1)");

namespace ka_gemm_skinny {
namespace {

constexpr int kF16 = 1, kBF16 = 2;  // element type codes of the kernels' template argument

// ── conversions (raw 16-bit storage) ────────────────────────────────────────────────────────────
#ifdef KA_EMULATE
#define KA_DYN_SMEM(name) unsigned char* name = emu::smem_base()
#define KA_LAUNCH(kernel, grid, block, smem, ...) emu::launch(grid, block, smem, [=] { kernel(__VA_ARGS__); })
inline float half_bits_to_float(uint16_t h) {
  const uint32_t sign = (h & 0x8000u) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ff;
  uint32_t f;
  if (exp == 0) {
    if (man == 0) f = sign;
    else {  // subnormal: normalise
      int e = -1;
      uint32_t m = man;
      do { m <<= 1; ++e; } while (!(m & 0x400));
      f = sign | ((127 - 15 - e) << 23) | ((m & 0x3ff) << 13);
    }
  } else if (exp == 31) f = sign | 0x7f800000u | (man << 13);
  else f = sign | ((exp + 127 - 15) << 23) | (man << 13);
  float out;
  std::memcpy(&out, &f, 4);
  return out;
}
inline uint16_t float_to_half_bits(float x) {  // round to nearest even; enough for the test's range
  uint32_t f;
  std::memcpy(&f, &x, 4);
  const uint32_t sign = (f >> 16) & 0x8000u;
  const int exp = static_cast<int>((f >> 23) & 0xff) - 127 + 15;
  uint32_t man = f & 0x7fffffu;
  if (((f >> 23) & 0xff) == 0xff) return static_cast<uint16_t>(sign | 0x7c00u | (man ? 0x200u : 0));
  if (exp >= 31) return static_cast<uint16_t>(sign | 0x7c00u);
  if (exp <= 0) {
    if (exp < -10) return static_cast<uint16_t>(sign);
    man |= 0x800000u;
    const int shift = 14 - exp;
    uint32_t h = man >> shift, rem = man & ((1u << shift) - 1), half = 1u << (shift - 1);
    if (rem > half || (rem == half && (h & 1))) ++h;
    return static_cast<uint16_t>(sign | h);
  }
  uint32_t h = (static_cast<uint32_t>(exp) << 10) | (man >> 13);
  const uint32_t rem = man & 0x1fff;
  if (rem > 0x1000 || (rem == 0x1000 && (h & 1))) ++h;
  return static_cast<uint16_t>(sign | h);
}
template <int DT>
inline float to_f(uint16_t u) {
  if (DT == kF16) return half_bits_to_float(u);
  uint32_t f = static_cast<uint32_t>(u) << 16;
  float out;
  std::memcpy(&out, &f, 4);
  return out;
}
template <int DT>
inline uint16_t from_f(float x) {
  if (DT == kF16) return float_to_half_bits(x);
  uint32_t f;
  std::memcpy(&f, &x, 4);
  if ((f & 0x7fffffffu) > 0x7f800000u) return 0x7fc0;
  f += 0x7fffu + ((f >> 16) & 1);
  return static_cast<uint16_t>(f >> 16);
}
#else
#define KA_DYN_SMEM(name) extern __shared__ __align__(16) unsigned char name[]
#define KA_LAUNCH(kernel, grid, block, smem, ...) kernel<<<grid, block, smem>>>(__VA_ARGS__)
template <int DT>
__device__ __forceinline__ float to_f(uint16_t u) {
  if constexpr (DT == kF16) return __half2float(__ushort_as_half(u));
  else return __bfloat162float(__ushort_as_bfloat16(u));
}
template <int DT>
__device__ __forceinline__ uint16_t from_f(float x) {
  if constexpr (DT == kF16) return __half_as_ushort(__float2half_rn(x));
  else return __bfloat16_as_ushort(__float2bfloat16_rn(x));
}
#endif

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
#ifdef KA_EMULATE
template <int DT>
inline void mma16816(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  if constexpr (DT == kF16) ka_emu_ops::mma_f16(c, a, b0, b1);
  else ka_emu_ops::mma_bf16(c, a, b0, b1);
}
#else
template <int DT>
__device__ __forceinline__ void mma16816(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  if constexpr (DT == kF16)
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
                 "{%0, %1, %2, %3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  else
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
                 "{%0, %1, %2, %3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
#endif

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
// warp), rows of A its N side (MB / 8 tiles of 8). Each warp streams its rows of B, and the rows of
// A, through a ring of UNROLL + 1 stages of its own in shared memory: a stage is 64 K of every row
// (one 128-byte line), copied by cp.async in whole lines (4 rows per instruction, 16 bytes per
// lane; the 16-byte vector v of row r stored at v ^ (r % 8), so the reads below hit 32 distinct
// banks), UNROLL stages in flight; rows of A at or past M are zero-filled, not read. The products
// are order-free in K, so each chunk of 32 K takes a permuted K: MMA s (0, 1) gives its logical k = 2q + j the chunk's element 8q + 4s + j and logical k = 2q + 8 + j the
// element 8q + 4s + 2 + j (j = 0, 1; q = lane % 4), the same on both operands, which makes the
// fragment registers the PTX ISA prescribes exactly the 32-bit words 2s and 2s + 1 of one 16-byte
// read per row (B rows lane / 4 and lane / 4 + 8, A row lane / 4 of each tile). (A first came
// straight from global memory, on the loop's critical path: 0.73-0.92x torch.matmul on 007 at
// M <= 16, bench/RESULTS.md.) KW warps split K as the CUDA-core kernel does, and shared memory
// (the rings, reused) sums them.
#ifdef KA_EMULATE
using ka_emu_ops::cp_async_16;
using ka_emu_ops::cp_async_commit;
using ka_emu_ops::smem_u32;
template <int N>
inline void cp_async_wait_n() { ka_emu_ops::cp_async_wait(N); }
#else
__device__ __forceinline__ uint32_t smem_u32(const void* p) { return static_cast<uint32_t>(__cvta_generic_to_shared(p)); }
__device__ __forceinline__ void cp_async_16(uint32_t dst, const void* src, int src_bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(src_bytes) : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void cp_async_wait_n() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}
#endif
constexpr int kStages = KA_UNROLL + 1;                   // MMA = 1: ring stages per warp
// A stage: 64 K of the warp's 16·RW rows of B, then of MB rows of A.
constexpr int stage_bytes(int mb) { return (16 * KA_RW + mb) * 128; }
constexpr size_t mma_smem_bytes(int mb) {
  const size_t ring = static_cast<size_t>(KA_WARPS) * kStages * stage_bytes(mb);
  const size_t red = sizeof(float) * KA_WARPS * 16 * KA_RW * static_cast<size_t>(mb);
  return ring > red ? ring : red;
}

template <int DT, int MB>
__global__ void __launch_bounds__(KA_WARPS * 32) mma_kernel(const uint16_t* __restrict__ A, const uint16_t* __restrict__ B,
                                                            uint16_t* __restrict__ C, int M, int N, int K) {
  constexpr int kNT = MB / 8, kRT = KA_RW;  // A tiles of 8 rows, B tiles of 16 rows
  constexpr int kStageBytes = stage_bytes(MB), kBRows = 16 * KA_RW;
  KA_DYN_SMEM(smem);
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  const int g = warp / KA_KW, kw = warp % KA_KW, lg = lane / 4, lq = lane % 4;
  const int n0 = (static_cast<int>(blockIdx.x) * kGroups + g) * kWarpRows;  // the warp's first row of B
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
  const int tiles = (K + 63) / 64;
  const int per = (tiles + KA_KW - 1) / KA_KW;
  const int t0 = kw * per, t1 = tiles < t0 + per ? tiles : t0 + per;
  const int nt = t1 > t0 ? t1 - t0 : 0;  // this warp's K tiles
  unsigned char* ring = smem + static_cast<size_t>(warp) * kStages * kStageBytes;
  const uint4* bv = reinterpret_cast<const uint4*>(B);
  const uint4* av = reinterpret_cast<const uint4*>(A);
  // Stage i <- K tile t0 + i: instruction j copies stage rows 4j .. 4j + 3 (lane / 8), vector
  // lane % 8; stage rows below kBRows are rows n0 + r of B, the rest rows r - kBRows of A.
  auto issue = [&](int i) {
    if (i < nt) {
      unsigned char* st = ring + (i % kStages) * kStageBytes;
      const int v = (t0 + i) * 8 + lane % 8;
#pragma unroll
      for (int j = 0; j < (kBRows + MB) / 4; ++j) {
        const int r = 4 * j + lane / 8;
        const bool is_b = r < kBRows;
        const int row = is_b ? n0 + r : r - kBRows;
        const bool in = (is_b ? row < N : row < M) && v < nvec;
        const uint4* src = (is_b ? bv : av) + (in ? static_cast<size_t>(row) * nvec + v : 0);
        cp_async_16(smem_u32(st + r * 128 + (((lane % 8) ^ (r % 8)) * 16)), src, in ? 16 : 0);
      }
    }
    cp_async_commit();  // an empty group past the end keeps the wait counts uniform
  };
  if (n0 < N) {
#pragma unroll
    for (int i = 0; i < kStages - 1; ++i) issue(i);
    for (int i = 0; i < nt; ++i) {
      cp_async_wait_n<kStages - 2>();
      __syncwarp();
      const unsigned char* st = ring + (i % kStages) * kStageBytes;
#pragma unroll
      for (int c = 0; c < 2; ++c) {  // two chunks of 32 K per stage
        const int vs = 4 * c + lq;    // this lane's vector of the stage's 8
        uint4 a[kNT], b[kRT][2];
#pragma unroll
        for (int t = 0; t < kNT; ++t) {
          const int rr = kBRows + 8 * t + lg;
          a[t] = *reinterpret_cast<const uint4*>(st + rr * 128 + ((vs ^ (rr % 8)) * 16));
        }
#pragma unroll
        for (int r = 0; r < kRT; ++r)
#pragma unroll
          for (int h = 0; h < 2; ++h) {
            const int rr = 16 * r + 8 * h + lg;
            b[r][h] = *reinterpret_cast<const uint4*>(st + rr * 128 + ((vs ^ (rr % 8)) * 16));
          }
#pragma unroll
        for (int s2 = 0; s2 < 2; ++s2)
#pragma unroll
          for (int r = 0; r < kRT; ++r) {
            const uint32_t lo[4] = {b[r][0].x, b[r][0].y, b[r][0].z, b[r][0].w};
            const uint32_t hi[4] = {b[r][1].x, b[r][1].y, b[r][1].z, b[r][1].w};
            const uint32_t fa[4] = {lo[2 * s2], hi[2 * s2], lo[2 * s2 + 1], hi[2 * s2 + 1]};
#pragma unroll
            for (int t = 0; t < kNT; ++t) {
              const uint32_t w[4] = {a[t].x, a[t].y, a[t].z, a[t].w};
              mma16816<DT>(acc[r][t], fa, w[2 * s2], w[2 * s2 + 1]);
            }
          }
      }
      issue(i + kStages - 1);  // into stage i - 1's slot: every lane left it before this iteration's __syncwarp
    }
    cp_async_wait_n<0>();
  }
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
  for (int t = static_cast<int>(threadIdx.x); t < kRows * MB; t += KA_WARPS * 32) {
    const int m = t / kRows, rr = t % kRows, gg = rr / kWarpRows, row = rr % kWarpRows;
    const int nn = static_cast<int>(blockIdx.x) * kRows + rr;
    if (m >= M || nn >= N) continue;
    float sum = 0.f;
    for (int w = 0; w < KA_KW; ++w) sum += part[((gg * KA_KW + w) * kWarpRows + row) * MB + m];
    C[static_cast<size_t>(m) * N + nn] = from_f<DT>(sum);
  }
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
  const dim3 grid(static_cast<unsigned>((N + kRows - 1) / kRows), static_cast<unsigned>((M + MB - 1) / MB));
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
      if constexpr (KA_MAXM >= 64) return launch_mma<DT, 64>(A, B, C, M, N, K);
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
