// 004_gemm_n128_k2048 — C = A @ B.T with a plain tiled WMMA (tensor-core mma.sync) kernel, no libraries.
// fp16 in, fp32 accumulation, fp16 out (round to nearest), as torch.matmul does for fp16.
// A [M, K], B [N, K], C [M, N], all row-major; every size is read from the arguments (N = 128 and
// K = 2048 in the definition, M varies from 1 to ~16k).
//
// Block tile 64×64×32, 4 warps in a 2×2 grid each owning a 32×32 sub-tile (2×2 WMMA 16×16×16
// fragments). Shared-memory double buffering with a register prefetch of the next K-slice. B is
// stored row-major [N, K], which is exactly a column-major K×N operand, so it feeds
// wmma::matrix_b<col_major> directly. 16-byte loads when K % 8 == 0 and A, B are 16-byte aligned;
// otherwise a bounds-checked scalar path. Launches on the default stream.
#include <kernelarc/abi.h>

#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <mma.h>

#include <cstdint>

namespace {

using namespace nvcuda;

constexpr int BM = 64, BN = 64, BK = 32;
constexpr int kThreads = 128;
constexpr int LDS = BK + 8;   // halves per smem row (80 bytes): keeps 16-byte stores aligned, spreads banks
constexpr int LDC = BN + 4;   // floats per row of the epilogue staging tile
constexpr int kTileHalves = BM * LDS;  // BM == BN
constexpr int kSmemBytes = 2 * 2 * kTileHalves * 2;  // {A, B} × 2 stages × halves × 2 bytes = 20480
static_assert(BM * LDC * 4 <= kSmemBytes, "epilogue tile must fit in the operand buffers");

struct Regs {
  uint4 a[2], b[2];
};

// Each thread moves 2 × 16 bytes of the A tile and 2 × 16 bytes of the B tile per K-slice.
__device__ __forceinline__ uint4 load_vec(const __half* __restrict__ src, int64_t rows, int64_t row, int64_t K,
                                          int64_t k, bool vec) {
  uint4 v = make_uint4(0, 0, 0, 0);
  if (row >= rows) return v;
  const __half* p = src + row * K + k;
  if (vec) {
    if (k < K) v = *reinterpret_cast<const uint4*>(p);  // K % 8 == 0, so k < K means k + 8 <= K
  } else {
    uint16_t e[8];
#pragma unroll
    for (int j = 0; j < 8; ++j) e[j] = (k + j < K) ? __half_as_ushort(p[j]) : static_cast<uint16_t>(0);
    v.x = e[0] | (static_cast<uint32_t>(e[1]) << 16);
    v.y = e[2] | (static_cast<uint32_t>(e[3]) << 16);
    v.z = e[4] | (static_cast<uint32_t>(e[5]) << 16);
    v.w = e[6] | (static_cast<uint32_t>(e[7]) << 16);
  }
  return v;
}

__global__ void __launch_bounds__(kThreads)
gemm_wmma_kernel(const __half* __restrict__ A, const __half* __restrict__ B, __half* __restrict__ C, int64_t M,
                 int64_t N, int64_t K, bool vec) {
  __shared__ __align__(128) unsigned char smem[kSmemBytes];
  __half* As = reinterpret_cast<__half*>(smem);       // [2][BM][LDS]
  __half* Bs = As + 2 * kTileHalves;                   // [2][BN][LDS]

  const int tid = threadIdx.x;
  const int warp = tid >> 5;
  const int wm = warp >> 1, wn = warp & 1;  // warp's 32×32 sub-tile
  const int64_t m0 = static_cast<int64_t>(blockIdx.x) * BM;
  const int64_t n0 = static_cast<int64_t>(blockIdx.y) * BN;

  auto gload = [&](int64_t k0, Regs& r) {
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      const int idx = tid + i * kThreads;  // 0..255: 64 rows × 4 vectors
      const int row = idx >> 2, cv = idx & 3;
      r.a[i] = load_vec(A, M, m0 + row, K, k0 + cv * 8, vec);
      r.b[i] = load_vec(B, N, n0 + row, K, k0 + cv * 8, vec);
    }
  };
  auto sstore = [&](int stage, const Regs& r) {
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      const int idx = tid + i * kThreads;
      const int row = idx >> 2, cv = idx & 3;
      *reinterpret_cast<uint4*>(As + stage * kTileHalves + row * LDS + cv * 8) = r.a[i];
      *reinterpret_cast<uint4*>(Bs + stage * kTileHalves + row * LDS + cv * 8) = r.b[i];
    }
  };

  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[2][2];
#pragma unroll
  for (int i = 0; i < 2; ++i)
#pragma unroll
    for (int j = 0; j < 2; ++j) wmma::fill_fragment(acc[i][j], 0.0f);

  const int64_t nk = (K + BK - 1) / BK;
  Regs regs;
  gload(0, regs);
  sstore(0, regs);
  __syncthreads();

  for (int64_t kt = 0; kt < nk; ++kt) {
    const int stage = static_cast<int>(kt & 1);
    if (kt + 1 < nk) gload((kt + 1) * BK, regs);  // in flight while the tensor cores work

    const __half* as = As + stage * kTileHalves;
    const __half* bs = Bs + stage * kTileHalves;
#pragma unroll
    for (int kk = 0; kk < BK; kk += 16) {
      wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> fa[2];
      wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::col_major> fb[2];
#pragma unroll
      for (int i = 0; i < 2; ++i) wmma::load_matrix_sync(fa[i], as + (wm * 32 + i * 16) * LDS + kk, LDS);
#pragma unroll
      for (int j = 0; j < 2; ++j) wmma::load_matrix_sync(fb[j], bs + (wn * 32 + j * 16) * LDS + kk, LDS);
#pragma unroll
      for (int i = 0; i < 2; ++i)
#pragma unroll
        for (int j = 0; j < 2; ++j) wmma::mma_sync(acc[i][j], fa[i], fb[j], acc[i][j]);
    }

    if (kt + 1 < nk) sstore(stage ^ 1, regs);  // the other stage was last read before the previous barrier
    __syncthreads();
  }

  // Epilogue: stage the fp32 tile in shared memory, then round to fp16 and write with bounds checks.
  float* Cs = reinterpret_cast<float*>(smem);  // [BM][LDC]; all reads of As/Bs ended at the last barrier
#pragma unroll
  for (int i = 0; i < 2; ++i)
#pragma unroll
    for (int j = 0; j < 2; ++j)
      wmma::store_matrix_sync(Cs + (wm * 32 + i * 16) * LDC + wn * 32 + j * 16, acc[i][j], LDC, wmma::mem_row_major);
  __syncthreads();
  for (int idx = tid; idx < BM * BN; idx += kThreads) {
    const int r = idx / BN, c = idx % BN;
    const int64_t m = m0 + r, n = n0 + c;
    if (m < M && n < N) C[m * N + n] = __float2half_rn(Cs[r * LDC + c]);
  }
}

}  // namespace

void run(const ka::TensorArg& A, const ka::TensorArg& B, const ka::TensorArg& C) {
  const int64_t M = A.size(0), K = A.size(1), N = B.size(0);
  if (M <= 0 || N <= 0) return;
  const auto* a = A.ptr<const __half>();
  const auto* b = B.ptr<const __half>();
  auto* c = C.ptr<__half>();
  const bool vec = (K % 8 == 0) && (reinterpret_cast<uintptr_t>(a) % 16 == 0) && (reinterpret_cast<uintptr_t>(b) % 16 == 0);
  dim3 grid(static_cast<unsigned>((M + BM - 1) / BM), static_cast<unsigned>((N + BN - 1) / BN));
  gemm_wmma_kernel<<<grid, kThreads>>>(a, b, c, M, N, K, vec);
}
