// kernelarc/device/paged.cuh — walks over ragged and paged index arrays (FlashInfer's indptr /
// indices layout: sequence b owns positions [indptr[b], indptr[b+1]) of `indices`, each a page id).
//   count_le(indptr, B, x, lane)   #{b in [1, B] : indptr[b] <= x} for a non-decreasing indptr,
//                                  by a 32-ary search of one warp (every lane gets it; warp-uniform
//                                  control flow): the sequence that holds flat position x
//   cta_token_range(ip, unit, chunk, n, cs, ce)
//                                  the flat positions [cs, ce) a split-KV CTA owns: sequence `unit`
//                                  whole when chunk == 0, else chunk `unit` of `chunk` positions
//                                  (the last one cut at n)
//   cta_kv_range<T>(ip, unit, chunk, n, cs, ce)
//                                  cta_token_range, and the range's tiles of T positions (returned,
//                                  and given to the KA_TRACE timeline)
//   PageIds<T, NR, RPP, STAGES>     the page ids of a cp.async K/V pipeline's tiles, travelling one
//                                  pipeline depth ahead of their tile through a ring in shared
//                                  memory (see the struct)
//   KvSegments                     the sequences a split-KV CTA's range [cs, ce) touches, walked in
//                                  order (see the struct)
//   clamp_page(id, last)           an id clamped into [0, last] with one unsigned min (a negative id
//                                  wraps and clamps to the last page): reads never leave the cache
#pragma once
#include <kernelarc/device/copy.cuh>
#include <kernelarc/device/target.cuh>
#include <kernelarc/device/trace.cuh>

#include <climits>

namespace ka_dev {

KA_DEV int count_le(const int* __restrict__ ip, int B, int x, int lane) {
  int lo = 1, hi = B, count = 0;
  while (lo <= hi) {
    const int n = hi - lo + 1;
    const int step = (n + 31) / 32;
    const int p = lo + lane * step;
    const bool in = p <= hi;
    const int v = in ? __ldg(ip + p) : INT_MAX;
    const unsigned bal = __ballot_sync(0xffffffffu, in && v <= x);
    const int k = __popc(bal);
    if (k == 0) break;
    const int plast = lo + (k - 1) * step;
    count += plast - lo + 1;
    if (step == 1) break;
    lo = plast + 1;
    hi = imin(hi, plast + step - 1);
  }
  return count;
}

KA_DEV void cta_token_range(const int* __restrict__ ip, int unit, int chunk, int n, int& cs, int& ce) {
  if (chunk == 0) {
    cs = __ldg(ip + unit);
    ce = imax(__ldg(ip + unit + 1), cs);
  } else {
    cs = unit * chunk;
    ce = imin(cs + chunk, n);
  }
}

KA_DEV int clamp_page(int id, unsigned last) { return static_cast<int>(umin(static_cast<unsigned>(id), last)); }

// The page ids of a K/V pipeline over the flat positions [cs, ce) of indices, T rows per tile; the
// calling thread loads rows lrow + i * RPP (i < NR) of a tile. The ids of a tile travel ahead of it:
// the cp.async group that brings the rows of tile u also brings the ids of tile u + STAGES - 1 into
// slot (u + STAGES - 1) % STAGES of `ring` ([STAGES][T] ints), so when that tile is issued, STAGES - 1
// iterations later, its ids are in shared memory (read with a plain load one tile ahead, the ids'
// latency stalled every issue: ncu on the H200 showed half of all stall cycles on it). The slot
// written at iteration t was last read at iteration t - 1, before the barrier that opens t.
// An id is clamped into the cache with one unsigned min (a negative id wraps to the last page), and
// the rows past the end of the range are known from one count (Rows::left): they keep a clamped id
// and are zero-filled by the caller. With no pages at all every row counts as past the end.
template <int T>
KA_DEV int cta_kv_range(const int* __restrict__ ip, int unit, int chunk, int n, int& cs, int& ce) {
  cta_token_range(ip, unit, chunk, n, cs, ce);
  const int ntiles = (ce - cs + T - 1) / T;
  trace_tiles(ntiles);
  return ntiles;
}

template <int T, int NR, int RPP, int STAGES>
struct PageIds {
  struct Rows {
    int page[NR];
    int left;  // rows lrow + i*RPP with i*RPP < left hold tokens
  };
  const int* indices;
  int* ring;
  int cs, ce, ce_load, lrow, tid;
  unsigned last_page;

  KA_DEV PageIds(const int* indices_, int* ring_, int cs_, int ce_, int num_pages, int lrow_, int tid_)
      : indices(indices_), ring(ring_), cs(cs_), ce(ce_), ce_load(num_pages > 0 ? ce_ : cs_), lrow(lrow_), tid(tid_),
        last_page(static_cast<unsigned>(num_pages - 1)) {}
  KA_DEV int clamp(int r) const { return static_cast<int>(umin(static_cast<unsigned>(r), last_page)); }
  // The ids of tile `tile` from global memory (the prologue's tiles).
  KA_DEV void load(int tile, Rows& r) const {
    r.left = ce_load - (cs + tile * T + lrow);
#pragma unroll
    for (int i = 0; i < NR; ++i)
      r.page[i] = i * RPP < r.left ? clamp(__ldg(indices + cs + tile * T + lrow + i * RPP)) : 0;
  }
  // The ids of tile `tile` from its ring slot (any value is clamped; unused past left).
  KA_DEV void from_ring(int tile, Rows& r) const {
    const int* slot = ring + (tile % STAGES) * T + lrow;
    r.left = ce_load - (cs + tile * T + lrow);
#pragma unroll
    for (int i = 0; i < NR; ++i) r.page[i] = clamp(slot[i * RPP]);
  }
  // Threads tid < T copy the ids of tile `tile` into its slot (joining the open cp.async group).
  KA_DEV void prefetch(int tile) const {
    if (tid < T && tile * T < ce - cs) {
      const int pos = cs + tile * T + tid;
      const bool ok = pos < ce;
      cp_async_4(smem_u32(ring + (tile % STAGES) * T + tid), indices + (ok ? pos : 0), ok ? 4 : 0);
    }
  }
};

// The sequences of a split-KV CTA, in order: the CTA owns the flat positions [cs, ce) (all of
// sequence `unit` when seq_mode, else chunk `unit` of nchunks); seg_s .. seg_e is the part of the
// current sequence cur_b (its positions seq_s .. seq_e) inside the range. An empty sequence is
// written (as zeros, lse -inf) by exactly one CTA: the one whose chunk holds its position, ties at
// a chunk boundary going to the earlier chunk. cur_b starts at the first sequence that may touch
// the range (count_le: every lane of the calling warp takes part).
struct KvSegments {
  const int* ip;
  int cs, ce;
  bool seq_mode, first_chunk, last_chunk;
  int b_limit;
  int cur_b, seq_s = 0, seq_e = 0, seg_s = 0, seg_e = 0;

  KA_DEV KvSegments(const int* ip_, int B, int unit, int nchunks, int cs_, int ce_, bool seq_mode_, int lane)
      : ip(ip_), cs(cs_), ce(ce_), seq_mode(seq_mode_), first_chunk(seq_mode_ || unit == 0),
        last_chunk(seq_mode_ || unit == nchunks - 1), b_limit(seq_mode_ ? unit + 1 : B),
        cur_b(seq_mode_ ? unit : (unit == 0 ? 0 : count_le(ip_, B, cs_, lane))) {}
  // Moves to the first sequence >= b with positions in the range, calling write_empty(b') for the
  // empty sequences this CTA owns on the way; false when there is none.
  template <typename Empty>
  KA_DEV bool advance(int b, Empty&& write_empty) {
    for (; b < b_limit; ++b) {
      const int s = __ldg(ip + b), e = __ldg(ip + b + 1);
      if (e <= s) {
        if (seq_mode || ((s > cs || first_chunk) && (s <= ce || last_chunk))) write_empty(b);
        continue;
      }
      if (!seq_mode && s >= ce) return false;
      cur_b = b;
      seq_s = s;
      seq_e = e;
      seg_s = imax(s, cs);
      seg_e = imin(e, ce);
      return true;
    }
    return false;
  }
};

}  // namespace ka_dev
