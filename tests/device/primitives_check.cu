// tests/device/primitives_check.cu — checks each primitive of the device layer
// (include/kernelarc/device/) on its own, against a plain host computation. One source, two
// builds: g++ -DKA_EMULATE (the CPU emulator; tests/test_device.cpp runs it in CI) and nvcc for
// sm_90a (bench/tools/device_selftest.sh runs it on a GPU).
// (KvSegments and the ragged walk run in one warp here: their warp collectives need whole warps.) Prints one line per check and "N checks, M
// failed"; exits 1 when one failed.
#include <kernelarc/device/all.cuh>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <vector>

using namespace ka_dev;

namespace {

int g_checks = 0, g_failed = 0;
void check(bool ok, const char* what) {
  ++g_checks;
  if (!ok) ++g_failed;
  std::printf("%s %s\n", ok ? "ok  " : "FAIL", what);
}

// Memory both sides see: host memory under the emulator, managed memory on the GPU.
template <typename T>
T* shared_alloc(size_t n) {
#ifdef KA_EMULATE
  T* p = new T[n];
#else
  T* p = nullptr;
  cudaMallocManaged(&p, n * sizeof(T));
#endif
  std::memset(static_cast<void*>(p), 0, n * sizeof(T));
  return p;
}
void sync() { cudaDeviceSynchronize(); }

// ── reductions ──
__global__ void reduce_kernel(const float* x, float* out) {
  KA_DYN_SMEM(smem);
  float* red = reinterpret_cast<float*>(smem);
  const int t = threadIdx.x;
  const float v = x[t];
  out[t] = warp_sum<32>(v);
  out[128 + t] = warp_max<8>(v);
  out[256 + t] = block_sum<4>(v, red);
  out[384 + t] = block_max<4>(v, red);
}
void check_reductions() {
  float* x = shared_alloc<float>(128);
  float* out = shared_alloc<float>(512);
  for (int i = 0; i < 128; ++i) x[i] = static_cast<float>((i * 37) % 101) - 50.f;
  KA_LAUNCH(reduce_kernel, dim3(1), dim3(128), 16, x, out);
  sync();
  bool ws = true, wm = true, bs = true, bm = true;
  float tot = 0.f, mx = -1e30f;
  for (int i = 0; i < 128; ++i) tot += x[i], mx = std::fmax(mx, x[i]);
  for (int i = 0; i < 128; ++i) {
    float s = 0.f, m = -1e30f;
    for (int j = i / 32 * 32; j < i / 32 * 32 + 32; ++j) s += x[j];
    for (int j = i / 8 * 8; j < i / 8 * 8 + 8; ++j) m = std::fmax(m, x[j]);
    ws &= out[i] == s;  // integers: exact in any order
    wm &= out[128 + i] == m;
    bs &= out[256 + i] == tot;
    bm &= out[384 + i] == mx;
  }
  check(ws, "warp_sum<32>");
  check(wm, "warp_max<8>");
  check(bs, "block_sum<4>");
  check(bm, "block_max<4>");
}

// ── online softmax and the split-KV merge ──
__global__ void softmax_kernel(const float* x, int n, int tile, float* out) {
  if (threadIdx.x != 0) return;
  OnlineSoftmax s;
  for (int t0 = 0; t0 < n; t0 += tile) {
    float tm = -__builtin_huge_valf();
    for (int i = t0; i < t0 + tile && i < n; ++i) tm = fmaxf(tm, x[i]);
    s.rescale(tm);
    for (int i = t0; i < t0 + tile && i < n; ++i) s.add(s.p(x[i]));
  }
  out[0] = s.m;
  out[1] = s.l;
  // two partials of a weighted sum over halves, merged
  float M = -__builtin_huge_valf(), L = 0.f, acc[2] = {0.f, 0.f};
  for (int h = 0; h < 2; ++h) {
    float m = -__builtin_huge_valf(), l = 0.f, o[2] = {0.f, 0.f};
    for (int i = h * n / 2; i < (h + 1) * n / 2; ++i) m = fmaxf(m, x[i]);
    for (int i = h * n / 2; i < (h + 1) * n / 2; ++i) {
      const float p = exp2f(x[i] - m);
      l += p;
      o[0] += p * static_cast<float>(i);
      o[1] += p;
    }
    const float ov[2] = {o[0] / l, o[1] / l};
    lse_merge(M, L, acc, m + log2f(l), ov);
  }
  out[2] = acc[0] / L;
  out[3] = acc[1] / L;
  out[4] = M + log2f(L);
}
void check_softmax() {
  const int n = 40;
  float* x = shared_alloc<float>(n);
  float* out = shared_alloc<float>(8);
  for (int i = 0; i < n; ++i) x[i] = std::sin(0.7f * i) * 6.f;
  KA_LAUNCH(softmax_kernel, dim3(1), dim3(32), 0, x, n, 7, out);
  sync();
  double m = -1e30, l = 0, num = 0;
  for (int i = 0; i < n; ++i) m = std::fmax(m, x[i]);
  for (int i = 0; i < n; ++i) l += std::exp2(x[i] - m), num += std::exp2(x[i] - m) * i;
  check(out[0] == static_cast<float>(m) && std::fabs(out[1] - l) < 1e-4 * l, "OnlineSoftmax over tiles of 7");
  check(std::fabs(out[2] - num / l) < 1e-3 && std::fabs(out[3] - 1.f) < 1e-5 &&
            std::fabs(out[4] - (m + std::log2(l))) < 1e-4,
        "lse_merge of two partials");
}

// ── ragged index walk ──
__global__ void count_le_kernel(const int* ip, int B, const int* xs, int nx, int* out) {
  const int lane = threadIdx.x & 31;
  for (int i = 0; i < nx; ++i) {
    const int c = count_le(ip, B, xs[i], lane);
    if (lane == 0) out[i] = c;
  }
  if (lane == 0) out[nx] = clamp_page(-1, 9) == 9 && clamp_page(4, 9) == 4 && clamp_page(12, 9) == 9;
}
void check_count_le() {
  const int B = 70;
  int* ip = shared_alloc<int>(B + 1);
  for (int b = 1; b <= B; ++b) ip[b] = ip[b - 1] + (b % 5 == 0 ? 0 : (b * 7) % 13);  // empty sequences too
  const int nx = 64;
  int* xs = shared_alloc<int>(nx);
  int* out = shared_alloc<int>(nx + 1);
  for (int i = 0; i < nx; ++i) xs[i] = (i * ip[B]) / (nx - 1) - 1;
  KA_LAUNCH(count_le_kernel, dim3(1), dim3(32), 0, ip, B, xs, nx, out);
  sync();
  bool ok = true;
  for (int i = 0; i < nx; ++i) {
    int c = 0;
    for (int b = 1; b <= B; ++b) c += ip[b] <= xs[i];
    ok &= out[i] == c;
  }
  check(ok, "count_le (a 32-ary warp search)");
  check(out[nx] == 1, "clamp_page");
}

// ── copies: cp.async groups and an mbarrier-completed bulk copy ──
__global__ void copy_kernel(const uint4* src, uint4* out) {
  KA_DYN_SMEM(smem);
  uint4* s = reinterpret_cast<uint4*>(smem);
  const uint32_t bar = smem_u32(smem + 2048);
  const int t = threadIdx.x;
  cp_async_16(smem_u32(s + t), src + t, 16);
  cp_async_16(smem_u32(s + 32 + t), src + t, 0);  // zero fill
  cp_async_commit();
  cp_async_wait_n<0>();
  __syncthreads();
  out[t] = s[t];
  out[32 + t] = s[32 + t];
  if (t == 0) {
    mbar_init(bar, 1);
    mbar_fence_init();
  }
  __syncthreads();
  if (t == 0) {
    mbar_arrive_expect_tx(bar, 512);
    bulk_copy_g2s(smem_u32(s + 64), src, 512, bar);
  }
  mbar_wait(bar, 0);
  out[64 + t] = s[64 + t];
  __syncthreads();
}
void check_copies() {
  uint4* src = shared_alloc<uint4>(32);
  uint4* out = shared_alloc<uint4>(96);
  for (int i = 0; i < 32; ++i) src[i] = make_uint4(4 * i, 4 * i + 1, 4 * i + 2, 4 * i + 3);
  KA_LAUNCH(copy_kernel, dim3(1), dim3(32), 2048 + 16, src, out);
  sync();
  bool a = true, z = true, b = true;
  for (int i = 0; i < 32; ++i) {
    a &= out[i].x == src[i].x && out[i].w == src[i].w;
    z &= out[32 + i].x == 0 && out[32 + i].w == 0;
    b &= out[64 + i].y == src[i].y && out[64 + i].z == src[i].z;
  }
  check(a, "cp_async_16 + commit + wait");
  check(z, "cp_async_16 zero fill");
  check(b, "bulk_copy_g2s on an mbarrier");
}

// ── ldmatrix + mma.sync m16n8k16 ──
// A 16x16 row-major and B^T 8x16 row-major (B "col") in shared memory; one warp computes C = A*B.
__global__ void mma_kernel(const uint16_t* a, const uint16_t* bt, float* c) {
  KA_DYN_SMEM(smem);
  uint16_t* sa = reinterpret_cast<uint16_t*>(smem);
  uint16_t* sb = sa + 256;
  const int lane = threadIdx.x;
  for (int i = lane; i < 256; i += 32) sa[i] = a[i];
  for (int i = lane; i < 128; i += 32) sb[i] = bt[i];
  __syncthreads();
  uint32_t af[4], b0, b1, b2, b3;
  // x4: matrices (rows 0-7, k 0-7), (rows 8-15, k 0-7), (rows 0-7, k 8-15), (rows 8-15, k 8-15)
  const int r = lane % 16, kh = lane / 16;
  ldsm_x4(smem_u32(sa + r * 16 + kh * 8), af[0], af[1], af[2], af[3]);
  // B^T rows n 0-7 at k 0-7 and k 8-15 (lanes 16-31 repeat them)
  ldsm_x4(smem_u32(sb + (lane % 8) * 16 + ((lane / 8) % 2) * 8), b0, b1, b2, b3);
  float acc[4] = {0.f, 0.f, 0.f, 0.f};
  mma_bf16(acc, af, b0, b1);
  const int g = lane / 4, q = lane % 4;
  c[g * 8 + 2 * q] = acc[0];
  c[g * 8 + 2 * q + 1] = acc[1];
  c[(g + 8) * 8 + 2 * q] = acc[2];
  c[(g + 8) * 8 + 2 * q + 1] = acc[3];
}
void check_mma() {
  uint16_t* a = shared_alloc<uint16_t>(256);
  uint16_t* bt = shared_alloc<uint16_t>(128);
  float* c = shared_alloc<float>(128);
  auto bf = [](float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return static_cast<uint16_t>(u >> 16);  // small integers: exact
  };
  for (int i = 0; i < 256; ++i) a[i] = bf(static_cast<float>(i % 7 - 3));
  for (int i = 0; i < 128; ++i) bt[i] = bf(static_cast<float>(i % 5 - 2));
  KA_LAUNCH(mma_kernel, dim3(1), dim3(32), 1024, a, bt, c);
  sync();
  bool ok = true;
  for (int m = 0; m < 16; ++m)
    for (int n = 0; n < 8; ++n) {
      float ref = 0.f;
      for (int k = 0; k < 16; ++k) ref += static_cast<float>((m * 16 + k) % 7 - 3) * static_cast<float>((n * 16 + k) % 5 - 2);
      ok &= c[m * 8 + n] == ref;
    }
  check(ok, "ldsm_x4 + mma_bf16 (m16n8k16)");
}

// ── conversions ──
__global__ void convert_kernel(const float* x, int n, uint8_t* e4, uint8_t* e5, uint8_t* f4, float* back) {
  for (int i = threadIdx.x; i < n; i += blockDim.x) {
    e4[i] = float_to_fp8e4m3(x[i]);
    e5[i] = float_to_fp8e5m2(x[i]);
    f4[i] = float_to_fp4e2m1(x[i]);
  }
  for (int c = threadIdx.x; c < 256; c += blockDim.x) {
    back[c] = fp8e4m3_to_float(static_cast<uint8_t>(c));
    back[256 + c] = fp8e5m2_to_float(static_cast<uint8_t>(c));
    if (c < 16) back[512 + c] = fp4e2m1_to_float(static_cast<uint8_t>(c));
  }
  if (threadIdx.x == 0) {
    const uint32_t w = pack_bf16(1.5f, -2.25f);
    back[528] = bf_lo(w);
    back[529] = bf_hi(w);
    back[530] = to_float<F16>(to_f16(0.1f));
    back[531] = to_float<Bf16>(from_float<Bf16>(3.f));
  }
}
// The nearest code to x among the finite values of a decode table (ties: even code), saturated.
int nearest_code(const float* table, int ncodes, float x) {
  int best = -1;
  for (int c = 0; c < ncodes; ++c) {
    if (!std::isfinite(table[c])) continue;
    if (best < 0) {
      best = c;
      continue;
    }
    const double d = std::fabs(static_cast<double>(table[c]) - x), db = std::fabs(static_cast<double>(table[best]) - x);
    const bool same_sign = std::signbit(table[c]) == std::signbit(x);
    const bool best_sign = std::signbit(table[best]) == std::signbit(x);
    if ((same_sign && !best_sign) || (same_sign == best_sign && (d < db || (d == db && (c % 2 == 0) && best % 2 == 1)))) best = c;
  }
  return best;
}
void check_conversions() {
  const int n = 2001;
  float* x = shared_alloc<float>(n);
  for (int i = 0; i < n; ++i) x[i] = (i - 1000) * 0.37f * std::pow(1.013f, static_cast<float>(std::abs(i - 1000) % 400));
  uint8_t* e4 = shared_alloc<uint8_t>(n);
  uint8_t* e5 = shared_alloc<uint8_t>(n);
  uint8_t* f4 = shared_alloc<uint8_t>(n);
  float* back = shared_alloc<float>(540);
  KA_LAUNCH(convert_kernel, dim3(1), dim3(128), 0, x, n, e4, e5, f4, back);
  sync();
  check(back[0x38] == 1.f && back[0x7e] == 448.f && back[0x01] == std::ldexp(1.f, -9) && std::isnan(back[0x7f]) &&
            back[0xb8] == -1.f,
        "fp8e4m3_to_float (1, 448, min subnormal, NaN, -1)");
  check(back[256 + 0x3c] == 1.f && back[256 + 0x7b] == 57344.f && std::isinf(back[256 + 0x7c]) && std::isnan(back[256 + 0x7d]),
        "fp8e5m2_to_float (1, 57344, inf, NaN)");
  const float fp4[8] = {0.f, 0.5f, 1.f, 1.5f, 2.f, 3.f, 4.f, 6.f};
  bool d4 = true;
  for (int c = 0; c < 16; ++c) d4 &= back[512 + c] == (c & 8 ? -fp4[c & 7] : fp4[c & 7]);
  check(d4, "fp4e2m1_to_float (all 16 codes)");
  bool r4 = true, r5 = true, rf = true;
  for (int i = 0; i < n; ++i) {
    r4 &= e4[i] == nearest_code(back, 256, x[i]) || back[e4[i]] == back[nearest_code(back, 256, x[i])];
    r5 &= e5[i] == nearest_code(back + 256, 256, x[i]) || back[256 + e5[i]] == back[256 + nearest_code(back + 256, 256, x[i])];
    rf &= f4[i] == nearest_code(back + 512, 16, x[i]) || back[512 + f4[i]] == back[512 + nearest_code(back + 512, 16, x[i])];
  }
  check(r4, "float_to_fp8e4m3: nearest even, saturated");
  check(r5, "float_to_fp8e5m2: nearest even, saturated");
  check(rf, "float_to_fp4e2m1: nearest even, saturated");
  check(back[528] == 1.5f && back[529] == -2.25f, "pack_bf16 / bf_lo / bf_hi");
  check(std::fabs(back[530] - 0.1f) < 1e-4f && back[531] == 3.f, "to_f16 / to_float / from_float");
}


// ── fragment shuffles, the ragged work walk, the split-KV segment walk ──
__global__ void walk_kernel(const int* qo, int B, const int* kv, int nchunks, int chunk, int N, int* out) {
  KA_DYN_SMEM(smem);
  const int lane = threadIdx.x & 31;
  // quad_transpose: word i of lane 4q + j becomes word j of lane 4q + i
  uint32_t v[4];
  for (int i = 0; i < 4; ++i) v[i] = 100u * lane + i;
  quad_transpose(v, lane & 3);
  bool qt = true;
  for (int i = 0; i < 4; ++i) qt &= v[i] == 100u * ((lane & ~3) + i) + (lane & 3);
  float c[2][4] = {{1, 1, 1, 1}, {2, 2, 2, 2}};
  scale_rows(c, 3.f, 5.f);
  const bool sr = c[0][0] == 3.f && c[0][1] == 3.f && c[0][2] == 5.f && c[1][3] == 10.f;
  // longest first, then every tile in that order by the cursor
  float* cost = reinterpret_cast<float*>(smem);
  int* order = reinterpret_cast<int*>(smem + 256);
  for (int b = lane; b < B; b += 32) cost[b] = causal_cost(qo[b + 1] - qo[b], qo[b + 1] - qo[b] + 3);
  order_by_cost(cost, order, B, lane, 32);
  TileCursor<4> cur;
  int t = 0, bb, tile;
  while (cur.advance(qo, B, order, t, bb, tile)) {
    if (lane == 0) out[2 + 2 * t] = bb, out[3 + 2 * t] = tile;
    ++t;
  }
  // the segments of every chunk: each non-empty sequence's positions once, each empty one once
  int seen = 0;
  for (int unit = 0; unit < nchunks; ++unit) {
    int cs, ce;
    cta_token_range(kv, unit, chunk, N, cs, ce);
    KvSegments seg(kv, B, unit, nchunks, cs, ce, false, lane);
    bool have = seg.advance(seg.cur_b, [&](int b) { seen += 1000 * (b + 1); });
    while (have) {
      seen += seg.seg_e - seg.seg_s;
      if (seg.seg_e >= ce) break;
      have = seg.advance(seg.cur_b + 1, [&](int b) { seen += 1000 * (b + 1); });
    }
  }
  if (lane == 0) out[0] = qt && sr, out[1] = seen, out[1000] = t;
}
void check_walks() {
  const int B = 6;
  int* qo = shared_alloc<int>(B + 1);
  const int ql[B] = {5, 0, 9, 1, 4, 12};
  for (int b = 0; b < B; ++b) qo[b + 1] = qo[b] + ql[b];
  int* kv = shared_alloc<int>(B + 1);
  const int kl[B] = {7, 0, 16, 3, 0, 9};
  for (int b = 0; b < B; ++b) kv[b + 1] = kv[b] + kl[b];
  const int N = kv[B], chunk = 8, nchunks = (N + chunk - 1) / chunk;
  int* out = shared_alloc<int>(1001);
  KA_LAUNCH(walk_kernel, dim3(1), dim3(32), 512, qo, B, kv, nchunks, chunk, N, out);
  sync();
  check(out[0] == 1, "quad_transpose, scale_rows");
  // order by cost: 5 (12), 2 (9), 0 (5), 4 (4), 3 (1), 1 (0); tiles of 4 rows
  std::vector<std::pair<int, int>> want;
  for (int b : {5, 2, 0, 4, 3, 1})
    for (int t = 0; t < (ql[b] + 3) / 4; ++t) want.push_back({b, t});
  bool walk = out[1000] == static_cast<int>(want.size());
  for (size_t i = 0; walk && i < want.size(); ++i) walk &= out[2 + 2 * i] == want[i].first && out[3 + 2 * i] == want[i].second;
  check(walk, "causal_cost, order_by_cost, TileCursor");
  check(out[1] == N + 1000 * (1 + 1) + 1000 * (4 + 1), "cta_token_range, KvSegments (each position once, empty sequences once)");
}
}  // namespace

int main() {
  check_reductions();
  check_softmax();
  check_count_le();
  check_copies();
  check_mma();
  check_conversions();
  check_walks();
  std::printf("%d checks, %d failed\n", g_checks, g_failed);
  return g_failed ? 1 : 0;
}
