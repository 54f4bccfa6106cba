// test_store.cpp — the campaign store (store/store.h): WAL mode and schema; measurements and
// candidates immutable and findings append-only even on the judge's connection and on a raw SQLite
// connection (the schema refuses, not the C++); an agent's read-only connection and its
// insert-only publish connection; the findings check (citations, scope, and the claim kinds
// best_config, dead_region, near_sol), refused and accepted; authorship; import of another
// campaign's findings with their measurements; two connections seeing each other's writes.
// Every test works on campaign files in a fresh temporary folder.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "store/store.h"
#include "util/files.h"
#include "test_support.h"

namespace ka {

// Reaches the publish connection of an agent's store directly (store.h names it a friend): what
// an attacker who got hold of that connection could do with raw SQL.
struct StoreTestAccess {
  static void writer_exec(Store& s, const std::string& sql) {
    if (!s.writer_) throw StoreError("no publish connection");
    char* err = nullptr;
    int rc = sqlite3_exec(s.writer_, sql.c_str(), nullptr, nullptr, &err);
    std::string msg = err ? err : "";
    sqlite3_free(err);
    if (rc != SQLITE_OK) throw StoreError(msg);
  }
  // 1 when the connection for reads and exec() was opened read-only (SQLITE_OPEN_READONLY).
  static int reader_is_readonly(const Store& s) { return sqlite3_db_readonly(s.db_, "main"); }
  static int writer_is_readonly(const Store& s) { return s.writer_ ? sqlite3_db_readonly(s.writer_, "main") : -1; }
};

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// The StoreError message of `f()`; fails the test when nothing (or something else) is thrown.
template <typename F>
std::string store_error_of(F&& f) {
  return error_of<StoreError>(std::forward<F>(f), "StoreError");
}

// A connection of our own, outside the Store class: shows that the schema itself refuses.
class RawDb {
 public:
  explicit RawDb(const fs::path& p) {
    if (sqlite3_open_v2(p.c_str(), &db_, SQLITE_OPEN_READWRITE, nullptr) != SQLITE_OK)
      throw std::runtime_error("cannot open " + p.string());
    sqlite3_busy_timeout(db_, 10000);
  }
  ~RawDb() { sqlite3_close(db_); }
  // "" when the statement succeeds, else SQLite's message.
  std::string exec(const std::string& sql) {
    char* err = nullptr;
    int rc = sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err);
    std::string msg = rc == SQLITE_OK ? "" : (err ? err : "error");
    sqlite3_free(err);
    return msg;
  }
  std::string query(const std::string& sql) {
    sqlite3_stmt* s = nullptr;
    if (sqlite3_prepare_v2(db_, sql.c_str(), -1, &s, nullptr) != SQLITE_OK)
      throw std::runtime_error(sqlite3_errmsg(db_));
    std::string out;
    if (sqlite3_step(s) == SQLITE_ROW && sqlite3_column_text(s, 0))
      out = reinterpret_cast<const char*>(sqlite3_column_text(s, 0));
    sqlite3_finalize(s);
    return out;
  }

 private:
  sqlite3* db_ = nullptr;
};

CandidateRecord cand(const std::string& hash, const std::string& problem, const std::string& family,
                     json knobs, const std::string& agent = "explorer", int64_t seq = 1) {
  CandidateRecord c;
  c.hash = hash;
  c.problem = problem;
  c.family = family;
  c.knobs = std::move(knobs);
  c.agent = agent;
  c.seq = seq;
  c.solution = {{"name", hash}};
  return c;
}

Measurement meas(const std::string& candidate, const std::string& problem, const std::string& verdict,
                 double median_us, const std::string& workload = "w1", const std::string& device = "H200") {
  Measurement m;
  m.candidate = candidate;
  m.problem = problem;
  m.workload = workload;
  m.verdict = verdict;
  m.median_us = median_us;
  m.spread = verdict == "passed" ? 0.01 : 0;
  m.reference_us = 20;
  m.device = device;
  m.gpu = "GPU-0";
  m.extra = {{"samples", 10}};
  return m;
}

Finding finding(const std::string& author, const std::string& kind, const std::string& problem, json claim,
                std::vector<int64_t> cites) {
  Finding f;
  f.author = author;
  f.kind = kind;
  f.problem = problem;
  f.op_type = "rmsnorm";
  f.claim = std::move(claim);
  f.cites = std::move(cites);
  return f;
}

// A campaign with two rmsnorm problems and a few candidates of family "rms" (knobs VEC, THREADS).
class StoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = make_temp_dir("ka_store_");
    db_ = dir_ / "campaign.db";
    judge_ = Store::open_judge(db_);
    judge_->record_candidate(cand("h_v4", "rms_a", "rms", {{"VEC", 4}, {"THREADS", 128}}, "explorer", 1));
    judge_->record_candidate(cand("h_v8", "rms_a", "rms", {{"VEC", 8}, {"THREADS", 128}}, "explorer", 2));
    judge_->record_candidate(cand("h_v1", "rms_a", "rms", {{"VEC", 1}, {"THREADS", 128}}, "exploiter", 3));
    judge_->record_candidate(cand("h_b4", "rms_b", "rms", {{"VEC", 4}, {"THREADS", 128}}, "explorer", 4));
    v4_w1_ = judge_->record_measurement(meas("h_v4", "rms_a", "passed", 10.0, "w1"));
    v4_w2_ = judge_->record_measurement(meas("h_v4", "rms_a", "passed", 12.5, "w2"));
    v8_fail_ = judge_->record_measurement(meas("h_v8", "rms_a", "wrong_answer", 0, "w1"));
    v8_fail2_ = judge_->record_measurement(meas("h_v8", "rms_a", "crash", 0, "w2"));
    v1_slow_ = judge_->record_measurement(meas("h_v1", "rms_a", "passed", 50.0, "w1"));
    b4_ = judge_->record_measurement(meas("h_b4", "rms_b", "passed", 9.0, "w1"));
  }
  void TearDown() override {
    judge_.reset();
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  Finding best_v4(const std::string& author, double median_us) const {
    return finding(author, "best_config", "rms_a",
                   {{"family", "rms"}, {"knobs", {{"VEC", 4}, {"THREADS", 128}}}, {"median_us", median_us}},
                   {v4_w1_, v4_w2_});
  }

  fs::path dir_, db_;
  std::unique_ptr<Store> judge_;
  int64_t v4_w1_ = 0, v4_w2_ = 0, v8_fail_ = 0, v8_fail2_ = 0, v1_slow_ = 0, b4_ = 0;
};

// --- schema, WAL, connections -----------------------------------------------------------------

TEST_F(StoreTest, WalModeSchemaVersionAndForeignKeys) {
  RawDb raw(db_);
  EXPECT_EQ(raw.query("PRAGMA journal_mode"), "wal");
  EXPECT_EQ(raw.query("SELECT version FROM schema_version"), "1");
  EXPECT_FALSE(judge_->campaign().empty());
  EXPECT_EQ(raw.query("SELECT value FROM meta WHERE key = 'campaign'"), judge_->campaign());
  // A measurement of a candidate that was never recorded is refused.
  std::string e = store_error_of([&] { judge_->record_measurement(meas("nope", "rms_a", "passed", 1)); });
  EXPECT_TRUE(has(e, "unknown candidate")) << e;
  // And one whose problem is not its candidate's.
  e = store_error_of([&] { judge_->record_measurement(meas("h_v4", "rms_b", "passed", 1)); });
  EXPECT_TRUE(has(e, "problem differs")) << e;
  // Reopening keeps the campaign identity and data.
  std::string id = judge_->campaign();
  judge_.reset();
  judge_ = Store::open_judge(db_);
  EXPECT_EQ(judge_->campaign(), id);
  EXPECT_EQ(judge_->measurements().size(), 6u);
}

TEST_F(StoreTest, TwoConnectionsSeeEachOthersCommittedWrites) {
  auto judge2 = Store::open_judge(db_);
  auto agent = Store::open_agent(db_, "explorer");
  // judge 1 writes; judge 2 and the agent read it.
  judge_->record_candidate(cand("h_new", "rms_a", "rms", {{"VEC", 2}, {"THREADS", 64}}, "explorer", 5));
  int64_t id = judge_->record_measurement(meas("h_new", "rms_a", "passed", 7.25, "w1"));
  auto seen2 = judge2->measurements_of("h_new");
  ASSERT_EQ(seen2.size(), 1u);
  EXPECT_EQ(seen2[0].id, id);
  EXPECT_DOUBLE_EQ(seen2[0].median_us, 7.25);
  ASSERT_TRUE(agent->candidate("h_new").has_value());
  EXPECT_EQ(agent->candidate("h_new")->knobs, json({{"THREADS", 64}, {"VEC", 2}}));
  EXPECT_EQ(agent->measurements("rms_a").size(), 6u);
  // The agent publishes; both judges see it.
  int64_t fid = agent->publish(finding("explorer", "best_config", "rms_a",
                                       {{"family", "rms"}, {"knobs", {{"VEC", 2}, {"THREADS", 64}}}, {"median_us", 7.25}},
                                       {id}));
  auto f1 = judge_->findings("rmsnorm");
  ASSERT_EQ(f1.size(), 1u);
  EXPECT_EQ(f1[0].id, fid);
  EXPECT_EQ(f1[0].author, "explorer");
  EXPECT_EQ(f1[0].cites, std::vector<int64_t>{id});
  EXPECT_EQ(judge2->findings().size(), 1u);
  EXPECT_TRUE(judge2->findings("gemm").empty());
  // judge 2 writes the budget log; judge 1 and the agent read it.
  judge2->record_budget_move({"explorer", 0.5, 0.25, "no improvement in 10 candidates"});
  auto moves = judge_->budget_moves();
  ASSERT_EQ(moves.size(), 1u);
  EXPECT_EQ(moves[0].reason, "no improvement in 10 candidates");
  EXPECT_DOUBLE_EQ(moves[0].share_after, 0.25);
  EXPECT_EQ(agent->budget_moves().size(), 1u);
}

// A judged candidate goes in as one transaction: its record and measurements together, or
// nothing when one of them is refused (here a measurement of an unknown candidate).
TEST_F(StoreTest, AJudgedCandidateIsRecordedWholeOrNotAtAll) {
  std::vector<Measurement> ms = {meas("h_new", "rms_a", "passed", 5, "w1"), meas("h_new", "rms_a", "passed", 6, "w2")};
  judge_->record_judged(cand("h_new", "rms_a", "rms", {{"VEC", 2}}, "explorer", 9), ms);
  ASSERT_TRUE(judge_->candidate("h_new"));
  EXPECT_EQ(judge_->measurements_of("h_new").size(), 2u);
  EXPECT_GT(ms[0].id, 0);
  EXPECT_EQ(ms[1].id, ms[0].id + 1);

  const size_t before = judge_->measurements().size();
  std::vector<Measurement> bad = {meas("h_new2", "rms_a", "passed", 5), meas("no_such_candidate", "rms_a", "passed", 5)};
  store_error_of([&] { judge_->record_judged(cand("h_new2", "rms_a", "rms", {{"VEC", 1}}), bad); });
  EXPECT_FALSE(judge_->candidate("h_new2"));
  EXPECT_EQ(judge_->measurements().size(), before);

  // A re-measurement of a recorded candidate (a per-GPU check) records no candidate.
  std::vector<Measurement> check = {meas("h_new", "rms_a", "passed", 5.5, "w1")};
  check[0].gpu = "GPU-1";
  judge_->record_judged(std::nullopt, check);
  EXPECT_EQ(judge_->measurements_of("h_new").size(), 3u);

  auto agent = Store::open_agent(db_, "explorer");
  std::vector<Measurement> none;
  store_error_of([&] { agent->record_judged(std::nullopt, none); });
}

TEST_F(StoreTest, CandidatesAreIdempotentOnHashAndCanonical) {
  judge_->record_candidate(cand("h_v4", "rms_a", "rms", {{"VEC", 99}}, "someone_else", 42));
  auto c = judge_->candidate("h_v4");
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->agent, "explorer");
  EXPECT_EQ(c->seq, 1);
  EXPECT_EQ(c->knobs, json({{"THREADS", 128}, {"VEC", 4}}));
  EXPECT_EQ(judge_->candidates("rms_a").size(), 3u);
  EXPECT_EQ(judge_->candidates().size(), 4u);
  // Stored as canonical text (keys sorted, no spaces): what best_config compares.
  RawDb raw(db_);
  EXPECT_EQ(raw.query("SELECT knobs FROM candidates WHERE hash = 'h_v4'"), R"({"THREADS":128,"VEC":4})");
  // Knobs that are not canonical are refused by the schema.
  std::string e = raw.exec(
      "INSERT INTO candidates (hash, problem, family, knobs) VALUES ('x', 'rms_a', 'rms', '{\"VEC\":4,\"THREADS\":1}')");
  EXPECT_TRUE(has(e, "canonical")) << e;
  e = raw.exec("INSERT INTO candidates (hash, problem, family, knobs) VALUES ('x', 'rms_a', 'rms', '[1]')");
  EXPECT_TRUE(has(e, "JSON object")) << e;
}

// --- immutability ---------------------------------------------------------------------------

TEST_F(StoreTest, MeasurementsAndCandidatesRefuseUpdateAndDelete) {
  for (const std::string& sql :
       {std::string("UPDATE measurements SET median_us = 1 WHERE id = ") + std::to_string(v1_slow_),
        std::string("UPDATE measurements SET verdict = 'passed'"),
        std::string("DELETE FROM measurements WHERE id = ") + std::to_string(v8_fail_),
        std::string("DELETE FROM measurements"),
        // REPLACE deletes the old row without firing DELETE triggers; the INSERT trigger catches it.
        std::string("INSERT OR REPLACE INTO measurements (id, candidate, problem, verdict, median_us) VALUES (") +
            std::to_string(v1_slow_) + ", 'h_v1', 'rms_a', 'passed', 1)",
        std::string("INSERT INTO measurements (id, candidate, problem, verdict) VALUES (") +
            std::to_string(v1_slow_) + ", 'h_v1', 'rms_a', 'passed') ON CONFLICT(id) DO UPDATE SET median_us = 1"}) {
    std::string e = store_error_of([&] { judge_->exec(sql); });
    EXPECT_TRUE(has(e, "measurements are immutable")) << sql << " -> " << e;
  }
  for (std::string sql : {"UPDATE candidates SET knobs = '{}'", "DELETE FROM candidates WHERE hash = 'h_v1'",
                                 "INSERT OR REPLACE INTO candidates (hash, problem, knobs) VALUES ('h_v1', 'rms_a', '{}')"}) {
    std::string e = store_error_of([&] { judge_->exec(sql); });
    EXPECT_TRUE(has(e, "candidates are immutable")) << sql << " -> " << e;
  }
  // The same on a raw SQLite connection: the schema refuses, not store.cpp.
  RawDb raw(db_);
  EXPECT_TRUE(has(raw.exec("UPDATE measurements SET median_us = 1"), "measurements are immutable"));
  EXPECT_TRUE(has(raw.exec("DELETE FROM measurements"), "measurements are immutable"));
  EXPECT_TRUE(has(raw.exec("DELETE FROM candidates"), "candidates are immutable"));
  // Nothing changed.
  auto m = judge_->measurement(v1_slow_);
  ASSERT_TRUE(m.has_value());
  EXPECT_DOUBLE_EQ(m->median_us, 50.0);
  EXPECT_EQ(m->verdict, "passed");
  EXPECT_EQ(judge_->measurements().size(), 6u);
  EXPECT_EQ(judge_->candidates().size(), 4u);
  // The judge cannot drop the rules either.
  EXPECT_FALSE(store_error_of([&] { judge_->exec("DROP TRIGGER measurements_no_update"); }).empty());
  EXPECT_FALSE(store_error_of([&] { judge_->exec("DROP TABLE findings"); }).empty());
}

TEST_F(StoreTest, ACandidateIsMeasuredOncePerWorkloadAndGpu) {
  // The store itself refuses a second measurement of the same candidate, workload and GPU (what
  // makes a resumed campaign unable to measure twice); another workload or GPU is a new one.
  judge_->record_measurement(meas("h_v4", "rms_a", "passed", 10.0, "once"));
  EXPECT_THROW(judge_->record_measurement(meas("h_v4", "rms_a", "passed", 11.0, "once")), StoreError);
  EXPECT_NO_THROW(judge_->record_measurement(meas("h_v4", "rms_a", "passed", 11.0, "once-other-workload")));
  Measurement other_gpu = meas("h_v4", "rms_a", "passed", 12.0, "once");
  other_gpu.gpu = "GPU-1";
  EXPECT_NO_THROW(judge_->record_measurement(other_gpu));
}

TEST_F(StoreTest, FindingsRefuseUpdateAndDeleteEvenOnTheJudgesConnection) {
  int64_t fid = judge_->publish(best_v4("judge", 12.5));
  for (const std::string& sql :
       {std::string("UPDATE findings SET claim = '{}' WHERE id = ") + std::to_string(fid),
        std::string("UPDATE findings SET author = 'someone'"),
        std::string("DELETE FROM findings WHERE id = ") + std::to_string(fid),
        std::string("DELETE FROM findings"),
        std::string("INSERT OR REPLACE INTO findings (id, author, kind, claim, cites) VALUES (") +
            std::to_string(fid) + ", 'x', 'near_sol', '{}', '[1]')"}) {
    std::string e = store_error_of([&] { judge_->exec(sql); });
    EXPECT_TRUE(has(e, "findings are append-only")) << sql << " -> " << e;
  }
  RawDb raw(db_);
  EXPECT_EQ(raw.exec("DELETE FROM findings"), "findings are append-only");
  EXPECT_EQ(raw.exec("UPDATE findings SET kind = 'near_sol'"), "findings are append-only");
  auto all = judge_->findings();
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].author, "judge");
  EXPECT_EQ(all[0].claim["median_us"], 12.5);
  // The budget log is append-only as well.
  judge_->record_budget_move({"explorer", 0.5, 0.4, "slow"});
  EXPECT_TRUE(has(store_error_of([&] { judge_->exec("DELETE FROM budget_log"); }), "append-only"));
  EXPECT_TRUE(has(store_error_of([&] { judge_->exec("UPDATE budget_log SET reason = ''"); }), "append-only"));
}

// --- agents -----------------------------------------------------------------------------------

TEST_F(StoreTest, AgentConnectionIsReadOnly) {
  auto agent = Store::open_agent(db_, "explorer");
  EXPECT_FALSE(agent->is_judge());
  EXPECT_EQ(StoreTestAccess::reader_is_readonly(*agent), 1);
  EXPECT_EQ(StoreTestAccess::writer_is_readonly(*agent), 0);  // fenced by the authorizer instead
  EXPECT_EQ(StoreTestAccess::reader_is_readonly(*judge_), 0);
  EXPECT_EQ(StoreTestAccess::writer_is_readonly(*judge_), -1);  // the judge has one connection
  for (const std::string& sql :
       {std::string("INSERT INTO measurements (candidate, problem, verdict, median_us) VALUES ('h_v4', 'rms_a', 'passed', 1)"),
        std::string("UPDATE measurements SET median_us = 1"),
        std::string("INSERT INTO findings (author, kind, claim, cites) VALUES ('explorer', 'near_sol', '{}', '[1]')"),
        std::string("DELETE FROM findings"),
        std::string("INSERT INTO candidates (hash, problem) VALUES ('z', 'rms_a')"),
        std::string("CREATE TABLE t (x)"),
        std::string("CREATE TEMP TABLE t (x)"),
        std::string("ATTACH DATABASE '") + (dir_ / "other.db").string() + "' AS o",
        std::string("PRAGMA journal_mode = DELETE")}) {
    EXPECT_FALSE(store_error_of([&] { agent->exec(sql); }).empty()) << sql;
  }
  // Reads work.
  agent->exec("SELECT count(*) FROM measurements");
  EXPECT_EQ(agent->measurements().size(), 6u);
  // Judge-only methods refuse.
  EXPECT_TRUE(has(store_error_of([&] { agent->record_measurement(meas("h_v4", "rms_a", "passed", 1)); }), "only the judge"));
  EXPECT_TRUE(has(store_error_of([&] { agent->record_candidate(cand("q", "rms_a", "rms", json::object())); }), "only the judge"));
  EXPECT_TRUE(has(store_error_of([&] { agent->record_budget_move({"explorer", 0, 1, "greed"}); }), "only the judge"));
  EXPECT_TRUE(has(store_error_of([&] { agent->import_findings(db_); }), "only the judge"));
  // Nothing changed.
  EXPECT_EQ(judge_->measurements().size(), 6u);
  EXPECT_TRUE(judge_->budget_moves().empty());
  EXPECT_DOUBLE_EQ(judge_->measurement(v4_w1_)->median_us, 10.0);
  // An agent cannot open a store that does not exist (and so cannot create one).
  EXPECT_FALSE(store_error_of([&] { Store::open_agent(dir_ / "missing.db", "explorer"); }).empty());
  EXPECT_FALSE(fs::exists(dir_ / "missing.db"));
}

TEST_F(StoreTest, PublishConnectionCanOnlyInsertFindings) {
  auto agent = Store::open_agent(db_, "explorer");
  const std::string m = std::to_string(v4_w1_);
  for (const std::string& sql :
       {std::string("INSERT INTO measurements (candidate, problem, verdict, median_us) VALUES ('h_v4', 'rms_a', 'passed', 1)"),
        std::string("UPDATE measurements SET median_us = 1 WHERE id = ") + m,
        std::string("DELETE FROM measurements"),
        std::string("INSERT INTO candidates (hash, problem) VALUES ('z', 'rms_a')"),
        std::string("INSERT INTO budget_log (agent, share_before, share_after) VALUES ('explorer', 0, 1)"),
        std::string("UPDATE findings SET author = 'x'"),
        std::string("DELETE FROM findings"),
        std::string("DROP TRIGGER findings_check"),
        std::string("CREATE TABLE t (x)"),
        std::string("PRAGMA foreign_keys = OFF"),
        std::string("ATTACH DATABASE '") + (dir_ / "other.db").string() + "' AS o"}) {
    std::string e = store_error_of([&] { StoreTestAccess::writer_exec(*agent, sql); });
    EXPECT_TRUE(has(e, "not authorized")) << sql << " -> " << e;
  }
  // An INSERT into findings goes through, and only when the trigger accepts it.
  StoreTestAccess::writer_exec(
      *agent, "INSERT INTO findings (author, kind, problem, claim, cites) VALUES ('explorer', 'best_config', 'rms_a', "
              "'{\"family\":\"rms\",\"knobs\":{\"THREADS\":128,\"VEC\":4},\"median_us\":10.0}', '[" + m + "]')");
  std::string e = store_error_of([&] {
    StoreTestAccess::writer_exec(
        *agent, "INSERT INTO findings (author, kind, problem, claim, cites) VALUES ('explorer', 'best_config', 'rms_a', "
                "'{\"family\":\"rms\",\"knobs\":{\"THREADS\":128,\"VEC\":4},\"median_us\":5.0}', '[" + m + "]')");
  });
  EXPECT_TRUE(has(e, "slower than the claimed")) << e;
  EXPECT_EQ(judge_->findings().size(), 1u);
  EXPECT_EQ(judge_->measurements().size(), 6u);
  EXPECT_DOUBLE_EQ(judge_->measurement(v4_w1_)->median_us, 10.0);
}

TEST_F(StoreTest, AgentPublishesOnlyUnderItsOwnName) {
  auto agent = Store::open_agent(db_, "explorer");
  std::string e = store_error_of([&] { agent->publish(best_v4("exploiter", 12.5)); });
  EXPECT_TRUE(has(e, "cannot publish as 'exploiter'")) << e;
  EXPECT_TRUE(judge_->findings().empty());
  int64_t id = agent->publish(best_v4("explorer", 12.5));
  auto all = agent->findings();
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].id, id);
  EXPECT_EQ(all[0].author, "explorer");
  EXPECT_TRUE(all[0].origin.empty());
  EXPECT_FALSE(all[0].created_at.empty());
  // Nobody can fake an imported finding through publish().
  Finding f = best_v4("explorer", 12.5);
  f.origin = "elsewhere";
  EXPECT_TRUE(has(store_error_of([&] { agent->publish(f); }), "origin"));
  EXPECT_TRUE(has(store_error_of([&] { judge_->publish(f); }), "origin"));
}

// --- the findings check -------------------------------------------------------------------------

TEST_F(StoreTest, UnsupportedFindingsAreRefused) {
  auto agent = Store::open_agent(db_, "explorer");
  const json v4 = {{"VEC", 4}, {"THREADS", 128}};
  struct Case {
    const char* what;
    Finding f;
    const char* expect;
  };
  std::vector<Case> cases = {
      {"a nonexistent id",
       finding("explorer", "best_config", "rms_a", {{"family", "rms"}, {"knobs", v4}, {"median_us", 20}}, {v4_w1_, 999999}),
       "does not exist"},
      {"an empty cite list", finding("explorer", "best_config", "rms_a", {{"family", "rms"}, {"knobs", v4}, {"median_us", 20}}, {}),
       "non-empty JSON array"},
      {"a measurement of another problem",
       finding("explorer", "best_config", "rms_a", {{"family", "rms"}, {"knobs", v4}, {"median_us", 20}}, {v4_w1_, b4_}),
       "another problem"},
      {"a measurement of another device",
       [&] {
         Finding f = finding("explorer", "best_config", "rms_a", {{"family", "rms"}, {"knobs", v4}, {"median_us", 20}}, {v4_w1_});
         f.device = "B200";
         return f;
       }(),
       "another device"},
      {"best_config citing a failed measurement",
       finding("explorer", "best_config", "rms_a",
               {{"family", "rms"}, {"knobs", {{"VEC", 8}, {"THREADS", 128}}}, {"median_us", 20}}, {v8_fail_}),
       "did not pass"},
      {"best_config citing a passed and a failed measurement",
       finding("explorer", "best_config", "rms_a", {{"family", "rms"}, {"knobs", v4}, {"median_us", 20}}, {v4_w1_, v8_fail_}),
       "did not pass"},
      {"best_config claiming a lower median than measured",
       finding("explorer", "best_config", "rms_a", {{"family", "rms"}, {"knobs", v4}, {"median_us", 12.0}}, {v4_w1_, v4_w2_}),
       "slower than the claimed"},
      {"best_config of other knobs than the cited candidate's",
       finding("explorer", "best_config", "rms_a",
               {{"family", "rms"}, {"knobs", {{"VEC", 8}, {"THREADS", 128}}}, {"median_us", 20}}, {v4_w1_}),
       "another candidate"},
      {"best_config of another family",
       finding("explorer", "best_config", "rms_a", {{"family", "rms2"}, {"knobs", v4}, {"median_us", 20}}, {v4_w1_}),
       "another candidate"},
      {"best_config without median_us",
       finding("explorer", "best_config", "rms_a", {{"family", "rms"}, {"knobs", v4}}, {v4_w1_}), "claim needs"},
      {"dead_region citing another knob value",
       finding("explorer", "dead_region", "rms_a", {{"family", "rms"}, {"knob", "VEC"}, {"value", 8}, {"reason", "fails"}},
               {v8_fail_, v4_w1_}),
       "another family or knob value"},
      {"dead_region on a knob the candidate lacks",
       finding("explorer", "dead_region", "rms_a", {{"family", "rms"}, {"knob", "UNROLL"}, {"value", 8}, {"reason", "fails"}},
               {v8_fail_}),
       "another family or knob value"},
      {"dead_region 'fails' citing a passed measurement",
       finding("explorer", "dead_region", "rms_a", {{"family", "rms"}, {"knob", "VEC"}, {"value", 4}, {"reason", "fails"}},
               {v4_w1_}),
       "a cited measurement passed"},
      {"dead_region 'slow' citing a fast measurement",
       finding("explorer", "dead_region", "rms_a",
               {{"family", "rms"}, {"knob", "VEC"}, {"value", 4}, {"reason", "slow"}, {"slower_than_us", 11.0}},
               {v4_w1_, v4_w2_}),
       "not slower than"},
      {"dead_region 'slow' without slower_than_us",
       finding("explorer", "dead_region", "rms_a", {{"family", "rms"}, {"knob", "VEC"}, {"value", 1}, {"reason", "slow"}},
               {v1_slow_}),
       "claim needs"},
      {"dead_region with an unknown reason",
       finding("explorer", "dead_region", "rms_a", {{"family", "rms"}, {"knob", "VEC"}, {"value", 8}, {"reason", "ugly"}},
               {v8_fail_}),
       "claim needs"},
      {"near_sol above sol_us * (1 + within)",
       finding("explorer", "near_sol", "rms_a", {{"median_us", 10.0}, {"sol_us", 8.0}, {"within", 0.1}}, {v4_w1_}),
       "above sol_us"},
      {"near_sol with no cited measurement that fast",
       finding("explorer", "near_sol", "rms_a", {{"median_us", 9.0}, {"sol_us", 8.5}, {"within", 0.1}}, {v4_w1_, v1_slow_}),
       "no cited measurement"},
      {"near_sol citing only a failed measurement",
       finding("explorer", "near_sol", "rms_a", {{"median_us", 9.0}, {"sol_us", 8.5}, {"within", 0.1}}, {v8_fail_}),
       "no cited measurement"},
      {"an unknown kind", finding("explorer", "fastest_ever", "rms_a", {{"x", 1}}, {v4_w1_}), "unknown kind"},
      {"a claim that is not an object", finding("explorer", "near_sol", "rms_a", json::array({1, 2}), {v4_w1_}),
       "JSON object"},
  };
  for (const Case& c : cases) {
    std::string e = store_error_of([&] { agent->publish(c.f); });
    EXPECT_TRUE(has(e, c.expect)) << c.what << " -> " << e;
    // The same on the judge's connection: the store refuses, whoever asks.
    Finding jf = c.f;
    jf.author = "judge";
    e = store_error_of([&] { judge_->publish(jf); });
    EXPECT_TRUE(has(e, c.expect)) << c.what << " (judge) -> " << e;
  }
  // Cites that are not integers, through raw SQL.
  RawDb raw(db_);
  std::string e = raw.exec(
      "INSERT INTO findings (author, kind, problem, claim, cites) VALUES ('x', 'near_sol', 'rms_a', "
      "'{\"median_us\":20,\"sol_us\":19,\"within\":0.1}', '[\"1\"]')");
  EXPECT_TRUE(has(e, "measurement ids")) << e;
  e = raw.exec("INSERT INTO findings (author, kind, problem, claim, cites) VALUES ('x', 'near_sol', 'rms_a', "
               "'{\"median_us\":20,\"sol_us\":19,\"within\":0.1}', '{}')");
  EXPECT_TRUE(has(e, "measurement ids")) << e;
  EXPECT_TRUE(judge_->findings().empty());
}

TEST_F(StoreTest, SupportedFindingsAreAccepted) {
  auto agent = Store::open_agent(db_, "explorer");
  const json v4 = {{"VEC", 4}, {"THREADS", 128}};
  std::vector<Finding> ok = {
      // Claimed median exactly the slowest cited one, and above it.
      finding("explorer", "best_config", "rms_a", {{"family", "rms"}, {"knobs", v4}, {"median_us", 12.5}}, {v4_w1_, v4_w2_}),
      finding("explorer", "best_config", "rms_a", {{"family", "rms"}, {"knobs", v4}, {"median_us", 13}}, {v4_w1_}),
      finding("explorer", "dead_region", "rms_a", {{"family", "rms"}, {"knob", "VEC"}, {"value", 8}, {"reason", "fails"}},
              {v8_fail_, v8_fail2_}),
      finding("explorer", "dead_region", "rms_a",
              {{"family", "rms"}, {"knob", "VEC"}, {"value", 1}, {"reason", "slow"}, {"slower_than_us", 30}}, {v1_slow_}),
      finding("explorer", "near_sol", "rms_a", {{"median_us", 10.0}, {"sol_us", 9.5}, {"within", 0.06}}, {v4_w1_, v1_slow_}),
      // Scope "any problem of the op type": measurements of two problems.
      finding("explorer", "best_config", "", {{"family", "rms"}, {"knobs", v4}, {"median_us", 12.5}}, {v4_w1_, b4_}),
  };
  std::vector<int64_t> ids;
  for (const Finding& f : ok) ids.push_back(agent->publish(f));
  auto all = judge_->findings();
  ASSERT_EQ(all.size(), ok.size());
  for (size_t i = 0; i < ok.size(); ++i) {
    EXPECT_EQ(all[i].id, ids[i]);
    EXPECT_EQ(all[i].kind, ok[i].kind);
    EXPECT_EQ(all[i].claim, ok[i].claim);
    EXPECT_EQ(all[i].cites, ok[i].cites);
  }
}

TEST_F(StoreTest, BestConfigAtExactlyTheMeasuredMedianIsAccepted) {
  // A claim copied from the measurement must pass: JSON text -> double must round-trip.
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> us(0.5, 5000.0);
  for (int i = 0; i < 200; ++i) {
    double t = us(rng);
    int64_t id = judge_->record_measurement(meas("h_v4", "rms_a", "passed", t, "exact" + std::to_string(i)));
    double stored = judge_->measurement(id)->median_us;
    ASSERT_EQ(stored, t);
    judge_->publish(finding("judge", "best_config", "rms_a",
                            {{"family", "rms"}, {"knobs", {{"VEC", 4}, {"THREADS", 128}}}, {"median_us", stored}}, {id}));
    EXPECT_FALSE(store_error_of([&] {
                   judge_->publish(finding("judge", "best_config", "rms_a",
                                           {{"family", "rms"},
                                            {"knobs", {{"VEC", 4}, {"THREADS", 128}}},
                                            {"median_us", std::nextafter(stored, 0.0)}},
                                           {id}));
                 }).empty());
  }
}

// A candidate made from generated defines (agents/agent.h, Proposal::defines) records them as string
// knobs; a best_config naming that exact table is accepted, one naming another table is refused.
TEST_F(StoreTest, BestConfigWithGeneratedDefinesNamesTheExactTable) {
  const std::string t1 = "{1,9223372036854775807,21,20,8,1,0,0,0,0,0},", t2 = "{1,16,21,20,8,4,2,0,0,0,0},";
  json k1 = {{"WS_MB", 32}, {"LT_TABLE", t1}}, k2 = {{"WS_MB", 32}, {"LT_TABLE", t2}};
  judge_->record_candidate(cand("h_lt1", "gemm_a", "gemm_cublaslt_cuda", k1, "library", 5));
  judge_->record_candidate(cand("h_lt2", "gemm_a", "gemm_cublaslt_cuda", k2, "library", 6));
  const int64_t m1 = judge_->record_measurement(meas("h_lt1", "gemm_a", "passed", 4.0, "w1"));
  auto agent = Store::open_agent(db_, "library");
  Finding ok = finding("library", "best_config", "gemm_a",
                       {{"family", "gemm_cublaslt_cuda"}, {"knobs", k1}, {"median_us", 4.0}}, {m1});
  ok.op_type = "gemm";
  ok.bucket = "M<=16";
  EXPECT_GT(agent->publish(ok), 0);
  Finding other = ok;
  other.claim["knobs"] = k2;
  EXPECT_NE(store_error_of([&] { agent->publish(other); }).find("another candidate"), std::string::npos);
  EXPECT_EQ(judge_->candidate("h_lt1")->knobs, k1);
}

// --- import ---------------------------------------------------------------------------------------

TEST_F(StoreTest, ImportBringsFindingsWithTheirMeasurementsAndKeepsThemAppendOnly) {
  // Campaign B: its own candidates (one with the same hash as one of ours), measurements, findings.
  const fs::path other = dir_ / "other.db";
  std::string b_campaign;
  int64_t b_meas = 0, b_fail = 0;
  {
    auto b = Store::open_judge(other);
    b_campaign = b->campaign();
    b->record_candidate(cand("h_v4", "rms_a", "rms", {{"VEC", 4}, {"THREADS", 128}}, "explorer", 1));
    b->record_candidate(cand("h_v16", "rms_a", "rms", {{"VEC", 16}, {"THREADS", 256}}, "modeler", 2));
    b->record_measurement(meas("h_v4", "rms_a", "passed", 11.0));  // cited by nothing: not imported
    b_meas = b->record_measurement(meas("h_v16", "rms_a", "passed", 6.0));
    b_fail = b->record_measurement(meas("h_v16", "rms_a", "timeout", 0, "w2"));
    auto ba = Store::open_agent(other, "modeler");
    ba->publish(finding("modeler", "best_config", "rms_a",
                        {{"family", "rms"}, {"knobs", {{"VEC", 16}, {"THREADS", 256}}}, {"median_us", 6.0}}, {b_meas}));
    ba->publish(finding("modeler", "dead_region", "rms_a",
                        {{"family", "rms"}, {"knob", "VEC"}, {"value", 16}, {"reason", "fails"}}, {b_fail}));
  }
  ASSERT_NE(b_campaign, judge_->campaign());
  int64_t ours = judge_->publish(best_v4("judge", 12.5));

  EXPECT_EQ(judge_->import_findings(other), 2);
  auto all = judge_->findings();
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[0].id, ours);
  const Finding& best = all[1];
  EXPECT_EQ(best.origin, b_campaign);
  EXPECT_EQ(best.author, "modeler");
  EXPECT_EQ(best.kind, "best_config");
  ASSERT_EQ(best.cites.size(), 1u);
  auto m = judge_->measurement(best.cites[0]);
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->origin, b_campaign);
  EXPECT_DOUBLE_EQ(m->median_us, 6.0);
  EXPECT_EQ(m->candidate, b_campaign + "/h_v16");
  auto c = judge_->candidate(m->candidate);
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->knobs, json({{"THREADS", 256}, {"VEC", 16}}));
  EXPECT_EQ(c->origin, b_campaign);
  EXPECT_EQ(all[2].origin, b_campaign);
  EXPECT_EQ(judge_->measurement(all[2].cites[0])->verdict, "timeout");

  // This campaign's own lists do not mix in the imported rows; ours keep their identity.
  EXPECT_EQ(judge_->measurements().size(), 6u);
  EXPECT_EQ(judge_->candidates().size(), 4u);
  EXPECT_EQ(judge_->candidate("h_v4")->origin, "");
  // A later local candidate with the same hash as an imported one is recorded as ours.
  judge_->record_candidate(cand("h_v16", "rms_a", "rms", {{"VEC", 16}, {"THREADS", 256}}, "transfer", 5));
  EXPECT_EQ(judge_->candidate("h_v16")->origin, "");

  // Imported findings and measurements are append-only / immutable like ours.
  const std::string fid = std::to_string(best.id), mid = std::to_string(best.cites[0]);
  EXPECT_TRUE(has(store_error_of([&] { judge_->exec("UPDATE findings SET claim = '{}' WHERE id = " + fid); }),
                  "findings are append-only"));
  EXPECT_TRUE(has(store_error_of([&] { judge_->exec("DELETE FROM findings WHERE id = " + fid); }), "findings are append-only"));
  EXPECT_TRUE(has(store_error_of([&] { judge_->exec("UPDATE measurements SET median_us = 1 WHERE id = " + mid); }),
                  "measurements are immutable"));
  EXPECT_TRUE(has(store_error_of([&] { judge_->exec("DELETE FROM measurements WHERE id = " + mid); }),
                  "measurements are immutable"));
  EXPECT_TRUE(has(store_error_of([&] { judge_->exec("DELETE FROM candidates WHERE hash = '" + b_campaign + "/h_v16'"); }),
                  "candidates are immutable"));

  // A finding of this campaign cannot cite the imported evidence as its own.
  auto agent = Store::open_agent(db_, "transfer");
  std::string e = store_error_of([&] {
    agent->publish(finding("transfer", "best_config", "rms_a",
                           {{"family", "rms"}, {"knobs", {{"VEC", 16}, {"THREADS", 256}}}, {"median_us", 6.0}},
                           {best.cites[0]}));
  });
  EXPECT_TRUE(has(e, "another campaign")) << e;
  // Agents see the imported findings and their evidence.
  EXPECT_EQ(agent->findings("rmsnorm").size(), 3u);
  EXPECT_DOUBLE_EQ(agent->measurement(best.cites[0])->median_us, 6.0);

  // Importing again adds nothing; importing ourselves adds nothing.
  EXPECT_EQ(judge_->import_findings(other), 0);
  EXPECT_EQ(judge_->import_findings(db_), 0);
  EXPECT_EQ(judge_->findings().size(), 3u);

  // A third campaign importing from us gets B's findings with their original origin, once.
  const fs::path third = dir_ / "third.db";
  auto t = Store::open_judge(third);
  EXPECT_EQ(t->import_findings(db_), 3);
  EXPECT_EQ(t->import_findings(other), 0);
  auto tf = t->findings();
  ASSERT_EQ(tf.size(), 3u);
  EXPECT_EQ(tf[0].origin, judge_->campaign());
  EXPECT_EQ(tf[1].origin, b_campaign);
  EXPECT_EQ(t->measurement(tf[1].cites[0])->candidate, b_campaign + "/h_v16");
  EXPECT_EQ(t->measurement(tf[0].cites[0])->candidate, judge_->campaign() + "/h_v4");
}

TEST_F(StoreTest, ImportFromAFileThatIsNotAStoreFails) {
  EXPECT_FALSE(store_error_of([&] { judge_->import_findings(dir_ / "missing.db"); }).empty());
  const fs::path plain = dir_ / "plain.db";
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(plain.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "CREATE TABLE findings (x)", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(db);
  std::string e = store_error_of([&] { judge_->import_findings(plain); });
  EXPECT_TRUE(has(e, "not a campaign store")) << e;
  EXPECT_FALSE(store_error_of([&] { Store::open_agent(plain, "explorer"); }).empty());
}

}  // namespace
}  // namespace ka
