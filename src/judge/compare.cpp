// judge/compare.cpp — SOL-ExecBench's compute_error_stats, value by value in float32 as upstream
// casts both tensors to float32 before comparing (docs/sol-execbench-rules.md §4.2).
#include "judge/compare.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace ka {

CompareResult compare_output(const Tensor& out, const Tensor& ref, const Tolerance& tol) {
  CompareResult r;
  if (out.dtype != ref.dtype) {
    r.reason = fmt::format("dtype {} differs from the reference's {}", dtype_name(out.dtype), dtype_name(ref.dtype));
    return r;
  }
  if (out.shape != ref.shape) {
    r.reason = fmt::format("shape {} differs from the reference's {}", shape_str(out.shape), shape_str(ref.shape));
    return r;
  }
  const int64_t n = ref.num_values();
  r.values = n;
  // Sanity: any non-finite value in either tensor fails, except positions where both are -inf
  // and allow_negative_inf is set. The poison check runs first so an untouched output says so.
  bool all_nan_out = n > 0;
  int64_t ref_nonfinite = 0;
  float norm_out = 0, norm_ref = 0;  // float32, as upstream's torch norms: |x| < 2^-75 squares to 0
  for (int64_t i = 0; i < n; ++i) {
    float x = static_cast<float>(out.value(i));
    float y = static_cast<float>(ref.value(i));
    if (!std::isnan(x)) all_nan_out = false;
    bool both_neg_inf = tol.allow_negative_inf && std::isinf(x) && x < 0 && std::isinf(y) && y < 0;
    if (both_neg_inf) continue;
    if (!std::isfinite(x)) ++r.nonfinite;
    if (!std::isfinite(y)) ++ref_nonfinite;
    norm_out += x * x;
    norm_ref += y * y;
  }
  if (all_nan_out && dtype_is_float(out.dtype) && out.dtype != DType::f4_e2m1 && out.dtype != DType::f4_e2m1fn_x2) {
    r.never_written = true;
    r.nonfinite = n;
    r.reason = "the output was never written (every value still holds the judge's NaN poison)";
    return r;
  }
  if (r.nonfinite > 0) {
    r.reason = fmt::format("{} NaN/Inf values in the output", r.nonfinite);
    return r;
  }
  if (ref_nonfinite > 0) {
    r.reason = fmt::format("{} NaN/Inf values in the reference (not excused by allow_negative_inf)", ref_nonfinite);
    return r;
  }
  if (norm_ref > 0 && norm_out == 0) {
    r.max_abs_err = r.max_rel_err = std::sqrt(norm_ref);
    r.reason = "the output is all zeros but the reference is not";
    return r;
  }
  int64_t fails = 0, counted = 0;
  for (int64_t i = 0; i < n; ++i) {
    float x = static_cast<float>(out.value(i));
    float y = static_cast<float>(ref.value(i));
    if (tol.allow_negative_inf && std::isinf(x) && x < 0 && std::isinf(y) && y < 0) continue;
    ++counted;
    float e = std::fabs(x - y);
    float bound = static_cast<float>(tol.max_atol) + static_cast<float>(tol.max_rtol) * std::fabs(y);
    if (!std::isfinite(e) || e > bound) ++fails;
    if (e > r.max_abs_err) r.max_abs_err = e;
    double rel = e / std::max(static_cast<double>(std::fabs(y)), tol.max_atol);
    if (rel > r.max_rel_err) r.max_rel_err = rel;
  }
  r.matched_ratio = counted ? std::clamp(1.0 - static_cast<double>(fails) / counted, 0.0, 1.0) : 1.0;
  if (r.matched_ratio < tol.required_matched_ratio) {
    r.reason = fmt::format("{:.4f} of values within tolerance, {} required (max abs err {:.3g}, max rel err {:.3g})",
                           r.matched_ratio, tol.required_matched_ratio, r.max_abs_err, r.max_rel_err);
    return r;
  }
  if (tol.max_error_cap && r.max_abs_err > *tol.max_error_cap) {
    r.reason = fmt::format("max abs err {:.3g} exceeds max_error_cap {:.3g}", r.max_abs_err, *tol.max_error_cap);
    return r;
  }
  r.ok = true;
  return r;
}

}  // namespace ka
