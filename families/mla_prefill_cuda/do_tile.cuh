// do_tile.cuh — one query tile: the dispatch to the wgmma schedules and the mma.sync path.
// A part of mla_prefill.cu (family.json "sources"), expanded where the entry includes it: no include guard.
__device__ __forceinline__ void do_tile(const Params& p, unsigned char* smem, const Item& it) {
  unsigned char* const stages = smem;
  unsigned char* const q_smem = stages + STAGES * STAGE_BYTES;
  float* const s_smem = reinterpret_cast<float*>(q_smem + Q_BYTES);
  unsigned char* const p_smem = reinterpret_cast<unsigned char*>(s_smem + M * SROW);
  float* const alpha_smem = reinterpret_cast<float*>(p_smem + P_BYTES);
  float* const inv_smem = alpha_smem + M;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int k0 = it.k0, kl = it.kl, delta = it.delta, i0 = it.i0, nq = it.nq, kv_hi = it.kv_hi;
  const int64_t row0 = static_cast<int64_t>(it.rowtok) * H;  // output row of CTA row 0 (token-major)
  if (kv_hi <= 0) {
    fill_empty(p, it, tid, NT);
    return;
  }
  const int ntiles = ceil_div_i(kv_hi, T);
  const int nomask = it.nomask;
#if KA_MMA
  (void)s_smem, (void)alpha_smem, (void)inv_smem, (void)lane, (void)warp;
#if KA_WARPS == 12
  tile_wgmma3(p, smem, k0, kl, delta, i0, nq, kv_hi, ntiles, nomask, row0);
#else
  tile_wgmma(p, smem, k0, kl, delta, i0, nq, kv_hi, ntiles, nomask, row0);
#endif
#else

  // ── loads: chunk c of a tile = row c / CPR, 16-byte column c % CPR ([ckv | kpe]) ──
  auto issue = [&](int stage, int t) {
    unsigned char* ks = stages + stage * STAGE_BYTES;
    for (int c = tid; c < T * CPR; c += NT) {
      const int row = c / CPR, col = c % CPR;
      const int j = t * T + row;
      const bool ok = j < kv_hi;
      const int page = ok ? imin(imax(__ldg(p.indices + k0 + j), 0), p.num_rows - 1) : 0;
      const uint16_t* src = col < CPC ? p.ckv + static_cast<int64_t>(page) * DC + col * 8
                                      : p.kpe + static_cast<int64_t>(page) * DP + (col - CPC) * 8;
      cp_async_16(smem_u32(ks + row * ROWB + col * 16), src, ok ? 16 : 0);
    }
  };
  for (int c = tid; c < M * CPR; c += NT) {
    const int r = c / CPR, col = c % CPR;
    const bool ok = r / H < nq;
    const int64_t qrow = ok ? row0 + r : 0;
    const uint16_t* src = col < CPC ? p.q_nope + qrow * DC + col * 8 : p.q_pe + qrow * DP + (col - CPC) * 8;
    cp_async_16(smem_u32(q_smem + r * ROWB + col * 16), src, ok ? 16 : 0);
  }
  cp_async_commit();
#pragma unroll
  for (int s = 0; s < STAGES - 1; ++s) {
    if (s < ntiles) issue(s, s);
    cp_async_commit();
  }

  // Warp roles.
  const int mi = warp % MT, grp = warp / MT;
  const int r0 = lane >> 2, cq = 2 * (lane & 3);
  // Softmax roles: row srow, columns [ssub * CPT, +CPT).
  const int srow = tid / TPR, ssub = tid % TPR;
  const int slim = i0 + srow / H + delta;  // last key the row sees
  float sm = kNegInf, sl = 0.f, se = 0.f;
  constexpr int NTO = DB / 8;
  float o[NTO][4];
#pragma unroll
  for (int n = 0; n < NTO; ++n) o[n][0] = o[n][1] = o[n][2] = o[n][3] = 0.f;
  const uint32_t qa_base = smem_u32(q_smem + (mi * 16 + (lane & 15)) * ROWB + (lane >> 4) * 16);
  const uint32_t pa_base = smem_u32(p_smem + (mi * 16 + (lane & 15)) * PROWB + (lane >> 4) * 16);

  for (int t = 0; t < ntiles; ++t) {
    cp_async_wait_n<STAGES - 2>();
    __syncthreads();  // tile t (and Q) landed; every warp is done with tile t-1
    {
      const int u = t + STAGES - 1;
      if (u < ntiles) issue(u % STAGES, u);
      cp_async_commit();
    }
    const unsigned char* ks = stages + (t % STAGES) * STAGE_BYTES;
    // ── S phase ──
    {
      constexpr int NJ = KW / 8;
      float s[NJ][4];
#pragma unroll
      for (int j = 0; j < NJ; ++j) s[j][0] = s[j][1] = s[j][2] = s[j][3] = 0.f;
      const uint32_t kb_base = smem_u32(ks + (grp * KW + (lane & 7)) * ROWB + (lane >> 3) * 16);
#pragma unroll 2
      for (int kk = 0; kk < DQ / 16; kk += 2) {
        uint32_t a0[4], a1[4];
        ldsm_x4(qa_base + kk * 32, a0[0], a0[1], a0[2], a0[3]);
        ldsm_x4(qa_base + kk * 32 + 32, a1[0], a1[1], a1[2], a1[3]);
#pragma unroll
        for (int j = 0; j < NJ; ++j) {
          uint32_t b0, b1, b2, b3;
          ldsm_x4(kb_base + j * 8 * ROWB + kk * 32, b0, b1, b2, b3);
          mma_bf16(s[j], a0, b0, b1);
          mma_bf16(s[j], a1, b2, b3);
        }
      }
#pragma unroll
      for (int j = 0; j < NJ; ++j) {
        const int col = grp * KW + 8 * j + cq;
        float* d0 = s_smem + (mi * 16 + r0) * SROW + col;
        float* d1 = d0 + 8 * SROW;
        d0[0] = s[j][0] * p.scale_log2;
        d0[1] = s[j][1] * p.scale_log2;
        d1[0] = s[j][2] * p.scale_log2;
        d1[1] = s[j][3] * p.scale_log2;
      }
    }
    __syncthreads();
    // ── softmax phase ──
    {
      float x[CPT];
      const float* src = s_smem + srow * SROW + ssub * CPT;
      const int key0 = t * T + ssub * CPT;
      float mx = kNegInf;
#pragma unroll
      for (int c = 0; c < CPT; ++c) {
        x[c] = src[c];
        if (t >= nomask && (key0 + c > slim || key0 + c >= kl)) x[c] = kNegInf;
        mx = fmaxf(mx, x[c]);
      }
#pragma unroll
      for (int d = 1; d < TPR; d <<= 1) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, d));
      const float mn = fmaxf(sm, mx);
      const float mu = mn == kNegInf ? 0.f : mn;
      const float a = exp2f(sm - mu);
      sm = mn;
      float ls = 0.f, es = 0.f;
      uint32_t* pd = reinterpret_cast<uint32_t*>(p_smem + srow * PROWB + ssub * CPT * 2);
#pragma unroll
      for (int c = 0; c < CPT; c += 2) {
        const float pa = exp2f(x[c] - mu), pb = exp2f(x[c + 1] - mu);
        const uint32_t w = pack_bf16(pa, pb);
        pd[c / 2] = w;
        ls += bf_lo(w) + bf_hi(w);
        es += pa + pb;
      }
#pragma unroll
      for (int d = 1; d < TPR; d <<= 1) {
        ls += __shfl_xor_sync(0xffffffffu, ls, d);
        es += __shfl_xor_sync(0xffffffffu, es, d);
      }
      sl = sl * a + ls;
      se = se * a + es;
      if (ssub == 0) alpha_smem[srow] = a;
    }
    __syncthreads();
    // ── P·V phase ──
    {
      const float a0 = alpha_smem[mi * 16 + r0], a1 = alpha_smem[mi * 16 + r0 + 8];
      scale_rows(o, a0, a1);
      const uint32_t vb = smem_u32(ks + ((lane & 7) + 8 * ((lane >> 3) & 1)) * ROWB + (lane >> 4) * 16) + grp * DB * 2;
#pragma unroll
      for (int kt = 0; kt < T / 16; ++kt) {
        uint32_t pa[4];
        ldsm_x4(pa_base + kt * 32, pa[0], pa[1], pa[2], pa[3]);
#pragma unroll
        for (int n2 = 0; n2 < NTO / 2; ++n2) {
          uint32_t b0, b1, b2, b3;
          ldsm_x4_t(vb + kt * 16 * ROWB + n2 * 32, b0, b1, b2, b3);
          mma_bf16(o[2 * n2], pa, b0, b1);
          mma_bf16(o[2 * n2 + 1], pa, b2, b3);
        }
      }
    }
  }
  cp_async_wait_n<0>();

  // ── epilogue ──
  if (ssub == 0) {
    const bool none = sm == kNegInf;
    inv_smem[srow] = none ? -1.f : 1.f / sl;  // -1: the row saw no key
    if (srow / H < nq) p.lse[row0 + srow] = none ? kNegInf : sm + log2f(se);
  }
  __syncthreads();
  const uint32_t empty = KA_MASKED_ROW_ZERO ? 0u : 0x7fc07fc0u;
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int r = mi * 16 + r0 + 8 * h;
    if (r / H >= nq) continue;
    const float inv = inv_smem[r];
    uint32_t* dst = reinterpret_cast<uint32_t*>(p.out + (row0 + r) * DC + grp * DB);
#pragma unroll
    for (int n = 0; n < NTO; ++n)
      dst[(8 * n + cq) / 2] = inv < 0.f ? empty : pack_bf16(o[n][2 * h] * inv, o[n][2 * h + 1] * inv);
  }
#endif
}
