// cli/cmd_optimize.cpp — `kernelarc optimize PROBLEM...`: runs a campaign (engine/campaign.h) and
// prints, per problem, the best candidate and where its solution, leaderboard and findings are,
// then the campaign's rate and what each measurement runner did, writes the campaign's HTML report
// (report/report.h), and exits non-zero with one line per problem that got no passing candidate.
// Running the same command again resumes from the campaign's store without measuring twice. Also
// registers `kernelarc runner` (internal, hidden): the measurement runner processes a campaign
// starts (engine/runner.h).
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <cstdio>
#include <map>

#include "cli/commands.h"
#include "engine/campaign.h"
#include "engine/runner.h"
#include "report/report.h"
#include "store/store.h"
#include "util/error.h"

namespace ka::cli {
namespace {

constexpr const char* kExitStatus =
    "Exit status: 0 every problem ended with a passing best solution; 1 some problem got none (one line per "
    "problem says why: no kernel family applies, the judge could not start, the oracle failed so no workload "
    "could be judged, every candidate failed, nothing was proposed); 2 a user error (bad problem folder, bad "
    "flag); 143 stopped by SIGTERM (the same command resumes).";

// Why a problem ended with no passing candidate, in one line: the engine's reason when it was not
// searched, else what the store says its candidates' measurements were (an oracle whose reference
// fails leaves every workload "unavailable", with the oracle's message).
std::string why_unsolved(const ProblemOutcome& p, const std::filesystem::path& db) {
  if (!p.not_searched.empty()) return "not searched: " + p.not_searched;
  if (!p.oracle_cut_short.empty()) return "not searched: the oracle ran past --oracle-time-limit (run again to go on)";
  if (p.candidates == 0) return "no agent proposed a candidate";
  std::map<std::string, int> verdicts;
  std::map<std::string, std::string> example;  // a message per verdict
  try {
    for (const auto& m : Store::open_agent(db, "optimize")->measurements(p.problem))
      if (m.verdict != "passed" && ++verdicts[m.verdict] == 1) example[m.verdict] = one_line(m.message).substr(0, 200);
  } catch (const std::exception&) {
  }
  if (verdicts.size() == 1 && verdicts.count("unavailable"))
    return fmt::format("no workload could be judged: {}", example["unavailable"]);
  std::string counts;
  for (const auto& [v, n] : verdicts) counts += fmt::format("{}{} {}", counts.empty() ? "" : ", ", v, n);
  return fmt::format("all {} candidates failed{}", p.candidates,
                     counts.empty() ? "" : fmt::format(" (failed workloads by verdict: {})", counts));
}

void print_summary(const CampaignOutcome& r, const CampaignOptions& o) {
  fmt::print("{:<34} {:>10} {:>9} {:>7} {:>7} {:>12} {:>12} {:>9} {:>9} {:>6}  {}\n", "problem", "candidates", "measured",
             "gpu_min", "wall_min", "best_us", "ref_us", "speedup", "sol_score", "x_sol", "best");
  for (const auto& p : r.problems) {
    fmt::print("{:<34} {:>10} {:>9} {:>7.2f} {:>7.2f} {:>12} {:>12} {:>9} {:>9} {:>6}  {}{}\n", p.problem, p.candidates,
               p.measured_now, p.gpu_s / 60, p.wall_s / 60,
               p.solved ? fmt::format("{:.3f}", p.best_geomean_us) : "-",
               p.reference_geomean_us > 0 ? fmt::format("{:.3f}", p.reference_geomean_us) : "-",
               p.solved && p.reference_geomean_us > 0 ? fmt::format("{:.2f}x", p.reference_geomean_us / p.best_geomean_us) : "-",
               p.best_sol_score ? fmt::format("{:.3f}", *p.best_sol_score) : "-",
               p.best_sol_ratio ? fmt::format("{:.2f}", *p.best_sol_ratio) : "-",
               p.solved ? (p.best_dir / "best" / "solution.json").string() : "no passing candidate",
               p.stopped_at_sol    ? " (stopped: at speed-of-light)"
               : p.stopped_at_time ? " (stopped: --time-limit)"
               : !p.oracle_cut_short.empty() ? " (not searched: --oracle-time-limit; run again to go on)"
                                             : "");
  }
  for (const auto& p : r.problems)
    if (p.per_gpu.size() > 1) {
      std::string per;
      for (const auto& g : p.per_gpu)
        per += fmt::format("{}{} {}", per.empty() ? "" : ", ", g.gpu, g.passed ? fmt::format("{:.3f} us", g.geomean_us) : "failed");
      fmt::print("{}: incumbent on {} GPUs: {} (spread {:.1f}%)\n", p.problem, p.per_gpu.size(), per, 100 * p.gpu_spread);
    }
  const size_t nrun = std::max<size_t>(1, r.runners.size());
  fmt::print("measured {} candidates in {:.1f} s ({:.1f} candidates/min); judging {:.0f}% of wall time{}; store {}\n",
             r.measured, r.wall_s, r.candidates_per_minute(),
             r.wall_s > 0 ? 100.0 * r.measure_s / (r.wall_s * static_cast<double>(nrun)) : 0.0,
             nrun > 1 ? fmt::format(" per runner ({} runners)", nrun) : "", (o.out / "campaign.db").string());
  for (const auto& rs : r.runners)
    fmt::print("runner {} (device {}, {}): {} judged, {} restarts, busy {:.0f}% of wall time\n", rs.index, rs.device_id,
               rs.gpu, rs.judged, rs.restarts, r.wall_s > 0 ? 100.0 * rs.busy_s / r.wall_s : 0.0);
  for (const auto& p : r.problems)
    if (!p.composed.empty())
      fmt::print("{}: piecewise candidate {}: {}\n", p.problem, p.composed_won ? "(the best)" : "(not better)", p.composed);
  if (r.checks > 0) fmt::print("per-GPU checks of incumbents: {} measured now\n", r.checks);
  if (r.terminated) fmt::print("stopped early by SIGTERM: the same command resumes the campaign\n");
}

}  // namespace

void register_optimize(CLI::App& app) {
  static CampaignOptions o;
  static std::vector<std::string> problems, imports;
  static std::string agents, target, families;
  static double timeout_s = 60;
  auto* cmd = app.add_subcommand("optimize", "Run a campaign: agents search kernel families under a candidate budget; "
                                              "writes OUT/report.html (see `kernelarc report`)");
  cmd->footer(kExitStatus);
  cmd->add_option("PROBLEM", problems, "Problem folders")->required();
  cmd->add_option("--target", target, "cuda or host (default: cuda when a GPU is usable, else host)")
      ->check(CLI::IsMember({"cuda", "host"}));
  cmd->add_option("--budget", o.budget, "Candidates per problem")->capture_default_str()->check(CLI::Range(1, 100000));
  cmd->add_option("--agents", agents, "Comma list of agents (default: explorer,exploiter,modeler,transfer,library)");
  cmd->add_option("--sharing", o.sharing, "What agents see of each other: findings, none or full")
      ->capture_default_str()->check(CLI::IsMember({"findings", "none", "full"}));
  cmd->add_option("--seed", o.seed, "Seed of every agent")->capture_default_str();
  cmd->add_option("--out", o.out, "Campaign folder (its campaign.db makes re-runs resume)")->capture_default_str();
  cmd->add_option("--import-findings", imports, "Findings of earlier campaigns (their campaign.db), read-only");
  cmd->add_option("--families", families, "Folder of kernel families (default: the shipped families/)");
  cmd->add_option("--jobs", o.build_jobs, "Parallel builds (default: every core)");
  cmd->add_option("--gpus", o.gpus,
                  "Measurement runners: 'all' or device numbers, e.g. 0,1 (default: one, on $KERNELARC_GPU or 0); "
                  "on host, N numbers give N host runners");
  cmd->add_option("--depth", o.depth,
                  "Proposals made ahead of observations (default: min(jobs, 4), at least 2 per runner with several)")
      ->check(CLI::Range(1, 1000));
  cmd->add_option("--timeout", timeout_s, "Seconds a worker may take for one check or timing run")->capture_default_str();
  cmd->add_option("--iterations", o.eval.iterations, "Timed calls per measurement")->capture_default_str();
  cmd->add_option("--warmup", o.eval.warmup, "Untimed calls before timing")->capture_default_str();
  o.eval.cut_slow = 10;
  cmd->add_option("--cut-slow", o.eval.cut_slow,
                  "Where the reference takes >= --cut-min-reference-us a call, time a candidate first with 1 + 3 calls and keep that "
                  "as its timing there when it is this many times slower than the reference, instead of the full "
                  "protocol (recorded as 'cut' in the measurement; 0: every workload gets the full protocol)")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1e9));
  cmd->add_option("--cut-min-reference-us", o.eval.cut_min_reference_us,
                  "Probe (--cut-slow) only where the reference takes at least this many µs a call")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1e12));
  cmd->add_flag("--no-progress", [](int64_t) { o.progress = false; }, "No live progress line");
  cmd->add_flag("--no-sol", [](int64_t) { o.sol = false; },
                "No speed-of-light figures (by default: the device's calibration, measured once when missing, and "
                "the oracle's work count give each workload a SOL time, each candidate a SOL score)");
  cmd->add_option("--sol-stop", o.sol_stop,
                  "Stop a problem once its incumbent's geometric-mean time is within this fraction of "
                  "speed-of-light (0: spend the whole budget)")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1e9));
  cmd->add_option("--time-limit", o.time_limit_s,
                  "Seconds per problem: once passed, its agents propose no new candidates; those in flight finish "
                  "and the piecewise candidate is still judged (0: no limit, the budget ends a problem)")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1e9));
  cmd->add_option("--oracle-time-limit", o.eval.oracle_time_limit_s,
                  "Seconds the oracle may spend making a problem's input sets and reference outputs (0: an hour). "
                  "Past it the problem is not searched in this run: the sets made so far stay in the oracle cache "
                  "and a rerun goes on from them (for problems whose sets take longer than one sitting)")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1e9));
  cmd->add_option("--compile-budget", o.eval.compile_budget_s,
                  "With --time-compile: seconds the oracle may spend compiling and timing the reference under "
                  "torch.compile for a problem's workloads (0: 240); past it the later workloads have no compile "
                  "timing. torch.compile builds one graph per shape, so a problem of many shapes may need more")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1e9));
  cmd->add_flag("--no-compose", [](int64_t) { o.compose = false; },
                "Agents spend the whole budget (by default, on a problem with one var axis, the last candidate is a "
                "piecewise one: the incumbent with the candidates that beat it on some values of that axis, each "
                "serving its range)");
  cmd->add_flag("--retime-reference", [](int64_t) { o.eval.borrow_timings = false; },
                "Time the reference (and torch.compile's) here even where `kernelarc sol` measured it before on a GPU "
                "of the same name (its oracle-timings cache, which is used by default: those sets are then made "
                "untimed, several at once)");
  cmd->add_flag("--time-compile", o.eval.time_compile,
                "Also time the torch.compile'd reference (once per workload, when the oracle generates it): the SOL "
                "score's baseline is then the faster of eager and compiled");
  cmd->callback([] {
    for (const auto& p : problems) o.problems.emplace_back(p);
    for (const auto& i : imports) o.import_findings.emplace_back(i);
    if (!families.empty()) o.families = families;
    o.agents.clear();
    for (size_t s = 0; !agents.empty() && s <= agents.size();) {
      size_t e = agents.find(',', s);
      o.agents.push_back(agents.substr(s, e == std::string::npos ? std::string::npos : e - s));
      if (e == std::string::npos) break;
      s = e + 1;
    }
    o.target = target.empty() ? (std::system("nvidia-smi -L >/dev/null 2>&1") == 0 ? "cuda" : "host") : target;
    o.eval.timeout = std::chrono::milliseconds(static_cast<long>(timeout_s * 1000));
    CampaignOutcome r = run_campaign(o);
    print_summary(r, o);
    std::vector<ReportProblem> notes;  // r.problems is in o.problems' order, one per problem
    for (size_t i = 0; i < r.problems.size() && i < o.problems.size(); ++i)
      notes.push_back({o.problems[i], r.problems[i].solved ? "" : why_unsolved(r.problems[i], o.out / "campaign.db")});
    if (auto html = report_after_campaign(o.out, notes); !html.empty()) fmt::print("report {}\n", html.string());
    std::fflush(stdout);  // the summary first, then the reasons (stderr)
    bool all = true;
    for (size_t i = 0; i < r.problems.size(); ++i)
      if (!r.problems[i].solved) {
        all = false;
        fmt::print(stderr, "kernelarc: {}: no passing candidate: {}\n", r.problems[i].problem,
                   i < notes.size() ? notes[i].unsolved_reason : why_unsolved(r.problems[i], o.out / "campaign.db"));
      }
    set_exit_code(r.terminated ? 143 : all ? 0 : 1);
  });

  auto* run = app.add_subcommand("runner", "Internal: a campaign's measurement runner (started by optimize)");
  run->group("");  // hidden from --help
  run->callback([] { set_exit_code(runner_main()); });
}

}  // namespace ka::cli
