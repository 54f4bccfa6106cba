// engine/pipeline.h — the reorder buffer of a problem's search: proposals in proposal order, each
// either replayed (its results are already in the store) or measured (built and judged as runners
// become free). Results are recorded as they arrive, in any order; a proposal is observed only when
// it reaches the front and its results are in, so what the agents see does not depend on timing.
#pragma once
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "agents/agent.h"
#include "engine/runner.h"
#include "store/store.h"

namespace ka {

// One proposal in the pipeline.
struct Slot {
  size_t agent = 0;
  Proposal proposal;
  std::string name, hash;
  bool replay = false;       // results already in the store (resume, or another agent's duplicate)
  int64_t seq = 0;           // measured ones: the candidate's place in the campaign (proposal order)
  std::shared_ptr<Job> job;  // measured ones: its build and judging
  bool recorded = false;     // measured ones: its results are in the store
  std::vector<Measurement> ms;
};

class Pipeline {
 public:
  size_t size() const { return q_.size(); }
  bool empty() const { return q_.empty(); }
  const std::deque<Slot>& slots() const { return q_; }
  // Whether a proposal of this candidate is in the pipeline.
  bool holds(const std::string& hash) const;
  // Appends a proposal; a measured one (with a job) waits for its results under the job's order.
  Slot& push(Slot s);
  // The measured slot a judged job belongs to; it is no longer waited for (the caller records it).
  Slot& judged(const Job& job);
  // The front has its results: replayed, or measured and recorded.
  bool front_ready() const { return q_.front().replay || q_.front().recorded; }
  Slot pop();

 private:
  std::deque<Slot> q_;                  // push_back and pop_front keep references to the rest valid
  std::map<int64_t, Slot*> waiting_;    // measured slots not yet recorded, by job order
};

}  // namespace ka
