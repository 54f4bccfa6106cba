// agents/library.cpp — the library agent (cuBLASLt static tables, see library.h): the config
// record, the enumeration's JSON, table composition, and the agent's proposals and findings.
#include "agents/library.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <set>
#include <sstream>
#include <tuple>

#include "util/error.h"
#include "util/files.h"
#include "util/process.h"
#include "util/resources.h"

namespace ka::library {

using json = nlohmann::json;

std::string LtConfig::key() const {
  return fmt::format("a{}.t{}.s{}.k{}.r{}.w{}.c{}.i{}.l{}", algo, tile, stages, splitk, reduction, swizzle, custom, inner,
                     cluster);
}

json config_json(const LtConfig& c) {
  return {{"algo", c.algo},       {"tile", c.tile},       {"stages", c.stages}, {"splitk", c.splitk}, {"reduction", c.reduction},
          {"swizzle", c.swizzle}, {"custom", c.custom}, {"inner", c.inner},   {"cluster", c.cluster}};
}

namespace {

int64_t int_field(const json& j, const char* name, const std::string& where) {
  if (!j.is_object() || !j.contains(name) || !j[name].is_number_integer())
    user_error("{}: field '{}' must be an integer", where, name);
  return j[name].get<int64_t>();
}

}  // namespace

LtConfig config_from_json(const json& j) {
  const std::string where = "cuBLASLt config";
  LtConfig c;
  c.algo = static_cast<int32_t>(int_field(j, "algo", where));
  c.tile = static_cast<uint32_t>(int_field(j, "tile", where));
  c.stages = static_cast<uint32_t>(int_field(j, "stages", where));
  c.splitk = static_cast<int32_t>(int_field(j, "splitk", where));
  c.reduction = static_cast<uint32_t>(int_field(j, "reduction", where));
  c.swizzle = static_cast<uint32_t>(int_field(j, "swizzle", where));
  c.custom = static_cast<uint32_t>(int_field(j, "custom", where));
  c.inner = static_cast<uint16_t>(int_field(j, "inner", where));
  c.cluster = static_cast<uint16_t>(int_field(j, "cluster", where));
  return c;
}

std::string table_define(const std::vector<TableRow>& rows) {
  std::string s;
  for (const auto& r : rows) {
    const LtConfig& c = r.cfg;
    s += fmt::format("{}{{{},{},{},{},{},{},{},{},{},{},{}}},", s.empty() ? "" : " ", r.m_lo, r.m_hi, c.algo, c.tile,
                     c.stages, c.splitk, c.reduction, c.swizzle, c.custom, c.inner, c.cluster);
  }
  return s;
}

std::optional<std::vector<TableRow>> parse_table_define(const std::string& text) {
  std::vector<TableRow> rows;
  size_t i = 0;
  auto skip = [&] {
    while (i < text.size() && text[i] == ' ') ++i;
  };
  for (skip(); i < text.size(); skip()) {
    if (text[i] != '{') return std::nullopt;
    size_t e = text.find('}', i);
    if (e == std::string::npos) return std::nullopt;
    std::vector<int64_t> v;
    std::stringstream ss(text.substr(i + 1, e - i - 1));
    std::string item;
    while (std::getline(ss, item, ',')) {
      char* end = nullptr;
      errno = 0;
      long long x = std::strtoll(item.c_str(), &end, 10);
      if (item.empty() || *end != '\0' || errno) return std::nullopt;
      v.push_back(x);
    }
    if (v.size() != 11) return std::nullopt;
    TableRow r;
    r.m_lo = v[0];
    r.m_hi = v[1];
    r.cfg.algo = static_cast<int32_t>(v[2]);
    r.cfg.tile = static_cast<uint32_t>(v[3]);
    r.cfg.stages = static_cast<uint32_t>(v[4]);
    r.cfg.splitk = static_cast<int32_t>(v[5]);
    r.cfg.reduction = static_cast<uint32_t>(v[6]);
    r.cfg.swizzle = static_cast<uint32_t>(v[7]);
    r.cfg.custom = static_cast<uint32_t>(v[8]);
    r.cfg.inner = static_cast<uint16_t>(v[9]);
    r.cfg.cluster = static_cast<uint16_t>(v[10]);
    rows.push_back(r);
    i = e + 1;
    if (i >= text.size() || text[i] != ',') return std::nullopt;
    ++i;
  }
  return rows;
}

std::string bucket_label(int64_t lo, int64_t hi) {
  if (lo <= 1 && hi == kMaxM) return "";
  if (lo == hi) return fmt::format("M={}", lo);
  if (lo <= 1) return fmt::format("M<={}", hi);
  if (hi == kMaxM) return fmt::format("M>={}", lo);
  return fmt::format("{}<=M<={}", lo, hi);
}

bool EnumConfig::valid_at(int64_t m) const { return std::binary_search(valid_m.begin(), valid_m.end(), m); }

const EnumConfig* Enumeration::find(const LtConfig& c) const {
  for (const auto& e : configs)
    if (e.cfg == c) return &e;
  return nullptr;
}

Enumeration parse_enumeration(const json& j) {
  const std::string where = "lt-enum output";
  Enumeration e;
  if (!j.is_object()) user_error("{}: not a JSON object", where);
  if (j.contains("error")) {
    e.error = j["error"].is_string() ? j["error"].get<std::string>() : j["error"].dump();
    if (e.error.empty()) e.error = "unknown error";
    return e;
  }
  if (int_field(j, "version", where) != 1) user_error("{}: version {} (this build reads 1)", where, j["version"].dump());
  e.device = j.value("device", "");
  e.dtype = j.value("dtype", "");
  e.sm = static_cast<int>(j.value("sm", 0));
  e.n = int_field(j, "N", where);
  e.k = int_field(j, "K", where);
  e.workspace_bytes = int_field(j, "workspace_bytes", where);
  if (!j.contains("ms") || !j["ms"].is_array()) user_error("{}: field 'ms' must be a list of integers", where);
  for (const auto& m : j["ms"]) {
    if (!m.is_number_integer()) user_error("{}: field 'ms' must be a list of integers", where);
    e.ms.push_back(m.get<int64_t>());
  }
  std::sort(e.ms.begin(), e.ms.end());
  if (!j.contains("configs") || !j["configs"].is_array()) user_error("{}: field 'configs' must be a list", where);
  std::set<LtConfig> seen;
  for (const auto& c : j["configs"]) {
    EnumConfig ec;
    ec.cfg = config_from_json(c);
    if (!seen.insert(ec.cfg).second) user_error("{}: config {} listed twice", where, ec.cfg.key());
    for (const auto& m : c.value("valid_m", json::array())) {
      if (!m.is_number_integer()) user_error("{}: config {}: 'valid_m' must be a list of integers", where, ec.cfg.key());
      ec.valid_m.push_back(m.get<int64_t>());
    }
    std::sort(ec.valid_m.begin(), ec.valid_m.end());
    for (const auto& h : c.value("heuristic", json::array())) {
      if (!h.is_array() || h.size() != 2 || !h[0].is_number_integer() || !h[1].is_number_integer())
        user_error("{}: config {}: 'heuristic' must be a list of [M, rank]", where, ec.cfg.key());
      ec.heuristic.emplace_back(h[0].get<int64_t>(), h[1].get<int>());
    }
    e.configs.push_back(std::move(ec));
  }
  return e;
}

std::vector<TableRow> compose_table(const std::vector<Timing>& timings, double tie_rel) {
  // Per M: the workloads' measurements of each config.
  struct Acc {
    int n = 0;
    bool ok = true;
    double logsum = 0;
  };
  std::map<int64_t, std::map<LtConfig, Acc>> by_m;
  std::map<int64_t, int> workloads_at;  // measurements per (M, config) must cover every workload of M
  std::map<std::pair<int64_t, LtConfig>, int> count;
  for (const auto& t : timings) {
    Acc& a = by_m[t.m][t.cfg];
    ++a.n;
    if (!t.passed || t.median_us <= 0) a.ok = false;
    else a.logsum += std::log(t.median_us);
  }
  for (const auto& [m, cfgs] : by_m) {
    int most = 0;
    for (const auto& [c, a] : cfgs) most = std::max(most, a.n);
    workloads_at[m] = most;
  }
  std::vector<std::pair<int64_t, LtConfig>> chosen;
  for (const auto& [m, cfgs] : by_m) {
    std::optional<LtConfig> best;
    double best_s = 0;
    for (const auto& [c, a] : cfgs) {  // LtConfig order: exact ties go to the smaller config
      if (!a.ok || a.n < workloads_at[m]) continue;
      const double s = std::exp(a.logsum / a.n);
      if (!best || s < best_s) {
        best = c;
        best_s = s;
      }
    }
    if (!best) continue;
    if (!chosen.empty() && chosen.back().second != *best) {
      auto it = cfgs.find(chosen.back().second);
      if (it != cfgs.end() && it->second.ok && it->second.n >= workloads_at[m] &&
          std::exp(it->second.logsum / it->second.n) <= best_s * (1 + tie_rel))
        best = chosen.back().second;
    }
    chosen.emplace_back(m, *best);
  }
  std::vector<TableRow> rows;
  int64_t lo = 1;
  for (size_t i = 0; i < chosen.size(); ++i) {
    const int64_t hi = i + 1 == chosen.size() ? kMaxM : chosen[i].first;
    if (!rows.empty() && rows.back().cfg == chosen[i].second) rows.back().m_hi = hi;
    else rows.push_back({lo, hi, chosen[i].second});
    lo = hi == kMaxM ? hi : hi + 1;
  }
  return rows;
}

json run_lt_enum(const Problem& p, int64_t workspace_mb) {
  fs::path dir;
  try {
    dir = make_temp_dir((fs::temp_directory_path() / "kernelarc-lt-enum-").string());
  } catch (const std::exception& e) {
    return {{"error", fmt::format("cannot make a temporary folder: {}", e.what())}};
  }
  const fs::path out = dir / "lt_enum.json";
  std::vector<std::string> env;
  if (const char* g = std::getenv("KERNELARC_GPU")) env.push_back(fmt::format("KERNELARC_GPU={}", g));
  RunResult r = run_command({self_executable().string(), "lt-enum", p.dir.string(), "--workspace-mb",
                             std::to_string(workspace_mb), "-o", out.string()},
                            std::chrono::minutes(10), env);
  json j;
  if (r.ok() && fs::exists(out)) {
    try {
      j = json::parse(read_text(out));
    } catch (const std::exception& e) {
      j = {{"error", fmt::format("lt-enum wrote unreadable JSON: {}", e.what())}};
    }
  } else {
    std::string why = r.timed_out ? "timed out" : r.signal ? "killed by " + signal_name(r.signal) : "exit code " + std::to_string(r.exit_code);
    j = {{"error", fmt::format("kernelarc lt-enum failed ({}): {}", why, one_line(r.output.substr(0, 400)))}};
  }
  std::error_code ec;
  fs::remove_all(dir, ec);
  return j;
}

// ---------------------------------------------------------------------------------------------
// The agent

namespace {

struct State {
  bool loaded = false, said = false;
  std::string why;                        // set: proposes nothing, for this reason
  std::optional<Enumeration> en;
  int64_t ws_mb = 32;
  std::string fallback;                   // the LT_FALLBACK define ("" = none)
  std::map<std::string, int64_t> m_of;    // workload uuid -> M
  std::vector<LtConfig> first;            // digest configs, then heuristic seeds, in order
  std::vector<LtConfig> rest;             // the rest of the enumeration, in a seeded order
  std::set<LtConfig> proposed;            // single configs proposed or observed
  std::set<std::string> tables;           // LT_TABLE texts proposed or observed
  std::vector<Observation> obs;           // own observations of the family, in order
  int since_compose = 0;                  // single configs observed since the last composition
  std::set<std::string> published;        // bucket|config of best_config findings made
  std::string published_table;            // LT_TABLE of the whole-table finding made last
  std::vector<TableRow> heuristic;        // the heuristic's first choice per M (heuristic_table)
  bool heuristic_done = false;            // the heuristic table was proposed (or is a single config)
};

class LibraryAgent : public Agent {
 public:
  LibraryAgent(uint64_t seed, Enumerator e) : rng_(seed ^ 0x4c74417263ull), enumerate_(std::move(e)) {}
  std::string name() const override { return "library"; }

  std::optional<Proposal> propose(const AgentContext& ctx) override {
    State& st = load(ctx);
    if (!st.why.empty()) {
      if (!st.said) spdlog::info("library agent: {}: proposes nothing: {}", ctx.problem->def.name, st.why);
      st.said = true;
      return std::nullopt;
    }
    // First: the heuristic's own table (what cuBLASLt's run-time heuristic would pick at each
    // workload M, fixed), the baseline every later table has to beat.
    if (!st.heuristic_done) {
      st.heuristic_done = true;
      const std::string text = table_define(st.heuristic);
      if (st.heuristic.size() >= 2 && !st.tables.count(text)) return proposal(st, text);
    }
    std::optional<LtConfig> next = next_config(st);
    std::vector<TableRow> table = compose_table(timings(st), 0.01);
    const std::string text = table_define(table);
    const bool fresh = !table.empty() && !st.tables.count(text);
    if (fresh && (ctx.budget_left <= 2 || st.since_compose >= 8 || !next)) {
      st.since_compose = 0;
      return proposal(st, text);
    }
    if (!next) return std::nullopt;
    st.proposed.insert(*next);
    return proposal(st, table_define({{1, kMaxM, *next}}));
  }

  void observe(const Observation& o) override {
    if (o.author != name() || o.proposal.family != kFamily) return;
    State& st = problems_[o.problem];
    st.obs.push_back(o);
    auto it = o.proposal.defines.find("LT_TABLE");
    if (it == o.proposal.defines.end()) return;
    st.tables.insert(it->second);
    if (auto cfg = single(it->second)) {
      st.proposed.insert(*cfg);
      ++st.since_compose;
    }
  }

  std::vector<Finding> conclude(const AgentContext& ctx) override {
    State& st = load(ctx);
    std::vector<Finding> out;
    if (!st.why.empty()) return out;
    auto base = [&](const std::string& bucket) {
      Finding f;
      f.author = name();
      f.kind = "best_config";
      f.problem = ctx.problem->def.name;
      f.op_type = ctx.problem->def.op_type;
      f.device = ctx.device;
      f.bucket = bucket;
      return f;
    };
    // Per row of the current table: the winning config's measurements on that row's workloads.
    const std::vector<Timing> ts = timings(st);
    for (const auto& row : compose_table(ts, 0.01)) {
      const std::string key = bucket_label(row.m_lo, row.m_hi) + "|" + row.cfg.key();
      if (st.published.count(key)) continue;
      Finding f = base(bucket_label(row.m_lo, row.m_hi));
      double worst = 0;
      bool ok = true;
      for (const auto& t : ts)
        if (t.cfg == row.cfg && t.m >= row.m_lo && t.m <= row.m_hi) {
          ok &= t.passed && t.median_us > 0;
          worst = std::max(worst, t.median_us);
          f.cites.push_back(t.measurement);
        }
      if (!ok || f.cites.empty()) continue;
      f.claim = {{"family", kFamily}, {"knobs", knobs_json(st, table_define({{1, kMaxM, row.cfg}}))}, {"median_us", worst}};
      st.published.insert(key);
      out.push_back(std::move(f));
    }
    // The best composed table that passed every workload, once it beats every single config.
    const Observation* best = nullptr;
    double best_single = std::numeric_limits<double>::infinity();
    for (const auto& o : st.obs) {
      auto it = o.proposal.defines.find("LT_TABLE");
      if (!o.passed || it == o.proposal.defines.end()) continue;
      if (single(it->second)) best_single = std::min(best_single, o.score_us);
      else if (!best || o.score_us < best->score_us) best = &o;
    }
    if (best && std::isfinite(best_single) && st.published_table != best->proposal.defines.at("LT_TABLE") &&
        best->score_us < best_single && best->median_us.size() == best->measurement_ids.size() &&
        std::all_of(best->median_us.begin(), best->median_us.end(), [](double m) { return m > 0; })) {
      Finding f = base("");
      f.claim = {{"family", kFamily},
                 {"knobs", knobs_json(st, best->proposal.defines.at("LT_TABLE"))},
                 {"median_us", *std::max_element(best->median_us.begin(), best->median_us.end())}};
      f.cites = best->measurement_ids;
      st.published_table = best->proposal.defines.at("LT_TABLE");
      out.push_back(std::move(f));
    }
    return out;
  }

 private:
  // The single config of a one-row table over every M.
  static std::optional<LtConfig> single(const std::string& text) {
    auto rows = parse_table_define(text);
    if (!rows || rows->size() != 1 || (*rows)[0].m_lo != 1 || (*rows)[0].m_hi != kMaxM) return std::nullopt;
    return (*rows)[0].cfg;
  }

  Proposal proposal(State& st, const std::string& table) {
    st.tables.insert(table);
    Proposal p;
    p.family = kFamily;
    p.knobs = {{"WS_MB", st.ws_mb}};
    p.defines["LT_TABLE"] = table;
    if (!st.fallback.empty()) p.defines["LT_FALLBACK"] = st.fallback;
    return p;
  }

  // The knobs the store records for a proposal with this table (campaign.cpp, recorded_knobs).
  json knobs_json(const State& st, const std::string& table) const {
    json k = {{"WS_MB", st.ws_mb}, {"LT_TABLE", table}};
    if (!st.fallback.empty()) k["LT_FALLBACK"] = st.fallback;
    return k;
  }

  // Per-workload timings of the single configs observed, where the enumeration says the config
  // itself ran (elsewhere the source ran a fallback, which says nothing about the config).
  std::vector<Timing> timings(const State& st) const {
    std::vector<Timing> out;
    if (!st.en) return out;
    for (const auto& o : st.obs) {
      auto it = o.proposal.defines.find("LT_TABLE");
      if (it == o.proposal.defines.end()) continue;
      auto cfg = single(it->second);
      if (!cfg) continue;
      const EnumConfig* ec = st.en->find(*cfg);
      for (size_t i = 0; i < o.measurement_ids.size() && i < o.workloads.size(); ++i) {
        auto m = st.m_of.find(o.workloads[i]);
        if (m == st.m_of.end() || !ec || !ec->valid_at(m->second)) continue;
        Timing t;
        t.cfg = *cfg;
        t.m = m->second;
        t.passed = i < o.verdicts.size() && o.verdicts[i] == "passed";
        t.median_us = i < o.median_us.size() ? o.median_us[i] : 0;
        t.measurement = o.measurement_ids[i];
        out.push_back(t);
      }
    }
    return out;
  }

  // The next single config: digest configs and heuristic seeds first, then one-field variants of
  // the configs that win an M now, then the rest of the enumeration.
  std::optional<LtConfig> next_config(const State& st) const {
    for (const auto& c : st.first)
      if (!st.proposed.count(c)) return c;
    std::vector<TableRow> table = compose_table(timings(st), 0.01);
    std::vector<std::pair<size_t, LtConfig>> winners;  // (Ms won, config), most first
    for (const auto& r : table) {
      size_t won = 0;
      for (int64_t m : st.en->ms) won += m >= r.m_lo && m <= r.m_hi;
      winners.emplace_back(won, r.cfg);
    }
    std::stable_sort(winners.begin(), winners.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
    // One-field variants, balanced: the (winner, field) whose variants were proposed least so far,
    // ties to the winner of more Ms, then to the field order: split-K (with its reduction), stages,
    // tile, cluster, swizzle, custom.
    auto field_of = [](const LtConfig& w, const LtConfig& c) -> int {  // -1: not a one-field variant
      if (c == w || c.algo != w.algo || c.inner != w.inner) return -1;
      const bool f[6] = {c.splitk != w.splitk || c.reduction != w.reduction, c.stages != w.stages, c.tile != w.tile,
                         c.cluster != w.cluster, c.swizzle != w.swizzle, c.custom != w.custom};
      int n = 0, which = -1;
      for (int i = 0; i < 6; ++i)
        if (f[i]) ++n, which = i;
      return n == 1 ? which : -1;
    };
    std::optional<std::tuple<int, size_t, int>> pick;  // (done, winner index, field)
    std::optional<LtConfig> chosen;
    for (size_t wi = 0; wi < winners.size(); ++wi) {
      const LtConfig& w = winners[wi].second;
      int done[6] = {0, 0, 0, 0, 0, 0};
      std::optional<LtConfig> first[6];
      for (const auto& e : st.en->configs) {
        const int f = field_of(w, e.cfg);
        if (f < 0) continue;
        if (st.proposed.count(e.cfg)) ++done[f];
        else if (!first[f] && !e.valid_m.empty()) first[f] = e.cfg;
      }
      for (int f = 0; f < 6; ++f)
        if (first[f] && (!pick || std::make_tuple(done[f], wi, f) < *pick)) {
          pick = std::make_tuple(done[f], wi, f);
          chosen = first[f];
        }
    }
    if (chosen) return chosen;
    for (const auto& c : st.rest)
      if (!st.proposed.count(c)) return c;
    return std::nullopt;
  }

  State& load(const AgentContext& ctx) {
    State& st = problems_[ctx.problem->def.name];
    if (st.loaded) return st;
    st.loaded = true;
    const Problem& p = *ctx.problem;
    const Family* fam = nullptr;
    for (const Family* f : ctx.families)
      if (f->name == kFamily) fam = f;
    if (!fam) {
      st.why = fmt::format("no {} family applies to this problem for this target (the library agent needs the cuda target "
                           "and a GEMM problem)",
                           kFamily);
      return st;
    }
    if (const auto* d = fam->domain("WS_MB")) st.ws_mb = d->front();
    for (const auto& w : p.workloads)
      if (w.axes.count("M")) st.m_of[w.uuid] = w.axes.at("M");
    // The enumeration: the campaign's record, else a fresh one (recorded, failures too).
    const fs::path rec = ctx.record_dir.empty() ? fs::path() : ctx.record_dir / "lt_enum.json";
    json j;
    try {
      if (!rec.empty() && fs::exists(rec)) {
        j = json::parse(read_text(rec));
      } else {
        j = enumerate_ ? enumerate_(p, st.ws_mb) : json{{"error", "no enumerator"}};
        if (!rec.empty()) {
          fs::create_directories(rec.parent_path());
          write_atomic(rec, j.dump(1) + "\n");
        }
      }
      st.en = parse_enumeration(j);
    } catch (const std::exception& e) {
      st.why = fmt::format("cannot read the cuBLASLt enumeration{}: {}", rec.empty() ? "" : " " + rec.string(), one_line(e.what()));
      st.en.reset();
      return st;
    }
    const Enumeration& en = *st.en;
    const std::string dtype = std::string(dtype_name(p.def.inputs.at(0).dtype));
    if (!en.error.empty()) {
      st.why = fmt::format("no cuBLASLt enumeration (needs a GPU): {}", en.error);
    } else if (en.n != const_axis_value(p.def, "N").value_or(-1) || en.k != const_axis_value(p.def, "K").value_or(-1) ||
               en.dtype != dtype) {
      st.why = fmt::format("the enumeration is for {} N={} K={}, not this problem's {} N={} K={}", en.dtype, en.n, en.k, dtype,
                           const_axis_value(p.def, "N").value_or(-1), const_axis_value(p.def, "K").value_or(-1));
    }
    if (!st.why.empty()) return st;
    // Fallback rows: the heuristic's first choice at each M, known valid there.
    std::vector<TableRow> fb;
    for (int64_t m : en.ms)
      for (const auto& e : en.configs)
        for (const auto& [hm, rank] : e.heuristic)
          if (hm == m && rank == 0 && e.valid_at(m) &&
              std::none_of(fb.begin(), fb.end(), [&](const TableRow& r) { return r.cfg == e.cfg; }))
            fb.push_back({m, m, e.cfg});
    // The heuristic table: that first choice at every M (rows as compose_table makes them).
    std::vector<Timing> first_choice;
    for (const auto& e : en.configs)
      for (const auto& [hm, rank] : e.heuristic)
        if (rank == 0 && e.valid_at(hm)) first_choice.push_back({e.cfg, hm, true, 1.0, 0});
    st.heuristic = compose_table(first_choice, 0.0);
    if (fb.size() > 4) fb.resize(4);
    st.fallback = table_define(fb);
    // First: the digest's best configs of this family, valid here; then the heuristic's, by rank.
    std::set<LtConfig> in_first;
    auto add_first = [&](const LtConfig& c) {
      const EnumConfig* e = en.find(c);
      if (e && !e->valid_m.empty() && in_first.insert(c).second) st.first.push_back(c);
    };
    for (const auto& f : ctx.digest)
      if (f.kind == "best_config" && f.claim.value("family", "") == kFamily && f.claim.contains("knobs") &&
          f.claim["knobs"].is_object() && f.claim["knobs"].contains("LT_TABLE") && f.claim["knobs"]["LT_TABLE"].is_string())
        if (auto rows = parse_table_define(f.claim["knobs"]["LT_TABLE"].get<std::string>()))
          for (const auto& r : *rows) add_first(r.cfg);
    int max_rank = -1;
    for (const auto& e : en.configs)
      for (const auto& h : e.heuristic) max_rank = std::max(max_rank, h.second);
    for (int r = 0; r <= max_rank; ++r)
      for (int64_t m : en.ms)
        for (const auto& e : en.configs)
          for (const auto& h : e.heuristic)
            if (h.first == m && h.second == r) add_first(e.cfg);
    for (const auto& e : en.configs)
      if (!e.valid_m.empty() && !in_first.count(e.cfg)) st.rest.push_back(e.cfg);
    for (size_t i = st.rest.size(); i > 1; --i) std::swap(st.rest[i - 1], st.rest[rng_() % i]);
    return st;
  }

  std::mt19937_64 rng_;
  Enumerator enumerate_;
  std::map<std::string, State> problems_;
};

}  // namespace

std::unique_ptr<Agent> make_library_agent(uint64_t seed, Enumerator enumerate) {
  return std::make_unique<LibraryAgent>(seed, std::move(enumerate));
}

}  // namespace ka::library
