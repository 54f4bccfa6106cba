// test_device.cpp — the device layer (include/kernelarc/device/) primitive by primitive:
// tests/device/primitives_check.cu (reductions, online softmax and split-KV merge, the ragged index
// search, cp.async and mbarrier bulk copies, ldmatrix + mma.sync, fp8 / fp4 / bf16 / fp16
// conversions), built with g++ against the CPU emulator and run; and the same file compiled with
// nvcc for sm_90a (skipped without nvcc). bench/tools/device_selftest.sh runs it on a GPU.
#include "util/resources.h"
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "util/files.h"
#include "util/process.h"

namespace ka {
namespace {

namespace fs = std::filesystem;
const fs::path kRoot = ka::source_root();

TEST(DeviceLayer, PrimitivesUnderTheEmulator) {
  fs::path dir = make_temp_dir((fs::temp_directory_path() / "ka-device-").string());
  RunResult b = run_command({"g++", "-std=c++17", "-O1", "-DKA_EMULATE", "-I" + (kRoot / "include").string(), "-x", "c++",
                             (kRoot / "tests" / "device" / "primitives_check.cu").string(), "-o", (dir / "k").string()},
                            std::chrono::minutes(3));
  ASSERT_TRUE(b.ok()) << b.output;
  RunResult r = run_command({(dir / "k").string()}, std::chrono::minutes(2));
  EXPECT_TRUE(r.ok()) << r.output;
  EXPECT_NE(r.output.find(" checks, 0 failed"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("FAIL"), std::string::npos) << r.output;
  fs::remove_all(dir);
}

TEST(DeviceLayer, PrimitivesCompileForSm90a) {
  const fs::path nvcc = "/usr/local/cuda/bin/nvcc";
  if (!fs::exists(nvcc)) GTEST_SKIP() << "no nvcc";
  fs::path dir = make_temp_dir((fs::temp_directory_path() / "ka-device-").string());
  RunResult b = run_command({nvcc.string(), "-std=c++17", "-O3", "-gencode=arch=compute_90a,code=sm_90a",
                             "--expt-relaxed-constexpr", "-D__CUDA_NO_HALF_OPERATORS__", "-D__CUDA_NO_HALF_CONVERSIONS__",
                             "-D__CUDA_NO_BFLOAT16_CONVERSIONS__", "-D__CUDA_NO_HALF2_OPERATORS__",
                             "-I" + (kRoot / "include").string(), "-x", "cu", "-c",
                             (kRoot / "tests" / "device" / "primitives_check.cu").string(), "-o", (dir / "k.o").string()},
                            std::chrono::minutes(5));
  EXPECT_TRUE(b.ok()) << b.output;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace ka
