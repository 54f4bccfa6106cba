// work_items.cuh — the work of a launch: the map from a tile number to (sequence, tile) by a warp
// scan (the costs, order and cursor are kernelarc/device/ragged.cuh's).
// A part of gqa_prefill.cu (family.json "sources"), expanded where the entry includes it: no include guard.

// Maps tile number t to (sequence, local tile) by a warp scan over per-sequence tile counts in the
// order ord (identity when ord is null). Sequence -1 is the leading rows before qo_indptr[0].
// Warp-uniform; every lane gets the result. Returns false when t is past the last tile.
__device__ __forceinline__ bool map_tile(const Params& p, const int* ord, int t, int lane, int& b_out, int& tile_out) {
  const int lead = __ldg(p.qo_indptr);
  const int lead_tiles = lead > 0 ? ceil_div_i(lead, QT) : 0;
  if (t < lead_tiles) {
    b_out = -1;
    tile_out = t;
    return true;
  }
  int rem = t - lead_tiles;
  for (int base = 0; base < p.B; base += 32) {
    const int i = base + lane;
    int b = i;
    int n = 0;
    if (i < p.B) {
      if (ord) b = ord[i];
      const int ql = __ldg(p.qo_indptr + b + 1) - __ldg(p.qo_indptr + b);
      n = ql > 0 ? ceil_div_i(ql, QT) : 0;
    }
    int src;
    if (warp_find(n, lane, rem, src, tile_out)) {
      b_out = __shfl_sync(0xffffffffu, b, src);
      return true;
    }
  }
  return false;
}

