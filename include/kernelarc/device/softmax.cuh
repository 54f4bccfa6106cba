// kernelarc/device/softmax.cuh — the running (online) softmax of attention and the merge of
// split-KV partials, in base 2 (scores pre-multiplied by log2(e), so exp is one ex2).
//   OnlineSoftmax s;  s.m (running max, -inf at first), s.l (sum of exp2(x - m))
//     float f = s.rescale(tile_max)   new max; f scales the old sum and accumulators (1 while
//                                     every score so far is -inf)
//     s.add(p)                        p = exp2(x - s.m) of one new score
//   lse_merge(M, L, acc, li, ov)      (ov: float[K] or a float4) folds one partial (its log2-sum-exp li and normalised output
//                                     ov[K]) into a running (M, L, acc[K]); finish with acc / L and
//                                     lse = M + log2(L)
//   softmax_tile<MASK>(s, st, scale, kbase, lim0, lim1, cq, a0, a1, store)
//                                     the lazily rescaled online softmax of one S tile held as
//                                     m16n8 / wgmma accumulators (see the function); store(j, w0, w1)
//                                     takes P of n8 block j, or the overload fills pk[j][0..1]
//   scale_mask_scores(s, scale, key0, lo, hi, mx0, mx1)
//                                     a decode's S tile (same layout) to base 2, keys outside
//                                     [lo, hi) -inf, and this thread's row maxima
//   decode_row_max(m, mx, mu, a), decode_p_pair(x0, x1, mu, ls, es)
//                                     a decode row's step of the online softmax; its P of two keys
//   rescale_o(o, a0, a1)              O's rows scaled, skipped when no row of the warp moved
//   row_softmax_scale(sum)            1 / sum, with an empty row (sum 0) giving zeros
//   ex2(x)                            2^x by the SFU (ex2.approx.ftz: ~2 ulp, subnormal results
//                                     flushed to 0, 2^-inf = 0); exp2f under the emulator
#pragma once
#include <kernelarc/device/convert.cuh>
#include <kernelarc/device/mma.cuh>
#include <kernelarc/device/target.cuh>

namespace ka_dev {

struct OnlineSoftmax {
  float m = -__builtin_huge_valf();
  float l = 0.f;
  KA_DEV float rescale(float tile_max) {
    const float mn = fmaxf(m, tile_max);
    const float f = mn == -__builtin_huge_valf() ? 1.f : exp2f(m - mn);
    m = mn;
    l *= f;
    return f;
  }
  KA_DEV void add(float p) { l += p; }
  // exp2(x - m) for a score of this row (0 while every score is -inf).
  KA_DEV float p(float x) const { return m == -__builtin_huge_valf() ? 0.f : exp2f(x - m); }
};

template <int K>
KA_DEV void lse_merge(float& M, float& L, float (&acc)[K], float li, const float (&ov)[K]) {
  const float Mn = fmaxf(M, li);
  const float fo = exp2f(M - Mn), fn = exp2f(li - Mn);
  L = L * fo + fn;
#pragma unroll
  for (int k = 0; k < K; ++k) acc[k] = acc[k] * fo + fn * ov[k];
  M = Mn;
}

#ifdef KA_EMULATE
inline float ex2(float x) { return exp2f(x); }
#else
KA_DEV float ex2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}
#endif

// ── one S tile of a prefill mainloop ──
// A thread holds two rows of its warp's 16: s[j][0..1] row r0, s[j][2..3] row r0 + 8, keys 8j + cq
// + {0, 1} of the tile (the mma.sync C layout and the wgmma accumulator layout agree). Scores stay
// raw until the exponent: x - m = s * scale - m is the one FFMA that feeds ex2, and the row maxima
// are taken over raw s (scale > 0). Lazy rescaling (as FlashAttention-4 does): a row's running
// maximum m moves only when a tile's maximum exceeds it by more than kSoftmaxSlack, so P = 2^(x - m)
// stays below 2^kSoftmaxSlack (bf16 and the fp32 sums take that) and a warp whose rows all keep
// their maximum skips the rescale of O. l sums the unrounded P: out = O / l, lse = m + log2(l).
constexpr float kSoftmaxSlack = 8.f;
struct SoftmaxRows {
  float m0, m1, l0, l1;
};
// MASK (diagonal tiles): keys past lim0 / lim1 (the last key row r0 / r0 + 8 sees) are -inf.
// a0 / a1 get the factors O's rows r0 and r0 + 8 must be rescaled by (1 when the row kept its
// maximum; 0 at a row's first key).
template <bool MASK, int NTT, typename Store>
KA_DEV void softmax_tile(float (&s)[NTT][4], SoftmaxRows& st, float scale, int kbase, int lim0, int lim1, int cq,
                         float& a0, float& a1, Store&& store) {
  constexpr float kNegInf = -__builtin_huge_valf();
  float mx0 = kNegInf, mx1 = kNegInf;
#pragma unroll
  for (int j = 0; j < NTT; ++j) {
    if (MASK) {
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const int key = kbase + 8 * j + cq + e;
        if (key > lim0) s[j][e] = kNegInf;
        if (key > lim1) s[j][2 + e] = kNegInf;
      }
    }
    mx0 = fmaxf(mx0, fmaxf(s[j][0], s[j][1]));
    mx1 = fmaxf(mx1, fmaxf(s[j][2], s[j][3]));
  }
  mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffffu, mx0, 1));
  mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffffu, mx0, 2));
  mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffffu, mx1, 1));
  mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffffu, mx1, 2));
  mx0 *= scale;
  mx1 *= scale;
  a0 = 1.f;
  a1 = 1.f;
  if (mx0 > st.m0 + kSoftmaxSlack) {  // (a row's first key: m = -inf, factor 0)
    a0 = ex2(st.m0 - mx0);
    st.m0 = mx0;
  }
  if (mx1 > st.m1 + kSoftmaxSlack) {
    a1 = ex2(st.m1 - mx1);
    st.m1 = mx1;
  }
  const float mu0 = st.m0 == kNegInf ? 0.f : st.m0, mu1 = st.m1 == kNegInf ? 0.f : st.m1;  // no key yet: P = 0
  float e0 = 0.f, e1 = 0.f;
#pragma unroll
  for (int j = 0; j < NTT; ++j) {
    const float p00 = ex2(fmaf(s[j][0], scale, -mu0)), p01 = ex2(fmaf(s[j][1], scale, -mu0));
    const float p10 = ex2(fmaf(s[j][2], scale, -mu1)), p11 = ex2(fmaf(s[j][3], scale, -mu1));
    store(j, pack_bf16(p00, p01), pack_bf16(p10, p11));
    e0 += p00 + p01;
    e1 += p10 + p11;
  }
  st.l0 = st.l0 * a0 + e0;
  st.l1 = st.l1 * a1 + e1;
}
template <bool MASK, int NTT>
KA_DEV void softmax_tile(float (&s)[NTT][4], SoftmaxRows& st, float scale, int kbase, int lim0, int lim1, int cq,
                         uint32_t (&pk)[NTT][2], float& a0, float& a1) {
  softmax_tile<MASK>(s, st, scale, kbase, lim0, lim1, cq, a0, a1, [&](int j, uint32_t w0, uint32_t w1) {
    pk[j][0] = w0;
    pk[j][1] = w1;
  });
}
template <int N>
KA_DEV void rescale_o(float (&o)[N][4], float a0, float a1) {
  if (!__any_sync(0xffffffffu, a0 != 1.f || a1 != 1.f)) return;
  scale_rows(o, a0, a1);
}

// ── one S tile of a decode ──
// Raw scores in the m16n8 accumulator layout (s[j][0..1] row r0, s[j][2..3] row r0 + 8, keys
// key0 + 8j + {0, 1}), scaled to base 2 with keys outside [lo, hi) at -inf; mx0 / mx1 get this
// thread's maxima of its two rows (the quad's maxima: the caller's shuffles).
template <int NTT>
KA_DEV void scale_mask_scores(float (&s)[NTT][4], float scale, int key0, int lo, int hi, float& mx0, float& mx1) {
  mx0 = mx1 = -__builtin_huge_valf();
#pragma unroll
  for (int j = 0; j < NTT; ++j)
#pragma unroll
    for (int e = 0; e < 2; ++e) {
      const int pos = key0 + 8 * j + e;
      const bool ok = pos >= lo && pos < hi;
      s[j][e] = ok ? s[j][e] * scale : -__builtin_huge_valf();
      s[j][2 + e] = ok ? s[j][2 + e] * scale : -__builtin_huge_valf();
      mx0 = fmaxf(mx0, s[j][e]);
      mx1 = fmaxf(mx1, s[j][2 + e]);
    }
}

// One row of a decode's online softmax (unscaled by the lazy slack of softmax_tile): the running
// maximum m moves to the tile's row maximum mx (this thread's; reduced over the quad here); mu is
// the maximum P is taken against (0 while the row has no key: P = 0), a the factor of the row's
// earlier sums and outputs.
KA_DEV void decode_row_max(float& m, float mx, float& mu, float& a) {
  mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
  mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
  const float mn = fmaxf(m, mx);
  mu = mn == -__builtin_huge_valf() ? 0.f : mn;
  a = exp2f(m - mu);
  m = mn;
}
// P = 2^(x - mu) of two keys of a row, rounded to bf16 and packed (the A operand of P·V); ls sums
// the rounded values (they normalise O), es the exact ones (they give the lse).
KA_DEV uint32_t decode_p_pair(float x0, float x1, float mu, float& ls, float& es) {
  const float p0 = exp2f(x0 - mu), p1 = exp2f(x1 - mu);
  const uint32_t pk = pack_bf16(p0, p1);
  ls += bf_lo(pk) + bf_hi(pk);
  es += p0 + p1;
  return pk;
}

KA_DEV void lse_merge(float& M, float& L, float (&acc)[4], float li, const float4& ov) {
  const float Mn = fmaxf(M, li);
  const float fo = exp2f(M - Mn), fn = exp2f(li - Mn);
  L = L * fo + fn;
  acc[0] = acc[0] * fo + fn * ov.x;
  acc[1] = acc[1] * fo + fn * ov.y;
  acc[2] = acc[2] * fo + fn * ov.z;
  acc[3] = acc[3] * fo + fn * ov.w;
  M = Mn;
}

KA_DEV float row_softmax_scale(float sum) { return sum > 0.f ? 1.f / sum : 0.f; }

}  // namespace ka_dev
