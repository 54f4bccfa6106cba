// graph_rt.cpp — KernelArc family graph_host: the runtime of generated host candidates. The
// graph generator (src/graph/codegen_host.cpp) appends a `run` that calls one function per
// operator of the captured graph; this file defines those functions over strided tensors held in
// double precision, each result rounded to the dtype the graph gives it (so bf16/fp16/fp8 round
// exactly where the reference rounds: float first, then the narrow type). Views share storage;
// every other op writes a fresh contiguous tensor. Knobs (defines prepended by KernelArc):
//   KA_GEMM_WORKERS  threads for matrix products (0 = every core, 1 = none)
//   KA_GEMM_NBLOCK   columns of B per task of a matrix product (0 = all)
#include <kernelarc/abi.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <numeric>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#ifndef KA_GEMM_WORKERS
#define KA_GEMM_WORKERS 1
#endif
#ifndef KA_GEMM_NBLOCK
#define KA_GEMM_NBLOCK 256
#endif

namespace kg {

enum DT { F64 = 0, F32, F16, BF16, F8E4, F8E5, F4, F4X2, I64, I32, I16, I8, U8, B };
using Shape = std::vector<int64_t>;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// ───────────────────────────── rounding to a dtype ─────────────────────────────

inline double f2bf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return kNaN;
  u += 0x7fffu + ((u >> 16) & 1u);
  u &= 0xffff0000u;
  float r;
  std::memcpy(&r, &u, 4);
  return r;
}

// Nearest value of a minifloat with `mbits` mantissa bits, exponent bias `bias`, largest finite
// `maxv`; ties to even; beyond the largest finite + half an ulp: `over`.
inline double round_mini(double x, int mbits, int bias, double maxv, double over) {
  if (std::isnan(x)) return kNaN;
  const double a = std::fabs(x);
  if (a == 0) return x;
  int e;
  std::frexp(a, &e);  // a = m * 2^e, m in [0.5, 1)
  int exp = std::max(e - 1, 1 - bias);
  const double ulp = std::ldexp(1.0, exp - mbits);
  const double v0 = std::nearbyint(a / ulp) * ulp;  // ties to even under the default rounding mode
  double v = v0;
  if (v > maxv) v = over;  // rounding (ties to even) went past the largest finite value
  return std::copysign(v, x);
}

inline double f2half(float f) { return round_mini(f, 10, 15, 65504.0, kInf); }

inline double rnd(int dt, double x) {
  switch (dt) {
    case F64: return x;
    case F32: return static_cast<float>(x);
    case F16: return f2half(static_cast<float>(x));
    case BF16: return f2bf16(static_cast<float>(x));
    case F8E4: return round_mini(static_cast<float>(x), 3, 7, 448.0, kNaN);
    case F8E5: return round_mini(static_cast<float>(x), 2, 15, 57344.0, kInf);
    case F4: return round_mini(static_cast<float>(x), 1, 1, 6.0, 6.0);
    case B: return x != 0 ? 1.0 : 0.0;
    default: break;
  }
  if (std::isnan(x)) return 0;
  const double t = std::trunc(x);
  const int64_t i = t >= 9.2e18 ? INT64_MAX : t <= -9.2e18 ? INT64_MIN : static_cast<int64_t>(t);
  switch (dt) {
    case I32: return static_cast<int32_t>(i);
    case I16: return static_cast<int16_t>(i);
    case I8: return static_cast<int8_t>(i);
    case U8: case F4X2: return static_cast<uint8_t>(i);
    default: return static_cast<double>(i);
  }
}

inline bool is_float_dt(int dt) { return dt <= F4; }
inline int64_t imax(int64_t a, int64_t b) { return a > b ? a : b; }
inline int64_t imin(int64_t a, int64_t b) { return a < b ? a : b; }

// ───────────────────────────── tensors ─────────────────────────────

struct T {
  std::shared_ptr<std::vector<double>> buf;
  int64_t off = 0;
  Shape shape, stride;
  int dt = F32;
  int64_t dim() const { return static_cast<int64_t>(shape.size()); }
  int64_t numel() const {
    int64_t n = 1;
    for (auto s : shape) n *= s;
    return n;
  }
  bool contiguous() const {
    int64_t st = 1;
    for (int64_t d = dim() - 1; d >= 0; --d) {
      if (shape[d] != 1 && stride[d] != st) return false;
      st *= shape[d];
    }
    return true;
  }
  double* data() const { return buf->data() + off; }
  double item() const { return (*buf)[off]; }
};

inline Shape contiguous_strides(const Shape& s) {
  Shape st(s.size());
  int64_t acc = 1;
  for (int64_t d = static_cast<int64_t>(s.size()) - 1; d >= 0; --d) {
    st[d] = acc;
    acc *= s[d];
  }
  return st;
}

inline T empty(const Shape& s, int dt) {
  T t;
  t.shape = s;
  t.stride = contiguous_strides(s);
  t.dt = dt;
  int64_t n = 1;
  for (auto x : s) n *= x;
  t.buf = std::make_shared<std::vector<double>>(static_cast<size_t>(std::max<int64_t>(n, 1)), 0.0);
  return t;
}

inline T from_data(const double* d, size_t n, const Shape& s, int dt) {
  T t = empty(s, dt);
  for (size_t i = 0; i < n && i < t.buf->size(); ++i) (*t.buf)[i] = rnd(dt, d[i]);
  if (n == 1) std::fill(t.buf->begin(), t.buf->end(), rnd(dt, d[0]));
  return t;
}

inline T scalar_tensor(double v, int dt) {
  T t = empty({}, dt);
  (*t.buf)[0] = rnd(dt, v);
  return t;
}

inline int64_t wrap_dim(int64_t d, int64_t n) { return d < 0 ? d + n : d; }

// Visits every element of `shape` in row-major order, calling f(linear index, offsets) where
// offsets[k] is the element's offset in the k-th stride set.
template <typename F>
void for_each_index(const Shape& shape, const std::vector<const Shape*>& strides, const std::vector<int64_t>& base, F&& f) {
  const size_t nd = shape.size(), nt = strides.size();
  int64_t n = 1;
  for (auto s : shape) n *= s;
  if (n == 0) return;
  std::vector<int64_t> idx(nd, 0), off(base);
  for (int64_t lin = 0; lin < n; ++lin) {
    f(lin, off.data());
    for (int64_t d = static_cast<int64_t>(nd) - 1; d >= 0; --d) {
      if (++idx[d] < shape[d]) {
        for (size_t k = 0; k < nt; ++k) off[k] += (*strides[k])[d];
        break;
      }
      for (size_t k = 0; k < nt; ++k) off[k] -= (*strides[k])[d] * (shape[d] - 1);
      idx[d] = 0;
    }
  }
}

// A contiguous copy (or the tensor itself when already contiguous from its start).
inline T contig(const T& x) {
  if (x.contiguous()) return x;
  T o = empty(x.shape, x.dt);
  double* dst = o.data();
  const double* src = x.buf->data();
  for_each_index(x.shape, {&x.stride}, {x.off}, [&](int64_t i, const int64_t* off) { dst[i] = src[off[0]]; });
  return o;
}

inline std::vector<double> values(const T& x) {
  T c = contig(x);
  return std::vector<double>(c.data(), c.data() + c.numel());
}

// ───────────────────────────── arguments ─────────────────────────────

struct A {
  enum K { NONE, TEN, INT, FLT, BOOL, STR, LIST } k = NONE;
  T t;
  double f = 0;
  int64_t i = 0;
  std::string s;
  std::vector<A> l;
  A() = default;
  A(const T& x) : k(TEN), t(x) {}
  static A I(int64_t v) { A a; a.k = INT; a.i = v; a.f = static_cast<double>(v); return a; }
  static A F(double v) { A a; a.k = FLT; a.f = v; return a; }
  static A Bo(bool v) { A a; a.k = BOOL; a.i = v; a.f = v; return a; }
  static A S(const std::string& v) { A a; a.k = STR; a.s = v; return a; }
  static A L(std::vector<A> v) { A a; a.k = LIST; a.l = std::move(v); return a; }
  bool none() const { return k == NONE; }
  bool ten() const { return k == TEN; }
  double num() const {
    if (k == TEN) return t.item();
    return (k == INT || k == BOOL) ? static_cast<double>(i) : f;
  }
  int64_t integer() const { return k == TEN ? static_cast<int64_t>(t.item()) : k == FLT ? static_cast<int64_t>(f) : i; }
  Shape ints() const {
    Shape o;
    if (k == LIST)
      for (const auto& x : l) o.push_back(x.integer());
    else if (k != NONE)
      o.push_back(integer());
    return o;
  }
};
using P = std::vector<A>;
using K = std::map<std::string, A>;
using R = std::vector<A>;

inline const A& arg(const P& p, const K& k, size_t i, const char* name) {
  static const A kNone;
  if (i < p.size()) return p[i];
  auto it = k.find(name);
  return it == k.end() ? kNone : it->second;
}

[[noreturn]] inline void fail(const std::string& m) { throw std::runtime_error("graph_host: " + m); }

// A scalar argument as a 0-D tensor of dtype dt (for the pointwise kernels).
inline T as_tensor(const A& a, int dt) { return a.ten() ? a.t : scalar_tensor(a.num(), dt); }
// The precision a Python scalar operand keeps next to a tensor of dtype dt: the op's compute type
// (fp32 for every float of 32 bits or less, so 1/sqrt(d) is not rounded to bf16), exact otherwise.
inline int operand_dt(int dt) { return (dt != F64 && dt <= F4) ? F32 : F64; }
// The two operands of a binary op: tensors as they are, scalars in the compute type of the other.
inline std::vector<T> operands(const A& a, const A& b, int out_dt) {
  const int ref = a.ten() ? a.t.dt : b.ten() ? b.t.dt : out_dt;
  return {as_tensor(a, operand_dt(ref)), as_tensor(b, operand_dt(ref))};
}

// ───────────────────────────── pointwise ─────────────────────────────

inline Shape broadcast_shape(const std::vector<T>& ins) {
  size_t nd = 0;
  for (const auto& t : ins) nd = std::max(nd, t.shape.size());
  Shape out(nd, 1);
  for (const auto& t : ins)
    for (size_t d = 0; d < t.shape.size(); ++d) {
      int64_t& o = out[nd - t.shape.size() + d];
      const int64_t s = t.shape[d];
      if (s != 1) {
        if (o != 1 && o != s) fail("shapes do not broadcast");
        o = s;
      }
    }
  return out;
}

inline Shape broadcast_strides(const T& t, const Shape& out) {
  Shape st(out.size(), 0);
  const size_t lead = out.size() - t.shape.size();
  for (size_t d = 0; d < t.shape.size(); ++d) st[lead + d] = t.shape[d] == 1 ? 0 : t.stride[d];
  return st;
}

// out[i] = rnd(dt, f(inputs at i)), inputs broadcast together.
template <typename F>
T map(const std::vector<T>& ins, int dt, F&& f) {
  const Shape shape = broadcast_shape(ins);
  T o = empty(shape, dt);
  std::vector<Shape> sts;
  for (const auto& t : ins) sts.push_back(broadcast_strides(t, shape));
  std::vector<const Shape*> sp;
  std::vector<int64_t> base;
  std::vector<const double*> src;
  for (size_t k = 0; k < ins.size(); ++k) {
    sp.push_back(&sts[k]);
    base.push_back(ins[k].off);
    src.push_back(ins[k].buf->data());
  }
  double* dst = o.data();
  std::vector<double> v(ins.size());
  for_each_index(shape, sp, base, [&](int64_t i, const int64_t* off) {
    for (size_t k = 0; k < v.size(); ++k) v[k] = src[k][off[k]];
    dst[i] = rnd(dt, f(v.data()));
  });
  return o;
}

// Inputs of float ops are read at the precision the op computes in: fp32 for narrow floats.
inline double compute_in(int out_dt, double x) { return out_dt == F64 ? x : x; }

inline double py_mod(double a, double b) {
  double r = std::fmod(a, b);
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}

inline double gelu(double x, bool tanh_approx) {
  if (tanh_approx) return 0.5 * x * (1 + std::tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)));
  return 0.5 * x * (1 + std::erf(x * 0.7071067811865476));
}

inline int64_t as_i64(double x) { return static_cast<int64_t>(x); }

}  // namespace kg

// The generated run() calls the operators in chunks of lambdas marked KG_GLUE: kept out of line,
// and, with g++, not optimised (they only build arguments; the operators do the work). A graph of
// thousands of nodes then compiles in seconds instead of minutes.
#if defined(__GNUC__) && !defined(__clang__)
#define KG_GLUE __attribute__((noinline, optimize("O0")))
#else
#define KG_GLUE __attribute__((noinline))
#endif

// ───────────────────────────── pointwise operators ─────────────────────────────
// Every operator function: (positional args, keyword args, output dtypes) -> outputs.
#define KG_OP(name) inline kg::R name(const kg::P& p, const kg::K& k, const std::vector<int>& o)
#define KG_UNARY(op, expr)                                                                       \
  KG_OP(aten_##op##_default) {                                                                 \
    (void)k;                                                                                   \
    return {kg::A(kg::map({kg::as_tensor(p[0], o[0])}, o[0], [&](const double* v) { const double x = v[0]; return (expr); }))}; \
  }
#define KG_BINARY2(fname, expr)                                                                   \
  KG_OP(fname) {                                                                                  \
    (void)k;                                                                                      \
    return {kg::A(kg::map(kg::operands(p[0], p[1], o[0]), o[0],                                   \
                          [&](const double* v) { const double a = v[0], b = v[1]; return (expr); }))}; \
  }
#define KG_BINARY(op, expr) KG_BINARY2(aten_##op##_Tensor, expr) KG_BINARY2(aten_##op##_Scalar, expr)

KG_UNARY(abs, std::fabs(x))
KG_UNARY(neg, -x)
KG_UNARY(exp, std::exp(x))
KG_UNARY(exp2, std::exp2(x))
KG_UNARY(expm1, std::expm1(x))
KG_UNARY(log, std::log(x))
KG_UNARY(log2, std::log2(x))
KG_UNARY(log10, std::log10(x))
KG_UNARY(log1p, std::log1p(x))
KG_UNARY(sqrt, std::sqrt(x))
KG_UNARY(rsqrt, 1.0 / std::sqrt(x))
KG_UNARY(sin, std::sin(x))
KG_UNARY(cos, std::cos(x))
KG_UNARY(tan, std::tan(x))
KG_UNARY(asin, std::asin(x))
KG_UNARY(acos, std::acos(x))
KG_UNARY(atan, std::atan(x))
KG_UNARY(sinh, std::sinh(x))
KG_UNARY(cosh, std::cosh(x))
KG_UNARY(tanh, std::tanh(x))
KG_UNARY(asinh, std::asinh(x))
KG_UNARY(acosh, std::acosh(x))
KG_UNARY(atanh, std::atanh(x))
KG_UNARY(erf, std::erf(x))
KG_UNARY(erfc, std::erfc(x))
// sigmoid below fp64 in fp32 arithmetic, as PyTorch computes it: 1 / (1 + exp(-x)) rounded at each
// step saturates to exactly 1.0 from x ≈ 16.6, where the correctly rounded value stays below 1 up to
// x ≈ 17.3; routers that take the top-k of saturated scores break ties on exactly that.
KG_UNARY(sigmoid, o[0] == kg::F64 ? 1.0 / (1.0 + std::exp(-x)) : static_cast<double>(1.0f / (1.0f + std::exp(-static_cast<float>(x)))))
KG_UNARY(reciprocal, 1.0 / x)
KG_UNARY(sign, (x > 0) - (x < 0) + 0.0)
KG_UNARY(sgn, (x > 0) - (x < 0) + 0.0)
KG_UNARY(floor, std::floor(x))
KG_UNARY(ceil, std::ceil(x))
KG_UNARY(trunc, std::trunc(x))
KG_UNARY(frac, x - std::trunc(x))
KG_UNARY(round, std::nearbyint(x))
KG_UNARY(relu, x > 0 ? x : (std::isnan(x) ? x : 0.0))
KG_UNARY(silu, x / (1.0 + std::exp(-x)))
KG_UNARY(logical_not, x == 0 ? 1.0 : 0.0)
KG_UNARY(bitwise_not, o[0] == kg::B ? (x == 0 ? 1.0 : 0.0) : static_cast<double>(~kg::as_i64(x)))
KG_UNARY(isnan, std::isnan(x) ? 1.0 : 0.0)
KG_UNARY(isinf, std::isinf(x) ? 1.0 : 0.0)
KG_UNARY(isfinite, std::isfinite(x) ? 1.0 : 0.0)
KG_UNARY(square, x * x)

KG_BINARY(mul, a * b)
KG_BINARY(maximum, (std::isnan(a) || std::isnan(b)) ? kg::kNaN : std::max(a, b))
KG_BINARY(minimum, (std::isnan(a) || std::isnan(b)) ? kg::kNaN : std::min(a, b))
KG_BINARY(fmax, std::fmax(a, b))
KG_BINARY(fmin, std::fmin(a, b))
KG_BINARY(eq, a == b ? 1.0 : 0.0)
KG_BINARY(ne, a != b ? 1.0 : 0.0)
KG_BINARY(lt, a < b ? 1.0 : 0.0)
KG_BINARY(le, a <= b ? 1.0 : 0.0)
KG_BINARY(gt, a > b ? 1.0 : 0.0)
KG_BINARY(ge, a >= b ? 1.0 : 0.0)
KG_BINARY(logical_and, (a != 0 && b != 0) ? 1.0 : 0.0)
KG_BINARY(logical_or, (a != 0 || b != 0) ? 1.0 : 0.0)
KG_BINARY(logical_xor, ((a != 0) != (b != 0)) ? 1.0 : 0.0)
KG_BINARY(bitwise_and, static_cast<double>(kg::as_i64(a) & kg::as_i64(b)))
KG_BINARY(bitwise_or, static_cast<double>(kg::as_i64(a) | kg::as_i64(b)))
KG_BINARY(bitwise_xor, static_cast<double>(kg::as_i64(a) ^ kg::as_i64(b)))
KG_BINARY(bitwise_left_shift, static_cast<double>(kg::as_i64(a) << kg::as_i64(b)))
KG_BINARY(bitwise_right_shift, static_cast<double>(kg::as_i64(a) >> kg::as_i64(b)))
KG_BINARY(__lshift__, static_cast<double>(kg::as_i64(a) << kg::as_i64(b)))
KG_BINARY(__rshift__, static_cast<double>(kg::as_i64(a) >> kg::as_i64(b)))
KG_BINARY(atan2, std::atan2(a, b))
KG_BINARY(hypot, std::hypot(a, b))
KG_BINARY(copysign, std::copysign(a, b))
KG_BINARY(fmod, kg::is_float_dt(o[0]) ? std::fmod(a, b) : static_cast<double>(kg::as_i64(a) % kg::as_i64(b)))
KG_BINARY(remainder, kg::py_mod(a, b))
KG_BINARY(floor_divide, std::floor(a / b))
// Binary ops whose only overload is .default.
KG_BINARY2(aten_maximum_default, (std::isnan(a) || std::isnan(b)) ? kg::kNaN : std::max(a, b))
KG_BINARY2(aten_minimum_default, (std::isnan(a) || std::isnan(b)) ? kg::kNaN : std::min(a, b))
KG_BINARY2(aten_fmax_default, std::fmax(a, b))
KG_BINARY2(aten_fmin_default, std::fmin(a, b))
KG_BINARY2(aten_logical_and_default, (a != 0 && b != 0) ? 1.0 : 0.0)
KG_BINARY2(aten_logical_or_default, (a != 0 || b != 0) ? 1.0 : 0.0)
KG_BINARY2(aten_logical_xor_default, ((a != 0) != (b != 0)) ? 1.0 : 0.0)
KG_BINARY2(aten_atan2_default, std::atan2(a, b))
KG_BINARY2(aten_hypot_default, std::hypot(a, b))
KG_BINARY2(aten_copysign_default, std::copysign(a, b))
KG_BINARY2(aten_xlogy_default, a == 0 ? 0.0 : a * std::log(b))
KG_BINARY2(aten_pow_Tensor_Tensor, std::pow(a, b))
KG_BINARY2(aten_pow_Tensor_Scalar, std::pow(a, b))
KG_BINARY2(aten_pow_Scalar, std::pow(a, b))
KG_BINARY2(aten_xlogy_Tensor, a == 0 ? 0.0 : a * std::log(b))

inline double alpha_of(const kg::P& p, const kg::K& k) {
  const kg::A& al = kg::arg(p, k, 2, "alpha");
  return al.none() ? 1.0 : al.num();
}
KG_OP(aten_add_Tensor) {
  const double al = alpha_of(p, k);
  return {kg::A(kg::map(kg::operands(p[0], p[1], o[0]), o[0], [&](const double* v) { return v[0] + al * v[1]; }))};
}
KG_OP(aten_sub_Tensor) {
  const double al = alpha_of(p, k);
  return {kg::A(kg::map(kg::operands(p[0], p[1], o[0]), o[0], [&](const double* v) { return v[0] - al * v[1]; }))};
}
KG_OP(aten_rsub_Tensor) {
  const double al = alpha_of(p, k);
  return {kg::A(kg::map(kg::operands(p[0], p[1], o[0]), o[0], [&](const double* v) { return v[1] - al * v[0]; }))};
}
KG_OP(aten_add_Scalar) { return aten_add_Tensor(p, k, o); }
KG_OP(aten_sub_Scalar) { return aten_sub_Tensor(p, k, o); }
KG_OP(aten_rsub_Scalar) { return aten_rsub_Tensor(p, k, o); }

// Division: true division, or rounding_mode "trunc" / "floor" (integers too).
KG_OP(aten_div_Tensor_mode) {
  const kg::A& m = kg::arg(p, k, 2, "rounding_mode");
  const std::string mode = m.k == kg::A::STR ? m.s : "";
  return {kg::A(kg::map(kg::operands(p[0], p[1], o[0]), o[0], [&](const double* v) {
    double q = v[0] / v[1];
    if (!kg::is_float_dt(o[0]) && v[1] == 0) return 0.0;
    if (kg::is_float_dt(o[0]) && o[0] != kg::F64) q = static_cast<float>(v[0]) / static_cast<float>(v[1]);
    return mode == "trunc" ? std::trunc(q) : mode == "floor" ? std::floor(q) : q;
  }))};
}
KG_OP(aten_div_Tensor) { return aten_div_Tensor_mode(p, k, o); }
KG_OP(aten_div_Scalar) { return aten_div_Tensor_mode(p, k, o); }
KG_OP(aten_div_Scalar_mode) { return aten_div_Tensor_mode(p, k, o); }

KG_OP(aten_gelu_default) {
  const kg::A& ap = kg::arg(p, k, 1, "approximate");
  const bool t = ap.k == kg::A::STR && ap.s == "tanh";
  return {kg::A(kg::map({p[0].t}, o[0], [&](const double* v) { return kg::gelu(v[0], t); }))};
}

KG_OP(aten_where_self) {
  (void)k;
  const int dt = o[0];
  return {kg::A(kg::map({kg::as_tensor(p[0], kg::B), kg::as_tensor(p[1], dt), kg::as_tensor(p[2], dt)}, o[0],
                        [&](const double* v) { return v[0] != 0 ? v[1] : v[2]; }))};
}
KG_OP(aten_where_ScalarSelf) { return aten_where_self(p, k, o); }
KG_OP(aten_where_ScalarOther) { return aten_where_self(p, k, o); }
KG_OP(aten_where_Scalar) { return aten_where_self(p, k, o); }

KG_OP(aten_clamp_default) {
  const kg::A& lo = kg::arg(p, k, 1, "min");
  const kg::A& hi = kg::arg(p, k, 2, "max");
  const int dt = p[0].t.dt;
  std::vector<kg::T> ins{p[0].t};
  ins.push_back(lo.none() ? kg::scalar_tensor(-kg::kInf, kg::F64) : kg::as_tensor(lo, dt));
  ins.push_back(hi.none() ? kg::scalar_tensor(kg::kInf, kg::F64) : kg::as_tensor(hi, dt));
  return {kg::A(kg::map(ins, o[0], [&](const double* v) {
    if (std::isnan(v[0])) return v[0];
    return std::min(std::max(v[0], v[1]), v[2]);
  }))};
}
KG_OP(aten_clamp_Tensor) { return aten_clamp_default(p, k, o); }
KG_OP(aten_clamp_min_default) { return aten_clamp_default({p[0], p[1]}, {}, o); }
KG_OP(aten_clamp_max_default) { return aten_clamp_default({p[0], kg::A(), p[1]}, {}, o); }
KG_OP(aten_clamp_min_Tensor) { return aten_clamp_default({p[0], p[1]}, {}, o); }
KG_OP(aten_clamp_max_Tensor) { return aten_clamp_default({p[0], kg::A(), p[1]}, {}, o); }

KG_OP(aten_lerp_Scalar) {
  (void)k;
  return {kg::A(kg::map({p[0].t, p[1].t, kg::as_tensor(p[2], p[0].t.dt)}, o[0],
                        [&](const double* v) { return v[0] + v[2] * (v[1] - v[0]); }))};
}
KG_OP(aten_lerp_Tensor) { return aten_lerp_Scalar(p, k, o); }

KG_OP(aten_masked_fill_Scalar) {
  (void)k;
  return {kg::A(kg::map({p[0].t, kg::as_tensor(p[1], kg::B), kg::as_tensor(p[2], p[0].t.dt)}, o[0],
                        [&](const double* v) { return v[1] != 0 ? v[2] : v[0]; }))};
}
KG_OP(aten_masked_fill_Tensor) { return aten_masked_fill_Scalar(p, k, o); }

// Dtype conversion (and copies): rounds to the output dtype.
KG_OP(aten__to_copy_default) {
  (void)k;
  return {kg::A(kg::map({p[0].t}, o[0], [&](const double* v) { return v[0]; }))};
}
KG_OP(prims_convert_element_type_default) { return aten__to_copy_default(p, k, o); }
KG_OP(aten_clone_default) { return aten__to_copy_default(p, k, o); }
KG_OP(aten_lift_fresh_copy_default) { return aten__to_copy_default(p, k, o); }
KG_OP(aten_contiguous_default) { return aten__to_copy_default(p, k, o); }
KG_OP(aten_copy_default) {  // copy(self, src): src broadcast to self's shape, self's dtype
  (void)k;
  kg::T z = kg::empty(p[0].t.shape, o[0]);
  return {kg::A(kg::map({z, kg::as_tensor(p[1], o[0])}, o[0], [&](const double* v) { return v[1]; }))};
}
KG_OP(aten_scalar_tensor_default) { (void)k; return {kg::A(kg::scalar_tensor(p[0].num(), o[0]))}; }
KG_OP(aten_full_default) { (void)k; kg::T t = kg::empty(p[0].ints(), o[0]); std::fill(t.buf->begin(), t.buf->end(), kg::rnd(o[0], p[1].num())); return {kg::A(t)}; }
KG_OP(aten_full_like_default) { (void)k; kg::T t = kg::empty(p[0].t.shape, o[0]); std::fill(t.buf->begin(), t.buf->end(), kg::rnd(o[0], p[1].num())); return {kg::A(t)}; }
KG_OP(aten_zeros_default) { (void)k; return {kg::A(kg::empty(p[0].ints(), o[0]))}; }
KG_OP(aten_zeros_like_default) { (void)k; return {kg::A(kg::empty(p[0].t.shape, o[0]))}; }
KG_OP(aten_ones_like_default) { return aten_full_like_default({p[0], kg::A::F(1)}, k, o); }
KG_OP(aten_ones_default) { return aten_full_default({p[0], kg::A::F(1)}, k, o); }
KG_OP(aten_empty_memory_format) { (void)k; return {kg::A(kg::empty(p[0].ints(), o[0]))}; }
KG_OP(aten_empty_strided_default) { (void)k; return {kg::A(kg::empty(p[0].ints(), o[0]))}; }
KG_OP(aten_empty_like_default) { (void)k; return {kg::A(kg::empty(p[0].t.shape, o[0]))}; }
KG_OP(aten_new_zeros_default) { (void)k; return {kg::A(kg::empty(p[1].ints(), o[0]))}; }
KG_OP(aten_new_empty_default) { (void)k; return {kg::A(kg::empty(p[1].ints(), o[0]))}; }
KG_OP(aten_new_full_default) { return aten_full_default({p[1], p[2]}, k, o); }
KG_OP(aten_new_ones_default) { return aten_full_default({p[1], kg::A::F(1)}, k, o); }

KG_OP(aten_arange_start_step) {
  const double start = p.size() > 0 ? p[0].num() : 0, end = p.size() > 1 ? p[1].num() : 0;
  const kg::A& st = kg::arg(p, k, 2, "step");
  const double step = st.none() ? 1.0 : st.num();
  const int64_t n = static_cast<int64_t>(std::ceil((end - start) / step));
  kg::T t = kg::empty({std::max<int64_t>(n, 0)}, o[0]);
  for (int64_t i = 0; i < n; ++i) t.data()[i] = kg::rnd(o[0], start + static_cast<double>(i) * step);
  return {kg::A(t)};
}
KG_OP(aten_arange_start) { return aten_arange_start_step({p[0], p[1]}, {}, o); }
KG_OP(aten_arange_default) { (void)k; return aten_arange_start_step({kg::A::I(0), p[0]}, {}, o); }
KG_OP(aten_iota_default) {
  const int64_t n = p[0].integer();
  const double start = p[1].num(), step = p[2].num();
  (void)k;
  kg::T t = kg::empty({n}, o[0]);
  for (int64_t i = 0; i < n; ++i) t.data()[i] = start + step * static_cast<double>(i);
  return {kg::A(t)};
}

// No-ops of the exported graph.
KG_OP(aten__assert_tensor_metadata_default) { (void)p; (void)k; (void)o; return {}; }
KG_OP(aten__assert_scalar_default) { (void)p; (void)k; (void)o; return {}; }
KG_OP(aten_sym_constrain_range_for_size_default) { (void)p; (void)k; (void)o; return {}; }
KG_OP(aten__assert_async_msg) { (void)p; (void)k; (void)o; return {}; }
KG_OP(aten_sym_size_int) { (void)k; (void)o; return {kg::A::I(p[0].t.shape[kg::wrap_dim(p[1].integer(), p[0].t.dim())])}; }
KG_OP(aten_sym_numel_default) { (void)k; (void)o; return {kg::A::I(p[0].t.numel())}; }
KG_OP(aten_sym_stride_int) { (void)k; (void)o; return {kg::A::I(p[0].t.stride[kg::wrap_dim(p[1].integer(), p[0].t.dim())])}; }
KG_OP(aten__local_scalar_dense_default) { (void)k; (void)o; return {kg::A::F(p[0].t.item())}; }
KG_OP(aten_item_default) { (void)k; (void)o; return {kg::A::F(p[0].t.item())}; }

#include "rt_views.h"
#include "rt_reduce.h"
#include "rt_layout.h"
#include "rt_products.h"
#include "rt_norm_scalar.h"
