// sol/bounds.h — speed-of-light time of a workload from the work its reference does (counted by
// the oracle's `count` command) and the device's measured ceilings (sol/calibrate.h):
//   T_sol = max(Σ_dtype FLOPs(dtype) / rate(dtype), bytes / bandwidth)
// with the limiting term named ("memory" or "compute:<rate>"). Elementwise FLOPs run at the fp32
// rate. Matrix FLOPs the reference ran in a wider dtype than the definition's narrowest
// floating-point input (references often upcast bf16 or fp8 inputs to fp32 before a matmul) are
// charged at that input's rate (at_input_precision): a kernel may keep the inputs' precision, and
// the bound is the fastest the hardware allows. A dtype's rate: bfloat16 → bf16, float16 → fp16, float8_* (and fp4) → fp8, float32 and
// anything else → fp32; a rate that was not measured falls back to bf16, then fp32.
#pragma once
#include <nlohmann/json.hpp>

#include <map>
#include <string>

#include "problem/problem.h"

namespace ka {

struct WorkCount {
  std::map<std::string, double> matrix_flops;  // by the dtype of the op's inputs
  double elementwise_flops = 0;
  double bytes_in = 0, bytes_out = 0, bytes = 0;
  double total_flops() const;
  static WorkCount from_json(const nlohmann::json& j);  // the oracle's count line
};

struct Ceilings {
  double bandwidth_Bps = 0;              // copy bandwidth, bytes read + written per second
  std::map<std::string, double> rate;    // rate key (bf16, fp16, fp8, tf32, fp32) -> FLOP/s
  // The rate key a tensor dtype's FLOPs are charged at (after the fallbacks above); "" if none.
  std::string rate_key(const std::string& dtype) const;
};

struct SolBound {
  double t_sol_s = 0, t_compute_s = 0, t_memory_s = 0;
  std::map<std::string, double> compute_terms_s;  // rate key -> seconds
  std::string limiting;                            // "memory" or "compute:<rate key>"
  bool ok = false;
  std::string message;                             // why not ok
};

SolBound sol_bound(const WorkCount& w, const Ceilings& c);

// The narrowest floating-point input dtype of a definition ("" when it has none).
std::string input_precision(const Definition& d);
// `w` with matrix FLOPs counted in a dtype wider than `narrowest` re-keyed to `narrowest`.
WorkCount at_input_precision(WorkCount w, const std::string& narrowest);

}  // namespace ka
