// engine/outputs.cpp — a campaign's leaderboard, findings, best solution and progress line
// (engine/outputs.h).
#include "engine/outputs.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <set>

#include "engine/scoring.h"
#include "sol/problem_sol.h"
#include "util/files.h"

namespace ka {
namespace {

using json = nlohmann::json;
namespace fs = std::filesystem;

double spread_of(const std::vector<GpuTiming>& gpus) {
  double lo = 0, hi = 0;
  int n = 0;
  for (const auto& t : gpus) {
    if (!t.passed) continue;
    lo = n ? std::min(lo, t.geomean_us) : t.geomean_us;
    hi = n ? std::max(hi, t.geomean_us) : t.geomean_us;
    ++n;
  }
  return n > 1 && lo > 0 ? (hi - lo) / lo : 0;
}

// One candidate of the leaderboard, ranked: passed ones by time, then the rest in proposal order.
struct Row {
  CandidateRecord c;
  Scored s;
  SolStats sol;
  double speedup() const { return s.passed && s.ref_geomean_us > 0 ? s.ref_geomean_us / s.geomean_us : 0; }
};

std::vector<Row> ranked_rows(const Problem& p, const Store& store, const std::map<std::string, double>& sol_us) {
  std::vector<Row> rows;
  for (auto& c : store.candidates(p.def.name)) {
    auto ms = primary(store.measurements_of(c.hash));
    rows.push_back({c, score(ms), sol_stats(ms, sol_us)});
  }
  std::sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) {
    if (a.s.passed != b.s.passed) return a.s.passed;
    if (a.s.passed) return a.s.geomean_us < b.s.geomean_us;
    return a.c.seq < b.c.seq;
  });
  return rows;
}

json per_gpu_json(const PerGpu& per_gpu) {
  json a = json::array();
  for (const auto& t : per_gpu.gpus)
    a.push_back({{"gpu", t.gpu}, {"device", t.device}, {"passed", t.passed}, {"geomean_us", t.geomean_us},
                 {"measured_by", t.check ? "per-GPU check" : "search"}});
  return a;
}

json leaderboard_json(const std::vector<Row>& rows, const std::string& best_hash, const PerGpu& per_gpu) {
  json lb = json::array();
  int rank = 0;
  for (const auto& r : rows) {
    json row = {{"rank", ++rank}, {"candidate", r.c.hash}, {"name", r.c.solution.value("name", "")}, {"agent", r.c.agent},
                {"family", r.c.family}, {"knobs", r.c.knobs}, {"passed_workloads", r.s.passed_workloads},
                {"workloads", r.s.workloads}, {"geomean_us", r.s.geomean_us}, {"speedup", r.speedup()}, {"seq", r.c.seq},
                {"sol_score", r.sol.score ? json(*r.sol.score) : json()}, {"sol_ratio", r.sol.ratio ? json(*r.sol.ratio) : json()}};
    if (r.c.hash == best_hash && !per_gpu.gpus.empty()) {
      row["per_gpu"] = per_gpu_json(per_gpu);
      row["gpu_spread"] = per_gpu.spread;
      row["unchecked_gpus"] = per_gpu.unchecked;
    }
    lb.push_back(std::move(row));
  }
  return lb;
}

std::string per_gpu_markdown(const PerGpu& per_gpu) {
  std::string md =
      "\n## The incumbent on each GPU\n\nTimings from different GPUs are comparable only after a per-GPU check of the "
      "incumbent: noise and drift between cards are measured, not assumed.\n\n| gpu | device | geomean µs | measured by |\n"
      "| --- | --- | --- | --- |\n";
  for (const auto& t : per_gpu.gpus)
    md += fmt::format("| {} | {} | {} | {} |\n", t.gpu, t.device, t.passed ? fmt::format("{:.3f}", t.geomean_us) : "failed",
                      t.check ? "per-GPU check" : "search");
  md += fmt::format("\nSpread (max − min) / min: {:.1f}%.\n", 100 * per_gpu.spread);
  if (!per_gpu.unchecked.empty())
    md += fmt::format("Not checked (no runner on them in this run): {}.\n", fmt::join(per_gpu.unchecked, ", "));
  return md;
}

std::string leaderboard_markdown(const Problem& p, const std::vector<Row>& rows, const PerGpu& per_gpu,
                                 const std::map<std::string, double>& sol_us) {
  std::string md = fmt::format("# Leaderboard: {}\n\n", p.def.name);
  if (!sol_us.empty())
    md += fmt::format("SOL score: SOL-ExecBench's S = 1 / (1 + (T_k − T_sol) / (T_b − T_sol)) per workload, mean over the "
                      "workloads; T_b the eager reference (or torch.compile's when timed and faster); × SOL: geometric "
                      "mean of T_k / T_sol. Speed-of-light bounds for {} of {} workloads.\n\n",
                      sol_us.size(), p.workloads.size());
  md += "| rank | candidate | agent | family | knobs | passed | geomean µs | speedup vs reference | SOL score | × SOL |\n"
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n";
  int rank = 0;
  for (const auto& r : rows) {
    const double sp = r.speedup();
    md += fmt::format("| {} | {} | {} | {} | {} | {}/{} | {} | {} | {} | {} |\n", ++rank, r.c.solution.value("name", r.c.hash),
                      r.c.agent, r.c.family, r.c.knobs.dump(), r.s.passed_workloads, r.s.workloads,
                      r.s.passed ? fmt::format("{:.3f}", r.s.geomean_us) : "-", sp > 0 ? fmt::format("{:.2f}x", sp) : "-",
                      r.sol.score ? fmt::format("{:.3f}", *r.sol.score) : "-",
                      r.sol.ratio ? fmt::format("{:.2f}", *r.sol.ratio) : "-");
  }
  if (!per_gpu.gpus.empty()) md += per_gpu_markdown(per_gpu);
  return md;
}

void write_findings(const Problem& p, const Store& store, const fs::path& dir) {
  json fs_json = json::array();
  for (const auto& f : store.findings(p.def.op_type))
    if (f.problem.empty() || f.problem == p.def.name)
      fs_json.push_back({{"id", f.id}, {"author", f.author}, {"kind", f.kind}, {"problem", f.problem},
                         {"op_type", f.op_type}, {"device", f.device}, {"bucket", f.bucket}, {"claim", f.claim},
                         {"cites", f.cites}, {"origin", f.origin}});
  write_atomic(dir / "findings.json", fs_json.dump(1) + "\n");
}

void write_best(const Problem& p, const Store& store, const fs::path& dir, const std::string& best_hash) {
  if (best_hash.empty()) return;
  auto rec = store.candidate(best_hash);
  if (!rec) return;
  Candidate c = parse_solution_json(rec->solution, "campaign store");
  fs::create_directories(dir / "best");
  write_atomic(dir / "best" / "solution.json", rec->solution.dump(2) + "\n");
  for (const auto& s : c.sources) write_atomic(dir / "best" / s.path, s.content);
  write_atomic(dir / "best" / "solution_sol_execbench.json", to_solution_json(c, p.def).dump(2) + "\n");
}

}  // namespace

PerGpu incumbent_per_gpu(const Store& store, const std::string& problem, const std::string& best_hash) {
  PerGpu out;
  if (best_hash.empty()) return out;
  std::set<std::string> used;
  for (const auto& m : store.measurements(problem)) used.insert(m.gpu);
  if (used.size() < 2) return out;
  std::map<std::string, std::vector<Measurement>> by_gpu;
  auto ms = store.measurements_of(best_hash);
  if (ms.empty()) return out;
  for (const auto& m : ms) by_gpu[m.gpu].push_back(m);
  const std::string first = primary(ms).front().gpu;
  auto add = [&](const std::string& gpu) {
    Scored sc = score(by_gpu[gpu]);
    out.gpus.push_back({gpu, by_gpu[gpu].front().device, sc.passed, sc.geomean_us, gpu != first});
  };
  add(first);
  for (const auto& [gpu, v] : by_gpu)
    if (gpu != first) add(gpu);
  for (const auto& gpu : used)
    if (!by_gpu.count(gpu)) out.unchecked.push_back(gpu);
  out.spread = spread_of(out.gpus);
  return out;
}

void write_outputs(const Problem& p, const Store& store, const fs::path& dir, const std::string& best_hash,
                   const PerGpu& per_gpu, const std::map<std::string, double>& sol_us) {
  fs::create_directories(dir);
  const std::vector<Row> rows = ranked_rows(p, store, sol_us);
  write_atomic(dir / "leaderboard.json", leaderboard_json(rows, best_hash, per_gpu).dump(1) + "\n");
  write_atomic(dir / "leaderboard.md", leaderboard_markdown(p, rows, per_gpu, sol_us));
  write_findings(p, store, dir);
  write_atomic(dir / "sol.json", json(sol_us).dump(1) + "\n");  // per workload SOL µs (for the report)
  write_best(p, store, dir, best_hash);
}

std::string progress_line(const ProgressState& s) {
  return fmt::format("{} | {}/{} candidates | best {}{} | {:.1f} candidates/min", s.problem, s.candidates, s.budget,
                     s.best_us > 0 ? fmt::format("{:.2f} us ({:.2f}x ref)", s.best_us,
                                                 s.best_ref_us > 0 ? s.best_ref_us / s.best_us : 0.0)
                                   : "none yet",
                     s.sol_score ? fmt::format(", SOL score {:.3f}", *s.sol_score) : "", s.candidates_per_minute);
}

void ProgressPrinter::observed(const ProgressState& s, bool final) {
  if (!enabled_) return;
  const std::string line = progress_line(s);
  if (tty_) fmt::print(stderr, "\r\033[K{}{}", line, final ? "\n" : "");
  else if (final || s.candidates % 8 == 0) fmt::print(stderr, "{}\n", line);
}

}  // namespace ka
