// cli/cmd_eval.cpp — `kernelarc eval PROBLEM --solution FILE`: judges one solution on a problem's
// workloads and prints one row per workload; optionally writes SOL-ExecBench traces and a JSON
// report. Exit 0 when every judged workload passed, 1 when any did not, 2 on a user error.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <fstream>

#include "cli/commands.h"
#include "judge/evaluator.h"
#include "judge/trace.h"
#include "oracle/oracle.h"
#include "problem/problem.h"
#include "sol/bounds.h"
#include "sol/problem_sol.h"
#include "sol/calibrate.h"
#include "sol/score.h"
#include "solution/solution.h"
#include "util/error.h"

namespace ka::cli {
namespace {

struct EvalArgs {
  std::string problem, solution, target, workloads, traces, json_path;
  bool json_stdout = false, no_time = false, no_ref = false, time_compile = false, no_sol = false, send_inputs = false, retime = false;
  uint64_t seed = 0;
  int warmup = 10, iterations = 50;
  double timeout_s = 60;
  double cut_slow = 0, cut_min_reference_us = 100;
  double compile_budget = 0;  // 0: the oracle's default
};

std::string axes_str(const nlohmann::json& axes) {
  std::string s;
  for (auto it = axes.begin(); it != axes.end(); ++it) s += fmt::format("{}{}={}", s.empty() ? "" : " ", it.key(), it.value().dump());
  return s.size() > 34 ? s.substr(0, 31) + "..." : s;
}

void run_eval(const EvalArgs& a) {
  Problem p = load_problem(a.problem);
  Candidate c = read_candidate(a.solution);
  EvalOptions opt;
  opt.target = a.target.empty() ? c.target() : a.target;
  opt.seed = a.seed;
  opt.warmup = a.warmup;
  opt.iterations = a.iterations;
  opt.cut_slow = a.cut_slow;
  opt.cut_min_reference_us = a.cut_min_reference_us;
  opt.time = !a.no_time;
  opt.time_reference = !a.no_ref && !a.no_time;
  opt.borrow_timings = !a.retime;
  opt.time_compile = a.time_compile && opt.time_reference;
  opt.keep_sets = !a.send_inputs;
  opt.timeout = std::chrono::milliseconds(static_cast<long>(a.timeout_s * 1000));
  auto selected = select_workloads(p, a.workloads);
  Oracle oracle(opt.target == "cuda" ? "cuda" : "cpu");
  if (a.compile_budget > 0) oracle.set_compile_budget(a.compile_budget);
  CandidateEval ev = evaluate(p, c, selected, oracle, opt);

  if (!a.traces.empty()) {
    std::ofstream f(a.traces, std::ios::app);
    if (!f) user_error("{}: cannot write traces", a.traces);
    for (const auto& w : ev.workloads) f << to_trace(p.def, c, ev, w).dump() << "\n";
  }
  // SOL score per workload: only where this device has a stored calibration (`kernelarc
  // calibrate`) and the oracle could count the reference's work. T_b = min(eager, compiled).
  std::vector<std::optional<double>> score(ev.workloads.size());
  std::vector<std::optional<double>> sol_us(ev.workloads.size());
  std::vector<double> scored;
  if (!a.no_sol && opt.time_reference) {
    std::optional<nlohmann::json> cal = load_calibration(ev.device);
    if (cal) {
      try {
        auto sols = workload_sol_us(p, selected, oracle, ceilings_from(*cal));
        for (size_t i = 0; i < ev.workloads.size(); ++i) {
          const auto& w = ev.workloads[i];
          auto it = sols.find(w.uuid);
          if (it == sols.end()) continue;
          sol_us[i] = it->second;
          auto tb = baseline_time(w.reference_us, w.compile_us);
          if (w.verdict == Verdict::passed && w.timing && tb) {
            score[i] = sol_score(w.timing->median_us, *sol_us[i], *tb);
            scored.push_back(*score[i]);
          }
        }
      } catch (const std::exception& e) {
        spdlog::warn("no SOL score: {}", e.what());
      }
    }
  }
  nlohmann::json report = to_report(p.def, c, ev);
  if (!scored.empty() || std::any_of(sol_us.begin(), sol_us.end(), [](const auto& v) { return v.has_value(); })) {
    nlohmann::json s = nlohmann::json::array();
    for (size_t i = 0; i < ev.workloads.size(); ++i)
      s.push_back({{"uuid", ev.workloads[i].uuid},
                   {"sol_us", sol_us[i] ? nlohmann::json(*sol_us[i]) : nlohmann::json()},
                   {"compile_us", ev.workloads[i].compile_us ? nlohmann::json(*ev.workloads[i].compile_us) : nlohmann::json()},
                   {"compile_note", ev.workloads[i].compile_note.empty() ? nlohmann::json() : nlohmann::json(ev.workloads[i].compile_note)},
                   {"sol_score", score[i] ? nlohmann::json(*score[i]) : nlohmann::json()}});
    report["sol"] = {{"workloads", s}, {"mean_score", scored.empty() ? nlohmann::json() : nlohmann::json(*mean_score(scored))}};
  }
  const bool show_score = !scored.empty();
  if (!a.json_path.empty()) {
    std::ofstream f(a.json_path);
    if (!f) user_error("{}: cannot write the report", a.json_path);
    f << report.dump(1) << "\n";
  }
  if (a.json_stdout) {
    fmt::print("{}\n", report.dump(1));
  } else {
    fmt::print("{} on {} ({}): {}{}\n", c.name, p.def.name, ev.target, ev.device.value("name", "?"),
               ev.build.cached ? " [build cached]" : "");
    fmt::print("{:<10} {:<34} {:<22} {:>10} {:>10} {:>11} {:>11} {:>8}{}\n", "workload", "axes", "verdict", "max_abs",
               "max_rel", "median_us", "ref_us", "speedup", show_score ? fmt::format(" {:>10} {:>9}", "sol_us", "sol_score") : "");
    size_t row = 0;
    for (const auto& w : ev.workloads) {
      std::string med = w.timing ? fmt::format("{:.2f}", w.timing->median_us) : "-";
      std::string ref = w.reference_us ? fmt::format("{:.2f}", *w.reference_us) : "-";
      std::string sp = (w.timing && w.reference_us && w.timing->median_us > 0)
                           ? fmt::format("{:.2f}x", *w.reference_us / w.timing->median_us) : "-";
      std::string sc = show_score ? fmt::format(" {:>10} {:>9}", sol_us[row] ? fmt::format("{:.2f}", *sol_us[row]) : "-",
                                                score[row] ? fmt::format("{:.3f}", *score[row]) : "-")
                                  : "";
      ++row;
      fmt::print("{:<10} {:<34} {:<22} {:>10.3g} {:>10.3g} {:>11} {:>11} {:>8}{}\n", w.uuid.substr(0, 8),
                 axes_str(w.workload.value("axes", nlohmann::json::object())), verdict_name(w.verdict), w.max_abs_err,
                 w.max_rel_err, med, ref, sp, sc);
      if (w.verdict != Verdict::passed) fmt::print("           {}\n", w.message);
    }
  }
  size_t passed = 0;
  double log_sum = 0;
  int timed = 0;
  for (const auto& w : ev.workloads) {
    passed += w.verdict == Verdict::passed;
    if (w.verdict == Verdict::passed && w.timing && w.reference_us && w.timing->median_us > 0) {
      log_sum += std::log(*w.reference_us / w.timing->median_us);
      ++timed;
    }
  }
  if (!a.json_stdout)
    fmt::print("{}/{} workloads passed{}\n", passed, ev.workloads.size(),
               timed ? fmt::format("; geomean speedup over the reference {:.2f}x", std::exp(log_sum / timed)) : "");
  if (!a.json_stdout && show_score)
    fmt::print("mean SOL score {:.3f} over {} workload(s) (T_b = {}; device ceilings from kernelarc calibrate)\n",
               *mean_score(scored), scored.size(), opt.time_compile ? "min(eager, torch.compile)" : "eager reference; --time-compile adds torch.compile");
  set_exit_code(passed == ev.workloads.size() ? 0 : 1);
}

}  // namespace

void register_eval(CLI::App& app) {
  static EvalArgs a;
  auto* cmd = app.add_subcommand("eval", "Judge a solution on a problem's workloads (correctness, then timing)");
  cmd->add_option("PROBLEM", a.problem, "Problem folder (definition.json, workload.jsonl)")->required();
  cmd->add_option("--solution,-s", a.solution, "solution.json, or a single .cu (cuda) / .cpp (host) source with `run`")
      ->required();
  cmd->add_option("--target", a.target, "cuda or host (default: the solution's language decides)")
      ->check(CLI::IsMember({"cuda", "host"}));
  cmd->add_option("--workloads", a.workloads, "The first N workloads, or a comma list of uuid prefixes (default: all)");
  cmd->add_flag("--json", a.json_stdout, "Print the full report as JSON instead of the table");
  cmd->add_option("--report", a.json_path, "Also write the full JSON report to this file");
  cmd->add_option("-o,--traces", a.traces, "Append SOL-ExecBench traces (JSON lines) to this file");
  cmd->add_option("--seed", a.seed, "Input seed (the re-check after timing uses seed+1)")->capture_default_str();
  cmd->add_option("--warmup", a.warmup, "Untimed calls before timing")->capture_default_str()->check(CLI::Range(0, 100000));
  cmd->add_option("--iterations", a.iterations, "Timed calls per measurement")->capture_default_str()->check(CLI::Range(1, 100000));
  cmd->add_option("--timeout", a.timeout_s, "Seconds a worker may take for one check or timing run")
      ->capture_default_str()->check(CLI::PositiveNumber);
  cmd->add_option("--cut-slow", a.cut_slow,
                  "As `optimize --cut-slow`: a candidate this many times slower than the reference in a probe of "
                  "1 + 3 calls keeps the probe as its timing (0: SOL-ExecBench's protocol on every workload)")
      ->capture_default_str()->check(CLI::Range(0.0, 1e9));
  cmd->add_option("--cut-min-reference-us", a.cut_min_reference_us,
                  "Probe only where the reference takes at least this many µs a call")
      ->capture_default_str()->check(CLI::Range(0.0, 1e12));
  cmd->add_flag("--no-time", a.no_time, "Check correctness only");
  cmd->add_flag("--no-reference-time", a.no_ref, "Do not time the PyTorch reference");
  cmd->add_flag("--time-compile", a.time_compile, "Also time torch.compile of the reference (SOL score baseline)");
  cmd->add_option("--compile-budget", a.compile_budget,
                  "With --time-compile: seconds the oracle may spend compiling and timing torch.compile over the "
                  "workloads (0: 240; one graph per shape, so many shapes may need more)")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1e9));
  cmd->add_flag("--retime-reference", a.retime,
                "Time the reference here even where `kernelarc sol` measured it before on a GPU of the same name "
                "(its oracle-timings cache, used by default)");
  cmd->add_flag("--send-inputs", a.send_inputs,
                "Send each input set with every call instead of keeping it in the worker (slower; the same verdicts)");
  cmd->add_flag("--no-sol", a.no_sol, "Do not compute SOL scores (they need a stored `kernelarc calibrate`)");
  cmd->callback([] { run_eval(a); });
}

}  // namespace ka::cli
