// tile_kernel.cuh — the one-tile sm_90a kernel (PERSIST = 0 and the small-M swap-AB path): TMA ring,
// a producer warp, WG consumer warpgroups of wgmma, split-K.
// A part of gemm_hopper.cu (family.json "sources"), expanded where the entry includes it: no include guard.
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
    mbar_fence_init();
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
    wgmma_wait_n<1>();  // the group of stage i-1 is done: give that stage back
    __syncwarp();
    if (i > 0 && lane == 0) mbar_arrive(empty((i - 1) % STAGES));
  }
  wgmma_wait_n<0>();
#pragma unroll
  for (int i = 0; i < TQ / 2; ++i) fence_operand(acc[i]);

  // Accumulator layout of wgmma m64nN (per warpgroup): warp w of the group holds rows 16w..16w+15;
  // acc[4j + 2h + e] is row 16w + lane/4 + 8h, column 8j + 2(lane%4) + e.
  const int wr = warp & 3;
  const int pl0 = g * 64 + wr * 16 + (lane >> 2);
  const int ql0 = (lane & 3) * 2;

  // Split-K: the last CTA of the tile to arrive finishes it.
  if (splits > 1) {
    splitk_add<WG, TP, TQ>(acc, ws, counters, t, splits, pl0, ql0, s_last);
    if (!s_last) return;
    splitk_take<WG, TP, TQ>(acc, ws, counters, t, pl0, ql0);
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
