#!/usr/bin/env bash
# The test command (README, CI): check that no function in src/ is over 150 lines, build, run the
# CTest suite, then replay the fuzz corpora.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 scripts/check-function-length.py --max 150 src
scripts/build.sh
ctest --test-dir build --output-on-failure -j 2
fuzz/run.sh --replay
