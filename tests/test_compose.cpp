// tests/test_compose.cpp — piecewise candidates (families/compose.h): the dispatch axis of a
// definition, the plan from per-value timings (threshold, part limit, boundaries, estimate), the
// generated source's faults, and, end to end through `kernelarc eval` on the host target, that a
// composed candidate runs each workload on the part whose range holds its axis value (a part that
// leaves the output untouched fails exactly the workloads routed to it).
#include "util/resources.h"
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <filesystem>
#include <limits>

#include "families/compose.h"
#include "families/family.h"
#include "problem/problem.h"
#include "util/error.h"
#include "util/files.h"
#include "util/process.h"

namespace ka {
namespace {

namespace fs = std::filesystem;
const fs::path kRoot = ka::source_root();
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

Definition def_with(const std::string& axes, const std::string& inputs) {
  return parse_definition_text(R"({"name": "t", "op_type": "gemm", "axes": {)" + axes + R"(}, "inputs": {)" + inputs +
                                   R"(}, "outputs": {"C": {"shape": ["M", "N"], "dtype": "float16"}},
      "reference": "def run(A, B):\n    return A"})",
                               "test");
}

TEST(Compose, DispatchAxisIsTheOneVarAxisAsAPlainDimension) {
  Definition gemm = def_with(R"("M": {"type": "var"}, "N": {"type": "const", "value": 8}, "K": {"type": "const", "value": 4})",
                             R"("A": {"shape": ["M", "K"], "dtype": "float16"}, "B": {"shape": ["N", "K"], "dtype": "float16"})");
  auto ax = dispatch_axis(gemm);
  ASSERT_TRUE(ax);
  EXPECT_EQ(ax->axis, "M");
  EXPECT_EQ(ax->input, 0);
  EXPECT_EQ(ax->dim, 0);
  // Found in a later input and dimension.
  Definition later = def_with(R"("M": {"type": "var"}, "N": {"type": "const", "value": 8}, "K": {"type": "const", "value": 4})",
                              R"("B": {"shape": ["N", "K"], "dtype": "float16"}, "A": {"shape": ["K", "M"], "dtype": "float16"})");
  ax = dispatch_axis(later);
  ASSERT_TRUE(ax);
  EXPECT_EQ(ax->input, 1);
  EXPECT_EQ(ax->dim, 1);
  // Two var axes, or the var axis only inside an expression: nothing to dispatch on.
  EXPECT_FALSE(dispatch_axis(def_with(R"("M": {"type": "var"}, "N": {"type": "var"}, "K": {"type": "const", "value": 4})",
                                      R"("A": {"shape": ["M", "K"], "dtype": "float16"})")));
  EXPECT_FALSE(dispatch_axis(def_with(R"("M": {"type": "var"}, "N": {"type": "const", "value": 8}, "K": {"type": "const", "value": 4})",
                                      R"("A": {"shape": ["M * 2", "K"], "dtype": "float16"})")));
}

// Several var axes (ragged attention: batch size, query tokens, KV tokens): every one that is a
// plain dimension of an input is a dispatch axis, in the definition's order; dispatch_axis (the
// agents' range axis) stays the single-var-axis case.
TEST(Compose, DispatchAxesAreEveryVarAxisThatIsAPlainDimension) {
  Definition d = def_with(R"("M": {"type": "var"}, "N": {"type": "var"}, "L": {"type": "var"}, "K": {"type": "const", "value": 4})",
                          R"("A": {"shape": ["M", "K"], "dtype": "float16"}, "B": {"shape": ["K", "N * 2"], "dtype": "float16"},
                             "I": {"shape": ["L"], "dtype": "int32"})");
  std::vector<DispatchAxis> all = dispatch_axes(d);
  ASSERT_EQ(all.size(), 2u);  // N appears only inside an expression
  EXPECT_EQ(all[0].axis, "M");
  EXPECT_EQ(all[0].input, 0);
  EXPECT_EQ(all[1].axis, "L");
  EXPECT_EQ(all[1].input, 2);
  EXPECT_EQ(all[1].dim, 0);
  EXPECT_FALSE(dispatch_axis(d));
}

TEST(Compose, TheAxisWithTheBestPlanIsComposedTiesToTheFinerAxis) {
  auto plan = [](double us) {
    PiecePlan p;
    p.estimated_geomean_us = us;
    return p;
  };
  EXPECT_EQ(best_axis_plan({plan(10), plan(9), plan(9.5)}, {5, 2, 9}), 1u);       // the least estimate
  EXPECT_EQ(best_axis_plan({plan(9), plan(9.005), plan(9.001)}, {5, 7, 6}), 1u);  // within 0.1%: more distinct values
  EXPECT_EQ(best_axis_plan({plan(9), plan(9)}, {5, 5}), 0u);                      // then the earlier axis
  EXPECT_EQ(best_axis_plan({plan(9)}, {1}), 0u);
}

AxisTimes times(const std::string& id, const std::map<int64_t, std::vector<double>>& us) { return {id, us}; }

TEST(Compose, PlanTakesEachValuesBestAndSplitsOnALogScale) {
  // inc wins the large values, fast_small the small ones by 20 %.
  std::vector<AxisTimes> c{times("inc", {{1, {10}}, {2, {10}}, {100, {50}}, {1000, {400}}}),
                           times("fast_small", {{1, {8}}, {2, {8}}, {100, {60}}, {1000, {500}}})};
  PiecePlan plan = plan_pieces(c, 0);
  ASSERT_EQ(plan.pieces.size(), 2u);
  EXPECT_EQ(plan.pieces[0], std::make_pair(std::string("fast_small"), int64_t{14}));  // floor(sqrt(2 · 100))
  EXPECT_EQ(plan.pieces[1], std::make_pair(std::string("inc"), kMax));
  EXPECT_NEAR(plan.estimated_geomean_us, std::pow(8.0 * 8 * 50 * 400, 0.25), 1e-9);
}

TEST(Compose, GainsBelowTheThresholdKeepTheIncumbent) {
  std::vector<AxisTimes> c{times("inc", {{1, {10}}, {5, {10}}}), times("other", {{1, {9.9}}, {5, {9.9}}})};
  PiecePlan plan = plan_pieces(c, 0, 0.02);
  ASSERT_EQ(plan.pieces.size(), 1u);
  EXPECT_EQ(plan.pieces[0], std::make_pair(std::string("inc"), kMax));
  EXPECT_NEAR(plan.estimated_geomean_us, 10.0, 1e-9);
  // Several workloads at one value: their summed log time decides.
  c = {times("inc", {{4, {10, 10}}}), times("b", {{4, {5, 30}}})};  // b's geomean there is 12.2
  EXPECT_EQ(plan_pieces(c, 0).pieces.front().first, "inc");
}

// A part that wins only on the largest values is judged even though the geomean over all of them
// moves by less than min_gain; a one-piece plan, or an estimate that is no better, is not.
TEST(Compose, APlanIsJudgedWhenItHasTwoPartsAndABetterEstimate) {
  std::map<int64_t, std::vector<double>> inc, big;
  for (int64_t v = 1; v <= 15; ++v) {
    inc[v] = {10.0 * v};
    big[v] = {v >= 14 ? 9.0 * v : 10.5 * v};  // 10% faster on the two largest, slower elsewhere
  }
  std::vector<AxisTimes> c{{"inc", inc}, {"big", big}};
  PiecePlan plan = plan_pieces(c, 0, 0.02);
  ASSERT_EQ(plan.pieces.size(), 2u);
  EXPECT_EQ(plan.pieces[1].first, "big");
  double g = 0;
  for (int64_t v = 1; v <= 15; ++v) g += std::log(10.0 * v);
  const double inc_geo = std::exp(g / 15);
  EXPECT_GT(plan.estimated_geomean_us, inc_geo * 0.98);  // under 2% better overall
  EXPECT_TRUE(plan_worth_judging(plan, inc_geo));
  EXPECT_FALSE(plan_worth_judging(plan, plan.estimated_geomean_us));
  EXPECT_FALSE(plan_worth_judging(plan_pieces({c[0]}, 0), inc_geo));
}

TEST(Compose, AtMostMaxPartsTheSmallestGainDropped) {
  // a gains a lot at 1, b a little at 10, c a lot at 100; with two parts only inc and one other
  // (the larger gain) remain, and b's value goes back to the incumbent.
  std::vector<AxisTimes> c{times("inc", {{1, {10}}, {10, {10}}, {100, {10}}}),
                           times("a", {{1, {2}}, {10, {20}}, {100, {20}}}),
                           times("b", {{1, {20}}, {10, {9}}, {100, {20}}}),
                           times("c", {{1, {20}}, {10, {20}}, {100, {4}}})};
  PiecePlan three = plan_pieces(c, 0, 0.02, 4);
  ASSERT_EQ(three.pieces.size(), 3u);
  EXPECT_EQ(three.pieces[1].first, "b");
  PiecePlan two = plan_pieces(c, 0, 0.02, 2);
  ASSERT_EQ(two.pieces.size(), 2u);
  EXPECT_EQ(two.pieces[0], std::make_pair(std::string("a"), int64_t{3}));  // floor(sqrt(1 · 10))
  EXPECT_EQ(two.pieces[1], std::make_pair(std::string("inc"), kMax));
  // Parts that serve non-adjacent ranges stay separate pieces.
  std::vector<AxisTimes> z{times("inc", {{1, {10}}, {10, {10}}, {100, {10}}}), times("z", {{1, {5}}, {10, {20}}, {100, {5}}})};
  PiecePlan zz = plan_pieces(z, 0);
  ASSERT_EQ(zz.pieces.size(), 3u);
  EXPECT_EQ(zz.pieces[0].first, "z");
  EXPECT_EQ(zz.pieces[1].first, "inc");
  EXPECT_EQ(zz.pieces[2].first, "z");
}

Candidate host_source(const std::string& name, const std::string& body) {
  Candidate c;
  c.name = name;
  c.language = "cpp";
  c.sources.push_back({name + ".cpp", body});
  c.entry_file = name + ".cpp";
  return c;
}

TEST(Compose, FaultsAreUserErrors) {
  Problem p = load_problem(kRoot / "examples/problems/rmsnorm_h128");
  auto ax = dispatch_axis(p.def);
  ASSERT_TRUE(ax);
  Candidate a = host_source("a", "void run() {}\n");
  EXPECT_THROW(compose_pieces({{a, kMax}}, *ax, p.def, "x"), UserError);
  Candidate cu = a;
  cu.language = "cuda_cpp";
  EXPECT_THROW(compose_pieces({{a, 4}, {cu, kMax}}, *ax, p.def, "x"), UserError);
  Candidate two = a;
  two.sources.push_back({"b.h", ""});
  EXPECT_THROW(compose_pieces({{a, 4}, {two, kMax}}, *ax, p.def, "x"), UserError);
  EXPECT_THROW(compose_pieces({{a, 8}, {a, 4}, {a, kMax}}, *ax, p.def, "x"), UserError);
}

TEST(Compose, GeneratedSourceHoistsIncludesAndScopesMacros) {
  Problem p = load_problem(kRoot / "examples/problems/rmsnorm_h128");
  auto ax = dispatch_axis(p.def);
  ASSERT_TRUE(ax);
  Candidate a = host_source("a", "#define KA_X 1\n#include <vector>\nvoid run(const ka::TensorArg&, const ka::TensorArg&, const ka::TensorArg&) {}\n");
  // b also "defines" a macro of a hoisted header, under a false #if (as the GEMM family's
  // emulator-only `#define __grid_constant__`): the header's definition must survive b.
  Candidate b = host_source("b", "#define KA_X 2\n  #  include <vector>\n#include <cmath>\n#if 0\n#define INT32_MAX 0\n#endif\n"
                                 "void run(const ka::TensorArg&, const ka::TensorArg&, const ka::TensorArg&) {}\n");
  Candidate c = compose_pieces({{a, 7}, {b, 20}, {a, kMax}}, *ax, p.def, "pw");
  ASSERT_EQ(c.sources.size(), 1u);
  const std::string& s = c.sources[0].content;
  EXPECT_EQ(c.entry_symbol, "ka_piecewise_run");
  EXPECT_EQ(c.language, "cpp");
  // Each header once at the top, before the first namespace; a part appears once however many
  // ranges it serves; each part's macros are undefined after it.
  const size_t ns0 = s.find("namespace ka_piece0");
  ASSERT_NE(ns0, std::string::npos);
  EXPECT_LT(s.find("\n#include <vector>"), ns0);
  EXPECT_LT(s.find("\n#include <cmath>"), ns0);
  EXPECT_EQ(s.find("\n#include <vector>", s.find("\n#include <vector>") + 1), std::string::npos);
  EXPECT_NE(s.find("// (hoisted)   #  include <vector>"), std::string::npos);  // the part's own line, kept as a comment
  EXPECT_NE(s.find("namespace ka_piece1"), std::string::npos);
  EXPECT_EQ(s.find("namespace ka_piece2"), std::string::npos);
  EXPECT_NE(s.find("#undef KA_X", ns0), std::string::npos);
  EXPECT_NE(s.find("if (v <= 7)"), std::string::npos);
  EXPECT_NE(s.find("if (v <= 20)"), std::string::npos);
  EXPECT_NE(s.find("ka_piece0::run(a0, a1, a2);\n}"), std::string::npos);  // the last range: part 0 again
  // It compiles; after the parts, KA_X is gone and INT32_MAX is <cstdint>'s again.
  fs::path dir = make_temp_dir((fs::temp_directory_path() / "ka-compose-").string());
  write_atomic(dir / "pw.cpp", s + "\n#ifdef KA_X\n#error KA_X leaked\n#endif\nstatic_assert(INT32_MAX == 2147483647);\n");
  RunResult r = run_command({"c++", "-std=c++20", "-fsyntax-only", "-I", (kRoot / "include").string(), (dir / "pw.cpp").string()},
                            std::chrono::minutes(2));
  EXPECT_TRUE(r.ok()) << r.output;
  fs::remove_all(dir);
}

// End to end: batch_size ≤ 24 goes to a part that never writes its output (wrong_answer), the rest
// to the host RMSNorm family; `kernelarc eval` on every workload of the example problem.
TEST(Compose, EachWorkloadRunsThePartOfItsRange) {
  Problem p = load_problem(kRoot / "examples/problems/rmsnorm_h128");
  auto ax = dispatch_axis(p.def);
  ASSERT_TRUE(ax);
  Family f = load_family(kRoot / "families/rmsnorm_host");
  ASSERT_TRUE(f.applies_to(p));
  Candidate good = f.instantiate(f.space(p).front(), p);
  Candidate bad = read_candidate(kRoot / "tests/data/adversarial/host/untouched.cpp");
  Candidate c = compose_pieces({{bad, 24}, {good, kMax}}, *ax, p.def, "piecewise_test");
  fs::path dir = make_temp_dir((fs::temp_directory_path() / "ka-compose-").string());
  write_atomic(dir / "solution.json", to_native_json(c).dump(2));
  RunResult r = run_command({KA_BINARY, "eval", p.dir.string(), "--solution", (dir / "solution.json").string(), "--timeout",
                             "20", "--no-reference-time", "--iterations", "3", "--warmup", "1", "--json"},
                            std::chrono::minutes(5), {"KERNELARC_CACHE=" + (fs::path(KA_BUILD_DIR) / "test-cache").string()});
  auto start = r.output.find("{\n");
  ASSERT_NE(start, std::string::npos) << r.output;
  nlohmann::json rep = nlohmann::json::parse(r.output.substr(start));
  std::map<std::string, int64_t> batch;
  for (const auto& w : p.workloads) batch[w.uuid] = w.axes.at("batch_size");
  int small = 0, large = 0;
  for (const auto& w : rep["workloads"]) {
    const int64_t b = batch.at(w["uuid"].get<std::string>());
    const std::string v = w["verdict"];
    EXPECT_EQ(v, b <= 24 ? "wrong_answer" : "passed") << "batch_size " << b;
    ++(b <= 24 ? small : large);
  }
  EXPECT_GT(small, 0);
  EXPECT_GT(large, 0);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace ka
