// tests/test_runners.cpp — several measurement runners in one campaign (`optimize --gpus`), on the
// host target where `--gpus 0,1,2` means three host runner processes: dispatch uses every runner
// and measures nothing twice, and checks the incumbent on each runner; the same seed and depth
// give the same proposals with one runner and with three; a runner killed with a candidate in
// flight is restarted and the candidate judged exactly once; a runner that keeps dying stops the
// campaign with a clear error, and the same command then resumes; bad --gpus lists are refused.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include <fmt/format.h>

#include "store/store.h"
#include "util/process.h"
#include "test_support.h"

namespace fs = std::filesystem;

namespace {

fs::path dev_problem() { return ka::dev_rmsnorm_problem(); }

size_t workload_count() {
  std::ifstream f(dev_problem() / "workload.jsonl");
  size_t n = 0;
  for (std::string line; std::getline(f, line);) n += line.find_first_not_of(" \t\r") != std::string::npos;
  return n;
}

fs::path out_dir(const std::string& name) {
  fs::path out = fs::path(KA_BUILD_DIR) / ("test-runners-" + name);
  fs::remove_all(out);
  return out;
}

ka::RunResult optimize(const fs::path& out, int budget, std::vector<std::string> extra, std::vector<std::string> env = {}) {
  std::vector<std::string> cmd{KA_BINARY, "optimize",  dev_problem().string(), "--target", "host", "--budget",
                               std::to_string(budget), "--out", out.string(), "--iterations", "3", "--warmup", "1",
                               "--no-progress", "--jobs", "2"};
  cmd.insert(cmd.end(), extra.begin(), extra.end());
  env.push_back("KERNELARC_CACHE=" + (fs::path(KA_BUILD_DIR) / "test-cache").string());
  return ka::run_command(cmd, std::chrono::minutes(4), env);  // a lost candidate would hang
}

// What a campaign's store says about each candidate, in proposal order (seq).
struct Row {
  ka::CandidateRecord c;
  std::vector<ka::Measurement> search, checks;  // the search's measurements; per-GPU checks
};

std::vector<Row> rows(const fs::path& db) {
  auto s = ka::Store::open_agent(db, "test-probe");
  std::vector<Row> out;
  for (auto& c : s->candidates()) {
    Row r{c, {}, {}};
    for (auto& m : s->measurements_of(c.hash)) (m.extra.contains("check") ? r.checks : r.search).push_back(m);
    out.push_back(std::move(r));
  }
  return out;
}

// No (candidate, workload, gpu) twice, and every candidate judged once: all its workloads, on one GPU.
void expect_each_judged_once(const std::vector<Row>& rs) {
  const size_t w = workload_count();
  std::set<std::string> keys;
  size_t n = 0;
  for (const auto& r : rs) {
    std::set<std::string> gpus;
    for (const auto& m : r.search) gpus.insert(m.gpu);
    EXPECT_EQ(r.search.size(), w) << r.c.solution.value("name", r.c.hash);
    EXPECT_EQ(gpus.size(), 1u) << r.c.solution.value("name", r.c.hash);
    for (const auto* ms : {&r.search, &r.checks})
      for (const auto& m : *ms) {
        keys.insert(m.candidate + "/" + m.workload + "/" + m.gpu);
        ++n;
      }
  }
  EXPECT_EQ(keys.size(), n) << "a (candidate, workload, gpu) was measured twice";
}

// A host family made for the determinism test: every candidate leaves its output untouched (a
// wrong answer, so no timing and no incumbent moves the budget), after sleeping 30 ms × SLEEP per
// call, so that runners finish out of proposal order.
fs::path sleepy_families() {
  fs::path dir = fs::path(KA_BUILD_DIR) / "test-runners-families" / "sleepy_host";
  fs::create_directories(dir);
  std::ofstream(dir / "family.json") << R"({
  "name": "sleepy_host", "target": "host", "source": "sleepy.cpp", "entry": "run",
  "description": "test family: sleeps, then leaves the output alone",
  "applies_to": {"op_types": ["rmsnorm", "fused_add_rmsnorm"], "dtypes": ["bfloat16"], "requires_axes": ["hidden_size"]},
  "knobs": {"SLEEP": [0, 1, 2, 3], "A": [0, 1, 2, 3, 4], "B": [0, 1, 2]},
  "compile_options": {"cflags": ["-O0"], "ld_flags": []}
}
)";
  std::ofstream(dir / "sleepy.cpp") << R"(#include <kernelarc/abi.h>
#include <chrono>
#include <thread>
void run(const ka::TensorArg&, const ka::TensorArg&, const ka::TensorArg&) {
  std::this_thread::sleep_for(std::chrono::milliseconds(30 * KA_SLEEP));
}
)";
  return dir.parent_path();
}

}  // namespace

TEST(Runners, ThreeHostRunnersShareTheWorkAndCheckTheIncumbent) {
  fs::path out = out_dir("dispatch");
  const int budget = 9;
  auto r = optimize(out, budget, {"--seed", "7", "--gpus", "0,1,2"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  auto rs = rows(out / "campaign.db");
  EXPECT_GE(rs.size(), 1u);
  EXPECT_LE(rs.size(), static_cast<size_t>(budget));
  expect_each_judged_once(rs);
  std::map<std::string, int> per_runner;  // gpu identity -> candidates it judged in the search
  for (const auto& row : rs)
    if (!row.search.empty()) ++per_runner[row.search.front().gpu];
  EXPECT_EQ(per_runner.size(), 3u) << r.output;
  for (const char* g : {"host:0", "host:1", "host:2"}) EXPECT_GE(per_runner[g], 1) << g << "\n" << r.output;
  for (int i = 0; i < 3; ++i)
    EXPECT_NE(r.output.find(fmt::format("runner {} (device {}, host:{})", i, i, i)), std::string::npos) << r.output;
  // The incumbent was measured on the two runners that did not measure it, and the leaderboard
  // gives its time on each with the spread.
  size_t checked = 0;
  for (const auto& row : rs) checked += row.checks.size();
  EXPECT_EQ(checked, 2 * workload_count());
  fs::path problem_dir;
  for (const auto& d : fs::directory_iterator(out))
    if (d.is_directory()) problem_dir = d.path();
  auto lb = nlohmann::json::parse(std::ifstream(problem_dir / "leaderboard.json"));
  ASSERT_TRUE(lb.is_array() && !lb.empty());
  ASSERT_TRUE(lb[0].contains("per_gpu")) << lb[0].dump();
  EXPECT_EQ(lb[0]["per_gpu"].size(), 3u);
  EXPECT_GE(lb[0]["gpu_spread"].get<double>(), 0.0);
  std::ifstream md(problem_dir / "leaderboard.md");
  std::string text((std::istreambuf_iterator<char>(md)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("per-GPU check of the incumbent"), std::string::npos);
}

TEST(Runners, SameSeedAndDepthGiveTheSameProposalsWithOneOrThreeRunners) {
  const fs::path fams = sleepy_families();
  const int budget = 12;
  auto run = [&](const std::string& name, const std::string& gpus) {
    fs::path out = out_dir(name);
    auto r = optimize(out, budget,
                      {"--seed", "11", "--gpus", gpus, "--depth", "6", "--sharing", "full", "--families", fams.string()});
    EXPECT_EQ(r.exit_code, 1) << r.output;  // no candidate passes (by design)
    EXPECT_NE(r.output.find("no passing candidate"), std::string::npos) << r.output;
    return rows(out / "campaign.db");
  };
  auto one = run("same-seed-1", "0"), three = run("same-seed-3", "0,1,2");
  auto sequence = [](const std::vector<Row>& rs) {
    std::vector<std::string> s;
    for (const auto& r : rs) s.push_back(fmt::format("{} {} {} {}", r.c.seq, r.c.agent, r.c.family, r.c.knobs.dump()));
    return s;
  };
  ASSERT_EQ(one.size(), static_cast<size_t>(budget));
  EXPECT_EQ(sequence(one), sequence(three));
  expect_each_judged_once(three);
  // The test means something only if the three runners finished out of proposal order: some
  // candidate's results were recorded before those of one proposed earlier. (The first run left
  // every build in the cache, so the three runners start together and the sleeps decide.)
  std::vector<int64_t> first_id;
  for (const auto& r : three) first_id.push_back(r.search.empty() ? 0 : r.search.front().id);
  EXPECT_FALSE(std::is_sorted(first_id.begin(), first_id.end())) << "the runners finished in proposal order";
}

TEST(Runners, AKilledRunnerIsRestartedAndItsCandidateJudgedOnce) {
  fs::path out = out_dir("kill");
  const int budget = 6;
  auto r = optimize(out, budget, {"--seed", "7", "--gpus", "0,1"}, {"KERNELARC_TEST_KILL_RUNNER_AFTER=3"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string tag = "failed with candidate ";
  auto at = r.output.find(tag);
  ASSERT_NE(at, std::string::npos) << "no runner died:\n" << r.output;
  EXPECT_NE(r.output.find("re-queued"), std::string::npos) << r.output;
  const std::string killed = r.output.substr(at + tag.size(), r.output.find(' ', at + tag.size()) - at - tag.size());
  EXPECT_NE(r.output.find("1 restarts"), std::string::npos) << r.output;
  auto rs = rows(out / "campaign.db");
  EXPECT_EQ(rs.size(), static_cast<size_t>(budget));
  expect_each_judged_once(rs);
  bool found = false;
  for (const auto& row : rs)
    if (row.c.solution.value("name", "") == killed) {
      found = true;
      EXPECT_EQ(row.search.size(), workload_count());
    }
  EXPECT_TRUE(found) << "the candidate in flight when its runner died (" << killed << ") was lost\n" << r.output;
}

TEST(Runners, ARunnerThatKeepsDyingStopsTheCampaignAndTheSameCommandResumes) {
  fs::path out = out_dir("cap");
  const int budget = 3;
  auto r = optimize(out, budget, {"--seed", "5"}, {"KERNELARC_TEST_KILL_RUNNER_AFTER=1,2,3"});
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("failed 3 times in a row"), std::string::npos) << r.output;
  auto again = optimize(out, budget, {"--seed", "5"});
  ASSERT_EQ(again.exit_code, 0) << again.output;
  auto rs = rows(out / "campaign.db");
  EXPECT_EQ(rs.size(), static_cast<size_t>(budget));
  expect_each_judged_once(rs);
}

TEST(Runners, BadGpuListsAreUserErrors) {
  for (const char* gpus : {"0,0", "x", "1,,2", "-1"}) {
    auto r = optimize(out_dir("bad-gpus"), 1, {"--gpus", gpus});
    EXPECT_EQ(r.exit_code, 2) << gpus << ": " << r.output;
    EXPECT_NE(r.output.find("--gpus"), std::string::npos) << r.output;
  }
}
