// problem/dtype.h — the element types of the SOL-ExecBench spec: names, sizes, safetensors codes,
// and exact conversion of one stored element to double (for comparison and printing).
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace ka {

enum class DType : uint8_t {
  f64, f32, f16, bf16, f8_e4m3fn, f8_e5m2, f4_e2m1, f4_e2m1fn_x2,
  i64, i32, i16, i8, u8, boolean,
};

inline constexpr DType kAllDTypes[] = {
    DType::f64, DType::f32, DType::f16, DType::bf16, DType::f8_e4m3fn, DType::f8_e5m2, DType::f4_e2m1,
    DType::f4_e2m1fn_x2, DType::i64, DType::i32, DType::i16, DType::i8, DType::u8, DType::boolean};

// Spec name ("bfloat16"); parse accepts exactly the spec names.
std::string_view dtype_name(DType t);
std::optional<DType> parse_dtype(std::string_view name);
// safetensors header code ("BF16", "F8_E4M3", ...).
std::string_view dtype_safetensors_code(DType t);
std::optional<DType> parse_safetensors_code(std::string_view code);

// Storage bits of one element as the tensor is laid out (float4_e2m1: 4, packed two to a byte;
// float4_e2m1fn_x2: 8, one byte holding two fp4 values, as in PyTorch).
int dtype_bits(DType t);
// Bytes for `count` elements (rounded up for 4-bit types).
size_t dtype_storage_bytes(DType t, int64_t count);
bool dtype_is_float(DType t);
bool dtype_is_integer(DType t);  // includes bool

// Decoders of the narrow float formats, exact (every value is representable in double).
double half_to_double(uint16_t h);
double bf16_to_double(uint16_t h);
double fp8_e4m3fn_to_double(uint8_t v);  // 0x7f/0xff are NaN; no infinities
double fp8_e5m2_to_double(uint8_t v);
double fp4_e2m1_to_double(uint8_t nibble);  // low 4 bits used
// Encoders, round-to-nearest-even; used by tests and the host target.
uint16_t double_to_half(double d);
uint16_t double_to_bf16(double d);

// Number of logical values held by a tensor of `count` elements (2× for float4_e2m1fn_x2).
int64_t dtype_values_per_element(DType t);
// The i-th logical value of a tensor stored at `data`, as double.
double load_value(DType t, const void* data, int64_t i);

}  // namespace ka
