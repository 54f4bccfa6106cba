// engine/outputs.h — what a campaign leaves for people: per problem, the leaderboard (JSON and
// Markdown), the findings in scope and the best solution (native and SOL-ExecBench), all read back
// from the store; the incumbent's timing on each GPU; and the progress line on stderr.
#pragma once
#include <chrono>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "engine/campaign.h"
#include "problem/problem.h"
#include "store/store.h"

namespace ka {

// The incumbent on each GPU that measured it, and the GPUs that measured other candidates of the
// problem but not it (no runner on them in this run). Empty when one GPU measured everything.
struct PerGpu {
  std::vector<GpuTiming> gpus;  // the GPU that measured it first, then the others by identity
  std::vector<std::string> unchecked;
  double spread = 0;            // (max − min) / min of the passed geomeans
};
PerGpu incumbent_per_gpu(const Store& store, const std::string& problem, const std::string& best_hash);

// Writes leaderboard.json, leaderboard.md, findings.json and best/ (when there is a best) to dir.
void write_outputs(const Problem& p, const Store& store, const std::filesystem::path& dir, const std::string& best_hash,
                   const PerGpu& per_gpu, const std::map<std::string, double>& sol_us);

// The progress line of a problem: on a terminal rewritten in place, else printed every 8 candidates
// and at the end of the problem.
struct ProgressState {
  std::string problem;
  int candidates = 0, budget = 0;
  double best_us = 0, best_ref_us = 0;
  std::optional<double> sol_score;
  double candidates_per_minute = 0;
};
std::string progress_line(const ProgressState& s);

// A side effect of the search loop other than the store's: told of the search's state after each
// observation (final: the problem's search is over).
class MeasureCallback {
 public:
  virtual ~MeasureCallback() = default;
  virtual void observed(const ProgressState& state, bool final) = 0;
};

class ProgressPrinter : public MeasureCallback {
 public:
  ProgressPrinter(bool enabled, bool tty) : enabled_(enabled), tty_(tty) {}
  void observed(const ProgressState& s, bool final) override;

 private:
  bool enabled_, tty_;
};

}  // namespace ka
