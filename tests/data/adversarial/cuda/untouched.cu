// Adversarial candidate for 021_rmsnorm_h128 (cuda target): returns at once without launching
// anything, leaving `output` exactly as the judge allocated it.
// Expected verdict: wrong_answer.
#include <kernelarc/abi.h>

void run(const ka::TensorArg& hidden_states, const ka::TensorArg& weight, const ka::TensorArg& output) {
  (void)hidden_states;
  (void)weight;
  (void)output;
}
