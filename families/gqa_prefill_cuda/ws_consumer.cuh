// ws_consumer.cuh — warp specialisation (WS=1): the consumer warpgroups' mainloop and ws_main.
// A part of gqa_prefill.cu (family.json "sources"), expanded where the entry includes it: no include guard.
// The consumer warps (tid < NT): per item, wait Q; per tile, wait K, S = Q K^T, release K,
// softmax, wait V, O += P V, release V (OVERLAP=1: P V of tile t issued with S of tile t+1).
__device__ __forceinline__ void ws_consumer(const Params& p, unsigned char* smem, const int* ord, int tid, const Bars& br) {
  unsigned char* const stages = smem;
  unsigned char* const qs_smem = smem + STAGES * STAGE_BYTES;
  const int lane = tid & 31, warp = tid >> 5;
  const int r0 = lane >> 2, cq = 2 * (lane & 3);
  const int wr0 = warp * 16 + r0, wr1 = wr0 + 8;  // CTA rows
#if KA_PINGPONG
  const int wg = warp >> 2;
  if (wg == NWG - 1) named_arrive(2, 256);  // warpgroup 0 takes the first turn
#endif
  int it = 0, nql = 0;  // K/V tiles and Q tiles consumed so far
#if KA_OVERLAP
  // P V of the ring's last tile (tile it - 1: an item's last) alone, NK k-steps, waited for; its V
  // released.
  auto last_pv = [&](auto nk, float(&oo)[NTD][4], const uint32_t(&pp)[KT][4]) {
    const int il = it - 1, sl = il % STAGES;
    mbar_wait(br.full_v + 8 * sl, (il / STAGES) & 1);
    __syncwarp();
    fence_proxy_async();
    uint64_t dv[KT];
    pv_descs(stages + sl * STAGE_BYTES + T * ROWB, dv);
    wgmma_fence();
#pragma unroll
    for (int kt = 0; kt < decltype(nk)::value; ++kt) wgmma_rs_tb<D>(oo, pp[kt], dv[kt]);
    wgmma_commit();
    wgmma_wait_n<0>();
    fence_operands(oo);
    if (lane == 0) mbar_arrive(br.empty_v + 8 * sl);
  };
#endif
#if KA_XITEM
  // XITEM=1: one item's end overlaps the next one's start. An item's last P V is not issued at its
  // end but with the next item's first S (its V stage is the ring's previous tile, as within an
  // item); its softmax state and rows wait in shared memory (XS_OFF: registers are the limit here,
  // ptxas serialized the wgmmas with them in registers), and its O is written after that P V
  // retired, before the new item's first rescale (O then starts from 0). So at an item's first tile
  // an earlier item is pending exactly when this is not the first item with keys (nql > 1). The
  // last item's P V and write follow the walk.
  float o[NTD][4];
#pragma unroll
  for (int n = 0; n < NTD; ++n) o[n][0] = o[n][1] = o[n][2] = o[n][3] = 0.f;
  uint32_t pa_prev[KT][4];
  float4* const xs_st = reinterpret_cast<float4*>(smem + XS_OFF) + tid;                // this thread's state
  int64_t* const xs_row = reinterpret_cast<int64_t*>(smem + XS_OFF + 16 * NT) + 2 * warp;  // row0, then nq
  // The pending item's rows (write_rows one row at a time: half the registers while the next item's
  // P is held).
  auto write_prev = [&]() {
    const float4 v = *xs_st;
    write_rows<true>(p, Rows{v.x, v.y, v.z, v.w}, o, xs_row[0], static_cast<int>(xs_row[1]), wr0, lane);
  };
#endif
  auto item = [&](int b, int tile, int g) {
    const Item w = item_geom(p, b, tile, g);
    if (w.ntiles == 0) {
      // ── rows that see no key: the empty-row values (as do_tile) ──
      const bool nan_rows = !KA_MASKED_ROW_ZERO && w.kl > 0;
      const uint32_t fill = nan_rows ? 0x7fc07fc0u : 0u;
      constexpr int C16 = D / 8;
      for (int i = tid; i < w.nq * G * C16; i += NT) {
        const int r = i / C16, c = i % C16;
        const int tok = r / G, hh = r % G;
        uint4* dst = reinterpret_cast<uint4*>(p.out + (static_cast<int64_t>(w.q0 + w.i0 + tok) * HQ + g * G + hh) * D) + c;
        *dst = make_uint4(fill, fill, fill, fill);
      }
      for (int r = tid; r < w.nq * G; r += NT)
        p.lse[static_cast<int64_t>(w.q0 + w.i0 + r / G) * HQ + g * G + r % G] = kNegInf;
      return;
    }
    const int lim0 = imin(w.i0 + wr0 / G + w.delta, w.kl - 1);  // last key row r0 sees
    const int lim1 = imin(w.i0 + wr1 / G + w.delta, w.kl - 1);
    Rows st{kNegInf, kNegInf, 0.f, 0.f};
#if !KA_XITEM
    float o[NTD][4];
#pragma unroll
    for (int n = 0; n < NTD; ++n) o[n][0] = o[n][1] = o[n][2] = o[n][3] = 0.f;
#endif
#if KA_OVERLAP
    const unsigned char* const zero_blk = qs_smem + Q_REGION + SORT_BYTES;
#if !KA_XITEM
    uint32_t pa_prev[KT][4];
#endif
#endif
    const int qb = QB2 ? (nql & 1) : 0;  // this item's Q buffer
    mbar_wait(br.qfull(qb), (QB2 ? (nql >> 1) : nql) & 1);  // (made visible to the wgmma by the fence after the K wait)
    ++nql;
#if KA_QREG
    // Q into registers as the A fragments of the S wgmmas (k-step kk: chunks 2kk, 2kk+1 of the
    // warp's 16 rows; ldmatrix x4 matrices rows 0-7 / 8-15 x chunk 2kk / 2kk+1), then released.
    __syncwarp();
    uint32_t qf[KSTEPS][4];
    {
      const int qr = warp * 16 + (lane & 15);
#pragma unroll
      for (int kk = 0; kk < KSTEPS; ++kk)
        ldsm_x4(smem_u32(qs_smem + tile_off(qr, 2 * kk + (lane >> 4), M)), qf[kk][0], qf[kk][1], qf[kk][2], qf[kk][3]);
    }
    __syncwarp();
    if (lane == 0) mbar_arrive(br.qempty(qb));  // the producer may load the next item's Q
#else
    // (the warpgroup index through a shuffle: ptxas then knows it is warp-uniform and builds the
    // descriptors in uniform registers, without 16 R2UR moves per tile)
    const uint64_t q0d =
        sw128_desc(smem_u32(qs_smem + qb * Q_BYTES) + __shfl_sync(0xffffffffu, warp >> 2, 0) * 64 * 128, 16);
#endif
    // One key tile t; NC, the S columns computed: T, or T/2 for an item's last tile whose keys end
    // in its first half (the other columns stay 0 and are masked like every key past kv_hi), whose
    // P V then stops at T/2 too (P is 0 past kv_hi). Two instantiations of the whole step, each with
    // its own wgmma stages: a choice of wgmma shape inside one fence..commit stage makes ptxas
    // serialize every wgmma (C7515). Counted on 016's large workloads, the seed's key tiles are
    // 1.13x / 1.11x the unmasked scores, most of the excess in each item's last tile.
    auto tile_step = [&](auto nc, int t) {
      constexpr int NC = decltype(nc)::value;
      const int s = it % STAGES;
      const uint32_t ph = (it / STAGES) & 1;
      mbar_wait(br.full_k + 8 * s, ph);
#if KA_OVERLAP
      // The P V issued with this S: tile t-1's, or (XITEM=1, t = 0) the previous item's last tile,
      // the ring's previous tile as well.
#if KA_XITEM
      const bool pv_prev = t > 0 || nql > 1;
#else
      const bool pv_prev = t > 0;
#endif
      const int sp = (it + STAGES - 1) % STAGES;  // stage of the ring's previous tile
      if (pv_prev) mbar_wait(br.full_v + 8 * sp, ((it - 1) / STAGES) & 1);
#endif
      __syncwarp();         // the lanes leave the spin loops together before the .aligned wgmma
      fence_proxy_async();  // the producer's cp.async data (generic proxy) before the wgmma reads
      const unsigned char* ks = stages + s * STAGE_BYTES;
      float sc[NTT][4];
#pragma unroll
      for (int j = 0; j < NTT; ++j) sc[j][0] = sc[j][1] = sc[j][2] = sc[j][3] = 0.f;
      float(&scn)[NC / 8][4] = reinterpret_cast<float(&)[NC / 8][4]>(sc);  // the columns S computes
      {
        const uint64_t k0d = sw128_desc(smem_u32(ks), 16);
        uint64_t dk[KSTEPS];
#pragma unroll
        for (int kk = 0; kk < KSTEPS; ++kk) dk[kk] = desc_at(k0d, (kk >> 2) * T * 128 + (kk & 3) * 32);
#if !KA_QREG
        uint64_t dq[KSTEPS];
#pragma unroll
        for (int kk = 0; kk < KSTEPS; ++kk) dq[kk] = desc_at(q0d, (kk >> 2) * M * 128 + (kk & 3) * 32);
#endif
#if KA_OVERLAP
        uint64_t dv[KT];
        if (pv_prev)
          pv_descs(stages + sp * STAGE_BYTES + T * ROWB, dv);
        else
          pv_of_zeros(zero_blk, dv, pa_prev);
#endif
#if KA_PINGPONG
        named_sync(2 + wg, 256);  // this warpgroup's turn
#endif
        wgmma_fence();
#pragma unroll
        for (int kk = 0; kk < KSTEPS; ++kk) {
#if KA_QREG
          wgmma_rs<NC>(scn, qf[kk], dk[kk]);
#else
          wgmma_ss<NC>(scn, dq[kk], dk[kk]);
#endif
        }
        wgmma_commit();
#if KA_OVERLAP
#pragma unroll
        for (int kt = 0; kt < KT; ++kt) wgmma_rs_tb<D>(o, pa_prev[kt], dv[kt]);  // P V of tile t-1
        wgmma_commit();
#endif
#if KA_PINGPONG
        named_arrive(2 + (wg + 1 == NWG ? 0 : wg + 1), 256);  // the next warpgroup's turn
#endif
#if KA_OVERLAP
        wgmma_wait_n<1>();
#else
        wgmma_wait_n<0>();
#endif
        fence_operands(sc);
      }
      if (lane == 0) {
        mbar_arrive(br.empty_k + 8 * s);                                  // K of tile t read
        if (!KA_QREG && t == w.ntiles - 1) mbar_arrive(br.qempty(qb));  // Q read for the last time in this item
      }
      // Softmax (masked on diagonal tiles only), P into pk.
      uint32_t pk[NTT][2];
      float a0, a1;
      if (t >= w.nomask) softmax_tile<true>(sc, st, p.scale_log2, t * T, lim0, lim1, cq, pk, a0, a1);
      else softmax_tile<false>(sc, st, p.scale_log2, t * T, lim0, lim1, cq, pk, a0, a1);
#if KA_OVERLAP
      wgmma_wait_n<0>();  // P V of tile t-1 done: O may be rescaled, pa_prev rewritten, V of t-1 released
      fence_operands(o);
      fence_operands(pa_prev);
      if (pv_prev && lane == 0) mbar_arrive(br.empty_v + 8 * sp);
#endif
#if KA_XITEM
      // At t = 0, O is this item's zeros or the previous item's result (written after this step):
      // neither takes this item's factors.
      if (t > 0) rescale_o(o, a0, a1);
#else
      rescale_o(o, a0, a1);
#endif
#if KA_OVERLAP
      to_frags(pk, pa_prev);
#else
      // O += P V.
      mbar_wait(br.full_v + 8 * s, ph);
      __syncwarp();
      fence_proxy_async();
      {
        uint32_t pa[KT][4];
        uint64_t dv[KT];
        to_frags(pk, pa);
        pv_descs(ks + T * ROWB, dv);
        wgmma_fence();
#pragma unroll
        for (int kt = 0; kt < NC / 16; ++kt) wgmma_rs_tb<D>(o, pa[kt], dv[kt]);
      }
      wgmma_commit();
      wgmma_wait_n<0>();
      fence_operands(o);
      if (lane == 0) mbar_arrive(br.empty_v + 8 * s);  // V of tile t read
#endif
    };
    const bool half_last = w.kv_hi - (w.ntiles - 1) * T <= T / 2;
    const int nfull = w.ntiles - (half_last ? 1 : 0);
#if KA_XITEM
    // After the first tile step, outside its wgmma stages (in it, the write made ptxas serialize the
    // wgmmas, C7511): the previous item's O is complete, written, and O restarts from 0 before the
    // P V of this item's first tile.
    auto after_first = [&]() {
      if (nql > 1) {
        write_prev();
#pragma unroll
        for (int n = 0; n < NTD; ++n) o[n][0] = o[n][1] = o[n][2] = o[n][3] = 0.f;
      }
    };
#else
    auto after_first = [] {};
#endif
#pragma unroll 1
    for (int t = 0; t < nfull; ++t, ++it) {
      tile_step(IntC<T>{}, t);
      if (t == 0) after_first();
    }
    if (half_last) {
      tile_step(IntC<T / 2>{}, nfull);
      ++it;
      if (nfull == 0) after_first();
    }
#if KA_XITEM
    // This item's last P V goes with the next item's first S (or after the walk).
    *xs_st = make_float4(st.m0, st.m1, st.l0, st.l1);
    if (lane == 0) {
      xs_row[0] = w.row0;
      xs_row[1] = w.nq;
    }
    __syncwarp();
#else
#if KA_OVERLAP
    if (half_last) last_pv(IntC<KT / 2>{}, o, pa_prev);
    else last_pv(IntC<KT>{}, o, pa_prev);
#endif
    write_rows(p, st, o, w.row0, w.nq, wr0, lane);
#endif
  };
  for_each_ws_item(p, ord, lane, false, br, item);
#if KA_XITEM
  if (nql > 0) {  // the last item's last P V (the ring's last tile), then its rows
    last_pv(IntC<KT>{}, o, pa_prev);
    write_prev();
  }
#endif
}

__device__ __forceinline__ void ws_main(const Params& p, unsigned char* smem, const int* ord) {
  const int tid = threadIdx.x;
  const Bars br(smem_u32(smem + BAR_OFF), smem + BAR_OFF);
  if (tid == 0) {
    for (int s = 0; s < STAGES; ++s) {
      mbar_init(br.full_k + 8 * s, PROD);
      mbar_init(br.full_v + 8 * s, PROD);
      mbar_init(br.empty_k + 8 * s, W);
      mbar_init(br.empty_v + 8 * s, W);
    }
    for (int b = 0; b < 1 + QB2; ++b) {
      mbar_init(br.qfull(b), PROD);
      mbar_init(br.qempty(b), W);
    }
    if constexpr (DYN) {
      for (int s = 0; s < 2; ++s) {
        mbar_init(br.item_full + 8 * s, 1);
        mbar_init(br.item_empty + 8 * s, W + 4);
      }
    }
    mbar_fence_init();
  }
#if KA_OVERLAP
  fence_proxy_async();  // the zero block's stores before any wgmma reads it
#endif
  __syncthreads();  // barriers initialised (and the zero block written) before the roles split
  if (tid >= NT) {
    if constexpr (NWG > 1) setmaxnreg_dec<PROD_REGS>();
    ws_producer(p, smem, ord, tid - NT, br);
  } else {
    if constexpr (NWG > 1) setmaxnreg_inc<CONS_REGS>();
    ws_consumer(p, smem, ord, tid, br);
  }
}
