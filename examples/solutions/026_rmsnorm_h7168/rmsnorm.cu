// 026_rmsnorm_h7168 — RMSNorm, hidden_size=7168, eps=1e-6:
// y = bf16((x * rsqrt(mean(x^2) + eps)) * float(weight)), x = float(hidden_states).
// bf16 in/out, fp32 accumulation; one 224-thread block per row, 4 x 16-byte vector(s) per thread; default stream.
#include <kernelarc/abi.h>

#include "rmsnorm.cuh"

void run(const ka::TensorArg& hidden_states, const ka::TensorArg& weight, const ka::TensorArg& output) {
  karms::launch<7168, 224, 4, false>(hidden_states, nullptr, weight, output, 1e-6f);
}
