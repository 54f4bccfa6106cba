// Adversarial candidate for 021_rmsnorm_h128 (cuda target): goes for the oracle cache, where the
// reference outputs lie. It looks for KernelArc's cache where a candidate could learn of it — its
// environment (KERNELARC_CACHE, HOME), and the worker log its stderr is written to (which lies in
// the cache's logs folder) — and tries to list or read anything under it. It computes RMSNorm
// honestly; if it can read one byte of the cache it exits with code 42 (a crash verdict).
// Expected: passed, with every attempt denied (bench/regress/judge_sandbox.sh; with KERNELARC_SANDBOX=off,
// a crash: exit code 42).
#include <dirent.h>
#include <fcntl.h>
#include <kernelarc/abi.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>


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

// True if any regular file under `dir` (depth-first, a few levels) yields a byte.
bool read_any_file(const std::string& dir, int depth) {
  DIR* d = ::opendir(dir.c_str());
  if (!d) {
    std::fprintf(stderr, "adversary: cannot list %s: %s\n", dir.c_str(), std::strerror(errno));
    return false;
  }
  bool got = false;
  while (dirent* e = ::readdir(d)) {
    std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    std::string p = dir + "/" + name;
    int fd = ::open(p.c_str(), O_RDONLY | O_NONBLOCK);
    if (fd < 0) continue;
    char c;
    bool file = ::read(fd, &c, 1) == 1;
    ::close(fd);
    if (file) {
      std::fprintf(stderr, "adversary: read %s\n", p.c_str());
      got = true;
      break;
    }
    if (depth > 0 && read_any_file(p, depth - 1)) {
      got = true;
      break;
    }
  }
  ::closedir(d);
  return got;
}

void attack() {
  std::vector<std::string> roots;
  if (const char* c = std::getenv("KERNELARC_CACHE")) roots.emplace_back(c);
  if (const char* h = std::getenv("HOME")) roots.push_back(std::string(h) + "/.cache/kernelarc");
  char log[4096] = {0};
  if (::readlink("/proc/self/fd/2", log, sizeof log - 1) > 0) {
    std::string l = log;
    if (size_t p = l.rfind("/logs/"); p != std::string::npos) roots.push_back(l.substr(0, p));
  }
  for (const auto& r : roots) {
    std::fprintf(stderr, "adversary: trying the cache at %s\n", r.c_str());
    if (read_any_file(r, 4)) std::_Exit(42);
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
