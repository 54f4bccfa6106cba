// tests/test_campaign.cpp — `kernelarc optimize` end to end on the host target: a campaign on a
// dev RMSNorm problem ends inside its budget with a best solution that `kernelarc eval` verifies;
// `kill -9` in the middle, then the same command, finishes with no measurement taken twice and
// the budget respected; a re-run of a finished campaign measures nothing; candidates get SOL
// scores and a problem at speed-of-light stops drawing budget; SIGTERM ends a campaign with its
// report written.
#include "util/resources.h"
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "engine/campaign.h"
#include "families/family.h"
#include "problem/problem.h"
#include "store/store.h"
#include "util/files.h"
#include "util/process.h"
#include "test_support.h"

namespace fs = std::filesystem;

namespace {

const fs::path kRoot = ka::source_root();

fs::path dev_problem() { return ka::dev_rmsnorm_problem(); }

std::vector<std::string> optimize_cmd(const fs::path& out, int budget) {
  return {KA_BINARY, "optimize", dev_problem().string(), "--target", "host", "--budget", std::to_string(budget),
          "--out", out.string(), "--seed", "7", "--iterations", "3", "--warmup", "1", "--no-progress", "--jobs", "2"};
}

std::vector<std::string> env(const fs::path& cache) { return {"KERNELARC_CACHE=" + cache.string()}; }

// The summary row of the problem: candidates, measured, gpu_min, wall_min (the search cost).
struct CostRow {
  int candidates = -1, measured = -1;
  double gpu_min = -1, wall_min = -1;
};

CostRow cost_row(const std::string& output, const std::string& problem) {
  CostRow c;
  std::istringstream in(output);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(problem + " ", 0) != 0) continue;
    std::istringstream f(line.substr(problem.size()));
    f >> c.candidates >> c.measured >> c.gpu_min >> c.wall_min;
  }
  return c;
}

struct Counts {
  size_t measurements = 0, distinct = 0, candidates = 0;
};

Counts counts(const fs::path& db) {
  Counts c;
  auto s = ka::Store::open_agent(db, "test-probe");
  auto ms = s->measurements();
  std::set<std::string> keys;
  for (const auto& m : ms) keys.insert(m.candidate + "/" + m.workload + "/" + m.gpu);
  c.measurements = ms.size();
  c.distinct = keys.size();
  c.candidates = s->candidates().size();
  return c;
}

}  // namespace

TEST(Campaign, HostCampaignEndsWithAVerifiedBestInsideItsBudget) {
  fs::path out = fs::path(KA_BUILD_DIR) / "test-campaign-a";
  fs::remove_all(out);
  fs::path cache = fs::path(KA_BUILD_DIR) / "test-cache";
  auto r = ka::run_command(optimize_cmd(out, 6), std::chrono::minutes(20), env(cache));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  Counts c = counts(out / "campaign.db");
  EXPECT_LE(c.candidates, 6u);
  EXPECT_GE(c.candidates, 1u);
  EXPECT_EQ(c.measurements, c.distinct);
  fs::path problem_dir;
  for (const auto& d : fs::directory_iterator(out))
    if (d.is_directory()) problem_dir = d.path();
  // The search cost per problem: what it measured, and the runner (GPU) time inside its wall time.
  const CostRow cost = cost_row(r.output, problem_dir.filename().string());
  EXPECT_EQ(cost.candidates, static_cast<int>(c.candidates)) << r.output;
  EXPECT_EQ(cost.measured, static_cast<int>(c.candidates)) << r.output;
  EXPECT_GT(cost.gpu_min, 0) << r.output;
  EXPECT_LE(cost.gpu_min, cost.wall_min + 0.01) << r.output;
  ASSERT_TRUE(fs::exists(problem_dir / "best" / "solution.json")) << r.output;
  EXPECT_TRUE(fs::exists(problem_dir / "leaderboard.md"));
  EXPECT_TRUE(fs::exists(problem_dir / "leaderboard.json"));
  EXPECT_TRUE(fs::exists(problem_dir / "findings.json"));
  EXPECT_TRUE(fs::exists(problem_dir / "best" / "solution_sol_execbench.json"));
  // The RMSNorm problem has one var axis: when the engine judged a piecewise candidate (it does when
  // some candidate beats the incumbent on some batch sizes), it is in the leaderboard as the
  // engine's, inside the budget, and the report says whether it won.
  if (r.output.find(": piecewise candidate (") != std::string::npos) {
    auto lb = nlohmann::json::parse(ka::read_text(problem_dir / "leaderboard.json"));
    int pieces = 0;
    for (const auto& row : lb)
      if (row["family"] == "piecewise") {
        ++pieces;
        EXPECT_EQ(row["agent"], "engine");
        EXPECT_GE(row["knobs"]["pieces"].size(), 2u);
      }
    EXPECT_EQ(pieces, 1) << r.output;
  }
  // The best solution is verified independently by the judge.
  auto v = ka::run_command({KA_BINARY, "eval", dev_problem().string(), "--solution", (problem_dir / "best" / "solution.json").string(),
                            "--iterations", "3", "--warmup", "1", "--no-reference-time"},
                           std::chrono::minutes(10), env(cache));
  EXPECT_EQ(v.exit_code, 0) << v.output;
  // Running the finished campaign again measures nothing.
  auto again = ka::run_command(optimize_cmd(out, 6), std::chrono::minutes(5), env(cache));
  EXPECT_EQ(again.exit_code, 0) << again.output;
  EXPECT_NE(again.output.find("measured 0 candidates"), std::string::npos) << again.output;
  EXPECT_EQ(cost_row(again.output, problem_dir.filename().string()).gpu_min, 0) << again.output;
  EXPECT_EQ(counts(out / "campaign.db").measurements, c.measurements);
}

TEST(Campaign, KillNineThenTheSameCommandMeasuresNothingTwice) {
  fs::path out = fs::path(KA_BUILD_DIR) / "test-campaign-kill";
  fs::remove_all(out);
  fs::path cache = fs::path(KA_BUILD_DIR) / "test-cache";
  const int budget = 8;
  {
    ka::Child c;
    c.start(optimize_cmd(out, budget), (fs::path(KA_BUILD_DIR) / "test-campaign-kill.log").string(), env(cache));
    auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(15);
    size_t seen = 0;
    while (std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      if (!fs::exists(out / "campaign.db")) continue;
      try {
        seen = counts(out / "campaign.db").candidates;
      } catch (...) {
        continue;
      }
      if (seen >= 3) break;
    }
    ASSERT_GE(seen, 3u) << "the campaign did not get going";
    ::kill(c.pid(), SIGKILL);  // kill -9 of kernelarc itself, mid-campaign
    c.reap(std::chrono::seconds(10));
  }
  Counts before = counts(out / "campaign.db");
  ASSERT_LT(before.candidates, static_cast<size_t>(budget)) << "killed too late to test a resume";
  auto r = ka::run_command(optimize_cmd(out, budget), std::chrono::minutes(20), env(cache));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  Counts after = counts(out / "campaign.db");
  EXPECT_EQ(after.measurements, after.distinct) << "a (candidate, workload) was measured twice";
  EXPECT_EQ(after.candidates, static_cast<size_t>(budget));
  // Nothing measured before the kill was measured again: the resumed run measured only the rest.
  EXPECT_NE(r.output.find(fmt::format("measured {} candidates", budget - before.candidates)), std::string::npos)
      << r.output;
}

// Every candidate gets a SOL score (host calibration + the oracle's work count), and a problem whose
// incumbent is within --sol-stop of speed-of-light stops drawing budget: with a stop factor no
// kernel can miss, the campaign ends after the candidates already in its pipeline.
TEST(Campaign, ScoresCandidatesAndStopsAtSpeedOfLight) {
  fs::path out = fs::path(KA_BUILD_DIR) / "test-campaign-sol";
  fs::remove_all(out);
  fs::path cache = fs::path(KA_BUILD_DIR) / "test-cache";
  auto cmd = optimize_cmd(out, 12);
  cmd.insert(cmd.end(), {"--sol-stop", "1e9", "--depth", "2"});
  auto r = ka::run_command(cmd, std::chrono::minutes(20), env(cache));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("(stopped: at speed-of-light)"), std::string::npos) << r.output;
  Counts c = counts(out / "campaign.db");
  EXPECT_GE(c.candidates, 1u);
  EXPECT_LE(c.candidates, 3u) << "proposals went on after the incumbent reached the stop";
  fs::path problem_dir;
  for (const auto& d : fs::directory_iterator(out))
    if (d.is_directory()) problem_dir = d.path();
  auto lb = nlohmann::json::parse(ka::read_text(problem_dir / "leaderboard.json"));
  ASSERT_FALSE(lb.empty());
  ASSERT_TRUE(lb[0]["sol_score"].is_number()) << lb.dump(1);
  ASSERT_TRUE(lb[0]["sol_ratio"].is_number()) << lb.dump(1);
  EXPECT_GT(lb[0]["sol_ratio"].get<double>(), 0.0);
  EXPECT_NE(ka::read_text(problem_dir / "leaderboard.md").find("SOL score"), std::string::npos);
  // The stop is logged with its reason.
  auto s = ka::Store::open_agent(out / "campaign.db", "test-probe");
  bool logged = false;
  for (const auto& m : s->budget_moves()) logged |= m.agent == "engine" && m.reason.find("speed-of-light") != std::string::npos;
  EXPECT_TRUE(logged);
}

// SIGTERM (what `timeout` sends) ends a campaign gracefully: no new proposals, what is in flight
// is recorded, the outputs and the report are written, and the exit status says it stopped early.
// `timeout` signals its child and then the whole process group, so a second SIGTERM right after
// the first is the same request (here 0.2 s apart, as a loaded machine may deliver them).
TEST(Campaign, SigtermStopsProposingAndWritesTheReport) {
  fs::path out = fs::path(KA_BUILD_DIR) / "test-campaign-term";
  fs::remove_all(out);
  fs::path cache = fs::path(KA_BUILD_DIR) / "test-cache";
  std::string line;
  for (const auto& a : optimize_cmd(out, 200)) line += "'" + a + "' ";
  const std::vector<std::string> cmd{
      "sh", "-c", line + "& p=$!; sleep 25; kill -TERM $p; sleep 0.2; kill -TERM $p; wait $p"};
  auto r = ka::run_command(cmd, std::chrono::minutes(10), env(cache));
  ASSERT_EQ(r.exit_code, 143) << r.output;
  EXPECT_NE(r.output.find("stopped early by SIGTERM"), std::string::npos) << r.output;
  Counts c = counts(out / "campaign.db");
  EXPECT_LT(c.candidates, 200u);
  EXPECT_EQ(c.measurements, c.distinct);
  bool wrote = false;
  for (const auto& d : fs::directory_iterator(out)) wrote |= d.is_directory() && fs::exists(d.path() / "leaderboard.md");
  EXPECT_TRUE(wrote) << r.output;
}

// --time-limit ends a problem's search on time rather than on budget: the first candidates are
// judged, nothing new is proposed after the limit, the problem still ends with a verified best and
// its report, and the summary says why it stopped (exit 0: not an interruption).
TEST(Campaign, TimeLimitEndsTheSearchWithItsResults) {
  fs::path out = fs::path(KA_BUILD_DIR) / "test-campaign-time";
  fs::remove_all(out);
  fs::path cache = fs::path(KA_BUILD_DIR) / "test-cache";
  auto cmd = optimize_cmd(out, 200);
  cmd.insert(cmd.end(), {"--time-limit", "0.001"});
  auto r = ka::run_command(cmd, std::chrono::minutes(10), env(cache));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("(stopped: --time-limit)"), std::string::npos) << r.output;
  Counts c = counts(out / "campaign.db");
  EXPECT_GE(c.candidates, 1u);
  EXPECT_LE(c.candidates, 3u) << r.output;  // the first proposals (depth 2 with --jobs 2), a piecewise one
  EXPECT_EQ(c.measurements, c.distinct);
  bool best = false;
  for (const auto& d : fs::directory_iterator(out)) best |= d.is_directory() && fs::exists(d.path() / "best" / "solution.json");
  EXPECT_TRUE(best) << r.output;
}

// --oracle-time-limit: an oracle that cannot make every input set in time leaves the problem
// unsearched (no candidate is judged on missing sets, whose workloads would count as failed for
// good), says so, keeps what it made, and the same command without the limit goes on from there.
TEST(Campaign, OracleTimeLimitLeavesTheProblemForARerun) {
  fs::path out = fs::path(KA_BUILD_DIR) / "test-campaign-oracle-limit";
  fs::path cache = fs::path(KA_BUILD_DIR) / "test-cache-oracle-limit";  // cold: the oracle must run
  fs::remove_all(out);
  fs::remove_all(cache);
  auto cmd = optimize_cmd(out, 2);
  cmd.insert(cmd.end(), {"--oracle-time-limit", "1"});  // a Python start with torch takes longer
  auto r = ka::run_command(cmd, std::chrono::minutes(10), env(cache));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("(not searched: --oracle-time-limit; run again to go on)"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("input sets within its time limit of 1 s"), std::string::npos) << r.output;
  EXPECT_EQ(counts(out / "campaign.db").candidates, 0u);
  auto again = ka::run_command(optimize_cmd(out, 2), std::chrono::minutes(10), env(cache));
  ASSERT_EQ(again.exit_code, 0) << again.output;
  EXPECT_GE(counts(out / "campaign.db").candidates, 1u);
}

// Two agents proposing the same point make one candidate: the store's key ignores the author (the
// six-problem GEMM campaign of 2026-12-04 judged every transferred seed twice, once per agent).
TEST(Campaign, CandidateIdentityIgnoresTheProposingAgent) {
  ka::Family f = ka::load_family(kRoot / "families" / "rmsnorm_host");
  ka::Problem p = ka::load_problem(kRoot / "examples" / "problems" / "rmsnorm_h128");
  ka::Knobs k{{"CHUNK", 4}, {"UNROLL", 2}, {"ACC", 0}, {"WORKERS", 1}};
  ka::Candidate a = f.instantiate(k, p), b = f.instantiate(k, p);
  a.author = "explorer";
  b.author = "transfer";
  EXPECT_EQ(ka::candidate_hash(a), ka::candidate_hash(b));
  k["UNROLL"] = 4;
  ka::Candidate c = f.instantiate(k, p);
  c.author = "explorer";
  EXPECT_NE(ka::candidate_hash(a), ka::candidate_hash(c));
}

// A family's seeds (points measured good elsewhere) are judged first even when the explorer gets
// one turn: the exploiter, with nothing known yet, takes the seed that is not already in flight.
TEST(Campaign, EverySeedIsJudgedWhenTheBudgetGivesTheExplorerOneTurn) {
  const fs::path root = fs::path(KA_BUILD_DIR) / "test-campaign-seeds", fams = root / "families", out = root / "out";
  fs::remove_all(root);
  fs::create_directories(fams);
  fs::copy(kRoot / "families" / "rmsnorm_host", fams / "rmsnorm_host");
  auto fj = nlohmann::json::parse(ka::read_text(fams / "rmsnorm_host" / "family.json"));
  const nlohmann::json s1 = {{"CHUNK", 4}, {"UNROLL", 8}, {"ACC", 0}, {"WORKERS", 1}};
  const nlohmann::json s2 = {{"CHUNK", 16}, {"UNROLL", 2}, {"ACC", 1}, {"WORKERS", 2}};
  fj["seeds"] = {{{"knobs", s1}, {"why", "test"}}, {{"knobs", s2}, {"why", "test"}}};
  ka::write_atomic(fams / "rmsnorm_host" / "family.json", fj.dump(1));
  std::vector<std::string> cmd = optimize_cmd(out, 2);
  for (const char* a : {"--families", "", "--agents", "explorer,exploiter", "--no-compose"}) cmd.push_back(a);
  cmd[cmd.size() - 4] = fams.string();
  auto r = ka::run_command(cmd, std::chrono::minutes(10), env(fs::path(KA_BUILD_DIR) / "test-cache"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  fs::path problem_dir;
  for (const auto& d : fs::directory_iterator(out))
    if (d.is_directory()) problem_dir = d.path();
  std::map<std::string, nlohmann::json> by_agent;
  for (const auto& row : nlohmann::json::parse(ka::read_text(problem_dir / "leaderboard.json")))
    by_agent[row["agent"].get<std::string>()] = row["knobs"];
  ASSERT_EQ(by_agent.size(), 2u) << r.output;
  EXPECT_EQ(by_agent["explorer"], s1);
  EXPECT_EQ(by_agent["exploiter"], s2);
}

// Exit status: a problem that got no passing candidate makes the campaign exit 1, with one line
// saying why per problem: here one whose op type no family serves (not searched) and one whose
// every candidate gives a wrong answer (a family that leaves the output untouched).
TEST(Campaign, ExitsOneWithAReasonPerProblemWithoutAPassingCandidate) {
  const fs::path root = fs::path(KA_BUILD_DIR) / "test-campaign-unsolved", fams = root / "families", out = root / "out";
  fs::remove_all(root);
  const fs::path example = kRoot / "examples" / "problems" / "rmsnorm_h128", other = root / "no_family";
  fs::create_directories(other);
  fs::copy(example, other, fs::copy_options::recursive);
  auto def = nlohmann::json::parse(ka::read_text(other / "definition.json"));
  def["name"] = "no_family_example";
  def["op_type"] = "no_such_op";
  ka::write_atomic(other / "definition.json", def.dump(1));
  fs::create_directories(fams / "wrong_host");
  ka::write_atomic(fams / "wrong_host" / "family.json", R"json({
  "name": "wrong_host", "target": "host", "source": "wrong.cpp", "entry": "run",
  "description": "test family: leaves the output alone (a wrong answer)",
  "applies_to": {"op_types": ["rmsnorm"], "dtypes": ["bfloat16"], "requires_axes": ["hidden_size"]},
  "knobs": {"A": [0, 1, 2]}, "compile_options": {"cflags": ["-O0"], "ld_flags": []}
})json");
  ka::write_atomic(fams / "wrong_host" / "wrong.cpp",
                   "#include <kernelarc/abi.h>\nvoid run(const ka::TensorArg&, const ka::TensorArg&, const ka::TensorArg&) {}\n");
  std::vector<std::string> cmd{KA_BINARY, "optimize", other.string(), example.string(), "--target", "host", "--budget", "2",
                               "--out", out.string(), "--families", fams.string(), "--no-sol", "--no-compose",
                               "--iterations", "3", "--warmup", "1", "--no-progress", "--jobs", "2"};
  auto r = ka::run_command(cmd, std::chrono::minutes(10), env(fs::path(KA_BUILD_DIR) / "test-cache"));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("kernelarc: no_family_example: no passing candidate: not searched: no host kernel family applies "
                          "(op type no_such_op)"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("kernelarc: 021_rmsnorm_h128: no passing candidate: all 2 candidates failed"), std::string::npos)
      << r.output;
  // The report says the same per problem.
  auto report = nlohmann::json::parse(ka::read_text(out / "report.json"));
  ASSERT_EQ(report["problems"].size(), 2u) << report.dump(1).substr(0, 2000);
  for (const auto& p : report["problems"]) {
    EXPECT_TRUE(p["best"].is_null());
    EXPECT_FALSE(p["unsolved_reason"].get<std::string>().empty()) << p["name"];
  }
}
