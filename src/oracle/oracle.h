// oracle/oracle.h — the C++ side of the reference oracle. For (problem, workload, seed) it runs
// the Python oracle (kernelarc_oracle.py, a subprocess: the only Python in the loop), tells it the
// problem as the problem layer resolved it (spec_file, oracle/spec.h), has it build the inputs and
// the reference outputs, and keeps them in a content-addressed, read-only cache keyed by
// (definition hash, workload, its blobs, seed, oracle version, device). Every file's SHA-256 is
// recorded when the entry is written and checked again before every use. Random inputs above a
// size threshold are not stored but regenerated (deterministically, hash-checked) on load:
// load_inputs().
#pragma once
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "problem/problem.h"
#include "problem/safetensors.h"

namespace ka {

struct OracleEntry {
  std::filesystem::path dir;
  nlohmann::json meta;     // meta.json written by the oracle
  std::string error;       // non-empty when the oracle could not produce this entry
  bool stopped = false;    // not produced because the oracle run was cut short (time limit, signal):
                           // a later ensure() makes it; not a fault of the workload
  bool ok() const { return error.empty(); }
  std::optional<double> reference_ms() const;
  std::optional<double> compile_ms() const;  // torch.compile'd reference (time_compile)
  // Why the compile baseline is missing or may mislead (a fallback or recompile caught while timed,
  // graph breaks, no graph at all, a failed compile): meta "compile_note"; "" when there is none.
  std::string compile_note() const;
};

// The reference captured as an operator graph (src/oracle/capture.py, docs/graph-format.md).
struct CaptureResult {
  bool captured = false;
  std::filesystem::path dir;  // holds graph.json (and constants.safetensors) when captured
  nlohmann::json summary;     // capture.py's result line: {"captured", "nodes", "ops", ...} or
                              // {"captured": false, "reason", "op", "source"}
  bool cached = false;        // read from the cache, not traced by this call
  bool transient = false;     // not captured for a reason of this machine now (memory): not cached
  std::string reason() const { return summary.value("reason", std::string()); }
};

struct OracleRequest {
  const Workload* workload;
  uint64_t seed;
  bool timed = true;  // time the reference on this set (the judge needs it for the check set only)
};

class Oracle {
 public:
  // device: "cuda" or "cpu" (where inputs are generated and the reference runs).
  Oracle(std::string device, std::filesystem::path cache_dir = {});
  const std::string& device() const { return device_; }
  // Makes sure every requested entry exists, running the oracle once for all missing ones.
  // time_compile: also time torch.compile(run) (meta "compile_ms"; an entry without it, or whose
  // compile timing was skipped for want of budget, is redone).
  // timings_only: entries hold meta.json alone (timings, shapes; no inputs or reference outputs),
  // in a cache of their own that the judge never reads: for `kernelarc sol` on problems whose
  // sets would not fit on disk.
  std::vector<OracleEntry> ensure(const Problem& p, const std::vector<OracleRequest>& reqs, bool time_reference,
                                  bool time_compile = false, bool timings_only = false);
  // The reference's work per workload (the oracle's `count` command: "matrix_flops" by dtype,
  // "elementwise_flops", "bytes_in", "bytes_out", "bytes", or "ok": false and "message"),
  // cached under cache_root()/bounds. The cache key leaves the device out: the count depends on the
  // shapes and the stored inputs only, so a count made on a CPU serves a GPU run (a problem whose
  // reference loops in Python over 10^5-10^6 small ops can be counted off the GPU machine).
  std::vector<nlohmann::json> count(const Problem& p, const std::vector<const Workload*>& workloads);
  // Loads a file of an entry after checking its hash against the manifest (UserError if not).
  SafeTensors load(const OracleEntry& e, const std::string& file) const;
  // The entry's complete input set: the stored inputs (load(e, "inputs.safetensors")) plus the
  // ones meta.json marks "regenerate" (random inputs above the oracle's KERNELARC_ORACLE_REGEN_BYTES,
  // not stored), rebuilt by the oracle's `regen` command in a temporary folder under the cache
  // root (deleted once read) and each checked against its recorded SHA-256 (UserError naming the
  // input if not: generation was not deterministic here). The regeneration runs in one long-lived
  // oracle process per Oracle (kernelarc_regen_serve.py, started on first use and again for another problem or
  // after a failure), so the Python start (torch import, CUDA set-up: seconds) is paid once, not per
  // input set. Thread-safe (one request at a time).
  SafeTensors load_inputs(const Problem& p, const OracleEntry& e) const;
  std::string key(const Problem& p, const Workload& w, uint64_t seed) const;
  // The problem as the oracle's scripts receive it (oracle/spec.h), written once under
  // cache_root()/specs and named by its content's hash.
  std::filesystem::path spec_file(const Problem& p) const;
  // key() without the device: the bounds cache's key.
  std::string count_key(const Problem& p, const Workload& w) const;
  static std::string version();
  // The reference's operator graph: runs capture.py once per (definition, capture code) and keeps
  // the folder under cache_root()/graphs/<key> (read-only, like the oracle's entries). A reference
  // that cannot be captured is cached too (captured=false, summary says why: op, source line); a
  // capture that crashed or ran past its time limit is not cached and reads as not captured.
  // With `shape_of` (one of p's workloads): that workload's shapes and int scalars traced as
  // constants (capture.py --static), cached per (definition, capture code, shape binding).
  CaptureResult capture(const Problem& p, const Workload* shape_of = nullptr) const;
  std::string capture_key(const Problem& p, const Workload* shape_of = nullptr) const;
  // Hash of the capture code (capture*.py) and the oracle it builds on: part of capture_key.
  static std::string capture_version();
  // Wall-clock seconds one oracle run (one problem) may spend compiling and timing torch.compile;
  // workloads past it get compile_timing {"skipped": ...} and are redone by a later ensure().
  void set_compile_budget(double seconds) { compile_budget_s_ = seconds; }
  // Wall-clock seconds one call of ensure() may take, all its oracle runs together (default an
  // hour). A call stopped by it keeps the workloads it finished; the rest get an error (and
  // `stopped`) and are made by a later ensure().
  void set_time_limit(double seconds) { time_limit_s_ = seconds; }
  // Reference timings measured before on a GPU of this name (`kernelarc sol`'s timings-only cache,
  // cache_root()/oracle-timings, same key) stand in for timing the reference again: a timed request
  // whose set lacks timings takes them from there, and its set is made untimed (with the untimed
  // sets, several processes at once) instead of alone on the device. Only entries whose meta.json
  // names this device and holds every timing asked for are used; the entry's meta then says so
  // ("timings_from"). Empty (the default): always time here.
  void borrow_timings_for(std::string device_name) { timings_device_ = std::move(device_name); }

 private:
  struct RegenServer;  // the regeneration process and its lock (oracle.cpp)
  std::shared_ptr<RegenServer> regen_;
  double compile_budget_s_ = 240;
  double time_limit_s_ = 3600;
  std::chrono::milliseconds time_limit() const {
    return std::chrono::milliseconds(static_cast<int64_t>(std::max(1.0, time_limit_s_) * 1000));
  }
  std::string device_;
  std::filesystem::path root_;
  std::string timings_device_;
  // The timing fields of oracle-timings/<key> when borrow_timings_for() allows them and they cover
  // what is asked (tr: reference_ms; tc: a compile timing that was not skipped), else null.
  nlohmann::json borrowed_timings(const std::string& key, bool tr, bool tc) const;
};

}  // namespace ka
