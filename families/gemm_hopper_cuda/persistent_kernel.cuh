// persistent_kernel.cuh — the persistent sm_90a kernel (PERSIST = 1, and ping-pong PERSIST = 2) with its
// TMA-store epilogue and thread-block clusters.
// A part of gemm_hopper.cu (family.json "sources"), expanded where the entry includes it: no include guard.
// ------------------------------------------------------------------------------------------------
// Persistent sm_90a kernel (PERSIST = 1, large-M path only): C[M,N] = A·Bᵀ, TP = 64·WG rows of A and
// TQ rows of B per tile. Grid = #co-resident CTAs; CTA b takes work units b, b + G, b + 2G, ...
// (G = gridDim.x / CL clusters; a unit is one output tile, or, for the tiles of the partial last wave,
// one K slice of it (split-K); units in the RASTER order of the non-persistent kernel, so the CTAs
// running together cover the same tiles as one of its waves). The producer lane runs through the k-tiles of all its units without pause
// (ring stage and mbarrier phase come from one running k-tile counter shared by producer and
// consumers), so the next tile's loads proceed while the consumers run the epilogue.
// Epilogue (tma_store != 0: C 16-byte aligned, N % 8 == 0): each consumer warpgroup writes its
// 64×TQ block as 64×64 chunks into one of EPI_BUFS 8 KB staging buffers (128B-swizzled rows, bank-
// conflict free) and one thread issues a TMA store per chunk; the store drains while the next tile's
// MMAs run (a buffer is rewritten only after its previous store has been read: bulk wait_group.read).
// The TMA unit serves the stores behind the loads the producer has queued for the next tile (up to
// STAGES stages): with 2 buffers the third chunk of a tile waits for that queue; with EPI_BUFS = 4
// (= TQ / 64 at BN 256) no chunk waits within a tile.
// Otherwise direct 4-byte stores as in the non-persistent kernel.
// CL = 2 or 4 (CLUSTER): the CL CTAs of a cluster take the tiles (CL·pg + rank, tq) of one unit; each
// CTA loads its own A tile and 1/CL of the shared B tile (TQ/CL rows), multicast to all of them (the
// L2 → SM traffic of B divided by CL). A stage is refilled only when the consumers of every CTA of the
// cluster have released it: empty[s] counts the consumer warps of all CL CTAs (each warp arrives on
// every CTA's barrier). A CTA whose tile row is past the last (tilesP % CL != 0) still loads and
// computes (zero-filled A) but stores nothing.
// ------------------------------------------------------------------------------------------------
template <typename T, int WG, int TQ, int STAGES, int CL, bool PP>
__global__ void __launch_bounds__(WG * 128 + 32, 1)
    hopper_gemm_persistent(const __grid_constant__ CUtensorMap tmX, const __grid_constant__ CUtensorMap tmY,
                           const __grid_constant__ CUtensorMap tmC, T* __restrict__ C, float* __restrict__ ws,
                           unsigned* __restrict__ counters, int M, int N, int K, int tilesP, int tilesQ,
                           int full_units, int tail, int tsplit, int raster, int tma_store) {
#if KA_GEMM_WGMMA
  static_assert(!PP || WG == 2, "PERSIST = 2: two consumer warpgroups");
  constexpr int TP = PP ? 64 : 64 * WG;  // rows of A per unit (and per stage)
  constexpr int X_BYTES = TP * 128, Y_BYTES = TQ * 128, YH_BYTES = Y_BYTES / CL;
  constexpr uint32_t STAGE_TX = X_BYTES + Y_BYTES;  // own A tile + both halves of the B tile
  constexpr int E_BYTES = 64 * 128;                  // one 64×64 staging buffer
  static_assert(TQ % (8 * CL) == 0, "B tile halves must be whole 8-row swizzle atoms");
  KA_DYN_SMEM(smem_raw);
  KA_SHARED_INT(s_last);
  const uint32_t base = (smem_u32(smem_raw) + 1023u) & ~1023u;
  const uint32_t sX = base, sY = base + STAGES * X_BYTES, sE = sY + STAGES * Y_BYTES,
                 bars = sE + WG * kEpiBufs * E_BYTES;
  auto full = [&](int s) { return bars + 8u * s; };
  auto empty = [&](int s) { return bars + 8u * (STAGES + s); };

  const uint32_t rank = CL > 1 ? cluster_ctarank() : 0u;
  const int cid = CL > 1 ? static_cast<int>(blockIdx.x) / CL : static_cast<int>(blockIdx.x);
  const int ncl = static_cast<int>(gridDim.x) / CL;
  const int tilesPg = (tilesP + CL - 1) / CL;  // tile rows per cluster-row group
  const int units = full_units + tail * tsplit;
  const int kTiles = (K + 63) / 64;
  // Unit u → tile (tp, tq) of this CTA, its k-tile range [kb, kb + nk) and the number of K slices ns
  // of that tile (> 1: split-K, workspace slot wi). Units [0, full_units) are whole tiles (the first
  // full_units tile groups in RASTER order, whole waves of the grid); the remaining `tail` tile groups
  // are cut into tsplit K slices each, unit full_units + z·tail + i being slice z of group full_units + i.
  auto decode = [&](int u, int& tp, int& tq, int& kb, int& nk, int& ns, int& wi) {
    int t, z;
    if (u < full_units) {
      t = u;
      z = 0;
      ns = 1;
    } else {
      const int v = u - full_units;
      z = v / tail;
      t = full_units + (v - z * tail);
      ns = tsplit;
    }
    wi = (t - full_units) * CL + static_cast<int>(rank);
    int pg;
    if (raster == 0) {
      pg = t / tilesQ;
      tq = t - pg * tilesQ;
    } else {
      const int group = t / (kRasterGroup * tilesQ);
      const int first = group * kRasterGroup;
      const int rows = min(kRasterGroup, tilesPg - first);
      const int within = t - group * kRasterGroup * tilesQ;
      pg = first + within % rows;
      tq = within / rows;
    }
    tp = pg * CL + static_cast<int>(rank);
    kb = static_cast<int>(static_cast<long long>(z) * kTiles / ns);
    nk = static_cast<int>(static_cast<long long>(z + 1) * kTiles / ns) - kb;
  };

  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  if (threadIdx.x == 0) {
    for (int s = 0; s < STAGES; ++s) {
      mbar_init(full(s), 1);
      mbar_init(empty(s), CL * (PP ? 4 : WG * 4));  // one arrive per consuming warp of every CTA of the cluster
    }
    mbar_fence_init();
  }
  if (CL > 1) cluster_sync();  // the peer's barriers exist before any multicast or remote arrive
  else __syncthreads();

  if (warp == WG * 4) {  // producer warp: lane 0 issues every TMA load
    if (lane == 0) {
      prefetch_tmap(&tmX);
      prefetch_tmap(&tmY);
      uint32_t it = 0;
      for (int u = cid; u < units; u += ncl) {
        int tp, tq, kb, nk, ns, wi;
        decode(u, tp, tq, kb, nk, ns, wi);
        for (int i = 0; i < nk; ++i, ++it) {
          const int s = static_cast<int>(it % STAGES);
          const uint32_t ph = (it / STAGES) & 1u;
          mbar_wait(empty(s), ph ^ 1u);  // CL > 1: released by the consumers of every CTA of the cluster
          mbar_arrive_expect_tx(full(s), STAGE_TX);
          const int kc = (kb + i) * 64;
          tma_load_2d(sX + s * X_BYTES, &tmX, kc, tp * TP, full(s));
          if (CL == 1) {
            tma_load_2d(sY + s * Y_BYTES, &tmY, kc, tq * TQ, full(s));
          } else {
            tma_load_2d_multicast(sY + s * Y_BYTES + rank * YH_BYTES, &tmY, kc, tq * TQ + static_cast<int>(rank) * (TQ / CL),
                           full(s), static_cast<uint16_t>((1u << CL) - 1u));
          }
        }
      }
    }
    __syncwarp();
  } else {
    // Consumers: warpgroup g owns rows [64g, 64g+64) of the tile.
    const int g = warp >> 2, wr = warp & 3;
    const int pl0 = (PP ? 0 : g * 64) + wr * 16 + (lane >> 2);
    const int ql0 = (lane & 3) * 2;
    const bool leader = (threadIdx.x & 127) == 0;  // issues this warpgroup's TMA stores
    uint32_t it = 0, chunk = 0;
    // PP: warpgroup g runs its CTA's units g, g + 2, ... (the ring holds them in the CTA's order, all
    // with kTiles k-tiles: no split), its mainloops in turn with the other's (barrier 4 + g: the other
    // warpgroup arrives once it has issued its last wgmma), so one's epilogue runs under the other's
    // MMAs. Warpgroup 1 arrives first, so warpgroup 0 starts; one arrival is left at exit.
    if (PP && g == 1) named_arrive(4, 256);
    float acc[TQ / 2];
    auto release = [&](int s) {
      if (CL == 1) {
        mbar_arrive(empty(s));
      } else {
#pragma unroll
        for (int r = 0; r < CL; ++r) mbar_arrive_cluster(empty(s), static_cast<uint32_t>(r));
      }
    };
    for (int u = cid + (PP ? g * ncl : 0); u < units; u += (PP ? 2 : 1) * ncl) {
      int tp, tq, kb, nk, ns, wi;
      decode(u, tp, tq, kb, nk, ns, wi);
      if (PP) {
        it = static_cast<uint32_t>((u - cid) / ncl) * static_cast<uint32_t>(kTiles);
        named_sync(4 + g, 256);
      }
#pragma unroll
      for (int i = 0; i < TQ / 2; ++i) acc[i] = 0.f;
      int prev = 0;
      for (int i = 0; i < nk; ++i, ++it) {
        const int s = static_cast<int>(it % STAGES);
        const uint32_t ph = (it / STAGES) & 1u;
        mbar_wait(full(s), ph);
        __syncwarp();  // wgmma.* are .sync.aligned: the warp must be converged after the spin loop
        if (KA_DIAG == 2) {
          if (lane == 0) release(s);
          continue;
        }
        const uint32_t xa = sX + s * X_BYTES + (PP ? 0 : g * (64 * 128));
        const uint32_t ya = sY + s * Y_BYTES;
        wgmma_fence();
#pragma unroll
        for (int k = 0; k < 4; ++k) Wgmma<TQ, T>::mma(acc, make_desc(xa + 32 * k), make_desc(ya + 32 * k));
        wgmma_commit();
        wgmma_wait_n<1>();  // the group of the previous k-tile is done: give its stage back
        __syncwarp();
        if (i > 0 && lane == 0) release(prev);
        prev = s;
      }
      if (PP) named_arrive(4 + (g ^ 1), 256);  // the other warpgroup's turn: our MMAs are issued
      wgmma_wait_n<0>();
#pragma unroll
      for (int i = 0; i < TQ / 2; ++i) fence_operand(acc[i]);
      __syncwarp();
      if (KA_DIAG != 2 && nk > 0 && lane == 0) release(prev);  // the last stage of this unit (the ring carries on)
      if (tp >= tilesP) continue;  // CL > 1, tilesP % CL != 0: a padding tile row, nothing to store
      if (KA_DIAG == 1 || KA_DIAG == 2) {
        if (M < 0) {  // never: keeps the accumulators (and so the wgmmas) alive for ptxas
#pragma unroll
          for (int i = 0; i < TQ / 2; ++i) ws[threadIdx.x * (TQ / 2) + i] = acc[i];
        }
        continue;
      }

      // split tile: wi < CL · tail ≤ #SMs, one workspace tile and counter per split tile
      if (ns > 1) {
        splitk_add<WG, TP, TQ>(acc, ws, counters, wi, ns, pl0, ql0, s_last);
        if (!s_last) continue;
        splitk_take<WG, TP, TQ>(acc, ws, counters, wi, pl0, ql0);
      }

      const int p0 = tp * TP + pl0, q0 = tq * TQ + ql0;
      if (tma_store) {
        // Row r of a staging buffer holds 64 outputs (128 bytes) with 16-byte chunk c at c ^ (r & 7)
        // (the 128B swizzle of tmC); this thread's rows have r & 7 == lane / 4.
        const int rsw = lane >> 2;
#pragma unroll
        for (int c = 0; c < TQ / 64; ++c, ++chunk) {
          const uint32_t buf = sE + static_cast<uint32_t>(g * kEpiBufs + chunk % kEpiBufs) * E_BYTES;
          if (leader) bulk_wait_read<kEpiBufs - 1>();  // the store that last used this buffer has read it
          named_sync(2 + g, 128);
#pragma unroll
          for (int jj = 0; jj < 8; ++jj) {
            const int j = 8 * c + jj;
#pragma unroll
            for (int h = 0; h < 2; ++h) {
              const int rl = wr * 16 + (lane >> 2) + 8 * h;  // row within the warpgroup's 64
              float v0 = acc[4 * j + 2 * h], v1 = acc[4 * j + 2 * h + 1];
              const int64_t m = p0 + 8 * h, n = q0 + 8 * j;
              if (m < M && n < N) {
                v0 = KA_EPILOGUE(v0, m, n);
                v1 = KA_EPILOGUE(v1, m, n + 1);
              }
              uint32_t bits;
              if (std::is_same<T, __half>::value) {
                __half2 hv = __floats2half2_rn(v0, v1);
                bits = *reinterpret_cast<uint32_t*>(&hv);
              } else {
                __nv_bfloat162 bv = __floats2bfloat162_rn(v0, v1);
                bits = *reinterpret_cast<uint32_t*>(&bv);
              }
              const uint32_t addr = buf + rl * 128 + ((jj ^ rsw) << 4) + (lane & 3) * 4;
              st_shared_u32(addr, bits);
            }
          }
          fence_proxy_async_smem();
          named_sync(2 + g, 128);
          if (leader) {
            tma_store_2d(&tmC, buf, tq * TQ + 64 * c, tp * TP + (PP ? 0 : 64 * g));
            bulk_commit();
          }
        }
      } else {
#pragma unroll
        for (int j = 0; j < TQ / 8; ++j)
#pragma unroll
          for (int h = 0; h < 2; ++h) {
            const int p = p0 + 8 * h, q = q0 + 8 * j;
            if (p < M && q < N) {  // N is even, so n < N implies n + 1 < N
              const int64_t m = p, n = q;
              store2<T>(C + m * N + n, KA_EPILOGUE(acc[4 * j + 2 * h], m, n),
                        KA_EPILOGUE(acc[4 * j + 2 * h + 1], m, n + 1));
            }
          }
      }
    }
    if (leader) bulk_wait_all();  // staging buffers stay valid until the last store has read them
    __syncwarp();
  }
  // CL > 1: no CTA leaves while a peer may still arrive on its barriers or multicast into it.
  if (CL > 1) cluster_sync();
#endif  // KA_GEMM_WGMMA
}
