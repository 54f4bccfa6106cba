// producer_loads.cuh — PRODUCER=1 (inside gqa_decode_kernel): the full/empty mbarriers and the producer
// warp's K/V copies, one kv head per CTA (HEADS=1) or all of them (HEADS=0).
// A part of gqa_decode.cu (family.json "sources"), expanded where the entry includes it: no include guard.
  // Loads, PRODUCER=1 (warp specialisation). Warp W (the last) is the producer: it alone fills the
  // stages, the W consumer warps only read them.
  // Issue. Each of the producer's lanes copies 16-byte chunk (lane % KCH) of rows lane / KCH +
  // RPI*i (RPI = 32 / KCH rows per warp instruction) with cp.async.cg, K and V, so one warp
  // instruction moves 512 bytes (RPI whole rows, coalesced) and a tile costs per lane T/RPI
  // (K, V) pairs of cp.async, each pair one page-id load (issued a tile ahead), one clamp, the two
  // source addresses and a zero-fill predicate; the destinations are immediates off one base.
  // Why not bulk copies from one elected lane: those are uniform-datapath instructions whose
  // operands (the page id per row) must be moved to uniform registers one row at a time (~11
  // instructions per K+V row pair measured for BULK=1, so ~11*T per tile in one warp: ~700 at
  // TILE=64), while here a whole tile costs the producer ~228 SASS instructions at WARPS=4,
  // TILE=64, head_dim 128 (CUDA 13.0, counted on a full tile: 64 LDGSTS, 64 IMAD.WIDE for the
  // sources, 32 id loads with 32 clamps for the next tile, ~36 for the wait, the arrive and the
  // loop; ~413 per 128-token tile at WARPS=8, TILE=128) — about what ONE consumer warp spent per
  // tile on its loads with BULK=1 (~238), and the consumers now spend nothing. Bulk copies also cannot zero-fill, which cp.async does for free
  // (rows past the range and the no-pages case need no special code: their src-size is 0, so
  // masked V rows are finite zeros, as with BULK=0).
  // Page ids: plain loads by the producer's lanes of the ids of tile u+1 (into registers) before
  // tile u is issued, so their latency hides behind one tile's issue and the wait on "empty"
  // (at most 32 ids per lane; above that the ids of tile u just before its wait, see kAhead); the
  // shared-memory id ring and its cp.async groups are not used.
  // Protocol (per stage s two mbarriers, "full" with count 32 and "empty" with count W):
  //  - Fill k of stage s (tile u = s + k*STAGES): for k >= 1 the producer first waits "empty"
  //    for the completion of phase k-1 (parity (k-1)&1: all W consumer warps are done with tile
  //    u - STAGES); the first STAGES fills wait for nothing. Then every producer lane issues its
  //    copies and does cp.async.mbarrier.arrive.noinc on "full": its arrival happens once all its
  //    earlier cp.async completed, so phase k of "full" completes when all 32 lanes' chunks of the
  //    tile have landed (.noinc: the count 32 already includes these arrivals).
  //  - Consumer warp w at tile t waits "full" of stage t % STAGES with parity (t/STAGES)&1 (every
  //    lane: the acquire makes the cp.async data visible to it), computes, __syncwarp (all the
  //    warp's ldmatrix reads of the stage are done), then lane 0 arrives on "empty" (release).
  //  - Phases never alias: fill k+1 of stage s is issued only after "empty" phase k, i.e. after
  //    every consumer warp waited "full" phase k, so at most one phase of each barrier is
  //    outstanding and its parity identifies it; a consumer can only wait for fill k of a stage
  //    once it arrived on "empty" for fill k-1 (program order), so "empty" likewise.
  //  - Consumers arrive on "empty" for every tile of the range, also once the segment walk ended
  //    (`have` false), so the producer never waits forever; they wait "full" for those tiles too,
  //    so no fill of the ring is left unobserved.
  //  - Exit: the producer must not leave with cp.async in flight; after its last issue it waits
  //    for "full" of the last min(STAGES, ntiles) tiles (parity as the consumers; no later fill
  //    of those stages exists, so the phase is unambiguous). Every earlier fill completed before
  //    the producer could pass the "empty" wait of a later fill of its stage. Shared memory lives
  //    until all threads exit, so the consumers' reads need nothing more from the producer.
  //  - The CTA-wide barriers of the consumer path (segment finalize, the fused merge) are named
  //    barrier 1 over the NT consumer threads (csync): the producer never joins them and runs
  //    ahead by up to STAGES tiles. The only __syncthreads left is the one after the barriers'
  //    initialisation, before the roles split.
  const uint32_t full_bars = smem_u32(smem + BAR_OFF);
  const uint32_t empty_bars = full_bars + STAGES * 8;
  if (tid == 0) {
    for (int s = 0; s < STAGES; ++s) {
      mbar_init(full_bars + 8 * s, KA_HEADS ? 32 : 1);
      mbar_init(empty_bars + 8 * s, W);
    }
    mbar_fence_init();
  }
#if !KA_HEADS
  // Bulk copies cannot zero-fill: with no pages at all nothing is copied, so the stages are
  // zeroed once (finite, as cp.async's zero-fill; see "Loads, HEADS=0").
  if (p.num_pages <= 0)
    for (int i = tid; i < STAGES * STAGE_BYTES / 16; i += NTHREADS) reinterpret_cast<uint4*>(stages)[i] = make_uint4(0u, 0u, 0u, 0u);
#endif
  __syncthreads();  // barriers initialised before any arrival, wait or copy
#if !KA_HEADS
  if (warp == W) {
    // Loads, HEADS=0 (with PRODUCER=1, BULK=1). Every K and every V row of a tile is the whole
    // 2*HKV*D-byte row of a page (all kv heads, contiguous in the cache) and is ONE bulk copy
    // into the stage (row stride ROWB = 2*HKV*D + 16), completing on the stage's "full" mbarrier.
    // Lane j (< T) of the producer owns token j of every tile: it loads the page id of token j of
    // tile u+1 (a plain load, in flight while tile u waits for "empty" and issues) and issues the
    // K and the V copy of token j. Protocol as "Loads, PRODUCER=1" below but for "full": its count
    // is 1, the producer's lane 0 arrives once per fill with arrive.expect_tx(2*T*2*HKV*D) before
    // (__syncwarp) any lane issues a copy of that fill, so the phase completes once all 2*T rows
    // landed. Every row of a tile is copied, rows past the end of the range from page 0 (clamped):
    // bulk copies cannot zero-fill, and the V rows of masked tokens (P = 0) must be finite (0 * NaN
    // = NaN in P·V), so every fill brings exactly the expected bytes and no stage ever holds stale
    // or uninitialised rows. With no pages at all lane 0 arrives with 0 bytes and nothing is
    // copied (the stages were zeroed above). "empty" (count W) and the consumers are unchanged:
    // each consumer warp reads only its head's 2*D bytes of its TPW tokens of a stage, and the
    // refill of a stage waits for all W warps.
    // Why per-lane copies, not one elected lane: a bulk copy with per-lane operands is serialised
    // by the compiler over the active lanes (see "Loads, BULK=1"), which costs about what moving
    // each page id into a uniform register costs, and keeps the code short; either way a copy now
    // moves a 1 KB row, 4x the bytes of a HEADS=1 bulk copy, so the issue cost per byte falls
    // ~4x. (Not measured: no SASS tools on the machine that wrote this; the GPU run tells.)
    const bool no_pages = p.num_pages <= 0;
    constexpr uint32_t kRowBytes = 2u * HKV * D;
    const unsigned char* const kg = reinterpret_cast<const unsigned char*>(p.k);
    const unsigned char* const vg = reinterpret_cast<const unsigned char*>(p.v);
    auto page_of = [&](int u) {  // token `lane` of tile u: its page (0 past the range or past the last tile)
      const int pos = cs + u * T + lane;
      return u < ntiles && lane < T && pos < ce_load ? ids.clamp(__ldg(p.indices + pos)) : 0;
    };
    int pg = page_of(0);
#pragma unroll 1
    for (int u = 0; u < ntiles; ++u) {
      const int nxt = page_of(u + 1);
      const int stage = u % STAGES;
      const uint32_t full = full_bars + stage * 8;
      if (u >= STAGES) mbar_wait(empty_bars + stage * 8, ((u / STAGES) - 1) & 1);
      if (lane == 0) mbar_arrive_expect_tx(full, no_pages ? 0u : 2u * T * kRowBytes);
      __syncwarp();  // the fill's bytes are expected before any of its copies is issued
      if (!no_pages && lane < T) {
        const uint32_t ks = smem_u32(stages + stage * STAGE_BYTES + lane * ROWB);
        const int64_t off = static_cast<int64_t>(pg) * kRowBytes;
        bulk_copy_g2s(ks, kg + off, kRowBytes, full);
        bulk_copy_g2s(ks + T * ROWB, vg + off, kRowBytes, full);
      }
      pg = nxt;
    }
    for (int u = imax(0, ntiles - STAGES); u < ntiles; ++u) mbar_wait(full_bars + (u % STAGES) * 8, (u / STAGES) & 1);
    return;
  }
#else
  if (warp == W) {
    constexpr int RPI = 32 / KCH;  // rows per warp instruction
    constexpr int NRP = T / RPI;   // K (and V) rows per lane per tile
    const int prow = lane / KCH, pcol = lane % KCH;
    const unsigned char* const kb = reinterpret_cast<const unsigned char*>(p.k + g * D + pcol * 8);
    const unsigned char* const vb = reinterpret_cast<const unsigned char*>(p.v + g * D + pcol * 8);
    // Pages of rows prow + RPI*i of tile u (0 past the range, also for u >= ntiles: no load). A
    // tile wholly inside the range (all but the last of a CTA; `full` is warp-uniform) takes the
    // branch without per-row predicates: its loads share one address (immediate offsets) and its
    // copies need no zero-fill test — per row one load, one clamp, two wide multiply-adds (K and V
    // sources) and the two cp.async.
    auto load_pages = [&](int u, int (&pg)[NRP], bool full) {
      const int* idp = p.indices + (cs + u * T + prow);
      const int left = ce_load - (cs + u * T + prow);
#pragma unroll
      for (int i = 0; i < NRP; ++i) pg[i] = full || RPI * i < left ? ids.clamp(__ldg(idp + RPI * i)) : 0;
    };
    auto issue_rows = [&](uint32_t ks, const int (&pg)[NRP], int left, bool full) {
      const uint32_t vs = ks + T * ROWB;
#pragma unroll
      for (int i = 0; i < NRP; ++i) {
        const int bytes = full || RPI * i < left ? 16 : 0;
        const int64_t off = static_cast<int64_t>(pg[i]) * (HKV * D * 2);
        cp_async_16_hint<KA_L2_PREFETCH>(ks + RPI * i * ROWB, kb + off, bytes);
        cp_async_16_hint<KA_L2_PREFETCH>(vs + RPI * i * ROWB, vb + off, bytes);
      }
    };
    auto tile_full = [&](int u) { return ce_load - (cs + u * T) >= T; };  // u < ntiles: whole tile in range
    auto load_tile = [&](int u, int (&pg)[NRP]) {
      if (u < ntiles && tile_full(u)) load_pages(u, pg, true);
      else load_pages(u, pg, false);
    };
    // One tile. With kAhead the pages of tile u+1 go into `nxt` (in flight while tile u waits for
    // its stage and issues) and tile u's copies use `cur`; the loop alternates the two arrays
    // (unrolled by two) so that no register moves carry the pages from one tile to the next.
    // Without it (more than 32 rows per lane, e.g. TILE=128 at head_dim 128: two arrays of 64
    // pages made ptxas spill at WARPS=4) the pages of tile u are loaded into `cur` before the wait
    // on "empty", whose latency hides theirs once the ring is full (the producer's steady state).
    constexpr bool kAhead = NRP <= 32;
    auto step = [&](int u, int (&cur)[NRP], int (&nxt)[NRP]) {
      if (kAhead) load_tile(u + 1, nxt);
      else load_tile(u, cur);
      const int stage = u % STAGES;
      if (u >= STAGES) mbar_wait(empty_bars + stage * 8, ((u / STAGES) - 1) & 1);
      const uint32_t ks = smem_u32(stages + stage * STAGE_BYTES + prow * ROWB + pcol * 16);
      if (tile_full(u)) issue_rows(ks, cur, 0, true);
      else issue_rows(ks, cur, ce_load - (cs + u * T + prow), false);
      cp_async_mbar_arrive_noinc(full_bars + stage * 8);
    };
    int pa[NRP], pb[NRP];
    if (kAhead) load_tile(0, pa);
#pragma unroll 1
    for (int u = 0; u < ntiles; u += 2) {
      if (kAhead) {
        step(u, pa, pb);
        if (u + 1 < ntiles) step(u + 1, pb, pa);
      } else {
        step(u, pa, pa);
        if (u + 1 < ntiles) step(u + 1, pa, pa);
      }
    }
    for (int u = imax(0, ntiles - STAGES); u < ntiles; ++u) mbar_wait(full_bars + (u % STAGES) * 8, (u / STAGES) & 1);
    return;
  }
#endif  // KA_HEADS
