// Adversarial candidate for 021_rmsnorm_h128 (host target): loops forever on a volatile flag that
// nothing ever clears (volatile, so the loop is not undefined behaviour and is not optimized away).
// Expected verdict: timeout.
#include <kernelarc/abi.h>

void run(const ka::TensorArg& hidden_states, const ka::TensorArg& weight, const ka::TensorArg& output) {
  (void)hidden_states;
  (void)weight;
  (void)output;
  volatile bool spinning = true;
  while (spinning) {
  }
}
