// 023_rmsnorm_h1536 — RMSNorm, hidden_size=1536, eps=1e-6:
// y = bf16((x * rsqrt(mean(x^2) + eps)) * float(weight)), x = float(hidden_states).
// bf16 in/out, fp32 accumulation; one 96-thread block per row, 2 x 16-byte vector(s) per thread; default stream.
#include <kernelarc/abi.h>

#include "rmsnorm.cuh"

void run(const ka::TensorArg& hidden_states, const ka::TensorArg& weight, const ka::TensorArg& output) {
  karms::launch<1536, 96, 2, false>(hidden_states, nullptr, weight, output, 1e-6f);
}
