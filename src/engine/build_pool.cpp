// engine/build_pool.cpp — the build thread pool (engine/build_pool.h).
#include "engine/build_pool.h"

namespace ka {

BuildPool::BuildPool(int threads) {
  for (int i = 0; i < threads; ++i) threads_.emplace_back([this] { loop(); });
}

BuildPool::~BuildPool() {
  {
    std::lock_guard<std::mutex> l(mu_);
    stop_ = true;
    jobs_.clear();
  }
  cv_.notify_all();
  for (auto& t : threads_) t.join();
}

void BuildPool::submit(std::function<void()> job) {
  {
    std::lock_guard<std::mutex> l(mu_);
    jobs_.push_back(std::move(job));
  }
  cv_.notify_one();
}

void BuildPool::loop() {
  for (;;) {
    std::function<void()> job;
    {
      std::unique_lock<std::mutex> l(mu_);
      cv_.wait(l, [this] { return stop_ || !jobs_.empty(); });
      if (stop_) return;
      job = std::move(jobs_.front());
      jobs_.pop_front();
    }
    job();
  }
}

}  // namespace ka
