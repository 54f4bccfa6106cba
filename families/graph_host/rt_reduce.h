// rt_reduce.h — graph_rt.cpp's reductions: sum, mean, prod, var, extrema and arg-extrema, any/all,
// cumulative sums and products, (log-)softmax, logsumexp, sort and top-k.
// A part of graph_rt.cpp (family.json "sources"), expanded where the entry includes it: no include guard.
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
// topk(sorted=False) leaves its k values in an unspecified order, which torch's CPU kernel decides:
// with k * 64 > n, std::nth_element around the k-th over (value, index) pairs in index order, and
// the first k as that leaves them (else a partial sort, i.e. sorted). The reference runs that
// kernel on a CPU, so the host backend reproduces it; positions are compared one by one.
inline void cpu_unsorted_topk(const double* x, int64_t n, int64_t kk, bool desc, std::vector<int64_t>& idx) {
  auto before = [&](int64_t a, int64_t b) {
    const bool na = std::isnan(x[a]), nb = std::isnan(x[b]);
    return desc ? ((na && !nb) || x[a] > x[b]) : ((!na && nb) || x[a] < x[b]);
  };
  idx.resize(static_cast<size_t>(n));
  std::iota(idx.begin(), idx.end(), 0);
  if (kk * 64 <= n) std::partial_sort(idx.begin(), idx.begin() + kk, idx.end(), before);
  else if (kk > 0) std::nth_element(idx.begin(), idx.begin() + kk - 1, idx.end(), before);
}
inline R sort_topk(const T& x, int64_t dim, int64_t kk, bool desc, int vdt, int idt, bool sorted = true) {
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
    if (sorted) order(c.data() + r * n, n, desc, idx);
    else cpu_unsorted_topk(c.data() + r * n, n, kk, desc, idx);
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
  const kg::A& so = kg::arg(p, k, 4, "sorted");
  return kg::sort_topk(p[0].t, d.none() ? -1 : d.integer(), p[1].integer(), l.none() || l.num() != 0, o[0],
                       o.size() > 1 ? o[1] : kg::I64, so.none() || so.num() != 0);
}
KG_OP(aten_argsort_default) {
  const kg::A& d = kg::arg(p, k, 1, "dim");
  const int64_t dim = d.none() ? -1 : d.integer();
  const kg::T& x = p[0].t;
  kg::R r = kg::sort_topk(x, dim, x.dim() ? x.shape[kg::wrap_dim(dim, x.dim())] : 1, kw_bool(p, k, 2, "descending"), x.dt, o[0]);
  return {r[1]};
}
