// wgmma8_tile.cuh — the K/V tile gather and the WARPS 8 wgmma schedule (one query tile per CTA pass).
// A part of mla_prefill.cu (family.json "sources"), expanded where the entry includes it: no include guard.
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
