// kernelarc/device/paged.cuh — walks over ragged and paged index arrays (FlashInfer's indptr /
// indices layout: sequence b owns positions [indptr[b], indptr[b+1]) of `indices`, each a page id).
//   count_le(indptr, B, x, lane)   #{b in [1, B] : indptr[b] <= x} for a non-decreasing indptr,
//                                  by a 32-ary search of one warp (every lane gets it; warp-uniform
//                                  control flow): the sequence that holds flat position x
//   cta_token_range(ip, unit, chunk, n, cs, ce)
//                                  the flat positions [cs, ce) a split-KV CTA owns: sequence `unit`
//                                  whole when chunk == 0, else chunk `unit` of `chunk` positions
//                                  (the last one cut at n)
//   KvRange<T> r(ip, unit, chunk, n)
//                                  cta_token_range as r.cs, r.ce, and the range's r.ntiles tiles of
//                                  T positions (also given to the KA_TRACE timeline)
//   PageIds<T, NR, RPP, STAGES>     the page ids of a cp.async K/V pipeline's tiles, travelling one
//                                  pipeline depth ahead of their tile through a ring in shared
//                                  memory (see the struct)
//                                  (start: the pipeline's prologue; issue_next: its steady state)
//   KvSegments                     the sequences a split-KV CTA's range [cs, ce) touches, walked in
//                                  order (see the struct; walk: the segments of one tile)
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

// A split-KV CTA's positions (cta_token_range) and their tiles of T positions.
template <int T>
struct KvRange {
  int cs, ce, ntiles;
  bool seq_mode;  // chunk 0: the CTA owns sequence `unit` whole
  KA_DEV KvRange(const int* __restrict__ ip, int unit, int chunk, int n) : seq_mode(chunk == 0) {
    cta_token_range(ip, unit, chunk, n, cs, ce);
    ntiles = (ce - cs + T - 1) / T;
    trace_tiles(ntiles);
  }
  KA_DEV int tile_start(int t) const { return cs + t * T; }
  KA_DEV int tile_end(int t) const { return imin(cs + t * T + T, ce); }
};

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

  KA_DEV PageIds(const int* indices_, int* ring_, const KvRange<T>& r, int num_pages, int lrow_, int tid_)
      : indices(indices_), ring(ring_), cs(r.cs), ce(r.ce), ce_load(num_pages > 0 ? r.ce : r.cs), lrow(lrow_), tid(tid_),
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
  // The prologue: the first STAGES - 1 tiles of ntiles in flight, issue(stage, rows) each (their ids
  // read directly, all before the first issue so that those loads overlap), one cp.async group a
  // tile, each with the ids of the tile STAGES - 1 later (RING false: without them, for a caller
  // that reads the ids a tile ahead itself).
  template <bool RING = true, typename Issue>
  KA_DEV void start(int ntiles, Issue&& issue) const {
    Rows pre[STAGES - 1];
#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s)
      if (s < ntiles) load(s, pre[s]);
#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
      if (s < ntiles) issue(s, pre[s]);
      if (RING) prefetch(s + STAGES - 1);
      cp_async_commit();
    }
  }
  // The steady state: tile u (when u < ntiles) issued from its ring slot into stage u % STAGES, and
  // the ids of tile u + STAGES - 1, as one cp.async group.
  template <typename Issue>
  KA_DEV void issue_next(int u, int ntiles, Issue&& issue) const {
    if (u < ntiles) {
      Rows rows;
      from_ring(u, rows);
      issue(u % STAGES, rows);
    }
    prefetch(u + STAGES - 1);
    cp_async_commit();
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
  template <int T>
  KA_DEV KvSegments(const int* ip_, int B, int unit, int nchunks, const KvRange<T>& r, int lane)
      : KvSegments(ip_, B, unit, nchunks, r.cs, r.ce, r.seq_mode, lane) {}
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
  // The segments that the tile of positions [ts, te) touches, in order: tile(lo, hi) for each
  // one's part of it, then have = end() for each segment that ends inside the tile (finalize it
  // and advance to the next; false when there is none, which ends the walk).
  template <typename Tile, typename End>
  KA_DEV void walk(int ts, int te, bool& have, Tile&& tile, End&& end) {
    while (true) {
      const int lo = imax(seg_s, ts), hi = imin(seg_e, te);
      if (lo < hi) tile(lo, hi);
      if (seg_e > te) break;
      have = end();
      if (!have) break;
    }
  }
  // The chunks of `chunk` positions the current sequence spans: the partials the merge combines
  // and the arrivals the fused merge counts.
  KA_DEV int seq_chunks(int chunk) const { return (seq_e - 1) / chunk - seq_s / chunk + 1; }
};

}  // namespace ka_dev
