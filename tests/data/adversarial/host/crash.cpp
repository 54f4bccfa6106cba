// Adversarial candidate for 021_rmsnorm_h128 (host target): stores through a null pointer the
// compiler cannot see is null, so the worker process dies with SIGSEGV.
// Expected verdict: crash.
#include <kernelarc/abi.h>

#include <cstdint>

void run(const ka::TensorArg& hidden_states, const ka::TensorArg& weight, const ka::TensorArg& output) {
  (void)hidden_states;
  (void)weight;
  (void)output;
  volatile uintptr_t address = 0;  // opaque to the optimizer: a real store, not a trap instruction
  *reinterpret_cast<volatile int*>(address) = 42;
}
