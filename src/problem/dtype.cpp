// problem/dtype.cpp — dtype table and exact narrow-float decoding.
#include "problem/dtype.h"

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>

namespace ka {
namespace {

struct Info {
  DType t;
  std::string_view name;
  std::string_view st;
  int bits;
};

constexpr Info kInfo[] = {
    {DType::f64, "float64", "F64", 64},
    {DType::f32, "float32", "F32", 32},
    {DType::f16, "float16", "F16", 16},
    {DType::bf16, "bfloat16", "BF16", 16},
    {DType::f8_e4m3fn, "float8_e4m3fn", "F8_E4M3", 8},
    {DType::f8_e5m2, "float8_e5m2", "F8_E5M2", 8},
    {DType::f4_e2m1, "float4_e2m1", "F4", 4},
    {DType::f4_e2m1fn_x2, "float4_e2m1fn_x2", "F4_E2M1FN_X2", 8},
    {DType::i64, "int64", "I64", 64},
    {DType::i32, "int32", "I32", 32},
    {DType::i16, "int16", "I16", 16},
    {DType::i8, "int8", "I8", 8},
    {DType::u8, "uint8", "U8", 8},
    {DType::boolean, "bool", "BOOL", 8},
};

const Info& info(DType t) { return kInfo[static_cast<int>(t)]; }

template <typename T>
T load(const void* data, int64_t i) {
  T v;
  std::memcpy(&v, static_cast<const char*>(data) + i * static_cast<int64_t>(sizeof(T)), sizeof(T));
  return v;
}

}  // namespace

std::string_view dtype_name(DType t) { return info(t).name; }
std::string_view dtype_safetensors_code(DType t) { return info(t).st; }
int dtype_bits(DType t) { return info(t).bits; }

std::optional<DType> parse_dtype(std::string_view name) {
  for (const auto& i : kInfo)
    if (i.name == name) return i.t;
  return std::nullopt;
}

std::optional<DType> parse_safetensors_code(std::string_view code) {
  for (const auto& i : kInfo)
    if (i.st == code) return i.t;
  if (code == "F4_E2M1") return DType::f4_e2m1;
  if (code == "F8_E4M3FN") return DType::f8_e4m3fn;
  return std::nullopt;
}

size_t dtype_storage_bytes(DType t, int64_t count) {
  return static_cast<size_t>((count * dtype_bits(t) + 7) / 8);
}

bool dtype_is_float(DType t) { return t <= DType::f4_e2m1fn_x2; }
bool dtype_is_integer(DType t) { return !dtype_is_float(t); }

int64_t dtype_values_per_element(DType t) { return t == DType::f4_e2m1fn_x2 ? 2 : 1; }

double half_to_double(uint16_t h) {
  int sign = h >> 15, exp = (h >> 10) & 0x1f, man = h & 0x3ff;
  double v;
  if (exp == 0) v = std::ldexp(man, -24);
  else if (exp == 31) v = man ? std::numeric_limits<double>::quiet_NaN() : std::numeric_limits<double>::infinity();
  else v = std::ldexp(man + 1024, exp - 25);
  return sign ? -v : v;
}

double bf16_to_double(uint16_t h) {
  uint32_t u = static_cast<uint32_t>(h) << 16;
  return static_cast<double>(std::bit_cast<float>(u));
}

double fp8_e4m3fn_to_double(uint8_t v) {
  int sign = v >> 7, exp = (v >> 3) & 0xf, man = v & 7;
  double r;
  if (exp == 15 && man == 7) return std::numeric_limits<double>::quiet_NaN();
  if (exp == 0) r = std::ldexp(man, -9);
  else r = std::ldexp(man + 8, exp - 10);
  return sign ? -r : r;
}

double fp8_e5m2_to_double(uint8_t v) { return half_to_double(static_cast<uint16_t>(v) << 8); }

double fp4_e2m1_to_double(uint8_t nibble) {
  static constexpr double k[8] = {0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0};
  double r = k[nibble & 7];
  return (nibble & 8) ? -r : r;
}

uint16_t double_to_bf16(double d) {
  uint32_t u = std::bit_cast<uint32_t>(static_cast<float>(d));
  if ((u & 0x7fffffff) > 0x7f800000) return static_cast<uint16_t>((u >> 16) | 0x40);
  u += 0x7fff + ((u >> 16) & 1);
  return static_cast<uint16_t>(u >> 16);
}

uint16_t double_to_half(double d) {
  float f = static_cast<float>(d);
  uint32_t x = std::bit_cast<uint32_t>(f);
  uint32_t sign = (x >> 16) & 0x8000;
  uint32_t ax = x & 0x7fffffff;
  if (ax > 0x7f800000) return static_cast<uint16_t>(sign | 0x7e00);
  if (ax >= 0x477ff000) return static_cast<uint16_t>(sign | 0x7c00);  // rounds to >= 65520: inf
  if (ax < 0x38800000) {  // subnormal half or zero
    float a = std::bit_cast<float>(ax);
    uint32_t m = static_cast<uint32_t>(std::nearbyint(a * 16777216.0f));  // units of 2^-24, RNE
    return static_cast<uint16_t>(sign | m);
  }
  uint32_t mant = ax & 0x7fffff;
  uint32_t exp = (ax >> 23) - 112;
  uint32_t h = (exp << 10) | (mant >> 13);
  uint32_t rest = mant & 0x1fff;
  if (rest > 0x1000 || (rest == 0x1000 && (h & 1))) ++h;
  return static_cast<uint16_t>(sign | h);
}

double load_value(DType t, const void* data, int64_t i) {
  switch (t) {
    case DType::f64: return load<double>(data, i);
    case DType::f32: return load<float>(data, i);
    case DType::f16: return half_to_double(load<uint16_t>(data, i));
    case DType::bf16: return bf16_to_double(load<uint16_t>(data, i));
    case DType::f8_e4m3fn: return fp8_e4m3fn_to_double(load<uint8_t>(data, i));
    case DType::f8_e5m2: return fp8_e5m2_to_double(load<uint8_t>(data, i));
    case DType::f4_e2m1:
    case DType::f4_e2m1fn_x2: {
      uint8_t b = load<uint8_t>(data, i / 2);
      return fp4_e2m1_to_double((i & 1) ? (b >> 4) : (b & 15));
    }
    case DType::i64: return static_cast<double>(load<int64_t>(data, i));
    case DType::i32: return load<int32_t>(data, i);
    case DType::i16: return load<int16_t>(data, i);
    case DType::i8: return load<int8_t>(data, i);
    case DType::u8: return load<uint8_t>(data, i);
    case DType::boolean: return load<uint8_t>(data, i) ? 1.0 : 0.0;
  }
  return 0;
}

}  // namespace ka
