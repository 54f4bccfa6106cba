// fuzz_safetensors.cpp — libFuzzer target for the safetensors reader. Accepted files must survive
// a serialize/parse round trip unchanged and every value must be readable; ka::UserError is the
// expected rejection, anything else is a bug.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>

#include "problem/safetensors.h"
#include "util/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(data), size);
  ka::SafeTensors st;
  try {
    st = ka::parse_safetensors(bytes, "fuzz.safetensors");
  } catch (const ka::UserError&) {
    return 0;
  }
  double sink = 0;
  for (const auto& [name, t] : st.tensors) {
    if (t.data.size() != t.nbytes()) __builtin_trap();
    int64_t n = t.num_values();
    for (int64_t i = 0; i < n && i < 4096; ++i) sink += t.value(i);
  }
  (void)sink;
  std::string again = ka::serialize_safetensors(st);
  ka::SafeTensors back =
      ka::parse_safetensors(std::span<const std::byte>(reinterpret_cast<const std::byte*>(again.data()), again.size()),
                            "round trip");  // a UserError here escapes: the writer produced a bad file
  if (back.metadata != st.metadata || back.tensors.size() != st.tensors.size()) __builtin_trap();
  for (const auto& [name, t] : st.tensors) {
    auto it = back.tensors.find(name);
    if (it == back.tensors.end() || it->second.dtype != t.dtype || it->second.shape != t.shape ||
        it->second.data != t.data)
      __builtin_trap();
  }
  return 0;
}
