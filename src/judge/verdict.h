// judge/verdict.h — the typed outcome of judging one candidate on one workload.
#pragma once
#include <string>
#include <string_view>

namespace ka {

enum class Verdict {
  passed,
  compile_error,
  crash,                  // the worker process died (signal, abort, exit)
  illegal_memory_access,  // the device reported a bad access; the context is gone
  runtime_error,          // another device or launch error reported by the runtime
  timeout,                // no answer before the deadline (hang)
  wrong_answer,           // outputs do not match the reference within tolerance
  reward_hack,            // an input changed, or another attempt to fool the judge
  out_of_bounds_write,    // a write into the guard zone before or after an argument's buffer
  timing_mismatch,        // the timer's records disagree with an independent measure (docs/judge.md, Timer)
  unavailable,            // the workload could not be judged (missing inputs, oracle failure)
};

std::string_view verdict_name(Verdict v);
// SOL-ExecBench trace status for a verdict (see docs/sol-execbench-rules.md).
std::string_view verdict_trace_status(Verdict v);

}  // namespace ka
