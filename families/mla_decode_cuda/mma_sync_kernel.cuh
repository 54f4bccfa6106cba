// mma_sync_kernel.cuh — the mma.sync kernel (MMA=0): Q.K^T by warps splitting the 576 dims, the online
// softmax, P.V by warps splitting the 512 output dims, split-KV partials and the fused merge.
// A part of mla_decode.cu (family.json "sources"), expanded where the entry includes it: no include guard.
__global__ void __launch_bounds__(NT, 1) mla_decode_kernel(Params p) {
  trace_at(0, true);
  KA_DYN_SMEM(smem);
  unsigned char* const stages = smem;
  float4* const sx = reinterpret_cast<float4*>(smem + STAGES * STAGE_BYTES);  // [W][NTT][32]
  int* const flag = reinterpret_cast<int*>(smem + STAGES * STAGE_BYTES + SX_BYTES);
  int* const idx_ring = flag + 4;  // [STAGES][T]

  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int unit = blockIdx.x;
  const KvRange<T> kv(p.indptr, unit, p.chunk, p.N);  // this CTA's token range and its tiles

  // Loads (RowLoads), each row at its padded place; the page ids travel one pipeline depth ahead
  // of their tile through idx_ring (PageIds).
  const RowLoads ld(p, tid);
  const KvIds ids(p.indices, idx_ring, kv, p.num_pages, ld.lrow, tid);
  auto issue = [&](int stage, const Rows& r) {
    ld.issue(smem_u32(stages + stage * STAGE_BYTES), r, [](int row, int c) { return row * ROWB + c * 16; });
  };

  ids.start(kv.ntiles, issue);  // the first STAGES-1 tiles in flight

  KvSegments seg(p.indptr, p.B, unit, p.nchunks, kv, lane);  // the sequences of the range, in order

  // This warp's k-steps of the score ([ks0, ks0 + nks)) and output dims ([warp*DW, +DW)).
  const int ks0 = warp * KS_ALL / W;
  const int nks = (warp + 1) * KS_ALL / W - ks0;
  const int r0 = lane >> 2, r1 = r0 + 8, cq = 2 * (lane & 3);

  // Online-softmax state (the same in every warp: each sums the same partial scores in the same
  // order) for rows r0, r1; l: sum of P as rounded to bf16, e: exact sum.
  float m0 = kNegInf, m1 = kNegInf, l0 = 0.f, l1 = 0.f, e0 = 0.f, e1 = 0.f;
  float o[NTO][4];
  uint32_t qa[KSW][4];

  auto reset_state = [&]() {
    m0 = m1 = kNegInf;
    l0 = l1 = e0 = e1 = 0.f;
    zero_acc(o);
  };
  auto load_q = [&](int b) {
    const uint16_t* qn = p.qn + static_cast<int64_t>(b) * H * DC;
    const uint16_t* qp = p.qp + static_cast<int64_t>(b) * H * DP;
#pragma unroll
    for (int i = 0; i < KSW; ++i) {
      if (i < nks) {
        const int d = 16 * (ks0 + i) + cq;  // a k-step lies wholly in q_nope or in q_pe
        if (d < DC) {
          qa[i][0] = ld_u32(qn + r0 * DC + d);
          qa[i][1] = ld_u32(qn + r1 * DC + d);
          qa[i][2] = ld_u32(qn + r0 * DC + d + 8);
          qa[i][3] = ld_u32(qn + r1 * DC + d + 8);
        } else {
          qa[i][0] = ld_u32(qp + r0 * DP + d - DC);
          qa[i][1] = ld_u32(qp + r1 * DP + d - DC);
          qa[i][2] = ld_u32(qp + r0 * DP + d - DC + 8);
          qa[i][3] = ld_u32(qp + r1 * DP + d - DC + 8);
        }
      } else {
        qa[i][0] = qa[i][1] = qa[i][2] = qa[i][3] = 0u;
      }
    }
  };
  auto advance = [&](int b) -> bool {
    if (!seg.advance(b, [&](int e) { write_empty_seq(p, e, tid); })) return false;
    load_q(seg.cur_b);
    reset_state();
    return true;
  };

  // The current segment's part [lo, hi) of a tile, by the whole CTA (two barriers inside).
  auto cta_tile = [&](int stage, int ts, int lo, int hi) {
    const unsigned char* st = stages + stage * STAGE_BYTES;
    // Partial scores over this warp's k-steps, for all T tokens.
    float s[NTT][4];
#pragma unroll
    for (int j = 0; j < NTT; ++j) s[j][0] = s[j][1] = s[j][2] = s[j][3] = 0.f;
    const uint32_t sbase = smem_u32(st + ((lane & 7) + 8 * (lane >> 4)) * ROWB + ((lane >> 3) & 1) * 16);
#pragma unroll
    for (int i = 0; i < KSW; ++i) {
      if (i < nks) {
        const uint32_t kb = sbase + (ks0 + i) * 32;
#pragma unroll
        for (int jp = 0; jp < NTT / 2; ++jp) {
          uint32_t b0, b1, b2, b3;
          ldsm_x4(kb + jp * 16 * ROWB, b0, b1, b2, b3);
          mma_bf16(s[2 * jp], qa[i], b0, b1);
          mma_bf16(s[2 * jp + 1], qa[i], b2, b3);
        }
      }
    }
    sum_partial_scores<W, NTT, 32>(s, sx, warp, lane);
    // Scale, mask tokens outside [lo, hi), online softmax (rows r0 and r1).
    float mx0, mx1;
    scale_mask_scores(s, p.scale_log2, ts + cq, lo, hi, mx0, mx1);
    float mu0, a0, mu1, a1;
    decode_row_max(m0, mx0, mu0, a0);
    decode_row_max(m1, mx1, mu1, a1);
    uint32_t pk[NTT][2];
    float ls0 = 0.f, ls1 = 0.f, es0 = 0.f, es1 = 0.f;
#pragma unroll
    for (int j = 0; j < NTT; ++j) {
      pk[j][0] = decode_p_pair(s[j][0], s[j][1], mu0, ls0, es0);
      pk[j][1] = decode_p_pair(s[j][2], s[j][3], mu1, ls1, es1);
    }
    l0 = l0 * a0 + ls0;
    l1 = l1 * a1 + ls1;
    e0 = e0 * a0 + es0;
    e1 = e1 * a1 + es1;
    scale_rows(o, a0, a1);
    // O[:, warp's dims] += P · ckv rows.
#pragma unroll
    for (int kt = 0; kt < KT; ++kt) {
      const uint32_t pa[4] = {pk[2 * kt][0], pk[2 * kt][1], pk[2 * kt + 1][0], pk[2 * kt + 1][1]};
      const uint32_t vb = smem_u32(st + (16 * kt + (lane & 7) + 8 * ((lane >> 3) & 1)) * ROWB +
                                   (warp * (DW / 8) + (lane >> 4)) * 16);
      mma_bf16_ldsm_t(o, pa, vb);
    }
  };

  // Ends the current segment: every warp writes its output dims (the softmax state is the same in
  // all warps), as the final output or as a partial; with FUSED_MERGE the sequence's last CTA merges.
  auto finalize = [&]() {
    l0 += __shfl_xor_sync(0xffffffffu, l0, 1);
    l0 += __shfl_xor_sync(0xffffffffu, l0, 2);
    l1 += __shfl_xor_sync(0xffffffffu, l1, 1);
    l1 += __shfl_xor_sync(0xffffffffu, l1, 2);
    e0 += __shfl_xor_sync(0xffffffffu, e0, 1);
    e0 += __shfl_xor_sync(0xffffffffu, e0, 2);
    e1 += __shfl_xor_sync(0xffffffffu, e1, 1);
    e1 += __shfl_xor_sync(0xffffffffu, e1, 2);
    const float i0 = 1.f / l0, i1 = 1.f / l1;
    const float lse0 = m0 + log2f(e0), lse1 = m1 + log2f(e1);
    const bool full = kv.seq_mode || (seg.seq_s >= kv.cs && seg.seq_e <= kv.ce);
    const int d0 = warp * DW + cq;
    if (full) {
      uint16_t* ob = p.out + static_cast<int64_t>(seg.cur_b) * H * DC;
#pragma unroll
      for (int n = 0; n < NTO; ++n) {
        *reinterpret_cast<uint32_t*>(ob + r0 * DC + d0 + 8 * n) = pack_bf16(o[n][0] * i0, o[n][1] * i0);
        *reinterpret_cast<uint32_t*>(ob + r1 * DC + d0 + 8 * n) = pack_bf16(o[n][2] * i1, o[n][3] * i1);
      }
      if (warp == 0 && (lane & 3) == 0) {
        p.lse[static_cast<int64_t>(seg.cur_b) * H + r0] = lse0;
        p.lse[static_cast<int64_t>(seg.cur_b) * H + r1] = lse1;
      }
    } else {
      const int64_t pidx = static_cast<int64_t>(unit) * 2 + (seg.seg_s == kv.cs ? 0 : 1);
      float* po = p.part_o + pidx * H * DC;
#pragma unroll
      for (int n = 0; n < NTO; ++n) {
        *reinterpret_cast<float2*>(po + r0 * DC + d0 + 8 * n) = make_float2(o[n][0] * i0, o[n][1] * i0);
        *reinterpret_cast<float2*>(po + r1 * DC + d0 + 8 * n) = make_float2(o[n][2] * i1, o[n][3] * i1);
      }
      if (warp == 0 && (lane & 3) == 0) {
        p.part_lse[pidx * H + r0] = lse0;
        p.part_lse[pidx * H + r1] = lse1;
      }
      if (KA_FUSED_MERGE) merge_if_last(p, seg, flag, tid);
    }
    __syncthreads();  // sx and flag are reused by the next segment
  };

  bool have = advance(seg.cur_b);
  for (int t = 0; t < kv.ntiles && have; ++t) {
    cp_async_wait_n<STAGES - 2>();
    __syncthreads();  // tile t landed for every thread; every warp is done with tile t-1
    if (t == 0) trace_at(1);
    if (t == kv.ntiles - 1) trace_at(2);
    ids.issue_next(t + STAGES - 1, kv.ntiles, issue);
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
