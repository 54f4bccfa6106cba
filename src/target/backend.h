// target/backend.h — what a target (cuda, host) provides inside a worker process: memory, copies,
// cache flushing, synchronisation with typed faults, and its timing protocol. The worker
// (worker/worker.cpp) drives candidates through this interface only; the judge never links it.
#pragma once
#include <nlohmann/json.hpp>

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace ka {

// A device fault seen while running a candidate. `fatal` means the device context is lost and
// the worker must exit after reporting it.
struct BackendFault {
  std::string verdict;  // verdict_name(): illegal_memory_access, runtime_error, ...
  std::string message;
  bool fatal = true;
};

struct TimingResult {
  std::vector<double> samples_us;    // one per timed call
  std::vector<std::string> activity; // what one call ran on the device (kernel names, copies)
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;
  virtual nlohmann::json device_info() = 0;
  virtual void* alloc(size_t n) = 0;
  virtual void release(void* p) = 0;
  virtual void to_device(void* dst, const void* src, size_t n) = 0;
  virtual void to_host(void* dst, const void* src, size_t n) = 0;
  virtual void copy(void* dst, const void* src, size_t n) = 0;
  virtual void fill(void* dst, int byte, size_t n) = 0;
  // Waits for all work; throws BackendFault on a device error.
  virtual void sync() = 0;
  // Times `iterations` calls after `warmup` untimed ones; every call, warm-up or timed, goes the
  // same way: setup(i) (fresh argument buffers), the cache flush, all of the judge's work done
  // (on every stream) before the candidate starts, the call, the candidate's work done, then
  // after(i). Only the call is timed. Throws BackendFault (also what setup or after throw).
  virtual TimingResult time_calls(int warmup, int iterations, const std::function<void(int)>& setup,
                                  const std::function<void()>& call, const std::function<void(int)>& after) = 0;
  // Measures the device's ceilings (sol/calibrate.h): {"supported", "copy": {...}, "matmul":
  // {dtype: {...}}}. `req` may carry "copy_bytes", "matmul_n", "iterations". A dtype that cannot
  // run is reported with "available": false, never thrown. Throws BackendFault on a device fault.
  virtual nlohmann::json calibrate(const nlohmann::json& req) {
    (void)req;
    return {{"supported", false}, {"message", "the " + name() + " target cannot calibrate"}};
  }
};

std::unique_ptr<Backend> make_host_backend();
// Throws UserError when the CUDA target is not built in or no GPU is usable.
std::unique_ptr<Backend> make_cuda_backend();
bool cuda_target_built();

}  // namespace ka
