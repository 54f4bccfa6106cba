// util/process.h — child processes: run a command to completion with a timeout (compilers, the
// oracle), or keep one alive with pipes to talk to it (judge workers). POSIX only.
#pragma once
#include <sys/types.h>

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ka {

struct RunResult {
  int exit_code = -1;       // valid when !signaled && !timed_out
  int signal = 0;           // the signal that ended it, if any
  bool timed_out = false;
  std::string output;       // stdout and stderr together
  double seconds = 0;
  bool ok() const { return !timed_out && signal == 0 && exit_code == 0; }
};

// Runs argv[0] (searched on PATH) to completion; kills its whole process group after `timeout`.
// on_line, when given, sees each complete line of the output as it arrives (progress reports).
RunResult run_command(const std::vector<std::string>& argv, std::chrono::milliseconds timeout,
                      const std::vector<std::string>& extra_env = {},
                      const std::function<void(std::string_view line)>& on_line = {});

// A long-lived child with a pipe each way and stderr passed through to a log file.
class Child {
 public:
  Child() = default;
  ~Child();
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;

  // `env_only`: the child gets exactly extra_env as its environment (nothing inherited).
  void start(const std::vector<std::string>& argv, const std::string& stderr_path,
             const std::vector<std::string>& extra_env = {}, bool env_only = false);
  bool running() const { return pid_ > 0; }
  pid_t pid() const { return pid_; }
  // Writes all bytes; false if the child is gone.
  bool write_all(const void* data, size_t n);
  // Reads exactly n bytes before the deadline. Returns false on EOF/error; sets timed_out on timeout.
  bool read_exact(void* data, size_t n, std::chrono::steady_clock::time_point deadline, bool& timed_out);
  // Kills the child (SIGKILL to its process group) and reaps it; returns how it ended.
  RunResult kill_and_reap();
  // Reaps a child that has exited (waits up to `grace`), killing it if it has not.
  RunResult reap(std::chrono::milliseconds grace);

 private:
  pid_t pid_ = -1;
  int to_child_ = -1;
  int from_child_ = -1;
};

std::string signal_name(int sig);

}  // namespace ka
