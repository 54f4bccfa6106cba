// util/process.cpp — fork/exec with pipes, timeouts and process-group kills.
#include "util/process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "util/error.h"

namespace ka {
namespace {

using Clock = std::chrono::steady_clock;

std::vector<char*> cargv(const std::vector<std::string>& v) {
  std::vector<char*> out;
  for (const auto& s : v) out.push_back(const_cast<char*>(s.c_str()));
  out.push_back(nullptr);
  return out;
}

int remaining_ms(Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return left < 0 ? 0 : static_cast<int>(std::min<long long>(left, 1 << 30));
}

void fill_status(RunResult& r, int status) {
  if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) r.signal = WTERMSIG(status);
}

[[noreturn]] void exec_child(const std::vector<std::string>& argv, const std::vector<std::string>& env,
                             bool env_only = false) {
  ::setpgid(0, 0);
  if (env_only) ::clearenv();
  for (const auto& e : env) ::putenv(const_cast<char*>(e.c_str()));
  auto a = cargv(argv);
  ::execvp(a[0], a.data());
  std::fprintf(stderr, "cannot execute %s: %s\n", a[0], std::strerror(errno));
  ::_exit(127);
}

// A long-lived child (a worker running candidates) must not inherit the parent's other open
// files, e.g. a cache file another thread is reading without O_CLOEXEC.
void close_inherited_fds() {
#ifdef SYS_close_range
  if (::syscall(SYS_close_range, 3u, ~0u, 0u) == 0) return;
#endif
  long max = ::sysconf(_SC_OPEN_MAX);
  for (int fd = 3; fd < (max > 0 && max < 65536 ? max : 65536); ++fd) ::close(fd);
}

}  // namespace

std::string signal_name(int sig) {
  const char* d = ::sigabbrev_np(sig);
  return d ? fmt::format("SIG{}", d) : fmt::format("signal {}", sig);
}

RunResult run_command(const std::vector<std::string>& argv, std::chrono::milliseconds timeout,
                      const std::vector<std::string>& extra_env,
                      const std::function<void(std::string_view line)>& on_line) {
  int out[2];
  if (::pipe2(out, O_CLOEXEC) != 0) throw std::runtime_error("pipe failed");
  auto t0 = Clock::now();
  pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    ::dup2(out[1], 1);
    ::dup2(out[1], 2);
    int devnull = ::open("/dev/null", O_RDONLY);
    ::dup2(devnull, 0);
    exec_child(argv, extra_env);
  }
  ::close(out[1]);
  RunResult r;
  auto deadline = t0 + timeout;
  char buf[65536];
  size_t line_start = 0;  // of the output's unfinished last line (on_line)
  for (;;) {
    pollfd p{out[0], POLLIN, 0};
    int n = ::poll(&p, 1, remaining_ms(deadline));
    if (n == 0) {
      r.timed_out = true;
      break;
    }
    if (n < 0) {
      if (errno == EINTR) continue;
      break;
    }
    ssize_t k = ::read(out[0], buf, sizeof buf);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) break;
    const size_t before = r.output.size();
    r.output.append(buf, static_cast<size_t>(k));
    for (size_t nl = before; on_line && (nl = r.output.find('\n', nl)) != std::string::npos; line_start = ++nl)
      on_line(std::string_view(r.output).substr(line_start, nl - line_start));
  }
  ::close(out[0]);
  if (r.timed_out) ::kill(-pid, SIGKILL);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  fill_status(r, status);
  if (r.timed_out) r.signal = 0;
  r.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  return r;
}

Child::~Child() {
  if (pid_ > 0) kill_and_reap();
}

void Child::start(const std::vector<std::string>& argv, const std::string& stderr_path,
                  const std::vector<std::string>& extra_env, bool env_only) {
  int in[2], out[2];
  if (::pipe2(in, O_CLOEXEC) != 0 || ::pipe2(out, O_CLOEXEC) != 0) throw std::runtime_error("pipe failed");
  pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    ::dup2(in[0], 0);
    ::dup2(out[1], 1);
    int err = ::open(stderr_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (err >= 0) ::dup2(err, 2);
    close_inherited_fds();
    exec_child(argv, extra_env, env_only);
  }
  ::close(in[0]);
  ::close(out[1]);
  pid_ = pid;
  to_child_ = in[1];
  from_child_ = out[0];
}

bool Child::write_all(const void* data, size_t n) {
  const char* c = static_cast<const char*>(data);
  while (n > 0) {
    ssize_t w = ::write(to_child_, c, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    c += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

bool Child::read_exact(void* data, size_t n, Clock::time_point deadline, bool& timed_out) {
  timed_out = false;
  char* c = static_cast<char*>(data);
  while (n > 0) {
    pollfd p{from_child_, POLLIN, 0};
    int k = ::poll(&p, 1, remaining_ms(deadline));
    if (k == 0) {
      timed_out = true;
      return false;
    }
    if (k < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    ssize_t r = ::read(from_child_, c, n);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    c += r;
    n -= static_cast<size_t>(r);
  }
  return true;
}

RunResult Child::kill_and_reap() {
  RunResult r;
  if (pid_ <= 0) return r;
  ::kill(-pid_, SIGKILL);
  ::kill(pid_, SIGKILL);
  int status = 0;
  while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  fill_status(r, status);
  ::close(to_child_);
  ::close(from_child_);
  pid_ = -1;
  return r;
}

RunResult Child::reap(std::chrono::milliseconds grace) {
  RunResult r;
  if (pid_ <= 0) return r;
  auto deadline = Clock::now() + grace;
  int status = 0;
  for (;;) {
    pid_t w = ::waitpid(pid_, &status, WNOHANG);
    if (w == pid_) {
      fill_status(r, status);
      ::close(to_child_);
      ::close(from_child_);
      pid_ = -1;
      return r;
    }
    if (Clock::now() >= deadline) return kill_and_reap();
    ::usleep(2000);
  }
}

}  // namespace ka
