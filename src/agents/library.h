// agents/library.h — the "library" agent: static cuBLASLt configuration tables for GEMM problems
// (family gemm_cublaslt_cuda, C = A·Bᵀ). It owns the cuBLASLt configuration record (LtConfig, the
// cublasLtMatmulAlgoConfigAttributes_t fields), the enumeration that `kernelarc lt-enum` prints
// (what cuBLASLt can run for the problem's dtype, N, K and each workload's M), the composition of
// a table from per-workload timings, and the agent itself.
//
// The agent, per problem:
//  1. gets the enumeration: the campaign's record OUT/<problem>/lt_enum.json when it exists (a
//     resumed or replayed campaign proposes the same), else runs `kernelarc lt-enum` in a separate
//     process (the engine process needs no cuBLASLt or GPU) and records its output, failure included.
//     Without a cuBLASLt family for the problem (host target, other op types) or without an
//     enumeration (no GPU) it proposes nothing and says why once;
//  2. proposes the heuristic table first: at each workload M the config cuBLASLt's heuristic ranks
//     first there (what a run-time heuristic query would pick, fixed in the source), rows as in 3.;
//     the baseline every later table has to beat, and the part a piecewise candidate
//     (families/compose.h) takes where custom kernels lose. Then single configurations (a table
//     of one row, M in [1, ∞)), judged on every workload:
//     first the configs of best_config findings in the digest (same family, valid here), then the
//     heuristic's choices (rank 0 at every workload M, then rank 1, ...), then one-field variants
//     of the configs that win some M (balanced: the winner and field whose variants were tried
//     least — split-K with its reduction, stages, tile, cluster, swizzle, custom), then the rest of
//     the enumeration in a seeded order;
//  3. composes the table: per workload M, the fastest config measured there (only where the
//     enumeration says it is valid: elsewhere the source ran a fallback), adjacent M ranges with the
//     same config merged; proposes it as a candidate of its own whenever it changed and 8 of its
//     configs were observed since the last one, the budget is nearly spent (≤ 2 left), or it has no
//     config left to try;
//  4. publishes a best_config finding per row of the table (bucket "M<=16", "17<=M<=64", "M>=4097"),
//     citing the winning config's measurements on the workloads of that row, and one for the best
//     table that passed every workload whenever it changes and beats every single config observed.
// Proposals carry the table as generated defines (Proposal::defines: LT_TABLE, LT_FALLBACK).
#pragma once
#include <nlohmann/json.hpp>

#include <compare>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "agents/agent.h"

namespace ka::library {

inline constexpr const char* kFamily = "gemm_cublaslt_cuda";
inline constexpr int64_t kMaxM = std::numeric_limits<int64_t>::max();

// One cuBLASLt algorithm configuration: the cublasLtMatmulAlgoConfigAttributes_t values, with the
// integer widths cublasLt.h gives them.
struct LtConfig {
  int32_t algo = -1;        // CUBLASLT_ALGO_CONFIG_ID
  uint32_t tile = 0;        // _TILE_ID (cublasLtMatmulTile_t)
  uint32_t stages = 0;      // _STAGES_ID (cublasLtMatmulStages_t)
  int32_t splitk = 1;       // _SPLITK_NUM
  uint32_t reduction = 0;   // _REDUCTION_SCHEME (cublasLtReductionScheme_t)
  uint32_t swizzle = 0;     // _CTA_SWIZZLING
  uint32_t custom = 0;      // _CUSTOM_OPTION
  uint16_t inner = 0;       // _INNER_SHAPE_ID
  uint16_t cluster = 0;     // _CLUSTER_SHAPE_ID (0: auto)
  auto operator<=>(const LtConfig&) const = default;
  // "a21.t20.s8.k1.r0.w0.c0.i0.l0": algo, tile, stages, split-K, reduction, sWizzle, custom,
  // inner, cLuster.
  std::string key() const;
};
nlohmann::json config_json(const LtConfig& c);
LtConfig config_from_json(const nlohmann::json& j);  // UserError when a field is missing or not an integer

// One row of a table: the config that serves m_lo <= M <= m_hi.
struct TableRow {
  int64_t m_lo = 1, m_hi = kMaxM;
  LtConfig cfg;
  bool operator==(const TableRow&) const = default;
};
// The KA_LT_TABLE (and KA_LT_FALLBACK) define: "{m_lo,m_hi,algo,tile,stages,splitk,reduction,
// swizzle,custom,inner,cluster}," per row (gemm_cublaslt.cu), one line.
std::string table_define(const std::vector<TableRow>& rows);
// The rows of such a define; nullopt when the text is not one.
std::optional<std::vector<TableRow>> parse_table_define(const std::string& text);
// "M<=16", "17<=M<=64", "M>=4097", "M=32", or "" for [1, ∞).
std::string bucket_label(int64_t lo, int64_t hi);

// A config seen by the enumeration: the workload M values where cublasLtMatmulAlgoCheck accepted it
// (with a workspace that fits), and its ranks among the heuristic's results, as (M, rank).
struct EnumConfig {
  LtConfig cfg;
  std::vector<int64_t> valid_m;
  std::vector<std::pair<int64_t, int>> heuristic;
  bool valid_at(int64_t m) const;
};

// What `kernelarc lt-enum` prints (version 1):
//   {"version": 1, "device": "...", "sm": 90, "cublaslt_version": 130000, "dtype": "float16",
//    "N": 128, "K": 2048, "workspace_bytes": 33554432, "ms": [1, 2, ...],
//    "algos": [{"id", "tiles", "stages", "splitk_support", "reduction_mask", "swizzle_support",
//               "custom_max", "checked", "valid"}],
//    "configs": [{"algo", "tile", "stages", "splitk", "reduction", "swizzle", "custom", "inner",
//                 "cluster", "valid_m": [...], "heuristic": [[M, rank], ...]}], "seconds": 1.2}
// or {"error": "why"} when it could not enumerate (recorded as well, so that a replay fails alike).
struct Enumeration {
  std::string error;
  std::string device, dtype;
  int sm = 0;
  int64_t n = 0, k = 0, workspace_bytes = 0;
  std::vector<int64_t> ms;
  std::vector<EnumConfig> configs;
  const EnumConfig* find(const LtConfig& c) const;
};
Enumeration parse_enumeration(const nlohmann::json& j);  // UserError when malformed

// One measurement of a single config on one workload.
struct Timing {
  LtConfig cfg;
  int64_t m = 0;
  bool passed = false;
  double median_us = 0;
  int64_t measurement = 0;
};
// The table from per-workload timings. Per distinct M: the configs that passed (and were timed) on
// every workload of that M they were measured on, and measured on all of them; their score is the
// geometric mean of their medians there; the lowest wins. A config within tie_rel of the winner that
// won the previous (smaller) M is kept instead, so ranges merge; exact ties go to the smaller config
// (LtConfig order). An M where no config qualifies gets no row of its own. Rows cover (previous
// chosen M, this M]; the first starts at 1, the last ends at kMaxM; adjacent rows with one config
// are merged. Empty when nothing qualifies.
std::vector<TableRow> compose_table(const std::vector<Timing>& timings, double tie_rel = 0.01);

// Runs the enumeration for a problem: the JSON of `kernelarc lt-enum` or {"error": ...}.
using Enumerator = std::function<nlohmann::json(const Problem& p, int64_t workspace_mb)>;
// The default: `kernelarc lt-enum PROBLEM --workspace-mb W -o FILE` (this binary, KERNELARC_GPU
// passed on), 10 minutes at most.
nlohmann::json run_lt_enum(const Problem& p, int64_t workspace_mb);

std::unique_ptr<Agent> make_library_agent(uint64_t seed, Enumerator enumerate = run_lt_enum);

}  // namespace ka::library
