// sol/problem_sol.h — speed-of-light times of a problem's workloads on one device, and the SOL
// figures of a set of measurements against them: what `eval` prints per workload and what a
// campaign shows per candidate and uses to stop spending budget on a problem that is done.
#pragma once
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "oracle/oracle.h"
#include "problem/problem.h"
#include "sol/bounds.h"
#include "store/store.h"

namespace ka {

// uuid -> T_sol in µs for each workload whose work the oracle could count (charged at the
// definition's input precision, sol/bounds.h). Counts are cached by the oracle per workload.
std::map<std::string, double> workload_sol_us(const Problem& p, const std::vector<const Workload*>& ws, Oracle& oracle,
                                              const Ceilings& ceilings);

// SOL figures of one candidate's measurements (one per workload).
struct SolStats {
  std::optional<double> score;  // mean of sol_score over the workloads (when every one is scored)
  std::optional<double> ratio;  // geometric mean of T_k / T_sol (when every one has a bound)
};
// T_b is the faster of the eager reference (Measurement::reference_us) and, when the judge timed
// it, the torch.compile'd reference (Measurement::extra["compile_us"]).
SolStats sol_stats(const std::vector<Measurement>& ms, const std::map<std::string, double>& sol_us);

}  // namespace ka
