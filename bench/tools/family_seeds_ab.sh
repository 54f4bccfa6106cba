#!/usr/bin/env bash
# bench/tools/family_seeds_ab.sh — every CUDA family's seeds judged with an older copy of families/ and
# include/ (OLD) and with the repo's, in one GPU run, so that a refactor of the families (e.g. onto
# the device layer) is shown to keep them correct and as fast. Run from the repo root after
# scripts/device-pack.sh (carry .dev and .data); OLD defaults to .data/old:
#     mkdir -p .data/old && git archive REV families include | tar x -C .data/old
# The seeds (and the probe points of families without seeds) are bench/tools/family_seeds_sass.py's:
# each is written as one instantiated .cu per side (`emit`) and judged by `kernelarc eval` on the
# first FlashInfer-Bench problem it is valid for, every workload (WORKLOADS=N: the first N), in
# ROUNDS rounds; in each, a seed's two sides run back to back, old first in odd rounds and new first in
# even ones (drift on the GPU hits both sides alike). DEADLINE (seconds from the start): no seed
# starts after it, so one call gives whole pairs. The judge's reference timing is skipped.
# Reports: $OUT/seeds_ab/<side>_<seed>_r<round>.json; the summary (bench/tools/family_seeds_ab.py) per
# seed: verdicts of both sides and the geomean of new/old judged medians over the workloads, per
# round and overall, then the per-workload table; also in $OUT/seeds_ab/summary.txt.
# Before the rounds, every candidate of both sides is built (and checked on one workload) in
# parallel, PREBUILD_JOBS at a time (default 8; 0 skips), so the rounds reuse cached builds.
set -uo pipefail
T0=$(date +%s)
FINAL=${OUT:-/tmp/ka-out}
OUT=$FINAL/seeds_ab
mkdir -p "$OUT"
export LD_LIBRARY_PATH=$PWD/.dev/lib:${LD_LIBRARY_PATH:-}
export KERNELARC_CACHE=${KERNELARC_CACHE:-/tmp/ka-cache}
K=${K:-.dev/bin/kernelarc}
OLD=${OLD:-.data/old}
ROUNDS=${ROUNDS:-2}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv >"$OUT/gpu.txt" 2>&1
[[ -d $OLD/families ]] || { echo "no $OLD/families (see the header)"; exit 2; }
python3 bench/tools/family_seeds_sass.py emit --root "$OLD" --outdir "$OUT/src_old" ${FAMILY:+--family "$FAMILY"} || exit 1
python3 bench/tools/family_seeds_sass.py emit --outdir "$OUT/src_new" ${FAMILY:+--family "$FAMILY"} || exit 1
wl=()
[[ -n ${WORKLOADS:-} ]] && wl=(--workloads "$WORKLOADS")
local_problem() {  # the problem as the device copy names it: the same folder name under .data/problems
  if [[ -d $1 ]]; then echo "$1"; else echo ".data/problems/sol-execbench/FlashInfer-Bench/$(basename "$1")"; fi
}
if (( ${PREBUILD_JOBS:-8} > 0 )); then
  for side in old new; do
    while IFS=$'\t' read -r key prob src; do
      printf '%s\0%s\0%s\0%s\0' "$side" "${key//\//_}" "$(local_problem "$prob")" "$src"
    done <"$OUT/src_$side/manifest.tsv"
  done | xargs -0 -n 4 -P "${PREBUILD_JOBS:-8}" sh -c \
    'timeout -k 10 900 "$0" eval "$4" -s "$5" --workloads 1 --no-time --no-reference-time --no-sol >"$1/prebuild_$2_$3.txt" 2>&1; echo "prebuild $2 $3: exit $?"' \
    "$K" "$OUT"
fi
# judge_side SIDE KEY PROB SRC ROUND: one seed of one side, every (or the first N) workload, timed.
judge_side() {
  local side=$1 key=$2 prob=$3 src=$4 r=$5 tag=${2//\//_}
  timeout -k 10 "${STEP_S:-900}" "$K" eval "$(local_problem "$prob")" -s "$src" "${wl[@]}" --no-sol --no-reference-time \
    --report "$OUT/${side}_${tag}_r$r.json" >"$OUT/${side}_${tag}_r$r.txt" 2>&1 </dev/null
  echo "$side $key round $r: exit $? $(tail -1 "$OUT/${side}_${tag}_r$r.txt")"
}
# Per round, each seed's two sides back to back (old first in odd rounds, new first in even ones),
# so a run cut short by DEADLINE still compares every seed it reached.
for ((r = 1; r <= ROUNDS; ++r)); do
  paste "$OUT/src_old/manifest.tsv" "$OUT/src_new/manifest.tsv" | while IFS=$'\t' read -r key prob src_old _ _ src_new; do
    if (( $(date +%s) - T0 > ${DEADLINE:-86400} )); then echo "round $r $key: not started (DEADLINE)"; continue; fi
    if (( r % 2 )); then judge_side old "$key" "$prob" "$src_old" $r; judge_side new "$key" "$prob" "$src_new" $r
    else judge_side new "$key" "$prob" "$src_new" $r; judge_side old "$key" "$prob" "$src_old" $r; fi
  done
done | tee "$OUT/runs.txt"
python3 bench/tools/family_seeds_ab.py "$OUT" | tee "$OUT/summary.txt"
tar czf "$FINAL/seeds_ab_logs.tgz" -C "$FINAL" seeds_ab
