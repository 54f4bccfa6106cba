// Adversarial candidate for 021_rmsnorm_h128 (cuda target): lazy calls. Its first call computes at
// once (the judge's first call is a check); every later call launches an empty kernel and has a
// thread of its own launch the real kernel on a hidden stream just after the call returned,
// outside the timer's window. (Keying on the check poison no longer works: every call carries it.)
// Expected: timing_mismatch (a kernel ran between the timed calls), or wrong_answer where timed
// calls look like check calls and their outputs are checked. Run by bench/regress/judge_sandbox.sh.
#include <dlfcn.h>
#include <kernelarc/abi.h>

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

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

// The honest work: one RMSNorm launch on `stream`.
void rmsnorm(const ka::TensorArg& x, const ka::TensorArg& w, const ka::TensorArg& y, cudaStream_t stream) {
  const int64_t rows = x.size(0), h = x.size(1);
  if (rows <= 0 || h <= 0) return;
  rmsnorm_rows<<<static_cast<unsigned>((rows + 7) / 8), 256, 0, stream>>>(x.ptr<const uint16_t>(), w.ptr<const uint16_t>(),
                                                                         y.ptr<uint16_t>(), rows, h);
}

__global__ void empty_kernel() {}

// CUPTI's functions, found in the worker (which links CUPTI): no link flag needed.
template <typename Fn>
Fn cupti(const char* name) {
  return reinterpret_cast<Fn>(::dlsym(RTLD_DEFAULT, name));
}
constexpr int kConcurrentKernel = 10;  // CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL

struct Lazy {
  std::mutex mu;
  std::condition_variable cv;
  std::function<void()> job;
  cudaStream_t stream = nullptr;
  Lazy() {
    cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
    std::thread([this] {
      for (;;) {
        std::unique_lock<std::mutex> lock(mu);
        cv.wait(lock, [this] { return static_cast<bool>(job); });
        auto j = std::move(job);
        job = nullptr;
        lock.unlock();
        std::this_thread::sleep_for(std::chrono::microseconds(20));  // past the call's return
        j();
      }
    }).detach();
  }
};

void run(const ka::TensorArg& hidden_states, const ka::TensorArg& weight, const ka::TensorArg& output) {
  static Lazy* lazy = new Lazy;
  static int calls = 0;
  if (calls++ == 0) return rmsnorm(hidden_states, weight, output, 0);
  {
    std::lock_guard<std::mutex> lock(lazy->mu);
    lazy->job = [=] { rmsnorm(hidden_states, weight, output, lazy->stream); };
  }
  lazy->cv.notify_one();
  empty_kernel<<<1, 1>>>();
}
