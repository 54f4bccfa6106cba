// tests/test_graph_host.cpp — the host backend end to end: a hand-written graph exercising
// pointwise + broadcast, softmax, a bf16 conversion, a GEMM, reductions, views and a layout op is
// generated over the graph_host runtime, compiled like a candidate and run on small inputs
// against values computed here; plus the lowering check and the axis-expression translation.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "families/family.h"
#include "graph/codegen_host.h"
#include "graph/passes.h"
#include "graph_fixtures.h"
#include "kernelarc/abi.h"
#include "problem/dtype.h"
#include "problem/problem.h"
#include "util/error.h"
#include "util/files.h"
#include "util/process.h"
#include "util/resources.h"

using namespace ka;
using namespace ka::graph;

namespace {

const char* kMixGraph = R"({
  "format": "kernelarc-graph", "version": 1, "problem": "mix",
  "axes": {"rows": {"type": "var"}, "width": {"type": "const", "value": 8}, "twice": {"type": "expr", "expression": "width * 2"}},
  "values": [
    {"id": 0, "kind": "tensor", "dtype": "float32", "shape": ["rows", "width"]},
    {"id": 1, "kind": "tensor", "dtype": "float32", "shape": ["8"]},
    {"id": 2, "kind": "tensor", "dtype": "float32", "shape": ["8", "4"]},
    {"id": 3, "kind": "tensor", "dtype": "float32", "shape": ["rows", "8"]},
    {"id": 4, "kind": "tensor", "dtype": "float32", "shape": ["rows", "8"]},
    {"id": 5, "kind": "tensor", "dtype": "float32", "shape": ["rows", "8"]},
    {"id": 6, "kind": "tensor", "dtype": "bfloat16", "shape": ["rows", "8"]},
    {"id": 7, "kind": "tensor", "dtype": "float32", "shape": ["rows", "4"]},
    {"id": 8, "kind": "tensor", "dtype": "float32", "shape": ["rows", "1"]},
    {"id": 9, "kind": "tensor", "dtype": "float32", "shape": ["rows", "4"]},
    {"id": 10, "kind": "tensor", "dtype": "float32", "shape": ["8", "rows"]},
    {"id": 11, "kind": "tensor", "dtype": "float32", "shape": ["8"]},
    {"id": 12, "kind": "tensor", "dtype": "float32", "shape": ["rows", "twice"]},
    {"id": 13, "kind": "tensor", "dtype": "float32", "shape": ["rows", "8"]},
    {"id": 14, "kind": "scalar", "dtype": "float64"}
  ],
  "inputs": [{"name": "x", "value": 0}, {"name": "b", "value": 1}, {"name": "w", "value": 2}, {"name": "scale", "value": 14}],
  "outputs": [{"name": "y", "value": 6}, {"name": "z", "value": 9}, {"name": "s", "value": 11}, {"name": "c", "value": 13}],
  "nodes": [
    {"op": "aten.mul.Tensor", "args": [{"value": 0}, {"value": 14}], "outputs": [3]},
    {"op": "aten.add.Tensor", "args": [{"value": 3}, {"value": 1}], "outputs": [4]},
    {"op": "aten._softmax.default", "args": [{"value": 4}, {"int": -1}, {"bool": false}], "outputs": [5]},
    {"op": "aten._to_copy.default", "args": [{"value": 5}], "kwargs": {"dtype": {"dtype": "bfloat16"}}, "outputs": [6]},
    {"op": "aten.mm.default", "args": [{"value": 0}, {"value": 2}], "outputs": [7]},
    {"op": "aten.amax.default", "args": [{"value": 7}, {"list": [{"int": -1}]}, {"bool": true}], "outputs": [8]},
    {"op": "aten.sub.Tensor", "args": [{"value": 7}, {"value": 8}], "outputs": [9]},
    {"op": "aten.permute.default", "args": [{"value": 0}, {"list": [{"int": 1}, {"int": 0}]}], "outputs": [10]},
    {"op": "aten.sum.dim_IntList", "args": [{"value": 10}, {"list": [{"int": 1}]}], "outputs": [11]},
    {"op": "aten.cat.default", "args": [{"list": [{"value": 0}, {"value": 0}]}, {"int": -1}], "outputs": [12]},
    {"op": "aten.slice.Tensor", "args": [{"value": 12}, {"int": 1}, {"int": 4}, {"sym": "twice - 4"}], "outputs": [13]}
  ]
})";

ka::TensorArg targ(void* data, DTypeCode dt, std::vector<int64_t> shape) {
  ka::TensorArg a{};
  a.data = data;
  a.dtype = dt;
  a.ndim = static_cast<int32_t>(shape.size());
  int64_t st = 1;
  for (int i = a.ndim - 1; i >= 0; --i) {
    a.shape[i] = shape[static_cast<size_t>(i)];
    a.strides[i] = st;
    st *= shape[static_cast<size_t>(i)];
  }
  return a;
}

// graph_rt.cpp with its parts, as a candidate carries it.
std::string runtime_source() { return load_family(resource_path("families/graph_host")).whole_source(); }

// A hand-written graph after its passes, generated over the runtime and built as a shared library
// like a candidate; `entry` is its kernelarc_entry (null, with `error` set, when it does not build).
struct BuiltGraph {
  fs::path dir;
  void* lib = nullptr;
  int (*entry)(const ka::TensorArg*, int) = nullptr;
  std::string error;
  ~BuiltGraph() {
    if (lib) dlclose(lib);
    if (!dir.empty()) fs::remove_all(dir);
  }
};

void build_graph(const char* text, BuiltGraph& b) {
  Graph g = test::graph_from(text);
  run_passes(g);
  const std::string rt = runtime_source();
  b.dir = make_temp_dir((fs::temp_directory_path() / "ka-graph-host-").string());
  write_atomic(b.dir / "cand.cpp", rt + emit_host(g, runtime_symbols(rt)) + "\nKA_ENTRY(run)\n");
  RunResult r = run_command({"c++", "-std=c++17", "-O1", "-shared", "-fPIC", "-pthread", "-I", (ka::source_root() / "include").string(),
                             "-o", (b.dir / "lib.so").string(), (b.dir / "cand.cpp").string()},
                            std::chrono::minutes(5));
  if (!r.ok()) return void(b.error = r.output);
  b.lib = dlopen((b.dir / "lib.so").c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!b.lib) return void(b.error = dlerror());
  b.entry = reinterpret_cast<int (*)(const ka::TensorArg*, int)>(dlsym(b.lib, "kernelarc_entry"));
  if (!b.entry) b.error = "no kernelarc_entry";
}

}  // namespace

TEST(GraphHost, ExpressionsTranslateToCpp) {
  EXPECT_EQ(expr_cpp("batch_size * seq_len // 2"), "ax_batch_size * ax_seq_len / 2");
  EXPECT_EQ(expr_cpp("max(a, 4)"), "kg::imax(ax_a, 4)");
}

TEST(GraphHost, LoweringCheckNamesMissingOps) {
  const auto syms = runtime_symbols(runtime_source());
  EXPECT_TRUE(syms.count("aten_add_Tensor"));
  EXPECT_TRUE(syms.count("aten_exp_default"));
  EXPECT_TRUE(syms.count("aten_mm_default"));
  EXPECT_TRUE(syms.count("scalar_mul"));
  Graph g = test::graph_from(kMixGraph);
  EXPECT_TRUE(ops_not_lowered(g, syms).empty());
  g.nodes[4].op = "aten.made_up.default";
  EXPECT_EQ(ops_not_lowered(g, syms), std::vector<std::string>{"aten.made_up.default"});
  EXPECT_THROW(emit_host(g, syms), UserError);
}

TEST(GraphHost, GeneratedCandidateComputesTheGraph) {
  BuiltGraph built;
  build_graph(kMixGraph, built);
  ASSERT_NE(built.entry, nullptr) << built.error;
  auto entry = built.entry;

  const int64_t rows = 3;
  std::mt19937 rng(3);
  std::normal_distribution<float> nd(0.f, 1.f);
  std::vector<float> x(rows * 8), b(8), w(32), z(rows * 4), s(8), c(rows * 8);
  for (auto* v : {&x, &b, &w})
    for (auto& e : *v) e = nd(rng);
  std::vector<uint16_t> y(rows * 8);
  double scale = 2.0;
  std::vector<ka::TensorArg> args{targ(x.data(), ka::kFloat32, {rows, 8}), targ(b.data(), ka::kFloat32, {8}),
                                  targ(w.data(), ka::kFloat32, {8, 4}), targ(&scale, ka::kFloat64, {}),
                                  targ(y.data(), ka::kBFloat16, {rows, 8}), targ(z.data(), ka::kFloat32, {rows, 4}),
                                  targ(s.data(), ka::kFloat32, {8}), targ(c.data(), ka::kFloat32, {rows, 8})};
  args[3].ndim = -1;
  ASSERT_EQ(entry(args.data(), static_cast<int>(args.size())), 0);
  for (int64_t i = 0; i < rows; ++i) {
    double m = -1e300, sum = 0, mm[4] = {0, 0, 0, 0}, mx = -1e300;
    double t[8];
    for (int j = 0; j < 8; ++j) m = std::max(m, t[j] = static_cast<float>(static_cast<float>(x[i * 8 + j] * 2.0) + b[j]));
    for (int j = 0; j < 8; ++j) sum += std::exp(t[j] - m);
    for (int j = 0; j < 8; ++j) {
      const double want = std::exp(t[j] - m) / sum;
      EXPECT_NEAR(bf16_to_double(y[i * 8 + j]), want, std::ldexp(want, -8)) << i << "," << j;
    }
    for (int n = 0; n < 4; ++n) {
      for (int k = 0; k < 8; ++k) mm[n] += static_cast<double>(x[i * 8 + k]) * w[k * 4 + n];
      mx = std::max(mx, static_cast<double>(static_cast<float>(mm[n])));
    }
    for (int n = 0; n < 4; ++n) EXPECT_NEAR(z[i * 4 + n], static_cast<float>(mm[n]) - mx, 1e-5);
    for (int j = 0; j < 8; ++j) EXPECT_EQ(c[i * 8 + j], x[i * 8 + (j + 4) % 8]);
  }
  for (int j = 0; j < 8; ++j) {
    double col = 0;
    for (int64_t i = 0; i < rows; ++i) col += x[i * 8 + j];
    EXPECT_NEAR(s[j], col, 1e-5);
  }
}

// --- a fixed subset of the dev problems, through the real CLI (needs the capture script) ----------

namespace {

fs::path dev_problem(const std::string& rel) {
  return ka::source_root() / ".." / "shared" / "problems" / "sol-execbench" / rel;
}

// The uuid of the workload with the fewest elements along its var axes.
std::string smallest_workload(const Problem& p) {
  const Workload* best = nullptr;
  double best_size = 0;
  for (const auto& w : p.workloads) {
    double s = 1;
    const nlohmann::json axes = w.raw.value("axes", nlohmann::json::object());  // kept alive for the loop
    for (const auto& [name, v] : axes.items())
      if (v.is_number_integer()) s *= static_cast<double>(v.get<int64_t>());
    if (!best || s < best_size) best = &w, best_size = s;
  }
  return best ? best->uuid : "";
}

}  // namespace

// Each problem exercises a different set of lowerings: views + bmm + cat + trig + bf16 output
// (rotary embedding), convolution + group norm + SiLU (VAE block), index_add accumulation with
// weights (MoE expert output).
TEST(GraphHostDev, FixedSubsetPassesOnTheHostTarget) {
  if (!fs::exists(resource_path("src/oracle") / "capture.py")) GTEST_SKIP() << "no capture script";
  const std::vector<std::string> subset{"L1/011_rotary_position_embedding", "L1/002_vae_conv3x3_groupnorm_silu_residual_fused",
                                        "L1/008_expert_output_weighted_index_add_accumulation",
                                        // F.linear's bias inside one rounding, under a tight bf16 tolerance
                                        "L1/005_conv_gated_projection_with_causal_conv",
                                        // fp8 block quantisation, and topk(sorted=False) in the CPU kernel's order
                                        "Quant/011_fp8_moe_gate_routing"};
  if (!fs::exists(dev_problem(subset[0]) / "definition.json")) GTEST_SKIP() << "no dev problems";
  const fs::path out = make_temp_dir((fs::temp_directory_path() / "ka-graph-dev-").string());
  const std::vector<std::string> env{"KERNELARC_CACHE=" + (fs::path(KA_BUILD_DIR) / "test-graph-cache").string()};
  for (const auto& rel : subset) {
    SCOPED_TRACE(rel);
    const Problem p = load_problem(dev_problem(rel));
    RunResult cov = run_command({KA_BINARY, "coverage", dev_problem(rel).string(), "--json", "--emit", out.string()},
                                std::chrono::minutes(15), env);
    ASSERT_EQ(cov.exit_code, 0) << cov.output;
    const fs::path cand = out / (p.def.name + ".graph_host.json");
    ASSERT_TRUE(fs::exists(cand)) << cov.output;
    RunResult ev = run_command({KA_BINARY, "eval", dev_problem(rel).string(), "--solution", cand.string(), "--target", "host",
                                "--workloads", smallest_workload(p), "--timeout", "600", "--no-time", "--no-reference-time",
                                "--no-sol"},
                               std::chrono::minutes(20), env);
    EXPECT_EQ(ev.exit_code, 0) << ev.output;
  }
  fs::remove_all(out);
}

// Python control flow over a var axis (a loop over the rows, a branch on the width) is refused as
// a symbolic graph and captured once per distinct shape; the candidate dispatches on the shapes,
// so it passes every workload it was generated for and none of a shape it never saw.
TEST(GraphHostDev, PerShapeCaptureDispatchesOnShapes) {
  if (!fs::exists(resource_path("src/oracle") / "capture.py")) GTEST_SKIP() << "no capture script";
  const fs::path root = make_temp_dir((fs::temp_directory_path() / "ka-per-shape-").string());
  const std::vector<std::string> env{"KERNELARC_CACHE=" + (root / "cache").string()};
  const fs::path full = source_root() / "tests/data/capture/shape_loop", first = root / "first";
  fs::create_directories(first);  // the same problem with its first workload (one shape) only
  fs::copy_file(full / "definition.json", first / "definition.json");
  const std::string lines = read_text(full / "workload.jsonl");
  write_atomic(first / "workload.jsonl", lines.substr(0, lines.find('\n') + 1));

  RunResult cov = run_command({KA_BINARY, "coverage", full.string(), "--json", "--emit", (root / "all").string()}, std::chrono::minutes(10), env);
  ASSERT_EQ(cov.exit_code, 0) << cov.output;
  const nlohmann::json rows = nlohmann::json::parse(cov.output.substr(cov.output.find("[\n")));
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_TRUE(rows[0]["captured"].get<bool>()) << rows[0].dump();
  EXPECT_EQ(rows[0]["shapes"], 2);  // three workloads, two distinct shapes
  EXPECT_NE(rows[0]["per_shape_because"].get<std::string>().find("specialized"), std::string::npos) << rows[0].dump();
  auto eval = [&](const fs::path& cand) {
    return run_command({KA_BINARY, "eval", full.string(), "--solution", cand.string(), "--target", "host", "--timeout", "300",
                        "--no-time", "--no-reference-time", "--no-sol"},
                       std::chrono::minutes(10), env);
  };
  RunResult all = eval(root / "all" / "capture_shape_loop.graph_host.json");
  EXPECT_EQ(all.exit_code, 0) << all.output;
  EXPECT_NE(all.output.find("3/3 workloads passed"), std::string::npos) << all.output;

  RunResult cov1 = run_command({KA_BINARY, "coverage", first.string(), "--emit", (root / "one").string()}, std::chrono::minutes(10), env);
  ASSERT_EQ(cov1.exit_code, 0) << cov1.output;
  RunResult one = eval(root / "one" / "capture_shape_loop.graph_host.json");  // generated for the 2x4 shape alone
  EXPECT_NE(one.exit_code, 0) << one.output;
  EXPECT_NE(one.output.find("1/3 workloads passed"), std::string::npos) << one.output;
  fs::remove_all(root);
}

// nvfp4 _scaled_mm (e2m1 pairs, even column in the low nibble; 1×16 e4m3 scales in cuBLAS's blocked
// layout, built here step by step as torch's to_blocked does: 128×4 tiles, each 4×32×4 transposed to
// 32×4×4) equals the product of the dequantised operands; then x[x > 0] = -1 as a masked fill.
TEST(GraphHost, Nvfp4ScaledMmAndMaskedFill) {
  const int64_t M = 128, N = 128, K = 32, Cp = 4;  // Cp: the K / 16 = 2 scale columns, padded to 4
  const std::string graph = R"({
  "format": "kernelarc-graph", "version": 1, "problem": "nvfp4_test", "axes": {},
  "values": [
    {"id": 0, "kind": "tensor", "dtype": "float4_e2m1fn_x2", "shape": ["128", "16"]},
    {"id": 1, "kind": "tensor", "dtype": "float8_e4m3fn", "shape": ["512"]},
    {"id": 2, "kind": "tensor", "dtype": "float4_e2m1fn_x2", "shape": ["128", "16"]},
    {"id": 3, "kind": "tensor", "dtype": "float8_e4m3fn", "shape": ["512"]},
    {"id": 4, "kind": "tensor", "dtype": "float4_e2m1fn_x2", "shape": ["16", "128"], "strides": ["1", "16"]},
    {"id": 5, "kind": "tensor", "dtype": "float32", "shape": ["128", "128"]},
    {"id": 6, "kind": "tensor", "dtype": "bool", "shape": ["128", "128"]},
    {"id": 7, "kind": "tensor", "dtype": "float32", "shape": []},
    {"id": 8, "kind": "tensor", "dtype": "float32", "shape": ["128", "128"]}
  ],
  "inputs": [{"name": "a", "value": 0}, {"name": "sa", "value": 1}, {"name": "b", "value": 2}, {"name": "sb", "value": 3}],
  "outputs": [{"name": "y", "value": 5}, {"name": "z", "value": 8}],
  "nodes": [
    {"op": "aten.permute.default", "args": [{"value": 2}, {"list": [{"int": 1}, {"int": 0}]}], "outputs": [4]},
    {"op": "aten._scaled_mm.default", "args": [{"value": 0}, {"value": 4}, {"value": 1}, {"value": 3}],
     "kwargs": {"out_dtype": {"dtype": "float32"}}, "outputs": [5]},
    {"op": "aten.gt.Scalar", "args": [{"value": 5}, {"float": 0.0}], "outputs": [6]},
    {"op": "aten.scalar_tensor.default", "args": [{"float": -1.0}], "kwargs": {"dtype": {"dtype": "float32"}}, "outputs": [7]},
    {"op": "aten.index_put.default", "args": [{"value": 5}, {"list": [{"value": 6}]}, {"value": 7}], "outputs": [8]}
  ]
})";
  BuiltGraph built;
  build_graph(graph.c_str(), built);
  ASSERT_NE(built.entry, nullptr) << built.error;
  auto entry = built.entry;

  const double e2m1[16] = {0, .5, 1, 1.5, 2, 3, 4, 6, -0.0, -.5, -1, -1.5, -2, -3, -4, -6};
  const std::vector<std::pair<uint8_t, double>> e4m3{{0x30, 0.5}, {0x38, 1.0}, {0x3C, 1.5}, {0x40, 2.0}, {0x44, 3.0}};
  std::mt19937 rng(7);
  auto operand = [&](std::vector<uint8_t>& packed, std::vector<uint8_t>& blocked, std::vector<double>& deq, int64_t rows) {
    std::vector<uint8_t> codes(static_cast<size_t>(rows * K));
    for (auto& c : codes) c = static_cast<uint8_t>(rng() % 16);
    packed.assign(static_cast<size_t>(rows * K / 2), 0);
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t k = 0; k < K; k += 2)
        packed[static_cast<size_t>(i * K / 2 + k / 2)] = static_cast<uint8_t>(codes[i * K + k] | codes[i * K + k + 1] << 4);
    std::vector<size_t> pick(static_cast<size_t>(rows * Cp));
    for (auto& p : pick) p = rng() % e4m3.size();
    // to_blocked: view(rb, 128, cb, 4).permute(0, 2, 1, 3) -> reshape(-1, 4, 32, 4).transpose(1, 2) -> flatten
    const int64_t rb = rows / 128, cb = Cp / 4;
    blocked.assign(static_cast<size_t>(rows * Cp), 0);
    for (int64_t b0 = 0; b0 < rb; ++b0)
      for (int64_t b2 = 0; b2 < cb; ++b2)
        for (int64_t r128 = 0; r128 < 128; ++r128)
          for (int64_t c4 = 0; c4 < 4; ++c4) {
            const int64_t tile = b0 * cb + b2, quarter = r128 / 32, lane = r128 % 32;  // (tile, quarter, lane, c4)
            const int64_t flat = ((tile * 32 + lane) * 4 + quarter) * 4 + c4;       // after transpose(1, 2)
            blocked[static_cast<size_t>(flat)] = e4m3[pick[static_cast<size_t>((b0 * 128 + r128) * Cp + b2 * 4 + c4)]].first;
          }
    deq.assign(static_cast<size_t>(rows * K), 0);
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t k = 0; k < K; ++k)
        deq[static_cast<size_t>(i * K + k)] = e2m1[codes[i * K + k]] * e4m3[pick[static_cast<size_t>(i * Cp + k / 16)]].second;
  };
  std::vector<uint8_t> a, sa, b, sb;
  std::vector<double> ad, bd;
  operand(a, sa, ad, M);
  operand(b, sb, bd, N);
  std::vector<float> y(M * N), z(M * N);
  std::vector<ka::TensorArg> args{targ(a.data(), ka::kFloat4E2M1fnX2, {M, K / 2}), targ(sa.data(), ka::kFloat8E4M3fn, {M * Cp}),
                                  targ(b.data(), ka::kFloat4E2M1fnX2, {N, K / 2}), targ(sb.data(), ka::kFloat8E4M3fn, {N * Cp}),
                                  targ(y.data(), ka::kFloat32, {M, N}), targ(z.data(), ka::kFloat32, {M, N})};
  ASSERT_EQ(entry(args.data(), static_cast<int>(args.size())), 0);
  int positive = 0;
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      double want = 0;
      for (int64_t k = 0; k < K; ++k) want += ad[static_cast<size_t>(i * K + k)] * bd[static_cast<size_t>(j * K + k)];
      ASSERT_EQ(y[i * N + j], static_cast<float>(want)) << i << "," << j;
      positive += want > 0;
      EXPECT_EQ(z[i * N + j], want > 0 ? -1.0f : static_cast<float>(want)) << i << "," << j;
    }
  EXPECT_GT(positive, 0);
}

// max_pool2d keeps each window's first maximum (and NaN), with flat in-plane indices; bilinear
// resampling follows torch's source coordinates ((dst + 0.5) * in / out - 0.5, clamped at 0).
TEST(GraphHost, MaxPoolAndBilinearResample) {
  const std::string graph = R"({
  "format": "kernelarc-graph", "version": 1, "problem": "pool_test", "axes": {},
  "values": [
    {"id": 0, "kind": "tensor", "dtype": "float32", "shape": ["1", "1", "4", "4"]},
    {"id": 1, "kind": "tensor", "dtype": "float32", "shape": ["1", "1", "2", "2"]},
    {"id": 2, "kind": "tensor", "dtype": "int64", "shape": ["1", "1", "2", "2"]},
    {"id": 3, "kind": "tensor", "dtype": "float32", "shape": ["1", "1", "4", "4"]},
    {"id": 4, "kind": "tensor", "dtype": "float32", "shape": ["1", "1", "2", "2"]}
  ],
  "inputs": [{"name": "x", "value": 0}],
  "outputs": [{"name": "pooled", "value": 1}, {"name": "where", "value": 2}, {"name": "up", "value": 3}],
  "nodes": [
    {"op": "aten.max_pool2d_with_indices.default", "args": [{"value": 0}, {"list": [{"int": 2}, {"int": 2}]},
     {"list": [{"int": 2}, {"int": 2}]}], "outputs": [1, 2]},
    {"op": "aten.max_pool2d_with_indices.default", "args": [{"value": 0}, {"list": [{"int": 3}, {"int": 3}]},
     {"list": [{"int": 3}, {"int": 3}]}, {"list": [{"int": 1}, {"int": 1}]}], "outputs": [4, null]},
    {"op": "aten.upsample_bilinear2d.vec", "args": [{"value": 4}, {"list": [{"int": 4}, {"int": 4}]}, {"bool": false}, null],
     "outputs": [3]}
  ]
})";
  BuiltGraph built;
  build_graph(graph.c_str(), built);
  ASSERT_NE(built.entry, nullptr) << built.error;
  // Windows of the 2x2 pool: {0,7,4,7} (first 7 at flat 1), {2,3,9,1}, {5,6,8,8}, {1,0,2,2}.
  std::vector<float> x{0, 7, 2, 3, 4, 7, 9, 1, 5, 6, 1, 0, 8, 8, 2, 2};
  std::vector<float> pooled(4), up(16);
  std::vector<int64_t> where(4);
  std::vector<ka::TensorArg> args{targ(x.data(), ka::kFloat32, {1, 1, 4, 4}), targ(pooled.data(), ka::kFloat32, {1, 1, 2, 2}),
                                  targ(where.data(), ka::kInt64, {1, 1, 2, 2}), targ(up.data(), ka::kFloat32, {1, 1, 4, 4})};
  ASSERT_EQ(built.entry(args.data(), static_cast<int>(args.size())), 0);
  EXPECT_EQ(pooled, (std::vector<float>{7, 9, 8, 2}));
  EXPECT_EQ(where, (std::vector<int64_t>{1, 6, 12, 14}));
  // The padded 3x3 stride-3 pool gives windows rows/cols {-1..1} and {2..4}: [[7, 9], [8, 2]] again,
  // then 2x2 -> 4x4 bilinear: columns at sources 0, 0.25, 0.75, 1 between 7 and 9 (row 0), 8 and 2 (row 3).
  // Rows at sources 0, 0.25, 0.75, 1 between those two (values from torch 2.11's F.interpolate).
  const std::vector<float> want{7, 7.5f, 8.5f, 9, 7.25f, 7.25f, 7.25f, 7.25f, 7.75f, 6.75f, 4.75f, 3.75f, 8, 6.5f, 3.5f, 2};
  for (size_t i = 0; i < want.size(); ++i) EXPECT_FLOAT_EQ(up[i], want[i]) << i;
}

// fp32 sigmoid is PyTorch's 1 / (1 + exp(-x)) in fp32 steps: exactly 1.0 at x = 17, where the
// correctly rounded value is 1 - 2^-24 (top-k routers break ties among saturated scores on this).
TEST(GraphHost, Fp32SigmoidSaturatesAsPyTorchDoes) {
  const std::string graph = R"({
  "format": "kernelarc-graph", "version": 1, "problem": "sigmoid_test", "axes": {},
  "values": [
    {"id": 0, "kind": "tensor", "dtype": "float32", "shape": ["3"]},
    {"id": 1, "kind": "tensor", "dtype": "float32", "shape": ["3"]},
    {"id": 2, "kind": "tensor", "dtype": "float64", "shape": ["3"]},
    {"id": 3, "kind": "tensor", "dtype": "float64", "shape": ["3"]}
  ],
  "inputs": [{"name": "x", "value": 0}, {"name": "xd", "value": 2}],
  "outputs": [{"name": "y", "value": 1}, {"name": "yd", "value": 3}],
  "nodes": [
    {"op": "aten.sigmoid.default", "args": [{"value": 0}], "outputs": [1]},
    {"op": "aten.sigmoid.default", "args": [{"value": 2}], "outputs": [3]}
  ]
})";
  BuiltGraph built;
  build_graph(graph.c_str(), built);
  ASSERT_NE(built.entry, nullptr) << built.error;
  std::vector<float> x{17.0f, 0.5f, -3.0f}, y(3);
  std::vector<double> xd{17.0, 0.5, -3.0}, yd(3);
  std::vector<ka::TensorArg> args{targ(x.data(), ka::kFloat32, {3}), targ(xd.data(), ka::kFloat64, {3}),
                                  targ(y.data(), ka::kFloat32, {3}), targ(yd.data(), ka::kFloat64, {3})};
  ASSERT_EQ(built.entry(args.data(), static_cast<int>(args.size())), 0);
  EXPECT_EQ(y[0], 1.0f);
  EXPECT_FLOAT_EQ(y[1], 1.0f / (1.0f + std::exp(-0.5f)));
  EXPECT_FLOAT_EQ(y[2], 1.0f / (1.0f + std::exp(3.0f)));
  EXPECT_LT(yd[0], 1.0);  // fp64 keeps the exact value
  EXPECT_DOUBLE_EQ(yd[2], 1.0 / (1.0 + std::exp(3.0)));
}

// torch.tensor(scale) of a float scalar input becomes a tensor made from the input at run time
// (aten.scalar_tensor), not the traced value: one symbolic graph passes workloads of other scales.
TEST(GraphHostDev, ScalarInputMadeATensorIsReadAtRunTime) {
  if (!fs::exists(resource_path("src/oracle") / "capture.py")) GTEST_SKIP() << "no capture script";
  const fs::path root = make_temp_dir((fs::temp_directory_path() / "ka-scalar-tensor-").string());
  const std::vector<std::string> env{"KERNELARC_CACHE=" + (root / "cache").string()};
  const fs::path prob = source_root() / "tests/data/capture/scalar_tensor";
  RunResult cov = run_command({KA_BINARY, "coverage", prob.string(), "--json", "--emit", (root / "c").string()}, std::chrono::minutes(10), env);
  ASSERT_EQ(cov.exit_code, 0) << cov.output;
  const nlohmann::json rows = nlohmann::json::parse(cov.output.substr(cov.output.find("[\n")));
  ASSERT_TRUE(rows[0]["captured"].get<bool>()) << rows[0].dump();
  EXPECT_EQ(rows[0]["shapes"], 0);  // one symbolic graph
  RunResult ev = run_command({KA_BINARY, "eval", prob.string(), "--solution", (root / "c" / "capture_scalar_tensor.graph_host.json").string(),
                              "--target", "host", "--timeout", "300", "--no-time", "--no-reference-time", "--no-sol"},
                             std::chrono::minutes(10), env);
  EXPECT_EQ(ev.exit_code, 0) << ev.output;
  EXPECT_NE(ev.output.find("2/2 workloads passed"), std::string::npos) << ev.output;
  fs::remove_all(root);
}
