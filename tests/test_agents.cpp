// test_agents.cpp — the built-in search agents (agents/agent.h, agents/search.h) on a synthetic
// family and landscape (timings are a fixed function of the knobs; one knob value always fails):
// the same seed and observations give the same proposals and findings, other seeds differ; no
// point is proposed twice (nor one observed from someone else), every proposal is valid and the
// space is exhausted exactly; the exploiter and the modeler reach the optimum within a budget; the
// explorer spreads out; the transfer agent starts from another problem's best_config; digest
// dead regions are avoided; best_config / dead_region findings cite the right measurements. On the
// dev RMSNorm problem 021 (skipped when absent) every agent proposes valid points of the shipped
// families.
#include "util/resources.h"
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "agents/agent.h"
#include "agents/search.h"
#include "families/family.h"
#include "problem/problem.h"
#include "util/error.h"

namespace ka {
namespace {

namespace fs = std::filesystem;

// Knobs A (8 values), B (8 values), C (3 values); A + C <= 8 removes 8 points: 184 valid.
Family synth_family(const std::string& name = "synth") {
  Family f;
  f.name = name;
  f.target = "host";
  f.source_name = "synth.cpp";
  f.knobs = {{"A", {0, 1, 2, 3, 4, 5, 6, 7}}, {"B", {1, 2, 4, 8, 16, 32, 64, 128}}, {"C", {0, 1, 2}}};
  f.constraints = {Expr::parse("A + C <= 8")};
  f.op_types = {"synth"};
  return f;
}

Problem synth_problem(const std::string& name = "p1", const std::string& op_type = "synth") {
  Problem p;
  p.def.name = name;
  p.def.op_type = op_type;
  return p;
}

int idx_of(int64_t b) { return static_cast<int>(std::log2(static_cast<double>(b))); }

// The landscape: optimum at A=5, B=4, C=1 (10 µs); B=128 always fails.
std::optional<double> landscape(const Knobs& k) {
  if (k.at("B") == 128) return std::nullopt;
  const double a = static_cast<double>(k.at("A")), b = idx_of(k.at("B")), c = static_cast<double>(k.at("C"));
  return 10 + (a - 5) * (a - 5) + 2 * (b - 2) * (b - 2) + 3 * (c - 1) * (c - 1);
}

const Knobs kOptimum{{"A", 5}, {"B", 4}, {"C", 1}};

struct Trace {
  std::vector<Proposal> proposals;
  std::vector<Observation> observations;
  std::vector<Finding> findings;
  std::vector<std::string> keys() const {
    std::vector<std::string> out;
    for (const auto& p : proposals) out.push_back(p.family + ":" + knobs_str(p.knobs));
    return out;
  }
  std::optional<size_t> first_index_of(const Knobs& k) const {
    for (size_t i = 0; i < proposals.size(); ++i)
      if (proposals[i].knobs == k) return i;
    return std::nullopt;
  }
};

// The engine's loop, in miniature: propose, measure (the landscape), observe, conclude.
Trace drive(Agent& a, const AgentContext& ctx, int n,
            const std::function<std::optional<double>(const Knobs&)>& f = landscape) {
  Trace t;
  int64_t next_id = 1;
  for (int i = 0; i < n; ++i) {
    auto p = a.propose(ctx);
    if (!p) break;
    t.proposals.push_back(*p);
    Observation o;
    o.problem = ctx.problem->def.name;
    o.proposal = *p;
    o.author = a.name();
    o.measurement_ids = {next_id, next_id + 1};
    next_id += 2;
    if (auto us = f(p->knobs)) {
      o.passed = true;
      o.score_us = *us;
      o.median_us = {*us * 0.9, *us * 1.1};
    }
    a.observe(o);
    t.observations.push_back(o);
    for (auto& fd : a.conclude(ctx)) t.findings.push_back(std::move(fd));
  }
  return t;
}

struct Synth {
  Family fam = synth_family();
  Problem prob = synth_problem();
  AgentContext ctx;
  Synth() {
    ctx.problem = &prob;
    ctx.families = {&fam};
    ctx.device = "NVIDIA H200";
  }
};

Finding best_config(const std::string& problem, const std::string& op_type, const std::string& device, const Knobs& k,
                    double us, const std::string& family = "synth") {
  Finding f;
  f.id = 1;
  f.author = "someone";
  f.kind = "best_config";
  f.problem = problem;
  f.op_type = op_type;
  f.device = device;
  f.claim = {{"family", family}, {"knobs", nlohmann::json(k)}, {"median_us", us}};
  f.cites = {1};
  return f;
}

TEST(Agents, Registry) {
  EXPECT_EQ(builtin_agents(), (std::vector<std::string>{"explorer", "exploiter", "modeler", "transfer", "library"}));
  EXPECT_EQ(search_agents(), (std::vector<std::string>{"explorer", "exploiter", "modeler", "transfer"}));
  for (const auto& n : builtin_agents()) EXPECT_EQ(make_agent(n, 1)->name(), n);
  try {
    make_agent("oracle", 1);
    ADD_FAILURE() << "expected a UserError";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("oracle"), std::string::npos);
  }
}

TEST(Agents, SameSeedSameProposalsOtherSeedsDiffer) {
  for (const auto& kind : search_agents()) {
    SCOPED_TRACE(kind);
    Synth s;
    auto a1 = make_agent(kind, 42), a2 = make_agent(kind, 42), b = make_agent(kind, 43);
    Trace t1 = drive(*a1, s.ctx, 40), t2 = drive(*a2, s.ctx, 40), u = drive(*b, s.ctx, 40);
    EXPECT_EQ(t1.keys(), t2.keys());
    ASSERT_EQ(t1.findings.size(), t2.findings.size());
    for (size_t i = 0; i < t1.findings.size(); ++i) {
      EXPECT_EQ(t1.findings[i].claim, t2.findings[i].claim);
      EXPECT_EQ(t1.findings[i].cites, t2.findings[i].cites);
    }
    EXPECT_NE(t1.keys(), u.keys());
  }
}

TEST(Agents, NoDuplicatesOnlyValidPointsAndTheWholeSpace) {
  for (const auto& kind : search_agents()) {
    SCOPED_TRACE(kind);
    Synth s;
    const size_t space = s.fam.space(s.prob).size();
    ASSERT_EQ(space, 184u);
    auto a = make_agent(kind, 7);
    // Points someone else measured (sharing mode "full") are not proposed again.
    std::set<std::string> others;
    for (Knobs k : {Knobs{{"A", 0}, {"B", 1}, {"C", 0}}, Knobs{{"A", 5}, {"B", 4}, {"C", 2}}}) {
      Observation o;
      o.problem = "p1";
      o.proposal = {"synth", k, {}};
      o.passed = true;
      o.score_us = *landscape(k);
      o.author = "someone";
      a->observe(o);
      others.insert("synth:" + knobs_str(k));
    }
    Trace t = drive(*a, s.ctx, 1000);
    std::set<std::string> seen;
    for (const auto& p : t.proposals) {
      EXPECT_EQ(p.family, "synth");
      EXPECT_TRUE(s.fam.valid(p.knobs, s.prob)) << knobs_str(p.knobs);
      const std::string key = p.family + ":" + knobs_str(p.knobs);
      EXPECT_TRUE(seen.insert(key).second) << "proposed twice: " << key;
      EXPECT_FALSE(others.count(key)) << "proposed what someone else measured: " << key;
    }
    EXPECT_EQ(t.proposals.size(), space - others.size());
    EXPECT_FALSE(a->propose(s.ctx).has_value());
  }
}

TEST(Agents, ExploiterConvergesOnASimpleLandscape) {
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    Synth s;
    auto a = make_agent("exploiter", seed);
    Trace t = drive(*a, s.ctx, 60);
    auto at = t.first_index_of(kOptimum);
    ASSERT_TRUE(at.has_value()) << "seed " << seed << ": optimum not reached in 60 proposals";
    EXPECT_LT(*at, 60u);
  }
}

TEST(Agents, ModelerFindsTheOptimum) {
  for (uint64_t seed = 1; seed <= 10; ++seed) {
    Synth s;
    auto a = make_agent("modeler", seed);
    Trace t = drive(*a, s.ctx, 60);
    EXPECT_TRUE(t.first_index_of(kOptimum).has_value()) << "seed " << seed << ": optimum not reached in 60 proposals";
  }
}

TEST(Agents, GuidedSearchBeatsBlindOrder) {
  // Proposals until the optimum, averaged over 20 seeds: a blind order needs about half the space
  // (92 of 184); local search, the model and transfer (here: local search) need far fewer.
  for (const std::string kind : {"exploiter", "modeler", "transfer"}) {
    double total = 0;
    for (uint64_t seed = 1; seed <= 20; ++seed) {
      Synth s;
      auto a = make_agent(kind, seed);
      Trace t = drive(*a, s.ctx, 184);
      total += static_cast<double>(*t.first_index_of(kOptimum) + 1);
    }
    EXPECT_LT(total / 20, 35.0) << kind;
  }
}

TEST(Agents, ExplorerSpreadsOut) {
  Synth s;
  auto a = make_agent("explorer", 3);
  Trace t = drive(*a, s.ctx, 6);
  ASSERT_EQ(t.proposals.size(), 6u);
  auto norm = [&](const Knobs& k) {
    return std::vector<double>{k.at("A") / 7.0, idx_of(k.at("B")) / 7.0, k.at("C") / 2.0};
  };
  double min_d = 1e9;
  for (size_t i = 0; i < 6; ++i)
    for (size_t j = i + 1; j < 6; ++j) {
      auto x = norm(t.proposals[i].knobs), y = norm(t.proposals[j].knobs);
      double d = 0;
      for (int q = 0; q < 3; ++q) d += (x[q] - y[q]) * (x[q] - y[q]);
      min_d = std::min(min_d, std::sqrt(d));
    }
  EXPECT_GE(min_d, 0.5);
}

TEST(Agents, ExplorerStartsFromTheFamiliesSeeds) {
  Synth s;
  // A + C <= 8 holds for the first two seeds; the third (A = 7, C = 2) is not a point here.
  s.fam.seeds = {{{{"A", 1}, {"B", 64}, {"C", 0}}, "measured elsewhere"},
                 {{{"A", 7}, {"B", 2}, {"C", 2}}, "valid on another problem"},
                 {{{"A", 3}, {"B", 8}, {"C", 2}}, "measured elsewhere"}};
  auto a = make_agent("explorer", 4);
  Trace t = drive(*a, s.ctx, 4);
  ASSERT_EQ(t.proposals.size(), 4u);
  EXPECT_EQ(t.proposals[0].knobs, (Knobs{{"A", 1}, {"B", 64}, {"C", 0}}));
  EXPECT_EQ(t.proposals[1].knobs, (Knobs{{"A", 3}, {"B", 8}, {"C", 2}}));
  // Then space filling: nothing proposed twice.
  EXPECT_NE(t.proposals[2].knobs, t.proposals[0].knobs);
  EXPECT_NE(t.proposals[3].knobs, t.proposals[1].knobs);
}

TEST(Agents, AgentsWithNothingToGoOnTakeTheSeedsNotInFlight) {
  const Knobs first{{"A", 1}, {"B", 64}, {"C", 0}}, second{{"A", 3}, {"B", 8}, {"C", 2}};
  for (const char* name : {"exploiter", "modeler", "transfer"}) {
    SCOPED_TRACE(name);
    Synth s;
    s.fam.seeds = {{first, "measured elsewhere"}, {second, "measured elsewhere"}};
    // Nothing observed yet: the first seed, as the explorer would start.
    EXPECT_EQ(make_agent(name, 4)->propose(s.ctx)->knobs, first);
    // The first seed in flight (another agent's proposal, still being judged): the second.
    s.ctx.in_flight.emplace_back("synth", first);
    EXPECT_EQ(make_agent(name, 4)->propose(s.ctx)->knobs, second);
    // Both in flight: neither again.
    s.ctx.in_flight.emplace_back("synth", second);
    const Knobs k = make_agent(name, 4)->propose(s.ctx)->knobs;
    EXPECT_NE(k, first);
    EXPECT_NE(k, second);
  }
}

TEST(Agents, TransferStartsFromAnotherProblemsBestConfig) {
  Synth s;
  const Knobs theirs{{"A", 2}, {"B", 8}, {"C", 0}};
  const Knobs other_op{{"A", 3}, {"B", 8}, {"C", 0}};
  const Knobs invalid_here{{"A", 7}, {"B", 2}, {"C", 2}};  // A + C > 8
  s.ctx.digest.push_back(best_config("p_other_op", "other_op", s.ctx.device, other_op, 5));  // ranked after the same op type
  s.ctx.digest.push_back(best_config("p1", "synth", s.ctx.device, kOptimum, 9));           // this problem: not a transfer
  s.ctx.digest.push_back(best_config("p2", "synth", s.ctx.device, theirs, 20));
  s.ctx.digest.push_back(best_config("p3", "synth", "NVIDIA B200", invalid_here, 7));
  s.ctx.digest.push_back(best_config("p4", "synth", s.ctx.device, theirs, 25, "not_here"));  // family absent
  auto a = make_agent("transfer", 5);
  Trace t = drive(*a, s.ctx, 3);
  ASSERT_EQ(t.proposals.size(), 3u);
  EXPECT_EQ(t.proposals[0].knobs, theirs);
  EXPECT_EQ(t.proposals[1].knobs, other_op);
  // The invalid config comes back as its nearest valid point.
  EXPECT_TRUE(s.fam.valid(t.proposals[2].knobs, s.prob));
  EXPECT_EQ(t.proposals[2].knobs.at("A") + t.proposals[2].knobs.at("C"), 8);
  EXPECT_EQ(t.proposals[2].knobs.at("B"), 2);
}

TEST(Agents, TransferTakesImportedFindingsOfTheSameProblem) {
  Synth s;
  Finding f = best_config("p1", "synth", s.ctx.device, {{"A", 1}, {"B", 1}, {"C", 1}}, 30);
  f.origin = "campaign-2026-01.sqlite";
  s.ctx.digest.push_back(f);
  auto a = make_agent("transfer", 9);
  EXPECT_EQ(a->propose(s.ctx)->knobs, (Knobs{{"A", 1}, {"B", 1}, {"C", 1}}));
}

TEST(Agents, ExploiterStartsNextToTheDigestsBestConfig) {
  for (uint64_t seed = 1; seed <= 5; ++seed) {
    Synth s;
    const Knobs best{{"A", 3}, {"B", 16}, {"C", 1}};
    s.ctx.digest.push_back(best_config("p1", "synth", s.ctx.device, best, 12));
    s.ctx.digest.push_back(best_config("p1", "synth", s.ctx.device, {{"A", 0}, {"B", 1}, {"C", 0}}, 50));
    auto a = make_agent("exploiter", seed);
    Knobs k = a->propose(s.ctx)->knobs;
    int steps = std::abs(static_cast<int>(k.at("A") - best.at("A"))) + std::abs(idx_of(k.at("B")) - idx_of(best.at("B"))) +
                std::abs(static_cast<int>(k.at("C") - best.at("C")));
    EXPECT_EQ(steps, 1) << knobs_str(k);
  }
}

TEST(Agents, DigestDeadRegionsAreAvoided) {
  for (const auto& kind : search_agents()) {
    SCOPED_TRACE(kind);
    Synth s;
    Finding d;
    d.kind = "dead_region";
    d.problem = "p1";
    d.op_type = "synth";
    d.claim = {{"family", "synth"}, {"knob", "B"}, {"value", 128}, {"reason", "fails"}};
    s.ctx.digest.push_back(d);
    auto a = make_agent(kind, 11);
    Trace t = drive(*a, s.ctx, 161);  // 184 points, 23 with B = 128
    for (const auto& p : t.proposals) EXPECT_NE(p.knobs.at("B"), 128) << knobs_str(p.knobs);
    // Once everything else is done, the dead region is still proposed (nothing is left out for good).
    EXPECT_TRUE(a->propose(s.ctx).has_value());
  }
}

TEST(Agents, FindingsCiteTheirMeasurements) {
  for (const auto& kind : search_agents()) {
    SCOPED_TRACE(kind);
    Synth s;
    auto a = make_agent(kind, 2);
    Trace t = drive(*a, s.ctx, 184);
    double last = 1e300;
    int best_configs = 0, dead = 0;
    for (const auto& f : t.findings) {
      EXPECT_EQ(f.author, kind);
      EXPECT_EQ(f.problem, "p1");
      EXPECT_EQ(f.op_type, "synth");
      EXPECT_EQ(f.device, "NVIDIA H200");
      ASSERT_FALSE(f.cites.empty());
      if (f.kind == "best_config") {
        ++best_configs;
        Knobs k = f.claim["knobs"].get<Knobs>();
        const Observation* o = nullptr;
        for (const auto& ob : t.observations)
          if (ob.proposal.knobs == k) o = &ob;
        ASSERT_NE(o, nullptr);
        EXPECT_EQ(f.cites, o->measurement_ids);
        EXPECT_DOUBLE_EQ(f.claim["median_us"].get<double>(), o->median_us[1]);  // the largest cited median
        EXPECT_LT(o->score_us, last);                                            // only improvements
        last = o->score_us;
      } else {
        ASSERT_EQ(f.kind, "dead_region");
        ++dead;
        EXPECT_EQ(f.claim["knob"], "B");
        EXPECT_EQ(f.claim["value"], 128);
        EXPECT_EQ(f.claim["reason"], "fails");
        for (int64_t id : f.cites) {
          bool failed_with_b128 = false;
          for (const auto& ob : t.observations)
            for (int64_t m : ob.measurement_ids)
              if (m == id) failed_with_b128 = !ob.passed && ob.proposal.knobs.at("B") == 128;
          EXPECT_TRUE(failed_with_b128) << "cites measurement " << id;
        }
      }
    }
    EXPECT_GE(best_configs, 1);
    EXPECT_EQ(dead, 1);
    EXPECT_DOUBLE_EQ(last, 10.0);  // the whole space was seen: the last best_config is the optimum
  }
}

TEST(Agents, NoBestConfigWithoutPerMeasurementMedians) {
  Synth s;
  auto a = make_agent("exploiter", 1);
  auto p = a->propose(s.ctx);
  Observation o;
  o.problem = "p1";
  o.proposal = *p;
  o.passed = true;
  o.score_us = 12;
  o.measurement_ids = {1, 2};
  o.author = "exploiter";
  a->observe(o);
  EXPECT_TRUE(a->conclude(s.ctx).empty());
}

TEST(Agents, StateIsPerProblem) {
  Synth s;
  Problem p2 = synth_problem("p2");
  AgentContext c2 = s.ctx;
  c2.problem = &p2;
  auto a = make_agent("explorer", 4), b = make_agent("explorer", 4);
  // Interleaving problems does not change what is proposed for each (apart from the shared stream
  // of random numbers, which is the same for the same interleaving).
  std::set<std::string> k1, k2;
  for (int i = 0; i < 20; ++i) {
    EXPECT_TRUE(k1.insert(knobs_str(a->propose(s.ctx)->knobs)).second);
    EXPECT_TRUE(k2.insert(knobs_str(a->propose(c2)->knobs)).second);
  }
  for (int i = 0; i < 20; ++i) {
    b->propose(s.ctx);
    b->propose(c2);
  }
  EXPECT_EQ(knobs_str(a->propose(s.ctx)->knobs), knobs_str(b->propose(s.ctx)->knobs));
}

TEST(Agents, SeveralFamilies) {
  Synth s;
  Family g = synth_family("synth_b");
  s.ctx.families = {&s.fam, &g};
  for (const auto& kind : search_agents()) {
    SCOPED_TRACE(kind);
    auto a = make_agent(kind, 8);
    Trace t = drive(*a, s.ctx, 400);
    std::set<std::string> seen;
    for (const auto& p : t.proposals) {
      EXPECT_TRUE(p.family == "synth" || p.family == "synth_b");
      EXPECT_TRUE(seen.insert(p.family + knobs_str(p.knobs)).second);
    }
    EXPECT_EQ(t.proposals.size(), 368u);
  }
}

// --- range winners (a piecewise candidate to come) -------------------------------------------------

// Four workloads along axis M (1, 2, 100, 1000); two families: "synth" (the best on the whole
// problem) and "synth_b" (much faster at M <= 2, slow above).
struct Ranged : Synth {
  Family b = synth_family("synth_b");
  Ranged() {
    ctx.families = {&fam, &b};
    int64_t m[] = {1, 2, 100, 1000};
    for (int i = 0; i < 4; ++i) {
      Workload w;
      w.uuid = "w" + std::to_string(i);
      w.axes = {{"M", m[i]}};
      prob.workloads.push_back(w);
    }
  }
  Observation obs(const std::string& family, const Knobs& k, std::vector<double> us, int64_t first_id,
                  const std::string& author) const {
    Observation o;
    o.problem = prob.def.name;
    o.proposal = {family, k, {}};
    o.author = author;
    o.passed = true;
    double lg = 0;
    for (size_t i = 0; i < us.size(); ++i) {
      o.workloads.push_back(prob.workloads[i].uuid);
      o.verdicts.push_back("passed");
      o.measurement_ids.push_back(first_id + static_cast<int64_t>(i));
      lg += std::log(us[i]);
    }
    o.median_us = us;
    o.score_us = std::exp(lg / static_cast<double>(us.size()));
    return o;
  }
};

const Knobs kSmallWinner{{"A", 2}, {"B", 8}, {"C", 0}};

// An exploiter that observed the whole problem's best (kOptimum, 10 µs everywhere) and a point of
// synth_b twice as fast at M <= 2 and five times slower above (kSmallWinner).
std::unique_ptr<Agent> exploiter_with_two_winners(const Ranged& r) {
  auto a = make_agent("exploiter", 3);
  a->observe(r.obs("synth", kOptimum, {10, 10, 10, 10}, 1, "exploiter"));
  a->observe(r.obs("synth_b", kSmallWinner, {5, 5, 50, 50}, 11, "exploiter"));
  return a;
}

TEST(Agents, RangeWinnerIsPublishedScopedToItsRange) {
  for (bool piecewise : {false, true}) {
    SCOPED_TRACE(piecewise);
    Ranged r;
    if (piecewise) r.ctx.piecewise_axis = "M";
    auto a = exploiter_with_two_winners(r);
    // Within 2% of the best elsewhere: wins nothing.
    a->observe(r.obs("synth_b", Knobs{{"A", 0}, {"B", 1}, {"C", 0}}, {12, 12, 9.9, 60}, 21, "exploiter"));
    std::vector<Finding> fs = a->conclude(r.ctx);
    std::vector<const Finding*> ranged, whole;
    for (const auto& f : fs)
      if (f.kind == "best_config") (f.bucket.empty() ? whole : ranged).push_back(&f);
    ASSERT_EQ(whole.size(), 1u);
    EXPECT_EQ(whole[0]->claim["knobs"], nlohmann::json(kOptimum));
    if (!piecewise) {
      EXPECT_TRUE(ranged.empty());
      continue;
    }
    ASSERT_EQ(ranged.size(), 1u);
    EXPECT_EQ(ranged[0]->bucket, "1<=M<=2");
    EXPECT_EQ(ranged[0]->claim["family"], "synth_b");
    EXPECT_EQ(ranged[0]->claim["knobs"], nlohmann::json(kSmallWinner));
    EXPECT_EQ(ranged[0]->claim["median_us"], 5.0);
    EXPECT_EQ(ranged[0]->claim["workloads_won"], 2);
    EXPECT_EQ(ranged[0]->cites, (std::vector<int64_t>{11, 12}));
    EXPECT_TRUE(a->conclude(r.ctx).empty());  // once per point
  }
}

TEST(Agents, ExploiterAlternatesWithRangeWinners) {
  for (bool piecewise : {false, true}) {
    SCOPED_TRACE(piecewise);
    Ranged r;
    if (piecewise) r.ctx.piecewise_axis = "M";
    auto a = exploiter_with_two_winners(r);
    std::vector<std::string> fams;
    for (int i = 0; i < 4; ++i) {
      auto p = a->propose(r.ctx);
      ASSERT_TRUE(p);
      fams.push_back(p->family);
    }
    if (piecewise)
      EXPECT_EQ(fams, (std::vector<std::string>{"synth", "synth_b", "synth", "synth_b"}));
    else
      EXPECT_EQ(fams, (std::vector<std::string>(4, "synth")));
  }
}

TEST(Agents, ExploiterTakesRangeWinnersFromTheDigest) {
  Ranged r;
  r.ctx.piecewise_axis = "M";
  Finding f = best_config("p1", "synth", "NVIDIA H200", kSmallWinner, 5, "synth_b");
  f.bucket = "1<=M<=2";
  r.ctx.digest = {f};
  auto a = make_agent("exploiter", 3);
  a->observe(r.obs("synth", kOptimum, {10, 10, 10, 10}, 1, "exploiter"));
  auto p0 = a->propose(r.ctx), p1 = a->propose(r.ctx);
  ASSERT_TRUE(p0 && p1);
  EXPECT_EQ(p0->family, "synth");
  EXPECT_EQ(p1->family, "synth_b");
  int steps = 0;
  for (const auto& [k, v] : p1->knobs) steps += k == "B" ? std::abs(idx_of(v) - idx_of(kSmallWinner.at("B")))
                                                        : static_cast<int>(std::abs(v - kSmallWinner.at(k)));
  EXPECT_EQ(steps, 1);
  // A range-scoped claim is not a whole-problem best: without the piecewise axis the exploiter
  // stays around its own best.
  r.ctx.piecewise_axis.clear();
  auto b = make_agent("exploiter", 3);
  b->observe(r.obs("synth", kOptimum, {10, 10, 10, 10}, 1, "exploiter"));
  for (int i = 0; i < 3; ++i) EXPECT_EQ(b->propose(r.ctx)->family, "synth");
}

// --- on a dev problem with the shipped families ----------------------------------------------------

TEST(AgentsDev, ShippedFamiliesOn021) {
  const fs::path dir = ka::source_root() / ".." / "shared" / "problems" / "sol-execbench" / "FlashInfer-Bench" /
                       "021_rmsnorm_h128";
  if (!fs::exists(dir / "definition.json")) GTEST_SKIP() << "no dev problems";
  Problem p = load_problem(dir);
  std::vector<Family> fams = load_families();
  AgentContext ctx;
  ctx.problem = &p;
  ctx.device = "NVIDIA H200";
  for (const auto& f : fams)  // the hand-written ones: the synthetic timing below reads rmsnorm_cuda's knobs
    if (f.target == "cuda" && f.generator.empty() && f.applies_to(p)) ctx.families.push_back(&f);
  ASSERT_FALSE(ctx.families.empty());
  // Synthetic timing: 16-byte loads, 16 threads per row and cached rows are fastest.
  auto timing = [](const Knobs& k) -> std::optional<double> {
    double t = 2.0 + std::abs(std::log2(static_cast<double>(k.at("VEC")) / 8)) +
               std::abs(std::log2(static_cast<double>(k.at("THREADS")) / 16)) + (k.at("CACHE") ? 0 : 0.5) +
               0.1 * std::abs(std::log2(static_cast<double>(k.at("ROWS")) / 8));
    return t;
  };
  for (const auto& kind : search_agents()) {
    SCOPED_TRACE(kind);
    auto a = make_agent(kind, 1);
    Trace t = drive(*a, ctx, 40, timing);
    EXPECT_EQ(t.proposals.size(), 40u);
    std::set<std::string> seen;
    for (const auto& pr : t.proposals) {
      const Family* f = nullptr;
      for (const auto* g : ctx.families)
        if (g->name == pr.family) f = g;
      ASSERT_NE(f, nullptr);
      EXPECT_TRUE(f->valid(pr.knobs, p)) << knobs_str(pr.knobs);
      EXPECT_TRUE(seen.insert(pr.family + knobs_str(pr.knobs)).second);
      f->instantiate(pr.knobs, p);  // every proposal instantiates
    }
  }
}

}  // namespace
}  // namespace ka
