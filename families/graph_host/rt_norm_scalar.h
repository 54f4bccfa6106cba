// rt_norm_scalar.h — graph_rt.cpp's normalisations (layer, group, batch norm in inference) and the
// Python scalar arithmetic of a graph after .item().
// A part of graph_rt.cpp (family.json "sources"), expanded where the entry includes it: no include guard.
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
