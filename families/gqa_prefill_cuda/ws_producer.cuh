// ws_producer.cuh — warp specialisation (WS=1): work items, their barriers, the roles' walk over the
// items and the producer warpgroup.
// A part of gqa_prefill.cu (family.json "sources"), expanded where the entry includes it: no include guard.
// ── warp specialisation (WS=1; see "Warp specialisation" at the top) ─────────────────────────────
// One work item's geometry, as do_tile computes it.
struct Item {
  int q0, k0, kl, delta, i0, nq, kv_hi, ntiles, nomask;
  int64_t row0;  // (token, head) row of CTA row 0
};
__device__ __forceinline__ Item item_geom(const Params& p, int b, int tile, int g) {
  Item w;
  int ql;
  w.k0 = 0;
  w.kl = 0;
  if (b < 0) {
    w.q0 = 0;
    ql = __ldg(p.qo_indptr);
  } else {
    w.q0 = __ldg(p.qo_indptr + b);
    ql = __ldg(p.qo_indptr + b + 1) - w.q0;
    w.k0 = __ldg(p.kv_indptr + b);
    w.kl = imax(__ldg(p.kv_indptr + b + 1) - w.k0, 0);
    if (KA_ORDER >= 1) tile = ceil_div_i(ql, QT) - 1 - tile;
  }
  w.delta = w.kl - ql;
  w.i0 = tile * QT;
  w.nq = imin(QT, ql - w.i0);
  w.kv_hi = imin(w.kl, imax(w.i0 + w.nq - 1 + w.delta + 1, 0));
  w.ntiles = w.kv_hi > 0 ? ceil_div_i(w.kv_hi, T) : 0;
  w.nomask = imin(w.kl, imax(w.i0 + w.delta + 1, 0)) / T;
  w.row0 = static_cast<int64_t>(w.q0 + w.i0) * HQ + g * G;
  return w;
}
// f(b, tile, g) for each work item of this CTA in order (PERSIST=0: the one of blockIdx). Producer
// and consumers walk the same items independently (no CTA barrier between items).
template <typename F>
__device__ __forceinline__ void for_each_item(const Params& p, const int* ord, int lane, F&& f) {
  if constexpr (KA_PERSIST == 0) {
    int b, tile;
    if (map_tile(p, ord, blockIdx.x, lane, b, tile)) f(b, tile, static_cast<int>(blockIdx.y));
  } else {
    TileCursor<QT> cur;
    const int64_t items = static_cast<int64_t>(p.tiles) * HKV;
    for (int64_t w = blockIdx.x; w < items; w += gridDim.x) {
      int b, tile;
      if (!cur.advance(p.qo_indptr, p.B, ord, static_cast<int>(w / HKV), b, tile)) break;
      f(b, tile, static_cast<int>(w % HKV));
    }
  }
}
// mbarrier addresses: full_k, full_v, empty_k, empty_v (STAGES each), q_full, q_empty; PERSIST=2:
// item_full, item_empty (2 each), and the item slots (2 ints, generic pointer).
struct Bars {
  uint32_t full_k, full_v, empty_k, empty_v, q_full, q_empty, item_full, item_empty;
  volatile int* slots;
  __device__ __forceinline__ Bars(uint32_t base, unsigned char* base_ptr)
      : full_k(base), full_v(base + 8 * STAGES), empty_k(base + 16 * STAGES), empty_v(base + 24 * STAGES),
        q_full(base + 32 * STAGES), q_empty(base + 32 * STAGES + 8), item_full(base + 32 * STAGES + 16),
        item_empty(base + 32 * STAGES + 32), slots(reinterpret_cast<volatile int*>(base_ptr + 32 * STAGES + 48)) {}
  // Q buffer b's barriers (b = 1 only with QBUFS=2: at +64 and +72).
  __device__ __forceinline__ uint32_t qfull(int b) const { return b ? q_full + 64 : q_full; }
  __device__ __forceinline__ uint32_t qempty(int b) const { return b ? q_full + 72 : q_empty; }
};
#if KA_PERSIST == 2
// PERSIST=2's work counter in global memory: [0] the items claimed past the first gridDim.x, [1] the
// CTAs done claiming.
// The last CTA done resets both, so every launch starts from zero (launches of one loaded candidate
// must not overlap: the judge runs one at a time).
__device__ int g_work[2];
#endif
// The WS=1 roles' walk over their work items: for_each_item's, or with PERSIST=2 the items claimed
// at run time. There, thread 0 of the producer warpgroup (the claimer) takes item blockIdx.x first,
// then the next unclaimed one (gridDim.x + an atomicAdd on the counter) each time, and publishes it
// in slot n%2 (mbarrier item_full, 1 arrival); every warp of both roles waits for it, reads it and
// releases the slot (item_empty: lane 0 of each of the W consumer and 4 producer warps), so both
// roles walk the same items, in claim order (increasing, as the forward-only cursor needs). An item
// at or past the end (-1, or past the last tile) ends the walk; the claimer then counts its CTA
// done. Greedy claiming balances CTAs of unequal items (heaviest first with ORDER >= 1), and the
// producer loads the next item's Q and K/V while the consumers finish the current one.
template <typename F>
__device__ __forceinline__ void for_each_ws_item(const Params& p, const int* ord, int lane, bool claimer, const Bars& br,
                                                 F&& f) {
#if KA_PERSIST == 2
  const int items = p.tiles * HKV;
  TileCursor<QT> cur;
  for (int n = 0;; ++n) {
    const int s = n & 1;
    if (claimer) {
      if (n >= 2) mbar_wait(br.item_empty + 8 * s, ((n >> 1) - 1) & 1);
      // The first item is the CTA's own (no claim, so its loads start at once); claims count from
      // gridDim.x.
      const int w = n == 0 ? static_cast<int>(blockIdx.x) : static_cast<int>(gridDim.x) + atomicAdd(&g_work[0], 1);
      br.slots[s] = w < items ? w : -1;
      mbar_arrive(br.item_full + 8 * s);  // (release: the slot's store before the arrival)
    }
    mbar_wait(br.item_full + 8 * s, (n >> 1) & 1);
    const int w = br.slots[s];
    __syncwarp();
    if (lane == 0) mbar_arrive(br.item_empty + 8 * s);
    int b, tile;
    if (w < 0 || !cur.advance(p.qo_indptr, p.B, ord, w / HKV, b, tile)) break;
    f(b, tile, w % HKV);
  }
  if (claimer) {
    __threadfence();  // this CTA's last claim before its "done"
    if (atomicAdd(&g_work[1], 1) == static_cast<int>(gridDim.x) - 1) {
      atomicExch(&g_work[0], 0);
      atomicExch(&g_work[1], 0);
    }
  }
#else
  (void)claimer, (void)br;
  for_each_item(p, ord, lane, f);
#endif
}

// The producer warpgroup (ptid = thread 0..127 of it): Q once per item with keys, then the item's
// K/V tiles into the ring.
__device__ __forceinline__ void ws_producer(const Params& p, unsigned char* smem, const int* ord, int ptid, const Bars& br) {
  constexpr int RPI = PROD / KCH;            // rows per pass of the producer's threads
  constexpr int NRP = T / RPI;               // K (and V) rows per thread per tile
  constexpr int NQP = M / RPI;               // Q rows per thread
  constexpr int SWP = RPI >= 8 ? 1 : 8 / RPI;  // rows prow + RPI*i repeat their swizzle phase every SWP values of i
  static_assert(RPI % 8 == 0 || RPI * SWP == 8, "WS=1 producer layout");
  static_assert(T % RPI == 0 && M % RPI == 0 && NRP % SWP == 0, "WS=1 producer rows");
  constexpr int64_t RSTRIDE = static_cast<int64_t>(HKV) * D;  // elements from one K/V row to the next
  const int lane = ptid & 31;
  const int prow = ptid / KCH, pcol = ptid % KCH;
  // tile_off(prow + RPI*i, pcol, T) = koff[i % SWP] + 128 * RPI * (i - i % SWP)
  uint32_t koff[SWP];
#pragma unroll
  for (int j = 0; j < SWP; ++j) koff[j] = static_cast<uint32_t>(tile_off(prow + RPI * j, pcol, T));
  const uint32_t st0 = smem_u32(smem), qs0 = smem_u32(smem + STAGES * STAGE_BYTES);
  int it = 0, nql = 0;  // K/V tiles and Q tiles issued so far
  auto item = [&](int b, int tile, int g) {
    const Item w = item_geom(p, b, tile, g);
    if (w.ntiles == 0) return;  // no key: the consumers write the empty-row values
    // Q buffer of this item (QBUFS=2: items alternate between two, so the next item's Q loads while
    // the consumers still read this one's) and the fills of that buffer so far.
    const int qb = QB2 ? (nql & 1) : 0, qn = QB2 ? (nql >> 1) : nql;
    if (qn > 0) mbar_wait(br.qempty(qb), (qn - 1) & 1);
    const uint32_t qs = qs0 + qb * Q_BYTES;
    if constexpr (RPI % G == 0 && RPI % 8 == 0) {
      // Row prow + RPI*i is token prow/G + (RPI/G)*i, head prow%G, at tile_off(prow, pcol, M) +
      // 128*RPI*i: no per-row division (ptxas hoisted 2 x NQP quotients out of the persistent item
      // loop and spilled them at PROD_REGS).
      const int tok0 = prow / G;
      const uint16_t* const q0 = p.q + (w.row0 + static_cast<int64_t>(tok0) * HQ + prow % G) * D + pcol * 8;
      const uint32_t qd = qs + static_cast<uint32_t>(tile_off(prow, pcol, M));
#pragma unroll
      for (int i = 0; i < NQP; ++i) {
        const bool ok = tok0 + (RPI / G) * i < w.nq;
        cp_async_16(qd + 128 * RPI * i, ok ? q0 + static_cast<int64_t>((RPI / G) * i) * HQ * D : p.q, ok ? 16 : 0);
      }
    } else {
#pragma unroll
      for (int i = 0; i < NQP; ++i) {
        const int r = prow + RPI * i;
        const bool ok = r / G < w.nq;
        const int64_t off = ok ? (w.row0 + static_cast<int64_t>(r / G) * HQ + r % G) * D + pcol * 8 : 0;
        cp_async_16(qs + tile_off(r, pcol, M), p.q + off, ok ? 16 : 0);
      }
    }
    cp_async_mbar_arrive_noinc(br.qfull(qb));
    ++nql;
    const uint16_t* const kb = p.k + g * D + pcol * 8;
    const uint16_t* const vb = p.v + g * D + pcol * 8;
#pragma unroll 1
    for (int u = 0; u < w.ntiles; ++u, ++it) {
      // Source rows of keys u*T + prow + RPI*i (-1: past kv_hi, zero-filled); loaded before the
      // wait on "empty", so that their latency hides behind it.
      int rows[NRP];
#pragma unroll
      for (int i = 0; i < NRP; ++i) {
        const int j = u * T + prow + RPI * i;
        int r = -1;
        if (j < w.kv_hi) {
#if KA_PAGED
          r = imin(imax(__ldg(p.indices + w.k0 + j), 0), p.num_rows - 1);
#else
          r = w.k0 + j;
#endif
        }
        rows[i] = r;
      }
      const int s = it % STAGES;
      const uint32_t par = ((it / STAGES) - 1) & 1;  // fill k-1 of stage s, released by every consumer warp
      const uint32_t ks = st0 + s * STAGE_BYTES, vs = ks + T * ROWB;
      if (it >= STAGES) mbar_wait(br.empty_k + 8 * s, par);
#pragma unroll
      for (int i = 0; i < NRP; ++i)
        cp_async_16(ks + koff[i % SWP] + 128 * RPI * (i - i % SWP), kb + imax(rows[i], 0) * RSTRIDE, rows[i] >= 0 ? 16 : 0);
      cp_async_mbar_arrive_noinc(br.full_k + 8 * s);
      if (it >= STAGES) mbar_wait(br.empty_v + 8 * s, par);
#pragma unroll
      for (int i = 0; i < NRP; ++i)
        cp_async_16(vs + koff[i % SWP] + 128 * RPI * (i - i % SWP), vb + imax(rows[i], 0) * RSTRIDE, rows[i] >= 0 ? 16 : 0);
      cp_async_mbar_arrive_noinc(br.full_v + 8 * s);
    }
  };
  for_each_ws_item(p, ord, lane, ptid == 0, br, item);
  // No exit with copies in flight: the last fill of each stage, and the last Q, have landed.
  for (int u = imax(0, it - STAGES); u < it; ++u) {
    mbar_wait(br.full_k + 8 * (u % STAGES), (u / STAGES) & 1);
    mbar_wait(br.full_v + 8 * (u % STAGES), (u / STAGES) & 1);
  }
  for (int b = 0; b < 1 + QB2; ++b) {
    const int n = QB2 ? (nql + 1 - b) / 2 : nql;  // fills of Q buffer b
    if (n > 0) mbar_wait(br.qfull(b), (n - 1) & 1);
  }
}

