// tests/test_gemm_hopper.cpp — the Hopper GEMM family families/gemm_hopper_cuda run through the CPU
// emulator (KA_EMULATE, include/kernelarc/emu/ka_emu.h: TMA tensor loads and stores,
// mbarriers, wgmma with fp16 and bf16 operands, named barriers, clusters with TMA multicast and
// remote arrivals, each checked for misuse): points of its persistent kernel (PERSIST 1, and the
// ping-pong PERSIST 2; alone and in clusters of 2 and 4; 2 or 4 staging buffers), its
// non-persistent kernel with split-K and the small-M swap-AB path, instantiated as KernelArc
// instantiates them and built with g++, compute C = A·Bᵀ within tolerance for fp16 and bf16 on shapes whose M, N and K are not
// multiples of the tiles (zero-filled loads, clipped stores), with several tiles per CTA (3 and 5
// emulated SMs), a split-K tail and N % 8 != 0 (direct stores), each twice (a split-K workspace must
// be left clean).
#include "util/resources.h"
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "families/family.h"
#include "problem/problem.h"
#include "util/files.h"
#include "util/process.h"
#include "gemm_problem.h"

namespace ka {
namespace {

namespace fs = std::filesystem;
const fs::path kRoot = ka::source_root();

using test::synthetic_gemm;

// The emulated run: values exactly representable in the dtype, a double-precision reference, shapes
// "M N K ..." from the command line; every case runs twice.
const std::string kDriver = std::string(test::kGemmDriverPrelude) + R"(
int main(int argc, char** argv) {
  using namespace ka_gemm_hopper;
  std::vector<std::array<int, 3>> shapes;
  for (int i = 1; i + 2 < argc; i += 3) shapes.push_back({std::atoi(argv[i]), std::atoi(argv[i + 1]), std::atoi(argv[i + 2])});
  int bad = 0, cases = 0;
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  for (int dt : {ka::kFloat16, ka::kBFloat16})
    for (const auto& s : shapes) {
      const int M = s[0], N = s[1], K = s[2];
      std::vector<uint16_t> A(M * K), B(N * K), C(M * N);
      std::vector<double> a(M * K), b(N * K);
      auto q = [&](float x) { return dt == ka::kFloat16 ? __float2half_rn(x).x : __float2bfloat16_rn(x).x; };
      auto f = [&](uint16_t h) { return dt == ka::kFloat16 ? __half2float(__half{h}) : __bfloat162float(__nv_bfloat16{h}); };
      for (int i = 0; i < M * K; ++i) { A[i] = q(u(rng)); a[i] = f(A[i]); }
      for (int i = 0; i < N * K; ++i) { B[i] = q(u(rng)); b[i] = f(B[i]); }
      for (int call = 0; call < 2; ++call) {
        std::fill(C.begin(), C.end(), 0xFFFF);  // NaN: an output never written fails
        run(arg(A.data(), dt, M, K), arg(B.data(), dt, N, K), arg(C.data(), dt, M, N));
        ++cases;
        char what[96];
        std::snprintf(what, sizeof what, "dtype %d M=%d N=%d K=%d call %d", dt, M, N, K, call);
        bad += count_wrong(C, a, b, M, N, K, 2e-2, f, what) > 0;
      }
    }
  std::printf("%d cases, %d failed\n", cases, bad);
  return bad ? 1 : 0;
}
)";

TEST(GemmHopper, EmulatedPointsComputeTheProduct) {
  const fs::path emu = kRoot / "include" / "kernelarc" / "emu" / "ka_emu.h";
  ASSERT_TRUE(fs::exists(emu));
  const Family f = load_family(kRoot / "families" / "gemm_hopper_cuda");
  Problem p = synthetic_gemm(512, 2048);  // K of the space's constraints (split-K); the runs take their sizes from the arguments
  auto knobs = [](int bm, int bn, int stages, int splitk, int raster, int smalln, int persist, int small_wg, int cluster = 1,
                  int epi_bufs = 2) {
    return Knobs{{"BM", bm},         {"BN", bn},           {"BK", 64},           {"STAGES", stages},
                 {"SPLITK", splitk}, {"RASTER", raster},   {"SMALLN", smalln},   {"PERSIST", persist},
                 {"CLUSTER", cluster}, {"SMALL_WG", small_wg}, {"EPI_BUFS", epi_bufs}};
  };
  const std::vector<Knobs> points{
      knobs(128, 256, 4, 1, 1, 32, 2, 1, 2),   // ping-pong in clusters of 2, B multicast (p23)
      knobs(128, 256, 4, 16, 1, 256, 1, 1, 2), // persistent cooperative in clusters of 2 with a split-K tail (p12)
      knobs(128, 128, 5, 16, 1, 0, 1, 1, 4, 4),  // clusters of 4 (a CTA past the last tile row computes, stores
                                                 // nothing), 4 staging buffers over 2 chunks a tile
      knobs(128, 256, 3, 16, 1, 32, 1, 1, 1, 4),  // p11 with a staging buffer per chunk (3 stages)
      knobs(128, 256, 4, 1, 1, 32, 2, 1),   // ping-pong, BN 256 (p21)
      knobs(128, 128, 6, 1, 0, 0, 2, 1, 1, 4),  // ping-pong, BN 128, row-major order, no small-M path, 4 staging buffers
      knobs(128, 256, 4, 16, 1, 32, 1, 1),  // persistent cooperative with a split-K tail (p11)
      knobs(128, 128, 4, 8, 0, 64, 0, 2),   // one CTA per unit, split-K; small-M path on 2 warpgroups
      knobs(64, 64, 6, 16, 0, 0, 0, 1),     // one consumer warpgroup
  };
  // M 13 (the small-M path where SMALLN >= 16), tiles cut on every side, a deep K split (M 70, K 1024),
  // N % 8 != 0 (the persistent kernels' direct stores instead of TMA stores).
  const std::vector<std::string> shapes{"13", "200", "512", "200", "512", "256", "333", "264", "136",
                                        "70", "136", "1024", "77", "130", "200"};
  fs::path dir = make_temp_dir((fs::temp_directory_path() / "ka-gemm-hopper-").string());
  for (const Knobs& k : points) {
    ASSERT_TRUE(f.valid(k, p)) << knobs_str(k);
    Candidate c = f.instantiate(k, p);
    write_atomic(dir / "point.cpp", c.sources[0].content + kDriver);
    RunResult b = run_command({"g++", "-std=c++17", "-O1", "-I" + (kRoot / "include").string(),
                               "-DKA_EMULATE=\"" + emu.string() + "\"", "-o", (dir / "point").string(),
                               (dir / "point.cpp").string()},
                              std::chrono::minutes(3));
    ASSERT_TRUE(b.ok()) << knobs_str(k) << "\n" << b.output;
    for (const char* sms : {"3", "5"}) {
      std::vector<std::string> cmd{"env", std::string("KA_EMU_SMS=") + sms, (dir / "point").string()};
      cmd.insert(cmd.end(), shapes.begin(), shapes.end());
      RunResult r = run_command(cmd, std::chrono::minutes(3));
      EXPECT_TRUE(r.ok()) << knobs_str(k) << " sms " << sms << "\n" << r.output;
      EXPECT_NE(r.output.find("20 cases, 0 failed"), std::string::npos) << knobs_str(k) << " sms " << sms << "\n" << r.output;
    }
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace ka
