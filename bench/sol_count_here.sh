#!/usr/bin/env bash
# Counts the work of dev FlashInfer-Bench problems on this machine's CPU (`kernelarc sol --count-only
# --device cpu`) and adds the bounds to bench/h200-sol-cache.tgz (CACHE), the cache bench/h200_sol.sh
# takes to the GPU machine (commit it: the checkout is what survives between sessions), so the
# device spends its time on timing. Counts do not depend on the device (the cache key leaves it
# out); a reference that loops in Python over ~10^6 small ops (014) is counted here once: on the
# H200 machine eight count processes did not finish 014 in 288 s. Usage: PROBS="<problem folder
# names>" bash bench/sol_count_here.sh (K: the kernelarc binary, default build/src/kernelarc). A
# problem whose count fails here (an op with no CPU kernel; 020's fp8 experts need ~12 GB per count
# process and were killed for memory on a 24 GB machine) prints its error and is counted on the
# GPU machine instead.
set -uo pipefail
cd "$(dirname "$0")/.."
K=${K:-build/src/kernelarc}
P=.data/problems/sol-execbench/FlashInfer-Bench
C=$(mktemp -d)
trap 'rm -rf "$C"' EXIT
CACHE=${CACHE:-bench/h200-sol-cache.tgz}
[[ -f $CACHE ]] && tar xzf "$CACHE" -C "$C"
for n in ${PROBS:?PROBS: the problems to count}; do
  KERNELARC_CACHE=$C "$K" sol "$P/$n" --count-only --device cpu || echo "$n: count failed here" >&2
done
(cd "$C" && tar czf - $(ls -d oracle-timings bounds 2>/dev/null)) >"$CACHE.new" && mv "$CACHE.new" "$CACHE"
echo "bounds in $CACHE: $(tar tzf "$CACHE" | grep -c '^bounds/.')"
