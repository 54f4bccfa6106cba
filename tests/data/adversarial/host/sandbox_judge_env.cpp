// Adversarial candidate for 021_rmsnorm_h128 (host target): goes for what the judge's
// environment and command line give away. It reads /proc/<judge>/environ (KERNELARC_CACHE and
// the like), looks for KERNELARC_CACHE or HOME in its own environment, and opens every path on the
// judge's command line (/proc/<judge>/cmdline: the problem folder, the solution file) to read the
// workloads or the reference. It computes RMSNorm honestly; a success ends it with an exit code
// of 46-48 (a crash verdict).
// Expected: passed, every attempt denied (tests/test_sandbox.cpp).
#include <fcntl.h>
#include <kernelarc/abi.h>
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
