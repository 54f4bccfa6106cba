// test_emu.cpp — the CPU emulator of the CUDA subset the families use
// (include/kernelarc/emu/ka_emu.h): a cp.async that a later cp.async.mbarrier.arrive.noinc
// also tracks stays in its commit group, as on the hardware: cp.async.wait_group retires it (the
// data lands), and the barrier's later completion does not perform it a second time over newer
// data. A kernel that waits for its page ids by group while tracking its K/V copies on an mbarrier
// (a producer warp's id ring) depends on both. Clusters: multicast and remote arrivals. And the attention families' seed points, emulated
// against their definitions' references (bench/tools/attention_selftest.py --mode emu).
#include "util/resources.h"
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "util/files.h"
#include "util/process.h"

namespace ka {
namespace {

namespace fs = std::filesystem;
const fs::path kRoot = ka::source_root();

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

// Builds `program` (a main() against the emulator) with g++ in a new temporary folder; the
// compiler's result, and the binary at dir / "k".
RunResult build_emulated(const char* program, fs::path& dir) {
  const fs::path emu = kRoot / "include" / "kernelarc" / "emu" / "ka_emu.h";
  dir = make_temp_dir((fs::temp_directory_path() / "ka-emu-").string());
  write_atomic(dir / "k.cpp", "#include \"" + emu.string() + "\"\n" + program);
  return run_command({"g++", "-std=c++17", "-O1", "-o", (dir / "k").string(), (dir / "k.cpp").string()},
                     std::chrono::minutes(2));
}

TEST(Emulator, CpAsyncTrackedByAnMbarrierStaysInItsGroup) {
  fs::path dir;
  RunResult b = build_emulated(kKernel, dir);
  ASSERT_TRUE(b.ok()) << b.output;
  RunResult r = run_command({(dir / "k").string()}, std::chrono::minutes(1));
  EXPECT_TRUE(r.ok()) << r.output;
  EXPECT_EQ(r.output, "111 222 1\n");
  fs::remove_all(dir);
}

// Thread-block clusters (the GEMM family's CLUSTER > 1): rank 0's TMA load multicast to both CTAs of
// each 2-CTA cluster lands in each at the same shared offset and completes each CTA's own barrier;
// rank 1 then arrives on a barrier of rank 0. Without the waits before exit (the argument "racy"),
// rank 0 may leave first, and that remote arrival on an exited CTA is reported (16 clusters: the
// rank that runs ahead is drawn per cluster).
const char* kClusterKernel = R"(
#include <cstdio>
using namespace ka_emu_ops;
static uint16_t src[64];
static int out[16];
void kernel(bool wait_before_exit) {
  const uint32_t bar = 0, ready = 8, data = 128, rank = cluster_ctarank();
  emu::TensorMap2D m;
  m.base = reinterpret_cast<const unsigned char*>(src);
  m.dims[0] = 64, m.dims[1] = 1, m.row_bytes = 128, m.box[0] = 64, m.box[1] = 1;
  if (threadIdx.x == 0) { mbar_init(bar, 1); mbar_init(ready, 1); }
  cluster_sync();  // both CTAs' barriers exist
  if (threadIdx.x == 0) {
    mbar_arrive_expect_tx(bar, 128);  // each CTA expects the box once
    if (rank == 0) tma_load_2d_multicast(data, m, 0, 0, bar, 3);
    mbar_try_wait(bar, 0);
    const uint16_t* d = reinterpret_cast<const uint16_t*>(emu::smem_base() + data);
    out[blockIdx.x] = d[5] + d[63];
    if (rank == 1) mbar_arrive_remote(ready, 0);
    else if (wait_before_exit) mbar_try_wait(ready, 0);
  }
  if (wait_before_exit) cluster_sync();
}
int main(int argc, char**) {
  for (int i = 0; i < 64; ++i) src[i] = static_cast<uint16_t>(i);
  const bool wait = argc < 2;
  emu::launch_cluster(dim3(16), dim3(64), 512, 2, [=] { kernel(wait); });
  for (int b = 0; b < 16; ++b)
    if (out[b] != 68) { std::printf("CTA %d read %d\n", b, out[b]); return 1; }
  std::printf("ok\n");
  return 0;
}
)";

TEST(Emulator, ClusterMulticastAndRemoteArrivals) {
  fs::path dir;
  RunResult b = build_emulated(kClusterKernel, dir);
  ASSERT_TRUE(b.ok()) << b.output;
  RunResult r = run_command({(dir / "k").string()}, std::chrono::minutes(1));
  EXPECT_TRUE(r.ok()) << r.output;
  EXPECT_EQ(r.output, "ok\n");
  RunResult racy = run_command({(dir / "k").string(), "racy"}, std::chrono::minutes(1));
  EXPECT_FALSE(racy.ok()) << racy.output;
  EXPECT_NE(racy.output.find("mbarrier arrival on a CTA that has exited"), std::string::npos) << racy.output;
  fs::remove_all(dir);
}

// The attention families' seed points (what a campaign times first) against each definition's own
// reference, in the CPU emulator: bench/tools/attention_selftest.py --mode emu --points seeds runs the
// synthetic corner cases (empty sequences, tile edges, rows that see no key, row maxima that jump
// from tile to tile, ...) on every attention problem of the four families (their definitions: the
// dev problem folders, else the repo's copies in tests/data/attention). Needs Python with torch
// (scripts/install-deps.sh installs it); each family's source is built with g++.
TEST(Emulator, AttentionSeedPointsMatchTheReferences) {
  const char* py = std::getenv("KERNELARC_PYTHON");
  fs::path dir = make_temp_dir((fs::temp_directory_path() / "ka-emu-attn-").string());
  RunResult r = run_command({py && *py ? py : "python3", (kRoot / "bench" / "tools" / "attention_selftest.py").string(), "--mode",
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
