// wgmma3_tile.cuh — the WARPS 12 per-key-tile steps and its one-item schedule (tile_wgmma3).
// A part of mla_prefill.cu (family.json "sources"), expanded where the entry includes it: no include guard.
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
  const uint64_t dp0 = W3_PROW == 128 ? sw128_desc(pa, 16) : sw64_desc(pa, 16);
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
