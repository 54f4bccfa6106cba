// kernelarc/device/reduce.cuh — reductions across the lanes of a warp (butterfly shuffles: every
// lane gets the result) and across the warps of a block (through a small shared array).
//   warp_sum<W>(v), warp_max<W>(v)     over groups of W lanes (W a power of two <= 32; the group of
//                                      lane l is l / W); W = 32: the whole warp
//   block_sum<NW>(v, red), block_max<NW>(v, red)
//                                      over NW warps of one row group: `red` is float[NW] in shared
//                                      memory owned by the caller, every thread of the NW warps
//                                      calls it and gets the result; the caller's warps must be
//                                      the NW consecutive warps starting at a multiple of NW
// Sums are in the order of the butterfly (deterministic for a given W).
#pragma once
#include <kernelarc/device/target.cuh>

namespace ka_dev {

template <int W = 32>
KA_DEV float warp_sum(float v) {
#pragma unroll
  for (int o = W / 2; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
template <int W = 32>
KA_DEV float warp_max(float v) {
#pragma unroll
  for (int o = W / 2; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}
// The warps of a row group meet in red[0..NW): one barrier to publish, one to protect red from the
// next call (callers that reuse red right away need both).
template <int NW>
KA_DEV float block_sum(float v, float* red) {
  v = warp_sum<32>(v);
  if constexpr (NW == 1) {
    return v;
  } else {
    const int lane = threadIdx.x & 31, w = (threadIdx.x >> 5) % NW;
    if (lane == 0) red[w] = v;
    __syncthreads();
    float s = 0.f;
#pragma unroll
    for (int i = 0; i < NW; ++i) s += red[i];
    __syncthreads();
    return s;
  }
}
template <int NW>
KA_DEV float block_max(float v, float* red) {
  v = warp_max<32>(v);
  if constexpr (NW == 1) {
    return v;
  } else {
    const int lane = threadIdx.x & 31, w = (threadIdx.x >> 5) % NW;
    if (lane == 0) red[w] = v;
    __syncthreads();
    float m = red[0];
#pragma unroll
    for (int i = 1; i < NW; ++i) m = fmaxf(m, red[i]);
    __syncthreads();
    return m;
  }
}

}  // namespace ka_dev
