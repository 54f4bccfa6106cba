// rmsnorm.cu — KernelArc family rmsnorm_cuda: bf16 RMSNorm and fused add + RMSNorm for the native
// ABI. KernelArc prepends the defines (see family.json):
//   from the problem  KA_HIDDEN (hidden size), KA_FUSED_ADD (1: the definition has a `residual`
//                     input), KA_EPS (the reference's epsilon)
//   knobs             KA_VEC      bf16 elements per load (2, 4, 8: 4-, 8- or 16-byte loads)
//                     KA_THREADS  threads per row: a power of two (<= 32: sub-warp shuffles) or a
//                                 multiple of 32 (warp partials meet in shared memory)
//                     KA_ROWS     rows per block (block = THREADS * ROWS threads)
//                     KA_CACHE    1: a thread keeps its slice of the row in registers between the
//                                 two passes (loops unrolled fully); 0: the second pass re-reads it
//                                 (L1/L2 hits), at most 4 loads in flight: fewer registers
//                     KA_STREAM   1: hidden/residual loaded and output stored with the streaming
//                                 (evict-first) cache policy (ld/st.global.cs), so that they do
//                                 not push other lines out of L2; 0: default policy
//
// Numerics follow the FlashInfer-Bench references in the order of rounding:
//     x       = float(hidden_states) [+ float(residual)]      (fp32, never rounded to bf16)
//     inv_rms = rsqrt(sum(x*x) * (1/H) + eps)                   (fp32)
//     y       = bf16_rn((x * inv_rms) * float(weight))
// The inputs are only read (fused add does NOT write the sum back into residual); the only
// output is `output`. Any row count works (a block-uniform grid-stride loop over row groups); a
// hidden size other than KA_HIDDEN or pointers not aligned to a VEC-element load take a generic
// scalar kernel.
#include <kernelarc/abi.h>
#include <kernelarc/device/convert.cuh>
#include <kernelarc/device/reduce.cuh>

#include <cstdint>

KA_REQUIRE_DEFINES("rmsnorm_cuda", KA_HIDDEN, KA_FUSED_ADD, KA_EPS, KA_VEC, KA_THREADS, KA_ROWS, KA_CACHE);
#ifndef KA_STREAM
#define KA_STREAM 0  // a knob added later: its default is the behaviour before it
#endif

namespace ka_rmsnorm_cuda {

constexpr int kH = KA_HIDDEN;
constexpr int kVec = KA_VEC;
constexpr int kG = KA_THREADS;
constexpr int kRows = KA_ROWS;
constexpr bool kAdd = KA_FUSED_ADD != 0;
constexpr bool kCache = KA_CACHE != 0;
constexpr bool kStream = KA_STREAM != 0;
constexpr int kBlock = kG * kRows;
constexpr int kVecsPerRow = kH / kVec;
constexpr int kIters = (kVecsPerRow + kG - 1) / kG;  // loads per thread per row
constexpr bool kExact = kVecsPerRow % kG == 0;        // no thread idles in the last iteration
constexpr int kWords = kVec / 2;                      // 32-bit words per load
// Cached rows unroll fully (the slice lives in registers); re-read rows keep at most 4 loads in
// flight per thread, so that registers stay few.
constexpr int kUnroll = kCache ? kIters : (kIters < 4 ? kIters : 4);

static_assert(kVec == 2 || kVec == 4 || kVec == 8, "VEC must be 2, 4 or 8");
static_assert(kH % kVec == 0, "HIDDEN must be a multiple of VEC");
static_assert(kG <= 32 ? (kG & (kG - 1)) == 0 : kG % 32 == 0, "THREADS: a power of two <= 32, or a multiple of 32");
static_assert(kBlock % 32 == 0 && kBlock <= 1024, "THREADS * ROWS must be a multiple of 32, at most 1024");

using namespace ka_dev;
using Vec = ka_dev::Vec<kWords>;

__device__ __forceinline__ void unpack(const Vec& v, float (&f)[kVec]) {
  uint32_t w[kWords];
  to_words(v, w);
#pragma unroll
  for (int i = 0; i < kWords; ++i) {
    f[2 * i] = bf_lo(w[i]);
    f[2 * i + 1] = bf_hi(w[i]);
  }
}

__device__ __forceinline__ Vec pack(const float (&f)[kVec]) {
  uint32_t w[kWords];
#pragma unroll
  for (int i = 0; i < kWords; ++i) w[i] = pack_bf16(f[2 * i], f[2 * i + 1]);  // low half = first element
  Vec v;
  from_words(w, v);
  return v;
}

// x = hidden (+ residual) for one load, in fp32; zeros for a row past the end.
__device__ __forceinline__ void load_x(const Vec* __restrict__ hs, const Vec* __restrict__ res, int64_t at, bool live,
                                       float (&x)[kVec]) {
  Vec a = live ? load_vec<kStream>(hs + at) : zero_vec<kWords>();
  unpack(a, x);
  if constexpr (kAdd) {
    Vec b = live ? load_vec<kStream>(res + at) : zero_vec<kWords>();
    float r[kVec];
    unpack(b, r);
#pragma unroll
    for (int k = 0; k < kVec; ++k) x[k] = __fadd_rn(x[k], r[k]);
  }
}

__global__ void __launch_bounds__(kBlock)
rmsnorm_kernel(const Vec* __restrict__ hs, const Vec* __restrict__ res, const Vec* __restrict__ w,
               Vec* __restrict__ out, int64_t rows, float eps) {
  const int lane = static_cast<int>(threadIdx.x) % kG;  // position within the row's group
  const int sub = static_cast<int>(threadIdx.x) / kG;   // row within the block
  // The loop bounds depend on blockIdx only, so every thread of a block runs the same iterations
  // (the shuffles and barriers below need the whole block).
  for (int64_t row0 = static_cast<int64_t>(blockIdx.x) * kRows; row0 < rows;
       row0 += static_cast<int64_t>(gridDim.x) * kRows) {
    const int64_t row = row0 + sub;
    const bool live = row < rows;
    const int64_t base = row * kVecsPerRow;

    float xs[kCache ? kIters : 1][kVec];
    float ss = 0.f;
#pragma unroll kUnroll
    for (int it = 0; it < kIters; ++it) {
      const int c = it * kG + lane;  // consecutive threads read consecutive vectors
      if (kExact || c < kVecsPerRow) {
        float x[kVec];
        load_x(hs, res, base + c, live, x);
#pragma unroll
        for (int k = 0; k < kVec; ++k) {
          ss = __fmaf_rn(x[k], x[k], ss);
          if constexpr (kCache) xs[it][k] = x[k];
        }
      }
    }

    // Sum of squares over the row's kG threads.
    if constexpr (kG <= 32) {
      ss = warp_sum<kG>(ss);
    } else {
      ss = warp_sum<32>(ss);
      __shared__ float partial[kRows][kG > 32 ? kG / 32 : 1];
      if ((lane & 31) == 0) partial[sub][lane >> 5] = ss;
      __syncthreads();
      ss = 0.f;
#pragma unroll
      for (int i = 0; i < kG / 32; ++i) ss += partial[sub][i];
    }
    const float inv = rsqrtf(__fadd_rn(__fmul_rn(ss, 1.0f / static_cast<float>(kH)), eps));

    if (live) {
#pragma unroll kUnroll
      for (int it = 0; it < kIters; ++it) {
        const int c = it * kG + lane;
        if (kExact || c < kVecsPerRow) {
          float x[kVec];
          if constexpr (kCache) {
#pragma unroll
            for (int k = 0; k < kVec; ++k) x[k] = xs[it][k];
          } else {
            load_x(hs, res, base + c, true, x);
          }
          float wf[kVec];
          unpack(__ldg(w + c), wf);
          float y[kVec];
#pragma unroll
          for (int k = 0; k < kVec; ++k) y[k] = __fmul_rn(__fmul_rn(x[k], inv), wf[k]);
          store_vec<kStream>(out + base + c, pack(y));
        }
      }
    }
    if constexpr (kG > 32) __syncthreads();  // the partials are rewritten by the next row group
  }
}

// Generic fallback: any hidden size, any 2-byte alignment. One 256-thread block per row
// (grid-stride over rows).
__global__ void __launch_bounds__(256)
rmsnorm_generic_kernel(const uint16_t* __restrict__ hs, const uint16_t* __restrict__ res,
                       const uint16_t* __restrict__ w, uint16_t* __restrict__ out, int64_t rows, int64_t h,
                       float eps) {
  __shared__ float partial[8];
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const int64_t base = row * h;
    auto load = [&](int64_t i) {
      float v = __uint_as_float(static_cast<uint32_t>(hs[base + i]) << 16);
      if constexpr (kAdd) v = __fadd_rn(v, __uint_as_float(static_cast<uint32_t>(res[base + i]) << 16));
      return v;
    };
    float ss = 0.f;
    for (int64_t i = threadIdx.x; i < h; i += blockDim.x) {
      float v = load(i);
      ss = __fmaf_rn(v, v, ss);
    }
    ss = warp_sum<32>(ss);
    if ((threadIdx.x & 31) == 0) partial[threadIdx.x >> 5] = ss;
    __syncthreads();
    ss = 0.f;
    for (int i = 0; i < static_cast<int>(blockDim.x >> 5); ++i) ss += partial[i];
    __syncthreads();
    const float inv = rsqrtf(__fadd_rn(__fmul_rn(ss, 1.0f / static_cast<float>(h)), eps));
    for (int64_t i = threadIdx.x; i < h; i += blockDim.x) {
      float wf = __uint_as_float(static_cast<uint32_t>(w[i]) << 16);
      float y = __fmul_rn(__fmul_rn(load(i), inv), wf);
      out[base + i] = __bfloat16_as_ushort(__float2bfloat16_rn(y));
    }
  }
}

inline bool aligned(const void* p) { return (reinterpret_cast<uintptr_t>(p) % (2 * kVec)) == 0; }

void launch(const ka::TensorArg& hidden_states, const ka::TensorArg* residual, const ka::TensorArg& weight,
            const ka::TensorArg& output) {
  if (hidden_states.ndim < 1) return;
  const int64_t h = hidden_states.size(-1);
  if (h <= 0) return;
  const int64_t rows = hidden_states.numel() / h;
  if (rows <= 0) return;
  const float eps = static_cast<float>(KA_EPS);
  const void* res = kAdd ? residual->data : nullptr;
  const bool fast = h == kH && aligned(hidden_states.data) && aligned(weight.data) && aligned(output.data) &&
                    (!kAdd || aligned(res));
  constexpr int64_t kMaxGrid = int64_t(1) << 30;  // the grid-stride loops cover any more rows
  if (fast) {
    const int64_t groups = (rows + kRows - 1) / kRows;
    const unsigned grid = static_cast<unsigned>(groups < kMaxGrid ? groups : kMaxGrid);
    rmsnorm_kernel<<<grid, kBlock>>>(static_cast<const Vec*>(hidden_states.data), static_cast<const Vec*>(res),
                                     static_cast<const Vec*>(weight.data), static_cast<Vec*>(output.data), rows, eps);
  } else {
    const unsigned grid = static_cast<unsigned>(rows < kMaxGrid ? rows : kMaxGrid);
    rmsnorm_generic_kernel<<<grid, 256>>>(static_cast<const uint16_t*>(hidden_states.data),
                                          static_cast<const uint16_t*>(res), static_cast<const uint16_t*>(weight.data),
                                          static_cast<uint16_t*>(output.data), rows, h, eps);
  }
}

}  // namespace ka_rmsnorm_cuda

#if KA_FUSED_ADD
void run(const ka::TensorArg& hidden_states, const ka::TensorArg& residual, const ka::TensorArg& weight,
         const ka::TensorArg& output) {
  ka_rmsnorm_cuda::launch(hidden_states, &residual, weight, output);
}
#else
void run(const ka::TensorArg& hidden_states, const ka::TensorArg& weight, const ka::TensorArg& output) {
  ka_rmsnorm_cuda::launch(hidden_states, nullptr, weight, output);
}
#endif
