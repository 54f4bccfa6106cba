// store/store.cpp — the campaign store (store.h): one SQLite file per campaign, in WAL mode.
// The rules (immutable measurements and candidates, append-only findings and budget log, findings
// checked against the measurements they cite) are triggers in the schema below, so they hold for
// every connection and every statement. This file opens the connections (the judge's read-write
// one; an agent's read-only one plus its insert-only publish connection, fenced by an authorizer),
// maps rows to the structs of store.h, and imports the findings of another campaign.
// May call: SQLite, nlohmann-json, spdlog. Called by: the engine, agents (through the engine), tools.
#include "store/store.h"

#include <spdlog/spdlog.h>
#include <sqlite3.h>

#include <cmath>
#include <cstring>
#include <utility>

namespace ka {
namespace {

namespace fs = std::filesystem;

constexpr int kSchemaVersion = 1;
constexpr int kBusyTimeoutMs = 30000;

// The schema, version 1. docs/findings.md documents the finding checks in prose.
constexpr const char* kSchema =
R"SQL(
CREATE TABLE schema_version (version INTEGER NOT NULL);
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);

-- Candidates: identity = content hash. Imported candidates have origin <> '' and the key
-- '<origin>/<hash in its campaign>', so they never collide with this campaign's own.
CREATE TABLE candidates (
  hash       TEXT PRIMARY KEY NOT NULL CHECK (hash <> ''),
  problem    TEXT NOT NULL,
  family     TEXT NOT NULL DEFAULT '',
  knobs      TEXT NOT NULL DEFAULT '{}',
  agent      TEXT NOT NULL DEFAULT '',
  seq        INTEGER NOT NULL DEFAULT 0,
  solution   TEXT NOT NULL DEFAULT 'null' CHECK (json_valid(solution)),
  origin     TEXT NOT NULL DEFAULT '',
  created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
);
CREATE INDEX candidates_problem ON candidates(problem);

CREATE TABLE measurements (
  id           INTEGER PRIMARY KEY AUTOINCREMENT,
  candidate    TEXT NOT NULL REFERENCES candidates(hash),
  problem      TEXT NOT NULL,
  workload     TEXT NOT NULL DEFAULT '',
  verdict      TEXT NOT NULL CHECK (verdict <> ''),
  message      TEXT NOT NULL DEFAULT '',
  median_us    REAL NOT NULL DEFAULT 0,
  spread       REAL NOT NULL DEFAULT 0,
  reference_us REAL NOT NULL DEFAULT 0,
  device       TEXT NOT NULL DEFAULT '',
  gpu          TEXT NOT NULL DEFAULT '',
  extra        TEXT NOT NULL DEFAULT 'null' CHECK (json_valid(extra)),
  origin       TEXT NOT NULL DEFAULT '',   -- '' = this campaign; else the source campaign
  origin_id    INTEGER,                    -- imported: the id in the source campaign
  created_at   TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
);
CREATE INDEX measurements_problem ON measurements(problem);
CREATE INDEX measurements_candidate ON measurements(candidate);
-- A candidate is measured once per workload and GPU: a resumed campaign can never measure twice.
CREATE UNIQUE INDEX measurements_once ON measurements(candidate, workload, gpu);
CREATE UNIQUE INDEX measurements_origin ON measurements(origin, origin_id);

CREATE TABLE findings (
  id         INTEGER PRIMARY KEY AUTOINCREMENT,
  author     TEXT NOT NULL,
  kind       TEXT NOT NULL,
  problem    TEXT NOT NULL DEFAULT '',
  op_type    TEXT NOT NULL DEFAULT '',
  device     TEXT NOT NULL DEFAULT '',
  bucket     TEXT NOT NULL DEFAULT '',
  claim      TEXT NOT NULL CHECK (json_valid(claim)),
  cites      TEXT NOT NULL CHECK (json_valid(cites)),
  origin     TEXT NOT NULL DEFAULT '',
  origin_id  INTEGER,
  created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
);
CREATE INDEX findings_op_type ON findings(op_type);
CREATE UNIQUE INDEX findings_origin ON findings(origin, origin_id);

CREATE TABLE budget_log (
  id           INTEGER PRIMARY KEY AUTOINCREMENT,
  agent        TEXT NOT NULL,
  share_before REAL NOT NULL,
  share_after  REAL NOT NULL,
  reason       TEXT NOT NULL DEFAULT '',
  created_at   TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
);

-- Immutability. A BEFORE INSERT trigger also refuses a row whose key already exists, so that
-- INSERT OR REPLACE (which deletes without firing DELETE triggers) cannot overwrite one.
CREATE TRIGGER candidates_no_update BEFORE UPDATE ON candidates
BEGIN SELECT RAISE(ABORT, 'candidates are immutable'); END;
CREATE TRIGGER candidates_no_delete BEFORE DELETE ON candidates
BEGIN SELECT RAISE(ABORT, 'candidates are immutable'); END;
CREATE TRIGGER candidates_check BEFORE INSERT ON candidates
BEGIN
  SELECT RAISE(ABORT, 'candidates are immutable')
   WHERE EXISTS (SELECT 1 FROM candidates WHERE hash = NEW.hash);
  SELECT RAISE(ABORT, 'candidate knobs must be a JSON object')
   WHERE NOT coalesce(CASE WHEN json_valid(NEW.knobs) THEN json_type(NEW.knobs) END = 'object', 0);
  SELECT RAISE(ABORT, 'candidate knobs must be canonical JSON (keys sorted, no spaces)')
   WHERE NEW.knobs IS NOT json(NEW.knobs)
      OR EXISTS (SELECT 1 FROM json_each(NEW.knobs) a, json_each(NEW.knobs) b
                  WHERE a.id < b.id AND a.key >= b.key);
END;

CREATE TRIGGER measurements_no_update BEFORE UPDATE ON measurements
BEGIN SELECT RAISE(ABORT, 'measurements are immutable'); END;
CREATE TRIGGER measurements_no_delete BEFORE DELETE ON measurements
BEGIN SELECT RAISE(ABORT, 'measurements are immutable'); END;
CREATE TRIGGER measurements_check BEFORE INSERT ON measurements
BEGIN
  SELECT RAISE(ABORT, 'measurements are immutable')
   WHERE EXISTS (SELECT 1 FROM measurements WHERE id = NEW.id)
      OR (NEW.origin_id IS NOT NULL AND EXISTS (
            SELECT 1 FROM measurements WHERE origin = NEW.origin AND origin_id = NEW.origin_id));
  SELECT RAISE(ABORT, 'measurement of an unknown candidate')
   WHERE NOT EXISTS (SELECT 1 FROM candidates WHERE hash = NEW.candidate);
  SELECT RAISE(ABORT, 'measurement problem differs from its candidate''s')
   WHERE (SELECT problem FROM candidates WHERE hash = NEW.candidate) IS NOT NEW.problem;
  SELECT RAISE(ABORT, 'measurement origin differs from its candidate''s')
   WHERE (SELECT origin FROM candidates WHERE hash = NEW.candidate) IS NOT NEW.origin;
  SELECT RAISE(ABORT, 'an imported measurement needs its source id, a local one none')
   WHERE (NEW.origin = '') <> (NEW.origin_id IS NULL);
END;

CREATE TRIGGER budget_log_no_update BEFORE UPDATE ON budget_log
BEGIN SELECT RAISE(ABORT, 'the budget log is append-only'); END;
CREATE TRIGGER budget_log_no_delete BEFORE DELETE ON budget_log
BEGIN SELECT RAISE(ABORT, 'the budget log is append-only'); END;
CREATE TRIGGER budget_log_check BEFORE INSERT ON budget_log
BEGIN
  SELECT RAISE(ABORT, 'the budget log is append-only')
   WHERE EXISTS (SELECT 1 FROM budget_log WHERE id = NEW.id);
END;

CREATE TRIGGER findings_no_update BEFORE UPDATE ON findings
BEGIN SELECT RAISE(ABORT, 'findings are append-only'); END;
CREATE TRIGGER findings_no_delete BEFORE DELETE ON findings
BEGIN SELECT RAISE(ABORT, 'findings are append-only'); END;

-- The finding check: each statement refuses one way a finding can be unsupported; the first
-- that applies aborts the INSERT with its message. "cited" below means: the measurements whose
-- ids are in NEW.cites (json_each), joined to their candidates for family and knobs.
CREATE TRIGGER findings_check BEFORE INSERT ON findings
BEGIN
  SELECT RAISE(ABORT, 'findings are append-only')
   WHERE EXISTS (SELECT 1 FROM findings WHERE id = NEW.id)
      OR (NEW.origin_id IS NOT NULL AND EXISTS (
            SELECT 1 FROM findings WHERE origin = NEW.origin AND origin_id = NEW.origin_id));
  SELECT RAISE(ABORT, 'finding: unknown kind (best_config, dead_region, near_sol)')
   WHERE NEW.kind IS NULL OR NEW.kind NOT IN ('best_config', 'dead_region', 'near_sol');
  SELECT RAISE(ABORT, 'finding: no author')
   WHERE coalesce(NEW.author, '') = '';
  SELECT RAISE(ABORT, 'finding: an imported finding needs its source id, a local one none')
   WHERE (NEW.origin = '') <> (NEW.origin_id IS NULL);
  SELECT RAISE(ABORT, 'finding: claim must be a JSON object')
   WHERE NOT coalesce(CASE WHEN json_valid(NEW.claim) THEN json_type(NEW.claim) END = 'object', 0);
  SELECT RAISE(ABORT, 'finding: cites must be a non-empty JSON array of measurement ids')
   WHERE NOT coalesce(CASE WHEN json_valid(NEW.cites) THEN json_type(NEW.cites) END = 'array', 0)
      OR json_array_length(NEW.cites) = 0;
  SELECT RAISE(ABORT, 'finding: cites must be a non-empty JSON array of measurement ids')
   WHERE EXISTS (SELECT 1 FROM json_each(NEW.cites) WHERE type <> 'integer');
  SELECT RAISE(ABORT, 'finding cites a measurement that does not exist')
   WHERE EXISTS (SELECT 1 FROM json_each(NEW.cites) j
                  WHERE NOT EXISTS (SELECT 1 FROM measurements m WHERE m.id = j.value));
  SELECT RAISE(ABORT, 'finding cites a measurement of another campaign than its origin')
   WHERE EXISTS (SELECT 1 FROM json_each(NEW.cites) j JOIN measurements m ON m.id = j.value
                  WHERE m.origin IS NOT NEW.origin);
  SELECT RAISE(ABORT, 'finding cites a measurement of another problem')
   WHERE NEW.problem <> ''
     AND EXISTS (SELECT 1 FROM json_each(NEW.cites) j JOIN measurements m ON m.id = j.value
                  WHERE m.problem IS NOT NEW.problem);
  SELECT RAISE(ABORT, 'finding cites a measurement of another device')
   WHERE NEW.device <> ''
     AND EXISTS (SELECT 1 FROM json_each(NEW.cites) j JOIN measurements m ON m.id = j.value
                  WHERE m.device IS NOT NEW.device);

  -- best_config {"family", "knobs", "median_us"}: every cited measurement passed, was timed, is of
  -- that family with exactly those knobs, and has median <= median_us.
  SELECT RAISE(ABORT, 'best_config: claim needs "family" (text), "knobs" (object), "median_us" (number)')
   WHERE NEW.kind = 'best_config'
     AND NOT coalesce(json_type(NEW.claim, '$.family') = 'text'
                      AND json_type(NEW.claim, '$.knobs') = 'object'
                      AND json_type(NEW.claim, '$.median_us') IN ('integer', 'real'), 0);
  SELECT RAISE(ABORT, 'best_config: a cited measurement did not pass (or was not timed)')
   WHERE NEW.kind = 'best_config'
     AND EXISTS (SELECT 1 FROM json_each(NEW.cites) j JOIN measurements m ON m.id = j.value
                  WHERE m.verdict IS NOT 'passed' OR NOT m.median_us > 0);
  SELECT RAISE(ABORT, 'best_config: a cited measurement is of another candidate (family/knobs)')
   WHERE NEW.kind = 'best_config'
     AND EXISTS (SELECT 1 FROM json_each(NEW.cites) j JOIN measurements m ON m.id = j.value
                  JOIN candidates c ON c.hash = m.candidate
                  WHERE c.family IS NOT json_extract(NEW.claim, '$.family')
                     OR c.knobs IS NOT json_extract(NEW.claim, '$.knobs'));
  SELECT RAISE(ABORT, 'best_config: a cited measurement is slower than the claimed median_us')
   WHERE NEW.kind = 'best_config'
     AND EXISTS (SELECT 1 FROM json_each(NEW.cites) j JOIN measurements m ON m.id = j.value
                  WHERE NOT m.median_us <= json_extract(NEW.claim, '$.median_us'));

  -- dead_region {"family", "knob", "value", "reason": "fails"|"slow", "slower_than_us"}: every
  -- cited measurement is of that family with knob = value, and failed ("fails": verdict is not
  -- passed) or was slower than slower_than_us ("slow": timed median > slower_than_us).
  SELECT RAISE(ABORT, 'dead_region: claim needs "family", "knob", "value", "reason": "fails" or "slow" (with "slower_than_us" > 0)')
   WHERE NEW.kind = 'dead_region'
     AND NOT coalesce(json_type(NEW.claim, '$.family') = 'text'
                      AND json_type(NEW.claim, '$.knob') = 'text'
                      AND json_extract(NEW.claim, '$.knob') <> ''
                      AND instr(json_extract(NEW.claim, '$.knob'), '"') = 0
                      AND json_type(NEW.claim, '$.value') IN ('integer', 'real', 'text', 'true', 'false')
                      AND (json_extract(NEW.claim, '$.reason') IS 'fails'
                           OR (json_extract(NEW.claim, '$.reason') IS 'slow'
                               AND json_type(NEW.claim, '$.slower_than_us') IN ('integer', 'real')
                               AND json_extract(NEW.claim, '$.slower_than_us') > 0)), 0);
  SELECT RAISE(ABORT, 'dead_region: a cited measurement is of another family or knob value')
   WHERE NEW.kind = 'dead_region'
     AND EXISTS (SELECT 1 FROM json_each(NEW.cites) j JOIN measurements m ON m.id = j.value
                  JOIN candidates c ON c.hash = m.candidate
                  WHERE c.family IS NOT json_extract(NEW.claim, '$.family')
                     OR json_type(c.knobs, '$."' || json_extract(NEW.claim, '$.knob') || '"')
                          IS NOT json_type(NEW.claim, '$.value')
                     OR json_extract(c.knobs, '$."' || json_extract(NEW.claim, '$.knob') || '"')
                          IS NOT json_extract(NEW.claim, '$.value'));
  SELECT RAISE(ABORT, 'dead_region "fails": a cited measurement passed')
   WHERE NEW.kind = 'dead_region' AND json_extract(NEW.claim, '$.reason') = 'fails'
     AND EXISTS (SELECT 1 FROM json_each(NEW.cites) j JOIN measurements m ON m.id = j.value
                  WHERE m.verdict IS 'passed');
  SELECT RAISE(ABORT, 'dead_region "slow": a cited measurement is not slower than slower_than_us')
   WHERE NEW.kind = 'dead_region' AND json_extract(NEW.claim, '$.reason') = 'slow'
     AND EXISTS (SELECT 1 FROM json_each(NEW.cites) j JOIN measurements m ON m.id = j.value
                  WHERE NOT m.median_us > json_extract(NEW.claim, '$.slower_than_us'));

  -- near_sol {"median_us", "sol_us", "within"}: median_us <= sol_us * (1 + within), and at least
  -- one cited measurement passed with a timed median <= median_us.
  SELECT RAISE(ABORT, 'near_sol: claim needs "median_us" > 0, "sol_us" > 0, "within" >= 0 (numbers)')
   WHERE NEW.kind = 'near_sol'
     AND NOT coalesce(json_type(NEW.claim, '$.median_us') IN ('integer', 'real')
                      AND json_type(NEW.claim, '$.sol_us') IN ('integer', 'real')
                      AND json_type(NEW.claim, '$.within') IN ('integer', 'real')
                      AND json_extract(NEW.claim, '$.median_us') > 0
                      AND json_extract(NEW.claim, '$.sol_us') > 0
                      AND json_extract(NEW.claim, '$.within') >= 0, 0);
  SELECT RAISE(ABORT, 'near_sol: median_us is above sol_us * (1 + within)')
   WHERE NEW.kind = 'near_sol'
     AND NOT json_extract(NEW.claim, '$.median_us')
             <= json_extract(NEW.claim, '$.sol_us') * (1 + json_extract(NEW.claim, '$.within'));
  SELECT RAISE(ABORT, 'near_sol: no cited measurement passed with median <= median_us')
   WHERE NEW.kind = 'near_sol'
     AND NOT EXISTS (SELECT 1 FROM json_each(NEW.cites) j JOIN measurements m ON m.id = j.value
                      WHERE m.verdict IS 'passed' AND m.median_us > 0
                        AND m.median_us <= json_extract(NEW.claim, '$.median_us'));
END;
)SQL"
;

[[noreturn]] void fail(sqlite3* db, const std::string& what) {
  throw StoreError("store: " + what + ": " + (db ? sqlite3_errmsg(db) : "out of memory"));
}

// One prepared statement; every SQLite failure becomes a StoreError naming `what`.
class Stmt {
 public:
  Stmt(sqlite3* db, const char* sql, std::string what) : db_(db), what_(std::move(what)) {
    if (sqlite3_prepare_v2(db, sql, -1, &s_, nullptr) != SQLITE_OK) fail(db_, what_);
  }
  ~Stmt() { sqlite3_finalize(s_); }
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;

  Stmt& text(int i, const std::string& v) {
    return check(sqlite3_bind_text(s_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT));
  }
  Stmt& int64(int i, int64_t v) { return check(sqlite3_bind_int64(s_, i, v)); }
  Stmt& real(int i, double v) {
    if (!std::isfinite(v)) throw StoreError("store: " + what_ + ": a number is not finite");
    return check(sqlite3_bind_double(s_, i, v));
  }
  Stmt& null(int i) { return check(sqlite3_bind_null(s_, i)); }

  // True while there is a row; false when done.
  bool step() {
    int rc = sqlite3_step(s_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    fail(db_, what_);
  }
  void run() {
    while (step()) {
    }
  }
  void reset() {
    sqlite3_reset(s_);
    sqlite3_clear_bindings(s_);
  }

  std::string col_text(int c) const {
    const unsigned char* p = sqlite3_column_text(s_, c);
    return p ? std::string(reinterpret_cast<const char*>(p), sqlite3_column_bytes(s_, c)) : "";
  }
  int64_t col_int(int c) const { return sqlite3_column_int64(s_, c); }
  double col_real(int c) const { return sqlite3_column_double(s_, c); }
  bool col_null(int c) const { return sqlite3_column_type(s_, c) == SQLITE_NULL; }
  nlohmann::json col_json(int c) const {
    auto j = nlohmann::json::parse(col_text(c), nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded()) throw StoreError("store: " + what_ + ": malformed JSON in the store");
    return j;
  }

 private:
  Stmt& check(int rc) {
    if (rc != SQLITE_OK) fail(db_, what_);
    return *this;
  }
  sqlite3* db_;
  sqlite3_stmt* s_ = nullptr;
  std::string what_;
};

void exec_sql(sqlite3* db, const std::string& sql, const std::string& what) {
  char* err = nullptr;
  if (sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
    std::string msg = err ? err : sqlite3_errmsg(db);
    sqlite3_free(err);
    throw StoreError("store: " + what + ": " + msg);
  }
}

// A transaction that rolls back unless committed. BEGIN IMMEDIATE takes the write lock at once
// (waiting up to the busy timeout), so read-then-write sequences cannot race another writer.
class Txn {
 public:
  Txn(sqlite3* db, const std::string& what) : db_(db), what_(what) {
    exec_sql(db_, "BEGIN IMMEDIATE", what_);
  }
  ~Txn() {
    if (!done_) sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
  }
  void commit() {
    exec_sql(db_, "COMMIT", what_);
    done_ = true;
  }

 private:
  sqlite3* db_;
  std::string what_;
  bool done_ = false;
};

sqlite3* open_connection(const fs::path& path, int flags) {
  sqlite3* db = nullptr;
  int rc = sqlite3_open_v2(path.c_str(), &db, flags | SQLITE_OPEN_FULLMUTEX, nullptr);
  if (rc != SQLITE_OK) {
    std::string msg = db ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
    sqlite3_close(db);
    throw StoreError("store: cannot open " + path.string() + ": " + msg);
  }
  sqlite3_extended_result_codes(db, 1);
  sqlite3_busy_timeout(db, kBusyTimeoutMs);
  // Defensive mode: ordinary SQL cannot corrupt the file (writable_schema, journal_mode=OFF, ...).
  sqlite3_db_config(db, SQLITE_DBCONFIG_DEFENSIVE, 1, nullptr);
  // Double-quoted strings are identifiers only (a mistyped column never becomes a string).
  sqlite3_db_config(db, SQLITE_DBCONFIG_DQS_DML, 0, nullptr);
  sqlite3_db_config(db, SQLITE_DBCONFIG_DQS_DDL, 0, nullptr);
  return db;
}

// Closes a connection opened here unless release()d.
struct ConnGuard {
  sqlite3* db;
  ~ConnGuard() { sqlite3_close_v2(db); }
};

// Run on a connection before its authorizer is installed: loads the schema and connects the
// json_each virtual table (connecting it declares its columns, which the authorizer would see as a
// schema write). A later schema change makes a fenced connection fail closed ("not authorized").
constexpr const char* kWarmUp =
    "PRAGMA foreign_keys = ON; SELECT count(*) FROM sqlite_master; SELECT count(*) FROM json_each('[]')";

bool is(const char* a, const char* b) { return a && std::strcmp(a, b) == 0; }

// An agent's publish connection: the INSERT into findings and what its triggers need to read.
int publish_authorizer(void*, int action, const char* a1, const char*, const char* db, const char*) {
  switch (action) {
    case SQLITE_READ:
    case SQLITE_SELECT:
    case SQLITE_FUNCTION:
    case SQLITE_TRANSACTION:
      return SQLITE_OK;
    case SQLITE_INSERT:
      return is(a1, "findings") && is(db, "main") ? SQLITE_OK : SQLITE_DENY;
    default:
      return SQLITE_DENY;
  }
}

// Read-only connections (an agent's, and the source of an import): queries, and pragmas that only
// read. The connection is opened read-only as well; this also keeps out ATTACH and temp objects.
int reader_authorizer(void*, int action, const char*, const char* a2, const char*, const char*) {
  switch (action) {
    case SQLITE_READ:
    case SQLITE_SELECT:
    case SQLITE_FUNCTION:
    case SQLITE_RECURSIVE:
    case SQLITE_TRANSACTION:
      return SQLITE_OK;
    case SQLITE_PRAGMA:
      return a2 == nullptr ? SQLITE_OK : SQLITE_DENY;
    default:
      return SQLITE_DENY;
  }
}

// The judge's connection may do anything the triggers allow, except take the store's structure
// apart (the triggers and tables that hold the rules).
int judge_authorizer(void*, int action, const char*, const char*, const char* db, const char*) {
  switch (action) {
    case SQLITE_DROP_TABLE:
    case SQLITE_DROP_TRIGGER:
    case SQLITE_DROP_VIEW:
    case SQLITE_ALTER_TABLE:
      return is(db, "temp") ? SQLITE_OK : SQLITE_DENY;
    default:
      return SQLITE_OK;
  }
}

int schema_version(sqlite3* db) {
  Stmt has(db, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'schema_version'",
           "read schema version");
  has.step();
  if (has.col_int(0) == 0) return 0;
  Stmt v(db, "SELECT max(version) FROM schema_version", "read schema version");
  v.step();
  return v.col_null(0) ? 0 : static_cast<int>(v.col_int(0));
}

void require_version(sqlite3* db, const fs::path& path) {
  int v = schema_version(db);
  if (v == 0) throw StoreError("store: " + path.string() + " is not a campaign store");
  if (v != kSchemaVersion)
    throw StoreError("store: " + path.string() + " has schema version " + std::to_string(v) +
                     ", this build reads version " + std::to_string(kSchemaVersion));
}

std::string read_campaign(sqlite3* db, const fs::path& path) {
  Stmt s(db, "SELECT value FROM meta WHERE key = 'campaign'", "read campaign id");
  if (s.step()) return s.col_text(0);
  return path.stem().string();
}

std::string knobs_text(const nlohmann::json& knobs, const std::string& what) {
  if (knobs.is_null()) return "{}";
  if (!knobs.is_object()) throw StoreError("store: " + what + ": knobs must be a JSON object");
  return knobs.dump();  // nlohmann objects are sorted by key: canonical text
}

constexpr const char* kMeasurementCols =
    "id, candidate, problem, workload, verdict, message, median_us, spread, reference_us, device, "
    "gpu, extra, created_at, origin, origin_id";

Measurement read_measurement(const Stmt& s) {
  Measurement m;
  m.id = s.col_int(0);
  m.candidate = s.col_text(1);
  m.problem = s.col_text(2);
  m.workload = s.col_text(3);
  m.verdict = s.col_text(4);
  m.message = s.col_text(5);
  m.median_us = s.col_real(6);
  m.spread = s.col_real(7);
  m.reference_us = s.col_real(8);
  m.device = s.col_text(9);
  m.gpu = s.col_text(10);
  m.extra = s.col_json(11);
  m.created_at = s.col_text(12);
  m.origin = s.col_text(13);
  return m;
}

constexpr const char* kCandidateCols =
    "hash, problem, family, knobs, agent, seq, solution, origin, created_at";

CandidateRecord read_candidate(const Stmt& s) {
  CandidateRecord c;
  c.hash = s.col_text(0);
  c.problem = s.col_text(1);
  c.family = s.col_text(2);
  c.knobs = s.col_json(3);
  c.agent = s.col_text(4);
  c.seq = s.col_int(5);
  c.solution = s.col_json(6);
  c.origin = s.col_text(7);
  return c;
}

constexpr const char* kFindingCols =
    "id, author, kind, problem, op_type, device, bucket, claim, cites, origin, created_at, origin_id";

Finding read_finding(const Stmt& s) {
  Finding f;
  f.id = s.col_int(0);
  f.author = s.col_text(1);
  f.kind = s.col_text(2);
  f.problem = s.col_text(3);
  f.op_type = s.col_text(4);
  f.device = s.col_text(5);
  f.bucket = s.col_text(6);
  f.claim = s.col_json(7);
  for (const auto& c : s.col_json(8))
    if (c.is_number_integer()) f.cites.push_back(c.get<int64_t>());
  f.origin = s.col_text(9);
  f.created_at = s.col_text(10);
  return f;
}

// Appends a finding through `db` (the triggers decide whether it stands). origin_id < 0: none.
int64_t insert_finding(sqlite3* db, const Finding& f, int64_t origin_id, const std::string& created_at) {
  Stmt s(db,
         "INSERT INTO findings (author, kind, problem, op_type, device, bucket, claim, cites, origin, "
         "origin_id, created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, "
         "coalesce(?11, strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))) RETURNING id",
         "publish");
  s.text(1, f.author).text(2, f.kind).text(3, f.problem).text(4, f.op_type).text(5, f.device);
  s.text(6, f.bucket).text(7, f.claim.dump()).text(8, nlohmann::json(f.cites).dump()).text(9, f.origin);
  if (origin_id >= 0) s.int64(10, origin_id); else s.null(10);
  if (!created_at.empty()) s.text(11, created_at); else s.null(11);
  if (!s.step()) throw StoreError("store: publish: no id returned");
  int64_t id = s.col_int(0);
  s.run();
  return id;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Opening

std::unique_ptr<Store> Store::open_judge(const fs::path& db) {
  std::unique_ptr<Store> s(new Store());
  s->path_ = db;
  s->db_ = open_connection(db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
  {
    Stmt wal(s->db_, "PRAGMA journal_mode = WAL", "set WAL mode");
    wal.step();
    if (wal.col_text(0) != "wal")
      throw StoreError("store: " + db.string() + ": cannot use WAL mode (got " + wal.col_text(0) + ")");
  }
  exec_sql(s->db_, "PRAGMA foreign_keys = ON; PRAGMA synchronous = NORMAL", "configure");
  {
    Txn t(s->db_, "create schema");
    int v = schema_version(s->db_);
    if (v == 0) {
      exec_sql(s->db_, kSchema, "create schema");
      Stmt ver(s->db_, "INSERT INTO schema_version (version) VALUES (?1)", "create schema");
      ver.int64(1, kSchemaVersion).run();
      Stmt id(s->db_,
              "INSERT INTO meta (key, value) VALUES ('campaign', ?1 || '-' || lower(hex(randomblob(4))))",
              "create schema");
      id.text(1, db.stem().string()).run();
    } else if (v != kSchemaVersion) {
      throw StoreError("store: " + db.string() + " has schema version " + std::to_string(v) +
                       ", this build reads version " + std::to_string(kSchemaVersion));
    }
    t.commit();
  }
  s->campaign_ = read_campaign(s->db_, db);
  sqlite3_set_authorizer(s->db_, judge_authorizer, nullptr);
  return s;
}

std::unique_ptr<Store> Store::open_agent(const fs::path& db, const std::string& agent) {
  if (agent.empty()) throw StoreError("store: an agent connection needs the agent's name");
  std::error_code ec;
  if (!fs::is_regular_file(db, ec))
    throw StoreError("store: no campaign store at " + db.string() + " (the judge creates it)");
  std::unique_ptr<Store> s(new Store());
  s->path_ = db;
  s->agent_ = agent;
  // (a) every read and exec(): a read-only connection.
  s->db_ = open_connection(db, SQLITE_OPEN_READONLY);
  require_version(s->db_, db);
  s->campaign_ = read_campaign(s->db_, db);
  exec_sql(s->db_, kWarmUp, "configure");
  sqlite3_set_authorizer(s->db_, reader_authorizer, nullptr);
  // (b) publish() only: read-write, but the authorizer lets it do nothing except INSERT into
  // findings (and the reads of the findings triggers).
  s->writer_ = open_connection(db, SQLITE_OPEN_READWRITE);
  exec_sql(s->writer_, kWarmUp, "configure");
  sqlite3_set_authorizer(s->writer_, publish_authorizer, nullptr);
  return s;
}

Store::~Store() {
  if (writer_) sqlite3_close_v2(writer_);
  if (db_) sqlite3_close_v2(db_);
}

// ---------------------------------------------------------------------------------------------
// Judge only

namespace {
void require_judge(const Store& s, const char* what) {
  if (!s.is_judge())
    throw StoreError(std::string("store: ") + what + ": only the judge's connection may do this (agent '" +
                     s.agent() + "')");
}
}  // namespace

void Store::record_candidate(const CandidateRecord& c) {
  require_judge(*this, "record_candidate");
  if (!c.origin.empty()) throw StoreError("store: record_candidate: imported candidates come from import_findings");
  // Idempotent on hash: the first record stands (the schema refuses to overwrite one).
  Stmt s(db_,
         "INSERT INTO candidates (hash, problem, family, knobs, agent, seq, solution) "
         "SELECT ?1, ?2, ?3, ?4, ?5, ?6, json(?7) "
         "WHERE NOT EXISTS (SELECT 1 FROM candidates WHERE hash = ?1)",
         "record_candidate");
  s.text(1, c.hash).text(2, c.problem).text(3, c.family).text(4, knobs_text(c.knobs, "record_candidate"));
  s.text(5, c.agent).int64(6, c.seq).text(7, c.solution.dump());
  s.run();
}

int64_t Store::record_measurement(const Measurement& m) {
  require_judge(*this, "record_measurement");
  if (!m.origin.empty())
    throw StoreError("store: record_measurement: imported measurements come from import_findings");
  Stmt s(db_,
         "INSERT INTO measurements (candidate, problem, workload, verdict, message, median_us, spread, "
         "reference_us, device, gpu, extra) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11) "
         "RETURNING id",
         "record_measurement");
  s.text(1, m.candidate).text(2, m.problem).text(3, m.workload).text(4, m.verdict).text(5, m.message);
  s.real(6, m.median_us).real(7, m.spread).real(8, m.reference_us).text(9, m.device).text(10, m.gpu);
  s.text(11, m.extra.dump());
  if (!s.step()) throw StoreError("store: record_measurement: no id returned");
  int64_t id = s.col_int(0);
  s.run();
  return id;
}

void Store::record_judged(const std::optional<CandidateRecord>& c, std::vector<Measurement>& ms) {
  require_judge(*this, "record_judged");
  Txn t(db_, "record_judged");
  if (c) record_candidate(*c);
  for (auto& m : ms) m.id = record_measurement(m);
  t.commit();
}

void Store::record_budget_move(const BudgetMove& m) {
  require_judge(*this, "record_budget_move");
  Stmt s(db_, "INSERT INTO budget_log (agent, share_before, share_after, reason) VALUES (?1, ?2, ?3, ?4)",
         "record_budget_move");
  s.text(1, m.agent).real(2, m.share_before).real(3, m.share_after).text(4, m.reason).run();
}

// Import scheme: the other campaign's findings go into this file's findings table with new ids,
// origin = the campaign they were made in (the other file's campaign id, or, for findings it had
// itself imported, their original origin) and origin_id = their id there. Each cited measurement
// is copied in the same way (new id, origin, origin_id), with its candidate under the key
// "<origin>/<hash>", and the finding's cites are rewritten to the new ids. The findings trigger
// then checks the imported finding against the imported measurements, exactly as it checked it
// at home. Importing again skips what is already here; a finding the trigger refuses is skipped
// with a warning (and nothing of it stays).
int Store::import_findings(const fs::path& other_db) {
  require_judge(*this, "import_findings");
  std::error_code ec;
  if (!fs::is_regular_file(other_db, ec))
    throw StoreError("store: import_findings: no campaign store at " + other_db.string());
  ConnGuard src{open_connection(other_db, SQLITE_OPEN_READONLY)};
  require_version(src.db, other_db);
  exec_sql(src.db, kWarmUp, "import_findings");
  sqlite3_set_authorizer(src.db, reader_authorizer, nullptr);
  const std::string src_campaign = read_campaign(src.db, other_db);

  struct SrcFinding {
    Finding f;
    std::string origin;  // where it was made
    int64_t origin_id;   // its id there
  };
  std::vector<SrcFinding> todo;
  {
    Stmt s(src.db, (std::string("SELECT ") + kFindingCols + " FROM findings ORDER BY id").c_str(),
           "import_findings: read findings");
    while (s.step()) {
      Finding f = read_finding(s);
      bool local = f.origin.empty();
      SrcFinding sf{f, local ? src_campaign : f.origin, local ? f.id : s.col_int(11)};
      todo.push_back(std::move(sf));
    }
  }

  Stmt src_m(src.db, (std::string("SELECT ") + kMeasurementCols + " FROM measurements WHERE id = ?1").c_str(),
             "import_findings: read measurement");
  Stmt src_c(src.db, (std::string("SELECT ") + kCandidateCols + " FROM candidates WHERE hash = ?1").c_str(),
             "import_findings: read candidate");
  Stmt have_f(db_, "SELECT 1 FROM findings WHERE origin = ?1 AND origin_id = ?2", "import_findings");
  Stmt have_m(db_, "SELECT id FROM measurements WHERE origin = ?1 AND origin_id = ?2", "import_findings");
  Stmt have_c(db_, "SELECT problem, family, knobs FROM candidates WHERE hash = ?1", "import_findings");
  Stmt put_c(db_,
             "INSERT INTO candidates (hash, problem, family, knobs, agent, seq, solution, origin, created_at) "
             "VALUES (?1, ?2, ?3, ?4, ?5, ?6, json(?7), ?8, ?9)",
             "import_findings: copy candidate");
  Stmt put_m(db_,
             "INSERT INTO measurements (candidate, problem, workload, verdict, message, median_us, spread, "
             "reference_us, device, gpu, extra, origin, origin_id, created_at) "
             "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14) RETURNING id",
             "import_findings: copy measurement");

  // The measurement of the source with id `src_id`, copied in (or found, when already copied).
  auto import_measurement = [&](int64_t src_id) -> int64_t {
    src_m.reset();
    src_m.int64(1, src_id);
    if (!src_m.step()) throw StoreError("store: import_findings: cited measurement " + std::to_string(src_id) + " is missing");
    Measurement m = read_measurement(src_m);
    bool local = m.origin.empty();
    std::string origin = local ? src_campaign : m.origin;
    int64_t origin_id = local ? m.id : src_m.col_int(14);
    if (origin == campaign_) return origin_id;  // one of ours, come back: cite the original
    have_m.reset();
    have_m.text(1, origin).int64(2, origin_id);
    if (have_m.step()) return have_m.col_int(0);

    src_c.reset();
    src_c.text(1, m.candidate);
    if (!src_c.step()) throw StoreError("store: import_findings: candidate " + m.candidate + " is missing");
    CandidateRecord c = read_candidate(src_c);
    std::string key = local ? origin + "/" + c.hash : c.hash;
    std::string knobs = knobs_text(c.knobs, "import_findings");
    have_c.reset();
    have_c.text(1, key);
    if (have_c.step()) {
      if (have_c.col_text(0) != c.problem || have_c.col_text(1) != c.family || have_c.col_text(2) != knobs)
        throw StoreError("store: import_findings: candidate " + key + " is already here with another problem/family/knobs");
    } else {
      put_c.reset();
      put_c.text(1, key).text(2, c.problem).text(3, c.family).text(4, knobs).text(5, c.agent);
      put_c.int64(6, c.seq).text(7, c.solution.dump()).text(8, origin).text(9, src_c.col_text(8));
      put_c.run();
    }
    put_m.reset();
    put_m.text(1, key).text(2, m.problem).text(3, m.workload).text(4, m.verdict).text(5, m.message);
    put_m.real(6, m.median_us).real(7, m.spread).real(8, m.reference_us).text(9, m.device).text(10, m.gpu);
    put_m.text(11, m.extra.dump()).text(12, origin).int64(13, origin_id).text(14, m.created_at);
    if (!put_m.step()) throw StoreError("store: import_findings: no id returned");
    int64_t id = put_m.col_int(0);
    put_m.run();
    return id;
  };

  int imported = 0;
  Txn t(db_, "import_findings");
  for (SrcFinding& sf : todo) {
    if (sf.origin == campaign_) continue;  // made here in the first place
    have_f.reset();
    have_f.text(1, sf.origin).int64(2, sf.origin_id);
    if (have_f.step()) continue;  // imported before
    exec_sql(db_, "SAVEPOINT import_one", "import_findings");
    try {
      Finding f = sf.f;
      f.cites.clear();
      for (int64_t c : sf.f.cites) f.cites.push_back(import_measurement(c));
      f.origin = sf.origin;
      insert_finding(db_, f, sf.origin_id, sf.f.created_at);
      exec_sql(db_, "RELEASE import_one", "import_findings");
      ++imported;
    } catch (const StoreError& e) {
      exec_sql(db_, "ROLLBACK TO import_one; RELEASE import_one", "import_findings");
      spdlog::warn("store: import from {}: finding {} not imported: {}", other_db.string(), sf.f.id, e.what());
    }
  }
  t.commit();
  return imported;
}

// ---------------------------------------------------------------------------------------------
// Everyone

int64_t Store::publish(const Finding& f) {
  if (!is_judge() && f.author != agent_)
    throw StoreError("store: publish: agent '" + agent_ + "' cannot publish as '" + f.author + "'");
  if (!f.origin.empty())
    throw StoreError("store: publish: a finding with an origin can only come from import_findings");
  return insert_finding(is_judge() ? db_ : writer_, f, -1, "");
}

std::vector<Measurement> Store::measurements(const std::string& problem) const {
  Stmt s(db_,
         (std::string("SELECT ") + kMeasurementCols +
          " FROM measurements WHERE origin = '' AND (?1 = '' OR problem = ?1) ORDER BY id")
             .c_str(),
         "measurements");
  s.text(1, problem);
  std::vector<Measurement> out;
  while (s.step()) out.push_back(read_measurement(s));
  return out;
}

std::optional<Measurement> Store::measurement(int64_t id) const {
  Stmt s(db_, (std::string("SELECT ") + kMeasurementCols + " FROM measurements WHERE id = ?1").c_str(),
         "measurement");
  s.int64(1, id);
  if (!s.step()) return std::nullopt;
  return read_measurement(s);
}

std::vector<Measurement> Store::measurements_of(const std::string& candidate) const {
  Stmt s(db_,
         (std::string("SELECT ") + kMeasurementCols + " FROM measurements WHERE candidate = ?1 ORDER BY id")
             .c_str(),
         "measurements_of");
  s.text(1, candidate);
  std::vector<Measurement> out;
  while (s.step()) out.push_back(read_measurement(s));
  return out;
}

std::optional<CandidateRecord> Store::candidate(const std::string& hash) const {
  Stmt s(db_, (std::string("SELECT ") + kCandidateCols + " FROM candidates WHERE hash = ?1").c_str(),
         "candidate");
  s.text(1, hash);
  if (!s.step()) return std::nullopt;
  return read_candidate(s);
}

std::vector<CandidateRecord> Store::candidates(const std::string& problem) const {
  Stmt s(db_,
         (std::string("SELECT ") + kCandidateCols +
          " FROM candidates WHERE origin = '' AND (?1 = '' OR problem = ?1) ORDER BY seq, rowid")
             .c_str(),
         "candidates");
  s.text(1, problem);
  std::vector<CandidateRecord> out;
  while (s.step()) out.push_back(read_candidate(s));
  return out;
}

std::vector<Finding> Store::findings(const std::string& op_type) const {
  Stmt s(db_,
         (std::string("SELECT ") + kFindingCols + " FROM findings WHERE (?1 = '' OR op_type = ?1) ORDER BY id")
             .c_str(),
         "findings");
  s.text(1, op_type);
  std::vector<Finding> out;
  while (s.step()) out.push_back(read_finding(s));
  return out;
}

std::vector<BudgetMove> Store::budget_moves() const {
  Stmt s(db_, "SELECT agent, share_before, share_after, reason, created_at FROM budget_log ORDER BY id", "budget_moves");
  std::vector<BudgetMove> out;
  while (s.step()) out.push_back({s.col_text(0), s.col_real(1), s.col_real(2), s.col_text(3), s.col_text(4)});
  return out;
}

void Store::exec(const std::string& sql) { exec_sql(db_, sql, "exec"); }

}  // namespace ka
