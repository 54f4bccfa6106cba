// epilogue.cuh — the epilogue that writes a warp's rows of O (normalised by l) and their lse.
// A part of gqa_prefill.cu (family.json "sources"), expanded where the entry includes it: no include guard.
// The epilogue (every warp owns whole rows): the thread's rows, CTA rows wr0 and wr0 + 8 (those past
// the item's nq tokens skipped), out = O / l and lse = m + log2(l) from the quad's sums; rows that
// saw no key get the empty-row values (see the top). A thread holds two columns of every 8; the
// quad's lanes trade them (quad_transpose) so that each stores whole 16-byte chunks (a warp's store
// covers 64 contiguous bytes of each of its 8 rows instead of 16). ROLLED: one row at a time (a loop
// kept rolled: half the registers, for XITEM's write beside the next item's P).
template <bool ROLLED = false>
__device__ __forceinline__ void write_rows(const Params& p, Rows st, const float (&o)[NTD][4], int64_t row0, int nq,
                                           int wr0, int lane) {
  const int cq = 2 * (lane & 3);
  st.l0 += __shfl_xor_sync(0xffffffffu, st.l0, 1);
  st.l0 += __shfl_xor_sync(0xffffffffu, st.l0, 2);
  st.l1 += __shfl_xor_sync(0xffffffffu, st.l1, 1);
  st.l1 += __shfl_xor_sync(0xffffffffu, st.l1, 2);
  const uint32_t empty = KA_MASKED_ROW_ZERO ? 0u : 0x7fc07fc0u;
#pragma unroll(ROLLED ? 1 : 2)
  for (int h = 0; h < 2; ++h) {
    const int wr = wr0 + 8 * h;
    const bool valid = wr / G < nq;  // (not warp-uniform for every group size: the quad trades anyway)
    const float m = h ? st.m1 : st.m0, l = h ? st.l1 : st.l0;
    const bool none = m == kNegInf;  // the row saw no key
    const float inv = none ? 0.f : 1.f / l;
    const int64_t orow = row0 + static_cast<int64_t>(wr / G) * HQ + wr % G;
    uint4* dst = reinterpret_cast<uint4*>(p.out + orow * D);
#pragma unroll
    for (int g4 = 0; g4 < NTD / 4; ++g4) {
      uint32_t v[4];
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const int n = 4 * g4 + i;
        const float x0 = h ? o[n][2] : o[n][0], x1 = h ? o[n][3] : o[n][1];  // (selects: h stays a register when rolled)
        v[i] = none ? empty : pack_bf16(x0 * inv, x1 * inv);
      }
      quad_transpose(v, cq >> 1);
      if (valid) dst[4 * g4 + (cq >> 1)] = make_uint4(v[0], v[1], v[2], v[3]);
    }
    if (valid && (lane & 3) == 0) p.lse[orow] = none ? kNegInf : m + log2f(l);
  }
}
