// tests/nvcc_build.h — builds a CUDA candidate as the judge does (the flags of
// target/build.h's effective_cuda_flags, the KA_ENTRY trampoline, the candidate's link flags) for
// one -gencode option, in a temporary folder, so that the compile tests of the families check what
// a campaign would build. Used by the tests that need nvcc (each skips without it). Also the check
// of a verbose sm_90a build's ptxas report that the families' compile tests share.
#pragma once
#include "util/resources.h"
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "solution/solution.h"
#include "target/build.h"
#include "util/files.h"
#include "util/process.h"

namespace ka::test {

// `arch` is one -gencode option (it replaces the judge's default arch); verbose adds -Xptxas -v
// (registers, spills) to the output.
inline RunResult nvcc_judge_build(const std::filesystem::path& nvcc, const Candidate& c, const std::string& arch,
                                  bool verbose) {
  namespace fs = std::filesystem;
  const fs::path dir = make_temp_dir((fs::temp_directory_path() / "ka-nvcc-").string());
  for (const auto& s : c.sources) {  // the entry, family headers and device-layer headers
    fs::create_directories((dir / s.path).parent_path());
    write_atomic(dir / s.path, s.content);
  }
  write_atomic(dir / "tramp.cu", "#include \"" + c.entry_file + "\"\nKA_ENTRY(" + c.entry_symbol + ")\n");
  Candidate with_arch = c;
  with_arch.has_compile_options = true;
  if (!c.has_compile_options) with_arch.cuda_cflags = {"-O3"};
  with_arch.cuda_cflags.insert(with_arch.cuda_cflags.begin(), arch);
  std::vector<std::string> cmd{nvcc.string()};
  for (const auto& f : effective_cuda_flags(with_arch, 90)) cmd.push_back(f);
  if (verbose) cmd.insert(cmd.end(), {"-Xptxas", "-v"});
  cmd.insert(cmd.end(), {"-shared", "-Xcompiler", "-fPIC", "-I" + dir.string(),
                         "-I" + (ka::source_root() / "include").string(), "-o", (dir / "lib.so").string(),
                         (dir / "tramp.cu").string()});
  cmd.insert(cmd.end(), c.ld_flags.begin(), c.ld_flags.end());
  RunResult r = run_command(cmd, std::chrono::minutes(5));
  fs::remove_all(dir);
  return r;
}

// A verbose (-Xptxas -v) sm_90a build's report: no stack frame or spill in any kernel, no wgmma
// serialised ("Potential Performance Loss"), no warning; `what` names the build in failures.
inline void expect_clean_ptxas(const std::string& out, const std::string& what) {
  EXPECT_NE(out.find(" 0 bytes stack frame, 0 bytes spill stores"), std::string::npos) << what << "\n" << out;
  EXPECT_EQ(out.find("Potential Performance Loss"), std::string::npos) << what << "\n" << out;
  EXPECT_EQ(out.find("warning"), std::string::npos) << what << "\n" << out;
}

}  // namespace ka::test
