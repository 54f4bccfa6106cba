#!/usr/bin/env bash
# GPU check of speed-of-light bounds and baselines (issue "speed-of-light"), on the H200 from the
# repo root after scripts/device-pack.sh (carry .dev and .data): `kernelarc sol` on each dev
# FlashInfer-Bench problem in PROBS (default: all 19), one process per problem so that one slow
# problem cannot take the others down, each given what is left of DEADLINE seconds (default 540).
# COMPILE_BUDGET (default 300) is the seconds per problem for compiling and timing torch.compile: the
# timing counts too, and the compiled calls of slow references use it up (012: 41 of 48 workloads
# in 90 s); DEADLINE and PROBLEM_LIMIT bound the run anyway.
# PROBLEM_LIMIT (default: what is left) caps the seconds given to one problem.
# The oracle keeps no input sets for `sol` (timings-only entries), so the largest problems fit on
# disk. Outputs: $OUT/sol_logs.tgz (per problem the table and the log); the last lines printed
# say, per problem, the workloads with every column filled. The device machine keeps nothing between
# calls, so the timings travel: $OUT/sol_cache.tgz holds the cache's timing entries and bounds, and
# a later call given it as SOL_CACHE_IN starts from them and times only what is still missing.
# SOL_CACHE_IN defaults to bench/h200-sol-cache.tgz, committed: the checkout is all that survives
# between sessions (a cache kept in the ignored .data was lost with its machine on 2026-12-04).
# After a call, put the returned sol_cache.tgz there and commit it; bounds counted elsewhere
# (`kernelarc sol --count-only --device cpu` with KERNELARC_CACHE=DIR) go in as DIR/bounds/*.json.
# The cache keys hold the oracle's hash: changing src/oracle/kernelarc_oracle.py starts it afresh.
set -uo pipefail
FINAL=${OUT:-/tmp/ka-out}
OUT=$FINAL/sol
mkdir -p "$OUT"
export LD_LIBRARY_PATH=$PWD/.dev/lib:${LD_LIBRARY_PATH:-}
export KERNELARC_CACHE=${KERNELARC_CACHE:-/tmp/ka-cache}
K=.dev/bin/kernelarc
P=.data/problems/sol-execbench/FlashInfer-Bench
SOL_CACHE_IN=${SOL_CACHE_IN:-bench/h200-sol-cache.tgz}
mkdir -p "$KERNELARC_CACHE"
[[ -f $SOL_CACHE_IN ]] && tar xzf "$SOL_CACHE_IN" -C "$KERNELARC_CACHE"
start=$(date +%s)
deadline=$((start + ${DEADLINE:-540}))
all=$(ls "$P")
for n in ${PROBS:-$all}; do
  left=$((deadline - $(date +%s)))
  if [[ -n ${PROBLEM_LIMIT:-} ]] && (( PROBLEM_LIMIT < left )); then left=$PROBLEM_LIMIT; fi
  if (( left < 30 )); then echo "$n: not run (deadline)" >>"$OUT/skipped.txt"; continue; fi
  t0=$(date +%s)
  # --time-limit ends the oracle's timing run in time to print the table (the workloads timed so
  # far are kept in the cache, so a later run goes on from there); timeout is the backstop.
  timeout -k 20 "$left" $K sol "$P/$n" --compile-budget "${COMPILE_BUDGET:-300}" --time-limit $((left - 15)) \
    >"$OUT/$n.txt" 2>"$OUT/$n.log"
  echo "$n: rc $? in $(( $(date +%s) - t0 )) s" >>"$OUT/runs.txt"
done
{
  echo "=== kernelarc sol, $(date -u +%FT%TZ), wall $(( $(date +%s) - start )) s"
  cat "$OUT/runs.txt" "$OUT/skipped.txt" 2>/dev/null
  python3 bench/sol_summary.py "$OUT"
} | tee "$OUT/summary.txt"
tar czf "$FINAL/sol_logs.tgz" -C "$FINAL" sol && rm -rf "$OUT"
(cd "$KERNELARC_CACHE" && tar czf "$FINAL/sol_cache.tgz" $(ls -d oracle-timings bounds 2>/dev/null))
