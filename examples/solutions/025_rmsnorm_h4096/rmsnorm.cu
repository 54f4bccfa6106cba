// 025_rmsnorm_h4096 — RMSNorm, hidden_size=4096, eps=1e-5:
// y = bf16((x * rsqrt(mean(x^2) + eps)) * float(weight)), x = float(hidden_states).
// bf16 in/out, fp32 accumulation; one 256-thread block per row, 2 x 16-byte vector(s) per thread; default stream.
#include <kernelarc/abi.h>

#include "rmsnorm.cuh"

void run(const ka::TensorArg& hidden_states, const ka::TensorArg& weight, const ka::TensorArg& output) {
  karms::launch<4096, 256, 2, false>(hidden_states, nullptr, weight, output, 1e-5f);
}
