// rt_layout.h — graph_rt.cpp's layout and indexing operators: cat, stack, pad, flip, roll, repeat,
// tril/triu, gather, scatter, index, index_put, embedding, one_hot.
// A part of graph_rt.cpp (family.json "sources"), expanded where the entry includes it: no include guard.
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
namespace kg {
// x[mask] = v with one boolean mask over x's leading dims and a single value: a masked fill,
// whose size does not depend on the data (the general boolean index does).
inline bool is_masked_fill(const T& x, const std::vector<A>& idx, const T& v) {
  if (idx.empty() || idx[0].none() || idx[0].t.dt != B || v.numel() != 1 || idx[0].t.dim() > x.dim()) return false;
  for (size_t d = 1; d < idx.size(); ++d)
    if (!idx[d].none()) return false;
  for (int64_t d = 0; d < idx[0].t.dim(); ++d)
    if (idx[0].t.shape[static_cast<size_t>(d)] != x.shape[static_cast<size_t>(d)]) return false;
  return true;
}
}  // namespace kg

KG_OP(aten_index_put_default) {
  const kg::A& acc = kg::arg(p, k, 3, "accumulate");
  const bool add = !acc.none() && acc.num() != 0;
  kg::T out = kg::empty(p[0].t.shape, o[0]);
  kg::write_into(out, p[0].t);
  if (kg::is_masked_fill(out, p[1].l, p[2].t)) {
    const kg::T mask = kg::contig(p[1].l[0].t);
    const double v = p[2].t.item();
    const int64_t inner = out.numel() / std::max<int64_t>(mask.numel(), 1);
    for (int64_t i = 0; i < mask.numel(); ++i)
      if (mask.data()[i] != 0)
        for (int64_t j = 0; j < inner; ++j) {
          double& d = out.data()[i * inner + j];
          d = kg::rnd(o[0], add ? d + v : v);
        }
    return {kg::A(out)};
  }
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
