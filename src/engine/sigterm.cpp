// engine/sigterm.cpp — the SIGTERM handler of a campaign (engine/sigterm.h).
#include "engine/sigterm.h"

#include <time.h>

#include <atomic>
#include <cstdint>

namespace ka {
namespace {

std::atomic<bool> g_terminate{false};
std::atomic<int64_t> g_first_term_ns{0};
constexpr int64_t kTermGraceNs = 2'000'000'000;

extern "C" void on_sigterm(int) {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);  // async-signal-safe
  const int64_t now = static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
  if (!g_terminate.exchange(true)) {
    g_first_term_ns.store(now);
    return;
  }
  if (now - g_first_term_ns.load() > kTermGraceNs) {
    ::signal(SIGTERM, SIG_DFL);
    ::raise(SIGTERM);  // delivered when the handler returns
  }
}

}  // namespace

SigtermGuard::SigtermGuard() {
  g_terminate.store(false);
  g_first_term_ns.store(0);
  struct sigaction sa {};
  sa.sa_handler = on_sigterm;
  sigemptyset(&sa.sa_mask);
  ::sigaction(SIGTERM, &sa, &old_);
}

SigtermGuard::~SigtermGuard() { ::sigaction(SIGTERM, &old_, nullptr); }

bool termination_requested() { return g_terminate.load(); }

}  // namespace ka
