#!/usr/bin/env bash
# The main job on the bundled example: judge a hand-written RMSNorm solution on the example
# problem, on the GPU when one is usable (cuda target), else on the CPU (host target).
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x build/src/kernelarc ] || scripts/build.sh
if nvidia-smi -L >/dev/null 2>&1; then
  exec build/src/kernelarc eval examples/problems/rmsnorm_h128 --solution examples/solutions/021_rmsnorm_h128/solution.json "$@"
else
  exec build/src/kernelarc eval examples/problems/rmsnorm_h128 --solution examples/solutions/rmsnorm_h128/rmsnorm_host.cpp "$@"
fi
