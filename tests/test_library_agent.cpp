// tests/test_library_agent.cpp — the library agent (agents/library.h) without a GPU: table
// composition from synthetic per-workload timings (ties, gaps between M values, configs failing on
// some workloads), the table define and its parsing, the enumeration JSON and its replay from the
// campaign record, proposing nothing without a cuBLASLt family or an enumeration, the proposals and
// findings of a run on synthetic timings, generated defines in Family::instantiate, the export of a
// table candidate, and the family source compiling with nvcc for sm_90a (skipped without nvcc).
#include "util/resources.h"
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "agents/library.h"
#include "solution/solution.h"
#include "util/error.h"
#include "util/files.h"
#include "util/process.h"
#include "nvcc_build.h"

namespace ka {
namespace {

using json = nlohmann::json;
using library::LtConfig;
using library::TableRow;
using library::Timing;
using library::kMaxM;

struct TempDir {
  fs::path path = make_temp_dir((fs::temp_directory_path() / "ka-library-").string());
  ~TempDir() { fs::remove_all(path); }
};

LtConfig cfg(int algo, uint32_t tile = 20, int32_t splitk = 1) {
  LtConfig c;
  c.algo = algo;
  c.tile = tile;
  c.stages = 8;
  c.splitk = splitk;
  c.reduction = splitk > 1 ? 2 : 0;
  return c;
}

Timing tm(const LtConfig& c, int64_t m, double us, bool passed = true, int64_t id = 0) {
  Timing t;
  t.cfg = c;
  t.m = m;
  t.median_us = passed ? us : 0;
  t.passed = passed;
  t.measurement = id;
  return t;
}

// A synthetic fp16 GEMM problem (N 128, K 2048) with workloads at the given M values.
Problem gemm_problem(const std::vector<int64_t>& ms, const std::string& dtype = "float16") {
  Problem p;
  p.dir = "/nonexistent/synthetic_gemm";
  p.def = parse_definition_text(R"J({"name": "syn_gemm_n128_k2048", "op_type": "gemm",
    "axes": {"M": {"type": "var"}, "N": {"type": "const", "value": 128}, "K": {"type": "const", "value": 2048}},
    "inputs": {"A": {"shape": ["M", "K"], "dtype": ")J" + dtype + R"J("}, "B": {"shape": ["N", "K"], "dtype": ")J" + dtype + R"J("}},
    "outputs": {"C": {"shape": ["M", "N"], "dtype": ")J" + dtype + R"J("}},
    "reference": "import torch\ndef run(A, B):\n    return torch.matmul(A, B.T)"})J",
                                "synthetic");
  int line = 0;
  for (int64_t m : ms) {
    ++line;
    std::string l = fmt::format(R"({{"uuid": "w{}", "axes": {{"M": {}}}, "inputs": {{"A": {{"type": "random"}}, "B": {{"type": "random"}}}}}})",
                                line, m);
    p.workloads.push_back(parse_workload_line(p.def, l, "synthetic", line, ""));
  }
  return p;
}

const Family& lt_family() {
  static Family f = load_family(ka::source_root() / "families" / "gemm_cublaslt_cuda");
  return f;
}

// An enumeration for N 128, K 2048: three configs valid everywhere (heuristic ranks: X first at
// small M, Y first at large M, Z second everywhere), a split-K 4 variant of X valid at M <= 64 only,
// a split-K 8 and a stages variant of X, and 20 more configs of algo 9 for the rest.
json synth_enum(const std::vector<int64_t>& ms) {
  auto entry = [&](const LtConfig& c, std::vector<int64_t> valid, json heur) {
    json e = library::config_json(c);
    e["valid_m"] = valid;
    e["heuristic"] = heur;
    return e;
  };
  json h_x = json::array(), h_y = json::array(), h_z = json::array();
  for (int64_t m : ms) {
    (m <= 64 ? h_x : h_y).push_back({m, 0});
    h_z.push_back({m, 1});
  }
  std::vector<int64_t> small;
  for (int64_t m : ms)
    if (m <= 64) small.push_back(m);
  json configs = json::array({entry(cfg(1), ms, h_x), entry(cfg(2), ms, h_y), entry(cfg(3), ms, h_z),
                              entry(cfg(1, 20, 4), small, json::array()), entry(cfg(1, 20, 8), ms, json::array())});
  LtConfig x12 = cfg(1);
  x12.stages = 12;
  configs.push_back(entry(x12, ms, json::array()));
  for (int i = 0; i < 20; ++i) configs.push_back(entry(cfg(9, 100 + i), ms, json::array()));
  return {{"version", 1}, {"device", "NVIDIA H200"}, {"sm", 90}, {"dtype", "float16"}, {"N", 128}, {"K", 2048},
          {"workspace_bytes", 32 << 20}, {"ms", ms}, {"configs", configs}};
}

// --- composition ---------------------------------------------------------------------------------

TEST(LibraryTable, FastestPerMMergedIntoRanges) {
  const LtConfig x = cfg(1), y = cfg(2);
  std::vector<Timing> ts;
  for (int64_t m : {1, 8, 16}) ts.push_back(tm(x, m, 5)), ts.push_back(tm(y, m, 7));
  for (int64_t m : {64, 1024, 16000}) ts.push_back(tm(x, m, 20)), ts.push_back(tm(y, m, 10));
  auto rows = library::compose_table(ts, 0);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0], (TableRow{1, 16, x}));
  EXPECT_EQ(rows[1], (TableRow{17, kMaxM, y}));  // the gap 17..63 goes to the next measured M's config
  EXPECT_TRUE(library::compose_table({}, 0).empty());
}

TEST(LibraryTable, GapsTiesAndAlternation) {
  const LtConfig x = cfg(1), y = cfg(2);
  // Alternating winners give one row per M, each covering (previous M, M].
  std::vector<Timing> ts{tm(x, 4, 1), tm(y, 4, 2), tm(x, 100, 2), tm(y, 100, 1), tm(x, 5000, 1), tm(y, 5000, 2)};
  auto rows = library::compose_table(ts, 0);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0], (TableRow{1, 4, x}));
  EXPECT_EQ(rows[1], (TableRow{5, 100, y}));
  EXPECT_EQ(rows[2], (TableRow{101, kMaxM, x}));
  // An exact tie goes to the previous M's winner (y at M=100), and with no previous winner to the
  // smaller config.
  ts = {tm(y, 4, 3), tm(x, 4, 3), tm(y, 100, 1), tm(x, 100, 1)};
  rows = library::compose_table(ts, 0);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0], (TableRow{1, kMaxM, x}));
  // Within the tie tolerance the previous winner is kept, so the ranges merge; outside it they do not.
  ts = {tm(x, 4, 1), tm(y, 4, 2), tm(x, 100, 1.005), tm(y, 100, 1.0)};
  EXPECT_EQ(library::compose_table(ts, 0.01).size(), 1u);
  EXPECT_EQ(library::compose_table(ts, 0.001).size(), 2u);
}

TEST(LibraryTable, ConfigsFailingOrMissingOnSomeWorkloadsAreExcludedThere) {
  const LtConfig x = cfg(1), y = cfg(2), z = cfg(3);
  // Two workloads at M=32: z is fastest on one but failed the other; y was measured on one only.
  std::vector<Timing> ts{tm(x, 32, 10), tm(x, 32, 10), tm(z, 32, 1), tm(z, 32, 0, false), tm(y, 32, 2),
                         tm(x, 512, 30), tm(z, 512, 20)};
  auto rows = library::compose_table(ts, 0);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0], (TableRow{1, 32, x}));
  EXPECT_EQ(rows[1], (TableRow{33, kMaxM, z}));
  // An M where every config failed gets no row: the next M's row covers it.
  ts = {tm(x, 8, 0, false), tm(y, 8, 0, false), tm(x, 64, 3), tm(y, 64, 4)};
  rows = library::compose_table(ts, 0);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0], (TableRow{1, kMaxM, x}));
  // Several workloads at one M: the geometric mean decides (x: sqrt(1*100)=10, y: 9).
  ts = {tm(x, 16, 1), tm(x, 16, 100), tm(y, 16, 9), tm(y, 16, 9)};
  EXPECT_EQ(library::compose_table(ts, 0)[0].cfg, y);
}

TEST(LibraryTable, DefineRoundTripAndBuckets) {
  std::vector<TableRow> rows{{1, 16, cfg(21, 20, 4)}, {17, kMaxM, cfg(66, 24)}};
  rows[1].cfg.cluster = 3;
  rows[1].cfg.swizzle = 1;
  const std::string text = library::table_define(rows);
  EXPECT_EQ(text, "{1,16,21,20,8,4,2,0,0,0,0}, {17,9223372036854775807,66,24,8,1,0,1,0,0,3},");
  auto back = library::parse_table_define(text);
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(*back, rows);
  EXPECT_FALSE(library::parse_table_define("{1,2,3},").has_value());
  EXPECT_FALSE(library::parse_table_define("{1,16,21,20,8,4,2,0,0,0,0}").has_value());  // no trailing comma
  EXPECT_FALSE(library::parse_table_define("{1,16,21,20,8,4,2,0,0,0,x},").has_value());
  EXPECT_EQ(library::bucket_label(1, 16), "M<=16");
  EXPECT_EQ(library::bucket_label(17, 64), "17<=M<=64");
  EXPECT_EQ(library::bucket_label(4097, kMaxM), "M>=4097");
  EXPECT_EQ(library::bucket_label(32, 32), "M=32");
  EXPECT_EQ(library::bucket_label(1, kMaxM), "");
  EXPECT_EQ(cfg(21, 20, 4).key(), "a21.t20.s8.k4.r2.w0.c0.i0.l0");
}

// --- enumeration ---------------------------------------------------------------------------------

TEST(LibraryEnum, ParsesItsJsonAndRefusesMalformedOnes) {
  const std::vector<int64_t> ms{64, 1, 8};
  library::Enumeration e = library::parse_enumeration(synth_enum(ms));
  EXPECT_TRUE(e.error.empty());
  EXPECT_EQ(e.n, 128);
  EXPECT_EQ(e.k, 2048);
  EXPECT_EQ(e.dtype, "float16");
  EXPECT_EQ(e.ms, (std::vector<int64_t>{1, 8, 64}));
  ASSERT_EQ(e.configs.size(), 26u);
  const auto* sk = e.find(cfg(1, 20, 4));
  ASSERT_NE(sk, nullptr);
  EXPECT_TRUE(sk->valid_at(8));
  EXPECT_FALSE(sk->valid_at(100));
  EXPECT_EQ(e.find(cfg(77)), nullptr);
  EXPECT_EQ(library::parse_enumeration({{"error", "no usable CUDA device"}}).error, "no usable CUDA device");
  json bad = synth_enum(ms);
  bad["version"] = 2;
  EXPECT_THROW(library::parse_enumeration(bad), UserError);
  bad = synth_enum(ms);
  bad["configs"][0].erase("tile");
  EXPECT_THROW(library::parse_enumeration(bad), UserError);
  bad = synth_enum(ms);
  bad["configs"].push_back(bad["configs"][0]);
  EXPECT_THROW(library::parse_enumeration(bad), UserError);
  EXPECT_THROW(library::parse_enumeration(json::array()), UserError);
}

// --- the agent -----------------------------------------------------------------------------------

struct LtRun {
  Problem p;
  AgentContext ctx;
  int enum_calls = 0;
  LtRun(const std::vector<int64_t>& ms, const fs::path& record_dir) : p(gemm_problem(ms)) {
    ctx.problem = &p;
    ctx.families = {&lt_family()};
    ctx.device = "NVIDIA H200";
    ctx.budget_left = 100;
    ctx.record_dir = record_dir;
  }
  library::Enumerator enumerator(json j) {
    return [this, j](const Problem&, int64_t ws) {
      ++enum_calls;
      EXPECT_EQ(ws, 32);
      return j;
    };
  }
};

// Synthetic time of config c at M: algo 1 is best at small M, algo 2 at large M, split-K of algo 1
// is best at M <= 8; everything else is slower.
double synth_us(const LtConfig& c, int64_t m) {
  const double base = 5 + 0.01 * static_cast<double>(m);
  if (c.algo == 1 && c.splitk == 4) return m <= 8 ? base * 0.5 : base * 1.5;
  if (c.algo == 1) return m <= 64 ? base * 0.8 : base * 2;
  if (c.algo == 2) return m <= 64 ? base * 1.2 : base * 0.6;
  return base * (1.5 + 0.01 * c.tile);
}

Observation observe_synth(const LtRun& r, const Proposal& prop, int64_t& next_id) {
  Observation o;
  o.problem = r.p.def.name;
  o.proposal = prop;
  o.author = "library";
  auto rows = library::parse_table_define(prop.defines.at("LT_TABLE"));
  EXPECT_TRUE(rows.has_value());
  double logsum = 0;
  for (const auto& w : r.p.workloads) {
    const int64_t m = w.axes.at("M");
    LtConfig c = rows->front().cfg;
    for (const auto& row : *rows)
      if (row.m_lo <= m && m <= row.m_hi) c = row.cfg;
    const double us = synth_us(c, m);
    o.measurement_ids.push_back(next_id++);
    o.median_us.push_back(us);
    o.workloads.push_back(w.uuid);
    o.verdicts.push_back("passed");
    logsum += std::log(us);
  }
  o.passed = true;
  o.score_us = std::exp(logsum / static_cast<double>(r.p.workloads.size()));
  return o;
}

struct Trace {
  std::vector<Proposal> props;
  std::vector<Finding> findings;
};

Trace drive(Agent& a, LtRun& r, int budget) {
  Trace t;
  int64_t id = 1;
  for (int i = 0; i < budget; ++i) {
    r.ctx.budget_left = budget - i;
    auto p = a.propose(r.ctx);
    if (!p) break;
    t.props.push_back(*p);
    a.observe(observe_synth(r, *p, id));
    for (auto& f : a.conclude(r.ctx)) t.findings.push_back(f);
  }
  return t;
}

const std::vector<int64_t> kMs{1, 2, 8, 16, 64, 256, 1024, 8192};

TEST(LibraryAgent, ProposesNothingWithoutAFamilyOrAnEnumeration) {
  TempDir d;
  {  // host target: no cuBLASLt family among the context's families
    LtRun r(kMs, d.path / "a");
    r.ctx.families.clear();
    auto a = library::make_library_agent(1, r.enumerator(synth_enum(kMs)));
    EXPECT_FALSE(a->propose(r.ctx).has_value());
    EXPECT_FALSE(a->propose(r.ctx).has_value());
    EXPECT_EQ(r.enum_calls, 0);
    EXPECT_TRUE(a->conclude(r.ctx).empty());
  }
  {  // no GPU: the enumeration fails, once, and the failure is recorded for a replay
    LtRun r(kMs, d.path / "b");
    auto a = library::make_library_agent(1, r.enumerator({{"error", "lt-enum: no usable CUDA device"}}));
    EXPECT_FALSE(a->propose(r.ctx).has_value());
    EXPECT_FALSE(a->propose(r.ctx).has_value());
    EXPECT_EQ(r.enum_calls, 1);
    json rec = json::parse(read_text(d.path / "b" / "lt_enum.json"));
    EXPECT_EQ(rec["error"], "lt-enum: no usable CUDA device");
    auto b = library::make_library_agent(1, r.enumerator(synth_enum(kMs)));  // a resumed campaign
    EXPECT_FALSE(b->propose(r.ctx).has_value());
    EXPECT_EQ(r.enum_calls, 1);
  }
  {  // an enumeration made for another shape
    LtRun r(kMs, d.path / "c");
    json e = synth_enum(kMs);
    e["K"] = 4096;
    auto a = library::make_library_agent(1, r.enumerator(e));
    EXPECT_FALSE(a->propose(r.ctx).has_value());
  }
  {  // a corrupt record
    LtRun r(kMs, d.path / "d");
    fs::create_directories(d.path / "d");
    write_atomic(d.path / "d" / "lt_enum.json", "{not json");
    auto a = library::make_library_agent(1, r.enumerator(synth_enum(kMs)));
    EXPECT_FALSE(a->propose(r.ctx).has_value());
    EXPECT_EQ(r.enum_calls, 0);
  }
}

TEST(LibraryAgent, SeedsFirstThenComposesTheTableAndPublishesPerBucket) {
  TempDir d;
  LtRun r(kMs, d.path / "rec");
  auto a = library::make_library_agent(5, r.enumerator(synth_enum(kMs)));
  Trace t = drive(*a, r, 14);
  ASSERT_EQ(t.props.size(), 14u);
  EXPECT_EQ(r.enum_calls, 1);
  // Every proposal is of the family, with WS_MB and the fallback rows (the heuristic's first choices).
  for (const auto& p : t.props) {
    EXPECT_EQ(p.family, "gemm_cublaslt_cuda");
    EXPECT_EQ(p.knobs, (Knobs{{"WS_MB", 32}}));
    EXPECT_EQ(p.defines.at("LT_FALLBACK"), library::table_define({{1, 1, cfg(1)}, {256, 256, cfg(2)}}));
  }
  // First the heuristic's own table: its rank-0 config at each M (x up to 64, y above).
  EXPECT_EQ(t.props[0].defines.at("LT_TABLE"), library::table_define({{1, 64, cfg(1)}, {65, kMaxM, cfg(2)}}));
  // Then the heuristic's seeds as single configs: rank 0 by M (x, then y), then rank 1 (z).
  auto single = [](const Proposal& p) -> std::optional<LtConfig> {
    auto rows = library::parse_table_define(p.defines.at("LT_TABLE"));
    if (!rows || rows->size() != 1 || (*rows)[0].m_lo != 1 || (*rows)[0].m_hi != kMaxM) return std::nullopt;
    return (*rows)[0].cfg;
  };
  EXPECT_EQ(single(t.props[1]), cfg(1));
  EXPECT_EQ(single(t.props[2]), cfg(2));
  EXPECT_EQ(single(t.props[3]), cfg(3));
  // Then the variants of the winners, balanced over fields: a split-K config of x, then its stages
  // variant (before the second split-K one).
  EXPECT_EQ(single(t.props[4]), cfg(1, 20, 4));
  LtConfig x12 = cfg(1);
  x12.stages = 12;
  EXPECT_EQ(single(t.props[5]), x12);
  EXPECT_EQ(single(t.props[6]), cfg(1, 20, 8));
  // No proposal twice; compositions after 8 observed configs and when the budget runs out.
  std::set<std::string> tables;
  std::vector<size_t> composed;
  for (size_t i = 1; i < t.props.size(); ++i) {
    EXPECT_TRUE(tables.insert(t.props[i].defines.at("LT_TABLE")).second) << i;
    if (!single(t.props[i])) composed.push_back(i);
  }
  // Composed once 8 configs were observed; not again (the table did not change after it).
  EXPECT_EQ(composed, (std::vector<size_t>{9}));
  // The composed table: split-K x for M <= 8, x to 64, y above.
  auto rows = library::parse_table_define(t.props[composed.back()].defines.at("LT_TABLE"));
  ASSERT_TRUE(rows.has_value());
  ASSERT_EQ(rows->size(), 3u);
  EXPECT_EQ((*rows)[0], (TableRow{1, 8, cfg(1, 20, 4)}));
  EXPECT_EQ((*rows)[1], (TableRow{9, 64, cfg(1)}));
  EXPECT_EQ((*rows)[2], (TableRow{65, kMaxM, cfg(2)}));
  // best_config findings, one per bucket of the table (and one for the table as a whole), each
  // citing the winner's measurements in its bucket with a claim that bounds them.
  std::set<std::string> buckets;
  for (const auto& f : t.findings) {
    EXPECT_EQ(f.kind, "best_config");
    EXPECT_EQ(f.author, "library");
    EXPECT_EQ(f.problem, r.p.def.name);
    EXPECT_FALSE(f.cites.empty());
    EXPECT_EQ(f.claim["family"], "gemm_cublaslt_cuda");
    EXPECT_EQ(f.claim["knobs"]["WS_MB"], 32);
    EXPECT_TRUE(f.claim["knobs"]["LT_TABLE"].is_string());
    buckets.insert(f.bucket);
  }
  EXPECT_TRUE(buckets.count("M<=8"));
  EXPECT_TRUE(buckets.count("9<=M<=64"));
  EXPECT_TRUE(buckets.count("M>=65"));
  bool whole_table = false;  // the composed table beat every single config
  for (const auto& f : t.findings) whole_table |= f.claim["knobs"]["LT_TABLE"] == t.props[9].defines.at("LT_TABLE");
  EXPECT_TRUE(whole_table);
  // With a budget too small for 8 configs, the table is composed when 2 candidates are left, unless
  // it is the heuristic table already judged (x to 64, y above): then once the split-K seed changed it.
  LtRun r2(kMs, d.path / "rec2");
  auto b = library::make_library_agent(5, r2.enumerator(synth_enum(kMs)));
  Trace t2 = drive(*b, r2, 6);
  ASSERT_EQ(t2.props.size(), 6u);
  EXPECT_EQ(single(t2.props[4]), cfg(1, 20, 4));
  EXPECT_FALSE(single(t2.props[5]).has_value());
  EXPECT_NE(t2.props[5].defines.at("LT_TABLE"), t2.props[0].defines.at("LT_TABLE"));
}

TEST(LibraryAgent, ReplaysFromTheRecordAndIsDeterministic) {
  TempDir d;
  LtRun r(kMs, d.path / "rec");
  auto a = library::make_library_agent(3, r.enumerator(synth_enum(kMs)));
  Trace t1 = drive(*a, r, 30);
  EXPECT_EQ(r.enum_calls, 1);
  ASSERT_TRUE(fs::exists(d.path / "rec" / "lt_enum.json"));
  // A resumed campaign reads the record (the enumerator would now give something else).
  json other = synth_enum(kMs);
  other["configs"].erase(other["configs"].begin() + 4, other["configs"].end());
  auto b = library::make_library_agent(3, r.enumerator(other));
  Trace t2 = drive(*b, r, 30);
  EXPECT_EQ(r.enum_calls, 1);
  ASSERT_EQ(t1.props.size(), t2.props.size());
  for (size_t i = 0; i < t1.props.size(); ++i) EXPECT_EQ(t1.props[i].defines, t2.props[i].defines) << i;
  // Another seed orders the rest of the enumeration differently (the seeds stay first).
  LtRun r2(kMs, d.path / "rec");
  auto c = library::make_library_agent(4, r2.enumerator(synth_enum(kMs)));
  Trace t3 = drive(*c, r2, 30);
  bool differs = false;
  for (size_t i = 0; i < std::min(t1.props.size(), t3.props.size()); ++i) differs |= t1.props[i].defines != t3.props[i].defines;
  EXPECT_TRUE(differs);
  for (size_t i = 0; i < 3; ++i) EXPECT_EQ(t1.props[i].defines, t3.props[i].defines);
  // The agent runs dry: every config once, then the last composition, then nothing.
  LtRun r3(kMs, "");
  auto e = library::make_library_agent(3, r3.enumerator(synth_enum(kMs)));
  Trace t4 = drive(*e, r3, 1000);
  EXPECT_GE(t4.props.size(), 26u);
  EXPECT_LE(t4.props.size(), 26u + 5u);
}

// Configs the enumeration says are invalid at an M are not credited with what ran there (the fallback).
TEST(LibraryAgent, MeasurementsWhereAConfigIsInvalidDoNotCount) {
  TempDir d;
  LtRun r(kMs, d.path / "rec");
  auto a = library::make_library_agent(5, r.enumerator(synth_enum(kMs)));
  // The split-K config (valid at M <= 64 only) is "measured" extremely fast everywhere.
  Proposal p;
  p.family = "gemm_cublaslt_cuda";
  p.knobs = {{"WS_MB", 32}};
  p.defines["LT_TABLE"] = library::table_define({{1, kMaxM, cfg(1, 20, 4)}});
  ASSERT_TRUE(a->propose(r.ctx).has_value());  // loads the enumeration
  int64_t id = 100;
  Observation o = observe_synth(r, p, id);
  for (auto& us : o.median_us) us = 0.001;
  a->observe(o);
  auto fs_ = a->conclude(r.ctx);
  ASSERT_EQ(fs_.size(), 1u);
  // Only the workloads with M <= 64 (ids 100..104) are cited.
  EXPECT_EQ(fs_[0].cites, (std::vector<int64_t>{100, 101, 102, 103, 104}));
}

// --- the family ----------------------------------------------------------------------------------

TEST(LibraryFamily, GeneratedDefinesAndExport) {
  Problem p = gemm_problem(kMs);
  const Family& f = lt_family();
  EXPECT_TRUE(f.applies_to(p));
  EXPECT_TRUE(f.applies_to(gemm_problem(kMs, "bfloat16")));
  const std::string table = library::table_define({{1, 16, cfg(21)}, {17, kMaxM, cfg(66)}});
  Candidate a = f.instantiate({{"WS_MB", 32}}, p, {{"LT_TABLE", table}});
  Candidate b = f.instantiate({{"WS_MB", 32}}, p, {{"LT_TABLE", library::table_define({{1, kMaxM, cfg(21)}})}});
  Candidate plain = f.instantiate({{"WS_MB", 32}}, p);
  EXPECT_NE(a.sources[0].content.find("#define KA_LT_TABLE " + table + "\n"), std::string::npos);
  EXPECT_NE(a.name, b.name);
  EXPECT_EQ(plain.name, "gemm_cublaslt_cuda_WS_MB32");
  EXPECT_EQ(a.ld_flags, (std::vector<std::string>{"-lcublasLt"}));
  EXPECT_THROW(f.instantiate({{"WS_MB", 32}}, p, {{"WS_MB", "1"}}), UserError);       // a knob's name
  EXPECT_THROW(f.instantiate({{"WS_MB", 32}}, p, {{"LT TABLE", "1"}}), UserError);    // not an identifier
  EXPECT_THROW(f.instantiate({{"WS_MB", 32}}, p, {{"LT_TABLE", "1\n#include"}}), UserError);
  EXPECT_THROW(f.instantiate({{"WS_MB", 32}}, p, {{"LT_TABLE", ""}}), UserError);
  // The SOL-ExecBench export keeps the link flag and the table, and reads back unchanged.
  a.definition = p.def.name;
  json sol = to_solution_json(a, p.def);
  EXPECT_EQ(sol["spec"]["compile_options"]["ld_flags"], json::array({"-lcublasLt"}));
  EXPECT_NE(sol.dump().find("KA_LT_TABLE"), std::string::npos);
  Candidate back = parse_solution_json(to_native_json(a), "test");
  EXPECT_EQ(back.sources[0].content, a.sources[0].content);
  EXPECT_EQ(back.ld_flags, a.ld_flags);
}

// The family source compiles with the judge's nvcc flags for sm_90a, with a table and fallback rows
// and without (skipped without nvcc).
TEST(LibraryFamily, CompilesWithNvccForSm90a) {
  const fs::path nvcc = "/usr/local/cuda/bin/nvcc";
  if (!fs::exists(nvcc)) GTEST_SKIP() << "no nvcc";
  Problem p = gemm_problem(kMs);
  const Family& f = lt_family();
  LtConfig c = cfg(66, 24, 2);
  c.cluster = 3;
  c.inner = 1;
  Candidate cand = f.instantiate({{"WS_MB", 32}}, p,
                                 {{"LT_TABLE", library::table_define({{1, 16, cfg(21)}, {17, kMaxM, c}})},
                                  {"LT_FALLBACK", library::table_define({{1, 1, cfg(21)}})}});
  RunResult r = test::nvcc_judge_build(nvcc, cand, "-gencode=arch=compute_90a,code=sm_90a", false);
  EXPECT_TRUE(r.ok()) << r.output;
  // A bare point (what a search agent proposes): no table, the heuristic's first choice at run time.
  RunResult bare = test::nvcc_judge_build(nvcc, f.instantiate({{"WS_MB", 32}}, p), "-gencode=arch=compute_90a,code=sm_90a", false);
  EXPECT_TRUE(bare.ok()) << bare.output;
}

}  // namespace
}  // namespace ka
