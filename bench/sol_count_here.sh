#!/usr/bin/env bash
# Counts the work of dev FlashInfer-Bench problems on this machine's CPU (`kernelarc sol --count-only
# --device cpu`) and adds the bounds to .data/sol-cache.tgz, the cache bench/h200_sol.sh carries to
# the GPU machine, so the device spends its time on timing. Counts do not depend on the device (the
# cache key leaves it out); a reference that loops in Python over ~10^6 small ops (014: ~10 min on
# two cores) is counted here once. Usage: PROBS="<problem folder names>" bash bench/sol_count_here.sh
# (K: the kernelarc binary, default build/src/kernelarc). A problem whose count fails here (e.g. an op
# with no CPU kernel) prints its error and is counted on the GPU machine instead.
set -uo pipefail
cd "$(dirname "$0")/.."
K=${K:-build/src/kernelarc}
P=.data/problems/sol-execbench/FlashInfer-Bench
C=$(mktemp -d)
trap 'rm -rf "$C"' EXIT
mkdir -p .data
[[ -f .data/sol-cache.tgz ]] && tar xzf .data/sol-cache.tgz -C "$C"
for n in ${PROBS:?PROBS: the problems to count}; do
  KERNELARC_CACHE=$C "$K" sol "$P/$n" --count-only --device cpu || echo "$n: count failed here" >&2
done
(cd "$C" && tar czf - $(ls -d oracle-timings bounds 2>/dev/null)) >.data/sol-cache.tgz.new && mv .data/sol-cache.tgz.new .data/sol-cache.tgz
echo "bounds in .data/sol-cache.tgz: $(tar tzf .data/sol-cache.tgz | grep -c '^bounds/.')"
