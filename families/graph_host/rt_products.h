// rt_products.h — graph_rt.cpp's matrix products (mm, bmm, addmm, baddbmm, matmul, _scaled_mm;
// GEMM_WORKERS threads over column tiles), convolution, 2-D max pooling and bilinear resampling.
// A part of graph_rt.cpp (family.json "sources"), expanded where the entry includes it: no include guard.
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

namespace kg {
// nvfp4 (as the oracle emulates it, src/oracle/kaoracle/scaled_mm.py): an (R, K/2) matrix of e2m1
// pairs (even column in the low nibble) with 1×16 e4m3 scales in cuBLAS's blocked layout (128×4
// tiles, each stored as 32×16) → the (R, K) dequantised values, exact in float32.
inline T dequant_nvfp4(const T& x, const T& s) {
  static const double e2m1[16] = {0, .5, 1, 1.5, 2, 3, 4, 6, -0.0, -.5, -1, -1.5, -2, -3, -4, -6};
  const T xc = contig(x), sc = contig(s);
  const int64_t R = xc.shape[0], half = xc.shape[1], K = half * 2, tiles_per_row = (K / 16 + 3) / 4;
  T out = empty({R, K}, F32);
  for (int64_t r = 0; r < R; ++r)
    for (int64_t c = 0; c < K; ++c) {
      const auto byte = static_cast<uint32_t>(xc.data()[r * half + c / 2]);
      const int64_t blk = c / 16, tile = (r / 128) * tiles_per_row + blk / 4, rr = r % 128;
      const double scale = sc.data()[tile * 512 + (rr % 32) * 16 + (rr / 32) * 4 + blk % 4];
      out.data()[r * K + c] = e2m1[(c % 2 ? byte >> 4 : byte) & 15u] * scale;
    }
  return out;
}
}  // namespace kg

// fp8 scaled matmul: (a · b) · scale_a · scale_b (+ bias); scales per tensor, per row of a
// (M×1) or per column of b (1×N). nvfp4 operands: both dequantised (dequant_nvfp4), then a · bᵀ.
KG_OP(aten__scaled_mm_default) {
  const kg::A& bias = kg::arg(p, k, 4, "bias");
  const bool hb = !bias.none();
  if (p[0].t.dt == kg::F4X2) {
    const kg::T a = kg::dequant_nvfp4(p[0].t, p[2].t), b = kg::dequant_nvfp4(kg::permute(p[1].t, {1, 0}), p[3].t);
    kg::T prod = kg::mm(a, kg::permute(b, {1, 0}), kg::F64);
    std::vector<kg::T> ins{prod};
    if (hb) ins.push_back(bias.t);
    return {kg::A(kg::map(ins, o[0], [&](const double* v) { return hb ? static_cast<float>(v[0]) + v[1] : v[0]; }))};
  }
  kg::T prod = kg::mm(p[0].t, p[1].t, kg::F64);
  const kg::T sa = p[2].t.numel() == 1 ? kg::reshape(p[2].t, {}) : p[2].t;
  const kg::T sb = p[3].t.numel() == 1 ? kg::reshape(p[3].t, {}) : p[3].t;
  std::vector<kg::T> ins{prod, sa, sb};
  if (hb) ins.push_back(bias.t);
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

// Pooling and resampling work on the last two dims: planes of h × w, `n` of them.
namespace kg {
struct Planes { int64_t n, h, w; };
inline Planes planes_of(const T& x) {
  const int64_t h = x.shape[x.dim() - 2], w = x.shape[x.dim() - 1];
  return {x.numel() / std::max<int64_t>(h * w, 1), h, w};
}
inline Shape with_plane(Shape s, int64_t h, int64_t w) {
  s[s.size() - 2] = h;
  s[s.size() - 1] = w;
  return s;
}
}  // namespace kg

// max_pool2d over the last two dims of a (N, C, H, W) or (C, H, W) tensor; indices are flat
// positions within each H×W plane (torch's convention); NaN wins, the first maximum is kept.
KG_OP(aten_max_pool2d_with_indices_default) {
  const kg::T x = kg::contig(p[0].t);
  auto pair = [](kg::Shape s, kg::Shape dflt) { return s.empty() ? dflt : s.size() == 1 ? kg::Shape{s[0], s[0]} : s; };
  const kg::Shape ks = pair(p[1].ints(), {1, 1}), st = pair(kg::arg(p, k, 2, "stride").ints(), ks),
                  pd = pair(kg::arg(p, k, 3, "padding").ints(), {0, 0}), dl = pair(kg::arg(p, k, 4, "dilation").ints(), {1, 1});
  const bool ceil = kg::arg(p, k, 5, "ceil_mode").num() != 0;
  const auto [planes, H, W] = kg::planes_of(x);
  auto out_len = [&](int64_t in, int d) {
    const int64_t span = in + 2 * pd[d] - dl[d] * (ks[d] - 1) - 1;
    int64_t n = (ceil ? (span + st[d] - 1) / st[d] : span / st[d]) + 1;
    if (ceil && (n - 1) * st[d] >= in + pd[d]) --n;  // the last window must start inside the input or left padding
    return n;
  };
  const int64_t OH = out_len(H, 0), OW = out_len(W, 1);
  const kg::Shape os = kg::with_plane(x.shape, OH, OW);
  kg::T v = kg::empty(os, o[0]), ix = kg::empty(os, o.size() > 1 && o[1] >= 0 ? o[1] : kg::I64);
  for (int64_t pl = 0; pl < planes; ++pl)
    for (int64_t oh = 0; oh < OH; ++oh)
      for (int64_t ow = 0; ow < OW; ++ow) {
        double best = -kg::kInf;
        int64_t at = -1;
        for (int64_t i = 0; i < ks[0]; ++i)
          for (int64_t j = 0; j < ks[1]; ++j) {
            const int64_t h = oh * st[0] - pd[0] + i * dl[0], w = ow * st[1] - pd[1] + j * dl[1];
            if (h < 0 || h >= H || w < 0 || w >= W) continue;
            const double e = x.data()[pl * H * W + h * W + w];
            if (at < 0 || e > best || (std::isnan(e) && !std::isnan(best))) { best = e; at = h * W + w; }
          }
        const int64_t q = (pl * OH + oh) * OW + ow;
        v.data()[q] = best;
        ix.data()[q] = static_cast<double>(at);
      }
  return {kg::A(v), kg::A(ix)};
}

// Bilinear resampling of the last two dims (torch's upsample_bilinear2d): source coordinate
// (dst + 0.5) * in / out - 0.5 clamped at 0, or dst * (in - 1) / (out - 1) with align_corners;
// the size comes from output_size or, when that is None, from scale_factors (scale 1 / factor).
namespace kg {
struct LerpTap { int64_t i0, i1; double l; };
inline std::vector<LerpTap> lerp_taps(int64_t in, int64_t out, bool align, double factor) {
  std::vector<LerpTap> t(static_cast<size_t>(out));
  const double scale = align ? (out > 1 ? static_cast<double>(in - 1) / static_cast<double>(out - 1) : 0.0)
                             : (factor > 0 ? 1.0 / factor : static_cast<double>(in) / static_cast<double>(out));
  for (int64_t d = 0; d < out; ++d) {
    const double src = align ? d * scale : std::max((d + 0.5) * scale - 0.5, 0.0);
    const int64_t i0 = std::min(static_cast<int64_t>(src), in - 1);
    t[static_cast<size_t>(d)] = {i0, std::min(i0 + 1, in - 1), src - static_cast<double>(i0)};
  }
  return t;
}
}  // namespace kg
KG_OP(aten_upsample_bilinear2d_vec) {
  const kg::T x = kg::contig(p[0].t);
  const kg::A& size = kg::arg(p, k, 1, "output_size");
  const bool align = kg::arg(p, k, 2, "align_corners").num() != 0;
  const kg::A& sf = kg::arg(p, k, 3, "scale_factors");
  const auto [planes, H, W] = kg::planes_of(x);
  std::vector<double> f{0.0, 0.0};
  int64_t OH, OW;
  if (!size.none()) {
    const kg::Shape s = size.ints();
    OH = s[0];
    OW = s[1];
  } else {
    for (size_t d = 0; d < 2; ++d) f[d] = sf.l.size() == 1 ? sf.l[0].num() : sf.l[d].num();
    OH = static_cast<int64_t>(std::floor(H * f[0]));
    OW = static_cast<int64_t>(std::floor(W * f[1]));
  }
  const auto th = kg::lerp_taps(H, OH, align, f[0]), tw = kg::lerp_taps(W, OW, align, f[1]);
  kg::T out = kg::empty(kg::with_plane(x.shape, OH, OW), o[0]);
  for (int64_t pl = 0; pl < planes; ++pl) {
    const double* a = x.data() + pl * H * W;
    for (int64_t oh = 0; oh < OH; ++oh)
      for (int64_t ow = 0; ow < OW; ++ow) {
        const kg::LerpTap& r = th[static_cast<size_t>(oh)];
        const kg::LerpTap& c = tw[static_cast<size_t>(ow)];
        const double top = (1 - c.l) * a[r.i0 * W + c.i0] + c.l * a[r.i0 * W + c.i1];
        const double bot = (1 - c.l) * a[r.i1 * W + c.i0] + c.l * a[r.i1 * W + c.i1];
        out.data()[(pl * OH + oh) * OW + ow] = kg::rnd(o[0], (1 - r.l) * top + r.l * bot);
      }
  }
  return {kg::A(out)};
}
