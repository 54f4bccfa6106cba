// engine/build_pool.h — a small fixed-size thread pool that compiles a campaign's candidates on
// every core. Jobs still queued when it is destroyed are dropped (the campaign is stopping).
#pragma once
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace ka {

class BuildPool {
 public:
  explicit BuildPool(int threads);
  ~BuildPool();
  BuildPool(const BuildPool&) = delete;
  BuildPool& operator=(const BuildPool&) = delete;
  void submit(std::function<void()> job);

 private:
  std::vector<std::thread> threads_;
  std::deque<std::function<void()>> jobs_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  void loop();
};

}  // namespace ka
