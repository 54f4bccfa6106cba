// tests/test_sandbox.cpp — the worker's OS sandbox (judge/sandbox.h). In a forked child that
// enters it: no file outside the allowed trees, no network socket, no ptrace / process_vm_readv /
// /proc/<parent>/mem on the parent. The worker's environment is scrubbed. End to end through the
// kernelarc binary: adversarial host candidates that go for the oracle cache, the judge's memory,
// its environment and command line, or the network pass only because every attempt fails (they
// compute honestly and exit with a code of their own when an attempt succeeds), and the cache and
// socket ones do exit that way with KERNELARC_SANDBOX=off (so these tests can fail). A test skips,
// saying why, only where the kernel lacks the feature (Landlock, seccomp). Also the host timer's
// lazy-call check (target/host_backend.cpp).
#include "util/resources.h"
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <thread>

#include "judge/sandbox.h"
#include "judge/worker_client.h"
#include "util/error.h"
#include "util/process.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

const fs::path kRoot = ka::source_root();
constexpr int kFeatureOff = 77;  // the child's exit code when the kernel lacks what a test needs

bool has_landlock() { return ::syscall(SYS_landlock_create_ruleset, nullptr, 0, 1u) >= 1; }

bool off(const ka::SandboxReport& r, const std::string& what) {
  for (const auto& o : r.off)
    if (o.rfind(what, 0) == 0) return true;
  return false;
}

// Runs `probe` in a forked child after it entered the sandbox; returns the child's exit code
// (0: every check held), kFeatureOff when the sandbox reports `needs` off.
int in_sandbox(const std::string& needs, const std::function<int()>& probe, const ka::SandboxPolicy& policy = {}) {
  std::fflush(nullptr);
  pid_t pid = ::fork();
  if (pid == 0) {
    ka::SandboxReport r = ka::enter_sandbox(policy);
    std::fprintf(stderr, "%s\n", r.summary().c_str());
    ::_exit(!needs.empty() && off(r, needs) ? kFeatureOff : probe());
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace

TEST(Sandbox, ReadsOnlyTheAllowedTrees) {
  if (!has_landlock()) GTEST_SKIP() << "this kernel has no Landlock (or it is disabled at boot): files are guarded by permissions only";
  // A file of the judge's kind: in the build folder, outside every tree the worker may read.
  const fs::path secret = fs::path(KA_BUILD_DIR) / "test-sandbox-secret";
  std::ofstream(secret) << "reference";
  int rc = in_sandbox("landlock", [&] {
    if (::open(secret.c_str(), O_RDONLY) >= 0) return 1;             // the judge's file
    if (::open(KA_BUILD_DIR, O_RDONLY | O_DIRECTORY) >= 0) return 2;  // nor list its folder
    if (::open("/etc/passwd", O_RDONLY) < 0) return 3;                // system files stay readable
    if (::open("/proc/self/status", O_RDONLY) < 0) return 4;
    if (::open("/dev/null", O_WRONLY) < 0) return 5;
    if (::open("/tmp/ka-sandbox-probe", O_WRONLY | O_CREAT, 0600) >= 0) return 6;  // nothing written
    return 0;
  });
  fs::remove(secret);
  if (rc == kFeatureOff) GTEST_SKIP() << "Landlock refused the ruleset here (see the child's summary line)";
  EXPECT_EQ(rc, 0) << "check " << rc << " of the probe failed";
}

TEST(Sandbox, NoNetworkSockets) {
  int rc = in_sandbox("seccomp", [] {
    for (int family : {AF_INET, AF_INET6, AF_NETLINK, AF_PACKET})
      if (::socket(family, family == AF_INET || family == AF_INET6 ? SOCK_STREAM : SOCK_RAW, 0) >= 0) return 10 + family;
    if (::socket(AF_UNIX, SOCK_STREAM, 0) < 0) return 1;  // the driver's local sockets stay
    return 0;
  });
  if (rc == kFeatureOff) GTEST_SKIP() << "this kernel has no seccomp filters";
  EXPECT_EQ(rc, 0) << "check " << rc << " of the probe failed (10 + the family that got a socket)";
}

// The CUDA driver names its threads at initialisation (writes /proc/<pid>/task/<tid>/comm, and
// fails with cudaErrorOperatingSystem if it cannot): the worker may write its own /proc entries,
// from any thread, also one started after the sandbox, and no other process's or the kernel's.
TEST(Sandbox, WritesOnlyItsOwnProcEntries) {
  if (!has_landlock()) GTEST_SKIP() << "this kernel has no Landlock";
  const pid_t parent = ::getpid();
  int rc = in_sandbox("landlock", [parent] {
    auto writes = [](const std::string& path, const std::string& text = "ka-test") {
      int fd = ::open(path.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC);
      bool ok = fd >= 0 && ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
      if (fd >= 0) ::close(fd);
      return ok;
    };
    if (!writes("/proc/self/comm")) return 1;
    if (!writes(fmt::format("/proc/{}/task/{}/comm", ::getpid(), ::gettid()))) return 2;
    bool from_thread = false;
    std::thread t([&] { from_thread = writes("/proc/thread-self/comm"); });
    t.join();
    if (!from_thread) return 3;
    if (writes(fmt::format("/proc/{}/comm", parent))) return 4;
    std::string host;  // written back unchanged: a write that got through must not rename the machine
    std::getline(std::ifstream("/proc/sys/kernel/hostname"), host);
    if (writes("/proc/sys/kernel/hostname", host + "\n")) return 5;
    return 0;
  });
  if (rc == kFeatureOff) GTEST_SKIP() << "Landlock refused the ruleset here";
  EXPECT_EQ(rc, 0) << "check " << rc << ": 1-3 a write to its own comm failed, 4-5 a write outside it succeeded";
}

// KERNELARC_SANDBOX=without:seccomp (for a machine where one defence stops the device): that
// defence is reported off and is really absent, the others stay.
TEST(Sandbox, LeftOutDefenceIsReportedAndAbsent) {
  ka::SandboxPolicy policy;
  policy.without = {"seccomp"};
  int rc = in_sandbox("", [] {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);  // seccomp would refuse it; the network namespace still isolates it
    if (fd < 0) return 1;
    ::close(fd);
    return 0;
  }, policy);
  EXPECT_EQ(rc, 0) << "an AF_INET socket was refused although seccomp was left out";
  std::fflush(nullptr);
  pid_t pid = ::fork();
  if (pid == 0) {
    ka::SandboxReport r = ka::enter_sandbox(policy);
    bool reported = off(r, "seccomp (left out");
    bool others = std::find(r.on.begin(), r.on.end(), "not dumpable") != r.on.end();
    ::_exit(reported && others ? 0 : 1);
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "the report does not say seccomp was left out";
}

TEST(Sandbox, ModeFromTheEnvironment) {
  ::setenv("KERNELARC_SANDBOX", "without:landlock,seccomp", 1);
  EXPECT_EQ(ka::sandbox_mode_args(), (std::vector<std::string>{"--without", "landlock", "--without", "seccomp"}));
  ::setenv("KERNELARC_SANDBOX", "off", 1);
  EXPECT_EQ(ka::sandbox_mode_args(), (std::vector<std::string>{"--no-sandbox"}));
  for (const char* bad : {"without:landlok", "without:", "of", "without:seccomp,"}) {
    ::setenv("KERNELARC_SANDBOX", bad, 1);
    EXPECT_THROW(ka::sandbox_mode_args(), ka::UserError) << bad;
  }
  ::unsetenv("KERNELARC_SANDBOX");
  EXPECT_TRUE(ka::sandbox_mode_args().empty());
}

TEST(Sandbox, ParentMemoryOutOfReach) {
  int rc = in_sandbox("", [] {
    const pid_t parent = ::getppid();
    if (::open(("/proc/" + std::to_string(parent) + "/mem").c_str(), O_RDONLY) >= 0) return 1;
    if (::open(("/proc/" + std::to_string(parent) + "/environ").c_str(), O_RDONLY) >= 0) return 2;
    char buf[8];
    iovec local{buf, sizeof buf}, remote{reinterpret_cast<void*>(0x1000), sizeof buf};
    if (::process_vm_readv(parent, &local, 1, &remote, 1, 0) >= 0 || errno == EFAULT) return 3;
    if (::ptrace(PTRACE_ATTACH, parent, nullptr, nullptr) == 0) return 4;
    return 0;
  });
  EXPECT_EQ(rc, 0) << "check " << rc << " of the probe failed";
}

TEST(Sandbox, WorkerEnvironmentIsScrubbed) {
  ::setenv("KERNELARC_CACHE", "/secret/cache", 1);
  ::setenv("CUDA_VISIBLE_DEVICES", "0", 1);
  std::vector<std::string> env = ka::worker_environment();
  ::unsetenv("KERNELARC_CACHE");
  ::unsetenv("CUDA_VISIBLE_DEVICES");
  bool path = false, cuda = false;
  for (const auto& e : env) {
    EXPECT_NE(e.rfind("KERNELARC_CACHE=", 0), 0u) << e;
    EXPECT_NE(e.rfind("HOME=", 0), 0u) << e;
    path |= e.rfind("PATH=", 0) == 0;
    cuda |= e == "CUDA_VISIBLE_DEVICES=0";
  }
  EXPECT_TRUE(path);
  EXPECT_TRUE(cuda);
}

// ── end to end: adversarial host candidates through `kernelarc eval` ──────────────────────────

namespace {

struct Eval {
  json report;
  std::string output;
};

Eval eval(const std::string& candidate, bool sandbox = true, int iterations = 3) {
  const fs::path cache = fs::path(KA_BUILD_DIR) / "test-cache";
  std::vector<std::string> env{"KERNELARC_CACHE=" + cache.string()};
  if (!sandbox) env.emplace_back("KERNELARC_SANDBOX=off");
  std::vector<std::string> cmd{KA_BINARY, "eval", (kRoot / "examples/problems/rmsnorm_h128").string(), "--solution",
                               (kRoot / "tests/data/adversarial/host" / (candidate + ".cpp")).string(),
                               "--workloads", "1", "--timeout", "20", "--no-reference-time", "--iterations", std::to_string(iterations),
                               "--warmup", "1", "--json"};
  ka::RunResult r = ka::run_command(cmd, std::chrono::minutes(5), env);
  Eval e;
  e.output = r.output;
  auto start = r.output.find("{\n");
  if (start != std::string::npos) e.report = json::parse(r.output.substr(start), nullptr, false);
  return e;
}

std::string verdict(const Eval& e) {
  if (!e.report.is_object()) return "no report: " + e.output;
  return e.report["workloads"][0]["verdict"].get<std::string>() + ": " +
         e.report["workloads"][0].value("message", std::string());
}

}  // namespace

TEST(SandboxAdversary, OracleCacheIsOutOfReach) {
  if (!has_landlock()) GTEST_SKIP() << "this kernel has no Landlock: the cache is guarded by file permissions only";
  EXPECT_EQ(verdict(eval("sandbox_read_cache")), "passed: ");
  // Without the sandbox the same candidate finds the cache through its log file and reads it.
  EXPECT_NE(verdict(eval("sandbox_read_cache", false)).find("exited with code 42"), std::string::npos);
}

TEST(SandboxAdversary, JudgeMemoryIsOutOfReach) { EXPECT_EQ(verdict(eval("sandbox_judge_memory")), "passed: "); }

TEST(SandboxAdversary, JudgeEnvironmentAndCommandLineGiveNothing) {
  if (!has_landlock()) GTEST_SKIP() << "this kernel has no Landlock: the paths on the judge's command line stay readable";
  EXPECT_EQ(verdict(eval("sandbox_judge_env")), "passed: ");
}

TEST(SandboxAdversary, NoNetwork) {
  EXPECT_EQ(verdict(eval("sandbox_socket")), "passed: ");
  EXPECT_NE(verdict(eval("sandbox_socket", false)).find("exited with code 49"), std::string::npos);
}

// The host timer: a candidate that returns at once and finishes its work on a thread of its own
// (a steady few µs per call) is caught by the CPU its threads use between the timed calls.
TEST(TimerAdversary, HostLazyCallsAreNotTimedAsFast) {
  const std::string v = verdict(eval("lazy_thread", true, 20));
  EXPECT_TRUE(v.rfind("timing_mismatch", 0) == 0 || v.rfind("wrong_answer", 0) == 0) << v;
}
