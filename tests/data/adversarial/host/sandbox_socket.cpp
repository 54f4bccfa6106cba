// Adversarial candidate for 021_rmsnorm_h128 (host target): tries to reach the network (to
// fetch answers or send inputs out): sockets of the IPv4, IPv6, netlink and packet families. It
// computes RMSNorm honestly; a socket it gets ends it with exit code 49 (a crash verdict).
// Expected: passed, every socket refused (tests/test_sandbox.cpp).
#include <kernelarc/abi.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {

float bf16_to_float(uint16_t h) {
  uint32_t u = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

uint16_t float_to_bf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7fffffff) > 0x7f800000) return static_cast<uint16_t>((u >> 16) | 0x40);
  u += 0x7fff + ((u >> 16) & 1);
  return static_cast<uint16_t>(u >> 16);
}

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
  const auto* x = hidden_states.ptr<const uint16_t>();
  const auto* w = weight.ptr<const uint16_t>();
  auto* y = output.ptr<uint16_t>();
  for (int64_t r = 0; r < rows; ++r) {
    float ss = 0;
    for (int64_t i = 0; i < h; ++i) {
      float v = bf16_to_float(x[r * h + i]);
      ss += v * v;
    }
    float inv = 1.0f / std::sqrt(ss / static_cast<float>(h) + 1e-6f);
    for (int64_t i = 0; i < h; ++i) y[r * h + i] = float_to_bf16(bf16_to_float(x[r * h + i]) * inv * bf16_to_float(w[i]));
  }
}
