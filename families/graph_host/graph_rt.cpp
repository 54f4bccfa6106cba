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
KG_UNARY(sigmoid, 1.0 / (1.0 + std::exp(-x)))
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

// ───────────────────────────── views (shared storage) ─────────────────────────────
namespace kg {

inline Shape infer_shape(Shape s, int64_t numel) {
  int64_t known = 1, neg = -1;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == -1) neg = static_cast<int64_t>(i);
    else known *= s[i];
  }
  if (neg >= 0) s[neg] = known == 0 ? 0 : numel / known;
  return s;
}

// Strides of `x` reshaped to `s` without copying, when they exist (torch's computeStride rule).
inline bool view_strides(const T& x, const Shape& s, Shape& out) {
  out.assign(s.size(), 0);
  if (x.numel() == 0 || x.dim() == 0) { out = contiguous_strides(s); return true; }
  int64_t view_d = static_cast<int64_t>(s.size()) - 1;
  int64_t base = x.stride.back(), tensor_numel = 1, view_numel = 1;
  for (int64_t d = x.dim() - 1; d >= 0; --d) {
    tensor_numel *= x.shape[d];
    if (d == 0 || (x.shape[d - 1] != 1 && x.stride[d - 1] != tensor_numel * base)) {
      while (view_d >= 0 && (view_numel < tensor_numel || s[view_d] == 1)) {
        out[view_d] = view_numel * base;
        view_numel *= s[view_d];
        --view_d;
      }
      if (view_numel != tensor_numel) return false;
      if (d > 0) { base = x.stride[d - 1]; tensor_numel = 1; view_numel = 1; }
    }
  }
  return view_d == -1;
}

inline T reshape(const T& x, const Shape& s0) {
  const Shape s = infer_shape(s0, x.numel());
  Shape st;
  T v = x;
  if (!view_strides(x, s, st)) {
    v = contig(x);
    st = contiguous_strides(s);
  }
  v.shape = s;
  v.stride = st;
  return v;
}

inline T permute(const T& x, const Shape& perm) {
  T v = x;
  for (size_t i = 0; i < perm.size(); ++i) {
    const int64_t d = wrap_dim(perm[i], x.dim());
    v.shape[i] = x.shape[d];
    v.stride[i] = x.stride[d];
  }
  return v;
}

inline T expand(const T& x, const Shape& s) {
  T v = x;
  v.shape = s;
  v.stride.assign(s.size(), 0);
  const size_t lead = s.size() - x.shape.size();
  for (size_t d = 0; d < s.size(); ++d) {
    if (d < lead) continue;
    const int64_t xs = x.shape[d - lead];
    if (s[d] == -1) v.shape[d] = xs;
    v.stride[d] = (xs == 1 && v.shape[d] != 1) ? 0 : x.stride[d - lead];
  }
  return v;
}

inline T slice(const T& x, int64_t dim, int64_t start, int64_t end, int64_t step) {
  dim = wrap_dim(dim, x.dim());
  const int64_t n = x.shape[dim];
  if (start < 0) start += n;
  if (end < 0) end += n;
  start = std::clamp<int64_t>(start, 0, n);
  end = std::clamp<int64_t>(end, start, n);
  T v = x;
  v.off += start * x.stride[dim];
  v.shape[dim] = (end - start + step - 1) / step;
  v.stride[dim] *= step;
  return v;
}

inline T select(const T& x, int64_t dim, int64_t index) {
  dim = wrap_dim(dim, x.dim());
  if (index < 0) index += x.shape[dim];
  T v = x;
  v.off += index * x.stride[dim];
  v.shape.erase(v.shape.begin() + dim);
  v.stride.erase(v.stride.begin() + dim);
  return v;
}

inline T unsqueeze(const T& x, int64_t dim) {
  dim = wrap_dim(dim, x.dim() + 1);
  T v = x;
  const int64_t st = dim < x.dim() ? x.shape[dim] * x.stride[dim] : 1;
  v.shape.insert(v.shape.begin() + dim, 1);
  v.stride.insert(v.stride.begin() + dim, st);
  return v;
}

inline T squeeze(const T& x, Shape dims) {
  if (dims.empty())
    for (int64_t d = 0; d < x.dim(); ++d) dims.push_back(d);
  T v;
  v.buf = x.buf; v.off = x.off; v.dt = x.dt;
  for (int64_t d = 0; d < x.dim(); ++d) {
    bool drop = false;
    for (auto e : dims)
      if (wrap_dim(e, x.dim()) == d && x.shape[d] == 1) drop = true;
    if (!drop) { v.shape.push_back(x.shape[d]); v.stride.push_back(x.stride[d]); }
  }
  return v;
}

}  // namespace kg

KG_OP(aten_view_default) { (void)k; (void)o; return {kg::A(kg::reshape(p[0].t, p[1].ints()))}; }
KG_OP(aten__unsafe_view_default) { return aten_view_default(p, k, o); }
KG_OP(aten_reshape_default) { return aten_view_default(p, k, o); }
KG_OP(aten_permute_default) { (void)k; (void)o; return {kg::A(kg::permute(p[0].t, p[1].ints()))}; }
KG_OP(aten_expand_default) { (void)k; (void)o; return {kg::A(kg::expand(p[0].t, p[1].ints()))}; }
KG_OP(aten_expand_copy_default) { return aten_expand_default(p, k, o); }
KG_OP(aten_alias_default) { (void)k; (void)o; return {p[0]}; }
KG_OP(aten_detach_default) { (void)k; (void)o; return {p[0]}; }
KG_OP(aten_unsqueeze_default) { (void)k; (void)o; return {kg::A(kg::unsqueeze(p[0].t, p[1].integer()))}; }
KG_OP(aten_squeeze_dim) { (void)k; (void)o; return {kg::A(kg::squeeze(p[0].t, {p[1].integer()}))}; }
KG_OP(aten_squeeze_dims) { (void)k; (void)o; return {kg::A(kg::squeeze(p[0].t, p[1].ints()))}; }
KG_OP(aten_squeeze_default) { (void)k; (void)o; return {kg::A(kg::squeeze(p[0].t, {}))}; }
KG_OP(aten_t_default) { (void)k; (void)o; return {kg::A(p[0].t.dim() < 2 ? p[0].t : kg::permute(p[0].t, {1, 0}))}; }
KG_OP(aten_transpose_int) {
  (void)k; (void)o;
  const int64_t n = p[0].t.dim();
  kg::Shape perm(static_cast<size_t>(n));
  std::iota(perm.begin(), perm.end(), 0);
  std::swap(perm[kg::wrap_dim(p[1].integer(), n)], perm[kg::wrap_dim(p[2].integer(), n)]);
  return {kg::A(kg::permute(p[0].t, perm))};
}
KG_OP(aten_slice_Tensor) {
  const kg::A& d = kg::arg(p, k, 1, "dim");
  const kg::A& s = kg::arg(p, k, 2, "start");
  const kg::A& e = kg::arg(p, k, 3, "end");
  const kg::A& st = kg::arg(p, k, 4, "step");
  (void)o;
  const int64_t end = e.none() ? INT64_MAX / 2 : std::min<int64_t>(e.integer(), INT64_MAX / 2);
  return {kg::A(kg::slice(p[0].t, d.none() ? 0 : d.integer(), s.none() ? 0 : s.integer(), end, st.none() ? 1 : st.integer()))};
}
KG_OP(aten_select_int) { (void)k; (void)o; return {kg::A(kg::select(p[0].t, p[1].integer(), p[2].integer()))}; }
KG_OP(aten_as_strided_default) {
  (void)o;
  kg::T v = p[0].t;
  v.shape = p[1].ints();
  v.stride = p[2].ints();
  const kg::A& so = kg::arg(p, k, 3, "storage_offset");
  if (!so.none()) v.off = so.integer();
  return {kg::A(v)};
}
KG_OP(aten_split_with_sizes_default) {
  const kg::Shape sizes = p[1].ints();
  const kg::A& d = kg::arg(p, k, 2, "dim");
  const int64_t dim = d.none() ? 0 : d.integer();
  (void)o;
  kg::R out;
  int64_t start = 0;
  for (auto s : sizes) { out.push_back(kg::A(kg::slice(p[0].t, dim, start, start + s, 1))); start += s; }
  return out;
}
KG_OP(aten_split_Tensor) {
  const int64_t sz = p[1].integer();
  const kg::A& d = kg::arg(p, k, 2, "dim");
  const int64_t dim = kg::wrap_dim(d.none() ? 0 : d.integer(), p[0].t.dim());
  kg::Shape sizes;
  for (int64_t s = 0; s < p[0].t.shape[dim]; s += sz) sizes.push_back(std::min(sz, p[0].t.shape[dim] - s));
  std::vector<kg::A> l;
  for (auto s : sizes) l.push_back(kg::A::I(s));
  return aten_split_with_sizes_default({p[0], kg::A::L(l), kg::A::I(dim)}, {}, o);
}
KG_OP(aten_unbind_int) {
  const kg::A& d = kg::arg(p, k, 1, "dim");
  const int64_t dim = d.none() ? 0 : d.integer();
  (void)o;
  kg::R out;
  for (int64_t i = 0; i < p[0].t.shape[kg::wrap_dim(dim, p[0].t.dim())]; ++i) out.push_back(kg::A(kg::select(p[0].t, dim, i)));
  return out;
}
KG_OP(aten_unfold_default) {  // unfold(self, dim, size, step)
  (void)k; (void)o;
  const kg::T& x = p[0].t;
  const int64_t dim = kg::wrap_dim(p[1].integer(), x.dim()), size = p[2].integer(), step = p[3].integer();
  kg::T v = x;
  v.shape[dim] = (x.shape[dim] - size) / step + 1;
  v.stride[dim] = x.stride[dim] * step;
  v.shape.push_back(size);
  v.stride.push_back(x.stride[dim]);
  return {kg::A(v)};
}
KG_OP(aten_diagonal_default) {
  (void)o;
  const kg::T& x = p[0].t;
  const kg::A& of = kg::arg(p, k, 1, "offset");
  const kg::A& a1 = kg::arg(p, k, 2, "dim1");
  const kg::A& a2 = kg::arg(p, k, 3, "dim2");
  const int64_t off = of.none() ? 0 : of.integer();
  const int64_t d1 = kg::wrap_dim(a1.none() ? 0 : a1.integer(), x.dim()), d2 = kg::wrap_dim(a2.none() ? 1 : a2.integer(), x.dim());
  kg::T v;
  v.buf = x.buf; v.dt = x.dt; v.off = x.off;
  int64_t n;
  if (off >= 0) { v.off += off * x.stride[d2]; n = std::max<int64_t>(0, std::min(x.shape[d1], x.shape[d2] - off)); }
  else { v.off -= off * x.stride[d1]; n = std::max<int64_t>(0, std::min(x.shape[d1] + off, x.shape[d2])); }
  for (int64_t d = 0; d < x.dim(); ++d)
    if (d != d1 && d != d2) { v.shape.push_back(x.shape[d]); v.stride.push_back(x.stride[d]); }
  v.shape.push_back(n);
  v.stride.push_back(x.stride[d1] + x.stride[d2]);
  return {kg::A(v)};
}

// ───────────────────────────── storage formats ─────────────────────────────
namespace kg {

inline int dt_bytes(int dt) {
  switch (dt) {
    case F64: case I64: return 8;
    case F32: case I32: return 4;
    case F16: case BF16: case I16: return 2;
    default: return 1;
  }
}

inline uint64_t mini_bits(double v, int mbits, int ebits, int bias, bool has_inf) {
  const uint64_t sign = std::signbit(v) ? 1u : 0u;
  const int total = 1 + ebits + mbits;
  if (std::isnan(v)) return has_inf ? ((uint64_t(1) << (total - 1)) - 1) : ((uint64_t(1) << (total - 1)) - 1);
  double a = std::fabs(v);
  uint64_t mag;
  if (std::isinf(a)) mag = has_inf ? (((uint64_t(1) << ebits) - 1) << mbits) : ((uint64_t(1) << (total - 1)) - 1);
  else if (a == 0) mag = 0;
  else {
    int e;
    std::frexp(a, &e);
    int E = e - 1 + bias;
    if (E <= 0) mag = static_cast<uint64_t>(std::nearbyint(a / std::ldexp(1.0, 1 - bias - mbits)));
    else mag = (static_cast<uint64_t>(E) << mbits) | static_cast<uint64_t>(std::nearbyint((a / std::ldexp(1.0, e - 1) - 1) * (1 << mbits)));
  }
  return (sign << (total - 1)) | mag;
}

inline double mini_value(uint64_t b, int mbits, int ebits, int bias, bool has_inf, bool fn_nan) {
  const int total = 1 + ebits + mbits;
  const bool neg = (b >> (total - 1)) & 1;
  const uint64_t E = (b >> mbits) & ((uint64_t(1) << ebits) - 1), M = b & ((uint64_t(1) << mbits) - 1);
  double v;
  if (fn_nan && E == (uint64_t(1) << ebits) - 1 && M == (uint64_t(1) << mbits) - 1) return kNaN;
  if (has_inf && E == (uint64_t(1) << ebits) - 1) v = M ? kNaN : kInf;
  else if (E == 0) v = std::ldexp(static_cast<double>(M), 1 - bias - mbits);
  else v = std::ldexp(1.0 + static_cast<double>(M) / (1 << mbits), static_cast<int>(E) - bias);
  return neg ? -v : v;
}

inline uint64_t to_bits(int dt, double v) {
  switch (dt) {
    case F64: { uint64_t u; std::memcpy(&u, &v, 8); return u; }
    case F32: { float f = static_cast<float>(v); uint32_t u; std::memcpy(&u, &f, 4); return u; }
    case BF16: { float f = static_cast<float>(f2bf16(static_cast<float>(v))); uint32_t u; std::memcpy(&u, &f, 4); return std::isnan(v) ? 0x7fc0 : (u >> 16); }
    case F16: return mini_bits(f2half(static_cast<float>(v)), 10, 5, 15, true);
    case F8E4: return mini_bits(v, 3, 4, 7, false) & 0xff;
    case F8E5: return mini_bits(v, 2, 5, 15, true) & 0xff;
    case F4: return mini_bits(v, 1, 2, 1, false) & 0xf;
    default: {
      const int64_t i = static_cast<int64_t>(v);
      return static_cast<uint64_t>(i) & (dt_bytes(dt) == 8 ? ~uint64_t(0) : ((uint64_t(1) << (8 * dt_bytes(dt))) - 1));
    }
  }
}

inline double from_bits(int dt, uint64_t b) {
  switch (dt) {
    case F64: { double d; std::memcpy(&d, &b, 8); return d; }
    case F32: { uint32_t u = static_cast<uint32_t>(b); float f; std::memcpy(&f, &u, 4); return f; }
    case BF16: { uint32_t u = static_cast<uint32_t>(b) << 16; float f; std::memcpy(&f, &u, 4); return f; }
    case F16: return mini_value(b, 10, 5, 15, true, false);
    case F8E4: return mini_value(b, 3, 4, 7, false, true);
    case F8E5: return mini_value(b, 2, 5, 15, true, false);
    case F4: return mini_value(b & 0xf, 1, 2, 1, false, false);
    case I64: return static_cast<double>(static_cast<int64_t>(b));
    case I32: return static_cast<int32_t>(static_cast<uint32_t>(b));
    case I16: return static_cast<int16_t>(static_cast<uint16_t>(b));
    case I8: return static_cast<int8_t>(static_cast<uint8_t>(b));
    case B: return (b & 0xff) ? 1.0 : 0.0;
    default: return static_cast<double>(b & 0xff);
  }
}

// Reinterprets the bytes of x as dtype `to` (sizes may differ by an integer ratio on the last dim).
inline T bitcast(const T& x, int to) {
  const int fb = dt_bytes(x.dt), tb = dt_bytes(to);
  const std::vector<double> v = values(x);
  std::vector<uint8_t> bytes(v.size() * static_cast<size_t>(fb));
  for (size_t i = 0; i < v.size(); ++i) {
    const uint64_t b = to_bits(x.dt, v[i]);
    std::memcpy(bytes.data() + i * fb, &b, static_cast<size_t>(fb));
  }
  Shape s = x.shape;
  if (!s.empty()) s.back() = s.back() * fb / tb;
  T o = empty(s, to);
  for (int64_t i = 0; i < o.numel(); ++i) {
    uint64_t b = 0;
    std::memcpy(&b, bytes.data() + i * tb, static_cast<size_t>(tb));
    o.data()[i] = from_bits(to, b);
  }
  return o;
}

// Native-ABI I/O: a TensorArg (contiguous, its dtype) to a tensor and back.
inline T load(const ka::TensorArg& a) {
  Shape s(a.shape, a.shape + a.ndim);
  T t = empty(s, a.dtype);
  const int64_t n = t.numel();
  const int b = dt_bytes(a.dtype);
  const auto* src = static_cast<const uint8_t*>(a.data);
  for (int64_t i = 0; i < n; ++i) {
    uint64_t bits = 0;
    std::memcpy(&bits, src + i * b, static_cast<size_t>(b));
    t.data()[i] = from_bits(a.dtype, bits);
  }
  return t;
}

inline void store(const T& x, const ka::TensorArg& a) {
  const std::vector<double> v = values(x);
  const int b = dt_bytes(a.dtype);
  if (static_cast<int64_t>(v.size()) != ka::TensorArg(a).numel()) fail("output size differs from the definition's");
  auto* dst = static_cast<uint8_t*>(a.data);
  for (size_t i = 0; i < v.size(); ++i) {
    const uint64_t bits = to_bits(a.dtype, rnd(a.dtype, v[i]));
    std::memcpy(dst + i * b, &bits, static_cast<size_t>(b));
  }
}

}  // namespace kg

KG_OP(aten_view_dtype) { (void)k; return {kg::A(kg::bitcast(p[0].t, o[0]))}; }

// ───────────────────────────── reductions ─────────────────────────────
namespace kg {

// x with the reduced dims moved last, contiguous: rows of `inner` elements, one per kept index.
struct Rows {
  T c;
  int64_t rows = 1, inner = 1;
  Shape kept_shape, keepdim_shape;
};

inline Rows to_rows(const T& x, Shape dims) {
  const int64_t n = x.dim();
  std::vector<bool> red(static_cast<size_t>(n), false);
  if (dims.empty())
    for (int64_t d = 0; d < n; ++d) red[d] = true;
  for (auto d : dims) red[wrap_dim(d, n)] = true;
  Shape perm;
  Rows r;
  for (int64_t d = 0; d < n; ++d)
    if (!red[d]) { perm.push_back(d); r.kept_shape.push_back(x.shape[d]); r.rows *= x.shape[d]; }
  for (int64_t d = 0; d < n; ++d)
    if (red[d]) { perm.push_back(d); r.inner *= x.shape[d]; }
  for (int64_t d = 0; d < n; ++d) r.keepdim_shape.push_back(red[d] ? 1 : x.shape[d]);
  r.c = contig(permute(x, perm));
  return r;
}

// out[row] = f(row pointer, inner) for every kept index.
template <typename F>
T reduce(const T& x, const Shape& dims, bool keepdim, int dt, F&& f) {
  Rows r = to_rows(x, dims);
  T o = empty(keepdim ? r.keepdim_shape : r.kept_shape, dt);
  for (int64_t i = 0; i < r.rows; ++i) o.data()[i] = rnd(dt, f(r.c.data() + i * r.inner, r.inner));
  return o;
}

inline Shape dims_arg(const A& a) { return a.none() ? Shape{} : a.ints(); }

}  // namespace kg

inline bool kw_bool(const kg::P& p, const kg::K& k, size_t i, const char* n) {
  const kg::A& a = kg::arg(p, k, i, n);
  return !a.none() && a.num() != 0;
}

KG_OP(aten_sum_dim_IntList) {
  return {kg::A(kg::reduce(p[0].t, kg::dims_arg(kg::arg(p, k, 1, "dim")), kw_bool(p, k, 2, "keepdim"), o[0], [](const double* r, int64_t n) {
    double s = 0;
    for (int64_t i = 0; i < n; ++i) s += r[i];
    return s;
  }))};
}
KG_OP(aten_sum_default) { return aten_sum_dim_IntList({p[0]}, {}, o); }
KG_OP(aten_mean_dim) {
  return {kg::A(kg::reduce(p[0].t, kg::dims_arg(kg::arg(p, k, 1, "dim")), kw_bool(p, k, 2, "keepdim"), o[0], [](const double* r, int64_t n) {
    double s = 0;
    for (int64_t i = 0; i < n; ++i) s += r[i];
    return s / static_cast<double>(n);
  }))};
}
KG_OP(aten_mean_default) { return aten_mean_dim({p[0]}, {}, o); }
KG_OP(aten_prod_dim_int) {
  return {kg::A(kg::reduce(p[0].t, {p[1].integer()}, kw_bool(p, k, 2, "keepdim"), o[0], [](const double* r, int64_t n) {
    double s = 1;
    for (int64_t i = 0; i < n; ++i) s *= r[i];
    return s;
  }))};
}
KG_OP(aten_prod_default) {
  return {kg::A(kg::reduce(p[0].t, {}, false, o[0], [](const double* r, int64_t n) {
    double s = 1;
    for (int64_t i = 0; i < n; ++i) s *= r[i];
    return s;
  }))};
}
inline double red_max(const double* r, int64_t n) {
  double m = -kg::kInf;
  for (int64_t i = 0; i < n; ++i) { if (std::isnan(r[i])) return r[i]; m = std::max(m, r[i]); }
  return m;
}
inline double red_min(const double* r, int64_t n) {
  double m = kg::kInf;
  for (int64_t i = 0; i < n; ++i) { if (std::isnan(r[i])) return r[i]; m = std::min(m, r[i]); }
  return m;
}
KG_OP(aten_amax_default) { return {kg::A(kg::reduce(p[0].t, kg::dims_arg(kg::arg(p, k, 1, "dim")), kw_bool(p, k, 2, "keepdim"), o[0], red_max))}; }
KG_OP(aten_amin_default) { return {kg::A(kg::reduce(p[0].t, kg::dims_arg(kg::arg(p, k, 1, "dim")), kw_bool(p, k, 2, "keepdim"), o[0], red_min))}; }
KG_OP(aten_max_default) { return {kg::A(kg::reduce(p[0].t, {}, false, o[0], red_max))}; }
KG_OP(aten_min_default) { return {kg::A(kg::reduce(p[0].t, {}, false, o[0], red_min))}; }
inline int64_t arg_best(const double* r, int64_t n, bool want_max) {
  int64_t b = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (std::isnan(r[i])) return i;
    if (want_max ? r[i] > r[b] : r[i] < r[b]) b = i;
  }
  return b;
}
inline kg::R max_min_dim(const kg::P& p, const kg::K& k, const std::vector<int>& o, bool want_max) {
  const int64_t dim = p[1].integer();
  const bool keep = kw_bool(p, k, 2, "keepdim");
  kg::T v = kg::reduce(p[0].t, {dim}, keep, o[0], [&](const double* r, int64_t n) { return r[arg_best(r, n, want_max)]; });
  kg::T i = kg::reduce(p[0].t, {dim}, keep, o.size() > 1 ? o[1] : kg::I64,
                       [&](const double* r, int64_t n) { return static_cast<double>(arg_best(r, n, want_max)); });
  return {kg::A(v), kg::A(i)};
}
KG_OP(aten_max_dim) { return max_min_dim(p, k, o, true); }
KG_OP(aten_min_dim) { return max_min_dim(p, k, o, false); }
inline kg::R arg_dim(const kg::P& p, const kg::K& k, const std::vector<int>& o, bool want_max) {
  const kg::A& d = kg::arg(p, k, 1, "dim");
  const bool keep = kw_bool(p, k, 2, "keepdim");
  kg::T x = d.none() ? kg::reshape(p[0].t, {-1}) : p[0].t;
  return {kg::A(kg::reduce(x, {d.none() ? 0 : d.integer()}, keep && !d.none(), o[0],
                           [&](const double* r, int64_t n) { return static_cast<double>(arg_best(r, n, want_max)); }))};
}
KG_OP(aten_argmax_default) { return arg_dim(p, k, o, true); }
KG_OP(aten_argmin_default) { return arg_dim(p, k, o, false); }
KG_OP(aten_var_correction) {
  const kg::A& c = kg::arg(p, k, 2, "correction");
  const double corr = c.none() ? 1.0 : c.num();
  return {kg::A(kg::reduce(p[0].t, kg::dims_arg(kg::arg(p, k, 1, "dim")), kw_bool(p, k, 3, "keepdim"), o[0], [&](const double* r, int64_t n) {
    double m = 0, s = 0;
    for (int64_t i = 0; i < n; ++i) m += r[i];
    m /= static_cast<double>(n);
    for (int64_t i = 0; i < n; ++i) s += (r[i] - m) * (r[i] - m);
    return s / std::max(0.0, static_cast<double>(n) - corr);
  }))};
}
KG_OP(aten_var_mean_correction) {
  kg::R v = aten_var_correction(p, k, {o[0]});
  const kg::R m = aten_mean_dim({p[0], kg::arg(p, k, 1, "dim"), kg::A::Bo(kw_bool(p, k, 3, "keepdim"))}, {}, {o.size() > 1 ? o[1] : o[0]});
  return {v[0], m[0]};
}
inline kg::R any_all(const kg::P& p, const kg::K& k, const std::vector<int>& o, bool any) {
  return {kg::A(kg::reduce(p[0].t, kg::dims_arg(kg::arg(p, k, 1, "dim")), kw_bool(p, k, 2, "keepdim"), o[0], [&](const double* r, int64_t n) {
    for (int64_t i = 0; i < n; ++i)
      if ((r[i] != 0) == any) return any ? 1.0 : 0.0;
    return any ? 0.0 : 1.0;
  }))};
}
KG_OP(aten_any_dim) { kg::P q = p; if (q.size() > 1 && q[1].k == kg::A::INT) q[1] = kg::A::L({q[1]}); return any_all(q, k, o, true); }
KG_OP(aten_any_dims) { return any_all(p, k, o, true); }
KG_OP(aten_any_default) { return any_all({p[0]}, {}, o, true); }
KG_OP(aten_all_dim) { kg::P q = p; if (q.size() > 1 && q[1].k == kg::A::INT) q[1] = kg::A::L({q[1]}); return any_all(q, k, o, false); }
KG_OP(aten_all_dims) { return any_all(p, k, o, false); }
KG_OP(aten_all_default) { return any_all({p[0]}, {}, o, false); }
KG_OP(aten_logsumexp_default) {
  return {kg::A(kg::reduce(p[0].t, kg::dims_arg(kg::arg(p, k, 1, "dim")), kw_bool(p, k, 2, "keepdim"), o[0], [](const double* r, int64_t n) {
    const double m = red_max(r, n);
    if (std::isinf(m)) return m;
    double s = 0;
    for (int64_t i = 0; i < n; ++i) s += std::exp(r[i] - m);
    return m + std::log(s);
  }))};
}

// Softmax family along one dim (computed in double, rounded once).
namespace kg {
template <typename F>
T along_dim(const T& x, int64_t dim, int dt, F&& f) {  // f(row in, row out, n), row = the dim
  dim = wrap_dim(dim, x.dim());
  if (x.dim() == 0) { T o = empty({}, dt); double in = x.item(); f(&in, o.data(), 1); o.data()[0] = rnd(dt, o.data()[0]); return o; }
  Shape perm;
  for (int64_t d = 0; d < x.dim(); ++d) if (d != dim) perm.push_back(d);
  perm.push_back(dim);
  T c = contig(permute(x, perm));
  const int64_t n = x.shape[dim], rows = n ? c.numel() / n : 0;
  T out = empty(c.shape, dt);
  for (int64_t r = 0; r < rows; ++r) {
    f(c.data() + r * n, out.data() + r * n, n);
    for (int64_t i = 0; i < n; ++i) out.data()[r * n + i] = rnd(dt, out.data()[r * n + i]);
  }
  Shape inv(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) inv[perm[i]] = static_cast<int64_t>(i);
  return contig(permute(out, inv));
}
}  // namespace kg

KG_OP(aten__softmax_default) {
  (void)k;
  return {kg::A(kg::along_dim(p[0].t, p[1].integer(), o[0], [](const double* x, double* y, int64_t n) {
    const double m = red_max(x, n);
    double s = 0;
    for (int64_t i = 0; i < n; ++i) s += (y[i] = std::exp(x[i] - m));
    for (int64_t i = 0; i < n; ++i) y[i] /= s;
  }))};
}
KG_OP(aten__log_softmax_default) {
  (void)k;
  return {kg::A(kg::along_dim(p[0].t, p[1].integer(), o[0], [](const double* x, double* y, int64_t n) {
    const double m = red_max(x, n);
    double s = 0;
    for (int64_t i = 0; i < n; ++i) s += std::exp(x[i] - m);
    const double l = std::log(s);
    for (int64_t i = 0; i < n; ++i) y[i] = x[i] - m - l;
  }))};
}
KG_OP(aten__safe_softmax_default) { return aten__softmax_default(p, k, o); }
KG_OP(aten_cumsum_default) {
  (void)k;
  return {kg::A(kg::along_dim(p[0].t, p[1].integer(), o[0], [&](const double* x, double* y, int64_t n) {
    double s = 0;
    for (int64_t i = 0; i < n; ++i) y[i] = (s = kg::rnd(o[0], s + x[i]));
  }))};
}
KG_OP(aten_cumprod_default) {
  (void)k;
  return {kg::A(kg::along_dim(p[0].t, p[1].integer(), o[0], [&](const double* x, double* y, int64_t n) {
    double s = 1;
    for (int64_t i = 0; i < n; ++i) y[i] = (s = kg::rnd(o[0], s * x[i]));
  }))};
}

// sort / topk along a dim: values and int64 indices (stable, NaN largest).
namespace kg {
inline void order(const double* x, int64_t n, bool desc, std::vector<int64_t>& idx) {
  idx.resize(static_cast<size_t>(n));
  std::iota(idx.begin(), idx.end(), 0);
  auto key = [&](int64_t i) { return std::isnan(x[i]) ? kInf : x[i]; };
  std::stable_sort(idx.begin(), idx.end(), [&](int64_t a, int64_t b) {
    const bool na = std::isnan(x[a]), nb = std::isnan(x[b]);
    if (na || nb) return desc ? (na && !nb) : (!na && nb);
    return desc ? key(a) > key(b) : key(a) < key(b);
  });
}
inline R sort_topk(const T& x, int64_t dim, int64_t kk, bool desc, int vdt, int idt) {
  dim = wrap_dim(dim, x.dim());
  Shape perm;
  for (int64_t d = 0; d < x.dim(); ++d) if (d != dim) perm.push_back(d);
  perm.push_back(dim);
  T c = contig(permute(x, perm));
  const int64_t n = x.dim() ? x.shape[dim] : 1, rows = n ? c.numel() / n : 0;
  Shape os = c.shape;
  if (!os.empty()) os.back() = kk;
  T v = empty(os, vdt), ix = empty(os, idt);
  std::vector<int64_t> idx;
  for (int64_t r = 0; r < rows; ++r) {
    order(c.data() + r * n, n, desc, idx);
    for (int64_t i = 0; i < kk; ++i) {
      v.data()[r * kk + i] = c.data()[r * n + idx[i]];
      ix.data()[r * kk + i] = static_cast<double>(idx[i]);
    }
  }
  Shape inv(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) inv[perm[i]] = static_cast<int64_t>(i);
  return {A(contig(permute(v, inv))), A(contig(permute(ix, inv)))};
}
}  // namespace kg

KG_OP(aten_sort_default) {
  const kg::A& d = kg::arg(p, k, 1, "dim");
  const int64_t dim = d.none() ? -1 : d.integer();
  const kg::T& x = p[0].t;
  return kg::sort_topk(x, dim, x.dim() ? x.shape[kg::wrap_dim(dim, x.dim())] : 1, kw_bool(p, k, 2, "descending"), o[0], o.size() > 1 ? o[1] : kg::I64);
}
KG_OP(aten_sort_stable) {
  const kg::A& d = kg::arg(p, k, 2, "dim");
  const int64_t dim = d.none() ? -1 : d.integer();
  const kg::T& x = p[0].t;
  return kg::sort_topk(x, dim, x.dim() ? x.shape[kg::wrap_dim(dim, x.dim())] : 1, kw_bool(p, k, 3, "descending"), o[0], o.size() > 1 ? o[1] : kg::I64);
}
KG_OP(aten_topk_default) {
  const kg::A& d = kg::arg(p, k, 2, "dim");
  const kg::A& l = kg::arg(p, k, 3, "largest");
  return kg::sort_topk(p[0].t, d.none() ? -1 : d.integer(), p[1].integer(), l.none() || l.num() != 0, o[0], o.size() > 1 ? o[1] : kg::I64);
}
KG_OP(aten_argsort_default) {
  const kg::A& d = kg::arg(p, k, 1, "dim");
  const int64_t dim = d.none() ? -1 : d.integer();
  const kg::T& x = p[0].t;
  kg::R r = kg::sort_topk(x, dim, x.dim() ? x.shape[kg::wrap_dim(dim, x.dim())] : 1, kw_bool(p, k, 2, "descending"), x.dt, o[0]);
  return {r[1]};
}

// ───────────────────────────── layout and indexing ─────────────────────────────
namespace kg {
// Copies `src` into the region of `dst` (a view of fresh storage).
inline void write_into(const T& dst, const T& src) {
  const Shape ss = broadcast_strides(src, dst.shape);
  const double* s = src.buf->data();
  double* d = dst.buf->data();
  const int dt = dst.dt;
  for_each_index(dst.shape, {&dst.stride, &ss}, {dst.off, src.off}, [&](int64_t, const int64_t* off) { d[off[0]] = rnd(dt, s[off[1]]); });
}
inline int64_t idx_of(double v, int64_t n) {
  int64_t i = static_cast<int64_t>(v);
  if (i < 0) i += n;
  if (i < 0 || i >= n) fail("index out of range");
  return i;
}
}  // namespace kg

KG_OP(aten_cat_default) {
  const kg::A& d = kg::arg(p, k, 1, "dim");
  std::vector<kg::T> ts;
  for (const auto& a : p[0].l)
    if (!(a.t.dim() == 1 && a.t.shape[0] == 0)) ts.push_back(a.t);
  if (ts.empty()) return {kg::A(kg::empty({0}, o[0]))};
  const int64_t dim = kg::wrap_dim(d.none() ? 0 : d.integer(), ts[0].dim());
  kg::Shape s = ts[0].shape;
  s[dim] = 0;
  for (const auto& t : ts) s[dim] += t.shape[dim];
  kg::T out = kg::empty(s, o[0]);
  int64_t start = 0;
  for (const auto& t : ts) {
    kg::write_into(kg::slice(out, dim, start, start + t.shape[dim], 1), t);
    start += t.shape[dim];
  }
  return {kg::A(out)};
}
KG_OP(aten_stack_default) {
  const kg::A& d = kg::arg(p, k, 1, "dim");
  const int64_t dim = d.none() ? 0 : d.integer();
  std::vector<kg::A> l;
  for (const auto& a : p[0].l) l.push_back(kg::A(kg::unsqueeze(a.t, kg::wrap_dim(dim, a.t.dim() + 1))));
  return aten_cat_default({kg::A::L(l), kg::A::I(dim)}, {}, o);
}
KG_OP(aten_constant_pad_nd_default) {
  const kg::T& x = p[0].t;
  const kg::Shape pad = p[1].ints();
  const kg::A& v = kg::arg(p, k, 2, "value");
  kg::Shape s = x.shape;
  const size_t np = pad.size() / 2;
  for (size_t i = 0; i < np; ++i) s[s.size() - 1 - i] += pad[2 * i] + pad[2 * i + 1];
  kg::T out = kg::empty(s, o[0]);
  std::fill(out.buf->begin(), out.buf->end(), kg::rnd(o[0], v.none() ? 0.0 : v.num()));
  kg::T dst = out, src = x;
  for (size_t i = 0; i < np; ++i) {
    const int64_t d = static_cast<int64_t>(s.size() - 1 - i), lo = pad[2 * i], hi = pad[2 * i + 1];
    if (lo < 0) src = kg::slice(src, d, -lo, src.shape[d], 1);
    if (hi < 0) src = kg::slice(src, d, 0, src.shape[d] + hi, 1);
    dst = kg::slice(dst, d, std::max<int64_t>(lo, 0), std::max<int64_t>(lo, 0) + src.shape[d], 1);
  }
  kg::write_into(dst, src);
  return {kg::A(out)};
}
KG_OP(aten_flip_default) {
  (void)k;
  kg::T v = p[0].t;
  for (auto d0 : p[1].ints()) {
    const int64_t d = kg::wrap_dim(d0, v.dim());
    v.off += (v.shape[d] - 1) * v.stride[d];
    v.stride[d] = -v.stride[d];
  }
  return {kg::A(kg::contig(v))};
}
KG_OP(aten_roll_default) {
  const kg::Shape shifts = p[1].ints();
  const kg::Shape dims = kg::arg(p, k, 2, "dims").ints();
  kg::T x = p[0].t;
  if (dims.empty()) {
    kg::T f = kg::reshape(x, {-1});
    return {kg::A(kg::reshape(aten_roll_default({kg::A(f), p[1], kg::A::L({kg::A::I(0)})}, {}, o)[0].t, x.shape))};
  }
  for (size_t i = 0; i < dims.size(); ++i) {
    const int64_t d = kg::wrap_dim(dims[i], x.dim()), n = x.shape[d];
    if (n == 0) continue;
    const int64_t s = ((shifts[i] % n) + n) % n;
    kg::T out = kg::empty(x.shape, o[0]);
    kg::write_into(kg::slice(out, d, s, n, 1), kg::slice(x, d, 0, n - s, 1));
    kg::write_into(kg::slice(out, d, 0, s, 1), kg::slice(x, d, n - s, n, 1));
    x = out;
  }
  return {kg::A(x)};
}
KG_OP(aten_repeat_default) {
  (void)k;
  const kg::T& x = p[0].t;
  const kg::Shape rep = p[1].ints();
  kg::T v = x;
  while (v.dim() < static_cast<int64_t>(rep.size())) v = kg::unsqueeze(v, 0);
  // [r0, s0, r1, s1, ...] expanded then reshaped.
  kg::T e = v;
  kg::Shape es, fs;
  kg::T u;
  u.buf = v.buf; u.off = v.off; u.dt = v.dt;
  for (int64_t d = 0; d < v.dim(); ++d) {
    u.shape.push_back(rep[d]); u.stride.push_back(0);
    u.shape.push_back(v.shape[d]); u.stride.push_back(v.stride[d]);
    fs.push_back(rep[d] * v.shape[d]);
  }
  return {kg::A(kg::reshape(kg::contig(u), fs))};
}
// tril / triu: zero above (below) the diagonal of the last two dims.
inline kg::R triangle(const kg::P& p, const kg::K& k, const std::vector<int>& o, bool lower) {
  const kg::A& dg = kg::arg(p, k, 1, "diagonal");
  const int64_t diag = dg.none() ? 0 : dg.integer();
  kg::T out = kg::contig(aten__to_copy_default({p[0]}, {}, o)[0].t);
  const int64_t R = out.shape[out.dim() - 2], C = out.shape[out.dim() - 1], B = (R * C != 0) ? out.numel() / (R * C) : 0;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t i = 0; i < R; ++i)
      for (int64_t j = 0; j < C; ++j)
        if (lower ? j - i > diag : j - i < diag) out.data()[b * R * C + i * C + j] = 0;
  return {kg::A(out)};
}
KG_OP(aten_tril_default) { return triangle(p, k, o, true); }
KG_OP(aten_triu_default) { return triangle(p, k, o, false); }
// slice_scatter(self, src, dim, start, end, step) / select_scatter(self, src, dim, index): self
// with the slice (or selected row) replaced by src.
KG_OP(aten_slice_scatter_default) {
  const kg::A& d = kg::arg(p, k, 2, "dim");
  const kg::A& s = kg::arg(p, k, 3, "start");
  const kg::A& e = kg::arg(p, k, 4, "end");
  const kg::A& st = kg::arg(p, k, 5, "step");
  kg::T out = kg::empty(p[0].t.shape, o[0]);
  kg::write_into(out, p[0].t);
  const int64_t end = e.none() ? INT64_MAX / 2 : std::min<int64_t>(e.integer(), INT64_MAX / 2);
  kg::write_into(kg::slice(out, d.none() ? 0 : d.integer(), s.none() ? 0 : s.integer(), end, st.none() ? 1 : st.integer()), p[1].t);
  return {kg::A(out)};
}
KG_OP(aten_select_scatter_default) {
  (void)k;
  kg::T out = kg::empty(p[0].t.shape, o[0]);
  kg::write_into(out, p[0].t);
  kg::write_into(kg::select(out, p[2].integer(), p[3].integer()), p[1].t);
  return {kg::A(out)};
}

KG_OP(aten_index_select_default) {
  (void)k;
  const kg::T& x = p[0].t;
  const int64_t dim = kg::wrap_dim(p[1].integer(), x.dim());
  const std::vector<double> ix = kg::values(p[2].t);
  kg::Shape s = x.shape;
  s[dim] = static_cast<int64_t>(ix.size());
  kg::T out = kg::empty(s, o[0]);
  for (size_t i = 0; i < ix.size(); ++i)
    kg::write_into(kg::select(out, dim, static_cast<int64_t>(i)), kg::select(x, dim, kg::idx_of(ix[i], x.shape[dim])));
  return {kg::A(out)};
}
KG_OP(aten_embedding_default) {
  (void)k;
  const kg::T& w = p[0].t;
  const std::vector<double> ix = kg::values(p[1].t);
  kg::Shape s = p[1].t.shape;
  s.push_back(w.shape[1]);
  kg::T out = kg::empty(s, o[0]);
  kg::T flat = kg::reshape(out, {static_cast<int64_t>(ix.size()), w.shape[1]});
  for (size_t i = 0; i < ix.size(); ++i) kg::write_into(kg::select(flat, 0, static_cast<int64_t>(i)), kg::select(w, 0, kg::idx_of(ix[i], w.shape[0])));
  return {kg::A(out)};
}
// gather / scatter: index tensors address one dim, all other coordinates from the index position.
namespace kg {
template <typename F>
void index_walk(const T& index, F&& f) {  // f(coords, value of index)
  const T c = contig(index);
  std::vector<int64_t> coord(static_cast<size_t>(c.dim()), 0);
  for (int64_t lin = 0; lin < c.numel(); ++lin) {
    f(coord, c.data()[lin]);
    for (int64_t d = c.dim() - 1; d >= 0; --d) {
      if (++coord[d] < c.shape[d]) break;
      coord[d] = 0;
    }
  }
}
inline int64_t offset_of(const T& t, const std::vector<int64_t>& coord) {
  int64_t o = t.off;
  for (size_t d = 0; d < coord.size(); ++d) o += coord[d] * t.stride[d];
  return o;
}
}  // namespace kg
KG_OP(aten_gather_default) {
  (void)k;
  const kg::T& x = p[0].t;
  const int64_t dim = kg::wrap_dim(p[1].integer(), x.dim());
  const kg::T& index = p[2].t;
  kg::T out = kg::empty(index.shape, o[0]);
  int64_t lin = 0;
  kg::index_walk(index, [&](std::vector<int64_t> c, double v) {
    c[dim] = kg::idx_of(v, x.shape[dim]);
    out.data()[lin++] = kg::rnd(o[0], (*x.buf)[kg::offset_of(x, c)]);
  });
  return {kg::A(out)};
}
// mode 0 assign, 1 add, 2 multiply, 3 amax, 4 amin, 5 mean (scatter_reduce with include_self)
inline kg::R scatter_impl(const kg::T& self, int64_t dim0, const kg::T& index, const kg::A& src, int mode, int dt, bool include_self = true) {
  kg::T out = kg::contig(aten__to_copy_default({kg::A(self)}, {}, {dt})[0].t);
  if (out.buf == self.buf) out = aten__to_copy_default({kg::A(self)}, {}, {dt})[0].t;
  const int64_t dim = kg::wrap_dim(dim0, self.dim());
  std::vector<double> count(static_cast<size_t>(out.numel()), include_self ? 1.0 : 0.0);
  std::vector<char> touched(static_cast<size_t>(out.numel()), 0);
  int64_t lin = 0;
  (void)lin;
  kg::index_walk(index, [&](std::vector<int64_t> c, double v) {
    const double s = src.ten() ? (*src.t.buf)[kg::offset_of(src.t, c)] : src.num();
    c[dim] = kg::idx_of(v, self.shape[dim]);
    const int64_t at = kg::offset_of(out, c);
    double& d = out.buf->at(static_cast<size_t>(at));
    if (!include_self && !touched[at]) { touched[at] = 1; d = (mode == 1 || mode == 5) ? 0 : mode == 2 ? 1 : s; if (mode >= 3 && mode <= 4) { count[at] = 1; return; } }
    switch (mode) {
      case 0: d = s; break;
      case 1: d = d + s; break;
      case 2: d = d * s; break;
      case 3: d = std::max(d, s); break;
      case 4: d = std::min(d, s); break;
      default: d = d + s; count[at] += 1; break;
    }
  });
  for (int64_t i = 0; i < out.numel(); ++i) {
    if (mode == 5 && count[i] > 0) out.data()[i] /= count[i];
    out.data()[i] = kg::rnd(dt, out.data()[i]);
  }
  return {kg::A(out)};
}
KG_OP(aten_scatter_src) { (void)k; return scatter_impl(p[0].t, p[1].integer(), p[2].t, p[3], 0, o[0]); }
KG_OP(aten_scatter_value) { (void)k; return scatter_impl(p[0].t, p[1].integer(), p[2].t, p[3], 0, o[0]); }
KG_OP(aten_scatter_add_default) { (void)k; return scatter_impl(p[0].t, p[1].integer(), p[2].t, p[3], 1, o[0]); }
KG_OP(aten_scatter_reduce_two) {
  const std::string r = p[4].s;
  const kg::A& inc = kg::arg(p, k, 5, "include_self");
  const int mode = r == "sum" ? 1 : r == "prod" ? 2 : r == "amax" ? 3 : r == "amin" ? 4 : 5;
  return scatter_impl(p[0].t, p[1].integer(), p[2].t, p[3], mode, o[0], inc.none() || inc.num() != 0);
}

// Advanced indexing: indices (some null) broadcast together; the indexed dims are replaced by the
// broadcast index shape (placed first when the indexed dims are not adjacent).
namespace kg {
struct IndexPlan {
  std::vector<int64_t> dims;        // indexed dims
  std::vector<std::vector<double>> idx;  // broadcast index values, one per indexed dim
  Shape ishape;                     // broadcast index shape
  Shape out_shape;
  bool front = false;
  int64_t first = 0;
};
inline IndexPlan plan_index(const T& x, const std::vector<A>& indices) {
  IndexPlan pl;
  std::vector<T> its;
  for (size_t d = 0; d < indices.size(); ++d) {
    if (indices[d].none()) continue;
    T it = indices[d].t;
    if (it.dt == B) fail("boolean mask indices are data-dependent");
    pl.dims.push_back(static_cast<int64_t>(d));
    its.push_back(it);
  }
  pl.ishape = broadcast_shape(its);
  for (auto& it : its) pl.idx.push_back(values(contig(expand(it, pl.ishape))));
  for (size_t i = 1; i < pl.dims.size(); ++i)
    if (pl.dims[i] != pl.dims[i - 1] + 1) pl.front = true;
  pl.first = pl.dims.empty() ? 0 : pl.dims[0];
  Shape rest_before, rest_after;
  for (int64_t d = 0; d < x.dim(); ++d) {
    if (std::find(pl.dims.begin(), pl.dims.end(), d) != pl.dims.end()) continue;
    (d < pl.first ? rest_before : rest_after).push_back(x.shape[d]);
  }
  if (pl.front) { pl.out_shape = pl.ishape; for (auto s : rest_before) pl.out_shape.push_back(s); }
  else { pl.out_shape = rest_before; for (auto s : pl.ishape) pl.out_shape.push_back(s); }
  for (auto s : rest_after) pl.out_shape.push_back(s);
  return pl;
}
// Calls f(offset in x, linear position in the output) for every output element.
template <typename F>
void index_each(const T& x, const IndexPlan& pl, F&& f) {
  int64_t ni = 1;
  for (auto s : pl.ishape) ni *= s;
  std::vector<int64_t> other;
  for (int64_t d = 0; d < x.dim(); ++d)
    if (std::find(pl.dims.begin(), pl.dims.end(), d) == pl.dims.end()) other.push_back(d);
  Shape oshape;
  for (auto d : other) oshape.push_back(x.shape[d]);
  int64_t no = 1;
  for (auto s : oshape) no *= s;
  int64_t nb = 1;  // other dims before the index block in the output (non-front case)
  size_t nbefore = 0;
  if (!pl.front)
    for (auto d : other) if (d < pl.first) { nb *= x.shape[d]; ++nbefore; }
  std::vector<int64_t> oc(other.size());
  for (int64_t j = 0; j < no; ++j) {
    int64_t rem = j, base = x.off;
    for (int64_t q = static_cast<int64_t>(other.size()) - 1; q >= 0; --q) {
      oc[q] = rem % oshape[q];
      rem /= oshape[q];
      base += oc[q] * x.stride[other[q]];
    }
    int64_t jb = 0, ja = 0, na = 1;
    for (size_t q = 0; q < other.size(); ++q) {
      if (!pl.front && q < nbefore) jb = jb * oshape[q] + oc[q];
      else { ja = ja * oshape[q] + oc[q]; na *= oshape[q]; }
    }
    for (int64_t i = 0; i < ni; ++i) {
      int64_t off = base;
      for (size_t q = 0; q < pl.dims.size(); ++q) off += idx_of(pl.idx[q][i], x.shape[pl.dims[q]]) * x.stride[pl.dims[q]];
      const int64_t pos = pl.front ? i * no + j : (jb * ni + i) * na + ja;
      f(off, pos);
    }
  }
  (void)nb;
}
}  // namespace kg
KG_OP(aten_index_Tensor) {
  (void)k;
  const kg::T& x = p[0].t;
  const kg::IndexPlan pl = kg::plan_index(x, p[1].l);
  kg::T out = kg::empty(pl.out_shape, o[0]);
  kg::index_each(x, pl, [&](int64_t off, int64_t pos) { out.data()[pos] = kg::rnd(o[0], (*x.buf)[off]); });
  return {kg::A(out)};
}
KG_OP(aten_index_put_default) {
  const kg::A& acc = kg::arg(p, k, 3, "accumulate");
  const bool add = !acc.none() && acc.num() != 0;
  kg::T out = kg::empty(p[0].t.shape, o[0]);
  kg::write_into(out, p[0].t);
  const kg::IndexPlan pl = kg::plan_index(out, p[1].l);
  kg::T v = p[2].t;
  kg::T src = kg::contig(kg::expand(v, pl.out_shape));
  kg::index_each(out, pl, [&](int64_t off, int64_t pos) {
    double& d = (*out.buf)[off];
    d = kg::rnd(o[0], add ? d + src.data()[pos] : src.data()[pos]);
  });
  return {kg::A(out)};
}
KG_OP(aten_index_put__default) { return aten_index_put_default(p, k, o); }
KG_OP(aten_index_add_default) {  // index_add(self, dim, index, source, alpha)
  const kg::A& al = kg::arg(p, k, 4, "alpha");
  const double alpha = al.none() ? 1.0 : al.num();
  const kg::T& self = p[0].t;
  const int64_t dim = kg::wrap_dim(p[1].integer(), self.dim());
  const std::vector<double> ix = kg::values(p[2].t);
  kg::T out = kg::empty(self.shape, o[0]);
  kg::write_into(out, self);
  const kg::T& src = p[3].t;
  for (size_t i = 0; i < ix.size(); ++i) {
    kg::T d = kg::select(out, dim, kg::idx_of(ix[i], self.shape[dim]));
    kg::T s = kg::select(src, dim, static_cast<int64_t>(i));
    kg::T sum = kg::map({d, s}, o[0], [&](const double* v) { return v[0] + alpha * v[1]; });
    kg::write_into(d, sum);
  }
  return {kg::A(out)};
}
KG_OP(aten_one_hot_default) {
  const kg::A& nc = kg::arg(p, k, 1, "num_classes");
  const std::vector<double> ix = kg::values(p[0].t);
  int64_t n = nc.none() ? -1 : nc.integer();
  if (n < 0) for (double v : ix) n = std::max<int64_t>(n, static_cast<int64_t>(v) + 1);
  kg::Shape s = p[0].t.shape;
  s.push_back(n);
  kg::T out = kg::empty(s, o[0]);
  for (size_t i = 0; i < ix.size(); ++i) out.data()[static_cast<int64_t>(i) * n + kg::idx_of(ix[i], n)] = 1;
  return {kg::A(out)};
}

// ───────────────────────────── matrix products ─────────────────────────────
namespace kg {
// C[b] = A[b] (M×K) · B[b] (K×N), double accumulation; A and B any strides (batch broadcast).
// Work is split into (batch, column tile) tasks of GEMM_NBLOCK columns: a task streams its B tile
// once per row of A while it stays in cache. GEMM_WORKERS threads take tasks (0: every core).
inline T bmm_core(const T& a, const T& b, int dt) {
  const int64_t Bn = std::max(a.shape[0], b.shape[0]), M = a.shape[1], Kd = a.shape[2], N = b.shape[2];
  const T ac = contig(a), bc = contig(b);
  T out = empty({Bn, M, N}, dt);
  const int64_t nb = KA_GEMM_NBLOCK > 0 ? KA_GEMM_NBLOCK : std::max<int64_t>(N, 1);
  const int64_t tiles = (N + nb - 1) / nb, tasks = Bn * tiles;
  auto task = [&](int64_t t) {
    const int64_t bi = t / tiles, j0 = (t % tiles) * nb, j1 = std::min(N, j0 + nb), w = j1 - j0;
    const double* am = ac.data() + (ac.shape[0] == 1 ? 0 : bi) * M * Kd;
    const double* bm = bc.data() + (bc.shape[0] == 1 ? 0 : bi) * Kd * N + j0;
    std::vector<double> acc(static_cast<size_t>(w));
    for (int64_t i = 0; i < M; ++i) {
      std::fill(acc.begin(), acc.end(), 0.0);
      const double* ar = am + i * Kd;
      for (int64_t kk = 0; kk < Kd; ++kk) {
        const double av = ar[kk];
        const double* br = bm + kk * N;
        double* ap = acc.data();
        for (int64_t j = 0; j < w; ++j) ap[j] += av * br[j];
      }
      double* dst = out.data() + (bi * M + i) * N + j0;
      for (int64_t j = 0; j < w; ++j) dst[j] = rnd(dt, acc[j]);
    }
  };
  int64_t workers = KA_GEMM_WORKERS > 0 ? KA_GEMM_WORKERS : static_cast<int64_t>(std::thread::hardware_concurrency());
  workers = std::max<int64_t>(1, std::min<int64_t>(workers, tasks));
  if (workers <= 1 || Bn * M * N * Kd < (1 << 18)) {
    for (int64_t t = 0; t < tasks; ++t) task(t);
  } else {
    std::vector<std::thread> pool;
    auto range = [&](int64_t w0) { for (int64_t t = w0; t < tasks; t += workers) task(t); };
    for (int64_t w0 = 1; w0 < workers; ++w0) pool.emplace_back(range, w0);
    range(0);
    for (auto& th : pool) th.join();
  }
  return out;
}
inline T mm(const T& a, const T& b, int dt) {
  return reshape(bmm_core(unsqueeze(a, 0), unsqueeze(b, 0), dt), {a.shape[0], b.shape[1]});
}
}  // namespace kg

KG_OP(aten_mm_default) { (void)k; return {kg::A(kg::mm(p[0].t, p[1].t, o[0]))}; }
KG_OP(aten_bmm_default) { (void)k; return {kg::A(kg::bmm_core(p[0].t, p[1].t, o[0]))}; }
KG_OP(aten_matmul_default) {
  (void)k;
  const kg::T& a = p[0].t;
  const kg::T& b = p[1].t;
  if (a.dim() == 2 && b.dim() == 2) return {kg::A(kg::mm(a, b, o[0]))};
  kg::fail("matmul of rank > 2 is decomposed by capture");
}
inline kg::R addmm_like(const kg::P& p, const kg::K& k, const std::vector<int>& o, bool batched) {
  const kg::A& be = kg::arg(p, k, 3, "beta");
  const kg::A& al = kg::arg(p, k, 4, "alpha");
  const double beta = be.none() ? 1.0 : be.num(), alpha = al.none() ? 1.0 : al.num();
  kg::T prod = batched ? kg::bmm_core(p[1].t, p[2].t, kg::F64) : kg::mm(p[1].t, p[2].t, kg::F64);
  return {kg::A(kg::map({p[0].t, prod}, o[0], [&](const double* v) { return beta * v[0] + alpha * v[1]; }))};
}
KG_OP(aten_addmm_default) { return addmm_like(p, k, o, false); }
KG_OP(aten_baddbmm_default) { return addmm_like(p, k, o, true); }

// fp8 scaled matmul: (a · b) · scale_a · scale_b (+ bias); scales per tensor, per row of a
// (M×1) or per column of b (1×N).
KG_OP(aten__scaled_mm_default) {
  const kg::A& bias = kg::arg(p, k, 4, "bias");
  kg::T prod = kg::mm(p[0].t, p[1].t, kg::F64);
  const kg::T sa = p[2].t.numel() == 1 ? kg::reshape(p[2].t, {}) : p[2].t;
  const kg::T sb = p[3].t.numel() == 1 ? kg::reshape(p[3].t, {}) : p[3].t;
  std::vector<kg::T> ins{prod, sa, sb};
  if (!bias.none()) ins.push_back(bias.t);
  const bool hb = !bias.none();
  return {kg::A(kg::map(ins, o[0], [&](const double* v) {
    const double y = static_cast<float>(v[0] * v[1] * v[2]);
    return hb ? y + v[3] : y;
  }))};
}

// ───────────────────────────── convolution ─────────────────────────────
namespace kg {
// N-d convolution (cross-correlation) with groups; transposed: the gradient form.
inline T conv(const T& x0, const T& w0, const A& bias, const Shape& stride, const Shape& pad, const Shape& dil, bool transposed,
              const Shape& opad, int64_t groups, int dt) {
  const T x = contig(x0), w = contig(w0);
  const int64_t nd = x.dim() - 2, N = x.shape[0], Cin = x.shape[1];
  auto at = [](const Shape& s, int64_t i) { return s.size() == 1 ? s[0] : s[i]; };
  Shape in_sp(x.shape.begin() + 2, x.shape.end()), k_sp(w.shape.begin() + 2, w.shape.end()), out_sp(nd);
  const int64_t Cout = transposed ? w.shape[1] * groups : w.shape[0];
  for (int64_t d = 0; d < nd; ++d) {
    if (transposed)
      out_sp[d] = (in_sp[d] - 1) * at(stride, d) - 2 * at(pad, d) + at(dil, d) * (k_sp[d] - 1) + (opad.empty() ? 0 : at(opad, d)) + 1;
    else
      out_sp[d] = (in_sp[d] + 2 * at(pad, d) - at(dil, d) * (k_sp[d] - 1) - 1) / at(stride, d) + 1;
  }
  Shape os{N, Cout};
  for (auto s : out_sp) os.push_back(s);
  T acc = empty(os, F64);
  int64_t in_n = 1, out_n = 1, k_n = 1;
  for (int64_t d = 0; d < nd; ++d) { in_n *= in_sp[d]; out_n *= out_sp[d]; k_n *= k_sp[d]; }
  const int64_t cin_g = Cin / groups, cout_g = Cout / groups;
  std::vector<int64_t> ip(static_cast<size_t>(nd)), kp(static_cast<size_t>(nd));
  if (!transposed) {
    // Gather form: per kernel tap, the input position each output position reads (or -1).
    std::vector<int64_t> tab(static_cast<size_t>(k_n * out_n));
    std::vector<int64_t> op(static_cast<size_t>(nd));
    for (int64_t kk = 0; kk < k_n; ++kk) {
      int64_t q = kk;
      for (int64_t d = nd - 1; d >= 0; --d) { kp[d] = q % k_sp[d]; q /= k_sp[d]; }
      for (int64_t oo = 0; oo < out_n; ++oo) {
        int64_t r = oo, ipos = 0;
        for (int64_t d = nd - 1; d >= 0; --d) { op[d] = r % out_sp[d]; r /= out_sp[d]; }
        for (int64_t d = 0; d < nd && ipos >= 0; ++d) {
          const int64_t i = op[d] * at(stride, d) - at(pad, d) + kp[d] * at(dil, d);
          ipos = (i < 0 || i >= in_sp[d]) ? -1 : ipos * in_sp[d] + i;
        }
        tab[kk * out_n + oo] = ipos;
      }
    }
    for (int64_t n = 0; n < N; ++n)
      for (int64_t g = 0; g < groups; ++g)
        for (int64_t co = 0; co < cout_g; ++co) {
          double* acc_row = acc.data() + (n * Cout + g * cout_g + co) * out_n;
          for (int64_t ci = 0; ci < cin_g; ++ci) {
            const double* xrow = x.data() + (n * Cin + g * cin_g + ci) * in_n;
            const double* wrow = w.data() + ((g * cout_g + co) * cin_g + ci) * k_n;
            for (int64_t kk = 0; kk < k_n; ++kk) {
              const double wv = wrow[kk];
              const int64_t* t = tab.data() + kk * out_n;
              for (int64_t oo = 0; oo < out_n; ++oo)
                if (t[oo] >= 0) acc_row[oo] += wv * xrow[t[oo]];
            }
          }
        }
  }
  // Scatter form over input positions for the transposed convolution: for every input position and
  // kernel tap, the output position it meets.
  if (transposed)
  for (int64_t n = 0; n < N; ++n)
    for (int64_t g = 0; g < groups; ++g)
      for (int64_t ii = 0; ii < in_n; ++ii) {
        int64_t r = ii;
        for (int64_t d = nd - 1; d >= 0; --d) { ip[d] = r % in_sp[d]; r /= in_sp[d]; }
        for (int64_t kk = 0; kk < k_n; ++kk) {
          int64_t q = kk, opos = 0;
          bool ok = true;
          for (int64_t d = nd - 1; d >= 0; --d) { kp[d] = q % k_sp[d]; q /= k_sp[d]; }
          for (int64_t d = 0; d < nd && ok; ++d) {
            int64_t op;
            if (transposed) op = ip[d] * at(stride, d) - at(pad, d) + kp[d] * at(dil, d);
            else {
              const int64_t t = ip[d] + at(pad, d) - kp[d] * at(dil, d);
              if (t % at(stride, d) != 0) { ok = false; break; }
              op = t / at(stride, d);
            }
            if (op < 0 || op >= out_sp[d]) ok = false;
            opos = opos * out_sp[d] + op;
          }
          if (!ok) continue;
          for (int64_t ci = 0; ci < cin_g; ++ci) {
            const double xv = x.data()[((n * Cin) + g * cin_g + ci) * in_n + ii];
            if (xv == 0) continue;
            for (int64_t co = 0; co < cout_g; ++co) {
              const double wv = transposed ? w.data()[((g * cin_g + ci) * cout_g + co) * k_n + kk]
                                           : w.data()[((g * cout_g + co) * cin_g + ci) * k_n + kk];
              acc.data()[((n * Cout) + g * cout_g + co) * out_n + opos] += xv * wv;
            }
          }
        }
      }
  T out = empty(os, dt);
  const std::vector<double> bv = bias.ten() ? values(bias.t) : std::vector<double>();
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < Cout; ++c)
      for (int64_t i = 0; i < out_n; ++i) {
        const int64_t at_ = (n * Cout + c) * out_n + i;
        out.data()[at_] = rnd(dt, acc.data()[at_] + (bv.empty() ? 0.0 : bv[c]));
      }
  return out;
}
}  // namespace kg
KG_OP(aten_convolution_default) {
  (void)k;
  return {kg::A(kg::conv(p[0].t, p[1].t, p[2], p[3].ints(), p[4].ints(), p[5].ints(), p[6].num() != 0, p[7].ints(), p[8].integer(), o[0]))};
}

// ───────────────────────────── normalisation ─────────────────────────────
// native_layer_norm(x, normalized_shape, weight, bias, eps) -> (y, mean, rstd)
KG_OP(aten_native_layer_norm_default) {
  (void)k;
  const kg::T& x = p[0].t;
  const int64_t nn = static_cast<int64_t>(p[1].ints().size());
  kg::Shape dims;
  for (int64_t d = x.dim() - nn; d < x.dim(); ++d) dims.push_back(d);
  const double eps = p[4].num();
  kg::Rows r = kg::to_rows(x, dims);
  kg::T y = kg::empty(x.shape, o[0]);
  kg::T mean = kg::empty(r.keepdim_shape, o.size() > 1 && o[1] >= 0 ? o[1] : kg::F32);
  kg::T rstd = kg::empty(r.keepdim_shape, o.size() > 2 && o[2] >= 0 ? o[2] : kg::F32);
  const std::vector<double> w = p[2].ten() ? kg::values(p[2].t) : std::vector<double>();
  const std::vector<double> b = p[3].ten() ? kg::values(p[3].t) : std::vector<double>();
  for (int64_t i = 0; i < r.rows; ++i) {
    const double* row = r.c.data() + i * r.inner;
    double m = 0, v = 0;
    for (int64_t j = 0; j < r.inner; ++j) m += row[j];
    m /= static_cast<double>(r.inner);
    for (int64_t j = 0; j < r.inner; ++j) v += (row[j] - m) * (row[j] - m);
    v /= static_cast<double>(r.inner);
    const double rs = 1.0 / std::sqrt(v + eps);
    mean.data()[i] = kg::rnd(mean.dt, m);
    rstd.data()[i] = kg::rnd(rstd.dt, rs);
    for (int64_t j = 0; j < r.inner; ++j) {
      double t = (row[j] - m) * rs;
      if (!w.empty()) t *= w[j];
      if (!b.empty()) t += b[j];
      y.data()[i * r.inner + j] = kg::rnd(o[0], t);
    }
  }
  return {kg::A(y), kg::A(mean), kg::A(rstd)};
}
// native_group_norm(x, weight, bias, N, C, HxW, group, eps) -> (y, mean, rstd)
KG_OP(aten_native_group_norm_default) {
  (void)k;
  const kg::T x = kg::contig(p[0].t);
  const int64_t N = p[3].integer(), C = p[4].integer(), HW = p[5].integer(), G = p[6].integer();
  const double eps = p[7].num();
  const std::vector<double> w = p[1].ten() ? kg::values(p[1].t) : std::vector<double>();
  const std::vector<double> b = p[2].ten() ? kg::values(p[2].t) : std::vector<double>();
  kg::T y = kg::empty(x.shape, o[0]);
  kg::T mean = kg::empty({N, G}, o.size() > 1 && o[1] >= 0 ? o[1] : kg::F32), rstd = kg::empty({N, G}, o.size() > 2 && o[2] >= 0 ? o[2] : kg::F32);
  const int64_t cg = C / G, len = cg * HW;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t g = 0; g < G; ++g) {
      const double* row = x.data() + (n * C + g * cg) * HW;
      double m = 0, v = 0;
      for (int64_t j = 0; j < len; ++j) m += row[j];
      m /= static_cast<double>(len);
      for (int64_t j = 0; j < len; ++j) v += (row[j] - m) * (row[j] - m);
      v /= static_cast<double>(len);
      const double rs = 1.0 / std::sqrt(v + eps);
      mean.data()[n * G + g] = kg::rnd(mean.dt, m);
      rstd.data()[n * G + g] = kg::rnd(rstd.dt, rs);
      for (int64_t j = 0; j < len; ++j) {
        const int64_t c = g * cg + j / HW;
        double t = (row[j] - m) * rs;
        if (!w.empty()) t *= w[c];
        if (!b.empty()) t += b[c];
        y.data()[(n * C + g * cg) * HW + j] = kg::rnd(o[0], t);
      }
    }
  return {kg::A(y), kg::A(mean), kg::A(rstd)};
}
// _native_batch_norm_legit_no_training(x, weight, bias, running_mean, running_var, momentum, eps)
KG_OP(aten__native_batch_norm_legit_no_training_default) {
  (void)k;
  const kg::T x = kg::contig(p[0].t);
  const int64_t N = x.shape[0], C = x.shape[1], HW = C ? x.numel() / (N * C) : 0;
  const std::vector<double> w = p[1].ten() ? kg::values(p[1].t) : std::vector<double>();
  const std::vector<double> b = p[2].ten() ? kg::values(p[2].t) : std::vector<double>();
  const std::vector<double> rm = kg::values(p[3].t), rv = kg::values(p[4].t);
  const double eps = p[6].num();
  kg::T y = kg::empty(x.shape, o[0]);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t j = 0; j < HW; ++j) {
        double t = (x.data()[(n * C + c) * HW + j] - rm[c]) / std::sqrt(rv[c] + eps);
        if (!w.empty()) t *= w[c];
        if (!b.empty()) t += b[c];
        y.data()[(n * C + c) * HW + j] = kg::rnd(o[0], t);
      }
  return {kg::A(y), kg::A(kg::empty({0}, kg::F32)), kg::A(kg::empty({0}, kg::F32))};
}

// ───────────────────────────── Python scalar arithmetic (after .item()) ─────────────────────────────
inline kg::A scalar_result(double v, bool integral) { return integral ? kg::A::I(static_cast<int64_t>(v)) : kg::A::F(v); }
inline bool both_int(const kg::P& p) {
  for (const auto& a : p)
    if (a.k == kg::A::FLT || (a.ten() && kg::is_float_dt(a.t.dt))) return false;
  return true;
}
#define KG_SCALAR2(op, expr, integral)                                          \
  KG_OP(scalar_##op) {                                                          \
    (void)k; (void)o;                                                           \
    const double a = p[0].num(), b = p.size() > 1 ? p[1].num() : 0.0;          \
    (void)b;                                                                    \
    return {scalar_result((expr), (integral))};                                 \
  }
KG_SCALAR2(add, a + b, both_int(p))
KG_SCALAR2(sub, a - b, both_int(p))
KG_SCALAR2(mul, a * b, both_int(p))
KG_SCALAR2(truediv, a / b, false)
KG_SCALAR2(floordiv, std::floor(a / b), both_int(p))
KG_SCALAR2(mod, kg::py_mod(a, b), both_int(p))
KG_SCALAR2(pow, std::pow(a, b), both_int(p) && b >= 0)
KG_SCALAR2(neg, -a, both_int(p))
KG_SCALAR2(eq, a == b, true)
KG_SCALAR2(ne, a != b, true)
KG_SCALAR2(lt, a < b, true)
KG_SCALAR2(le, a <= b, true)
KG_SCALAR2(gt, a > b, true)
KG_SCALAR2(ge, a >= b, true)
KG_SCALAR2(sqrt, std::sqrt(a), false)
