// judge/verdict.cpp — verdict names and their SOL-ExecBench trace statuses.
#include "judge/verdict.h"

namespace ka {

std::string_view verdict_name(Verdict v) {
  switch (v) {
    case Verdict::passed: return "passed";
    case Verdict::compile_error: return "compile_error";
    case Verdict::crash: return "crash";
    case Verdict::illegal_memory_access: return "illegal_memory_access";
    case Verdict::runtime_error: return "runtime_error";
    case Verdict::timeout: return "timeout";
    case Verdict::wrong_answer: return "wrong_answer";
    case Verdict::reward_hack: return "reward_hack";
    case Verdict::out_of_bounds_write: return "out_of_bounds_write";
    case Verdict::timing_mismatch: return "timing_mismatch";
    case Verdict::unavailable: return "unavailable";
  }
  return "?";
}

std::string_view verdict_trace_status(Verdict v) {
  switch (v) {
    case Verdict::passed: return "PASSED";
    case Verdict::compile_error: return "COMPILE_ERROR";
    case Verdict::timeout: return "TIMEOUT";
    case Verdict::wrong_answer: return "INCORRECT_NUMERICAL";
    case Verdict::reward_hack:
    case Verdict::timing_mismatch: return "REWARD_HACK";
    case Verdict::unavailable: return "INVALID_REFERENCE";
    default: return "RUNTIME_ERROR";  // out_of_bounds_write too: upstream's harness would fault or corrupt
  }
}

}  // namespace ka
