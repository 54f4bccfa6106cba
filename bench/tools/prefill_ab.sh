#!/usr/bin/env bash
# A/B of the causal prefill families on a GPU: an older copy of families/ (OLD, default
# .data/old: `mkdir -p .data/old && git archive REV families | tar x -C .data/old` here, before
# scripts/device-pack.sh; carry .dev and .data) against the repo's, in one call, on the workloads
# that decide the prefill target (50% of the dense rate on > 50 GFLOP of unmasked work: 016's 5c51d2e8 and 007ddabb,
# 014's 9fb16120; 019's 74202b1d, 733a7bbe, 053a88a3, 54187805, fe63f292, below its slowest references).
# bench/tools/attention_selftest.py --mode cuda --cases workloads --time (correctness against the
# definition's reference, then the median of L2-flushed calls by CUDA events; not the judge's
# protocol), one process per (family, source) so each reference runs once per source:
#   GQA_BOTH / MLA_BOTH  points run on both sources (space-separated knob lists);
#   GQA_NEW / MLA_NEW    points only the repo's families have (e.g. knobs added since OLD);
#   GQA_ONLY / MLA_ONLY  workload ids (uuid prefixes); STEP_S per self-test process (default 200).
# Rows go to $OUT/prefill_ab/ab.jsonl; bench/tools/ab_summary.py prints per workload every (point,
# source) and per point the geomean time ratio new / old; all of it in $OUT/prefill_ab_logs.tgz.
# NCU=1 then profiles (clocks left as found) each family's seed (the repo's source; the builds above are reused) on one
# workload (NCU_GQA, NCU_MLA: uuid prefixes) with ncu's throughput, memory, scheduler and warp-state
# sections: ncu_<family>.txt in the archive, its headline figures in the summary.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
bench_out prefill_ab
OLD=${OLD:-.data/old}
STEP_S=${STEP_S:-200}
SEED_GQA=WARPS=12,KV_TILE=64,STAGES=3,ORDER=2,Q_IN_SMEM=1,PERSIST=0,MMA=1,OVERLAP=1,WS=1,PINGPONG=1
FA3_GQA=WARPS=8,KV_TILE=128,STAGES=2,ORDER=2,Q_IN_SMEM=1,PERSIST=0,MMA=1,OVERLAP=1,WS=1,PINGPONG=1
GQA_BOTH=${GQA_BOTH-"$SEED_GQA $FA3_GQA"}
GQA_NEW=${GQA_NEW-"${SEED_GQA/PERSIST=0/PERSIST=2} ${FA3_GQA/PERSIST=0/PERSIST=2} WARPS=8,KV_TILE=64,STAGES=3,ORDER=2,Q_IN_SMEM=1,PERSIST=0,MMA=1,OVERLAP=1,WS=1,PINGPONG=1,QREG=1 WARPS=8,KV_TILE=64,STAGES=3,ORDER=2,Q_IN_SMEM=1,PERSIST=2,MMA=1,OVERLAP=1,WS=1,PINGPONG=1,QREG=1"}
MLA_BOTH=${MLA_BOTH-"QTOK=4,WARPS=12,KV_TILE=32,STAGES=3,ORDER=1,PERSIST=0,MMA=1 QTOK=4,WARPS=8,KV_TILE=64,STAGES=2,ORDER=2,PERSIST=1,MMA=1"}
# The item stream (PERSIST=1 on WARPS 12, since db65248): not in sources older than that.
MLA_NEW=${MLA_NEW-"QTOK=4,WARPS=12,KV_TILE=32,STAGES=3,ORDER=1,PERSIST=1,MMA=1,SAHEAD=0 QTOK=4,WARPS=12,KV_TILE=32,STAGES=3,ORDER=2,PERSIST=1,MMA=1,SAHEAD=0"}
GQA_ONLY=${GQA_ONLY:-5c51d2e8,007ddabb,9fb16120}
MLA_ONLY=${MLA_ONLY:-74202b1d,733a7bbe,053a88a3,54187805,fe63f292}
gpu_facts "$OUT/gpu.txt"
[[ -d $OLD/families ]] || echo "no $OLD/families: the old side is skipped" | tee "$OUT/warning.txt"
run() {  # family, only, source ("" = the repo's), points...
  local fam=$1 only=$2 src=$3
  shift 3
  local args=()
  for k in "$@"; do args+=(--knobs "$k"); done
  ((${#args[@]})) || return 0
  [[ -n $src && ! -d $src/families ]] && return 0
  echo "== $fam ${src:-families}: $*" >>"$OUT/selftest.txt"
  timeout -k 10 "$STEP_S" python3 bench/tools/attention_selftest.py --mode cuda --family "$fam" --cases workloads \
    --only "$only" --time ${src:+--families "$src"} "${args[@]}" --jsonl "$OUT/ab.jsonl" >>"$OUT/selftest.txt" 2>&1
  echo "exit $?" >>"$OUT/selftest.txt"
}
# shellcheck disable=SC2086
run gqa_prefill "$GQA_ONLY" "$OLD" $GQA_BOTH
# shellcheck disable=SC2086
run gqa_prefill "$GQA_ONLY" "" $GQA_BOTH $GQA_NEW
# shellcheck disable=SC2086
run mla_prefill "$MLA_ONLY" "$OLD" $MLA_BOTH
# shellcheck disable=SC2086
run mla_prefill "$MLA_ONLY" "" $MLA_BOTH $MLA_NEW
if [[ ${NCU:-0} == 1 ]] && command -v ncu >/dev/null; then
  for spec in "gqa_prefill $SEED_GQA ${NCU_GQA:-5c51d2e8}" "mla_prefill ${MLA_BOTH%% *} ${NCU_MLA:-fe63f292}"; do
    read -r fam knobs only <<<"$spec"
    timeout -k 10 "${NCU_S:-150}" ncu --clock-control none --kernel-name regex:prefill --launch-skip 2 --launch-count 1 \
      --section SpeedOfLight --section MemoryWorkloadAnalysis --section ComputeWorkloadAnalysis \
      --section SchedulerStats --section WarpStateStats --section Occupancy --section LaunchStats \
      python3 bench/tools/attention_selftest.py --mode cuda --family "$fam" --cases workloads --only "$only" \
      --time --knobs "$knobs" >"$OUT/ncu_$fam.txt" 2>&1
    echo "exit $?" >>"$OUT/ncu_$fam.txt"
  done
fi
{
  echo "=== $(tail -1 "$OUT/gpu.txt"), $(date -u +%FT%TZ)"
  grep -E "^== |checks|exit" "$OUT/selftest.txt"
  python3 bench/tools/ab_summary.py "$OUT/ab.jsonl" 2>&1
  for f in "$OUT"/ncu_*.txt; do
    [[ -f $f ]] || continue
    echo "== $(basename "$f")"
    grep -E "^  [a-z_]+_kernel|Duration|Compute \(SM\) Throughput|Memory Throughput|L2 Cache Throughput|L1/TEX Cache Throughput|DRAM Throughput|Issue Slots Busy|Eligible Warps|No Eligible|Registers Per|Achieved Occupancy|Warp Cycles Per Issued|exit" "$f" | head -20
  done
} | tee "$OUT/summary.txt"
tar czf "$FINAL/prefill_ab_logs.tgz" -C "$FINAL" prefill_ab && rm -rf "$OUT"
