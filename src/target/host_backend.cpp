// target/host_backend.cpp — the host (CPU) target: host memory, a last-level-cache flush by
// writing twice its size, and wall-clock timing of each call (steady_clock).
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <thread>

#include "target/backend.h"

namespace ka {
namespace {

size_t last_level_cache_bytes() {
  size_t best = 0;
  for (int i = 0; i < 8; ++i) {
    std::ifstream f("/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(i) + "/size");
    std::string s;
    if (!(f >> s) || s.empty()) continue;
    size_t v = std::strtoull(s.c_str(), nullptr, 10);
    if (s.back() == 'K') v <<= 10;
    if (s.back() == 'M') v <<= 20;
    best = std::max(best, v);
  }
  return best ? best : (32u << 20);
}

class HostBackend final : public Backend {
 public:
  HostBackend() : flush_(2 * last_level_cache_bytes()) {}
  std::string name() const override { return "host"; }
  nlohmann::json device_info() override {
    std::string model = "cpu";
    std::ifstream f("/proc/cpuinfo");
    for (std::string line; std::getline(f, line);)
      if (line.rfind("model name", 0) == 0) {
        model = line.substr(line.find(':') + 2);
        break;
      }
    return {{"name", model}, {"cores", std::thread::hardware_concurrency()}, {"llc_bytes", flush_.size() / 2}};
  }
  void* alloc(size_t n) override {
    void* p = std::aligned_alloc(256, ((n + 255) / 256) * 256 + 256);
    if (!p) throw BackendFault{"runtime_error", "host allocation failed", true};
    return p;
  }
  void release(void* p) override { std::free(p); }
  void to_device(void* d, const void* s, size_t n) override { std::memcpy(d, s, n); }
  void to_host(void* d, const void* s, size_t n) override { std::memcpy(d, s, n); }
  void copy(void* d, const void* s, size_t n) override { std::memcpy(d, s, n); }
  void fill(void* d, int b, size_t n) override { std::memset(d, b, n); }
  void sync() override {}
  TimingResult time_calls(int warmup, int iterations, const std::function<void(int)>& setup,
                          const std::function<void()>& call) override {
    TimingResult r;
    for (int i = 0; i < warmup + iterations; ++i) {
      setup(i);
      flush();
      auto t0 = std::chrono::steady_clock::now();
      call();
      auto t1 = std::chrono::steady_clock::now();
      if (i >= warmup) r.samples_us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
    }
    r.activity = {"host call"};
    return r;
  }

 private:
  std::vector<unsigned char> flush_;
  unsigned char tick_ = 0;
  void flush() {
    std::memset(flush_.data(), ++tick_, flush_.size());
    asm volatile("" ::: "memory");
  }
};

}  // namespace

std::unique_ptr<Backend> make_host_backend() { return std::make_unique<HostBackend>(); }

}  // namespace ka
