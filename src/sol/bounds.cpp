// sol/bounds.cpp — T_sol = max(compute, memory) with the limiting term named.
#include "sol/bounds.h"

#include <fmt/format.h>

namespace ka {

double WorkCount::total_flops() const {
  double s = elementwise_flops;
  for (const auto& [d, f] : matrix_flops) s += f;
  return s;
}

WorkCount WorkCount::from_json(const nlohmann::json& j) {
  WorkCount w;
  if (j.contains("matrix_flops") && j["matrix_flops"].is_object())
    for (auto it = j["matrix_flops"].begin(); it != j["matrix_flops"].end(); ++it)
      w.matrix_flops[it.key()] = it.value().get<double>();
  w.elementwise_flops = j.value("elementwise_flops", 0.0);
  w.bytes_in = j.value("bytes_in", 0.0);
  w.bytes_out = j.value("bytes_out", 0.0);
  w.bytes = j.value("bytes", w.bytes_in + w.bytes_out);
  return w;
}

std::string Ceilings::rate_key(const std::string& dtype) const {
  std::string want = "fp32";
  if (dtype == "bfloat16") want = "bf16";
  else if (dtype == "float16") want = "fp16";
  else if (dtype.rfind("float8", 0) == 0 || dtype.rfind("float4", 0) == 0) want = "fp8";
  else if (dtype == "tf32") want = "tf32";
  for (const std::string& k : {want, std::string("bf16"), std::string("fp32")}) {
    auto it = rate.find(k);
    if (it != rate.end() && it->second > 0) return k;
  }
  return "";
}

SolBound sol_bound(const WorkCount& w, const Ceilings& c) {
  SolBound b;
  if (c.bandwidth_Bps <= 0) {
    b.message = "no measured bandwidth";
    return b;
  }
  b.t_memory_s = w.bytes / c.bandwidth_Bps;
  auto charge = [&](const std::string& dtype, double flops) {
    if (flops <= 0) return true;
    std::string k = c.rate_key(dtype);
    if (k.empty()) {
      b.message = fmt::format("no measured rate for {}", dtype);
      return false;
    }
    b.compute_terms_s[k] += flops / c.rate.at(k);
    return true;
  };
  for (const auto& [d, f] : w.matrix_flops)
    if (!charge(d, f)) return b;
  if (!charge("float32", w.elementwise_flops)) return b;
  std::string top;
  double top_s = -1;
  for (const auto& [k, s] : b.compute_terms_s) {
    b.t_compute_s += s;
    if (s > top_s) top_s = s, top = k;
  }
  if (b.t_compute_s > b.t_memory_s) {
    b.t_sol_s = b.t_compute_s;
    b.limiting = "compute:" + top;
  } else {
    b.t_sol_s = b.t_memory_s;
    b.limiting = "memory";
  }
  b.ok = true;
  return b;
}

namespace {
// Bits of a floating-point dtype name (0 for anything else).
int float_bits(const std::string& name) {
  if (name == "tf32") return 19;
  auto t = parse_dtype(name);
  if (!t || !dtype_is_float(*t)) return 0;
  return *t == DType::f4_e2m1fn_x2 ? 4 : dtype_bits(*t);
}
}  // namespace

std::string input_precision(const Definition& d) {
  std::string best;
  for (const auto& in : d.inputs) {
    std::string n(dtype_name(in.dtype));
    int b = float_bits(n);
    if (b > 0 && (best.empty() || b < float_bits(best))) best = n;
  }
  return best;
}

WorkCount at_input_precision(WorkCount w, const std::string& narrowest) {
  const int nb = float_bits(narrowest);
  if (nb == 0) return w;
  std::map<std::string, double> m;
  for (const auto& [d, f] : w.matrix_flops) m[float_bits(d) > nb ? narrowest : d] += f;
  w.matrix_flops = std::move(m);
  return w;
}

}  // namespace ka
