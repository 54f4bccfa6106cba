// tests/test_engine.cpp — the campaign loop's parts on their own (engine/*.h): the budget policy,
// the stop rules, the reorder buffer, scoring, the store writes of a judged job, the outputs
// (leaderboard, per-GPU table) and the progress line. The loop itself runs end to end in
// test_campaign.cpp and test_runners.cpp.
#include "util/resources.h"
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "engine/budget.h"
#include "engine/outputs.h"
#include "engine/pipeline.h"
#include "engine/piecewise.h"
#include "engine/recorder.h"
#include "engine/scoring.h"
#include "engine/stop_rules.h"
#include "families/family.h"
#include "util/files.h"

namespace ka {
namespace {

namespace fs = std::filesystem;

Measurement meas(int64_t id, const std::string& cand, const std::string& workload, const std::string& verdict,
                 double us, double ref_us, const std::string& gpu = "GPU-0") {
  Measurement m;
  m.id = id;
  m.candidate = cand;
  m.problem = "p";
  m.workload = workload;
  m.verdict = verdict;
  m.median_us = us;
  m.reference_us = ref_us;
  m.device = "H100";
  m.gpu = gpu;
  return m;
}

TEST(Budget, EqualSharesTakeTurnsInAgentOrder) {
  ShareBudget b(3);
  std::vector<int> order;
  for (int i = 0; i < 6; ++i) {
    order.push_back(b.next());
    b.proposed(static_cast<size_t>(order.back()));
  }
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 0, 1, 2}));
}

TEST(Budget, AnImprovingAgentGetsMoreTurnsARetiredOneNone) {
  ShareBudget b(2);
  ShareChange up = b.improved(1);
  EXPECT_DOUBLE_EQ(up.before, 0.5);
  EXPECT_DOUBLE_EQ(up.after, 0.6);  // 0.75 / 1.25
  EXPECT_DOUBLE_EQ(b.share(0), 0.4);
  int turns1 = 0;
  for (int i = 0; i < 10; ++i) {
    const int a = b.next();
    turns1 += a == 1;
    b.proposed(static_cast<size_t>(a));
  }
  EXPECT_EQ(turns1, 6);
  ShareChange gone = b.retire(1);
  EXPECT_DOUBLE_EQ(gone.before, 0.6);
  EXPECT_DOUBLE_EQ(gone.after, 0.0);
  EXPECT_DOUBLE_EQ(b.share(0), 1.0);
  EXPECT_EQ(b.next(), 0);
  b.retire(0);
  EXPECT_EQ(b.next(), -1);
}

TEST(StopRules, SpeedOfLightStopsOnceWithinTheMargin) {
  StopRules r(0.05, 0);
  EXPECT_FALSE(r.incumbent_at(std::nullopt));
  EXPECT_FALSE(r.incumbent_at(1.2));
  EXPECT_FALSE(r.stopped());
  EXPECT_TRUE(r.incumbent_at(1.04));
  EXPECT_TRUE(r.at_sol());
  EXPECT_FALSE(r.incumbent_at(1.01));  // fires once
  StopRules never(0, 0);
  EXPECT_FALSE(never.incumbent_at(1.0));
  EXPECT_FALSE(never.elapsed(1e9, 10));
}

TEST(StopRules, ATimeBelowTheBoundProvesTheBoundWrongAndNeverStops) {
  StopRules r(0.05, 0);
  EXPECT_TRUE(r.incumbent_at(0.95));  // within noise of the bound: not suspect, and within the margin
  EXPECT_FALSE(r.bound_suspect());
  StopRules wrong(0.05, 0);
  EXPECT_FALSE(wrong.incumbent_at(0.7));
  EXPECT_TRUE(wrong.bound_suspect());
  EXPECT_FALSE(wrong.incumbent_at(1.01));  // the bound stays distrusted for the problem
  EXPECT_FALSE(wrong.at_sol());
  StopRules wide(1e9, 0);  // a margin that wide takes any time as at speed-of-light
  EXPECT_TRUE(wide.incumbent_at(0.01));
  EXPECT_FALSE(wide.bound_suspect());
}

TEST(StopRules, TheTimeLimitCountsOnlyOnceSomethingWasProposed) {
  StopRules r(0, 10);
  EXPECT_FALSE(r.elapsed(5, 3));
  EXPECT_FALSE(r.elapsed(20, 0));
  EXPECT_TRUE(r.elapsed(20, 1));
  EXPECT_TRUE(r.time_up());
  EXPECT_FALSE(r.at_sol());
  EXPECT_FALSE(r.elapsed(30, 2));  // fires once
}

Slot measured_slot(const std::string& hash, int64_t order) {
  Slot s;
  s.hash = hash;
  s.job = std::make_shared<Job>();
  s.job->order = order;
  return s;
}

TEST(Pipeline, ResultsArriveInAnyOrderAndLeaveInProposalOrder) {
  Pipeline q;
  q.push(measured_slot("a", 1));
  Slot dup;
  dup.hash = "a";
  dup.replay = true;
  q.push(dup);
  q.push(measured_slot("b", 2));
  EXPECT_TRUE(q.holds("a"));
  EXPECT_FALSE(q.holds("c"));
  EXPECT_FALSE(q.front_ready());
  Job j2;
  j2.order = 2;
  q.judged(j2).recorded = true;  // b first
  EXPECT_FALSE(q.front_ready());
  Job j1;
  j1.order = 1;
  q.judged(j1).recorded = true;
  ASSERT_TRUE(q.front_ready());
  EXPECT_EQ(q.pop().hash, "a");
  ASSERT_TRUE(q.front_ready());
  EXPECT_TRUE(q.pop().replay);
  EXPECT_EQ(q.pop().hash, "b");
  EXPECT_TRUE(q.empty());
  EXPECT_THROW(q.judged(j1), std::out_of_range);  // each job is recorded once
}

TEST(Scoring, GeomeanOverWorkloadsOnlyWhenEveryOnePassed) {
  Scored s = score({meas(1, "c", "w1", "passed", 2, 8), meas(2, "c", "w2", "passed", 8, 8)});
  EXPECT_TRUE(s.passed);
  EXPECT_DOUBLE_EQ(s.geomean_us, 4);
  EXPECT_DOUBLE_EQ(s.ref_geomean_us, 8);
  EXPECT_EQ(s.ids, (std::vector<int64_t>{1, 2}));
  Scored f = score({meas(1, "c", "w1", "passed", 2, 8), meas(2, "c", "w2", "incorrect", 0, 8)});
  EXPECT_FALSE(f.passed);
  EXPECT_EQ(f.passed_workloads, 1);
  EXPECT_EQ(f.geomean_us, 0);
  EXPECT_FALSE(score({}).passed);
}

TEST(Scoring, ACandidatesOwnMeasurementsAreThoseOfItsFirstGpu) {
  auto ms = primary({meas(7, "c", "w1", "passed", 3, 8, "GPU-1"), meas(4, "c", "w1", "passed", 2, 8, "GPU-0"),
                     meas(5, "c", "w2", "passed", 2, 8, "GPU-0")});
  ASSERT_EQ(ms.size(), 2u);
  EXPECT_EQ(ms[0].gpu, "GPU-0");
  EXPECT_EQ(ms[1].id, 5);
}

Job judged_job() {
  Job job;
  job.order = 1;
  job.runner = 1;
  job.seconds = 2.5;
  job.build.seconds = 1.5;
  job.build.cached = false;
  WorkloadResult a;
  a.uuid = "w1";
  a.verdict = "passed";
  a.median_us = 3;
  a.reference_us = 9;
  a.attempts = 1;
  a.cut = true;
  WorkloadResult b = a;
  b.uuid = "w2";
  b.cut = false;
  b.compile_us = 4;
  job.workloads = {a, b};
  return job;
}

TEST(Recorder, AJudgedJobBecomesOneMeasurementPerWorkloadWithItsRunnersIdentity) {
  auto ms = job_measurements(judged_job(), "h", "p", {"H100", "GPU-b"}, 4, false);
  ASSERT_EQ(ms.size(), 2u);
  EXPECT_EQ(ms[0].candidate, "h");
  EXPECT_EQ(ms[0].workload, "w1");
  EXPECT_EQ(ms[0].gpu, "GPU-b");
  EXPECT_EQ(ms[0].device, "H100");
  EXPECT_EQ(ms[0].extra.at("runner"), 1);
  EXPECT_EQ(ms[0].extra.at("cut"), "probe of 1 + 3 calls: slower than 4x the reference");
  EXPECT_FALSE(ms[0].extra.contains("check"));
  EXPECT_EQ(ms[1].extra.at("compile_us"), 4.0);
  EXPECT_FALSE(ms[1].extra.contains("cut"));
  auto check = job_measurements(judged_job(), "h", "p", {"H100", "GPU-b"}, 4, true);
  EXPECT_EQ(check[0].extra.at("check"), "incumbent");
}

TEST(Recorder, RecordsThroughTheStoreAndCountsTheCost) {
  const fs::path dir = make_temp_dir("ka_engine_");
  auto store = Store::open_judge(dir / "campaign.db");
  Recorder rec(*store, "p", {{"H100", "GPU-a"}, {"H100", "GPU-b"}}, 4);
  CandidateRecord c;
  c.hash = "h";
  c.problem = "p";
  c.family = "f";
  c.knobs = nlohmann::json::object();
  c.agent = "explorer";
  c.seq = 1;
  c.solution = {{"name", "h"}};
  auto ms = rec.record("h", judged_job(), c);
  ASSERT_EQ(ms.size(), 2u);
  EXPECT_GT(ms[0].id, 0);
  EXPECT_EQ(store->measurements_of("h").size(), 2u);
  Job check = judged_job();  // a per-GPU check on the other runner: runner time, no build time
  check.runner = 0;
  auto checked = rec.record("h", check, std::nullopt);
  EXPECT_EQ(checked[0].gpu, "GPU-a");
  EXPECT_EQ(checked[0].extra.at("check"), "incumbent");
  EXPECT_EQ(store->measurements_of("h").size(), 4u);
  EXPECT_DOUBLE_EQ(rec.gpu_s(), 5.0);
  EXPECT_DOUBLE_EQ(rec.build_s(), 1.5);
  fs::remove_all(dir);
}

TEST(Outputs, TheIncumbentPerGpuAndItsSpread) {
  const fs::path dir = make_temp_dir("ka_engine_");
  auto store = Store::open_judge(dir / "campaign.db");
  for (const char* h : {"best", "other"}) {
    CandidateRecord c;
    c.hash = h;
    c.problem = "p";
    c.knobs = nlohmann::json::object();
    c.solution = {{"name", h}};
    store->record_candidate(c);
  }
  std::vector<Measurement> ms = {meas(0, "best", "w1", "passed", 10, 20, "GPU-0"),
                                 meas(0, "other", "w1", "passed", 12, 20, "GPU-2"),
                                 meas(0, "best", "w1", "passed", 11, 20, "GPU-1")};
  for (auto& m : ms) store->record_measurement(m);
  EXPECT_TRUE(incumbent_per_gpu(*store, "p", "").gpus.empty());
  PerGpu pg = incumbent_per_gpu(*store, "p", "best");
  ASSERT_EQ(pg.gpus.size(), 2u);
  EXPECT_EQ(pg.gpus[0].gpu, "GPU-0");
  EXPECT_FALSE(pg.gpus[0].check);
  EXPECT_TRUE(pg.gpus[1].check);
  EXPECT_NEAR(pg.spread, 0.1, 1e-12);
  EXPECT_EQ(pg.unchecked, std::vector<std::string>{"GPU-2"});
  fs::remove_all(dir);
}

TEST(Outputs, TheProgressLineNamesTheBestAndTheRate) {
  ProgressState s;
  s.problem = "rms";
  s.candidates = 3;
  s.budget = 8;
  s.candidates_per_minute = 12;
  EXPECT_EQ(progress_line(s), "rms | 3/8 candidates | best none yet | 12.0 candidates/min");
  s.best_us = 2;
  s.best_ref_us = 5;
  s.sol_score = 0.5;
  EXPECT_EQ(progress_line(s), "rms | 3/8 candidates | best 2.00 us (2.50x ref), SOL score 0.500 | 12.0 candidates/min");
}

// Two rmsnorm candidates, one faster on small batches and one on large ones: the composition
// policy proposes their piecewise candidate; when one is faster everywhere, none.
TEST(Piecewise, TwoCandidatesThatWinOnDifferentRangesAreComposed) {
  const fs::path root = ka::source_root();
  Problem p = load_problem(root / "examples/problems/rmsnorm_h128");
  const std::vector<DispatchAxis> axes = dispatch_axes(p.def);
  ASSERT_FALSE(axes.empty());
  Family f = load_family(root / "families/rmsnorm_host");
  auto space = f.space(p);
  ASSERT_GE(space.size(), 2u);
  std::map<std::string, CandidateRecord> known;
  for (const char* h : {"small", "large"}) {
    Candidate c = f.instantiate(space[known.size()], p);
    c.definition = p.def.name;
    known[h].solution = to_native_json(c);
  }
  int64_t lo = 0, hi = 0;
  for (const auto& w : p.workloads) {
    const int64_t b = w.axes.at(axes[0].axis);
    lo = lo ? std::min(lo, b) : b;
    hi = std::max(hi, b);
  }
  ASSERT_LT(lo, hi);
  auto timings = [&](double small_us, double large_us) {
    std::vector<Measurement> ms;
    for (const auto& w : p.workloads)
      ms.push_back(meas(0, "x", w.uuid, "passed", w.axes.at(axes[0].axis) == lo ? small_us : large_us, 100));
    return score(ms);
  };
  const Scored small = timings(1, 10), large = timings(2, 5);
  auto pc = piecewise_candidate(p, axes, {{"small", small}, {"large", large}}, "large", large.geomean_us, known, 0.02, 4);
  ASSERT_TRUE(pc);
  EXPECT_EQ(pc->candidate.author, "engine");
  EXPECT_EQ(pc->knobs.at("pieces").size(), 2u);
  EXPECT_EQ(pc->knobs.at("pieces")[0].at("candidate"), "small");
  EXPECT_LT(pc->estimate_us, large.geomean_us);
  EXPECT_EQ(pc->hash, candidate_hash(pc->candidate));
  const Scored everywhere = timings(1, 4);
  EXPECT_FALSE(piecewise_candidate(p, axes, {{"small", small}, {"large", everywhere}}, "large", everywhere.geomean_us,
                                   known, 0.02, 4));
  EXPECT_FALSE(piecewise_candidate(p, {}, {{"small", small}, {"large", large}}, "large", large.geomean_us, known, 0.02, 4));
}

}  // namespace
}  // namespace ka
