// Adversarial candidate for 021_rmsnorm_h128 (cuda target): launches a one-thread kernel that spins
// forever on a volatile device flag that nothing ever sets, so the device never becomes idle.
// Expected verdict: timeout (the judge must kill the worker; the kernel cannot be stopped otherwise).
#include <kernelarc/abi.h>

#include <cuda_runtime.h>

__device__ int g_release = 0;  // never written by anyone

__global__ void spin_forever() {
  volatile int* flag = &g_release;
  while (*flag == 0) __nanosleep(1000);
}

void run(const ka::TensorArg& hidden_states, const ka::TensorArg& weight, const ka::TensorArg& output) {
  (void)hidden_states;
  (void)weight;
  (void)output;
  spin_forever<<<1, 1>>>();
}
