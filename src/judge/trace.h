// judge/trace.h — SOL-ExecBench trace records (one JSON object per workload evaluation) and
// KernelArc's richer JSON report of an evaluation.
#pragma once
#include <nlohmann/json.hpp>

#include "judge/evaluator.h"

namespace ka {

// The trace in SOL-ExecBench's shape (docs/sol-execbench-rules.md §1.6).
nlohmann::json to_trace(const Definition& def, const Candidate& c, const CandidateEval& ev, const WorkloadEval& w);
// Everything KernelArc knows about the evaluation (verdicts, timing spread, build command, device).
nlohmann::json to_report(const Definition& def, const Candidate& c, const CandidateEval& ev);

}  // namespace ka
