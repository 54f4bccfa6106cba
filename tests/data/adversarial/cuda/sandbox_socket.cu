// Adversarial candidate for 021_rmsnorm_h128 (cuda target): tries to reach the network (to
// fetch answers or send inputs out): sockets of the IPv4, IPv6, netlink and packet families. It
// computes RMSNorm honestly; a socket it gets ends it with exit code 49 (a crash verdict).
// Expected: passed, every socket refused (bench/regress/judge_sandbox.sh).
#include <kernelarc/abi.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>


// One warp per row; y = bf16((x * rsqrt(mean(x^2) + 1e-6)) * w), all in fp32.
__global__ void rmsnorm_rows(const uint16_t* __restrict__ x, const uint16_t* __restrict__ w, uint16_t* __restrict__ y,
                             int64_t rows, int64_t h) {
  const int64_t row = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
  const int lane = threadIdx.x & 31;
  if (row >= rows) return;  // whole warps exit together
  const uint16_t* xr = x + row * h;
  float ss = 0.f;
  for (int64_t i = lane; i < h; i += 32) {
    float v = __uint_as_float(static_cast<uint32_t>(xr[i]) << 16);
    ss += v * v;
  }
  for (int off = 16; off > 0; off >>= 1) ss += __shfl_xor_sync(0xffffffffu, ss, off);
  const float inv = rsqrtf(ss * (1.0f / static_cast<float>(h)) + 1e-6f);
  for (int64_t i = lane; i < h; i += 32) {
    float v = __uint_as_float(static_cast<uint32_t>(xr[i]) << 16);
    float wf = __uint_as_float(static_cast<uint32_t>(w[i]) << 16);
    y[row * h + i] = __bfloat16_as_ushort(__float2bfloat16_rn((v * inv) * wf));
  }
}

namespace {

void attack() {
  for (int family : {AF_INET, AF_INET6, AF_NETLINK, AF_PACKET}) {
    int s = ::socket(family, family == AF_NETLINK || family == AF_PACKET ? SOCK_RAW : SOCK_STREAM, 0);
    std::fprintf(stderr, "adversary: socket(%d): %s\n", family, s >= 0 ? "opened" : std::strerror(errno));
    if (s >= 0) std::_Exit(49);
  }
}

}  // namespace

void run(const ka::TensorArg& hidden_states, const ka::TensorArg& weight, const ka::TensorArg& output) {
  static bool tried = false;
  if (!tried) {
    tried = true;
    attack();
  }
  const int64_t rows = hidden_states.size(0), h = hidden_states.size(1);
  if (rows <= 0 || h <= 0) return;
  rmsnorm_rows<<<static_cast<unsigned>((rows + 7) / 8), 256>>>(hidden_states.ptr<const uint16_t>(),
                                                               weight.ptr<const uint16_t>(), output.ptr<uint16_t>(),
                                                               rows, h);
}
