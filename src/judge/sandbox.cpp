// judge/sandbox.cpp — namespaces, capabilities, ptrace, Landlock and seccomp for the worker; the
// judge's own hardening; the worker's scrubbed environment. Linux only; every step degrades to a
// reported "off" when the kernel refuses it.
#include "judge/sandbox.h"

#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>

extern char** environ;

namespace ka {
namespace {

namespace fs = std::filesystem;

std::string err(int e) { return std::strerror(e); }

// ── namespaces and capabilities ─────────────────────────────────────────────────────────────

bool write_file(const char* path, const std::string& text) {
  int fd = ::open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  ::close(fd);
  return ok;
}

// Non-root: a user namespace mapping only our own uid and gid, with a network namespace of its
// own. Root: a network namespace (the capabilities go afterwards, drop_capabilities).
void enter_namespaces(SandboxReport& r) {
  const uid_t uid = ::geteuid();
  const gid_t gid = ::getegid();
  if (uid == 0) {
    if (::unshare(CLONE_NEWNET) == 0) r.on.push_back("network namespace");
    else r.off.push_back(fmt::format("network namespace (unshare: {})", err(errno)));
    return;
  }
  if (::unshare(CLONE_NEWUSER | CLONE_NEWNET) != 0) {
    r.off.push_back(fmt::format("user and network namespaces (unshare: {}; user namespaces disabled?)", err(errno)));
    return;
  }
  bool mapped = write_file("/proc/self/uid_map", fmt::format("{} {} 1\n", uid, uid)) &&
                write_file("/proc/self/setgroups", "deny") &&
                write_file("/proc/self/gid_map", fmt::format("{} {} 1\n", gid, gid));
  r.on.push_back(mapped ? "user namespace" : "user namespace (ids unmapped)");
  r.on.push_back("network namespace");
}

// No capability left in any set, and none to regain through exec (empty bounding set).
void drop_capabilities(SandboxReport& r) {
  int last = 40;
  if (std::ifstream f("/proc/sys/kernel/cap_last_cap"); f) f >> last;
  for (int c = 0; c <= last; ++c) ::prctl(PR_CAPBSET_DROP, c, 0, 0, 0);
  ::prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
  struct {
    uint32_t version;
    int pid;
  } hdr{0x20080522 /* _LINUX_CAPABILITY_VERSION_3 */, 0};
  struct {
    uint32_t effective, permitted, inheritable;
  } data[2] = {};
  if (::syscall(SYS_capset, &hdr, data) == 0) r.on.push_back("no capabilities");
  else r.off.push_back(fmt::format("capability drop (capset: {})", err(errno)));
}

// ── Landlock ────────────────────────────────────────────────────────────────────────────────

#ifndef SYS_landlock_create_ruleset
#define SYS_landlock_create_ruleset 444
#define SYS_landlock_add_rule 445
#define SYS_landlock_restrict_self 446
#endif

// The kernel's ABI constants (linux/landlock.h), spelled here so that older headers build.
constexpr uint64_t kExecute = 1ull << 0, kWriteFile = 1ull << 1, kReadFile = 1ull << 2, kReadDir = 1ull << 3,
                   kRemoveFile = 1ull << 5, kMakeReg = 1ull << 8, kRefer = 1ull << 13, kTruncate = 1ull << 14,
                   kIoctlDev = 1ull << 15;
constexpr uint64_t kFileRights = kExecute | kWriteFile | kReadFile | kTruncate | kIoctlDev;
constexpr uint64_t kNetBindTcp = 1ull << 0, kNetConnectTcp = 1ull << 1;
constexpr uint64_t kScopeAbstractUnix = 1ull << 0, kScopeSignal = 1ull << 1;
constexpr int kRulePathBeneath = 1;

struct RulesetAttr {
  uint64_t handled_fs = 0, handled_net = 0, scoped = 0;
};
struct PathBeneath {
  uint64_t allowed;
  int32_t parent_fd;
} __attribute__((packed));

uint64_t handled_fs_for(long abi) {
  uint64_t h = (1ull << 13) - 1;  // ABI 1: execute … make_sym
  if (abi >= 2) h |= kRefer;
  if (abi >= 3) h |= kTruncate;
  if (abi >= 5) h |= kIoctlDev;
  return h;
}

class Landlock {
 public:
  explicit Landlock(long abi) : abi_(abi), handled_(handled_fs_for(abi)) {
    RulesetAttr a;
    a.handled_fs = handled_;
    size_t size = sizeof(uint64_t);
    if (abi >= 4) {  // no TCP bind or connect at all
      a.handled_net = kNetBindTcp | kNetConnectTcp;
      size = 2 * sizeof(uint64_t);
    }
    if (abi >= 6) {  // no signals to, nor abstract sockets of, processes outside the sandbox
      a.scoped = kScopeAbstractUnix | kScopeSignal;
      size = sizeof a;
    }
    fd_ = static_cast<int>(::syscall(SYS_landlock_create_ruleset, &a, size, 0));
  }
  ~Landlock() {
    if (fd_ >= 0) ::close(fd_);
  }
  bool ok() const { return fd_ >= 0; }
  // Allows `rights` beneath `p` (a folder) or on it (a file); a path that does not exist is skipped.
  void allow(const fs::path& p, uint64_t rights) {
    int pfd = ::open(p.c_str(), O_PATH | O_CLOEXEC);
    if (pfd < 0) return;
    struct stat st {};
    ::fstat(pfd, &st);
    PathBeneath rule{rights & handled_ & (S_ISDIR(st.st_mode) ? ~0ull : kFileRights), pfd};
    if (rule.allowed && ::syscall(SYS_landlock_add_rule, fd_, kRulePathBeneath, &rule, 0) != 0 && first_error_.empty())
      first_error_ = fmt::format("{}: {}", p.string(), err(errno));
    ::close(pfd);
  }
  bool restrict_self() { return ::syscall(SYS_landlock_restrict_self, fd_, 0) == 0; }
  const std::string& first_error() const { return first_error_; }

 private:
  long abi_;
  uint64_t handled_;
  int fd_ = -1;
  std::string first_error_;
};

std::vector<fs::path> split_paths(const char* list) {
  std::vector<fs::path> out;
  if (!list) return out;
  std::stringstream ss(list);
  for (std::string part; std::getline(ss, part, ':');)
    if (!part.empty() && part[0] == '/') out.emplace_back(part);
  return out;
}

// Every file mapped into this process now (its binary and the libraries it loaded).
std::set<fs::path> mapped_files() {
  std::set<fs::path> out;
  std::ifstream maps("/proc/self/maps");
  for (std::string line; std::getline(maps, line);) {
    size_t slash = line.find('/');
    if (slash == std::string::npos || line.find(" (deleted)") != std::string::npos) continue;
    out.insert(line.substr(slash));
  }
  return out;
}

// The worker may write its own /proc/<pid> entries: the CUDA driver names its threads at
// initialisation (/proc/<pid>/task/<tid>/comm) and fails with cudaErrorOperatingSystem when it
// cannot. Only this process's folder: a link there (fd/, cwd) still meets the other rules at its
// target. A descriptor kept open pins the folder's dentry, so the rule's inode stays the one
// procfs resolves for threads started later.
void allow_own_proc(Landlock& ll) {
  static const int pin = ::open("/proc/self", O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (pin < 0) return;
  ll.allow(fmt::format("/proc/{}", ::getpid()), kReadFile | kReadDir | kWriteFile | kTruncate);
}

void enter_landlock(const SandboxPolicy& policy, SandboxReport& r) {
  long abi = ::syscall(SYS_landlock_create_ruleset, nullptr, 0, 1u /* LANDLOCK_CREATE_RULESET_VERSION */);
  if (abi < 1) {
    r.off.push_back(fmt::format("landlock ({}): the worker can read every file its user can, the oracle cache included",
                                errno == ENOSYS ? "not in this kernel" : errno == EOPNOTSUPP ? "disabled at boot" : err(errno)));
    return;
  }
  Landlock ll(abi);
  if (!ll.ok()) {
    r.off.push_back(fmt::format("landlock (create_ruleset: {})", err(errno)));
    return;
  }
  const uint64_t rx = kReadFile | kReadDir | kExecute, rw_dev = kReadFile | kWriteFile | kTruncate | kIoctlDev;
  for (const fs::path& t : sandbox_read_trees(policy)) ll.allow(t, rx);
  for (const fs::path& f : mapped_files()) ll.allow(f, kReadFile | kExecute);
  ll.allow("/proc", kReadFile | kReadDir);
  allow_own_proc(ll);
  ll.allow("/sys", kReadFile | kReadDir);
  ll.allow("/dev", kReadDir);
  for (const char* d : {"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom"}) ll.allow(d, kReadFile | kWriteFile | kTruncate);
  if (policy.gpu) {
    std::error_code ec;
    for (const auto& e : fs::directory_iterator("/dev", ec))
      if (e.path().filename().string().rfind("nvidia", 0) == 0) ll.allow(e.path(), rw_dev | kReadDir);
    ll.allow("/dev/dri", rw_dev | kReadDir);
    ll.allow("/dev/shm", kReadFile | kWriteFile | kReadDir | kMakeReg | kRemoveFile | kTruncate);
  }
  if (!ll.first_error().empty()) {
    r.off.push_back(fmt::format("landlock (add_rule {})", ll.first_error()));
    return;
  }
  if (!ll.restrict_self()) {
    r.off.push_back(fmt::format("landlock (restrict_self: {})", err(errno)));
    return;
  }
  r.on.push_back(fmt::format("landlock abi {}", abi));
}

// ── seccomp ─────────────────────────────────────────────────────────────────────────────────

#if defined(__x86_64__)
constexpr uint32_t kAuditArch = AUDIT_ARCH_X86_64;
#elif defined(__aarch64__)
constexpr uint32_t kAuditArch = AUDIT_ARCH_AARCH64;
#else
constexpr uint32_t kAuditArch = 0;
#endif

// System calls a candidate has no business making: other processes' memory, kernel programs and
// profilers, mounts and namespaces, kernel modules and keys, raw I/O.
std::vector<int> denied_syscalls() {
  std::vector<int> v = {SYS_ptrace, SYS_process_vm_readv, SYS_process_vm_writev, SYS_perf_event_open, SYS_bpf,
                        SYS_mount, SYS_umount2, SYS_pivot_root, SYS_chroot, SYS_setns, SYS_unshare,
                        SYS_kexec_load, SYS_init_module, SYS_finit_module, SYS_delete_module,
                        SYS_open_by_handle_at, SYS_name_to_handle_at, SYS_keyctl, SYS_add_key, SYS_request_key,
                        SYS_userfaultfd, SYS_kcmp, SYS_fanotify_init, SYS_swapon, SYS_swapoff, SYS_reboot,
                        SYS_acct, SYS_quotactl, SYS_syslog, SYS_io_uring_setup, SYS_io_uring_enter,
                        SYS_io_uring_register};
#ifdef SYS_pidfd_getfd
  v.push_back(SYS_pidfd_getfd);
#endif
#ifdef SYS_process_madvise
  v.push_back(SYS_process_madvise);
#endif
#ifdef SYS_kexec_file_load
  v.push_back(SYS_kexec_file_load);
#endif
#if defined(__x86_64__)
  v.push_back(SYS_iopl);
  v.push_back(SYS_ioperm);
#endif
  return v;
}

void enter_seccomp(SandboxReport& r) {
  if (kAuditArch == 0) {
    r.off.push_back("seccomp (no filter for this architecture)");
    return;
  }
  const uint32_t deny = SECCOMP_RET_ERRNO | EPERM;
  std::vector<sock_filter> f;
  f.push_back(BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, arch)));
  f.push_back(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, kAuditArch, 1, 0));
  f.push_back(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS));  // another ABI's system calls
  f.push_back(BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)));
#if defined(__x86_64__)
  f.push_back(BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, 0x40000000u, 0, 1));  // x32 numbering
  f.push_back(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS));
#endif
  for (int nr : denied_syscalls()) {
    f.push_back(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, static_cast<uint32_t>(nr), 0, 1));
    f.push_back(BPF_STMT(BPF_RET | BPF_K, deny));
  }
  // socket(): AF_UNIX only (the driver's local sockets); no network of any family.
  f.push_back(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_socket, 0, 4));
  f.push_back(BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, args[0])));
  f.push_back(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AF_UNIX, 0, 1));
  f.push_back(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW));
  f.push_back(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EAFNOSUPPORT));
  f.push_back(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW));
  sock_fprog prog{static_cast<unsigned short>(f.size()), f.data()};
  if (::prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0) == 0) r.on.push_back("seccomp");
  else r.off.push_back(fmt::format("seccomp ({})", err(errno)));
}

int threads_now() {
  std::ifstream f("/proc/self/status");
  for (std::string line; std::getline(f, line);)
    if (line.rfind("Threads:", 0) == 0) return std::atoi(line.c_str() + 8);
  return 1;
}

}  // namespace

std::string SandboxReport::summary() const {
  std::string s = "sandbox:";
  for (const auto& o : on) s += " " + o + ";";
  if (off.empty()) return s + " nothing off";
  s += " OFF:";
  for (const auto& o : off) s += " " + o + ";";
  return s;
}

std::vector<fs::path> sandbox_read_trees(const SandboxPolicy& policy) {
  std::vector<fs::path> t = {"/usr", "/lib", "/lib32", "/lib64", "/libx32", "/bin", "/sbin", "/opt", "/etc"};
  for (const auto& p : split_paths(std::getenv("LD_LIBRARY_PATH"))) t.push_back(p);
  t.insert(t.end(), policy.read_trees.begin(), policy.read_trees.end());
  return t;
}

const std::vector<std::string>& sandbox_defences() {
  static const std::vector<std::string> names = {"namespaces", "dumpable", "no_new_privs", "landlock", "capabilities", "seccomp"};
  return names;
}

SandboxReport enter_sandbox(const SandboxPolicy& policy) {
  SandboxReport r;
  if (!policy.enabled) {
    r.off.push_back("everything (the judge was started with KERNELARC_SANDBOX=off)");
    return r;
  }
  auto wanted = [&](const char* name) {
    if (std::find(policy.without.begin(), policy.without.end(), name) == policy.without.end()) return true;
    r.off.push_back(fmt::format("{} (left out: KERNELARC_SANDBOX=without:...)", name));
    return false;
  };
  if (int n = threads_now(); n > 1) r.off.push_back(fmt::format("landlock for {} threads started before it", n - 1));
  if (wanted("namespaces")) enter_namespaces(r);  // before PR_SET_DUMPABLE: writing our own uid_map needs a dumpable process
  if (wanted("dumpable")) {
    ::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
    struct rlimit no_core {0, 0};
    ::setrlimit(RLIMIT_CORE, &no_core);
    r.on.push_back("not dumpable");
  }
  if (wanted("no_new_privs") && ::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
    r.off.push_back(fmt::format("no_new_privs ({})", err(errno)));
  if (wanted("landlock")) enter_landlock(policy, r);
  if (wanted("capabilities")) drop_capabilities(r);
  if (wanted("seccomp")) enter_seccomp(r);
  return r;
}

void harden_judge_process() { ::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0); }

std::vector<std::string> worker_environment() {
  std::vector<std::string> env;
  bool omp_wait = false;
  for (char** e = environ; e && *e; ++e) {
    std::string_view kv(*e);
    std::string_view name = kv.substr(0, kv.find('='));
    bool keep = name == "PATH" || name == "LD_LIBRARY_PATH" || name == "KERNELARC_GPU" || name.rfind("CUDA_", 0) == 0 ||
                name.rfind("NVIDIA_", 0) == 0 || name.rfind("OMP_", 0) == 0;
    if (keep) env.emplace_back(kv);
    omp_wait |= name == "OMP_WAIT_POLICY";
  }
  // Idle OpenMP threads of a host candidate sleep rather than spin between calls (the judge counts
  // CPU time spent outside the timed calls; target/host_backend.cpp).
  if (!omp_wait) env.emplace_back("OMP_WAIT_POLICY=PASSIVE");
  return env;
}

}  // namespace ka
