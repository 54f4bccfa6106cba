// agents/builtin.h — the four built-in search agents (one .cpp each); agents.cpp makes them by name.
#pragma once
#include "agents/search.h"

namespace ka::search {

// explorer: space filling. First the families' seeds valid here (family.json: points measured good
// elsewhere); then a random point; then the unseen point farthest from everything seen (maximin
// over normalised knob indices), ties broken in a seeded random order.
class Explorer : public SearchAgent {
 public:
  explicit Explorer(uint64_t seed, std::string name = "explorer") : SearchAgent(std::move(name), seed) {}

 protected:
  std::optional<size_t> choose(const AgentContext& ctx, ProblemState& st) override;
};

// exploiter: local search. Around the best known point (its observations and the digest's
// best_config findings for this problem and device), the unseen points of the fewest knob steps:
// one step first, then wider. With nothing known yet, a family seed not yet taken (by it or, in
// flight, by another agent), else a random point. When the engine
// will compose a piecewise candidate, every other step is around a range winner (a point fastest
// on some workloads; its own observations' or a range-scoped best_config), in rotation.
class Exploiter : public SearchAgent {
 public:
  explicit Exploiter(uint64_t seed, std::string name = "exploiter") : SearchAgent(std::move(name), seed) {}

 protected:
  std::optional<size_t> choose(const AgentContext& ctx, ProblemState& st) override;
  std::optional<size_t> local_step(const AgentContext& ctx, ProblemState& st);
};

// modeler: a surrogate of log time — an additive model (one effect per knob value, ridge-shrunk,
// fitted by backfitting; failures count as slower than anything seen) corrected by the residuals of
// the nearest observed points — proposes the unseen point with the best prediction. Until it has a
// few passed observations, the family seeds not yet taken, then random points; one random point in
// ten afterwards.
class Modeler : public SearchAgent {
 public:
  explicit Modeler(uint64_t seed, std::string name = "modeler") : SearchAgent(std::move(name), seed) {}

 protected:
  std::optional<size_t> choose(const AgentContext& ctx, ProblemState& st) override;
};

// transfer: first the best configs found on similar problems (same op type; another problem, another
// device, or an imported campaign) that are valid here, the most similar and most often best first;
// then the nearest valid points to those that are not valid here; then the exploiter's local search.
class Transfer : public Exploiter {
 public:
  explicit Transfer(uint64_t seed) : Exploiter(seed, "transfer") {}

 protected:
  std::optional<size_t> choose(const AgentContext& ctx, ProblemState& st) override;
};

}  // namespace ka::search
