// Adversarial candidate for 021_rmsnorm_h128 (cuda target): the process dies on the host side.
// run() calls std::abort() (SIGABRT) before launching anything.
// Expected verdict: crash.
#include <kernelarc/abi.h>

#include <cstdlib>

void run(const ka::TensorArg& hidden_states, const ka::TensorArg& weight, const ka::TensorArg& output) {
  (void)hidden_states;
  (void)weight;
  (void)output;
  std::abort();
}
