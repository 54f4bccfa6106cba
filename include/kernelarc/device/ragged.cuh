// kernelarc/device/ragged.cuh — the work of a ragged (variable-length) causal attention launch: a
// sequence's cost, the longest-first order of the sequences, and a persistent CTA's walk over the
// query tiles in that order. Sequence b owns queries [qo_indptr[b], qo_indptr[b+1]); the rows
// before qo_indptr[0] (if any) are position -1 of the order, the "leading rows".
//   causal_cost(ql, kl)            unmasked scores of a sequence with ql queries and kl keys (the
//                                  last ql keys aligned with the queries) plus its ql rows
//   order_by_cost(cost, order, B, tid, n)
//                                  order[r] = the sequence of rank r by decreasing cost[b] (ties:
//                                  lower b first); cost[] written by the block's threads before;
//                                  every thread of the block calls it (two barriers)
//   order_by_causal_cost(qo, kv, B, cost, order, tid, n)
//                                  cost[] = causal_cost of each sequence of the indptrs, then
//                                  order_by_cost (the prefills' longest-first order)
//   query_tiles<QT>(qo, ord, pos)  the query tiles (QT rows each) of position pos of the order
//                                  (ord null: the identity)
//   warp_find(n, lane, rem, src, within)
//                                  one step of a warp's search for rank rem over 32 lanes' counts
//   warp_rank(B, lane, rem, cnt, b, r)
//                                  the search over positions 0..B-1 holding cnt(i) each
//   TileCursor<QT>::advance(qo, B, ord, t, b, tile)
//                                  tile number t (non-decreasing over calls) as (sequence, tile);
//                                  false past the last
#pragma once
#include <kernelarc/device/target.cuh>

namespace ka_dev {

KA_DEV float causal_cost(int ql, int kl) {
  if (ql <= 0) return 0.f;
  if (kl <= 0) return static_cast<float>(ql);
  const int vlo = imax(1, kl - ql + 1);
  return 0.5f * static_cast<float>(kl + vlo) * static_cast<float>(kl - vlo + 1) + static_cast<float>(ql);
}

KA_DEV void order_by_cost(const float* cost, int* order, int B, int tid, int nthreads) {
  __syncthreads();
  for (int b = tid; b < B; b += nthreads) {
    const float c = cost[b];
    int rank = 0;
    for (int o = 0; o < B; ++o) {
      const float co = cost[o];
      rank += (co > c || (co == c && o < b)) ? 1 : 0;
    }
    order[rank] = b;
  }
  __syncthreads();
}

KA_DEV void order_by_causal_cost(const int* qo_indptr, const int* kv_indptr, int B, float* cost, int* order, int tid,
                                 int nthreads) {
  for (int b = tid; b < B; b += nthreads) {
    const int ql = __ldg(qo_indptr + b + 1) - __ldg(qo_indptr + b);
    const int kl = __ldg(kv_indptr + b + 1) - __ldg(kv_indptr + b);
    cost[b] = causal_cost(ql, kl);
  }
  order_by_cost(cost, order, B, tid, nthreads);
}

template <int QT>
KA_DEV int query_tiles(const int* qo_indptr, const int* ord, int pos) {
  if (pos < 0) {
    const int lead = __ldg(qo_indptr);
    return lead > 0 ? ceil_div(lead, QT) : 0;
  }
  const int b = ord ? ord[pos] : pos;
  const int ql = __ldg(qo_indptr + b + 1) - __ldg(qo_indptr + b);
  return ql > 0 ? ceil_div(ql, QT) : 0;
}

// One step of a warp's search for rank rem: lane i holds a count n; finds the first lane src whose
// running total passes rem and the rank within it (true), or takes the 32 counts off rem (false).
// Warp-uniform; every lane gets the result.
KA_DEV bool warp_find(int n, int lane, int& rem, int& src, int& within) {
  int incl = n;
#pragma unroll
  for (int d = 1; d < 32; d <<= 1) {
    const int o = __shfl_sync(0xffffffffu, incl, (lane - d) & 31);
    if (lane >= d) incl += o;
  }
  const unsigned bal = __ballot_sync(0xffffffffu, incl > rem);
  if (bal) {
    src = __popc((bal & (~bal + 1u)) - 1u);
    within = rem - __shfl_sync(0xffffffffu, incl - n, src);
    return true;
  }
  rem -= __shfl_sync(0xffffffffu, incl, 31);
  return false;
}
// The warp's search for rank rem among positions i = 0 .. B-1 holding cnt(i) each: i and the rank
// within it (false when rem is past them all). Warp-uniform; every lane gets the result.
template <typename Cnt>
KA_DEV bool warp_rank(int B, int lane, int rem, Cnt&& cnt, int& b_out, int& r_out) {
  for (int base = 0; base < B; base += 32) {
    const int b = base + lane;
    int src;
    if (warp_find(b < B ? cnt(b) : 0, lane, rem, src, r_out)) {
      b_out = base + src;
      return true;
    }
  }
  return false;
}
// A forward-only walk: pos is a position in the order (-1: the leading rows), before the first
// tile number of pos.
template <int QT>
struct TileCursor {
  int pos = -1, before = 0;
  KA_DEV bool advance(const int* qo_indptr, int B, const int* ord, int t, int& b_out, int& tile_out) {
    while (pos < B) {
      const int n = query_tiles<QT>(qo_indptr, ord, pos);
      if (t < before + n) {
        b_out = pos < 0 ? -1 : (ord ? ord[pos] : pos);
        tile_out = t - before;
        return true;
      }
      before += n;
      ++pos;
    }
    return false;
  }
};

}  // namespace ka_dev
