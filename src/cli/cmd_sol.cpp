// cli/cmd_sol.cpp — `kernelarc sol PROBLEM... [--workloads ...] [--no-compile] [--count-only] [--time-limit S]`:
// per workload the reference's FLOPs and fewest bytes (the oracle's count), the speed-of-light
// time against this device's measured ceilings (calibrating first when none is stored) with its
// limiting term, the eager and torch.compile'd reference times, and the dataset's B200 figures
// where metadata.json has them.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>

#include "cli/commands.h"
#include "oracle/oracle.h"
#include "problem/problem.h"
#include "sol/bounds.h"
#include "sol/calibrate.h"
#include "target/backend.h"
#include "util/error.h"
#include "util/files.h"

namespace ka::cli {
namespace {

struct SolArgs {
  std::vector<std::string> problems;
  std::string workloads, device;
  bool no_compile = false, json_out = false, count_only = false;
  double compile_budget = 120;
  double time_limit = 0;  // seconds for all problems (after calibration); 0: none
};

std::string us(std::optional<double> v) { return v ? fmt::format("{:.2f}", *v) : "-"; }
std::string eng(double v) {
  const char* u[] = {"", "K", "M", "G", "T", "P"};
  int i = 0;
  while (v >= 1000 && i < 5) v /= 1000, ++i;
  return fmt::format("{:.3g}{}", v, u[i]);
}

void run_sol(const SolArgs& a) {
  std::string device = a.device.empty() ? (cuda_target_built() ? "cuda" : "cpu") : a.device;
  std::string target = device == "cuda" ? "cuda" : "host";
  nlohmann::json cal = calibrate_device(target, false);
  Ceilings ceil = ceilings_from(cal);
  fmt::print("device: {} (bandwidth {:.2f} TB/s measured{})\n", cal["device"].value("name", "?"), ceil.bandwidth_Bps / 1e12,
             cal.value("reused", false) ? ", stored calibration" : "");
  nlohmann::json all = nlohmann::json::array();
  Oracle oracle(device);
  oracle.set_compile_budget(a.compile_budget);
  const auto t0 = std::chrono::steady_clock::now();
  for (const auto& dir : a.problems) {
    Problem p = load_problem(dir);
    auto ws = select_workloads(p, a.workloads);
    // --time-limit bounds the count (whose finished workloads are kept) and then the timing run.
    auto limit_to_what_is_left = [&] {
      if (a.time_limit <= 0) return;
      const double left = a.time_limit - std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      oracle.set_time_limit(std::max(1.0, left));
    };
    limit_to_what_is_left();
    auto counts = oracle.count(p, ws);
    limit_to_what_is_left();
    std::vector<OracleRequest> reqs;
    for (const Workload* w : ws) reqs.push_back({w, 0});
    std::vector<OracleEntry> entries(reqs.size());
    if (!a.count_only) entries = oracle.ensure(p, reqs, true, !a.no_compile, /*timings_only=*/true);
    nlohmann::json meta;
    if (fs::exists(p.dir / "metadata.json")) meta = nlohmann::json::parse(read_text(p.dir / "metadata.json"), nullptr, false);
    const nlohmann::json* b200 = nullptr;
    if (meta.is_object() && meta.contains("b200_sol") && meta["b200_sol"].value("available", false) &&
        meta["b200_sol"].contains("per_workload"))
      b200 = &meta["b200_sol"]["per_workload"];
    if (!a.json_out) {
      fmt::print("\n{}\n", p.def.name);
      fmt::print("{:<10} {:>10} {:>10} {:<14} {:>10} {:>11} {:>11} {:>11} {:>11}\n", "workload", "FLOPs", "bytes",
                 "limiting", "sol_us", "eager_us", "compile_us", "b200_sol_us", "b200_base_us");
    }
    for (size_t i = 0; i < ws.size(); ++i) {
      size_t index = static_cast<size_t>(ws[i] - p.workloads.data());
      std::optional<double> b_sol, b_base;
      if (b200)
        for (const auto& r : *b200)
          if (r.value("index", -1) == static_cast<int>(index)) {
            if (r.contains("sol_ms") && r["sol_ms"].is_number()) b_sol = r["sol_ms"].get<double>() * 1000;
            if (r.contains("baseline_latency_ms") && r["baseline_latency_ms"].is_number())
              b_base = r["baseline_latency_ms"].get<double>() * 1000;
          }
      std::optional<double> eager, comp;
      if (!a.count_only && entries[i].ok()) {
        if (auto m = entries[i].reference_ms()) eager = *m * 1000;
        if (auto m = entries[i].compile_ms()) comp = *m * 1000;
      }
      nlohmann::json row = {{"problem", p.def.name}, {"uuid", ws[i]->uuid}, {"index", index}};
      if (!counts[i].value("ok", false)) {
        row["error"] = counts[i].value("message", "count failed");
        if (!a.json_out) fmt::print("{:<10} count failed: {}\n", ws[i]->uuid.substr(0, 8), row["error"].get<std::string>());
        all.push_back(row);
        continue;
      }
      WorkCount wc = at_input_precision(WorkCount::from_json(counts[i]), input_precision(p.def));
      SolBound b = sol_bound(wc, ceil);
      std::optional<double> sol_us;
      if (b.ok) sol_us = b.t_sol_s * 1e6;
      row.update({{"flops", wc.total_flops()}, {"matrix_flops", wc.matrix_flops}, {"elementwise_flops", wc.elementwise_flops},
                  {"bytes", wc.bytes}, {"limiting", b.ok ? b.limiting : b.message}, {"sol_us", sol_us ? nlohmann::json(*sol_us) : nlohmann::json()},
                  {"eager_us", eager ? nlohmann::json(*eager) : nlohmann::json()},
                  {"compile_us", comp ? nlohmann::json(*comp) : nlohmann::json()},
                  {"b200_sol_us", b_sol ? nlohmann::json(*b_sol) : nlohmann::json()},
                  {"b200_baseline_us", b_base ? nlohmann::json(*b_base) : nlohmann::json()}});
      if (!a.count_only && !entries[i].ok()) row["oracle_error"] = entries[i].error;
      if (!a.count_only && entries[i].ok() && !entries[i].compile_note().empty()) {
        row["compile_note"] = entries[i].compile_note();
      } else if (!a.count_only && entries[i].ok() && !comp && entries[i].meta.contains("compile_timing") &&
                 entries[i].meta["compile_timing"].is_object()) {
        const auto& ct = entries[i].meta["compile_timing"];
        row["compile_note"] = ct.value("skipped", ct.value("error", std::string()));
      }
      all.push_back(row);
      if (!a.json_out)
        fmt::print("{:<10} {:>10} {:>10} {:<14} {:>10} {:>11} {:>11} {:>11} {:>11}\n", ws[i]->uuid.substr(0, 8),
                   eng(wc.total_flops()), eng(wc.bytes), b.ok ? b.limiting : "?", us(sol_us), us(eager), us(comp), us(b_sol),
                   us(b_base));
      if (!a.json_out && all.back().contains("compile_note"))
        fmt::print("{:<10} compile_us: {}\n", "", all.back()["compile_note"].get<std::string>());
    }
  }
  if (a.json_out) fmt::print("{}\n", all.dump(1));
}

}  // namespace

void register_sol(CLI::App& app) {
  static SolArgs a;
  auto* cmd = app.add_subcommand("sol", "Speed-of-light bounds and baselines per workload");
  cmd->add_option("PROBLEM", a.problems, "Problem folders")->required();
  cmd->add_option("--workloads", a.workloads, "The first N workloads, or a comma list of uuid prefixes (default: all)");
  cmd->add_flag("--no-compile", a.no_compile, "Do not time torch.compile of the reference");
  cmd->add_flag("--count-only", a.count_only,
                "Count the work and print the bounds; time nothing (eager and compile show '-'). Counts are "
                "cached for every device, so a count made here serves a later run on the GPU");
  cmd->add_option("--device", a.device, "cuda or cpu (default: cuda when built in)")->check(CLI::IsMember({"cuda", "cpu"}));
  cmd->add_option("--compile-budget", a.compile_budget,
                  "Seconds per problem for compiling and timing torch.compile; later workloads show '-' (default 120)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--time-limit", a.time_limit,
                  "Seconds for all problems together (from after the calibration): each problem's count, then its "
                  "timing run, gets what is left; workloads not counted or timed by then show 'count failed' or "
                  "'-', the ones done are kept for the next run (default: no limit)")
      ->check(CLI::PositiveNumber);
  cmd->add_flag("--json", a.json_out, "Print the rows as JSON");
  cmd->callback([] { run_sol(a); });
}

}  // namespace ka::cli
