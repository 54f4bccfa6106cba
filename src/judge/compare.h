// judge/compare.h — SOL-ExecBench's correctness rule for one output tensor against its reference:
// |out − ref| ≤ max_atol + max_rtol·|ref| per value, at least required_matched_ratio of values
// matching, no value over max_error_cap, no NaN/Inf in the output (−inf allowed where the
// reference is −inf and allow_negative_inf is set), and an all-zero output fails against a
// non-zero reference.
#pragma once
#include <string>

#include "problem/problem.h"
#include "problem/tensor.h"

namespace ka {

struct CompareResult {
  bool ok = false;
  double max_abs_err = 0;
  double max_rel_err = 0;
  double matched_ratio = 0;
  int64_t values = 0;
  int64_t nonfinite = 0;      // NaN/Inf in the output not excused by allow_negative_inf
  bool never_written = false; // every value still carries the judge's poison
  std::string reason;         // empty when ok
};

CompareResult compare_output(const Tensor& out, const Tensor& ref, const Tolerance& tol);

}  // namespace ka
