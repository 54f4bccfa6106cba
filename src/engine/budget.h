// engine/budget.h — budget allocation: which agent proposes the next candidate of a problem.
// The engine asks the policy for an agent, tells it who proposed, who has retired and whose
// candidate improved the incumbent; each change of shares comes back so that the engine can
// record it in the store's budget log with its reason.
#pragma once
#include <cstddef>
#include <memory>
#include <vector>

namespace ka {

struct ShareChange {
  double before = 0, after = 0;  // the agent's share
};

class BudgetPolicy {
 public:
  virtual ~BudgetPolicy() = default;
  // The agent to propose next; -1 when none may.
  virtual int next() const = 0;
  // Agent a made a proposal.
  virtual void proposed(size_t a) = 0;
  // Agent a proposes nothing more (it has nothing left, or proposed what the engine cannot use).
  virtual ShareChange retire(size_t a) = 0;
  // Agent a's candidate improved on an earlier incumbent.
  virtual ShareChange improved(size_t a) = 0;
};

// Shares that start equal and move toward agents whose candidates improve the incumbent (× 1.5,
// renormalised over the active agents); the next agent is the active one furthest below its
// share of the proposals so far (ties to the lowest index).
class ShareBudget : public BudgetPolicy {
 public:
  static constexpr double kReward = 1.5;
  explicit ShareBudget(size_t agents);
  int next() const override;
  void proposed(size_t a) override { ++used_[a]; }
  ShareChange retire(size_t a) override;
  ShareChange improved(size_t a) override { return scale(a, kReward); }
  double share(size_t a) const { return share_[a]; }

 private:
  std::vector<double> share_;
  std::vector<int> used_;
  std::vector<bool> active_;
  ShareChange scale(size_t a, double factor);
};

}  // namespace ka
