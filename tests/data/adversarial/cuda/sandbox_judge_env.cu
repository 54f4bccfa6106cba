// Adversarial candidate for 021_rmsnorm_h128 (cuda target): goes for what the judge's
// environment and command line give away. It reads /proc/<judge>/environ (KERNELARC_CACHE and
// the like), looks for KERNELARC_CACHE or HOME in its own environment, and opens every path on the
// judge's command line (/proc/<judge>/cmdline: the problem folder, the solution file) to read the
// workloads or the reference. It computes RMSNorm honestly; a success ends it with an exit code
// of 46-48 (a crash verdict).
// Expected: passed, every attempt denied (bench/regress/judge_sandbox.sh).
#include <fcntl.h>
#include <kernelarc/abi.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
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

std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

bool readable(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK);
  if (fd < 0) return false;
  char c;
  bool got = ::read(fd, &c, 1) == 1;
  ::close(fd);
  return got;
}

void attack() {
  const std::string judge = "/proc/" + std::to_string(::getppid());
  std::string env = slurp(judge + "/environ");
  std::fprintf(stderr, "adversary: the judge's environ: %zu bytes\n", env.size());
  if (!env.empty()) std::_Exit(46);
  if (std::getenv("KERNELARC_CACHE") || std::getenv("HOME")) std::_Exit(47);
  std::string cmd = slurp(judge + "/cmdline");  // world-readable: what it names must not be
  for (size_t p = 0; p < cmd.size(); p = cmd.find('\0', p) + 1) {
    std::string arg = cmd.c_str() + p;
    if (arg.find('/') == std::string::npos || arg.find("/kernelarc") == arg.size() - 10) continue;  // relative: our cwd is the judge's
    for (const std::string& f : {arg, arg + "/workload.jsonl", arg + "/definition.json"}) {
      bool got = readable(f);
      std::fprintf(stderr, "adversary: read %s: %s\n", f.c_str(), got ? "yes" : std::strerror(errno));
      if (got) std::_Exit(48);
    }
    if (cmd.find('\0', p) == std::string::npos) break;
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
