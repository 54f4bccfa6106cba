// Adversarial candidate for 021_rmsnorm_h128 (cuda target): goes for the judge's memory, where
// the reference outputs are kept. From the worker it tries /proc/<judge>/mem (open, and a read at
// an address from /proc/<judge>/maps), process_vm_readv on the judge, and ptrace attach/seize. It
// computes RMSNorm honestly; any access that succeeds ends it with an exit code of 43-45 (a crash
// verdict). (process_vm_readv at an unmapped address failing with EFAULT, not EPERM, counts as
// access: the permission check came first and passed.)
// Expected: passed, every attempt denied (bench/regress/judge_sandbox.sh).
#include <fcntl.h>
#include <kernelarc/abi.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>
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
  if (rows <= 0 || h <= 0) return;
  rmsnorm_rows<<<static_cast<unsigned>((rows + 7) / 8), 256>>>(hidden_states.ptr<const uint16_t>(),
                                                               weight.ptr<const uint16_t>(), output.ptr<uint16_t>(),
                                                               rows, h);
}
