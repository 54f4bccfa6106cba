// test_compare.cpp — SOL-ExecBench's correctness rule (docs/sol-execbench-rules.md §4.2) as
// implemented by compare_output (judge/compare.h): per-value |out − ref| > atol + rtol·|ref| fails
// (strict, reference-based), the matched ratio against required_matched_ratio, max_error_cap
// (strict), NaN/Inf in output or reference, −inf pairs with allow_negative_inf, the all-zero rule,
// never-written (all-NaN) outputs, dtype/shape mismatches, empty tensors, narrow dtypes compared
// after the float32 cast, the reported max abs/rel errors, and the tolerance fields a workload line
// may carry (defaults 1e-2, 1e-2, 0.99).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "judge/compare.h"
#include "problem/problem.h"
#include "util/error.h"
#include "test_support.h"

namespace ka {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

Tensor f32(std::vector<float> v, std::vector<int64_t> shape = {}) {
  Tensor t;
  t.dtype = DType::f32;
  t.shape = shape.empty() ? std::vector<int64_t>{static_cast<int64_t>(v.size())} : shape;
  t.data.resize(v.size() * sizeof(float));
  std::memcpy(t.data.data(), v.data(), t.data.size());
  return t;
}

Tensor u16(DType dt, std::vector<uint16_t> v) {
  Tensor t;
  t.dtype = dt;
  t.shape = {static_cast<int64_t>(v.size())};
  t.data.resize(v.size() * 2);
  std::memcpy(t.data.data(), v.data(), t.data.size());
  return t;
}

Tensor f64(std::vector<double> v) {
  Tensor t;
  t.dtype = DType::f64;
  t.shape = {static_cast<int64_t>(v.size())};
  t.data.resize(v.size() * sizeof(double));
  std::memcpy(t.data.data(), v.data(), t.data.size());
  return t;
}

Tensor i32(std::vector<int32_t> v) {
  Tensor t;
  t.dtype = DType::i32;
  t.shape = {static_cast<int64_t>(v.size())};
  t.data.resize(v.size() * 4);
  std::memcpy(t.data.data(), v.data(), t.data.size());
  return t;
}

Tolerance tol(double atol, double rtol, double ratio = 1.0) {
  Tolerance t;
  t.max_atol = atol;
  t.max_rtol = rtol;
  t.required_matched_ratio = ratio;
  return t;
}

bool passes(float out, float ref, const Tolerance& t) { return compare_output(f32({out}), f32({ref}), t).ok; }

TEST(Compare, IdenticalTensorsPass) {
  auto r = compare_output(f32({1, -2, 3.5f}), f32({1, -2, 3.5f}), Tolerance{});
  EXPECT_TRUE(r.ok) << r.reason;
  EXPECT_TRUE(r.reason.empty());
  EXPECT_EQ(r.values, 3);
  EXPECT_EQ(r.matched_ratio, 1.0);
  EXPECT_EQ(r.max_abs_err, 0.0);
  EXPECT_EQ(r.max_rel_err, 0.0);
  EXPECT_FALSE(r.never_written);
  EXPECT_EQ(r.nonfinite, 0);
}

TEST(Compare, AtolBoundaryIsStrict) {
  Tolerance t = tol(0.5, 0);
  EXPECT_TRUE(passes(0.5f, 0.0f, t));                                   // e == atol: within
  EXPECT_TRUE(passes(-0.5f, 0.0f, t));
  EXPECT_FALSE(passes(std::nextafter(0.5f, 1.0f), 0.0f, t));            // e > atol: fails
  EXPECT_FALSE(passes(std::nextafter(-0.5f, -1.0f), 0.0f, t));
  EXPECT_TRUE(passes(10.25f, 10.0f, tol(0.25, 0)));
  EXPECT_FALSE(passes(10.25f, 10.0f, tol(0.125, 0)));
}

TEST(Compare, RtolBoundaryIsStrictAndUsesTheReference) {
  Tolerance t = tol(0, 0.25);  // bound = 0.25 * |ref|
  EXPECT_TRUE(passes(5.0f, 4.0f, t));                                   // e = 1 = 0.25 * 4
  EXPECT_TRUE(passes(3.0f, 4.0f, t));
  EXPECT_FALSE(passes(std::nextafter(5.0f, 9.0f), 4.0f, t));
  EXPECT_FALSE(passes(std::nextafter(3.0f, 0.0f), 4.0f, t));
  EXPECT_TRUE(passes(-5.0f, -4.0f, t));                                 // |ref| for negative refs
  EXPECT_FALSE(passes(std::nextafter(-5.0f, -9.0f), -4.0f, t));
  // Asymmetric: the bound comes from |ref|, not |out|. e = 1.25 in both cases.
  EXPECT_FALSE(passes(5.25f, 4.0f, t));  // bound 1.0
  EXPECT_TRUE(passes(4.0f, 5.25f, t));   // bound 1.3125
  // A zero reference with no atol tolerates nothing.
  EXPECT_FALSE(passes(std::numeric_limits<float>::denorm_min(), 0.0f, t));
}

TEST(Compare, AtolAndRtolAdd) {
  Tolerance t = tol(0.5, 0.25);  // bound at ref -4: 0.5 + 1 = 1.5
  EXPECT_TRUE(passes(-2.5f, -4.0f, t));
  EXPECT_TRUE(passes(-5.5f, -4.0f, t));
  EXPECT_FALSE(passes(std::nextafter(-5.5f, -9.0f), -4.0f, t));
  EXPECT_FALSE(passes(std::nextafter(-2.5f, 0.0f), -4.0f, t));
}

// 100 values, `bad` of them off by 1 (beyond atol 0.5).
CompareResult ratio_case(int bad, double required) {
  std::vector<float> ref(100), out(100);
  for (int i = 0; i < 100; ++i) ref[i] = out[i] = static_cast<float>(i + 1);
  for (int i = 0; i < bad; ++i) out[i] += 1.0f;
  return compare_output(f32(out), f32(ref), tol(0.5, 0, required));
}

TEST(Compare, MatchedRatioDefault) {
  EXPECT_EQ(Tolerance{}.required_matched_ratio, 0.99);
  auto r1 = ratio_case(1, 0.99);
  EXPECT_TRUE(r1.ok) << r1.reason;            // exactly 0.99 matched: enough
  EXPECT_DOUBLE_EQ(r1.matched_ratio, 0.99);
  EXPECT_EQ(r1.max_abs_err, 1.0);
  auto r2 = ratio_case(2, 0.99);
  EXPECT_FALSE(r2.ok);
  EXPECT_DOUBLE_EQ(r2.matched_ratio, 0.98);
  EXPECT_TRUE(has(r2.reason, "0.98")) << r2.reason;
}

TEST(Compare, MatchedRatioCustom) {
  EXPECT_TRUE(ratio_case(0, 1.0).ok);
  EXPECT_FALSE(ratio_case(1, 1.0).ok);
  EXPECT_TRUE(ratio_case(50, 0.5).ok);
  EXPECT_FALSE(ratio_case(51, 0.5).ok);
  EXPECT_TRUE(ratio_case(100, 0.0).ok);       // nothing required
  EXPECT_EQ(ratio_case(100, 0.0).matched_ratio, 0.0);
}

TEST(Compare, MaxErrorCapIsStrictAndIndependentOfTheRatio) {
  std::vector<float> ref(10, 1.0f), out(10, 1.0f);
  out[3] = 4.0f;  // e = 3, beyond atol, but 0.9 matched is enough
  Tolerance t = tol(1, 0, 0.9);
  EXPECT_TRUE(compare_output(f32(out), f32(ref), t).ok);
  t.max_error_cap = 3.0;
  EXPECT_TRUE(compare_output(f32(out), f32(ref), t).ok);  // max e == cap: within
  t.max_error_cap = 2.5;
  auto r = compare_output(f32(out), f32(ref), t);
  EXPECT_FALSE(r.ok);
  EXPECT_TRUE(has(r.reason, "max_error_cap")) << r.reason;
  EXPECT_EQ(r.max_abs_err, 3.0);
  // The cap also applies to values that are within atol + rtol·|ref|.
  Tolerance wide = tol(10, 0, 1.0);
  wide.max_error_cap = 2.0;
  EXPECT_FALSE(compare_output(f32(out), f32(ref), wide).ok);
  wide.max_error_cap = 0.0;
  EXPECT_TRUE(compare_output(f32(ref), f32(ref), wide).ok);  // zero error, zero cap
}

TEST(Compare, NanAnywhereInOutputFails) {
  std::vector<float> ref(100, 1.0f), out(100, 1.0f);
  out[57] = kNaN;
  auto r = compare_output(f32(out), f32(ref), tol(0.01, 0.01, 0.0));  // even with nothing required
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.nonfinite, 1);
  EXPECT_FALSE(r.never_written);
  EXPECT_TRUE(has(r.reason, "NaN/Inf")) << r.reason;
}

TEST(Compare, InfInOutputFails) {
  for (float bad : {kInf, -kInf}) {
    auto r = compare_output(f32({1, bad, 3}), f32({1, 2, 3}), tol(1e9, 1e9, 0.0));
    EXPECT_FALSE(r.ok) << bad;
    EXPECT_EQ(r.nonfinite, 1);
  }
}

TEST(Compare, NanOrInfInReferenceFails) {
  for (float bad : {kNaN, kInf, -kInf}) {
    auto r = compare_output(f32({1, 2, 3}), f32({1, bad, 3}), tol(1e9, 1e9, 0.0));
    EXPECT_FALSE(r.ok) << bad;
    EXPECT_TRUE(has(r.reason, "reference")) << r.reason;
  }
}

TEST(Compare, MatchingInfinitiesFailWithoutTheFlag) {
  EXPECT_FALSE(compare_output(f32({-kInf, 1}), f32({-kInf, 1}), Tolerance{}).ok);
  EXPECT_FALSE(compare_output(f32({kInf, 1}), f32({kInf, 1}), Tolerance{}).ok);
}

TEST(Compare, AllowNegativeInf) {
  Tolerance t;
  t.allow_negative_inf = true;
  auto r = compare_output(f32({-kInf, 1, -kInf}), f32({-kInf, 1, -kInf}), t);
  EXPECT_TRUE(r.ok) << r.reason;
  EXPECT_EQ(r.matched_ratio, 1.0);
  EXPECT_EQ(r.nonfinite, 0);
  // The excused positions do not count: 1 of the 2 finite values is off, 0.5 matched.
  Tolerance half = t;
  half.required_matched_ratio = 0.5;
  auto r2 = compare_output(f32({-kInf, 1, -kInf, 9}), f32({-kInf, 1, -kInf, 2}), half);
  EXPECT_TRUE(r2.ok) << r2.reason;
  EXPECT_DOUBLE_EQ(r2.matched_ratio, 0.5);
  half.required_matched_ratio = 0.6;
  EXPECT_FALSE(compare_output(f32({-kInf, 1, -kInf, 9}), f32({-kInf, 1, -kInf, 2}), half).ok);
  // Only both-−inf positions are excused.
  EXPECT_FALSE(compare_output(f32({kInf}), f32({kInf}), t).ok);
  EXPECT_FALSE(compare_output(f32({-kInf}), f32({1}), t).ok);
  EXPECT_FALSE(compare_output(f32({1}), f32({-kInf}), t).ok);
  EXPECT_FALSE(compare_output(f32({kInf}), f32({-kInf}), t).ok);
  EXPECT_FALSE(compare_output(f32({-kInf}), f32({kInf}), t).ok);
  EXPECT_FALSE(compare_output(f32({-kInf, kNaN}), f32({-kInf, 1}), t).ok);
  // Every position excused: nothing left to compare, a pass.
  EXPECT_TRUE(compare_output(f32({-kInf, -kInf}), f32({-kInf, -kInf}), t).ok);
}

TEST(Compare, AllZeroOutputAgainstNonZeroReferenceFails) {
  // Each value is within atol, but the output is all zeros and the reference is not.
  auto r = compare_output(f32({0, 0, 0}), f32({0.003f, 0, -0.004f}), Tolerance{});
  EXPECT_FALSE(r.ok);
  EXPECT_TRUE(has(r.reason, "all zeros")) << r.reason;
  EXPECT_NEAR(r.max_abs_err, 0.005, 1e-7);  // ‖ref‖₂
  EXPECT_NEAR(r.max_rel_err, 0.005, 1e-7);
  EXPECT_FALSE(compare_output(f32({-0.0f, 0}), f32({0, 1}), tol(10, 0)).ok);  // −0 is zero too
  // One non-zero value in the output is enough to leave the rule.
  EXPECT_TRUE(compare_output(f32({0, 0, 0.001f}), f32({0.003f, 0, 0}), Tolerance{}).ok);
}

TEST(Compare, AllZeroAgainstAllZeroPasses) {
  auto r = compare_output(f32({0, 0, 0, 0}), f32({0, 0, 0, 0}), tol(0, 0));
  EXPECT_TRUE(r.ok) << r.reason;
  EXPECT_TRUE(compare_output(f32({-0.0f}), f32({0.0f}), tol(0, 0)).ok);
}

// SOL-ExecBench computes both norms in float32 (on CUDA, accumulating in float), so an output
// whose every |x| is below ~2^-75 has ‖x‖₂ == 0 there and fails the all-zero rule against a
// non-zero reference. Disabled until compare_output accumulates the norms in float32.
TEST(Compare, AllZeroRuleUsesFloat32Norms) {
  auto r = compare_output(f32({1e-30f}), f32({0.005f}), Tolerance{});
  EXPECT_FALSE(r.ok);
  EXPECT_TRUE(has(r.reason, "all zeros")) << r.reason;
}

TEST(Compare, NeverWrittenOutputIsDetected) {
  std::vector<float> nan(16, kNaN), ref(16, 1.0f);
  auto r = compare_output(f32(nan), f32(ref), Tolerance{});
  EXPECT_FALSE(r.ok);
  EXPECT_TRUE(r.never_written);
  EXPECT_EQ(r.nonfinite, 16);
  EXPECT_TRUE(has(r.reason, "never written")) << r.reason;
  // bf16 poison (0x7fc0) too.
  auto rb = compare_output(u16(DType::bf16, {0x7fc0, 0x7fc0}), u16(DType::bf16, {0x3f80, 0x3f80}), Tolerance{});
  EXPECT_TRUE(rb.never_written);
  EXPECT_FALSE(rb.ok);
  // A single written value means it was written: a plain NaN failure.
  nan[5] = 1.0f;
  auto r2 = compare_output(f32(nan), f32(ref), Tolerance{});
  EXPECT_FALSE(r2.ok);
  EXPECT_FALSE(r2.never_written);
  EXPECT_EQ(r2.nonfinite, 15);
  // Empty tensors are not "never written".
  EXPECT_FALSE(compare_output(f32({}), f32({}), Tolerance{}).never_written);
}

TEST(Compare, DtypeMismatch) {
  auto r = compare_output(u16(DType::f16, {0x3c00}), u16(DType::bf16, {0x3f80}), Tolerance{});
  EXPECT_FALSE(r.ok);
  EXPECT_TRUE(has(r.reason, "dtype")) << r.reason;
  EXPECT_TRUE(has(r.reason, "float16") && has(r.reason, "bfloat16")) << r.reason;
  EXPECT_FALSE(compare_output(f64({1}), f32({1}), Tolerance{}).ok);
}

TEST(Compare, ShapeMismatch) {
  std::vector<float> six(6, 1.0f);
  auto r = compare_output(f32(six, {2, 3}), f32(six, {3, 2}), Tolerance{});
  EXPECT_FALSE(r.ok);
  EXPECT_TRUE(has(r.reason, "shape")) << r.reason;
  EXPECT_TRUE(has(r.reason, "[2, 3]") && has(r.reason, "[3, 2]")) << r.reason;
  EXPECT_FALSE(compare_output(f32(six, {6}), f32(six, {2, 3}), Tolerance{}).ok);  // same numel
  EXPECT_FALSE(compare_output(f32({1}, {1}), f32({1}, {1, 1}), Tolerance{}).ok);
}

TEST(Compare, EmptyTensorsPass) {
  auto r = compare_output(f32({}, {0}), f32({}, {0}), tol(0, 0));
  EXPECT_TRUE(r.ok) << r.reason;
  EXPECT_EQ(r.values, 0);
  EXPECT_EQ(r.matched_ratio, 1.0);
  EXPECT_TRUE(compare_output(f32({}, {2, 0, 3}), f32({}, {2, 0, 3}), tol(0, 0)).ok);
  EXPECT_FALSE(compare_output(f32({}, {0, 2}), f32({}, {2, 0}), tol(0, 0)).ok);
}

TEST(Compare, ZeroDimTensor) {
  Tensor a = f32({2.0f}), b = f32({2.25f});
  a.shape = b.shape = {};
  EXPECT_EQ(a.numel(), 1);
  EXPECT_TRUE(compare_output(a, b, tol(0.25, 0)).ok);
  EXPECT_FALSE(compare_output(a, b, tol(0.125, 0)).ok);
}

TEST(Compare, Bf16ValuesAreComparedAfterTheFloat32Cast) {
  // 0x3f81 = 1.0078125 = 1 + 2^-7.
  Tensor ref = u16(DType::bf16, {0x3f80, 0xc040});
  Tensor out = u16(DType::bf16, {0x3f81, 0xc040});
  EXPECT_TRUE(compare_output(out, ref, tol(0.0078125, 0)).ok);
  EXPECT_FALSE(compare_output(out, ref, tol(0.0078, 0)).ok);
  auto r = compare_output(out, ref, tol(0.01, 0));
  EXPECT_EQ(r.max_abs_err, 0.0078125);
  EXPECT_EQ(r.values, 2);
}

TEST(Compare, Fp16ValuesAreComparedAfterTheFloat32Cast) {
  // 0x3c01 = 1 + 2^-10; 0x7bff = 65504.
  Tensor ref = u16(DType::f16, {0x3c00, 0x7bff});
  Tensor out = u16(DType::f16, {0x3c01, 0x7bff});
  EXPECT_TRUE(compare_output(out, ref, tol(std::ldexp(1.0, -10), 0)).ok);
  EXPECT_FALSE(compare_output(out, ref, tol(std::ldexp(1.0, -11), 0)).ok);
  // fp16 infinity in the output fails like any Inf.
  EXPECT_FALSE(compare_output(u16(DType::f16, {0x3c00, 0x7c00}), ref, tol(1e9, 1e9, 0)).ok);
}

TEST(Compare, Float64IsDownCastToFloat32) {
  // 1 + 1e-12 and 1 are the same float32: equal under zero tolerance.
  EXPECT_TRUE(compare_output(f64({1.0 + 1e-12}), f64({1.0}), tol(0, 0)).ok);
  EXPECT_FALSE(compare_output(f64({1.0 + 1e-6}), f64({1.0}), tol(0, 0)).ok);
  // A float64 beyond the float32 range becomes inf: a non-finite output.
  EXPECT_FALSE(compare_output(f64({1e300}), f64({1.0}), tol(1e9, 1e9, 0)).ok);
}

TEST(Compare, IntegerOutputs) {
  EXPECT_TRUE(compare_output(i32({1, 2, 3}), i32({1, 2, 3}), tol(0, 0)).ok);
  EXPECT_FALSE(compare_output(i32({1, 2, 4}), i32({1, 2, 3}), tol(0.5, 0)).ok);
  EXPECT_TRUE(compare_output(i32({1, 2, 4}), i32({1, 2, 3}), tol(1, 0)).ok);
  // All-zero integer output against a non-zero reference.
  EXPECT_FALSE(compare_output(i32({0, 0}), i32({0, 1}), tol(5, 0)).ok);
}

TEST(Compare, ReportedMaxAbsAndRelErrors) {
  // e = [0.1, 0.005]; rel = e / max(|ref|, atol) = [0.05, 0.005 / 0.01 = 0.5].
  auto r = compare_output(f32({2.1f, 0.006f}), f32({2.0f, 0.001f}), tol(0.01, 0.1));
  EXPECT_TRUE(r.ok) << r.reason;
  EXPECT_NEAR(r.max_abs_err, 0.1, 1e-6);
  EXPECT_NEAR(r.max_rel_err, 0.5, 1e-5);
  // rel uses |ref| once it exceeds atol: e = [0.5, 0.002], rel = [0.25, 0.2].
  auto r2 = compare_output(f32({2.5f, 0.003f}), f32({2.0f, 0.001f}), tol(0.01, 0.0, 0.0));
  EXPECT_NEAR(r2.max_abs_err, 0.5, 1e-6);
  EXPECT_NEAR(r2.max_rel_err, 0.25, 1e-6);
  EXPECT_DOUBLE_EQ(r2.matched_ratio, 0.5);
  // Reported values are also filled when the ratio fails.
  auto r3 = compare_output(f32({3.0f}), f32({-1.0f}), tol(0.01, 0.01));
  EXPECT_FALSE(r3.ok);
  EXPECT_EQ(r3.max_abs_err, 4.0);
  EXPECT_EQ(r3.max_rel_err, 4.0);
  EXPECT_EQ(r3.matched_ratio, 0.0);
}

// ---- Tolerance from a workload line ----

Definition tiny_def() {
  return parse_definition_text(R"({"name": "t", "axes": {"n": {"type": "var"}},
    "inputs": {"x": {"shape": ["n"], "dtype": "float32"}},
    "outputs": {"y": {"shape": ["n"], "dtype": "float32"}},
    "reference": "def run(x):\n    return x"})",
                               "definition.json");
}

Tolerance tol_of(const std::string& tolerance_json) {
  std::string line = R"({"uuid": "u1", "axes": {"n": 4}, "inputs": {"x": {"type": "random"}}})";
  if (!tolerance_json.empty()) line = line.substr(0, line.size() - 1) + R"(, "tolerance": )" + tolerance_json + "}";
  return parse_workload_line(tiny_def(), line, "workload.jsonl", 1, {}).tolerance;
}

TEST(CompareTolerance, DefaultsWhenAbsent) {
  for (const char* t : {"", "null", "{}"}) {
    SCOPED_TRACE(t);
    Tolerance d = tol_of(t);
    EXPECT_EQ(d.max_atol, 1e-2);
    EXPECT_EQ(d.max_rtol, 1e-2);
    EXPECT_EQ(d.required_matched_ratio, 0.99);
    EXPECT_FALSE(d.max_error_cap.has_value());
    EXPECT_FALSE(d.allow_negative_inf);
  }
}

TEST(CompareTolerance, FieldsAreRead) {
  Tolerance t = tol_of(R"({"max_atol": 0.5, "max_rtol": 0, "required_matched_ratio": 0.9,
                           "max_error_cap": 3, "allow_negative_inf": true})");
  EXPECT_EQ(t.max_atol, 0.5);
  EXPECT_EQ(t.max_rtol, 0.0);
  EXPECT_EQ(t.required_matched_ratio, 0.9);
  ASSERT_TRUE(t.max_error_cap.has_value());
  EXPECT_EQ(*t.max_error_cap, 3.0);
  EXPECT_TRUE(t.allow_negative_inf);
  // Unset keys keep their defaults.
  Tolerance p = tol_of(R"({"max_atol": 0.25})");
  EXPECT_EQ(p.max_atol, 0.25);
  EXPECT_EQ(p.max_rtol, 1e-2);
  EXPECT_EQ(p.required_matched_ratio, 0.99);
  EXPECT_FALSE(tol_of(R"({"max_error_cap": null})").max_error_cap.has_value());
}

// The misspelling `required_match_ratio` (858 dev workloads) is ignored, as SOL-ExecBench's harness
// ignores it: the default 0.99 applies. Its value must still be a valid number.
// (Upstream's pydantic model ignores that key and keeps 0.99; see docs/sol-execbench-rules.md §1.4.)
TEST(CompareTolerance, MisspelledRequiredMatchRatioIsIgnoredAsUpstream) {
  EXPECT_EQ(tol_of(R"({"required_match_ratio": 0.5})").required_matched_ratio, 0.99);
  EXPECT_EQ(tol_of(R"({"required_match_ratio": 0.5, "required_matched_ratio": 0.9})").required_matched_ratio, 0.9);
  EXPECT_THROW(tol_of(R"({"required_match_ratio": "x"})"), UserError);
}

TEST(CompareTolerance, BadValuesAreUserErrors) {
  for (const char* t : {R"({"max_atol": "0.1"})", R"({"max_rtol": -1})", R"({"required_matched_ratio": 1.5})",
                        R"({"allow_negative_inf": 1})", R"({"max_error_cap": "big"})", R"([0.1])", R"(0.1)",
                        R"({"max_atl": 0.1})"}) {
    SCOPED_TRACE(t);
    EXPECT_THROW(tol_of(t), UserError);
  }
}

}  // namespace
}  // namespace ka
