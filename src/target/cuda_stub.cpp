// target/cuda_stub.cpp — stands in for the cuda target when KernelArc is built without CUDA.
#include "target/backend.h"
#include "util/error.h"

namespace ka {

std::unique_ptr<Backend> make_cuda_backend() {
  user_error("this kernelarc was built without the CUDA toolkit; rebuild with it or use --target host");
}
bool cuda_target_built() { return false; }

}  // namespace ka
