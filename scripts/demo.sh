#!/usr/bin/env bash
# The main job on the bundled example: a short `kernelarc optimize` campaign on
# examples/problems/rmsnorm_h128 — agents propose RMSNorm kernels, each is built, checked against
# the PyTorch reference and timed, the store keeps the findings — on the GPU when one is usable
# (cuda target), else on the CPU (host target). Shows the campaign's progress, then its
# leaderboard, the best solution's path and the campaign report's path.
#   scripts/demo.sh [OPTIMIZE FLAGS...]   e.g. --budget 24; the out folder is $KERNELARC_DEMO_OUT
#                                         (default demo-out/), started afresh on each run.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x build/src/kernelarc ] || scripts/build.sh
# On the CPU, fewer timed calls per workload (the bundled workloads reach 64k rows) keep it to minutes.
if nvidia-smi -L >/dev/null 2>&1; then
  target=(--target cuda --budget 16)
else
  target=(--target host --budget 8 --iterations 10 --warmup 2)
fi
out=${KERNELARC_DEMO_OUT:-demo-out}
rm -rf "$out"
echo "demo: kernelarc optimize examples/problems/rmsnorm_h128 ${target[*]} --out $out --seed 1 $*"
status=0
build/src/kernelarc optimize examples/problems/rmsnorm_h128 "${target[@]}" --out "$out" --seed 1 "$@" || status=$?
for lb in "$out"/*/leaderboard.md; do
  [ -f "$lb" ] || continue
  echo
  head -n 14 "$lb"
  dir=$(dirname "$lb")
  [ -f "$dir/best/solution.json" ] && echo && echo "best solution: $dir/best/solution.json"
done
[ -f "$out/report.html" ] && echo "report: $out/report.html (open it in a browser; rebuild it with build/src/kernelarc report $out)"
exit "$status"
