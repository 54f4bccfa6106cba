// 001_fused_add_rmsnorm_h2048 — Fused add + RMSNorm, hidden_size=2048, eps=1e-6: x = float(hidden_states) + float(residual)
// in fp32 (never rounded to bf16), y = bf16((x * rsqrt(mean(x^2) + eps)) * float(weight)). The reference does
// NOT write the sum back into residual (unlike FlashInfer's in-place fused_add_rmsnorm); only `output` is written.
// bf16 in/out, fp32 accumulation; one 128-thread block per row, 2 x 16-byte vector(s) per thread; default stream.
#include <kernelarc/abi.h>

#include "rmsnorm.cuh"

void run(const ka::TensorArg& hidden_states, const ka::TensorArg& residual, const ka::TensorArg& weight,
         const ka::TensorArg& output) {
  karms::launch<2048, 128, 2, true>(hidden_states, &residual, weight, output, 1e-6f);
}
