// rt_views.h — graph_rt.cpp's view operators (view, reshape, permute, expand, slice, select, split,
// unfold, as_strided, view_dtype ...: shared storage) and the storage formats they bitcast between.
// A part of graph_rt.cpp (family.json "sources"), expanded where the entry includes it: no include guard.
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
