// wgmma_kernel.cuh — the wgmma kernel (MMA=1): swap-AB (the 64 tokens of a tile are the wgmma M),
// 128-byte-swizzled stages, the same split-KV partials and fused merge.
// A part of mla_decode.cu (family.json "sources"), expanded where the entry includes it: no include guard.
// ── the wgmma kernel (KA_MMA 1): swap-AB, the 64 tokens of a tile are the wgmma M ──
// Warpgroup g (warps 4g .. 4g+3; NWG = WARPS/4 of them) computes the partial S^T[64 tok x 16 heads]
// over its KSG k-steps of the 576 q/k dims (m64n16k16, A = the K tile, B = Q, both K-major from
// shared memory), the partials are summed through shared memory (NWG = 2), and every warpgroup
// runs the same online softmax on the full S^T (thread t of a warpgroup holds tokens 16w+g and
// 16w+g+8 of heads 8j+2q, 8j+2q+1, j = 0, 1: the wgmma accumulator layout, w = warp in the
// warpgroup, g = lane/4, q = lane%4). Column maxima: shuffles over g, then the 4 warps through
// shared memory. P (bf16) goes to the warpgroup's own P buffer [16 heads][64 tokens] (K-major, 128-
// byte swizzle: one 2 KB block), and O^T[dims x 16] += V^T · P^T over the warpgroup's MBG m64
// blocks of the 512 output dims: A = V^T, i.e. the ckv part of the same K tile read MN-major
// (transpose-A), B = P (K-major). One stage: T = 64 token rows of 1152 bytes, stored unpadded in
// the 128-byte swizzle layout (DQ/64 = 9 column blocks of 64 rows x 128 bytes, 16-byte chunk c of
// row r at block c/8, byte r*128 + ((c%8) ^ (r%8))*16; blocks 1024-byte aligned), filled by 16-byte
// cp.async per thread (the same row/chunk assignment as MMA=0). Q: 16 rows x 1152 bytes, same
// layout, written with plain loads/stores per segment.
constexpr int NWG = W / 4;
constexpr int WSTAGE = T * 2 * DQ;           // bytes of one stage (73728 at T = 64)
constexpr int QBYTES = H * 2 * DQ;           // 18432
constexpr int PBYTES = H * T * 2;            // 2048: P of one warpgroup
constexpr int SXW_BYTES = NWG > 1 ? NWG * 2 * 128 * 16 : 0;  // partial S^T, [NWG][2][128 thr] float4
constexpr int RED_BYTES = 3 * NWG * 4 * H * 4;  // [3: max, l, e][NWG][4 warps][16 heads] float
constexpr int W_Q_OFF = STAGES * WSTAGE;
constexpr int W_P_OFF = W_Q_OFF + QBYTES;
constexpr int W_SX_OFF = W_P_OFF + NWG * PBYTES;
constexpr int W_RED_OFF = W_SX_OFF + SXW_BYTES;
constexpr int W_FLAG_OFF = W_RED_OFF + RED_BYTES;
constexpr int W_IDX_OFF = W_FLAG_OFF + 16;
constexpr int SMEM_W = W_IDX_OFF + IDX_BYTES + 1024;  // + slack to align the tiles to 1024 bytes
constexpr int KSG = KS_ALL / NWG;            // S k-steps per warpgroup
constexpr int MBG = DC / 64 / NWG;           // O^T m64 blocks per warpgroup
constexpr int QCH = DQ / 8;                  // 16-byte chunks of a Q / K row (72)
static_assert(T == 64 && W % 4 == 0 && DC % 64 == 0 && DP % 64 == 0 && KS_ALL % NWG == 0 && (DC / 64) % NWG == 0,
              "MMA=1: TILE 64, WARPS % 4 == 0, head dims multiples of 64 split evenly over the warpgroups");
static_assert(SMEM_W <= 227 * 1024, "MMA=1: shared memory above 227 KB");

// Byte offset of 16-byte chunk c of row r in a 128-byte-swizzled tile of `rows` rows.
__host__ __device__ constexpr int sw_off(int r, int c, int rows) {
  return (c >> 3) * rows * 128 + r * 128 + (((c & 7) ^ (r & 7)) << 4);
}

__global__ void __launch_bounds__(NT, 1) mla_decode_kernel(Params p) {
  trace_at(0, true);
  KA_DYN_SMEM(smem_raw);
  unsigned char* const smem = smem_raw + ((1024u - (smem_u32(smem_raw) & 1023u)) & 1023u);
  unsigned char* const stages = smem;
  unsigned char* const qs = smem + W_Q_OFF;
  float* const red = reinterpret_cast<float*>(smem + W_RED_OFF);  // [3][NWG][4][H]
  int* const flag = reinterpret_cast<int*>(smem + W_FLAG_OFF);
  // [STAGES][T]; EARLY reads the page indices into registers a tile ahead instead of the ring
  int* const idx_ring = reinterpret_cast<int*>(smem + W_IDX_OFF);

  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int wg = warp >> 2, wq = warp & 3, wtid = tid & 127;
  const int g = lane >> 2, q = lane & 3;
  const int unit = blockIdx.x;
  const KvRange<T> kv(p.indptr, unit, p.chunk, p.N);  // this CTA's token range and its tiles

  // Loads: as MMA=0 (RowLoads), each chunk to its swizzled place.
  const RowLoads ld(p, tid);
  const KvIds ids(p.indices, idx_ring, kv, p.num_pages, ld.lrow, tid);
  auto issue = [&](int stage, const Rows& r) {
    ld.issue(smem_u32(stages + stage * WSTAGE), r, [](int row, int c) { return sw_off(row, c, T); });
  };

  ids.start<!KA_EARLY>(kv.ntiles, issue);  // the first STAGES-1 tiles in flight (EARLY: no id ring)

  KvSegments seg(p.indptr, p.B, unit, p.nchunks, kv, lane);  // the sequences of the range, in order

  // Online-softmax state of this thread's 4 heads (c = 2j + e: head 8j + 2q + e), the same in
  // every warpgroup; m: running max, l: this thread's sum of P as rounded to bf16 (its 2 tokens per
  // tile; summed over the warpgroup at the end), x: the exact sum likewise.
  float m[4], l[4], x[4];
  float o[MBG][2][4];  // O^T of this warpgroup's m64 blocks (dims 64*(wg*MBG+mb) + 16*wq + g (+8))

  auto reset_state = [&]() {
#pragma unroll
    for (int c = 0; c < 4; ++c) {
      m[c] = kNegInf;
      l[c] = x[c] = 0.f;
    }
#pragma unroll
    for (int mb = 0; mb < MBG; ++mb)
#pragma unroll
      for (int j = 0; j < 2; ++j) o[mb][j][0] = o[mb][j][1] = o[mb][j][2] = o[mb][j][3] = 0.f;
  };
  // Q of sequence b into shared memory (every wgmma that read the previous Q has retired: each
  // warpgroup waits for its S wgmmas before the softmax barriers of the tile).
  auto load_q = [&](int b) {
    const uint16_t* qn = p.qn + static_cast<int64_t>(b) * H * DC;
    const uint16_t* qp = p.qp + static_cast<int64_t>(b) * H * DP;
    for (int i = tid; i < H * QCH; i += NT) {
      const int h = i / QCH, c = i % QCH;
      const uint16_t* src = c < CCH ? qn + h * DC + c * 8 : qp + h * DP + (c - CCH) * 8;
      *reinterpret_cast<uint4*>(qs + sw_off(h, c, H)) = __ldg(reinterpret_cast<const uint4*>(src));
    }
    fence_proxy_async();  // the generic-proxy stores, before the wgmmas (async proxy) read them
    __syncthreads();
  };
  auto advance = [&](int b) -> bool {
    if (!seg.advance(b, [&](int e) { write_empty_seq(p, e, tid); })) return false;
    load_q(seg.cur_b);
    reset_state();
    return true;
  };

  // The current segment's part [lo, hi) of a tile, by the whole CTA.
  auto cta_tile = [&](int stage, int ts, int lo, int hi) {
    const uint32_t kb = smem_u32(stages + stage * WSTAGE);
    const uint32_t qb = smem_u32(qs);
    // S^T partial over this warpgroup's k-steps [wg*KSG, +KSG).
    float s[2][4];
#pragma unroll
    for (int j = 0; j < 2; ++j) s[j][0] = s[j][1] = s[j][2] = s[j][3] = 0.f;
    wgmma_fence();
#pragma unroll
    for (int i = 0; i < KSG; ++i) {
      const int kk = wg * KSG + i;  // 16 dims: column block kk/4, 32 bytes kk%4 into its rows
      wgmma_s16(s, sw128_desc(kb + (kk >> 2) * T * 128 + (kk & 3) * 32, 16),
                sw128_desc(qb + (kk >> 2) * H * 128 + (kk & 3) * 32, 16));
    }
    wgmma_commit();
    wgmma_wait_n<0>();
    fence_operands(s);
    if constexpr (NWG > 1) {
      sum_partial_scores<NWG, 2, 128>(s, reinterpret_cast<float4*>(smem + W_SX_OFF), wg, wtid);
    }
    // Scale, mask tokens outside [lo, hi), column maxima.
    const int pos0 = ts + 16 * wq + g, pos1 = pos0 + 8;
    const bool ok0 = pos0 >= lo && pos0 < hi, ok1 = pos1 >= lo && pos1 < hi;
    float mx[4];
#pragma unroll
    for (int j = 0; j < 2; ++j)
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        s[j][e] = ok0 ? s[j][e] * p.scale_log2 : kNegInf;
        s[j][2 + e] = ok1 ? s[j][2 + e] * p.scale_log2 : kNegInf;
        float v = fmaxf(s[j][e], s[j][2 + e]);
        v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, 4));
        v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, 8));
        v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, 16));
        mx[2 * j + e] = v;
      }
    float* const rmax = red + wg * 4 * H;  // [4 warps][H]
    if (g == 0) {
#pragma unroll
      for (int c = 0; c < 4; ++c) rmax[wq * H + 8 * (c >> 1) + 2 * q + (c & 1)] = mx[c];
    }
    __syncthreads();
    float a[4], mu[4];
#pragma unroll
    for (int c = 0; c < 4; ++c) {
      const int h = 8 * (c >> 1) + 2 * q + (c & 1);
      const float v = fmaxf(fmaxf(rmax[h], rmax[H + h]), fmaxf(rmax[2 * H + h], rmax[3 * H + h]));
      const float mn = fmaxf(m[c], v);
      mu[c] = mn == kNegInf ? 0.f : mn;
      a[c] = exp2f(m[c] - mu[c]);
      m[c] = mn;
    }
    // P (bf16) into this warpgroup's P buffer, [head][token] K-major swizzled; sums; rescale O.
    unsigned char* const pbuf = smem + W_P_OFF + wg * PBYTES;
    const int t0 = 16 * wq + g;  // t0 and t0 + 8: chunks t0/8 and t0/8 + 1, element t0 % 8
#pragma unroll
    for (int j = 0; j < 2; ++j)
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const int c = 2 * j + e, h = 8 * j + 2 * q + e;
        const float p0 = exp2f(s[j][e] - mu[c]), p1 = exp2f(s[j][2 + e] - mu[c]);
        const uint32_t pk = pack_bf16(p0, p1);
        l[c] = l[c] * a[c] + (bf_lo(pk) + bf_hi(pk));
        x[c] = x[c] * a[c] + (p0 + p1);
        *reinterpret_cast<uint16_t*>(pbuf + h * 128 + ((((t0 >> 3)) ^ (h & 7)) << 4) + (t0 & 7) * 2) =
            static_cast<uint16_t>(pk & 0xffffu);
        *reinterpret_cast<uint16_t*>(pbuf + h * 128 + ((((t0 >> 3) + 1) ^ (h & 7)) << 4) + (t0 & 7) * 2) =
            static_cast<uint16_t>(pk >> 16);
#pragma unroll
        for (int mb = 0; mb < MBG; ++mb) {
          o[mb][j][e] *= a[c];
          o[mb][j][2 + e] *= a[c];
        }
      }
    fence_proxy_async();  // P stores (generic proxy) before the wgmma reads them
    __syncthreads();
    // O^T[this warpgroup's dims] += V^T · P^T: 4 k-steps of 16 tokens per m64 block.
    const uint32_t pb = smem_u32(pbuf);
    wgmma_fence();
#pragma unroll
    for (int mb = 0; mb < MBG; ++mb)
#pragma unroll
      for (int kt = 0; kt < T / 16; ++kt)
        wgmma_pv16(o[mb], sw128_desc(kb + (wg * MBG + mb) * T * 128 + kt * 16 * 128, T * 128),
                   sw128_desc(pb + kt * 32, 16));
    wgmma_commit();
    wgmma_wait_n<0>();
#pragma unroll
    for (int mb = 0; mb < MBG; ++mb) fence_operands(o[mb]);
  };

  // Ends the current segment (see MMA=0): sums l and x over the warpgroup, writes this warpgroup's
  // output dims as the final output or as a partial; with FUSED_MERGE the sequence's last CTA merges.
  auto finalize = [&]() {
    float* const rl = red + NWG * 4 * H + wg * 4 * H;
    float* const rx = red + 2 * NWG * 4 * H + wg * 4 * H;
#pragma unroll
    for (int c = 0; c < 4; ++c) {
      float vl = l[c], vx = x[c];
      vl += __shfl_xor_sync(0xffffffffu, vl, 4);
      vl += __shfl_xor_sync(0xffffffffu, vl, 8);
      vl += __shfl_xor_sync(0xffffffffu, vl, 16);
      vx += __shfl_xor_sync(0xffffffffu, vx, 4);
      vx += __shfl_xor_sync(0xffffffffu, vx, 8);
      vx += __shfl_xor_sync(0xffffffffu, vx, 16);
      if (g == 0) {
        const int h = 8 * (c >> 1) + 2 * q + (c & 1);
        rl[wq * H + h] = vl;
        rx[wq * H + h] = vx;
      }
    }
    __syncthreads();
    float inv[4], lse_c[4];
#pragma unroll
    for (int c = 0; c < 4; ++c) {
      const int h = 8 * (c >> 1) + 2 * q + (c & 1);
      const float L = ((rl[h] + rl[H + h]) + rl[2 * H + h]) + rl[3 * H + h];
      const float X = ((rx[h] + rx[H + h]) + rx[2 * H + h]) + rx[3 * H + h];
      inv[c] = 1.f / L;
      lse_c[c] = m[c] + log2f(X);
    }
    const bool full = kv.seq_mode || (seg.seq_s >= kv.cs && seg.seq_e <= kv.ce);
    const int dbase = 64 * wg * MBG + 16 * wq + g;
    if (full) {
      uint16_t* ob = p.out + static_cast<int64_t>(seg.cur_b) * H * DC;
#pragma unroll
      for (int mb = 0; mb < MBG; ++mb)
#pragma unroll
        for (int c = 0; c < 4; ++c) {
          const int h = 8 * (c >> 1) + 2 * q + (c & 1), j = c >> 1, e = c & 1;
          const uint32_t pk = pack_bf16(o[mb][j][e] * inv[c], o[mb][j][2 + e] * inv[c]);
          ob[h * DC + dbase + 64 * mb] = static_cast<uint16_t>(pk & 0xffffu);
          ob[h * DC + dbase + 64 * mb + 8] = static_cast<uint16_t>(pk >> 16);
        }
      if (wg == 0 && wq == 0 && g == 0) {
#pragma unroll
        for (int c = 0; c < 4; ++c) p.lse[static_cast<int64_t>(seg.cur_b) * H + 8 * (c >> 1) + 2 * q + (c & 1)] = lse_c[c];
      }
    } else {
      const int64_t pidx = static_cast<int64_t>(unit) * 2 + (seg.seg_s == kv.cs ? 0 : 1);
      float* po = p.part_o + pidx * H * DC;
#pragma unroll
      for (int mb = 0; mb < MBG; ++mb)
#pragma unroll
        for (int c = 0; c < 4; ++c) {
          const int h = 8 * (c >> 1) + 2 * q + (c & 1), j = c >> 1, e = c & 1;
          po[h * DC + dbase + 64 * mb] = o[mb][j][e] * inv[c];
          po[h * DC + dbase + 64 * mb + 8] = o[mb][j][2 + e] * inv[c];
        }
      if (wg == 0 && wq == 0 && g == 0) {
#pragma unroll
        for (int c = 0; c < 4; ++c) p.part_lse[pidx * H + 8 * (c >> 1) + 2 * q + (c & 1)] = lse_c[c];
      }
      if (KA_FUSED_MERGE) merge_if_last(p, seg, flag, tid);
    }
    __syncthreads();  // red and flag are reused by the next segment
  };

  bool have = advance(seg.cur_b);
#if KA_EARLY
  Rows rows;
  ids.load(STAGES - 1, rows);  // the pages of the first tile the loop issues, a tile ahead
#endif
  for (int t = 0; t < kv.ntiles && have; ++t) {
#if KA_EARLY
    __syncthreads();  // every warpgroup is done with tile t-1: its stage takes tile t+STAGES-1 now
    {
      const int u = t + STAGES - 1;
      if (u < kv.ntiles) issue(u % STAGES, rows);
      cp_async_commit();
      ids.load(u + 1, rows);  // (used at the next tile: its latency hides behind this one)
    }
    cp_async_wait_n<STAGES - 1>();  // tile t landed (this thread's copies); tile u may be in flight
    fence_proxy_async();  // this thread's landed copies (generic proxy), before the wgmmas read them
    __syncthreads();      // tile t landed for every thread
    if (t == 0) trace_at(1);
    if (t == kv.ntiles - 1) trace_at(2);
#else
    cp_async_wait_n<STAGES - 2>();
    fence_proxy_async();  // this thread's landed copies (generic proxy), before the wgmmas read them
    __syncthreads();      // tile t landed for every thread; every warpgroup is done with tile t-1
    if (t == 0) trace_at(1);
    if (t == kv.ntiles - 1) trace_at(2);
    ids.issue_next(t + STAGES - 1, kv.ntiles, issue);
#endif
    const int ts = kv.tile_start(t), te = kv.tile_end(t);
    const int stage = t % STAGES;
    seg.walk(ts, te, have, [&](int lo, int hi) { cta_tile(stage, ts, lo, hi); }, [&] {
      finalize();
      return advance(seg.cur_b + 1);
    });
  }
  cp_async_wait_n<0>();
  trace_at(3);
}
