// Adversarial candidate for 021_rmsnorm_h128 (cuda target): a kernel writes through a wild device
// pointer, output + 2^40 elements (2 TiB past the buffer), which raises cudaErrorIllegalAddress and
// poisons the CUDA context.
// Expected verdict: illegal_memory_access.
#include <kernelarc/abi.h>

#include <cuda_runtime.h>

#include <cstdint>

__global__ void wild_write(uint16_t* out, int64_t offset) {
  out[offset] = 0x3f80;  // bf16 1.0, far outside any allocation
}

void run(const ka::TensorArg& hidden_states, const ka::TensorArg& weight, const ka::TensorArg& output) {
  (void)hidden_states;
  (void)weight;
  wild_write<<<1, 1>>>(output.ptr<uint16_t>(), int64_t(1) << 40);
}
