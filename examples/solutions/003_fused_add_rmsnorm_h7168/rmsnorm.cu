// 003_fused_add_rmsnorm_h7168 — Fused add + RMSNorm, hidden_size=7168, eps=1e-6: x = float(hidden_states) + float(residual)
// in fp32 (never rounded to bf16), y = bf16((x * rsqrt(mean(x^2) + eps)) * float(weight)). The reference does
// NOT write the sum back into residual (unlike FlashInfer's in-place fused_add_rmsnorm); only `output` is written.
// bf16 in/out, fp32 accumulation; one 224-thread block per row, 4 x 16-byte vector(s) per thread; default stream.
#include <kernelarc/abi.h>

#include "rmsnorm.cuh"

void run(const ka::TensorArg& hidden_states, const ka::TensorArg& residual, const ka::TensorArg& weight,
         const ka::TensorArg& output) {
  karms::launch<7168, 224, 4, true>(hidden_states, &residual, weight, output, 1e-6f);
}
