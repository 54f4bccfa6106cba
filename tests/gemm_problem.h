// tests/gemm_problem.h — a synthetic GEMM problem as the FlashInfer-Bench GEMM definitions spell
// it (fp16, C = A·Bᵀ, A [M, K], B [N, K], M variable, N and K constant), and the start of the
// emulated drivers, for the GEMM family tests.
#pragma once
#include <cstdint>

#include <fmt/format.h>

#include "problem/problem.h"

namespace ka::test {

inline Problem synthetic_gemm(int64_t n, int64_t k) {
  Problem p;
  p.dir = "/nonexistent/syn_gemm";
  p.def = parse_definition_text(fmt::format(R"J({{"name": "syn_gemm", "op_type": "gemm",
    "axes": {{"M": {{"type": "var"}}, "N": {{"type": "const", "value": {}}}, "K": {{"type": "const", "value": {}}}}},
    "inputs": {{"A": {{"shape": ["M", "K"], "dtype": "float16"}}, "B": {{"shape": ["N", "K"], "dtype": "float16"}}}},
    "outputs": {{"C": {{"shape": ["M", "N"], "dtype": "float16"}}}},
    "reference": "import torch\ndef run(A, B):\n    return torch.matmul(A, B.T)"}})J",
                                            n, k),
                                "synthetic");
  return p;
}

// The start of an emulated GEMM driver (appended to a family's instantiated source, built with g++
// against ka_emu.h): its includes and a row-major 2-D TensorArg maker; the test adds main().
inline const char* kGemmDriverPrelude = R"(
#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>
static ka::TensorArg arg(void* d, int dt, int64_t r, int64_t c) {
  ka::TensorArg t{};
  t.data = d; t.dtype = dt; t.ndim = 2; t.shape[0] = r; t.shape[1] = c; t.strides[0] = c; t.strides[1] = 1;
  return t;
}
// The outputs C[m][n] (to double by f) farther than tol (absolute and relative) from the double
// reference a·bᵀ (M x K, N x K); the first three are printed after `what`.
template <typename F>
static int count_wrong(const std::vector<uint16_t>& C, const std::vector<double>& a, const std::vector<double>& b, int M,
                       int N, int K, double tol, F f, const char* what) {
  int wrong = 0;
  for (int m = 0; m < M; ++m)
    for (int n = 0; n < N; ++n) {
      double ref = 0;
      for (int k = 0; k < K; ++k) ref += a[m * K + k] * b[n * K + k];
      const double got = f(C[m * N + n]);
      if (!(std::fabs(got - ref) <= tol + tol * std::fabs(ref)) && wrong++ < 3)
        std::printf("%s: C[%d,%d] = %g, expected %g\n", what, m, n, got, ref);
    }
  return wrong;
}
)";

}  // namespace ka::test
