// target/build.h — compiles a candidate into a shared library the worker can load: nvcc for
// cuda, the system C++ compiler for host. The native entry file is compiled through a generated
// trampoline that includes it and appends KA_ENTRY(symbol). Builds are cached by a content hash of
// everything that goes into them (sources, flags, compiler identity, ABI header), across runs.
#pragma once
#include <filesystem>
#include <string>
#include <vector>

#include "solution/solution.h"

namespace ka {

struct BuildResult {
  bool ok = false;
  bool cached = false;
  std::filesystem::path library;
  std::vector<std::string> command;  // the compile command, recorded with every verdict
  std::string log;                   // compiler output
  double seconds = 0;
  std::string key;
};

// `sm` is the device's compute capability (e.g. 90) for cuda; 0 for host.
BuildResult build_candidate(const Candidate& c, int sm);
// The flags KernelArc uses for a candidate (defaults applied), as recorded and exported.
std::vector<std::string> effective_cuda_flags(const Candidate& c, int sm);

}  // namespace ka
