// 004_gemm_n128_k2048 — C = A @ B.T through cuBLASLt (fp16 in, fp16 out, fp32 accumulate and fp32
// alpha/beta, as torch.matmul does for fp16). A [M, K], B [N, K], C [M, N], all row-major; N = 128 and
// K = 2048 in the definition, but every size is read from the arguments.
//
// Row-major C = A·Bᵀ is column-major Cᵀ [N, M] = op(B)·A with B seen as a column-major K×N matrix
// (ld K, transposed) and A as a column-major K×M matrix (ld K, not transposed); Cᵀ has ld N.
//
// Cached once in statics: the cuBLASLt handle and a 32 MiB workspace. Cached per (M, N, K, pointer
// alignment class): the matmul descriptor, layouts and the heuristic's algorithm. No pointer is ever
// cached: the judge calls run() many times with different buffers. Launches on the default stream.
// If cuBLASLt cannot run a shape, a plain fp32-accumulating kernel computes it instead.
#include <kernelarc/abi.h>

#include <cublasLt.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <map>
#include <mutex>
#include <tuple>

namespace {

constexpr size_t kWorkspaceBytes = 32u << 20;

struct LtContext {
  cublasLtHandle_t handle = nullptr;
  void* workspace = nullptr;
  size_t workspace_bytes = 0;
  bool ok = false;
};

LtContext& lt_context() {
  static LtContext ctx = [] {
    LtContext c;
    if (cublasLtCreate(&c.handle) != CUBLAS_STATUS_SUCCESS) return c;
    if (cudaMalloc(&c.workspace, kWorkspaceBytes) == cudaSuccess) {
      c.workspace_bytes = kWorkspaceBytes;
    } else {
      (void)cudaGetLastError();
      c.workspace = nullptr;  // run without a workspace
    }
    c.ok = true;
    return c;
  }();
  return ctx;
}

struct Plan {
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t lay_b = nullptr, lay_a = nullptr, lay_c = nullptr;
  cublasLtMatmulAlgo_t algo{};
  bool ok = false;
};

// Largest power of two (<= 256) that divides the address: the heuristic must only pick kernels that
// tolerate the actual alignment.
uint32_t alignment_of(const void* p) {
  uintptr_t a = reinterpret_cast<uintptr_t>(p);
  uint32_t al = 256;
  while (al > 1 && (a % al) != 0) al >>= 1;
  return al;
}

using PlanKey = std::tuple<int64_t, int64_t, int64_t, uint32_t, uint32_t, uint32_t>;

Plan make_plan(const LtContext& ctx, int64_t M, int64_t N, int64_t K, uint32_t al_a, uint32_t al_b, uint32_t al_c) {
  Plan p;
  if (cublasLtMatmulDescCreate(&p.op, CUBLAS_COMPUTE_32F, CUDA_R_32F) != CUBLAS_STATUS_SUCCESS) return p;
  cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
  cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof(ta));
  cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof(tb));
  // Lt operand "A" is our B (K×N column-major, ld K); Lt operand "B" is our A (K×M, ld K).
  if (cublasLtMatrixLayoutCreate(&p.lay_b, CUDA_R_16F, K, N, K) != CUBLAS_STATUS_SUCCESS) return p;
  if (cublasLtMatrixLayoutCreate(&p.lay_a, CUDA_R_16F, K, M, K) != CUBLAS_STATUS_SUCCESS) return p;
  if (cublasLtMatrixLayoutCreate(&p.lay_c, CUDA_R_16F, N, M, N) != CUBLAS_STATUS_SUCCESS) return p;

  cublasLtMatmulPreference_t pref = nullptr;
  if (cublasLtMatmulPreferenceCreate(&pref) != CUBLAS_STATUS_SUCCESS) return p;
  size_t ws = ctx.workspace_bytes;
  cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof(ws));
  cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &al_b, sizeof(al_b));
  cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &al_a, sizeof(al_a));
  cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &al_c, sizeof(al_c));
  cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &al_c, sizeof(al_c));
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  cublasStatus_t st = cublasLtMatmulAlgoGetHeuristic(ctx.handle, p.op, p.lay_b, p.lay_a, p.lay_c, p.lay_c, pref, 1,
                                                     &result, &found);
  cublasLtMatmulPreferenceDestroy(pref);
  if (st != CUBLAS_STATUS_SUCCESS || found == 0 || result.state != CUBLAS_STATUS_SUCCESS) return p;
  p.algo = result.algo;
  p.ok = true;
  return p;
}

// Fallback: one thread per output element, fp32 accumulation. Slow but always correct.
__global__ void gemm_fallback_kernel(const __half* __restrict__ A, const __half* __restrict__ B, __half* __restrict__ C,
                                     int64_t M, int64_t N, int64_t K) {
  const int64_t n = static_cast<int64_t>(blockIdx.y) * blockDim.x + threadIdx.x;
  const int64_t m = blockIdx.x;
  if (n >= N || m >= M) return;
  float acc = 0.f;
  for (int64_t k = 0; k < K; ++k) acc = fmaf(__half2float(A[m * K + k]), __half2float(B[n * K + k]), acc);
  C[m * N + n] = __float2half_rn(acc);
}

void gemm_fallback(const __half* A, const __half* B, __half* C, int64_t M, int64_t N, int64_t K) {
  dim3 grid(static_cast<unsigned>(M), static_cast<unsigned>((N + 127) / 128));
  gemm_fallback_kernel<<<grid, 128>>>(A, B, C, M, N, K);
}

}  // namespace

void run(const ka::TensorArg& A, const ka::TensorArg& B, const ka::TensorArg& C) {
  const int64_t M = A.size(0), K = A.size(1), N = B.size(0);
  if (M <= 0 || N <= 0) return;
  const auto* a = A.ptr<const __half>();
  const auto* b = B.ptr<const __half>();
  auto* c = C.ptr<__half>();
  if (K <= 0) {
    cudaMemsetAsync(c, 0, static_cast<size_t>(M * N) * sizeof(__half));
    return;
  }

  LtContext& ctx = lt_context();
  if (ctx.ok) {
    static std::mutex mu;
    static std::map<PlanKey, Plan> plans;
    const uint32_t al_a = alignment_of(a), al_b = alignment_of(b), al_c = alignment_of(c);
    const PlanKey key{M, N, K, al_a, al_b, al_c};
    Plan plan;
    {
      std::lock_guard<std::mutex> lock(mu);
      auto it = plans.find(key);
      if (it == plans.end()) it = plans.emplace(key, make_plan(ctx, M, N, K, al_a, al_b, al_c)).first;
      plan = it->second;
    }
    if (plan.ok) {
      const float alpha = 1.0f, beta = 0.0f;
      cublasStatus_t st = cublasLtMatmul(ctx.handle, plan.op, &alpha, b, plan.lay_b, a, plan.lay_a, &beta, c,
                                         plan.lay_c, c, plan.lay_c, &plan.algo, ctx.workspace, ctx.workspace_bytes,
                                         /*stream=*/0);
      if (st == CUBLAS_STATUS_SUCCESS) return;
    }
  }
  gemm_fallback(a, b, c, M, N, K);
}
