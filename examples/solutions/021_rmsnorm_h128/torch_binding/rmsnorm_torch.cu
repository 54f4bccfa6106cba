// RMSNorm (hidden 128, bf16) written for SOL-ExecBench's own cuda_cpp convention: torch::Tensor
// arguments in destination-passing style, registered with PYBIND11_MODULE. KernelArc runs it
// unchanged through include/kernelarc/torch_shim.h.
#include <ATen/cuda/CUDAContext.h>
#include <cuda_bf16.h>
#include <torch/extension.h>

__global__ void rmsnorm_h128(const __nv_bfloat16* __restrict__ x, const __nv_bfloat16* __restrict__ w,
                             __nv_bfloat16* __restrict__ y, int64_t rows) {
  int64_t row = blockIdx.x * (int64_t)(blockDim.x / 32) + threadIdx.x / 32;
  int lane = threadIdx.x % 32;
  if (row >= rows) return;
  float v[4], ss = 0.f;
  for (int i = 0; i < 4; ++i) {
    v[i] = __bfloat162float(x[row * 128 + lane * 4 + i]);
    ss += v[i] * v[i];
  }
  for (int o = 16; o > 0; o >>= 1) ss += __shfl_xor_sync(0xffffffffu, ss, o);
  float inv = rsqrtf(ss * (1.0f / 128.0f) + 1e-6f);
  for (int i = 0; i < 4; ++i) y[row * 128 + lane * 4 + i] = __float2bfloat16_rn((v[i] * inv) * __bfloat162float(w[lane * 4 + i]));
}

void run(torch::Tensor hidden_states, torch::Tensor weight, torch::Tensor output) {
  int64_t rows = hidden_states.size(0);
  if (rows == 0) return;
  int blocks = static_cast<int>((rows + 7) / 8);
  rmsnorm_h128<<<blocks, 256, 0, at::cuda::getCurrentCUDAStream()>>>(
      reinterpret_cast<const __nv_bfloat16*>(hidden_states.data_ptr()),
      reinterpret_cast<const __nv_bfloat16*>(weight.data_ptr()), reinterpret_cast<__nv_bfloat16*>(output.data_ptr()), rows);
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("run", &run, "RMSNorm h128"); }
