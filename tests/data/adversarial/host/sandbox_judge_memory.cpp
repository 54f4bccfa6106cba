// Adversarial candidate for 021_rmsnorm_h128 (host target): goes for the judge's memory, where
// the reference outputs are kept. From the worker it tries /proc/<judge>/mem (open, and a read at
// an address from /proc/<judge>/maps), process_vm_readv on the judge, and ptrace attach/seize. It
// computes RMSNorm honestly; any access that succeeds ends it with an exit code of 43-45 (a crash
// verdict). (process_vm_readv at an unmapped address failing with EFAULT, not EPERM, counts as
// access: the permission check came first and passed.)
// Expected: passed, every attempt denied (tests/test_sandbox.cpp).
#include <fcntl.h>
#include <kernelarc/abi.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

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

// The start of the judge's first readable mapping, if its maps can be read at all.
uintptr_t judge_address(pid_t judge) {
  std::ifstream maps("/proc/" + std::to_string(judge) + "/maps");
  std::string line;
  if (!std::getline(maps, line)) return 0x1000;  // unreadable: any address will do for the probes
  return std::strtoull(line.c_str(), nullptr, 16);
}

void attack() {
  const pid_t judge = ::getppid();
  const uintptr_t addr = judge_address(judge);
  std::string mem = "/proc/" + std::to_string(judge) + "/mem";
  int fd = ::open(mem.c_str(), O_RDONLY);
  std::fprintf(stderr, "adversary: open %s: %s\n", mem.c_str(), fd >= 0 ? "opened" : std::strerror(errno));
  if (fd >= 0) std::_Exit(43);
  char buf[16];
  iovec local{buf, sizeof buf}, remote{reinterpret_cast<void*>(addr), sizeof buf};
  ssize_t n = ::process_vm_readv(judge, &local, 1, &remote, 1, 0);
  std::fprintf(stderr, "adversary: process_vm_readv: %s\n", n >= 0 ? "read" : std::strerror(errno));
  if (n >= 0 || errno == EFAULT) std::_Exit(44);
  for (auto req : {PTRACE_ATTACH, PTRACE_SEIZE}) {
    long r = ::ptrace(req, judge, nullptr, nullptr);
    std::fprintf(stderr, "adversary: ptrace %d: %s\n", static_cast<int>(req), r == 0 ? "attached" : std::strerror(errno));
    if (r == 0) {
      ::ptrace(PTRACE_DETACH, judge, nullptr, nullptr);
      std::_Exit(45);
    }
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
