// agents/search.h — what the built-in search agents share: the indexed search space of a problem
// (the union of the valid spaces of the families that apply to it), per-problem bookkeeping (what
// was proposed or observed, so nothing is proposed twice), seeded randomness that does not depend
// on the standard library's distributions, reading the digest (best_config and dead_region
// findings), and publishing findings from the agent's own observations. Each agent (explorer.cpp,
// exploiter.cpp, modeler.cpp, transfer.cpp) only decides which unseen point comes next.
#pragma once
#include <limits>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "agents/agent.h"

namespace ka::search {

// One point of a problem's space: a family and knob values, with each value's index in its domain.
struct Point {
  int family = 0;        // index into Space::families
  Knobs knobs;
  std::vector<int> idx;  // per knob, in the family's knob (file) order
  std::string key;       // point_key(family name, knobs)
};

std::string point_key(const std::string& family, const Knobs& k);
uint64_t fnv1a(std::string_view s);
// Knobs from a finding's claim ({"NAME": int}); nullopt when it is not such an object.
std::optional<Knobs> knobs_from_json(const nlohmann::json& j);

// The union of the valid spaces of the families of a context, families in name order.
struct Space {
  std::vector<const Family*> families;
  std::vector<Point> points;
  std::map<std::string, size_t> by_key;

  static Space build(const AgentContext& ctx);
  std::optional<size_t> find(const std::string& family, const Knobs& k) const;
  int family_index(const std::string& name) const;  // -1 when absent
  // Euclidean distance over knob indices normalised to [0, 1]; points of different families are
  // farther apart than any two points of one family.
  double distance(size_t a, size_t b) const;
  // Steps between two points of one family: sum over knobs of |index difference|.
  int steps(size_t a, size_t b) const;
  // The point of `family` nearest to arbitrary knob values (each mapped onto its domain by value);
  // nullopt when the family has no valid point or the knobs do not match its knob names.
  std::optional<size_t> nearest(int family, const Knobs& k) const;
  double far() const { return far_; }

 private:
  double far_ = 1;
};

// A point that is the fastest observed on some workloads, by at least kRangeWinGain over every other
// point observed there (a piecewise candidate would serve those workloads with it): the workloads it
// wins, their measurement ids, the largest of its medians on them, and the values of the dispatch
// axis they span.
struct RangeWin {
  size_t point = 0;
  int won = 0;
  std::vector<int64_t> cites;
  double worst_us = 0;
  int64_t lo = 0, hi = 0;
};
constexpr double kRangeWinGain = 0.02;

// What an agent keeps per problem.
struct ProblemState {
  std::optional<Space> space;         // built at the first propose()/conclude() for the problem
  std::set<std::string> seen;         // point keys proposed or observed
  std::vector<Observation> obs;       // in arrival order
  double published_best = std::numeric_limits<double>::infinity();  // score_us of the last best_config
  std::set<std::string> published;    // keys of findings published (dead regions)
  std::set<std::string> considered;   // agent-specific (transfer: configs already taken over)
  int chosen = 0;                     // points this agent proposed for the problem
  std::set<std::string> range_published;  // point keys published as range winners
};

struct Scored {
  size_t point;
  double score;  // µs; lower is better
};

class SearchAgent : public Agent {
 public:
  SearchAgent(std::string name, uint64_t seed);
  std::string name() const override { return name_; }
  std::optional<Proposal> propose(const AgentContext& ctx) final;
  void observe(const Observation& o) override;
  std::vector<Finding> conclude(const AgentContext& ctx) override;

 protected:
  // The next point: an index into st.space->points that is not in st.seen, or nullopt.
  virtual std::optional<size_t> choose(const AgentContext& ctx, ProblemState& st) = 0;

  uint64_t below(uint64_t n);  // uniform in [0, n), n > 0
  double unit();               // uniform in [0, 1)
  template <typename T>
  void shuffle(std::vector<T>& v) {
    for (size_t i = v.size(); i > 1; --i) std::swap(v[i - 1], v[below(i)]);
  }
  std::optional<size_t> pick(const std::vector<size_t>& c) {
    if (c.empty()) return std::nullopt;
    return c[below(c.size())];
  }

  // Unseen points outside the dead regions of the digest (all unseen points when each lies in one),
  // in space order; best configs that this campaign published for the problem and device count as
  // seen (they were measured), and so do the other agents' points in flight (ctx.in_flight).
  std::vector<size_t> candidates(const AgentContext& ctx, const ProblemState& st) const;
  // The first of the families' seeds (family.json: points measured good elsewhere; family and file
  // order) among `cand`, or nullopt: the explorer's first points, and the other agents' while they
  // have nothing of their own to go on.
  std::optional<size_t> first_seed(const ProblemState& st, const std::vector<size_t>& cand) const;
  // Observed passed points of the space with their score_us, best first (one entry per point).
  std::vector<Scored> passed(const ProblemState& st) const;
  // Observed points of the space that failed.
  std::vector<size_t> failed(const ProblemState& st) const;
  // best_config findings of the digest for this problem and device (or device ""), as points of
  // the space, best claim first; whole-problem claims only (bucket "").
  std::vector<Scored> digest_best(const AgentContext& ctx, const ProblemState& st) const;
  // With a piecewise axis (ctx.piecewise_axis): the range winners among the observations (own_only:
  // the agent's own), most workloads won first; none without one.
  std::vector<RangeWin> range_winners(const AgentContext& ctx, const ProblemState& st, bool own_only = false) const;
  // Range-scoped best_config findings (bucket set) of the digest for this problem and device, as
  // points of the space (digest order).
  std::vector<size_t> digest_range_best(const AgentContext& ctx, const ProblemState& st) const;
  bool in_dead_region(const AgentContext& ctx, const Space& space, const Point& p) const;
  // Points of the space that were proposed or observed.
  std::vector<size_t> seen_points(const ProblemState& st) const;

  std::mt19937_64 rng_;

 private:
  ProblemState& state(const AgentContext& ctx);
  std::string name_;
  std::map<std::string, ProblemState> problems_;
};

}  // namespace ka::search
