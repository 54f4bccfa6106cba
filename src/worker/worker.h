// worker/worker.h — the worker process: loads one candidate library at a time and runs it on the
// tensors the judge sends, through a target Backend, inside an OS sandbox (judge/sandbox.h). It never
// receives a reference output: the judge compares the output bytes it asks back (judge/protocol.h).
#pragma once
#include <string>

#include "judge/sandbox.h"

namespace ka {

// Enters the sandbox, then runs the worker loop on stdin/stdout (protocol in judge/protocol.h);
// returns the exit code.
int worker_main(const std::string& target, const SandboxPolicy& sandbox);

}  // namespace ka
