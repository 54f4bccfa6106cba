// 022_rmsnorm_h512 — RMSNorm, hidden_size=512, eps=1e-6:
// y = bf16((x * rsqrt(mean(x^2) + eps)) * float(weight)), x = float(hidden_states).
// bf16 in/out, fp32 accumulation; 32 threads per row (8 rows per 256-thread block), 2 x 16-byte vector(s) per thread; default stream.
#include <kernelarc/abi.h>

#include "rmsnorm.cuh"

void run(const ka::TensorArg& hidden_states, const ka::TensorArg& weight, const ka::TensorArg& output) {
  karms::launch<512, 32, 2, false>(hidden_states, nullptr, weight, output, 1e-6f);
}
