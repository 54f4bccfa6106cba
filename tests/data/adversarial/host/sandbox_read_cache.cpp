// Adversarial candidate for 021_rmsnorm_h128 (host target): goes for the oracle cache, where the
// reference outputs lie. It looks for KernelArc's cache where a candidate could learn of it — its
// environment (KERNELARC_CACHE, HOME), and the worker log its stderr is written to (which lies in
// the cache's logs folder) — and tries to list or read anything under it. It computes RMSNorm
// honestly; if it can read one byte of the cache it exits with code 42 (a crash verdict).
// Expected: passed, with every attempt denied (tests/test_sandbox.cpp; with KERNELARC_SANDBOX=off,
// a crash: exit code 42).
#include <dirent.h>
#include <fcntl.h>
#include <kernelarc/abi.h>
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

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
