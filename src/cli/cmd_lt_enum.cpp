// cli/cmd_lt_enum.cpp — `kernelarc lt-enum PROBLEM` (internal, hidden): what cuBLASLt can run for a
// GEMM problem (C = A·Bᵀ, the family gemm_cublaslt_cuda's layout) on this GPU, as JSON
// (agents/library.h describes the format). The library agent runs it in a separate process so
// that the engine process needs neither cuBLASLt nor a GPU, and records its output in the campaign.
//
// For the problem's dtype, N, K and every distinct workload M (descriptors exactly as
// gemm_cublaslt.cu builds them):
//  1. the heuristic's top --top results per M (cublasLtMatmulAlgoGetHeuristic), their config
//     attributes read back (cublasLtMatmulAlgoConfigGetAttribute): the seeds;
//  2. every algo id (cublasLtMatmulAlgoGetIds) and its capabilities (cublasLtMatmulAlgoCapGetAttribute:
//     tile ids and stages ids, arrays of uint32 sized by a first query; split-K support; reduction
//     scheme mask; CTA swizzling support; custom option max). cuBLASLt has no capability for
//     cluster shapes, so a few (auto, 1x1x1, 2x1x1, 1x2x1) are tried through the check;
//  3. the one-field variants of the seeds (split-K 1..32 with each supported reduction scheme,
//     swizzle, custom options 0..3, cluster shapes, every stages id, every tile id); then, per algo
//     id, an equal part of what is left: base configs (tile × stages, the rest default; at most
//     half the part) and their one-field variants (all but stages and tile). Each config is checked
//     with cublasLtMatmulAlgoCheck at every M and kept when valid at one at least with a workspace
//     that fits; at most --max-configs configs in all.
// Without a GPU or a build with CUDA: one line and exit code 2.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <map>
#include <set>

#include "agents/library.h"
#include "cli/commands.h"
#include "problem/problem.h"
#include "util/error.h"
#include "util/files.h"

#ifdef KA_HAVE_CUBLASLT
#include <cublasLt.h>
#include <cuda_runtime.h>
#endif

namespace ka::cli {

#ifdef KA_HAVE_CUBLASLT
namespace {

using json = nlohmann::json;
using library::LtConfig;

struct Shape {
  int64_t m;
  cublasLtMatrixLayout_t la = nullptr, lb = nullptr, lc = nullptr;
};

struct Lt {
  cublasLtHandle_t h = nullptr;
  cublasLtMatmulDesc_t op = nullptr;
  cudaDataType_t t = CUDA_R_16F;
  size_t ws = 0;
  std::vector<Shape> shapes;
  ~Lt() {
    for (auto& s : shapes) {
      if (s.la) cublasLtMatrixLayoutDestroy(s.la);
      if (s.lb) cublasLtMatrixLayoutDestroy(s.lb);
      if (s.lc) cublasLtMatrixLayoutDestroy(s.lc);
    }
    if (op) cublasLtMatmulDescDestroy(op);
    if (h) cublasLtDestroy(h);
  }
};

void check(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS) user_error("lt-enum: {} failed (cuBLAS status {})", what, static_cast<int>(s));
}

bool set_config(cublasLtMatmulAlgo_t& a, const LtConfig& c) {
  const uint32_t tile = c.tile, stages = c.stages, red = c.reduction, swz = c.swizzle, custom = c.custom;
  const int32_t splitk = c.splitk;
  const uint16_t inner = c.inner, cluster = c.cluster;
  return cublasLtMatmulAlgoConfigSetAttribute(&a, CUBLASLT_ALGO_CONFIG_TILE_ID, &tile, sizeof tile) == CUBLAS_STATUS_SUCCESS &&
         cublasLtMatmulAlgoConfigSetAttribute(&a, CUBLASLT_ALGO_CONFIG_STAGES_ID, &stages, sizeof stages) == CUBLAS_STATUS_SUCCESS &&
         cublasLtMatmulAlgoConfigSetAttribute(&a, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &splitk, sizeof splitk) == CUBLAS_STATUS_SUCCESS &&
         cublasLtMatmulAlgoConfigSetAttribute(&a, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, &red, sizeof red) == CUBLAS_STATUS_SUCCESS &&
         cublasLtMatmulAlgoConfigSetAttribute(&a, CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING, &swz, sizeof swz) == CUBLAS_STATUS_SUCCESS &&
         cublasLtMatmulAlgoConfigSetAttribute(&a, CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION, &custom, sizeof custom) == CUBLAS_STATUS_SUCCESS &&
         cublasLtMatmulAlgoConfigSetAttribute(&a, CUBLASLT_ALGO_CONFIG_INNER_SHAPE_ID, &inner, sizeof inner) == CUBLAS_STATUS_SUCCESS &&
         cublasLtMatmulAlgoConfigSetAttribute(&a, CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID, &cluster, sizeof cluster) == CUBLAS_STATUS_SUCCESS;
}

LtConfig read_config(const cublasLtMatmulAlgo_t& a) {
  LtConfig c;
  size_t w = 0;
  int32_t id = -1, splitk = 1;
  uint32_t tile = 0, stages = 0, red = 0, swz = 0, custom = 0;
  uint16_t inner = 0, cluster = 0;
  cublasLtMatmulAlgoConfigGetAttribute(&a, CUBLASLT_ALGO_CONFIG_ID, &id, sizeof id, &w);
  cublasLtMatmulAlgoConfigGetAttribute(&a, CUBLASLT_ALGO_CONFIG_TILE_ID, &tile, sizeof tile, &w);
  cublasLtMatmulAlgoConfigGetAttribute(&a, CUBLASLT_ALGO_CONFIG_STAGES_ID, &stages, sizeof stages, &w);
  cublasLtMatmulAlgoConfigGetAttribute(&a, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &splitk, sizeof splitk, &w);
  cublasLtMatmulAlgoConfigGetAttribute(&a, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, &red, sizeof red, &w);
  cublasLtMatmulAlgoConfigGetAttribute(&a, CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING, &swz, sizeof swz, &w);
  cublasLtMatmulAlgoConfigGetAttribute(&a, CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION, &custom, sizeof custom, &w);
  cublasLtMatmulAlgoConfigGetAttribute(&a, CUBLASLT_ALGO_CONFIG_INNER_SHAPE_ID, &inner, sizeof inner, &w);
  cublasLtMatmulAlgoConfigGetAttribute(&a, CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID, &cluster, sizeof cluster, &w);
  c.algo = id;
  c.tile = tile;
  c.stages = stages;
  c.splitk = splitk;
  c.reduction = red;
  c.swizzle = swz;
  c.custom = custom;
  c.inner = inner;
  c.cluster = cluster;
  return c;
}

// The M values where cublasLtMatmulAlgoCheck accepts the config with a workspace that fits.
std::vector<int64_t> valid_ms(const Lt& lt, const LtConfig& c) {
  std::vector<int64_t> out;
  cublasLtMatmulAlgo_t a;
  if (cublasLtMatmulAlgoInit(lt.h, CUBLAS_COMPUTE_32F, CUDA_R_32F, lt.t, lt.t, lt.t, lt.t, c.algo, &a) != CUBLAS_STATUS_SUCCESS ||
      !set_config(a, c))
    return out;
  for (const auto& s : lt.shapes) {
    cublasLtMatmulHeuristicResult_t r{};
    if (cublasLtMatmulAlgoCheck(lt.h, lt.op, s.la, s.lb, s.lc, s.lc, &a, &r) == CUBLAS_STATUS_SUCCESS && r.workspaceSize <= lt.ws)
      out.push_back(s.m);
  }
  return out;
}

// A uint32 array capability: its size first, then its values.
std::vector<uint32_t> cap_array(const cublasLtMatmulAlgo_t& a, cublasLtMatmulAlgoCapAttributes_t attr) {
  size_t bytes = 0;
  if (cublasLtMatmulAlgoCapGetAttribute(&a, attr, nullptr, 0, &bytes) != CUBLAS_STATUS_SUCCESS || bytes == 0) return {};
  std::vector<uint32_t> v(bytes / sizeof(uint32_t));
  size_t w = 0;
  if (cublasLtMatmulAlgoCapGetAttribute(&a, attr, v.data(), v.size() * sizeof(uint32_t), &w) != CUBLAS_STATUS_SUCCESS) return {};
  v.resize(w / sizeof(uint32_t));
  return v;
}

template <typename T>
T cap_scalar(const cublasLtMatmulAlgo_t& a, cublasLtMatmulAlgoCapAttributes_t attr) {
  T v{};
  size_t w = 0;
  if (cublasLtMatmulAlgoCapGetAttribute(&a, attr, &v, sizeof v, &w) != CUBLAS_STATUS_SUCCESS) return T{};
  return v;
}

// The GEMM a problem describes: its dtype, N, K and distinct workload M values (UserError when it
// is not one lt-enum can enumerate).
struct GemmSpec {
  DType dt = DType::f16;
  int64_t n = 0, k = 0;
  std::set<int64_t> ms;
};

GemmSpec gemm_spec(const Problem& p) {
  if (p.def.op_type != "gemm" || p.def.inputs.size() != 2)
    user_error("lt-enum: {} is not a GEMM problem with inputs A, B (op type {})", p.def.name, p.def.op_type);
  const auto n = const_axis_value(p.def, "N"), k = const_axis_value(p.def, "K");
  if (!n || !k) user_error("lt-enum: {} needs const axes N and K", p.def.name);
  GemmSpec g;
  g.dt = p.def.inputs[0].dtype;
  if (g.dt != DType::f16 && g.dt != DType::bf16)
    user_error("lt-enum: {}: dtype {} (float16 or bfloat16 only)", p.def.name, dtype_name(g.dt));
  g.n = *n;
  g.k = *k;
  for (const auto& w : p.workloads)
    if (w.axes.count("M")) g.ms.insert(w.axes.at("M"));
  if (g.ms.empty()) user_error("lt-enum: {} has no workload with an M", p.def.name);
  return g;
}

// The device of $KERNELARC_GPU (default 0), made current.
cudaDeviceProp open_device() {
  int dev = 0;
  if (const char* d = std::getenv("KERNELARC_GPU")) dev = std::atoi(d);
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) user_error("lt-enum: no usable CUDA device");
  if (cudaSetDevice(dev) != cudaSuccess) user_error("lt-enum: cannot use CUDA device {}", dev);
  cudaDeviceProp prop{};
  cudaGetDeviceProperties(&prop, dev);
  return prop;
}

// The handle, the matmul descriptor and the layouts of every M, as gemm_cublaslt.cu builds them.
void open_lt(Lt& lt, const GemmSpec& g, int64_t ws_mb) {
  lt.t = g.dt == DType::bf16 ? CUDA_R_16BF : CUDA_R_16F;
  lt.ws = static_cast<size_t>(ws_mb) << 20;
  check(cublasLtCreate(&lt.h), "cublasLtCreate");
  check(cublasLtMatmulDescCreate(&lt.op, CUBLAS_COMPUTE_32F, CUDA_R_32F), "cublasLtMatmulDescCreate");
  const cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
  check(cublasLtMatmulDescSetAttribute(lt.op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta), "TRANSA");
  check(cublasLtMatmulDescSetAttribute(lt.op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb), "TRANSB");
  const auto n = static_cast<uint64_t>(g.n), k = static_cast<uint64_t>(g.k);
  for (int64_t m : g.ms) {
    Shape s;
    s.m = m;
    lt.shapes.push_back(s);  // owned by lt from here on (destroyed with it)
    Shape& b = lt.shapes.back();
    check(cublasLtMatrixLayoutCreate(&b.la, lt.t, k, n, g.k), "layout of B");
    check(cublasLtMatrixLayoutCreate(&b.lb, lt.t, k, static_cast<uint64_t>(m), g.k), "layout of A");
    check(cublasLtMatrixLayoutCreate(&b.lc, lt.t, n, static_cast<uint64_t>(m), g.n), "layout of C");
  }
}

// The configs kept so far, in output order, each valid at one M at least: at most max_configs in
// all, and at most algo_left more for the algo id being explored.
struct ConfigSet {
  const Lt& lt;
  int max_configs;
  int algo_left;
  std::vector<LtConfig> order;
  std::map<LtConfig, json> entries;

  // The config's entry (added when new, valid and within the limits); nullptr when not kept.
  json* add(const LtConfig& c) {
    auto it = entries.find(c);
    if (it != entries.end()) return &it->second;
    if (static_cast<int>(order.size()) >= max_configs || algo_left <= 0) return nullptr;
    std::vector<int64_t> v = valid_ms(lt, c);
    if (v.empty()) return nullptr;
    json e = library::config_json(c);
    e["valid_m"] = v;
    e["heuristic"] = json::array();
    order.push_back(c);
    --algo_left;
    return &(entries[c] = std::move(e));
  }
};

// 1. The heuristic's top results per M; returns how many it gave.
int add_heuristic_seeds(const Lt& lt, int top, ConfigSet& set) {
  cublasLtMatmulPreference_t pref = nullptr;
  check(cublasLtMatmulPreferenceCreate(&pref), "cublasLtMatmulPreferenceCreate");
  const uint64_t ws_bytes = lt.ws;
  check(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws_bytes, sizeof ws_bytes),
        "MAX_WORKSPACE_BYTES");
  int heuristic_results = 0;
  for (const auto& s : lt.shapes) {
    std::vector<cublasLtMatmulHeuristicResult_t> res(static_cast<size_t>(top));
    int found = 0;
    if (cublasLtMatmulAlgoGetHeuristic(lt.h, lt.op, s.la, s.lb, s.lc, s.lc, pref, top, res.data(), &found) != CUBLAS_STATUS_SUCCESS)
      continue;
    for (int r = 0; r < found; ++r) {
      if (res[r].state != CUBLAS_STATUS_SUCCESS) continue;
      ++heuristic_results;
      if (json* e = set.add(read_config(res[r].algo))) (*e)["heuristic"].push_back({s.m, r});
    }
  }
  cublasLtMatmulPreferenceDestroy(pref);
  return heuristic_results;
}

struct Caps {
  std::vector<uint32_t> tiles, stages;
  int32_t splitk = 0, custom_max = 0;
  uint32_t red_mask = 0, swizzle = 0;
  int checked = 0, valid = 0;
};

// 2. Every algo id and its capabilities.
std::map<int, Caps> algo_caps(const Lt& lt) {
  std::vector<int> ids(512);
  int nids = 0;
  check(cublasLtMatmulAlgoGetIds(lt.h, CUBLAS_COMPUTE_32F, CUDA_R_32F, lt.t, lt.t, lt.t, lt.t, static_cast<int>(ids.size()),
                                 ids.data(), &nids),
        "cublasLtMatmulAlgoGetIds");
  ids.resize(static_cast<size_t>(nids));
  std::map<int, Caps> caps;
  for (int id : ids) {
    cublasLtMatmulAlgo_t a;
    if (cublasLtMatmulAlgoInit(lt.h, CUBLAS_COMPUTE_32F, CUDA_R_32F, lt.t, lt.t, lt.t, lt.t, id, &a) != CUBLAS_STATUS_SUCCESS)
      continue;
    Caps c;
    c.tiles = cap_array(a, CUBLASLT_ALGO_CAP_TILE_IDS);
    c.stages = cap_array(a, CUBLASLT_ALGO_CAP_STAGES_IDS);
    c.splitk = cap_scalar<int32_t>(a, CUBLASLT_ALGO_CAP_SPLITK_SUPPORT);
    c.red_mask = cap_scalar<uint32_t>(a, CUBLASLT_ALGO_CAP_REDUCTION_SCHEME_MASK);
    c.swizzle = cap_scalar<uint32_t>(a, CUBLASLT_ALGO_CAP_CTA_SWIZZLING_SUPPORT);
    c.custom_max = cap_scalar<int32_t>(a, CUBLASLT_ALGO_CAP_CUSTOM_OPTION_MAX);
    if (c.tiles.empty()) c.tiles = {CUBLASLT_MATMUL_TILE_UNDEFINED};
    if (c.stages.empty()) c.stages = {CUBLASLT_MATMUL_STAGES_UNDEFINED};
    caps[id] = std::move(c);
  }
  return caps;
}

// The one-field variants of a config: split-K (with each supported reduction scheme; 1 without),
// swizzle, custom option, cluster shape (auto, then `clusters`), and with `wide` also every stages
// and tile id.
std::vector<LtConfig> variants(const LtConfig& b, const Caps& c, bool wide, const std::vector<uint16_t>& clusters) {
  std::vector<LtConfig> vs;
  auto with = [&](auto field, auto value) {
    LtConfig v = b;
    v.*field = value;
    vs.push_back(v);
  };
  if (c.splitk) {
    for (int32_t s : {2, 4, 8, 16, 32})
      for (uint32_t r : {CUBLASLT_REDUCTION_SCHEME_INPLACE, CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE, CUBLASLT_REDUCTION_SCHEME_OUTPUT_TYPE})
        if (c.red_mask & r) {
          LtConfig v = b;
          v.splitk = s;
          v.reduction = r;
          vs.push_back(v);
        }
    LtConfig v = b;
    v.splitk = 1;
    v.reduction = CUBLASLT_REDUCTION_SCHEME_NONE;
    vs.push_back(v);
  }
  for (uint32_t w : {0u, 1u})
    if (w == 0 || c.swizzle) with(&LtConfig::swizzle, w);
  for (int32_t k = 0; k <= std::min<int32_t>(c.custom_max, 3); ++k) with(&LtConfig::custom, static_cast<uint32_t>(k));
  with(&LtConfig::cluster, static_cast<uint16_t>(CUBLASLT_CLUSTER_SHAPE_AUTO));
  for (uint16_t x : clusters) with(&LtConfig::cluster, x);
  if (wide) {
    for (uint32_t st : c.stages) with(&LtConfig::stages, st);
    for (uint32_t t : c.tiles) with(&LtConfig::tile, t);
  }
  return vs;
}

// 3a. The one-field variants of the heuristic's seeds (the likely winners), all of them; 3b. per
// algo id, an equal part of what is left: base configs (tile × stages, at most half the part),
// then their one-field variants.
void add_variants(ConfigSet& set, std::map<int, Caps>& caps, const std::vector<uint16_t>& clusters) {
  const std::vector<LtConfig> seeds = set.order;
  for (const LtConfig& sd : seeds)
    if (caps.count(sd.algo))
      for (const auto& v : variants(sd, caps[sd.algo], true, clusters)) {
        ++caps[sd.algo].checked;
        caps[sd.algo].valid += set.add(v) != nullptr;
      }
  const int per_algo =
      std::max(16, (set.max_configs - static_cast<int>(set.order.size())) / std::max(1, static_cast<int>(caps.size())));
  for (auto& [id, c] : caps) {
    set.algo_left = per_algo;
    std::vector<LtConfig> bases;
    for (uint32_t t : c.tiles)
      for (uint32_t st : c.stages) {
        if (2 * static_cast<int>(bases.size()) >= per_algo) break;  // half for the variants
        LtConfig b;
        b.algo = id;
        b.tile = t;
        b.stages = st;
        ++c.checked;
        if (set.add(b)) {
          ++c.valid;
          bases.push_back(b);
        }
      }
    for (const LtConfig& b : bases)
      for (const auto& v : variants(b, c, false, clusters)) {
        ++c.checked;
        c.valid += set.add(v) != nullptr;
      }
  }
  set.algo_left = set.max_configs;
}

json enumerate(const Problem& p, int top, int64_t ws_mb, int max_configs) {
  const auto t0 = std::chrono::steady_clock::now();
  const GemmSpec g = gemm_spec(p);
  const cudaDeviceProp prop = open_device();
  Lt lt;
  open_lt(lt, g, ws_mb);
  ConfigSet set{lt, max_configs, max_configs, {}, {}};
  const int heuristic_results = add_heuristic_seeds(lt, top, set);
  std::map<int, Caps> caps = algo_caps(lt);
  // cuBLASLt has no capability for cluster shapes: on Hopper and later a few are tried
  const std::vector<uint16_t> clusters =
      prop.major >= 9 ? std::vector<uint16_t>{CUBLASLT_CLUSTER_SHAPE_1x1x1, CUBLASLT_CLUSTER_SHAPE_2x1x1, CUBLASLT_CLUSTER_SHAPE_1x2x1}
                      : std::vector<uint16_t>{};
  add_variants(set, caps, clusters);
  json algos = json::array();
  for (const auto& [id, c] : caps)
    algos.push_back({{"id", id}, {"tiles", c.tiles}, {"stages", c.stages}, {"splitk_support", c.splitk},
                     {"reduction_mask", c.red_mask}, {"swizzle_support", c.swizzle}, {"custom_max", c.custom_max},
                     {"checked", c.checked}, {"valid", c.valid}});
  json configs = json::array();
  for (const auto& c : set.order) configs.push_back(set.entries[c]);
  return {{"version", 1},
          {"device", prop.name},
          {"sm", prop.major * 10 + prop.minor},
          {"cublaslt_version", cublasLtGetVersion()},
          {"dtype", std::string(dtype_name(g.dt))},
          {"N", g.n},
          {"K", g.k},
          {"workspace_bytes", lt.ws},
          {"ms", std::vector<int64_t>(g.ms.begin(), g.ms.end())},
          {"heuristic_results", heuristic_results},
          {"max_configs", max_configs},
          {"algos", algos},
          {"configs", configs},
          {"seconds", std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count()}};
}

}  // namespace
#endif

void register_lt_enum(CLI::App& app) {
  static std::string problem, out;
  static int top = 8, max_configs = 20000;
  static int64_t ws_mb = 32;
  auto* cmd = app.add_subcommand(
      "lt-enum",
      "Internal (the library agent runs it): list the cuBLASLt configurations valid on this GPU for a GEMM problem "
      "(C = A·Bᵀ) at each workload M, with the heuristic's top choices, as JSON. Needs a GPU; exit 2 without one.");
  cmd->group("");  // hidden from the command list
  cmd->add_option("PROBLEM", problem, "GEMM problem folder (const axes N, K; var axis M)")->required();
  cmd->add_option("--top", top, "Heuristic results per M")->capture_default_str()->check(CLI::Range(1, 64));
  cmd->add_option("--workspace-mb", ws_mb, "Workspace bound in MiB (the family's WS_MB)")->capture_default_str()->check(CLI::Range(0, 4096));
  cmd->add_option("--max-configs", max_configs, "Most configs listed (heuristic seeds first)")->capture_default_str()->check(CLI::Range(1, 1000000));
  cmd->add_option("-o,--output", out, "Write the JSON here instead of stdout");
  cmd->callback([] {
#ifdef KA_HAVE_CUBLASLT
    Problem p = load_problem(problem);
    const std::string text = enumerate(p, top, ws_mb, max_configs).dump(1) + "\n";
    if (out.empty()) fmt::print("{}", text);
    else write_atomic(out, text);
#else
    user_error("lt-enum: this kernelarc was built without CUDA (no cuBLASLt)");
#endif
  });
}

}  // namespace ka::cli
