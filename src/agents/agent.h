// agents/agent.h — the agent interface and the built-in search agents. An agent proposes
// candidates (a family with knob values), is told the verdicts and timings of its own candidates,
// reads the digest of everyone's findings, and may publish findings. Agents are seeded and pure:
// the same seed and the same sequence of observations give the same proposals (the engine records
// that sequence, so a campaign can be replayed and resumed).
#pragma once
#include <nlohmann/json.hpp>

#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "families/family.h"
#include "store/store.h"

namespace ka {

// A proposal: a point of a family (knobs), optionally with generated defines. `defines` is the one
// mechanism for what knobs cannot express (e.g. the library agent's static cuBLASLt table, a list of
// rows): each entry becomes a `#define KA_<NAME> <value>` line after the knob defines
// (Family::instantiate), so it is part of the candidate's source and therefore of its hash, and the
// engine records it with the candidate, in the candidate's knobs JSON as a string value next to the
// integer knobs, so that findings (best_config) can name it and the store can check them. Names are
// identifiers distinct from the family's knobs and problem defines; values are one line.
struct Proposal {
  std::string family;
  Knobs knobs;
  std::map<std::string, std::string> defines;
};

// What an agent learns about one of its candidates (or, in sharing mode "full", anyone's).
struct Observation {
  std::string problem;
  Proposal proposal;
  bool passed = false;
  double score_us = 0;  // geometric mean of the median µs over the problem's workloads (passed only)
  std::vector<int64_t> measurement_ids;
  std::string author;   // who proposed it
  // The median µs of each measurement in measurement_ids, in the same order (passed only). An agent
  // needs them to claim a best_config the store can check (its median_us bounds every cited
  // median); without them it does not publish best_config findings.
  std::vector<double> median_us;
  std::optional<double> sol_score;  // SOL-ExecBench's score, mean over workloads (sol/problem_sol.h)
  // The workload uuid and verdict of each measurement in measurement_ids, in the same order (an
  // agent that composes per-workload solutions, e.g. the library agent, needs them).
  std::vector<std::string> workloads, verdicts;
};

// The problem an agent works on, with what it may see.
struct AgentContext {
  const Problem* problem = nullptr;
  std::vector<const Family*> families;       // the families that apply to the problem
  std::string device;                        // device name
  std::vector<Finding> digest;               // findings visible to this agent (mode-dependent)
  // Speed-of-light time per workload uuid (µs), when the device is calibrated; the engine stops a
  // problem whose incumbent is within --sol-stop of it.
  const std::map<std::string, double>* sol_us = nullptr;
  int budget_left = 0;                       // candidates the problem may still spend (all agents)
  // The axis a piecewise candidate dispatches on, when the engine composes one at the end (one var
  // axis, --no-compose not given), else "": a point that is the fastest on some workloads is then
  // worth refining even when its geometric mean over all of them is poor (range winners).
  std::string piecewise_axis;
  // Points other agents proposed for this problem that are still being judged (family, knobs), so
  // that an agent does not propose the same point while it is in flight; empty with --sharing none.
  std::vector<std::pair<std::string, Knobs>> in_flight;
  std::filesystem::path record_dir;          // the campaign's folder for this problem ("" in tests
                                             // that do not give one): where an agent records what
                                             // it needs to replay its proposals (library: lt_enum.json)
};

class Agent {
 public:
  virtual ~Agent() = default;
  virtual std::string name() const = 0;
  // The next candidate to try, or nullopt when the agent has nothing (left) to propose.
  virtual std::optional<Proposal> propose(const AgentContext& ctx) = 0;
  virtual void observe(const Observation& o) = 0;
  // Findings the agent wants to publish after its latest observation (the store checks them).
  virtual std::vector<Finding> conclude(const AgentContext& ctx) { return {}; }
};

// Built-in agents: "explorer" (space-filling), "exploiter" (local search around the best known),
// "modeler" (surrogate model), "transfer" (starts from findings made on similar problems/devices),
// "library" (static cuBLASLt configuration tables, agents/library.h; GEMM problems on cuda only).
// Each keeps its state per problem (Observation::problem, AgentContext::problem), never proposes a
// (family, knobs) twice for a problem (nor one it has observed), and proposes only points of the
// families' valid spaces (agents/search.h). UserError for an unknown kind.
std::unique_ptr<Agent> make_agent(const std::string& kind, uint64_t seed);
std::vector<std::string> builtin_agents();  // every agent make_agent knows (a campaign's default)
std::vector<std::string> search_agents();   // the four search agents (agents/builtin.h)

}  // namespace ka
