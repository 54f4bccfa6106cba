// softmax.cu — KernelArc family softmax_cuda: y = softmax(x, dim=-1) over the last axis of a
// bf16, fp16 or fp32 tensor (the dtype is read at run time), built on the device layer. KernelArc
// prepends the defines (see family.json):
//   from the problem  KA_HIDDEN      the row length (the const axis hidden_size)
//   knobs             KA_VEC_BYTES   bytes per load and store (4, 8, 16)
//                     KA_THREADS     threads per row: a power of two <= 32 (sub-warp shuffles) or
//                                    a multiple of 32 (the row's warps meet in shared memory)
//                     KA_ROWS        rows per block (block = THREADS * ROWS threads)
//                     KA_CACHE       1: a thread keeps its slice of the row in registers between
//                                    the passes; 0: the later passes re-read it (L1/L2 hits)
// Numerics: fp32 throughout, the row maximum subtracted first; exp as exp2((x - max) * log2 e);
// y = e / sum rounded once to the output dtype. A row of -inf gives NaN as torch does; an empty
// tensor does nothing. A row length other than KA_HIDDEN, a pointer not aligned to a load, or a
// dtype other than bf16 / fp16 / fp32 takes the generic kernel (one 256-thread block per row).
#include <kernelarc/abi.h>
#include <kernelarc/device/convert.cuh>
#include <kernelarc/device/reduce.cuh>

#if !defined(KA_HIDDEN) || !defined(KA_VEC_BYTES) || !defined(KA_THREADS) || !defined(KA_ROWS) || !defined(KA_CACHE)
#error "softmax_cuda: KA_HIDDEN, KA_VEC_BYTES, KA_THREADS, KA_ROWS and KA_CACHE must be defined (KernelArc does this)"
#endif

namespace ka_softmax_cuda {
namespace {

using namespace ka_dev;

constexpr int kH = KA_HIDDEN;
constexpr int kG = KA_THREADS;
constexpr int kRows = KA_ROWS;
constexpr int kBlock = kG * kRows;
constexpr int kWords = KA_VEC_BYTES / 4;     // 32-bit words per load
constexpr int kRowWarps = kG > 32 ? kG / 32 : 1;
constexpr float kLog2e = 1.4426950408889634f;
using V = Vec<kWords>;

static_assert(kWords == 1 || kWords == 2 || kWords == 4, "VEC_BYTES must be 4, 8 or 16");
static_assert(kG <= 32 ? (kG & (kG - 1)) == 0 : kG % 32 == 0, "THREADS: a power of two <= 32, or a multiple of 32");
static_assert(kBlock % 32 == 0 && kBlock <= 1024, "THREADS * ROWS must be a multiple of 32, at most 1024");

// The element formats: floats per 32-bit word, and the conversions of one word.
template <typename T>
struct Fmt {  // bf16 (Bf16) or fp16 (F16): two per word, low half first
  static constexpr int kPerWord = 2;
  static KA_DEV void unpack(uint32_t w, float* f) {
    f[0] = to_float<T>(static_cast<uint16_t>(w & 0xffffu));
    f[1] = to_float<T>(static_cast<uint16_t>(w >> 16));
  }
  static KA_DEV uint32_t pack(const float* f) { return from_float<T>(f[0]) | (uint32_t(from_float<T>(f[1])) << 16); }
};
template <>
struct Fmt<float> {
  static constexpr int kPerWord = 1;
  static KA_DEV void unpack(uint32_t w, float* f) { f[0] = __uint_as_float(w); }
  static KA_DEV uint32_t pack(const float* f) { return __float_as_uint(f[0]); }
};

// The max / sum over the kG threads of one row (sub: the row's index in the block; red: kRows *
// kRowWarps floats of shared memory). Every thread of the block calls them.
KA_DEV float row_max(float v, float* red, int sub) {
  if constexpr (kG <= 32) return warp_max<kG>(v);
  else return block_max<kRowWarps>(v, red + sub * kRowWarps);
}
KA_DEV float row_sum(float v, float* red, int sub) {
  if constexpr (kG <= 32) return warp_sum<kG>(v);
  else return block_sum<kRowWarps>(v, red + sub * kRowWarps);
}

template <typename T>
__global__ void __launch_bounds__(kBlock) softmax_kernel(const V* __restrict__ x, V* __restrict__ y, int64_t rows) {
  constexpr int E = kWords * Fmt<T>::kPerWord;  // elements per load
  constexpr int kVecs = kH / E;
  constexpr int kIters = (kVecs + kG - 1) / kG;
  static_assert(kH % E == 0, "HIDDEN must be a multiple of the elements per load");
  KA_DYN_SMEM(smem);
  float* red = reinterpret_cast<float*>(smem);
  const int lane = static_cast<int>(threadIdx.x) % kG, sub = static_cast<int>(threadIdx.x) / kG;
  float cache[KA_CACHE ? kIters * E : 1];
  // A block-uniform loop over groups of kRows rows: every thread reaches every barrier.
  for (int64_t g = blockIdx.x; g * kRows < rows; g += gridDim.x) {
    const int64_t row = g * kRows + sub;
    const bool live = row < rows;
    const V* xr = x + row * kVecs;
    auto load = [&](int it, float (&f)[E]) {  // element i of load `it`; -inf past the row
      const int i = lane + it * kG;
      if (!live || i >= kVecs) {
#pragma unroll
        for (int e = 0; e < E; ++e) f[e] = -__builtin_huge_valf();
        return;
      }
      uint32_t w[kWords];
      to_words(load_vec<false>(xr + i), w);
#pragma unroll
      for (int k = 0; k < kWords; ++k) Fmt<T>::unpack(w[k], f + k * Fmt<T>::kPerWord);
    };
    float m = -__builtin_huge_valf();
#pragma unroll
    for (int it = 0; it < kIters; ++it) {
      float f[E];
      load(it, f);
#pragma unroll
      for (int e = 0; e < E; ++e) {
        m = fmaxf(m, f[e]);
        if constexpr (KA_CACHE) cache[it * E + e] = f[e];
      }
    }
    m = row_max(m, red, sub);
    const float mb = m * kLog2e;
    float s = 0.f;
#pragma unroll
    for (int it = 0; it < kIters; ++it) {
      float f[E];
      if constexpr (KA_CACHE) {
#pragma unroll
        for (int e = 0; e < E; ++e) f[e] = cache[it * E + e];
      } else {
        load(it, f);
      }
#pragma unroll
      for (int e = 0; e < E; ++e) {
        const float p = exp2f(fmaf(f[e], kLog2e, -mb));  // 0 past the row (exp2(-inf))
        s += p;
        if constexpr (KA_CACHE) cache[it * E + e] = p;
      }
    }
    const float inv = 1.f / row_sum(s, red, sub);
#pragma unroll
    for (int it = 0; it < kIters; ++it) {
      const int i = lane + it * kG;
      if (!live || i >= kVecs) continue;
      float f[E];
      if constexpr (KA_CACHE) {
#pragma unroll
        for (int e = 0; e < E; ++e) f[e] = cache[it * E + e] * inv;
      } else {
        load(it, f);
#pragma unroll
        for (int e = 0; e < E; ++e) f[e] = exp2f(fmaf(f[e], kLog2e, -mb)) * inv;
      }
      uint32_t w[kWords];
#pragma unroll
      for (int k = 0; k < kWords; ++k) w[k] = Fmt<T>::pack(f + k * Fmt<T>::kPerWord);
      V out;
      from_words(w, out);
      store_vec<false>(y + row * kVecs + i, out);
    }
  }
}

// Any row length and alignment: one 256-thread block per row (grid-stride over rows), one element
// per access.
template <typename T, typename S>
__global__ void __launch_bounds__(256) softmax_generic_kernel(const S* __restrict__ x, S* __restrict__ y, int64_t rows,
                                                                int64_t h) {
  KA_DYN_SMEM(smem);
  float* red = reinterpret_cast<float*>(smem);
  auto get = [&](int64_t i) {
    float f[Fmt<T>::kPerWord];
    Fmt<T>::unpack(static_cast<uint32_t>(x[i]), f);
    return f[0];
  };
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const int64_t base = row * h;
    float m = -__builtin_huge_valf();
    for (int64_t i = threadIdx.x; i < h; i += 256) m = fmaxf(m, get(base + i));
    const float mb = block_max<8>(m, red) * kLog2e;
    float s = 0.f;
    for (int64_t i = threadIdx.x; i < h; i += 256) s += exp2f(fmaf(get(base + i), kLog2e, -mb));
    const float inv = 1.f / block_sum<8>(s, red);
    for (int64_t i = threadIdx.x; i < h; i += 256) {
      const float f[2] = {exp2f(fmaf(get(base + i), kLog2e, -mb)) * inv, 0.f};
      y[base + i] = static_cast<S>(Fmt<T>::pack(f));
    }
  }
}

template <typename T, typename S>
void launch_typed(const ka::TensorArg& x, const ka::TensorArg& y, int64_t rows, int64_t h) {
  constexpr int64_t kMaxGrid = int64_t(1) << 30;  // the grid-stride loops cover any more rows
  const bool aligned = reinterpret_cast<uintptr_t>(x.data) % KA_VEC_BYTES == 0 &&
                       reinterpret_cast<uintptr_t>(y.data) % KA_VEC_BYTES == 0;
  if (h == kH && aligned) {
    const int64_t groups = (rows + kRows - 1) / kRows;
    const unsigned grid = static_cast<unsigned>(groups < kMaxGrid ? groups : kMaxGrid);
    auto* fast = &softmax_kernel<T>;
    KA_LAUNCH(fast, dim3(grid), dim3(kBlock), kRows * kRowWarps * 4 + 16, static_cast<const V*>(x.data),
              static_cast<V*>(y.data), rows);
  } else {
    const unsigned grid = static_cast<unsigned>(rows < kMaxGrid ? rows : kMaxGrid);
    auto* generic = &softmax_generic_kernel<T, S>;
    KA_LAUNCH(generic, dim3(grid), dim3(256), 64, static_cast<const S*>(x.data), static_cast<S*>(y.data), rows, h);
  }
}

}  // namespace
}  // namespace ka_softmax_cuda

void run(const ka::TensorArg& x, const ka::TensorArg& y) {
  using namespace ka_softmax_cuda;
  if (x.ndim < 1) return;
  const int64_t h = x.size(-1);
  if (h <= 0 || x.numel() == 0) return;
  const int64_t rows = x.numel() / h;
  switch (x.dtype) {
    case ka::kBFloat16: launch_typed<ka_dev::Bf16, uint16_t>(x, y, rows, h); break;
    case ka::kFloat16: launch_typed<ka_dev::F16, uint16_t>(x, y, rows, h); break;
    case ka::kFloat32: launch_typed<float, uint32_t>(x, y, rows, h); break;
    default: break;
  }
}
