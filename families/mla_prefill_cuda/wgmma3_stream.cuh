// wgmma3_stream.cuh — the WARPS 12 persistent item stream (PERSIST 1): item order, the tile list and
// its software pipeline over items.
// A part of mla_prefill.cu (family.json "sources"), expanded where the entry includes it: no include guard.
#if KA_MMA && KA_WARPS == 12 && KA_PERSIST == 1
// ORDER 2 of the item stream: every query tile of the launch in decreasing order of its key tiles
// (ties: leading rows, then sequence order, then token order), dealt to the CTAs in snake order
// (round r: position r * G + c for even r, r * G + G - 1 - c for odd r, G CTAs), so each CTA gets
// the same mix of large and small items (greedy-like balance without a run-time counter; a plain
// stride over the per-sequence orders left one CTA 8-25% above the mean on 019's large workloads).
// The order comes from counts, not a sort: a sequence's tiles in natural order have nondecreasing
// key counts, so those with exactly v key tiles form one range of tiles.
// First tile (natural order) of a sequence with ql queries and kl keys whose tile count is >= v (nt
// when none; v <= 0: 0).
__device__ __forceinline__ int first_with_tiles(int ql, int kl, int v) {
  const int nt = ql > 0 ? ceil_div_i(ql, QT) : 0;
  if (v <= 0 || nt == 0) return 0;
  const int thr = T * (v - 1) + 1;  // ceil(kv_hi / T) >= v  <=>  kv_hi >= thr
  if (kl < thr) return nt;
  // A tile but the last: kv_hi = min(kl, QT * i + QT + delta); the last one's is kl.
  const int num = thr - QT - (kl - ql);
  return imin(num <= 0 ? 0 : ceil_div_i(num, QT), nt - 1);
}
struct SeqQK {
  int ql, kl;
};
__device__ __forceinline__ SeqQK seq_qk(const Params& p, int b) {
  const int q0 = __ldg(p.qo_indptr + b), k0 = __ldg(p.kv_indptr + b);
  return SeqQK{__ldg(p.qo_indptr + b + 1) - q0, imax(__ldg(p.kv_indptr + b + 1) - k0, 0)};
}
// Fills suf[v] (v = 0 .. vmax + 1) with the number of the launch's items with at least v key tiles
// (suf[0]: all of them) and returns vmax, or -1 when it exceeds cap - 2 (the caller falls back to the
// stride order). All threads of the CTA; suf in shared memory; ends with a barrier.
__device__ __forceinline__ int tile_count_suffix(const Params& p, int* suf, int cap, int* scratch) {
  const int tid = threadIdx.x;
  if (tid == 0) *scratch = 0;
  __syncthreads();
  int mk = 0;
  for (int b = tid; b < p.B; b += NT) mk = imax(mk, seq_qk(p, b).kl);
  atomicMax(scratch, mk);
  __syncthreads();
  const int vmax = ceil_div_i(*scratch, T);
  if (vmax + 2 > cap) {
    __syncthreads();
    return -1;
  }
  for (int v = tid; v <= vmax + 1; v += NT) suf[v] = 0;
  __syncthreads();
  // Items with exactly v key tiles: a warp per sequence, a lane per v (a sequence's tiles with v key
  // tiles are one range).
  const int lane = tid & 31;
  if (tid == 0) {
    const int lead = __ldg(p.qo_indptr);
    if (lead > 0) atomicAdd(&suf[0], ceil_div_i(lead, QT));
  }
  for (int b = tid >> 5; b < p.B; b += W) {
    const SeqQK s = seq_qk(p, b);
    const int vb = ceil_div_i(s.kl, T);
    for (int v = lane; v <= vb; v += 32) {
      const int c = first_with_tiles(s.ql, s.kl, v + 1) - first_with_tiles(s.ql, s.kl, v);
      if (c > 0) atomicAdd(&suf[v], c);
    }
  }
  __syncthreads();
  if (tid < 32) {  // suffix sums, 32 entries a step from the top
    int carry = 0;
    for (int top = vmax + 1; top >= 0; top -= 32) {
      const int v = top - tid;
      int x = v >= 0 ? suf[v] : 0;
#pragma unroll
      for (int d = 1; d < 32; d <<= 1) {
        const int o = __shfl_sync(0xffffffffu, x, (tid - d) & 31);
        if (tid >= d) x += o;
      }
      if (v >= 0) suf[v] = x + carry;
      carry += __shfl_sync(0xffffffffu, x, 31);
    }
  }
  __syncthreads();
  return vmax;
}
// The item at position pos of that order (pos < suf[0]); warp-uniform.
__device__ __forceinline__ Item item_at_rank(const Params& p, const int* suf, int vmax, int pos, int lane) {
  int lo = 0, hi = vmax;  // the largest v with suf[v] > pos
  while (lo < hi) {
    const int mid = (lo + hi + 1) >> 1;
    if (suf[mid] > pos) lo = mid;
    else hi = mid - 1;
  }
  const int v = lo;
  int rem = pos - suf[v + 1];
  const int lead = __ldg(p.qo_indptr);
  const int lead_items = v == 0 && lead > 0 ? ceil_div_i(lead, QT) : 0;
  if (rem < lead_items) return item_natural(p, -1, rem);
  rem -= lead_items;
  int b = 0, r = 0;
  warp_rank(p.B, lane, rem, [&](int bb) {
    const SeqQK s = seq_qk(p, bb);
    return first_with_tiles(s.ql, s.kl, v + 1) - first_with_tiles(s.ql, s.kl, v);
  }, b, r);
  const SeqQK s = seq_qk(p, b);
  return item_natural(p, b, first_with_tiles(s.ql, s.kl, v) + r);
}

// PERSIST 1 on the pipelined schedule (WARPS 12, STAGES 3): the CTA's items (query tiles; ORDER 2:
// dealt in snake order, see above) as one stream of key tiles g = 0 .. G-1 run by tile_wgmma3's
// two-barrier protocol without a break between items, so that the next item's Q and first tile
// and the previous item's output overlap the tensor-core work (a CTA per item paid the Q load, the
// pipeline fill and the output write with the tensor cores idle, one CTA per SM). Per iteration g
// (tile g of item k, its local tile t), besides tile_wgmma3's work:
//   warpgroup 0  at A(g), t == 0: waits for its own loads of Q(k) (then a warpgroup barrier), takes
//                Q(k)'s fragments from the staging buffer, issues S(g) (Q's tail from buffer k%2),
//                and while S runs issues Q(k+1)'s loads (each warp its own 16 rows of the staging
//                buffer, which only it has read; tail buffer (k+1)%2, item k-1's). Its cp.async
//                groups are its own, so the O warpgroups' per-tile waits do not wait for Q.
//                After B(g), t == 0: item k-1's row statistics (1/l into buffer (k-1)%2, its lse)
//                and a fresh softmax state; the alpha of an item's first tile is 0.
//   warpgroups   after A(g): the gather of tile g+AH (its item's pages); if tile g-1 was the first of
//   1-2          item k (k > 0), item k-1's O (complete since P V(g-2)) is written with 1/l from
//                buffer (k-1)%2; P V(g) then clears O (alpha 0). After B(g): P(g-1) V(g-1).
// The item list (geometry, empty items filled at once) is built in shared memory first.
__device__ __forceinline__ void stream_wgmma3(const Params& p, unsigned char* smem, const int* ord) {
  constexpr int NB = W3_NB;
  constexpr int KSC = W3_KSC;
  constexpr int QPE_BYTES = M * 2 * (QTAIL_CKV + DP);
  constexpr int NTT = T / 8;
  constexpr int AH = STAGES - 2;
  static_assert(QTAIL_CKV == 64 && AH == 1, "stream_wgmma3: STAGES 3");
  unsigned char* const stages = smem;
  unsigned char* const qstg = stages + STAGES * WG_STAGE_BYTES;  // next Q's ckv part (registers' share)
  unsigned char* const qpe0 = qstg + M * 2 * (DC - QTAIL_CKV);   // Q's tail, two buffers
  float* const alpha_smem = reinterpret_cast<float*>(smem + WG_ALPHA_OFF);
  float* const inv_smem = alpha_smem + 2 * M;
  int* const items = reinterpret_cast<int*>(inv_smem + 2 * M);  // MAXI x 8 ints (Item)
  int* const meta = items + MAXI * 8;                           // item count, tile count
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int wg = tid >> 7;
  const int r0 = ((tid >> 5) & 3) * 16 + (lane >> 2), r1 = r0 + 8;
  const int cq = 2 * (lane & 3);
  static_assert(sizeof(Item) == 32, "an item is 8 ints");
  auto item_at = [&](int k) { return reinterpret_cast<const Item*>(items)[k]; };
  auto ntiles_at = [&](int k) { return ceil_div_i(item_at(k).kv_hi, T); };

  // ── the item list: warp i decodes candidates i, i + W, ... (fills the empty ones), thread 0
  // compacts the others in order. ORDER 2: candidate r is position r * G + (r even ? c : G - 1 - c)
  // of the order by key tiles (tile_count_suffix, its counts in stage 0 before any load); ORDER 0/1
  // (or a launch past its counts' room): tile blockIdx.x + r * gridDim.x of map_item's order. ──
  const int G_ = static_cast<int>(gridDim.x), c_ = static_cast<int>(blockIdx.x);
  int* const suf = reinterpret_cast<int*>(stages);
  const int vmax = KA_ORDER == 2 ? tile_count_suffix(p, suf, WG_STAGE_BYTES / 4, meta) : -1;
  const int total = vmax >= 0 ? suf[0] : p.tiles;
  const int cand = imin(vmax >= 0 ? ceil_div_i(total, G_) : total > c_ ? ceil_div_i(total - c_, G_) : 0, MAXI);
  for (int i = warp; i < cand; i += W) {
    Item it{};
    if (vmax >= 0) {
      const int pos = i * G_ + ((i & 1) ? G_ - 1 - c_ : c_);
      if (pos < total) {
        it = item_at_rank(p, suf, vmax, pos, lane);
        if (it.kv_hi <= 0) fill_empty(p, it, lane, 32);
      }
    } else if (map_item(p, ord, c_ + i * G_, lane, it)) {
      if (it.kv_hi <= 0) fill_empty(p, it, lane, 32);
    } else {
      it.kv_hi = 0;  // past the last tile
    }
    if (lane == 0) reinterpret_cast<Item*>(items)[i] = it;
  }
  __syncthreads();
  if (tid == 0) {
    int n = 0, g = 0;
    Item* const list = reinterpret_cast<Item*>(items);
    for (int i = 0; i < cand; ++i) {
      const Item it = list[i];
      if (it.kv_hi <= 0) continue;
      list[n++] = it;
      g += ceil_div_i(it.kv_hi, T);
    }
    meta[0] = n;
    meta[1] = g;
  }
  __syncthreads();
  const int n = meta[0], G = meta[1];
  if (G == 0) return;  // CTA-uniform

  auto load_q = [&](const Item& it, int kb, int rlo, int rows, int first, int stride) {  // into tail buffer kb
    w3_load_q(p, static_cast<int64_t>(it.rowtok) * H, it.nq, qstg, qpe0 + kb * QPE_BYTES, rlo, rows, first, stride);
  };
  // The gather walk: item gk, its local tile gt (of gn), stream tile gs.
  int gk = 0, gt = 0, gn = ntiles_at(0);
  auto gather_next = [&]() {  // the pages of the walk's tile, then the walk moves on
    const Item it = item_at(gk);
    const TilePages<256> pg = tile_pages<256>(p, gt * T, it.kv_hi, it.k0, tid - 128);
    if (++gt == gn) {
      ++gk;
      gt = 0;
      gn = gk < n ? ntiles_at(gk) : 0;
    }
    return pg;
  };
  {
    load_q(item_at(0), 0, 0, M, tid, NT);
    if (wg > 0) gather_tile<256>(p, stages, gather_next(), tid - 128);
    cp_async_commit();
    if (wg > 0) {
#pragma unroll
      for (int u = 1; u < AH; ++u) {
        if (u < G) gather_tile<256>(p, stages + u * WG_STAGE_BYTES, gather_next(), tid - 128);
        cp_async_commit();
      }
      cp_async_wait_n<AH - 1>();
    } else {
      cp_async_wait_n<0>();
    }
    fence_proxy_async();
    __syncthreads();
  }
  trace_at(tid == 0, 1);
  trace_count(tid == 0, G);

  if (wg == 0) {
    uint32_t qf[KSC][4];
    const int qr = ((tid >> 5) & 3) * 16 + (lane & 15);
    auto load_qf = [&]() {
#pragma unroll
      for (int kk = 0; kk < KSC; ++kk)
        ldsm_x4(smem_u32(qstg + sw_off(qr, 2 * kk + (lane >> 4), M)), qf[kk][0], qf[kk][1], qf[kk][2], qf[kk][3]);
    };
    load_qf();
    Rows st{kNegInf, kNegInf, 0.f, 0.f};
    int k = 0, t = 0;
    Item cur = item_at(0);
    int nt = ceil_div_i(cur.kv_hi, T);
    for (int g = 0; g <= G; ++g) {
      cta_bar();  // A(g)
      float s[NTT][4];
      if (g < G) {
        if (t == 0 && g > 0) {  // Q(k): this warpgroup's own loads, issued at item k-1's start
          cp_async_wait_n<0>();
          fence_proxy_async();  // (its tail is a wgmma operand)
          wg0_bar();
          load_qf();
        }
        w3_issue_s(s, qf, smem_u32(stages + (g % STAGES) * WG_STAGE_BYTES),
                   sw128_desc(smem_u32(qpe0 + (k & 1) * QPE_BYTES), 16));
        if (t == 0 && k + 1 < n) {  // Q(k+1) while S runs: each warp its own 16 rows of the staging
          // buffer (only it reads them, by its ldmatrix above); tail buffer (k+1)%2 was item k-1's
          load_q(item_at(k + 1), (k + 1) & 1, 16 * ((tid >> 5) & 3), 16, lane, 32);
          cp_async_commit();
        }
        wgmma_wait_n<0>();
        fence_operands(s);
      }
      cta_bar();  // B(g)
      if (g == G) break;
      if (t == 0 && g > 0) {  // item k-1 is done
        const Item pv = item_at(k - 1);
        row_stats(p, st, inv_smem + ((k - 1) & 1) * M, static_cast<int64_t>(pv.rowtok) * H, pv.nq, r0, lane);
        st = Rows{kNegInf, kNegInf, 0.f, 0.f};
      }
      // P(g); an item's first tile writes alpha 0, which also clears the previous item's O.
      w3_softmax_p(p, s, st, stages + (g % STAGES) * WG_STAGE_BYTES, alpha_smem + (g & 1) * M, t, cur.nomask,
                   imin(cur.i0 + r0 / H + cur.delta, cur.kl - 1), r0, r1, cq, lane, t == 0);
      fence_proxy_async();  // P(g), before warpgroups 1-2's wgmma reads it
      if (++t == nt) {
        ++k;
        t = 0;
        if (k < n) {
          cur = item_at(k);
          nt = ceil_div_i(cur.kv_hi, T);
        }
      }
    }
    trace_at(tid == 0, 2);
    {
      const Item pv = item_at(n - 1);
      row_stats(p, st, inv_smem + ((n - 1) & 1) * M, static_cast<int64_t>(pv.rowtok) * H, pv.nq, r0, lane);
    }
    cta_bar();  // F: the last item's 1/l ready
  } else {
    const int og = wg - 1;
    float o[NB / 8][4];
#pragma unroll
    for (int j = 0; j < NB / 8; ++j) o[j][0] = o[j][1] = o[j][2] = o[j][3] = 0.f;
    auto write_o = [&](int kk) {  // item kk's O rows (this warpgroup's dims), 1/l from buffer kk % 2
      const Item it = item_at(kk);
      write_o_rows(p, o, inv_smem + (kk & 1) * M, static_cast<int64_t>(it.rowtok) * H, it.nq, og, r0, r1, cq);
    };
    TilePages<256> next_page{};
    if (AH < G) next_page = gather_next();
    int k = 0, t = 0, nt = ntiles_at(0);  // item and local tile of tile g
    int due = -1;                          // item whose O is written after the next A
    for (int g = 0; g <= G; ++g) {
      cta_bar();  // A(g)
      trace_mark(tid == 128, 2 * g, g < G && t == 0);
      if (g + AH < G) gather_tile<256>(p, stages + ((g + AH) % STAGES) * WG_STAGE_BYTES, next_page, tid - 128);
      cp_async_commit();
      if (g + AH + 1 < G) next_page = gather_next();
      const bool wrote = due >= 0;
      if (wrote) {  // (P V(g) then scales O by 0: alpha of an item's first tile)
        write_o(due);
        due = -1;
      }
      trace_mark(tid == 128, 2 * g + 1, wrote);
      cta_bar();  // B(g)
      const bool first = g < G && t == 0;
      if (g > 0) w3_pv(o, stages + ((g - 1) % STAGES) * WG_STAGE_BYTES, alpha_smem + ((g - 1) & 1) * M, og, r0, r1);
      if (g == G) break;
      if (first && k > 0) due = k - 1;  // its last P V was the one just done
      if (++t == nt) {
        ++k;
        t = 0;
        nt = k < n ? ntiles_at(k) : 0;
      }
      cp_async_wait_n<AH - 1>();  // tile g+1 landed (this iteration's gather)
      fence_proxy_async();
    }
    cta_bar();  // F
    write_o(n - 1);
    trace_at(tid == 128, 3);
  }
}
#endif
