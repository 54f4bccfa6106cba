// bulk_loads.cuh — BULK=1 without a producer warp (inside gqa_decode_kernel): each warp's K/V rows by
// bulk copies on per-stage mbarriers.
// A part of gqa_decode.cu (family.json "sources"), expanded where the entry includes it: no include guard.
  // Loads, BULK=1. Warp w fetches the K and V rows of its own tokens [w*TPW, +TPW) of a tile: one
  // elected lane issues the two bulk copies of 2*D bytes per token, the pages read from the id
  // ring at a warp-uniform address (the prologue's, read from global memory by lanes j < TPW, are
  // broadcast by shuffles). Why not one copy per thread: a bulk copy is a uniform-datapath
  // instruction on sm_90 (UBLKCP, operands in uniform registers); given per-lane operands the
  // compiler wraps it in a loop over the active lanes (~8 instructions per lane, 32 trips per
  // warp), while operands it can prove warp-uniform (the warp index and the tile broadcast by a
  // shuffle from lane 0, loads at uniform addresses, the kernel parameters) make each row about
  // 11 uniform instructions (id to a uniform register, clamp, two 64-bit addresses, and per copy
  // the destination, the barrier and the UBLKCP). Measured with CUDA 13.0 at WARPS=4, TILE=64:
  // ~238 SASS instructions per warp per tile from the loop barrier to the commit, against ~110
  // for BULK=0 (16 cp.async and their addresses): bulk copies of 256-byte rows do not issue
  // fewer instructions than 16-byte cp.async over 32 lanes (512 bytes each); what they change is
  // who does the work (one request per row for the copy engine, no per-thread LSU requests or
  // wait_group scoreboard) — the H200 decides.
  // Protocol: the mbarrier of each stage is initialised with count W; per fill, each warp's
  // elected lane does arrive.expect_tx(2*TPW*2*D) and then issues its 2*TPW copies, so a thread's
  // expect_tx precedes its own complete_tx in program order (the transaction count never goes
  // negative) and the phase completes once all W warps arrived and all 2*T rows landed. Every row
  // of a tile is copied, rows past the end of the range from a clamped page (the id ring holds 0
  // for them): bulk copies cannot zero-fill, and the V rows of masked tokens (P = 0) must be
  // finite (0 * NaN = NaN in P·V), so every fill brings exactly 2*T*2*D bytes and no stage ever
  // holds stale or uninitialised rows. With no pages at all (nothing valid to copy) the warps
  // arrive with a zero byte count and issue nothing, and the stages are zeroed once at the start
  // (finite, the same values as BULK=0's zero-fill).
  // Consumers: every thread waits on the barrier of tile t with parity (t / STAGES) & 1 (tile t is
  // fill number t / STAGES of stage t % STAGES).
  // Ordering. (1) Ids: the ids of tile u travel in the cp.async group committed with tile
  // u - (STAGES-1) (as with BULK=0; those groups now carry only ids); at iteration
  // t = u - (STAGES-1) every thread's cp.async.wait_group<STAGES-2> retires that group and the
  // __syncthreads makes the ids visible to the issuing warps. (2) Stage reuse: tile u goes to
  // stage (t-1) % STAGES, last read (ldmatrix) at iteration t-1, and every warp finished those
  // reads before the __syncthreads that opens iteration t, which precedes the issue. (3) Phases:
  // a fill of stage s is issued only after every thread waited for the previous fill (same
  // argument), so at most one phase per barrier is in flight and its parity identifies it.
  // (A warp reads and fills only its own rows, so the stages alone would not need the CTA barrier;
  // the ids do: those of warp w's tokens are brought by the cp.async of other threads' lanes.)
  // Copies still in flight when the tile loop ends early are waited for before the CTA exits.
  const uint32_t bars = smem_u32(smem + BAR_OFF);
  const bool no_pages = p.num_pages <= 0;
  const int wu = __shfl_sync(0xffffffffu, warp, 0);  // the warp index, provably warp-uniform
  const unsigned char* const kg = reinterpret_cast<const unsigned char*>(p.k + g * D);
  const unsigned char* const vg = reinterpret_cast<const unsigned char*>(p.v + g * D);
  // V row = K row + kv_delta (one uniform add per row instead of a second multiply-add)
  const uintptr_t kv_delta = reinterpret_cast<uintptr_t>(vg) - reinterpret_cast<uintptr_t>(kg);
  // Issues tile `tile_v` (the same in every lane); pages(stage, pg) gives the pages of the warp's
  // TPW tokens, the same in every lane (uniform), clamped into the cache.
  auto issue_bulk = [&](int tile_v, auto&& pages) {
    const int stage = __shfl_sync(0xffffffffu, tile_v, 0) % STAGES;
    const uint32_t bar = bars + stage * 8;
    const uint32_t ks = smem_u32(stages + stage * STAGE_BYTES + wu * TPW * ROWB);
    const uint32_t vs = ks + T * ROWB;
    if (elect_one()) {
      mbar_arrive_expect_tx(bar, no_pages ? 0u : 2u * TPW * 2 * D);
      if (!no_pages) {
        int pg[TPW];
        pages(stage, pg);
#pragma unroll
        for (int j = 0; j < TPW; ++j) {
          const unsigned char* src = kg + static_cast<int64_t>(pg[j]) * (HKV * D * 2);
          bulk_copy_g2s(ks + j * ROWB, src, 2 * D, bar);
          bulk_copy_g2s(vs + j * ROWB, reinterpret_cast<const void*>(reinterpret_cast<uintptr_t>(src) + kv_delta), 2 * D, bar);
        }
      }
    }
  };
  // Main loop: the pages from the id ring, read at a warp-uniform address 16 bytes at a time.
  auto ring_pages = [&](int stage, int (&pg)[TPW]) {
    const int4* slot = reinterpret_cast<const int4*>(idx_ring + stage * T + wu * TPW);
#pragma unroll
    for (int j = 0; j < TPW / 4; ++j) {
      const int4 q = slot[j];
      pg[4 * j] = ids.clamp(q.x);
      pg[4 * j + 1] = ids.clamp(q.y);
      pg[4 * j + 2] = ids.clamp(q.z);
      pg[4 * j + 3] = ids.clamp(q.w);
    }
  };
  if (tid == 0) {
    for (int s = 0; s < STAGES; ++s) mbar_init(bars + 8 * s, W);
    mbar_fence_init();
  }
  if (no_pages)
    for (int i = tid; i < STAGES * STAGE_BYTES / 16; i += NT) reinterpret_cast<uint4*>(stages)[i] = make_uint4(0u, 0u, 0u, 0u);
  __syncthreads();  // barriers initialised before any arrival or copy

  // Prologue (as below): the first STAGES-1 tiles in flight, their pages read directly first (lane
  // j < TPW reads token j's) and broadcast by shuffles.
  {
    int pre[STAGES - 1];
#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
      const int pos = cs + s * T + wu * TPW + lane;
      pre[s] = s < ntiles && lane < TPW && pos < ce ? ids.clamp(__ldg(p.indices + pos)) : 0;
    }
#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
      int bc[TPW];
#pragma unroll
      for (int j = 0; j < TPW; ++j) bc[j] = __shfl_sync(0xffffffffu, pre[s], j);
      if (s < ntiles)
        issue_bulk(s, [&](int, int (&pg)[TPW]) {
#pragma unroll
          for (int j = 0; j < TPW; ++j) pg[j] = bc[j];
        });
      ids.prefetch(s + STAGES - 1);
      cp_async_commit();
    }
  }
