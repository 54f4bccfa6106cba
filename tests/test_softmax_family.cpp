// tests/test_softmax_family.cpp — the row-softmax family families/softmax_cuda (built on the
// device layer): its space on a synthetic softmax problem; its instantiated source, built with g++
// against the CPU emulator, computes softmax(x, dim=-1) within 1e-3 + 1e-2 relative for bf16, fp16
// and fp32 rows, at the instantiated row length (aligned and misaligned: the generic kernel) and two
// others, with row counts that leave a block's rows partly empty; and one point compiles with the
// judge's nvcc flags for sm_90a (skipped without nvcc).
#include "util/resources.h"
#include <gtest/gtest.h>

#include <filesystem>
#include <regex>
#include <string>
#include <vector>

#include "families/family.h"
#include "problem/problem.h"
#include "util/files.h"
#include "util/process.h"
#include "nvcc_build.h"

namespace ka {
namespace {

namespace fs = std::filesystem;
const fs::path kRoot = ka::source_root();

Problem synthetic_softmax(int64_t h) {
  Problem p;
  p.dir = "/nonexistent/syn_softmax";
  p.def = parse_definition_text(R"J({"name": "syn_softmax", "op_type": "softmax",
    "axes": {"rows": {"type": "var"}, "hidden_size": {"type": "const", "value": )J" + std::to_string(h) + R"J(}},
    "inputs": {"x": {"shape": ["rows", "hidden_size"], "dtype": "bfloat16"}},
    "outputs": {"y": {"shape": ["rows", "hidden_size"], "dtype": "bfloat16"}},
    "reference": "import torch\ndef run(x):\n    return torch.softmax(x, dim=-1)"})J",
                                "synthetic");
  return p;
}

const Family& softmax() {
  static Family f = load_family(kRoot / "families" / "softmax_cuda");
  return f;
}

TEST(SoftmaxFamily, SpaceOnSoftmaxProblems) {
  Problem p = synthetic_softmax(4096);
  EXPECT_TRUE(softmax().applies_to(p));
  EXPECT_FALSE(softmax().space(p).empty());
  EXPECT_TRUE(softmax().space(synthetic_softmax(2)).empty());  // shorter than any load
  std::vector<std::string> layer;
  for (const auto& h : softmax().layer) layer.push_back(h.path);
  EXPECT_EQ(layer, (std::vector<std::string>{"kernelarc/device/convert.cuh", "kernelarc/device/reduce.cuh",
                                             "kernelarc/device/target.cuh"}));
}

const std::string kDriver = R"D(
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>
// Calls run() on rows x h tensors of each dtype (h = the instantiated HIDDEN and two others, one of
// them misaligned), compares with a double-precision softmax of the same (rounded) inputs.
static ka::TensorArg targ(void* d, int dt, int64_t r, int64_t c) {
  ka::TensorArg t{};
  t.data = d; t.dtype = dt; t.ndim = 2; t.shape[0] = r; t.shape[1] = c; t.strides[0] = c; t.strides[1] = 1;
  return t;
}
static float bits_to_f(int dt, uint32_t b) {
  if (dt == ka::kFloat32) { float f; std::memcpy(&f, &b, 4); return f; }
  if (dt == ka::kBFloat16) return ka_emu_ops::bf(b);
  return ka_emu_ops::hf(b);
}
static uint32_t f_to_bits(int dt, float f) {
  if (dt == ka::kFloat32) { uint32_t b; std::memcpy(&b, &f, 4); return b; }
  return dt == ka::kBFloat16 ? ka_emu_ops::f2bf(f) : ka_emu_ops::f2h(f);
}
int main() {
  std::mt19937 rng(3);
  std::normal_distribution<float> nd(0.f, 3.f);
  int bad = 0, cases = 0;
  for (int dt : {ka::kBFloat16, ka::kFloat16, ka::kFloat32})
    for (int64_t h : {int64_t(KA_HIDDEN), int64_t(KA_HIDDEN) + 3, int64_t(40)})
      for (int64_t rows : {int64_t(1), int64_t(3), int64_t(9)})
        for (int misalign : {0, 1}) {
          if (misalign && h != KA_HIDDEN) continue;
          const int es = dt == ka::kFloat32 ? 4 : 2;
          std::vector<unsigned char> xb((rows * h + 1) * es + 64), yb((rows * h + 1) * es + 64, 0xEE);
          unsigned char* xp = xb.data() + misalign * es;
          unsigned char* yp = yb.data() + misalign * es;
          std::vector<double> xv(rows * h);
          for (int64_t i = 0; i < rows * h; ++i) {
            const uint32_t b = f_to_bits(dt, nd(rng));
            std::memcpy(xp + i * es, &b, es);
            xv[i] = bits_to_f(dt, b);
          }
          run(targ(xp, dt, rows, h), targ(yp, dt, rows, h));
          ++cases;
          int wrong = 0;
          for (int64_t r = 0; r < rows; ++r) {
            double m = -1e300, s = 0;
            for (int64_t i = 0; i < h; ++i) m = std::fmax(m, xv[r * h + i]);
            for (int64_t i = 0; i < h; ++i) s += std::exp(xv[r * h + i] - m);
            for (int64_t i = 0; i < h; ++i) {
              uint32_t b = 0;
              std::memcpy(&b, yp + (r * h + i) * es, es);
              const double ref = std::exp(xv[r * h + i] - m) / s, got = bits_to_f(dt, b);
              if (!(std::fabs(got - ref) <= 1e-2 * 0.1 + 1e-2 * std::fabs(ref)) && wrong++ < 3)
                std::printf("dtype %d h=%ld rows=%ld misalign %d: y[%ld,%ld] = %g, expected %g\n", dt, (long)h, (long)rows,
                            misalign, (long)r, (long)i, got, ref);
            }
          }
          bad += wrong > 0;
        }
  std::printf("%d cases, %d failed\n", cases, bad);
  return bad ? 1 : 0;
}
)D";

TEST(SoftmaxFamily, EmulatedPointsComputeTheSoftmax) {
  Problem p = synthetic_softmax(256);
  fs::path dir = make_temp_dir((fs::temp_directory_path() / "ka-softmax-").string());
  for (const Knobs& k : {Knobs{{"VEC_BYTES", 16}, {"THREADS", 32}, {"ROWS", 1}, {"CACHE", 1}},
                         Knobs{{"VEC_BYTES", 8}, {"THREADS", 8}, {"ROWS", 4}, {"CACHE", 0}},
                         Knobs{{"VEC_BYTES", 4}, {"THREADS", 64}, {"ROWS", 2}, {"CACHE", 1}}}) {
    Candidate c = softmax().instantiate(k, p);
    ASSERT_GE(c.sources.size(), 2u);  // the entry and its layer headers
    for (const auto& s : c.sources) {  // the layer headers under kernelarc/device/, as a build sees them
      fs::create_directories((dir / s.path).parent_path());
      write_atomic(dir / s.path, s.content);
    }
    write_atomic(dir / "point.cpp", c.sources[0].content + kDriver);
    RunResult b = run_command({"g++", "-std=c++17", "-O1", "-DKA_EMULATE", "-I" + dir.string(),
                               "-I" + (kRoot / "include").string(), "-o", (dir / "point").string(), (dir / "point.cpp").string()},
                              std::chrono::minutes(3));
    ASSERT_TRUE(b.ok()) << knobs_str(k) << "\n" << b.output;
    RunResult r = run_command({(dir / "point").string()}, std::chrono::minutes(4));
    EXPECT_TRUE(r.ok()) << knobs_str(k) << "\n" << r.output;
    EXPECT_NE(r.output.find(" 0 failed"), std::string::npos) << knobs_str(k) << "\n" << r.output;
  }
  fs::remove_all(dir);
}

TEST(SoftmaxFamily, CompilesWithNvccForSm90a) {
  const fs::path nvcc = "/usr/local/cuda/bin/nvcc";
  if (!fs::exists(nvcc)) GTEST_SKIP() << "no nvcc";
  Candidate c = softmax().instantiate({{"VEC_BYTES", 16}, {"THREADS", 128}, {"ROWS", 1}, {"CACHE", 1}}, synthetic_softmax(4096));
  RunResult r = test::nvcc_judge_build(nvcc, c, "-gencode=arch=compute_90a,code=sm_90a", true);
  EXPECT_TRUE(r.ok()) << r.output;
  // ptxas reports "N bytes spill stores" per kernel: every N must be 0.
  EXPECT_FALSE(std::regex_search(r.output, std::regex("[1-9][0-9]* bytes spill (stores|loads)"))) << r.output;
}

}  // namespace
}  // namespace ka
