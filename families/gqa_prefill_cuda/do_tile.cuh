// do_tile.cuh — one work item without warp specialisation (WS=0): the cp.async ring and the
// mma.sync or wgmma mainloop.
// A part of gqa_prefill.cu (family.json "sources"), expanded where the entry includes it: no include guard.
#if !KA_WS  // (WS=1 runs ws_main instead)
__device__ __forceinline__ void do_tile(const Params& p, unsigned char* smem, int b, int tile, int g) {
  unsigned char* const stages = smem;
  unsigned char* const qs_smem = smem + STAGES * STAGE_BYTES;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  int q0, ql, k0 = 0, kl = 0;
  if (b < 0) {
    q0 = 0;
    ql = __ldg(p.qo_indptr);
  } else {
    q0 = __ldg(p.qo_indptr + b);
    ql = __ldg(p.qo_indptr + b + 1) - q0;
    k0 = __ldg(p.kv_indptr + b);
    kl = imax(__ldg(p.kv_indptr + b + 1) - k0, 0);
    if (KA_ORDER >= 1) tile = ceil_div_i(ql, QT) - 1 - tile;
  }
  const int delta = kl - ql;
  const int i0 = tile * QT;                 // first query token (in the sequence) of this tile
  const int nq = imin(QT, ql - i0);         // valid tokens in this tile
  const int i_last = i0 + nq - 1;
  const int kv_hi = imin(kl, imax(i_last + delta + 1, 0));  // keys needed by this tile
  const int64_t row0 = static_cast<int64_t>(q0 + i0) * HQ + g * G;  // (token, head) row of CTA row 0

  // ── a tile whose rows see no key: the empty-row values ──
  if (kv_hi <= 0) {
    const bool nan_rows = !KA_MASKED_ROW_ZERO && kl > 0;  // rows of a non-empty sequence, all masked
    const uint32_t fill = nan_rows ? 0x7fc07fc0u : 0u;
    constexpr int C16 = D / 8;  // 16-byte chunks per row
    for (int i = tid; i < nq * G * C16; i += NT) {
      const int r = i / C16, c = i % C16;
      const int tok = r / G, hh = r % G;
      uint4* dst = reinterpret_cast<uint4*>(p.out + (static_cast<int64_t>(q0 + i0 + tok) * HQ + g * G + hh) * D) + c;
      *dst = make_uint4(fill, fill, fill, fill);
    }
    for (int r = tid; r < nq * G; r += NT)
      p.lse[static_cast<int64_t>(q0 + i0 + r / G) * HQ + g * G + r % G] = kNegInf;
    return;
  }
  const int ntiles = ceil_div_i(kv_hi, T);
  const int nomask = imin(kl, imax(i0 + delta + 1, 0)) / T;  // tiles [0, nomask) need no mask

  // ── loads ──
  const int lcol = tid % KCH, lrow = tid / KCH;
  auto load_idx = [&](int t, int (&idx)[NR]) {
#pragma unroll
    for (int i = 0; i < NR; ++i) {
      const int j = t * T + lrow + i * RPP;
      int r = -1;
      if (j < kv_hi) {
#if KA_PAGED
        r = imin(imax(__ldg(p.indices + k0 + j), 0), p.num_rows - 1);
#else
        r = k0 + j;
#endif
      }
      idx[i] = r;
    }
  };
  auto issue = [&](int stage, const int (&idx)[NR]) {
    unsigned char* ks = stages + stage * STAGE_BYTES;
    unsigned char* vs = ks + T * ROWB;
#pragma unroll
    for (int i = 0; i < NR; ++i) {
      const int row = lrow + i * RPP;
      const bool ok = idx[i] >= 0;
      const int64_t off = (static_cast<int64_t>(ok ? idx[i] : 0) * HKV + g) * D + lcol * 8;
      cp_async_16(smem_u32(ks + tile_off(row, lcol, T)), p.k + off, ok ? 16 : 0);
      cp_async_16(smem_u32(vs + tile_off(row, lcol, T)), p.v + off, ok ? 16 : 0);
    }
  };
  // Q tile: rows r = token r/G, head r%G; rows past the sequence are zero-filled.
#pragma unroll
  for (int i = 0; i < QR; ++i) {
    const int r = lrow + i * RPP;
    const bool ok = r / G < nq;
    const int64_t off = ok ? (row0 + static_cast<int64_t>(r / G) * HQ + r % G) * D + lcol * 8 : 0;
    cp_async_16(smem_u32(qs_smem + tile_off(r, lcol, M)), p.q + off, ok ? 16 : 0);
  }
  cp_async_commit();
  int idx[NR];
  {
    int pre[AHEAD][NR];
#pragma unroll
    for (int s = 0; s < AHEAD; ++s)
      if (s < ntiles) load_idx(s, pre[s]);
#pragma unroll
    for (int s = 0; s < AHEAD; ++s) {
      if (s < ntiles) issue(s, pre[s]);
      cp_async_commit();
    }
    if (AHEAD < ntiles) load_idx(AHEAD, idx);
  }

  // ── per-warp state: rows r0 = lane/4 and r1 = r0+8 of the warp's 16 ──
  const int r0 = lane >> 2, cq = 2 * (lane & 3);
  const int wr0 = warp * 16 + r0, wr1 = wr0 + 8;  // CTA rows
  const int lim0 = imin(i0 + wr0 / G + delta, kl - 1);  // last key row r0 sees
  const int lim1 = imin(i0 + wr1 / G + delta, kl - 1);
  Rows st{kNegInf, kNegInf, 0.f, 0.f};
  float o[NTD][4];
#pragma unroll
  for (int n = 0; n < NTD; ++n) o[n][0] = o[n][1] = o[n][2] = o[n][3] = 0.f;
#if !KA_Q_IN_SMEM
  uint32_t qa[KSTEPS][4];
#endif
  // A-operand address of Q k-step kk for this lane (ldmatrix x4: matrices rows 0-7/8-15, k 0-7/8-15).
  const uint32_t q_base = smem_u32(qs_smem + (warp * 16 + (lane & 15)) * ROWB + (lane >> 4) * 16);
#if KA_MMA
  // O += P V for one tile (see pv_descs).
  auto pv_issue = [&](const uint32_t(&pa)[KT][4], const uint64_t(&dv)[KT]) {
#pragma unroll
    for (int kt = 0; kt < KT; ++kt) wgmma_rs_tb<D>(o, pa[kt], dv[kt]);
  };
#endif
#if KA_OVERLAP
  const unsigned char* const zero_blk = qs_smem + Q_REGION + SORT_BYTES;
  uint32_t pa_prev[KT][4];  // P of the previous tile (A fragments), whose P V is issued with the next S
#endif

  for (int t = 0; t < ntiles; ++t) {
    cp_async_wait_n<STAGES - 2 - PIPE>();
#if KA_MMA
    fence_proxy_async();  // this thread's copies, before wgmma reads them
#endif
    __syncthreads();  // tile t (and Q) landed for every thread; every warp is done with tile t-1
    {
      const int u = t + AHEAD;  // into the stage of tile t-1 (OVERLAP: t-2), which every warp is done with
      if (u < ntiles) issue(u % STAGES, idx);
      cp_async_commit();
      if (u + 1 < ntiles) load_idx(u + 1, idx);
    }
#if !KA_Q_IN_SMEM
    if (t == 0) {
#pragma unroll
      for (int kk = 0; kk < KSTEPS; ++kk) ldsm_x4(q_base + kk * 32, qa[kk][0], qa[kk][1], qa[kk][2], qa[kk][3]);
    }
#endif
    const unsigned char* ks = stages + (t % STAGES) * STAGE_BYTES;
    const unsigned char* vs = ks + T * ROWB;
    // S = Q K^T (16 rows x T keys per warp).
    float s[NTT][4];
#pragma unroll
    for (int j = 0; j < NTT; ++j) s[j][0] = s[j][1] = s[j][2] = s[j][3] = 0.f;
#if KA_MMA
    {
      // Warpgroup warp/4 owns CTA rows 64*(warp/4) .. +63; k-step kk reads 16 columns: column block
      // kk/4, 32 bytes kk%4 into its 128-byte rows (the hardware applies the swizzle to the address).
      // Every descriptor is computed before the fence, so that no other instruction defines a
      // wgmma input between the wgmmas (ptxas would serialize them).
      const uint64_t q0d = sw128_desc(smem_u32(qs_smem) + __shfl_sync(0xffffffffu, warp >> 2, 0) * 64 * 128, 16), k0d = sw128_desc(smem_u32(ks), 16);
      uint64_t dq[KSTEPS], dk[KSTEPS];
#pragma unroll
      for (int kk = 0; kk < KSTEPS; ++kk) {
        dq[kk] = desc_at(q0d, (kk >> 2) * M * 128 + (kk & 3) * 32);
        dk[kk] = desc_at(k0d, (kk >> 2) * T * 128 + (kk & 3) * 32);
      }
#if KA_OVERLAP
      // P V of tile t-1; at t = 0 one of zeros (pv_of_zeros)
      uint64_t dv[KT];
      if (t > 0)
        pv_descs(stages + ((t - 1) % STAGES) * STAGE_BYTES + T * ROWB, dv);
      else
        pv_of_zeros(zero_blk, dv, pa_prev);
#endif
      wgmma_fence();
#pragma unroll
      for (int kk = 0; kk < KSTEPS; ++kk) wgmma_ss<T>(s, dq[kk], dk[kk]);
      wgmma_commit();
#if KA_OVERLAP
      pv_issue(pa_prev, dv);  // behind S of tile t; wait for S only
      wgmma_commit();
      wgmma_wait_n<1>();
#else
      wgmma_wait_n<0>();
#endif
      fence_operands(s);
    }
#else
#pragma unroll
    for (int kk = 0; kk < KSTEPS; kk += 2) {
#if KA_Q_IN_SMEM
      uint32_t qa0[4], qa1[4];
      ldsm_x4(q_base + kk * 32, qa0[0], qa0[1], qa0[2], qa0[3]);
      ldsm_x4(q_base + kk * 32 + 32, qa1[0], qa1[1], qa1[2], qa1[3]);
#else
      const uint32_t(&qa0)[4] = qa[kk];
      const uint32_t(&qa1)[4] = qa[kk + 1];
#endif
#pragma unroll
      for (int j = 0; j < NTT; ++j) {
        uint32_t b0, b1, b2, b3;
        ldsm_x4(smem_u32(ks + (8 * j + (lane & 7)) * ROWB + (lane >> 3) * 16) + kk * 32, b0, b1, b2, b3);
        mma_bf16(s[j], qa0, b0, b1);
        mma_bf16(s[j], qa1, b2, b3);
      }
    }
#endif
    // Softmax (masked on diagonal tiles only), P into pk.
    uint32_t pk[NTT][2];
    float a0, a1;
    if (t >= nomask) softmax_tile<true>(s, st, p.scale_log2, t * T, lim0, lim1, cq, pk, a0, a1);
    else softmax_tile<false>(s, st, p.scale_log2, t * T, lim0, lim1, cq, pk, a0, a1);
#if KA_OVERLAP
    wgmma_wait_n<0>();  // P V of tile t-1 done: O may be rescaled, pa_prev rewritten
    fence_operands(o);
    fence_operands(pa_prev);
#endif
    rescale_o(o, a0, a1);
    // O += P V.
#if KA_OVERLAP
#pragma unroll
    to_frags(pk, pa_prev);
#elif KA_MMA
    {
      uint32_t pa[KT][4];
      uint64_t dv[KT];
      to_frags(pk, pa);
      pv_descs(vs, dv);
      wgmma_fence();
      pv_issue(pa, dv);
    }
    wgmma_commit();
    wgmma_wait_n<0>();
    fence_operands(o);
#else
#pragma unroll
    for (int kt = 0; kt < KT; ++kt) {
      const uint32_t pa[4] = {pk[2 * kt][0], pk[2 * kt][1], pk[2 * kt + 1][0], pk[2 * kt + 1][1]};
      const uint32_t base = smem_u32(vs + (16 * kt + (lane & 7) + 8 * ((lane >> 3) & 1)) * ROWB + (lane >> 4) * 16);
      mma_bf16_ldsm_t(o, pa, base);
    }
#endif
  }
#if KA_OVERLAP
  {
    uint64_t dv[KT];
    pv_descs(stages + ((ntiles - 1) % STAGES) * STAGE_BYTES + T * ROWB, dv);
    wgmma_fence();
    pv_issue(pa_prev, dv);
  }
  wgmma_commit();
  wgmma_wait_n<0>();
  fence_operands(o);
#endif
  cp_async_wait_n<0>();

  write_rows(p, st, o, row0, nq, wr0, lane);
}
#endif  // !KA_WS
