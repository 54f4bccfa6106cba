#!/usr/bin/env bash
# GPU check of speed-of-light bounds and baselines, on a GPU machine after scripts/device-pack.sh
# (carry .dev and .data): `kernelarc sol` on each dev FlashInfer-Bench problem in PROBS (default: all
# 19), one process per problem so that one slow problem cannot take the others down, each given what
# is left of DEADLINE seconds (default 540).
# COMPILE_BUDGET (default 300) is the seconds per problem for compiling and timing torch.compile: the
# timing counts too, and the compiled calls of slow references use it up (012: 41 of 48 workloads
# in 90 s); DEADLINE and PROBLEM_LIMIT bound the run anyway.
# PROBLEM_LIMIT (default: what is left) caps the seconds given to one problem.
# The oracle keeps no input sets for `sol` (timings-only entries), so the largest problems fit on
# disk. Outputs: $OUT/sol_logs.tgz (per problem the table and the log); the last lines printed
# say, per problem, the workloads with every column filled.
# The sol cache: $OUT/sol_cache.tgz holds the cache's timing entries and bounds after the run. A
# later run given it as SOL_CACHE (default .data/sol-cache.tgz, git-ignored, carried with .data)
# starts from it and times only what is still missing, so a machine that keeps nothing between runs
# can fill the table over several: copy the returned archive to .data/sol-cache.tgz each time.
# bench/tools/sol_cache.sh adds work counts made on a CPU (`kernelarc sol --count-only --device cpu`)
# to the same archive first, so the GPU only times. The cache keys hold the oracle's hash: changing
# src/oracle/kernelarc_oracle.py or src/oracle/kaoracle/ starts it afresh. The campaigns (bench/regress/campaign.sh) borrow
# its reference timings on a GPU of the same name.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
bench_out sol
mkdir -p "$KERNELARC_CACHE"
[[ -f $SOL_CACHE ]] && tar xzf "$SOL_CACHE" -C "$KERNELARC_CACHE"
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
  python3 bench/tools/sol_summary.py "$OUT"
} | tee "$OUT/summary.txt"
tar czf "$FINAL/sol_logs.tgz" -C "$FINAL" sol && rm -rf "$OUT"
(cd "$KERNELARC_CACHE" && tar czf "$FINAL/sol_cache.tgz" $(ls -d oracle-timings bounds 2>/dev/null))
