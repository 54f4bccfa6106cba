// kernelarc/device/convert.cuh — dtype conversions and vectorised global loads/stores.
//   bf_lo(w), bf_hi(w)         the bf16 in the low / high half of a 32-bit word, as float
//   pack_bf16(lo, hi)          two floats rounded to bf16 (nearest even) in one word, lo first
//   to_bf16(f), to_f16(f)      one float to bf16 / fp16 bits (nearest even)
//   to_float<T>(bits)          bf16 (T = Bf16) or fp16 (T = F16) bits to float
//   from_float<T>(f)           float to bf16 / fp16 bits
//   fp8e4m3_to_float(b), fp8e5m2_to_float(b)     OCP FP8 bytes to float (exact)
//   float_to_fp8e4m3(f), float_to_fp8e5m2(f)     float to FP8, nearest even, saturated to the
//                                                finite range (e4m3: ±448, e5m2: ±57344); NaN kept
//   fp4e2m1_to_float(nibble), float_to_fp4e2m1(f) OCP FP4 (e2m1: 0, 0.5, 1, 1.5, 2, 3, 4, 6),
//                                                nearest even, saturated to ±6
//   Vec<W>: 1, 2 or 4 32-bit words (uint32_t, uint2, uint4), to_words / from_words, zero_vec<W>()
//   load_vec<STREAM>(p), store_vec<STREAM>(p, v)  one vector; STREAM = true: evict-first (.cs)
//   ld_u32(p)                  a 32-bit read-only load of two 16-bit values
// The FP8 and FP4 conversions are integer code (the same on the GPU and the emulator); the GPU
// self-test (bench/tools/device_selftest.sh) checks them against the CUDA intrinsics.
#pragma once
#include <kernelarc/device/target.cuh>

#include <cmath>
#include <cstring>
#include <type_traits>

namespace ka_dev {

KA_DEV float bf_lo(uint32_t w) { return __uint_as_float(w << 16); }
KA_DEV float bf_hi(uint32_t w) { return __uint_as_float(w & 0xffff0000u); }

#ifdef KA_EMULATE
inline uint32_t pack_bf16(float lo, float hi) {
  return uint32_t(ka_emu_ops::f2bf(lo)) | (uint32_t(ka_emu_ops::f2bf(hi)) << 16);
}
inline uint16_t to_bf16(float f) { return ka_emu_ops::f2bf(f); }
inline uint16_t to_f16(float f) { return ka_emu_ops::f2h(f); }
template <typename T>
inline float to_float(uint16_t u) {
  return std::is_same<T, F16>::value ? ka_emu_ops::hf(u) : ka_emu_ops::bf(u);
}
inline uint32_t ld_u32(const uint16_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}
#else
KA_DEV uint32_t pack_bf16(float lo, float hi) {
  __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);  // .x (low half) = lo
  return *reinterpret_cast<uint32_t*>(&v);
}
KA_DEV uint16_t to_bf16(float f) { return __bfloat16_as_ushort(__float2bfloat16_rn(f)); }
KA_DEV uint16_t to_f16(float f) { return __half_as_ushort(__float2half_rn(f)); }
template <typename T>
KA_DEV float to_float(uint16_t u) {
  if constexpr (std::is_same<T, F16>::value) return __half2float(__ushort_as_half(u));
  else return __bfloat162float(__ushort_as_bfloat16(u));
}
KA_DEV uint32_t ld_u32(const uint16_t* p) { return __ldg(reinterpret_cast<const unsigned int*>(p)); }
#endif
template <typename T>
KA_DEV uint16_t from_float(float f) {
  if constexpr (std::is_same<T, F16>::value) return to_f16(f);
  else return to_bf16(f);
}

// ── FP8 / FP4 (integer code) ──
// A value with `mbits` mantissa bits and exponent bias `bias`: sign s, exponent field e, mantissa m.
KA_DEV float minifloat_value(uint32_t s, int e, uint32_t m, int mbits, int bias) {
  // subnormal when e == 0: m * 2^(1 - bias - mbits); else (1 + m / 2^mbits) * 2^(e - bias)
  const float mag = e == 0 ? ldexpf(static_cast<float>(m), 1 - bias - mbits)
                           : ldexpf(static_cast<float>((1u << mbits) | m), e - bias - mbits);
  return s ? -mag : mag;
}
KA_DEV float fp8e4m3_to_float(uint8_t b) {
  const int e = (b >> 3) & 15;
  const uint32_t m = b & 7;
  if (e == 15 && m == 7) return __uint_as_float(0x7fc00000u);  // e4m3fn: the only NaN, no infinities
  return minifloat_value(b >> 7, e, m, 3, 7);
}
KA_DEV float fp8e5m2_to_float(uint8_t b) {
  const int e = (b >> 2) & 31;
  const uint32_t m = b & 3;
  if (e == 31) return __uint_as_float((b & 0x80 ? 0x80000000u : 0u) | (m ? 0x7fc00000u : 0x7f800000u));
  return minifloat_value(b >> 7, e, m, 2, 15);
}
KA_DEV float fp4e2m1_to_float(uint8_t nibble) { return minifloat_value((nibble >> 3) & 1, (nibble >> 1) & 3, nibble & 1, 1, 1); }
// |f| rounded to nearest even on the grid of a minifloat with `mbits` mantissa bits, exponent bias
// `bias`, and largest finite magnitude `maxv` (saturated); the result's code without sign.
KA_DEV uint32_t minifloat_code(float a, int mbits, int bias, float maxv) {
  if (!(a < maxv)) a = maxv;
  if (a == 0.f) return 0;
  int e;
  frexpf(a, &e);                                            // a = f * 2^e, f in [0.5, 1)
  const int ef = e - 1 + bias < 1 ? 1 : e - 1 + bias;       // exponent field (subnormals: 1, scaled below)
  const float ulp = ldexpf(1.f, ef - bias - mbits);         // spacing of the grid at this exponent
  const float q = rintf(a / ulp);                           // nearest even multiple of the spacing
  // q counts ulps: (2^mbits + m) for normals (may carry to the next binade), m for subnormals
  uint32_t code = static_cast<uint32_t>(q);
  if (e - 1 + bias < 1) return code;                        // subnormal (code <= 2^mbits: may become the first normal)
  return (static_cast<uint32_t>(ef) << mbits) + code - (1u << mbits);
}
KA_DEV uint8_t float_to_fp8e4m3(float f) {
  if (f != f) return 0x7f;
  return static_cast<uint8_t>((f < 0 ? 0x80u : 0u) | minifloat_code(fabsf(f), 3, 7, 448.f));
}
KA_DEV uint8_t float_to_fp8e5m2(float f) {
  if (f != f) return 0x7f;
  return static_cast<uint8_t>((f < 0 ? 0x80u : 0u) | minifloat_code(fabsf(f), 2, 15, 57344.f));
}
KA_DEV uint8_t float_to_fp4e2m1(float f) {
  if (f != f) return 0x7;  // FP4 has no NaN: saturate
  return static_cast<uint8_t>((f < 0 ? 0x8u : 0u) | minifloat_code(fabsf(f), 1, 1, 6.f));
}

// ── vectors of 32-bit words ──
template <int W> struct VecOf;
template <> struct VecOf<1> { using T = uint32_t; };
template <> struct VecOf<2> { using T = uint2; };
template <> struct VecOf<4> { using T = uint4; };
template <int W>
using Vec = typename VecOf<W>::T;

KA_DEV void to_words(const uint32_t& v, uint32_t (&w)[1]) { w[0] = v; }
KA_DEV void to_words(const uint2& v, uint32_t (&w)[2]) { w[0] = v.x; w[1] = v.y; }
KA_DEV void to_words(const uint4& v, uint32_t (&w)[4]) {
  w[0] = v.x; w[1] = v.y; w[2] = v.z; w[3] = v.w;
}
KA_DEV void from_words(const uint32_t (&w)[1], uint32_t& v) { v = w[0]; }
KA_DEV void from_words(const uint32_t (&w)[2], uint2& v) { v = make_uint2(w[0], w[1]); }
KA_DEV void from_words(const uint32_t (&w)[4], uint4& v) { v = make_uint4(w[0], w[1], w[2], w[3]); }
template <int W>
KA_DEV Vec<W> zero_vec() {
  uint32_t w[W];
#pragma unroll
  for (int i = 0; i < W; ++i) w[i] = 0u;
  Vec<W> v;
  from_words(w, v);
  return v;
}
template <bool STREAM, typename V>
KA_DEV V load_vec(const V* p) {
#ifndef KA_EMULATE
  if constexpr (STREAM) return __ldcs(p);
#endif
  return *p;
}
template <bool STREAM, typename V>
KA_DEV void store_vec(V* p, const V& v) {
#ifndef KA_EMULATE
  if constexpr (STREAM) {
    __stcs(p, v);
    return;
  }
#endif
  *p = v;
}

}  // namespace ka_dev
