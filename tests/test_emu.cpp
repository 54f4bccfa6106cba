// test_emu.cpp — the CPU emulator of the CUDA subset the families use
// (families/gqa_decode_cuda/emu/ka_emu.h): a cp.async that a later cp.async.mbarrier.arrive.noinc
// also tracks stays in its commit group, as on the hardware: cp.async.wait_group retires it (the
// data lands), and the barrier's later completion does not perform it a second time over newer
// data. A kernel that waits for its page ids by group while tracking its K/V copies on an mbarrier
// (a producer warp's id ring) depends on both. And the attention families' seed points, emulated
// against their definitions' references (bench/attention_selftest.py --mode emu).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "util/files.h"
#include "util/process.h"

namespace ka {
namespace {

namespace fs = std::filesystem;
const fs::path kRoot = KA_SOURCE_DIR;

const char* kKernel = R"(
#include <cstdio>
using namespace ka_emu_ops;
static int g[2] = {111, 222};
static int out[3];
void kernel() {
  unsigned char* s = emu::smem_base();
  int* v = reinterpret_cast<int*>(s + 16);
  const uint32_t bar = 0;
  if (threadIdx.x == 0) { mbar_init(bar, 1); }
  __syncthreads();
  if (threadIdx.x == 0) {
    cp_async_4(smem_u32(v), &g[0], 4);   // group 0
    cp_async_commit();
    cp_async_mbar_arrive_noinc(bar);     // the barrier tracks it too
    cp_async_wait(0);                    // retired by its group: landed
    out[0] = v[0];
    cp_async_4(smem_u32(v), &g[1], 4);   // newer data into the same bytes
    cp_async_commit();
    cp_async_wait(0);
    while (!mbar_try_wait(bar, 0)) {}    // completing the phase must not bring g[0] back
    out[1] = v[0];
    out[2] = 1;
  }
}
int main() {
  emu::launch(dim3(1), dim3(32), 64, [] { kernel(); });
  std::printf("%d %d %d\n", out[0], out[1], out[2]);
  return out[0] == 111 && out[1] == 222 && out[2] == 1 ? 0 : 1;
}
)";

TEST(Emulator, CpAsyncTrackedByAnMbarrierStaysInItsGroup) {
  const fs::path emu = kRoot / "families" / "gqa_decode_cuda" / "emu" / "ka_emu.h";
  fs::path dir = make_temp_dir((fs::temp_directory_path() / "ka-emu-").string());
  write_atomic(dir / "k.cpp", "#include \"" + emu.string() + "\"\n" + kKernel);
  RunResult b = run_command({"g++", "-std=c++17", "-O1", "-o", (dir / "k").string(), (dir / "k.cpp").string()},
                            std::chrono::minutes(2));
  ASSERT_TRUE(b.ok()) << b.output;
  RunResult r = run_command({(dir / "k").string()}, std::chrono::minutes(1));
  EXPECT_TRUE(r.ok()) << r.output;
  EXPECT_EQ(r.output, "111 222 1\n");
  fs::remove_all(dir);
}

// The attention families' seed points (what a campaign times first) against each definition's own
// reference, in the CPU emulator: bench/attention_selftest.py --mode emu --points seeds runs the
// synthetic corner cases (empty sequences, tile edges, rows that see no key, row maxima that jump
// from tile to tile, ...) on every attention problem of the four families (their definitions: the
// dev problem folders, else the repo's copies in tests/data/attention). Needs Python with torch
// (scripts/install-deps.sh installs it); each family's source is built with g++.
TEST(Emulator, AttentionSeedPointsMatchTheReferences) {
  const char* py = std::getenv("KERNELARC_PYTHON");
  fs::path dir = make_temp_dir((fs::temp_directory_path() / "ka-emu-attn-").string());
  RunResult r = run_command({py && *py ? py : "python3", (kRoot / "bench" / "attention_selftest.py").string(), "--mode",
                             "emu", "--family", "all", "--points", "seeds", "--jobs", "2", "--workdir", dir.string()},
                            std::chrono::minutes(20));
  const std::string tail = r.output.size() > 4000 ? r.output.substr(r.output.size() - 4000) : r.output;
  EXPECT_TRUE(r.ok()) << tail;
  EXPECT_NE(r.output.find("checks, 0 failed"), std::string::npos) << tail;
  EXPECT_EQ(r.output.find("[FAIL]"), std::string::npos) << tail;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace ka
