// kgc_gemm.cuh — the GEMM of the CUDA graph backend (family graph_cuda; expanded into
// graph_rt.cu): strided batched C[b] = alpha · op(A[b]) · op(B[b]) + beta · C[b] over row-major
// matrices (A: M×K, or K×M read transposed; B: K×N, or N×K read transposed; C: M×N), batch strides
// M·K, K·N, M·N. On the GPU through cuBLASLt with fp32 compute (fp64 for float64; TF32 only when the
// generated code asks for it, which it does only where the problem's tolerance allows it): the
// descriptors and the heuristic's algorithm are built once per shape, dtype and operand alignment
// and cached, the handle and a 32 MiB workspace once per process. Where cuBLASLt refuses (or under
// KA_EMULATE) a plain kernel computes C, one thread per element, accumulating in the compute type.

namespace kgc {

struct Gemm {
  int dtype;          // ka::DTypeCode of A, B and C (fp32, fp16, bf16, fp64)
  const void* a;
  const void* b;
  void* c;
  bool ta, tb;        // A stored K×M / B stored N×K (read transposed)
  int64_t batch, m, n, k;
  double alpha, beta;
  bool tf32;
  const void* bias = nullptr;  // n values added to every row before the one rounding (addmm's bias)
};

template <int DT, typename I>
__global__ void __launch_bounds__(256) gemm_naive_kernel(Gemm g) {
  using T = CT<DT>;
  const I total = static_cast<I>(g.batch * g.m * g.n);
  for (I e = static_cast<I>(blockIdx.x) * 256 + threadIdx.x; e < total; e += static_cast<I>(gridDim.x) * 256) {
    const I col = e % g.n, row = (e / g.n) % g.m, b = e / (g.n * g.m);
    const I ab = b * g.m * g.k, bb = b * g.k * g.n;
    T acc = T(0);
    for (I kk = 0; kk < g.k; ++kk) {
      const T x = ld<DT>(g.a, ab + (g.ta ? kk * g.m + row : row * g.k + kk));
      const T y = ld<DT>(g.b, bb + (g.tb ? col * g.k + kk : kk * g.n + col));
      acc += x * y;
    }
    T out = static_cast<T>(g.alpha) * acc;
    if (g.bias) out += ld<DT>(g.bias, col);
    if (g.beta != 0) out += static_cast<T>(g.beta) * ld<DT>(g.c, e);
    st<DT>(g.c, e, out);
  }
}

template <int DT>
inline void gemm_naive(const Gemm& g) {
  const int64_t total = g.batch * g.m * g.n;
  const unsigned grid = grid_for(total, 256);
  if (fits32({total, g.batch * g.m * g.k, g.batch * g.k * g.n})) {
    auto* k = &gemm_naive_kernel<DT, int32_t>;
    KA_LAUNCH(k, dim3(grid), dim3(256), 0, g);
  } else {
    auto* k = &gemm_naive_kernel<DT, int64_t>;
    KA_LAUNCH(k, dim3(grid), dim3(256), 0, g);
  }
}

inline void gemm_naive_any(const Gemm& g) {
  switch (g.dtype) {
    case ka::kFloat64: gemm_naive<ka::kFloat64>(g); break;
    case ka::kFloat16: gemm_naive<ka::kFloat16>(g); break;
    case ka::kBFloat16: gemm_naive<ka::kBFloat16>(g); break;
    default: gemm_naive<ka::kFloat32>(g); break;
  }
}

#ifndef KA_EMULATE
struct LtPlan {
  bool ok = false;
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t la = nullptr, lb = nullptr, lc = nullptr;
  cublasLtMatmulAlgo_t algo{};
};

struct LtState {
  cublasLtHandle_t handle = nullptr;
  void* ws = nullptr;
  bool ok = false;
  std::map<std::vector<int64_t>, LtPlan> plans;
};
constexpr size_t kLtWorkspace = size_t(32) << 20;

inline LtState& lt_state() {
  static LtState* s = [] {
    auto* st = new LtState;  // never destroyed: cuBLASLt and CUDA may be gone at exit
    st->ok = cublasLtCreate(&st->handle) == CUBLAS_STATUS_SUCCESS && cudaMalloc(&st->ws, kLtWorkspace) == cudaSuccess;
    return st;
  }();
  return *s;
}

inline int64_t ptr_alignment(const void* p) {
  const uintptr_t v = reinterpret_cast<uintptr_t>(p);
  int64_t a = 256;
  while (a > 1 && v % static_cast<uintptr_t>(a)) a /= 2;
  return a;
}

inline cublasLtMatrixLayout_t lt_layout(cudaDataType_t t, uint64_t rows, uint64_t cols, int64_t ld, int64_t batch,
                                        int64_t stride) {
  cublasLtMatrixLayout_t l = nullptr;
  if (cublasLtMatrixLayoutCreate(&l, t, rows, cols, ld) != CUBLAS_STATUS_SUCCESS) return nullptr;
  const int32_t count = static_cast<int32_t>(batch);
  cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof(count));
  cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof(stride));
  return l;
}

// Row-major C = A·B is column-major Cᵀ (N×M) = Bᵀ·Aᵀ: cuBLASLt's "A" is our B, its "B" our A.
inline LtPlan lt_plan(LtState& s, const Gemm& g, int64_t align) {
  LtPlan p;
  const cudaDataType_t t = g.dtype == ka::kFloat64 ? CUDA_R_64F : g.dtype == ka::kFloat16 ? CUDA_R_16F
                           : g.dtype == ka::kBFloat16 ? CUDA_R_16BF : CUDA_R_32F;
  const cublasComputeType_t ct = g.dtype == ka::kFloat64 ? CUBLAS_COMPUTE_64F
                                 : (g.dtype == ka::kFloat32 && g.tf32) ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  const cudaDataType_t scale = g.dtype == ka::kFloat64 ? CUDA_R_64F : CUDA_R_32F;
  if (cublasLtMatmulDescCreate(&p.op, ct, scale) != CUBLAS_STATUS_SUCCESS) return p;
  const cublasOperation_t opa = g.tb ? CUBLAS_OP_T : CUBLAS_OP_N, opb = g.ta ? CUBLAS_OP_T : CUBLAS_OP_N;
  cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_TRANSA, &opa, sizeof(opa));
  cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_TRANSB, &opb, sizeof(opb));
  if (g.bias) {  // cuBLASLt's bias is per row of its column-major D, i.e. per column of ours
    const cublasLtEpilogue_t epi = CUBLASLT_EPILOGUE_BIAS;  // its pointer is set per call (lt_gemm)
    cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof(epi));
  }
  p.la = g.tb ? lt_layout(t, g.k, g.n, g.k, g.batch, g.n * g.k) : lt_layout(t, g.n, g.k, g.n, g.batch, g.n * g.k);
  p.lb = g.ta ? lt_layout(t, g.m, g.k, g.m, g.batch, g.m * g.k) : lt_layout(t, g.k, g.m, g.k, g.batch, g.m * g.k);
  p.lc = lt_layout(t, g.n, g.m, g.n, g.batch, g.m * g.n);
  if (!p.la || !p.lb || !p.lc) return p;
  cublasLtMatmulPreference_t pref = nullptr;
  if (cublasLtMatmulPreferenceCreate(&pref) != CUBLAS_STATUS_SUCCESS) return p;
  const uint64_t ws = kLtWorkspace;
  const uint32_t al = static_cast<uint32_t>(align);
  cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof(ws));
  for (auto attr : {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
                    CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES})
    cublasLtMatmulPreferenceSetAttribute(pref, attr, &al, sizeof(al));
  cublasLtMatmulHeuristicResult_t res{};
  int found = 0;
  if (cublasLtMatmulAlgoGetHeuristic(s.handle, p.op, p.la, p.lb, p.lc, p.lc, pref, 1, &res, &found) ==
          CUBLAS_STATUS_SUCCESS && found > 0) {
    p.algo = res.algo;
    p.ok = true;
  }
  cublasLtMatmulPreferenceDestroy(pref);
  return p;
}

inline bool lt_gemm(const Gemm& g) {
  LtState& s = lt_state();
  if (!s.ok) return false;
  int64_t align = std::min(ptr_alignment(g.a), std::min(ptr_alignment(g.b), ptr_alignment(g.c)));
  if (g.bias) align = std::min(align, ptr_alignment(g.bias));
  const std::vector<int64_t> key{g.dtype, g.ta, g.tb, g.tf32, g.batch, g.m, g.n, g.k, align, g.bias != nullptr};
  auto it = s.plans.find(key);
  if (it == s.plans.end()) it = s.plans.emplace(key, lt_plan(s, g, align)).first;
  const LtPlan& p = it->second;
  if (!p.ok) return false;
  if (g.bias)  // the plan is shared by every call of this shape: point it at this call's bias
    cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &g.bias, sizeof(g.bias));
  const float af = static_cast<float>(g.alpha), bf = static_cast<float>(g.beta);
  const void* alpha = g.dtype == ka::kFloat64 ? static_cast<const void*>(&g.alpha) : &af;
  const void* beta = g.dtype == ka::kFloat64 ? static_cast<const void*>(&g.beta) : &bf;
  return cublasLtMatmul(s.handle, p.op, alpha, g.b, p.la, g.a, p.lb, beta, g.c, p.lc, g.c, p.lc, &p.algo, s.ws,
                        kLtWorkspace, 0) == CUBLAS_STATUS_SUCCESS;
}
#endif

inline void gemm(const Gemm& g) {
  if (g.batch <= 0 || g.m <= 0 || g.n <= 0) return;
#ifndef KA_EMULATE
  if (g.k > 0 && lt_gemm(g)) return;
#endif
  gemm_naive_any(g);
}

}  // namespace kgc
