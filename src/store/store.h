// store/store.h — the campaign's shared memory: one SQLite file (WAL) per campaign.
//
// Measurements are written by the judge only (Store::open_judge); agents get a read-only
// connection (Store::open_agent) and can never write anything but findings, and only through
// publish(). The store itself enforces the rules, in the schema, not in calling code:
//  - measurements are immutable (triggers refuse UPDATE and DELETE);
//  - findings are append-only (triggers refuse UPDATE and DELETE);
//  - a finding must cite measurements that exist, lie in its scope and support its claim
//    (a BEFORE INSERT trigger checks each claim kind, see docs/findings.md).
// Candidates (their source hash, family and knobs) are recorded by the engine through the judge's
// connection; the budget log records every move of the agents' shares with its reason.
#pragma once
#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

struct sqlite3;

namespace ka {

struct StoreError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct CandidateRecord {
  std::string hash;        // content hash of source + flags (identity of a candidate)
  std::string problem;     // definition name
  std::string family;      // family name, or "" for a full source
  nlohmann::json knobs;    // {"name": value}
  std::string agent;       // who proposed it first
  int64_t seq = 0;         // order of first proposal in the campaign (1, 2, ...)
  nlohmann::json solution; // the candidate as solution.json (to rebuild the best)
  std::string origin;      // "" for this campaign; the source campaign of an imported candidate
                           // (whose hash is then "<origin>/<hash in its campaign>")
};

struct Measurement {
  int64_t id = 0;
  std::string candidate;   // CandidateRecord::hash
  std::string problem;
  std::string workload;    // uuid
  std::string verdict;     // verdict_name()
  std::string message;
  double median_us = 0, spread = 0, reference_us = 0;  // 0 when not timed
  std::string device;      // device name
  std::string gpu;         // device uuid (or "host")
  nlohmann::json extra;    // samples, activity, errors
  std::string created_at;
  std::string origin;      // "" for this campaign; the source campaign of an imported measurement
};

// A finding: a short checkable conclusion, scoped, citing the measurements behind it.
// kinds and their claims (all times in µs):
//   "best_config": {"family", "knobs", "median_us"} — the cited passed measurements of that
//       candidate (family + knobs) have median ≤ median_us on every cited workload.
//   "dead_region": {"family", "knob", "value", "reason": "fails"|"slow", "slower_than_us"?} —
//       every cited measurement has knob = value and failed ("fails"), or was slower than
//       slower_than_us ("slow").
//   "near_sol": {"median_us", "sol_us", "within"} — a cited passed measurement has
//       median ≤ median_us and median_us ≤ sol_us · (1 + within).
struct Finding {
  int64_t id = 0;
  std::string author;      // agent name
  std::string kind;
  std::string problem;     // scope: definition name ("" = any problem of the op type)
  std::string op_type;
  std::string device;
  std::string bucket;      // workload bucket label, e.g. "rows<=256" ("" = all)
  nlohmann::json claim;
  std::vector<int64_t> cites;  // measurement ids
  std::string origin;      // "" for this campaign; the source campaign for imported findings
  std::string created_at;
};

struct BudgetMove {
  std::string agent;
  double share_before = 0, share_after = 0;
  std::string reason;
  std::string created_at = {};  // set by the store (UTC, ISO 8601); ignored by record_budget_move
};

class Store {
 public:
  // The judge's connection: creates the schema if needed; may record candidates and measurements.
  static std::unique_ptr<Store> open_judge(const std::filesystem::path& db);
  // An agent's connection: read-only (SQLITE_OPEN_READONLY); may only publish findings (which
  // goes through a separate, insert-only path of the store, see publish()).
  static std::unique_ptr<Store> open_agent(const std::filesystem::path& db, const std::string& agent);
  ~Store();

  // --- judge only (throws StoreError on an agent connection) ---
  void record_candidate(const CandidateRecord& c);          // idempotent on hash
  int64_t record_measurement(const Measurement& m);         // returns the id
  void record_budget_move(const BudgetMove& m);
  // A judged candidate in one transaction: the candidate (none for a re-measurement of one
  // already recorded) and its measurements, whose ids are set. Nothing is kept if one is refused.
  void record_judged(const std::optional<CandidateRecord>& c, std::vector<Measurement>& ms);
  // Imports the findings of another campaign file, with the measurements they cite, read-only.
  // Returns how many findings were added (already imported ones are skipped; see docs/findings.md).
  int import_findings(const std::filesystem::path& other_db);

  // --- everyone ---
  // Appends a finding; throws StoreError when the store refuses it (unsupported claim, bad
  // citation, or an agent publishing under another name). Returns the id.
  int64_t publish(const Finding& f);
  // measurements() and candidates() list this campaign's own rows only (origin ""); imported ones
  // are reached through the findings that cite them, by measurement(id) and candidate(hash).
  std::vector<Measurement> measurements(const std::string& problem = "") const;
  std::optional<Measurement> measurement(int64_t id) const;
  std::vector<Measurement> measurements_of(const std::string& candidate) const;
  std::optional<CandidateRecord> candidate(const std::string& hash) const;
  std::vector<CandidateRecord> candidates(const std::string& problem = "") const;
  // All findings, this campaign's and imported ones, in id order.
  std::vector<Finding> findings(const std::string& op_type = "") const;
  std::vector<BudgetMove> budget_moves() const;
  // Raw SQL, for tests and tools: throws StoreError when SQLite refuses it.
  void exec(const std::string& sql);

  const std::string& agent() const { return agent_; }
  bool is_judge() const { return agent_.empty(); }
  // This campaign's identity (stored in the file; the origin of its findings once imported).
  const std::string& campaign() const { return campaign_; }

 private:
  Store() = default;
  sqlite3* db_ = nullptr;
  sqlite3* writer_ = nullptr;  // agents: a second connection used only by publish()
  std::string agent_;
  std::filesystem::path path_;
  std::string campaign_;
  friend struct StoreTestAccess;  // tests: reach the publish connection directly
};

}  // namespace ka
