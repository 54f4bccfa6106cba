// judge/sandbox.h — the OS sandbox of a worker process (the process that loads and runs
// candidates) and the hardening of the judge process against it. The worker enters the sandbox
// at startup, single-threaded, before its backend starts the device: its own user namespace (or,
// as root, no capabilities), a fresh network namespace, no ptrace either way, Landlock (read-only
// system and library trees, /proc, /sys, the device nodes; nothing of KernelArc's cache, the
// problem folders or the judge's files) and a seccomp filter (no ptrace, process_vm_*, bpf,
// perf_event_open, mount…, sockets other than AF_UNIX). Where the kernel lacks a feature the
// worker runs with what exists and reports which defence is off (docs/judge.md, "Sandbox").
#pragma once
#include <filesystem>
#include <string>
#include <vector>

namespace ka {

struct SandboxPolicy {
  bool enabled = true;
  bool gpu = false;                                  // the device nodes /dev/nvidia*, /dev/shm
  std::vector<std::filesystem::path> read_trees;     // extra read-only trees (e.g. PyTorch's libraries)
  std::vector<std::string> without;                  // defences left out (sandbox_defences()), each reported off
};

// The defences enter_sandbox() sets up, by the names KERNELARC_SANDBOX=without:NAME,... takes:
// namespaces, dumpable, no_new_privs, landlock, capabilities, seccomp.
const std::vector<std::string>& sandbox_defences();

struct SandboxReport {
  std::vector<std::string> on;   // defences in force, e.g. "landlock abi 7"
  std::vector<std::string> off;  // defences not in force, each with why
  // One line for the log: what is on, and what is off and why.
  std::string summary() const;
};

// Enters the sandbox (worker side). Call once, before any thread or device context exists; never
// throws: a defence that cannot be set up is reported in `off`.
SandboxReport enter_sandbox(const SandboxPolicy& policy);

// The read-only trees the worker may read besides its own binary and libraries (so the judge can
// warn when its cache lies beneath one of them).
std::vector<std::filesystem::path> sandbox_read_trees(const SandboxPolicy& policy);

// Judge side: makes this process non-dumpable (its memory, environment and fds unreadable through
// /proc and ptrace by a process of the same user without CAP_SYS_PTRACE). Idempotent.
void harden_judge_process();

// The environment a worker starts with: only what a backend needs (PATH, LD_LIBRARY_PATH, CUDA_*,
// NVIDIA_*, KERNELARC_GPU, OMP_*), never KERNELARC_CACHE, HOME or the judge's other settings.
std::vector<std::string> worker_environment();

}  // namespace ka
