// test_dtype.cpp — the dtypes of the SOL-ExecBench spec (problem/dtype.h): spec-name and
// safetensors-code round trips, element bits and storage bytes (4-bit types packed two to a byte,
// odd counts rounded up), exact decoding of known bit patterns of every narrow float format
// (fp16 subnormals/inf/NaN, bf16, fp8 e4m3fn with max 448 and NaN 0x7f, fp8 e5m2 inf, all 16 fp4
// codes, low nibble first), integer sign extension, bool, and round-to-nearest-even encoding to
// fp16/bf16 with overflow to infinity.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <set>
#include <vector>

#include "problem/dtype.h"

namespace ka {
namespace {

struct SpecDType {
  const char* name;
  DType t;
  const char* st_code;
  int bits;
  bool is_float;
};

// The dtype list of docs/sol-execbench-rules.md §1.2, with the safetensors codes PyTorch's
// safetensors writer uses.
const SpecDType kSpec[] = {
    {"float64", DType::f64, "F64", 64, true},
    {"float32", DType::f32, "F32", 32, true},
    {"float16", DType::f16, "F16", 16, true},
    {"bfloat16", DType::bf16, "BF16", 16, true},
    {"float8_e4m3fn", DType::f8_e4m3fn, "F8_E4M3", 8, true},
    {"float8_e5m2", DType::f8_e5m2, "F8_E5M2", 8, true},
    {"float4_e2m1", DType::f4_e2m1, "F4", 4, true},
    {"float4_e2m1fn_x2", DType::f4_e2m1fn_x2, "F4_E2M1FN_X2", 8, true},
    {"int64", DType::i64, "I64", 64, false},
    {"int32", DType::i32, "I32", 32, false},
    {"int16", DType::i16, "I16", 16, false},
    {"int8", DType::i8, "I8", 8, false},
    {"bool", DType::boolean, "BOOL", 8, false},
};

bool is_neg_zero(double d) { return d == 0 && std::signbit(d); }

TEST(DType, SpecNamesParseAndRoundTrip) {
  for (const auto& s : kSpec) {
    SCOPED_TRACE(s.name);
    auto t = parse_dtype(s.name);
    ASSERT_TRUE(t.has_value());
    EXPECT_EQ(*t, s.t);
    EXPECT_EQ(dtype_name(s.t), s.name);
  }
  for (DType t : kAllDTypes) EXPECT_EQ(parse_dtype(dtype_name(t)), t);
}

TEST(DType, NamesAreExact) {
  for (const char* bad : {"", "float", "Float32", "fp32", "float32 ", "bf16", "half", "float8_e4m3", "int", "boolean",
                          "torch.float32", "float4_e2m1fn"})
    EXPECT_FALSE(parse_dtype(bad).has_value()) << "'" << bad << "'";
}

TEST(DType, NamesAndCodesAreDistinct) {
  std::set<std::string_view> names, codes;
  for (DType t : kAllDTypes) {
    EXPECT_TRUE(names.insert(dtype_name(t)).second) << dtype_name(t);
    EXPECT_TRUE(codes.insert(dtype_safetensors_code(t)).second) << dtype_safetensors_code(t);
  }
}

TEST(DType, SafetensorsCodesRoundTrip) {
  for (const auto& s : kSpec) {
    SCOPED_TRACE(s.name);
    EXPECT_EQ(dtype_safetensors_code(s.t), s.st_code);
    EXPECT_EQ(parse_safetensors_code(s.st_code), s.t);
  }
  for (DType t : kAllDTypes) EXPECT_EQ(parse_safetensors_code(dtype_safetensors_code(t)), t);
  // Aliases written by other tools.
  EXPECT_EQ(parse_safetensors_code("F8_E4M3FN"), DType::f8_e4m3fn);
  EXPECT_EQ(parse_safetensors_code("F4_E2M1"), DType::f4_e2m1);
  for (const char* bad : {"", "f32", "FP32", "F8", "I4", "float32", "U64"})
    EXPECT_FALSE(parse_safetensors_code(bad).has_value()) << "'" << bad << "'";
}

TEST(DType, BitsFloatnessAndValuesPerElement) {
  for (const auto& s : kSpec) {
    SCOPED_TRACE(s.name);
    EXPECT_EQ(dtype_bits(s.t), s.bits);
    EXPECT_EQ(dtype_is_float(s.t), s.is_float);
    EXPECT_EQ(dtype_is_integer(s.t), !s.is_float);
    EXPECT_EQ(dtype_values_per_element(s.t), s.t == DType::f4_e2m1fn_x2 ? 2 : 1);
  }
}

TEST(DType, StorageBytes) {
  for (const auto& s : kSpec) {
    SCOPED_TRACE(s.name);
    EXPECT_EQ(dtype_storage_bytes(s.t, 0), 0u);
    if (s.bits >= 8) {
      EXPECT_EQ(dtype_storage_bytes(s.t, 1), static_cast<size_t>(s.bits / 8));
      EXPECT_EQ(dtype_storage_bytes(s.t, 7), static_cast<size_t>(7 * s.bits / 8));
    }
  }
  // float4_e2m1: two values per byte, odd counts rounded up.
  EXPECT_EQ(dtype_storage_bytes(DType::f4_e2m1, 1), 1u);
  EXPECT_EQ(dtype_storage_bytes(DType::f4_e2m1, 2), 1u);
  EXPECT_EQ(dtype_storage_bytes(DType::f4_e2m1, 3), 2u);
  EXPECT_EQ(dtype_storage_bytes(DType::f4_e2m1, 4), 2u);
  EXPECT_EQ(dtype_storage_bytes(DType::f4_e2m1, 1001), 501u);
  // float4_e2m1fn_x2: one byte per element (each element is two fp4 values).
  EXPECT_EQ(dtype_storage_bytes(DType::f4_e2m1fn_x2, 3), 3u);
  EXPECT_EQ(dtype_storage_bytes(DType::f16, 3), 6u);
  EXPECT_EQ(dtype_storage_bytes(DType::i64, 1) * 4, dtype_storage_bytes(DType::i64, 4));
}

TEST(DType, HalfDecoding) {
  EXPECT_EQ(half_to_double(0x0000), 0.0);
  EXPECT_TRUE(is_neg_zero(half_to_double(0x8000)));
  EXPECT_EQ(half_to_double(0x3c00), 1.0);
  EXPECT_EQ(half_to_double(0xc000), -2.0);
  EXPECT_EQ(half_to_double(0x3555), 1365.0 / 4096);  // 0.333251953125
  EXPECT_EQ(half_to_double(0x7bff), 65504.0);
  EXPECT_EQ(half_to_double(0xfbff), -65504.0);
  EXPECT_EQ(half_to_double(0x0400), std::ldexp(1.0, -14));             // smallest normal
  EXPECT_EQ(half_to_double(0x0001), std::ldexp(1.0, -24));             // smallest subnormal
  EXPECT_EQ(half_to_double(0x03ff), 1023 * std::ldexp(1.0, -24));      // largest subnormal
  EXPECT_EQ(half_to_double(0x8001), -std::ldexp(1.0, -24));
  EXPECT_EQ(half_to_double(0x7c00), std::numeric_limits<double>::infinity());
  EXPECT_EQ(half_to_double(0xfc00), -std::numeric_limits<double>::infinity());
  EXPECT_TRUE(std::isnan(half_to_double(0x7e00)));
  EXPECT_TRUE(std::isnan(half_to_double(0x7c01)));
  EXPECT_TRUE(std::isnan(half_to_double(0xfe00)));
}

TEST(DType, HalfDecodingMatchesFloatForEveryPattern) {
  // Every fp16 value widened to float: cross-checked against a second, bit-level decoder.
  for (uint32_t h = 0; h < 0x10000; ++h) {
    uint32_t sign = (h & 0x8000) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ff;
    double want;
    if (exp == 0x1f) {
      if (man) {
        EXPECT_TRUE(std::isnan(half_to_double(static_cast<uint16_t>(h))));
        continue;
      }
      want = std::bit_cast<float>(sign | 0x7f800000u);
    } else if (exp == 0) {
      want = (sign ? -1.0 : 1.0) * man * std::ldexp(1.0, -24);
    } else {
      want = std::bit_cast<float>(sign | ((exp + 112) << 23) | (man << 13));
    }
    ASSERT_EQ(half_to_double(static_cast<uint16_t>(h)), want) << std::hex << h;
  }
}

TEST(DType, Bf16Decoding) {
  EXPECT_EQ(bf16_to_double(0x3f80), 1.0);
  EXPECT_EQ(bf16_to_double(0xc040), -3.0);
  EXPECT_EQ(bf16_to_double(0x3f81), 1.0078125);
  EXPECT_EQ(bf16_to_double(0x7f7f), 3.3895313892515355e38);  // largest finite
  EXPECT_EQ(bf16_to_double(0x0080), std::ldexp(1.0, -126));
  EXPECT_EQ(bf16_to_double(0x0001), std::ldexp(1.0, -133));  // smallest subnormal
  EXPECT_TRUE(is_neg_zero(bf16_to_double(0x8000)));
  EXPECT_EQ(bf16_to_double(0x7f80), std::numeric_limits<double>::infinity());
  EXPECT_EQ(bf16_to_double(0xff80), -std::numeric_limits<double>::infinity());
  EXPECT_TRUE(std::isnan(bf16_to_double(0x7fc0)));
  EXPECT_TRUE(std::isnan(bf16_to_double(0x7f81)));
}

TEST(DType, Fp8E4m3fnDecoding) {
  EXPECT_EQ(fp8_e4m3fn_to_double(0x00), 0.0);
  EXPECT_TRUE(is_neg_zero(fp8_e4m3fn_to_double(0x80)));
  EXPECT_EQ(fp8_e4m3fn_to_double(0x38), 1.0);   // exponent 7 = bias
  EXPECT_EQ(fp8_e4m3fn_to_double(0x40), 2.0);
  EXPECT_EQ(fp8_e4m3fn_to_double(0x3c), 1.5);
  EXPECT_EQ(fp8_e4m3fn_to_double(0xc4), -3.0);
  EXPECT_EQ(fp8_e4m3fn_to_double(0x78), 256.0);  // exponent 15 is finite in the fn variant
  EXPECT_EQ(fp8_e4m3fn_to_double(0x7e), 448.0);  // largest finite
  EXPECT_EQ(fp8_e4m3fn_to_double(0xfe), -448.0);
  EXPECT_TRUE(std::isnan(fp8_e4m3fn_to_double(0x7f)));
  EXPECT_TRUE(std::isnan(fp8_e4m3fn_to_double(0xff)));
  EXPECT_EQ(fp8_e4m3fn_to_double(0x08), std::ldexp(1.0, -6));  // smallest normal
  EXPECT_EQ(fp8_e4m3fn_to_double(0x01), std::ldexp(1.0, -9));  // smallest subnormal
  EXPECT_EQ(fp8_e4m3fn_to_double(0x07), 7 * std::ldexp(1.0, -9));
  EXPECT_EQ(fp8_e4m3fn_to_double(0x81), -std::ldexp(1.0, -9));
  // No infinities: every code except the two NaNs is finite, and magnitudes increase with the code.
  double prev = -1;
  for (int v = 0; v < 0x7f; ++v) {
    double d = fp8_e4m3fn_to_double(static_cast<uint8_t>(v));
    ASSERT_TRUE(std::isfinite(d)) << v;
    ASSERT_GT(d, prev) << v;
    EXPECT_EQ(fp8_e4m3fn_to_double(static_cast<uint8_t>(v | 0x80)), -d);
    prev = d;
  }
}

TEST(DType, Fp8E5m2Decoding) {
  EXPECT_EQ(fp8_e5m2_to_double(0x3c), 1.0);
  EXPECT_EQ(fp8_e5m2_to_double(0x3d), 1.25);
  EXPECT_EQ(fp8_e5m2_to_double(0xc0), -2.0);
  EXPECT_EQ(fp8_e5m2_to_double(0x7b), 57344.0);  // largest finite
  EXPECT_EQ(fp8_e5m2_to_double(0x04), std::ldexp(1.0, -14));
  EXPECT_EQ(fp8_e5m2_to_double(0x01), std::ldexp(1.0, -16));  // smallest subnormal
  EXPECT_EQ(fp8_e5m2_to_double(0x7c), std::numeric_limits<double>::infinity());
  EXPECT_EQ(fp8_e5m2_to_double(0xfc), -std::numeric_limits<double>::infinity());
  EXPECT_TRUE(std::isnan(fp8_e5m2_to_double(0x7d)));
  EXPECT_TRUE(std::isnan(fp8_e5m2_to_double(0x7f)));
  EXPECT_TRUE(std::isnan(fp8_e5m2_to_double(0xfe)));
  EXPECT_TRUE(is_neg_zero(fp8_e5m2_to_double(0x80)));
}

TEST(DType, Fp4AllSixteenCodes) {
  const double want[16] = {0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0};
  for (int c = 0; c < 16; ++c) {
    EXPECT_EQ(fp4_e2m1_to_double(static_cast<uint8_t>(c)), want[c]) << c;
    EXPECT_EQ(std::signbit(fp4_e2m1_to_double(static_cast<uint8_t>(c))), c >= 8) << c;
    // Only the low nibble is used.
    EXPECT_EQ(fp4_e2m1_to_double(static_cast<uint8_t>(c | 0xa0)), want[c]) << c;
  }
}

TEST(DType, Fp4PackedLowNibbleFirst) {
  // Bytes 0x21 0xf7: values low nibble first -> 1 (0.5), 2 (1.0), 7 (6.0), 15 (-6.0).
  const uint8_t bytes[] = {0x21, 0xf7};
  for (DType t : {DType::f4_e2m1, DType::f4_e2m1fn_x2}) {
    SCOPED_TRACE(std::string(dtype_name(t)));
    EXPECT_EQ(load_value(t, bytes, 0), 0.5);
    EXPECT_EQ(load_value(t, bytes, 1), 1.0);
    EXPECT_EQ(load_value(t, bytes, 2), 6.0);
    EXPECT_EQ(load_value(t, bytes, 3), -6.0);
  }
}

template <typename T>
std::vector<std::byte> bytes_of(std::initializer_list<T> vals) {
  std::vector<std::byte> out(vals.size() * sizeof(T));
  size_t k = 0;
  for (T v : vals) std::memcpy(out.data() + sizeof(T) * k++, &v, sizeof(T));
  return out;
}

TEST(DType, LoadValueWideTypes) {
  auto f64 = bytes_of<double>({1.0 / 3, -2.5e300});
  EXPECT_EQ(load_value(DType::f64, f64.data(), 0), 1.0 / 3);
  EXPECT_EQ(load_value(DType::f64, f64.data(), 1), -2.5e300);
  auto f32 = bytes_of<float>({0.1f, -7.0f});
  EXPECT_EQ(load_value(DType::f32, f32.data(), 0), static_cast<double>(0.1f));
  EXPECT_EQ(load_value(DType::f32, f32.data(), 1), -7.0);
  auto f16 = bytes_of<uint16_t>({0x3c00, 0xfc00});
  EXPECT_EQ(load_value(DType::f16, f16.data(), 0), 1.0);
  EXPECT_EQ(load_value(DType::f16, f16.data(), 1), -std::numeric_limits<double>::infinity());
  auto bf = bytes_of<uint16_t>({0xc040, 0x3f80});
  EXPECT_EQ(load_value(DType::bf16, bf.data(), 0), -3.0);
  EXPECT_EQ(load_value(DType::bf16, bf.data(), 1), 1.0);
  const uint8_t f8[] = {0x7e, 0x7c};
  EXPECT_EQ(load_value(DType::f8_e4m3fn, f8, 0), 448.0);
  EXPECT_EQ(load_value(DType::f8_e5m2, f8, 1), std::numeric_limits<double>::infinity());
}

TEST(DType, IntegerSignExtension) {
  const uint8_t i8[] = {0xff, 0x80, 0x7f, 0x00};
  EXPECT_EQ(load_value(DType::i8, i8, 0), -1.0);
  EXPECT_EQ(load_value(DType::i8, i8, 1), -128.0);
  EXPECT_EQ(load_value(DType::i8, i8, 2), 127.0);
  EXPECT_EQ(load_value(DType::u8, i8, 0), 255.0);
  auto i16 = bytes_of<uint16_t>({0x8000, 0xffff, 0x7fff});
  EXPECT_EQ(load_value(DType::i16, i16.data(), 0), -32768.0);
  EXPECT_EQ(load_value(DType::i16, i16.data(), 1), -1.0);
  EXPECT_EQ(load_value(DType::i16, i16.data(), 2), 32767.0);
  auto i32 = bytes_of<uint32_t>({0xffffffffu, 0x80000000u, 5});
  EXPECT_EQ(load_value(DType::i32, i32.data(), 0), -1.0);
  EXPECT_EQ(load_value(DType::i32, i32.data(), 1), -2147483648.0);
  EXPECT_EQ(load_value(DType::i32, i32.data(), 2), 5.0);
  auto i64 = bytes_of<int64_t>({-5, std::numeric_limits<int64_t>::min(), int64_t{1} << 40});
  EXPECT_EQ(load_value(DType::i64, i64.data(), 0), -5.0);
  EXPECT_EQ(load_value(DType::i64, i64.data(), 1), -9223372036854775808.0);
  EXPECT_EQ(load_value(DType::i64, i64.data(), 2), 1099511627776.0);
}

TEST(DType, Bool) {
  const uint8_t b[] = {0, 1, 2, 0xff};
  EXPECT_EQ(load_value(DType::boolean, b, 0), 0.0);
  EXPECT_EQ(load_value(DType::boolean, b, 1), 1.0);
  EXPECT_EQ(load_value(DType::boolean, b, 2), 1.0);  // any non-zero byte is true
  EXPECT_EQ(load_value(DType::boolean, b, 3), 1.0);
}

TEST(DType, DoubleToHalf) {
  EXPECT_EQ(double_to_half(0.0), 0x0000);
  EXPECT_EQ(double_to_half(-0.0), 0x8000);
  EXPECT_EQ(double_to_half(1.0), 0x3c00);
  EXPECT_EQ(double_to_half(-2.0), 0xc000);
  EXPECT_EQ(double_to_half(65504.0), 0x7bff);
  EXPECT_EQ(double_to_half(std::ldexp(1.0, -14)), 0x0400);
  EXPECT_EQ(double_to_half(std::ldexp(1.0, -24)), 0x0001);
  // Ties to even between normal neighbours.
  EXPECT_EQ(double_to_half(1.0 + std::ldexp(1.0, -11)), 0x3c00);      // halfway 0x3c00/0x3c01 -> even
  EXPECT_EQ(double_to_half(1.0 + 3 * std::ldexp(1.0, -11)), 0x3c02);  // halfway 0x3c01/0x3c02 -> even
  EXPECT_EQ(double_to_half(1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -20)), 0x3c01);  // above halfway
  EXPECT_EQ(double_to_half(1.0 + std::ldexp(1.0, -11) - std::ldexp(1.0, -20)), 0x3c00);  // below halfway
  EXPECT_EQ(double_to_half(-(1.0 + 3 * std::ldexp(1.0, -11))), 0xbc02);
  // Ties to even among subnormals, and from the largest subnormal up to the smallest normal.
  EXPECT_EQ(double_to_half(std::ldexp(1.0, -25)), 0x0000);      // half of the smallest subnormal
  EXPECT_EQ(double_to_half(3 * std::ldexp(1.0, -25)), 0x0002);  // 1.5 units -> 2
  EXPECT_EQ(double_to_half(5 * std::ldexp(1.0, -25)), 0x0002);  // 2.5 units -> 2
  EXPECT_EQ(double_to_half(std::ldexp(1.0, -25) + std::ldexp(1.0, -30)), 0x0001);
  EXPECT_EQ(double_to_half(1023.5 * std::ldexp(1.0, -24)), 0x0400);
  EXPECT_EQ(double_to_half(std::ldexp(1.0, -40)), 0x0000);       // underflow to zero
  EXPECT_EQ(double_to_half(-std::ldexp(1.0, -40)), 0x8000);
  // Overflow to infinity: 65520 is halfway between 65504 and the next (infinite) step.
  EXPECT_EQ(double_to_half(65519.0), 0x7bff);
  EXPECT_EQ(double_to_half(65520.0), 0x7c00);
  EXPECT_EQ(double_to_half(1e6), 0x7c00);
  EXPECT_EQ(double_to_half(-1e6), 0xfc00);
  EXPECT_EQ(double_to_half(1e300), 0x7c00);
  EXPECT_EQ(double_to_half(std::numeric_limits<double>::infinity()), 0x7c00);
  EXPECT_EQ(double_to_half(-std::numeric_limits<double>::infinity()), 0xfc00);
  uint16_t n = double_to_half(std::numeric_limits<double>::quiet_NaN());
  EXPECT_EQ(n & 0x7c00, 0x7c00);
  EXPECT_NE(n & 0x03ff, 0);
}

TEST(DType, DoubleToHalfRoundTripsEveryFiniteHalf) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    if ((h & 0x7c00) == 0x7c00) continue;  // inf / NaN
    ASSERT_EQ(double_to_half(half_to_double(static_cast<uint16_t>(h))), h) << std::hex << h;
  }
}

TEST(DType, DoubleToBf16) {
  EXPECT_EQ(double_to_bf16(0.0), 0x0000);
  EXPECT_EQ(double_to_bf16(-0.0), 0x8000);
  EXPECT_EQ(double_to_bf16(1.0), 0x3f80);
  EXPECT_EQ(double_to_bf16(-3.0), 0xc040);
  EXPECT_EQ(double_to_bf16(1.0 + std::ldexp(1.0, -8)), 0x3f80);      // halfway -> even
  EXPECT_EQ(double_to_bf16(1.0 + 3 * std::ldexp(1.0, -8)), 0x3f82);  // halfway -> even
  EXPECT_EQ(double_to_bf16(1.0 + std::ldexp(1.0, -8) + std::ldexp(1.0, -16)), 0x3f81);
  EXPECT_EQ(double_to_bf16(1.0 + std::ldexp(1.0, -8) - std::ldexp(1.0, -16)), 0x3f80);
  EXPECT_EQ(double_to_bf16(3.3895313892515355e38), 0x7f7f);  // largest finite
  EXPECT_EQ(double_to_bf16(std::numeric_limits<float>::max()), 0x7f80);  // rounds up to inf
  EXPECT_EQ(double_to_bf16(1e39), 0x7f80);
  EXPECT_EQ(double_to_bf16(-1e39), 0xff80);
  EXPECT_EQ(double_to_bf16(std::numeric_limits<double>::infinity()), 0x7f80);
  EXPECT_EQ(double_to_bf16(std::ldexp(1.0, -133)), 0x0001);  // subnormal
  uint16_t n = double_to_bf16(std::numeric_limits<double>::quiet_NaN());
  EXPECT_TRUE(std::isnan(bf16_to_double(n)));
  // A float NaN whose payload lies only in the dropped low bits must stay NaN, not become inf.
  uint16_t s = double_to_bf16(static_cast<double>(std::bit_cast<float>(0x7f800001u)));
  EXPECT_TRUE(std::isnan(bf16_to_double(s))) << std::hex << s;
  for (uint32_t h = 0; h < 0x10000; ++h) {
    if ((h & 0x7f80) == 0x7f80 && (h & 0x7f)) continue;  // NaN
    ASSERT_EQ(double_to_bf16(bf16_to_double(static_cast<uint16_t>(h))), h) << std::hex << h;
  }
}

}  // namespace
}  // namespace ka
