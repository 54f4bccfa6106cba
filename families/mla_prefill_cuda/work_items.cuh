// work_items.cuh — the work of a launch: query-tile items and their order (the costs, the order by
// cost and the tile cursor are kernelarc/device/ragged.cuh's).
// A part of mla_prefill.cu (family.json "sources"), expanded where the entry includes it: no include guard.

// A query tile (an item: up to QT tokens of one sequence, or of the leading rows when b < 0) and what
// its computation needs: keys k0 .. k0+kl-1 of the page table, query i sees keys j <= i + delta, the
// tile's tokens i0 .. i0+nq-1 (output rows from token rowtok on), keys below kv_hi seen by any of them
// (<= 0: none, the rows are filled instead), key tiles below nomask seen whole by every token.
struct Item {
  int k0, kl, delta, i0, nq, rowtok, kv_hi, nomask;
};
// Tile `tile` (tokens QT * tile on, natural order) of a sequence whose query start q0 and length ql
// and key start k0 and length kl are already read.
__device__ __forceinline__ Item item_geometry(int q0, int ql, int k0, int kl, int tile) {
  Item it;
  it.k0 = k0;
  it.kl = kl;
  it.delta = kl - ql;
  it.i0 = tile * QT;
  it.nq = imin(QT, ql - it.i0);
  it.rowtok = q0 + it.i0;
  it.kv_hi = imin(kl, imax(it.i0 + it.nq - 1 + it.delta + 1, 0));
  it.nomask = imin(kl, imax(it.i0 + it.delta + 1, 0)) / T;
  return it;
}
// Tile `tile` of sequence b (-1: the leading rows) in natural order; item_of takes the tile number
// in work order (ORDER >= 1: the sequence's last, heaviest, tile first).
__device__ __forceinline__ Item item_natural(const Params& p, int b, int tile) {
  if (b < 0) return item_geometry(0, __ldg(p.qo_indptr), 0, 0, tile);
  const int q0 = __ldg(p.qo_indptr + b), k0 = __ldg(p.kv_indptr + b);
  return item_geometry(q0, __ldg(p.qo_indptr + b + 1) - q0, k0, imax(__ldg(p.kv_indptr + b + 1) - k0, 0), tile);
}
// A sequence's tile number in work order (of its ql query tokens) as a tile in natural order.
__device__ __forceinline__ int natural_tile(int ql, int tile) {
  return KA_ORDER >= 1 ? ceil_div_i(ql, QT) - 1 - tile : tile;
}
__device__ __forceinline__ Item item_of(const Params& p, int b, int tile) {
  if (b < 0) return item_natural(p, b, tile);
  const int q0 = __ldg(p.qo_indptr + b), ql = __ldg(p.qo_indptr + b + 1) - q0, k0 = __ldg(p.kv_indptr + b);
  return item_geometry(q0, ql, k0, imax(__ldg(p.kv_indptr + b + 1) - k0, 0), natural_tile(ql, tile));
}
// Query tile t in work order (the leading rows before qo_indptr[0] first, then the sequences in the
// order ord, identity when null; within a sequence as item_of) and its Item, in one round trip of
// index reads (what a CTA of PERSIST 0 waits for before its first loads): each lane reads its
// sequence's query and key bounds together (and qo_indptr[0] beside them, not before), the warp
// scans the tile counts, and the lane that holds tile t's sequence hands its bounds over by
// shuffles. Warp-uniform; false when t is past the last tile.
__device__ __forceinline__ bool map_item(const Params& p, const int* ord, int t, int lane, Item& it) {
  const int lead = __ldg(p.qo_indptr);
  int rem = t;
  for (int base = 0; base < imax(p.B, 1); base += 32) {
    const int j = base + lane;
    const bool in = j < p.B;
    const int b = in ? (ord ? ord[j] : j) : 0;
    int q0 = 0, q1 = 0, k0 = 0, k1 = 0;
    if (in) {
      q0 = __ldg(p.qo_indptr + b);
      q1 = __ldg(p.qo_indptr + b + 1);
      k0 = __ldg(p.kv_indptr + b);
      k1 = __ldg(p.kv_indptr + b + 1);
    }
    if (base == 0) {  // the leading rows before qo_indptr[0] come first
      const int lead_tiles = lead > 0 ? ceil_div_i(lead, QT) : 0;
      if (t < lead_tiles) {
        it = item_geometry(0, lead, 0, 0, t);
        return true;
      }
      rem = t - lead_tiles;
      if (p.B <= 0) return false;
    }
    const int ql = q1 - q0;
    int src, tile;
    if (warp_find(ql > 0 ? ceil_div_i(ql, QT) : 0, lane, rem, src, tile)) {
      const int sq0 = __shfl_sync(0xffffffffu, q0, src), sql = __shfl_sync(0xffffffffu, ql, src);
      const int sk0 = __shfl_sync(0xffffffffu, k0, src), sk1 = __shfl_sync(0xffffffffu, k1, src);
      it = item_geometry(sq0, sql, sk0, imax(sk1 - sk0, 0), natural_tile(sql, tile));
      return true;
    }
  }
  return false;
}
// The rows of an item that sees no key (threads first, first + stride, ...): out 0 where the reference
// skips them (no key in the sequence, or KA_MASKED_ROW_ZERO), NaN where its softmax of an all -inf
// row makes them NaN; lse -inf.
__device__ __forceinline__ void fill_empty(const Params& p, const Item& it, int first, int stride) {
  const bool nan_rows = !KA_MASKED_ROW_ZERO && it.kl > 0;
  const uint32_t fill = nan_rows ? 0x7fc07fc0u : 0u;
  const int64_t row0 = static_cast<int64_t>(it.rowtok) * H;
  constexpr int C16 = DC / 8;
  for (int i = first; i < it.nq * H * C16; i += stride) {
    uint4* dst = reinterpret_cast<uint4*>(p.out + (row0 + i / C16) * DC) + i % C16;
    *dst = make_uint4(fill, fill, fill, fill);
  }
  for (int r = first; r < it.nq * H; r += stride) p.lse[row0 + r] = kNegInf;
}

