// worker/worker.h — the worker process: loads one candidate library at a time and runs it on the
// tensors the judge sends, through a target Backend, inside an OS sandbox (judge/sandbox.h). It never
// receives a reference output: the judge compares the output bytes it asks back (judge/protocol.h).
#pragma once
#include <cstddef>
#include <string>

#include "judge/sandbox.h"

namespace ka {

// Enters the sandbox, then runs the worker loop on stdin/stdout (protocol in judge/protocol.h);
// returns the exit code. kept_bytes: the most bytes of input sets the worker keeps on the device
// (0: half the device's memory; no limit where the device's size is unknown).
int worker_main(const std::string& target, const SandboxPolicy& sandbox, size_t kept_bytes = 0);

}  // namespace ka
