// kernelarc/device/reduce.cuh — reductions across the lanes of a warp (butterfly shuffles: every
// lane gets the result) and across the warps of a block (through a small shared array).
//   warp_sum<W>(v), warp_max<W>(v)     over groups of W lanes (W a power of two <= 32; the group of
//                                      lane l is l / W); W = 32: the whole warp
//   block_sum<NW>(v, red), block_max<NW>(v, red)
//                                      over NW warps of one row group: `red` is float[NW] in shared
//                                      memory owned by the caller, every thread of the NW warps
//                                      calls it and gets the result; the caller's warps must be
//                                      the NW consecutive warps starting at a multiple of NW
//   warp_reduce<W>(v, op), block_reduce<NW>(v, red, op)
//                                      the same for an operator (SumOp, MaxOp)
// Sums are in the order of the butterfly (deterministic for a given W).
#pragma once
#include <kernelarc/device/target.cuh>

namespace ka_dev {

// The reduction operators (sum in the butterfly's order; max).
struct SumOp {
  KA_DEV float operator()(float a, float b) const { return a + b; }
};
struct MaxOp {
  KA_DEV float operator()(float a, float b) const { return fmaxf(a, b); }
};

template <int W, typename Op>
KA_DEV float warp_reduce(float v, Op op) {
#pragma unroll
  for (int o = W / 2; o > 0; o >>= 1) v = op(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}
template <int W = 32>
KA_DEV float warp_sum(float v) {
  return warp_reduce<W>(v, SumOp{});
}
template <int W = 32>
KA_DEV float warp_max(float v) {
  return warp_reduce<W>(v, MaxOp{});
}
// The warps of a row group meet in red[0..NW): one barrier to publish, one to protect red from the
// next call (callers that reuse red right away need both).
template <int NW, typename Op>
KA_DEV float block_reduce(float v, float* red, Op op) {
  v = warp_reduce<32>(v, op);
  if constexpr (NW == 1) {
    return v;
  } else {
    const int lane = threadIdx.x & 31, w = (threadIdx.x >> 5) % NW;
    if (lane == 0) red[w] = v;
    __syncthreads();
    float r = red[0];
#pragma unroll
    for (int i = 1; i < NW; ++i) r = op(r, red[i]);
    __syncthreads();
    return r;
  }
}
template <int NW>
KA_DEV float block_sum(float v, float* red) {
  return block_reduce<NW>(v, red, SumOp{});
}
template <int NW>
KA_DEV float block_max(float v, float* red) {
  return block_reduce<NW>(v, red, MaxOp{});
}

}  // namespace ka_dev
