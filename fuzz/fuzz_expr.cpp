// fuzz_expr.cpp — libFuzzer target for the expression language: parse, names(), and eval with a
// fixed lookup (a few small, zero, negative and extreme integers and a float). ka::ExprError is the
// expected rejection; anything else (crash, sanitizer report, other exception) is a bug.
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>

#include "problem/expr.h"

namespace {
std::optional<ka::Value> lookup(const std::string& n) {
  if (n == "a") return ka::Value::of(int64_t{3});
  if (n == "b") return ka::Value::of(int64_t{-7});
  if (n == "z") return ka::Value::of(int64_t{0});
  if (n == "big") return ka::Value::of(std::numeric_limits<int64_t>::max());
  if (n == "small") return ka::Value::of(std::numeric_limits<int64_t>::min());
  if (n == "f") return ka::Value::of(2.5);
  return std::nullopt;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view src(reinterpret_cast<const char*>(data), size);
  try {
    ka::Expr e = ka::Expr::parse(src);
    (void)e.names();
    ka::Value v = e.eval(lookup);
    (void)v.truthy();
  } catch (const ka::ExprError& err) {
    if (err.pos > src.size()) __builtin_trap();  // the position must lie inside (or at the end of) the source
  }
  return 0;
}
