#!/usr/bin/env bash
# The test command (README, CI): build, run the CTest suite, then replay the fuzz corpora.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh
ctest --test-dir build --output-on-failure -j 2
fuzz/run.sh --replay
