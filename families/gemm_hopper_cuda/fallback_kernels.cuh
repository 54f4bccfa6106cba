// fallback_kernels.cuh — the pre-Hopper mma.sync kernel, the plain fp32 kernel for unaligned operands,
// and the probe of what the device code was built for.
// A part of gemm_hopper.cu (family.json "sources"), expanded where the entry includes it: no include guard.
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
        ka_dev::cp_async_16(smem_u32(&sA[stage][row * LD + chunk * 8]), src, ok ? 16 : 0);
      }
      {
        const int gn = n0 + row;
        const bool ok = gn < N && k < K;
        const T* src = ok ? B + static_cast<int64_t>(gn) * K + k : B;
        ka_dev::cp_async_16(smem_u32(&sB[stage][row * LD + chunk * 8]), src, ok ? 16 : 0);
      }
    }
    ka_dev::cp_async_commit();
  };

  load(0, 0);
  for (int kt = 0; kt < kTiles; ++kt) {
    if (kt + 1 < kTiles) load((kt + 1) & 1, kt + 1);
    else ka_dev::cp_async_commit();
    ka_dev::cp_async_wait_n<1>();
    __syncthreads();
    const T* a_s = sA[kt & 1];
    const T* b_s = sB[kt & 1];
#pragma unroll
    for (int kk = 0; kk < 2; ++kk) {
      uint32_t af[2][4], bf[4][2];
#pragma unroll
      for (int mi = 0; mi < 2; ++mi) {
        const int row = wm * 32 + mi * 16 + (lane & 15), col = kk * 16 + (lane >> 4) * 8;
        ka_dev::ldsm_x4(smem_u32(a_s + row * LD + col), af[mi][0], af[mi][1], af[mi][2], af[mi][3]);
      }
#pragma unroll
      for (int nj = 0; nj < 2; ++nj) {
        const int n = wn * 32 + nj * 16 + (lane & 7) + (lane >> 4) * 8, col = kk * 16 + ((lane >> 3) & 1) * 8;
        ka_dev::ldsm_x4(smem_u32(b_s + n * LD + col), bf[2 * nj][0], bf[2 * nj][1], bf[2 * nj + 1][0], bf[2 * nj + 1][1]);
      }
#pragma unroll
      for (int mi = 0; mi < 2; ++mi)
#pragma unroll
        for (int ni = 0; ni < 4; ++ni) {
          if constexpr (std::is_same<T, __half>::value) ka_dev::mma_f16(acc[mi][ni], af[mi], bf[ni][0], bf[ni][1]);
          else ka_dev::mma_bf16(acc[mi][ni], af[mi], bf[ni][0], bf[ni][1]);
        }
    }
    __syncthreads();
  }
  ka_dev::cp_async_wait_n<0>();
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
