// fuzz_definition.cpp — libFuzzer target for the definition/workload loader. The input is a
// definition.json text, optionally followed by a NUL byte and one workload.jsonl line; when the
// definition parses, the line is parsed against it (no blob checks) and every tensor shape resolved.
// ka::UserError / ka::ExprError are the expected ways to reject input; anything else is a bug.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "problem/problem.h"
#include "util/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  size_t sep = in.find('\0');
  std::string_view def_text = in.substr(0, sep);
  try {
    ka::Definition def = ka::parse_definition_text(def_text, "definition.json");
    if (sep == std::string_view::npos) return 0;
    ka::Workload w = ka::parse_workload_line(def, in.substr(sep + 1), "workload.jsonl", 1, {});
    for (const auto* sec : {&def.inputs, &def.outputs})
      for (const auto& t : *sec) (void)ka::resolve_shape(t, w);
  } catch (const ka::UserError&) {
  } catch (const ka::ExprError&) {
  }
  return 0;
}
