#!/usr/bin/env bash
# One GPU run that measures many attention points and then goes on with `sol`, from the repo root
# after scripts/device-pack.sh and the GEMM points built here (`WORK=$PWD/.dev/gemm BUILD_ONLY=1 bash
# bench/regress/gemm_family.sh`); carry .dev and .data (`sol` starts from .data/sol-cache.tgz when present).
#   1. decode: bench/regress/decode_attention.sh on every workload of 012 and 018 (DECODE_CASES, default
#      workloads; no campaign)
#      for the points in SWEEP_GQA / SWEEP_MLA (effective KV bandwidth per workload);
#   2. prefill: bench/regress/prefill_attention.sh on the largest workloads only (ONLY: 014's one large workload,
#      016's two, 019's four) for SWEEP_GQAP / SWEEP_MLAP (TFLOP/s over unmasked scores);
#   3. the GEMM family self-test (its newest points first) within GEMM_S seconds (0: skipped);
#   4. ncu (SpeedOfLight, memory, occupancy, warp states, source counters) of the first decode point
#      of each family on the largest-KV workload, NCU_S seconds each, if the machine allows
#      profiling; the report, its sections as text, and the SASS instructions with the most
#      warp-stall samples (bench/tools/ncu_sass_top.py; NCU_TOP lines printed);
#   5. bench/tools/gather_bw.cu (random-row read bandwidth, ~20 s; GATHER=0 skips it), built there;
#   6. bench/regress/sol.sh on SOL_PROBS (empty: skipped) with what is left of DEADLINE (default 575 s).
# An empty list skips its family (both prefill lists empty: no prefill step). Each step writes under
# $OUT (attention/, prefill/, gemm/, ncu_*.txt, sol/ archives); the summaries are printed last, then
# everything but sol_cache.tgz is packed into $OUT/sweep_logs.tgz (one archive to bring back).
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
export OUT=${OUT:-/tmp/ka-out}
mkdir -p "$OUT"
deadline_start "${DEADLINE:-575}"
# Default points: HEADS=0 first (all kv heads per CTA, whole 1 KB K/V rows by bulk copies: 256-byte
# pieces of random rows top out at ~2.3-2.4 TB/s on the H200, whole 1 KB rows reach 2.8 TB/s, see
# bench/tools/gather_bw.cu), the first of them the one ncu profiles: ~200 KB of stages in flight per CTA
# each (3 x 32 tokens, 6 x 16 tokens; one warp per kv head, or two at WARPS=8); then the same-run
# baselines: the best HEADS=1 point so far (2.28 TB/s on 012's largest workload) and BULK=1 without
# the producer warp.
SWEEP_GQA=${SWEEP_GQA-"WARPS=4,TILE=32,STAGES=3,SPLIT_TOKENS=4096,WAVES=1,FUSED_MERGE=1,NO_SPLIT_BELOW=0,L2_PREFETCH=0,BULK=1,PRODUCER=1,QK_SPLIT=0,HEADS=0
WARPS=4,TILE=16,STAGES=6,SPLIT_TOKENS=4096,WAVES=1,FUSED_MERGE=1,NO_SPLIT_BELOW=0,L2_PREFETCH=0,BULK=1,PRODUCER=1,QK_SPLIT=0,HEADS=0
WARPS=8,TILE=32,STAGES=3,SPLIT_TOKENS=4096,WAVES=1,FUSED_MERGE=1,NO_SPLIT_BELOW=0,L2_PREFETCH=0,BULK=1,PRODUCER=1,QK_SPLIT=0,HEADS=0
WARPS=4,TILE=64,STAGES=3,SPLIT_TOKENS=4096,WAVES=1,FUSED_MERGE=1,NO_SPLIT_BELOW=0,L2_PREFETCH=0,BULK=1,PRODUCER=1,QK_SPLIT=0,HEADS=1
WARPS=4,TILE=64,STAGES=3,SPLIT_TOKENS=4096,WAVES=1,FUSED_MERGE=1,NO_SPLIT_BELOW=0,L2_PREFETCH=0,BULK=1,PRODUCER=0,QK_SPLIT=0,HEADS=1"}
# MLA: the wgmma (swap-AB) points first, MMA=1 with two warpgroups (the first, the one ncu profiles)
# and with one; then the mma.sync best so far (1.27 TB/s on 018's largest workload) as the same-run
# baseline, and its 32-token-tile variant.
SWEEP_MLA=${SWEEP_MLA-"WARPS=8,TILE=64,STAGES=2,SPLIT_TOKENS=4096,WAVES=1,FUSED_MERGE=1,NO_SPLIT_BELOW=0,L2_PREFETCH=0,MMA=1
WARPS=4,TILE=64,STAGES=2,SPLIT_TOKENS=4096,WAVES=1,FUSED_MERGE=1,NO_SPLIT_BELOW=0,L2_PREFETCH=0,MMA=1
WARPS=8,TILE=64,STAGES=2,SPLIT_TOKENS=4096,WAVES=1,FUSED_MERGE=1,NO_SPLIT_BELOW=0,L2_PREFETCH=0,MMA=0
WARPS=8,TILE=32,STAGES=4,SPLIT_TOKENS=4096,WAVES=1,FUSED_MERGE=1,NO_SPLIT_BELOW=0,L2_PREFETCH=0,MMA=0"}
# GQA prefill: the best warp-specialised points of 2026-12-04 (WS=1, see families/gqa_prefill_cuda:
# WARPS=12 326 TFLOP/s on 014's largest workload, not yet run on 016; PERSIST=1 289 TFLOP/s on
# 016's largest), a neighbour (STAGES=4) and the best WS=0 point (254-255 TFLOP/s) as the same-run
# baseline; four points, so that the prefill step reaches 016 within PREFILL_S.
SWEEP_GQAP=${SWEEP_GQAP-"WARPS=12,KV_TILE=64,STAGES=3,ORDER=2,Q_IN_SMEM=1,MMA=1,OVERLAP=1,PERSIST=0,WS=1,PINGPONG=1
WARPS=12,KV_TILE=64,STAGES=4,ORDER=2,Q_IN_SMEM=1,MMA=1,OVERLAP=1,PERSIST=0,WS=1,PINGPONG=1
WARPS=8,KV_TILE=128,STAGES=2,ORDER=2,Q_IN_SMEM=1,MMA=1,OVERLAP=1,PERSIST=1,WS=1,PINGPONG=1
WARPS=8,KV_TILE=128,STAGES=2,ORDER=2,Q_IN_SMEM=1,MMA=1,OVERLAP=0,PERSIST=0,WS=0,PINGPONG=0"}
SWEEP_MLAP=${SWEEP_MLAP-"QTOK=4,WARPS=12,KV_TILE=32,STAGES=4,ORDER=2,PERSIST=0,MMA=1
QTOK=4,WARPS=12,KV_TILE=32,STAGES=3,ORDER=2,PERSIST=0,MMA=1
QTOK=4,WARPS=12,KV_TILE=32,STAGES=5,ORDER=2,PERSIST=0,MMA=1
QTOK=4,WARPS=8,KV_TILE=64,STAGES=2,ORDER=2,PERSIST=0,MMA=1"}
SOL_PROBS=${SOL_PROBS-"012_gqa_paged_decode_h32_kv4_d128_ps1 018_mla_paged_decode_h16_ckv512_kpe64_ps1
020_moe_fp8_block_scale_ds_routing_topk8_ng8_kg4_e32_h7168_i2048 014_gqa_paged_prefill_causal_h32_kv4_d128_ps1
019_mla_paged_prefill_causal_h16_ckv512_kpe64_ps1"}
oneline() { echo $*; }  # newlines to spaces

PTS_GQA=$(oneline $SWEEP_GQA) PTS_MLA=$(oneline $SWEEP_MLA) CASES=${DECODE_CASES:-workloads} BUDGET=0 SELFTEST_TIMEOUT=${DECODE_S:-75} \
  bash bench/regress/decode_attention.sh >"$OUT/attn.txt" 2>&1
[[ -n $SWEEP_GQAP$SWEEP_MLAP ]] && PTS_GQA=$(oneline $SWEEP_GQAP) PTS_MLA=$(oneline $SWEEP_MLAP) CASES=workloads OPTIMIZE=0 SELFTEST_TIMEOUT=${PREFILL_S:-80} \
  ONLY=9fb16120,007ddabb,5c51d2e8,a06f2653,0e70750d,fe63f292,54187805 DEADLINE=$((2 * ${PREFILL_S:-80} + 20)) \
  bash bench/regress/prefill_attention.sh >"$OUT/prefill.txt" 2>&1
((${GEMM_S:-75} > 0)) && DEADLINE=${GEMM_S:-75} BUDGET=0 WORK=$PWD/.dev/gemm bash bench/regress/gemm_family.sh >"$OUT/gemm.txt" 2>&1

# ncu of one decode point per family on its largest-KV workload (skipped where ncu is missing).
if command -v ncu >/dev/null; then
  first() { set -- $1; echo "${1:-}"; }  # the first point of a list (newline- or space-separated)
  for spec in "gqa:$(first "$SWEEP_GQA"):7a7fc288" "mla:$(first "$SWEEP_MLA"):5bef8d88"; do
    IFS=: read -r fam kn case <<<"$spec"
    [[ -z $kn ]] && continue
    timeout ${NCU_S:-45} ncu --target-processes all --kernel-name regex:decode_kernel --launch-skip 2 --launch-count 1 \
      --section SpeedOfLight --section MemoryWorkloadAnalysis --section Occupancy --section WarpStateStats \
      --section LaunchStats --section SourceCounters -f -o "$OUT/ncu_$fam" \
      python3 bench/tools/attention_selftest.py --mode cuda --family $fam --knobs "$kn" \
      --cases workloads --only $case --time --workdir /tmp/ka-ncu-$fam >"$OUT/ncu_${fam}_run.txt" 2>&1
    echo "exit $?" >>"$OUT/ncu_${fam}_run.txt"
    # The sections as text, and the stall samples per SASS instruction (where the warps wait).
    ncu -i "$OUT/ncu_$fam.ncu-rep" --page details >"$OUT/ncu_$fam.txt" 2>&1
    ncu -i "$OUT/ncu_$fam.ncu-rep" --page source --csv --print-source sass >"$OUT/ncu_${fam}_sass.csv" 2>&1
    python3 bench/tools/ncu_sass_top.py "$OUT/ncu_${fam}_sass.csv" >"$OUT/ncu_${fam}_top.txt" 2>&1
  done
fi

if [[ ${GATHER:-1} == 1 ]] && (($(left) > 60)); then
  "${KERNELARC_NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}" -O3 -std=c++17 -arch=sm_90a -o /tmp/ka-gather-bw bench/tools/gather_bw.cu >"$OUT/gather_bw.txt" 2>&1 &&
    timeout 60 /tmp/ka-gather-bw >>"$OUT/gather_bw.txt" 2>&1
fi

L=$(left)
if ((L > 60)) && [[ -n $SOL_PROBS ]]; then
  DEADLINE=$L PROBLEM_LIMIT=${PROBLEM_LIMIT:-150} COMPILE_BUDGET=${COMPILE_BUDGET:-300} PROBS=$(oneline $SOL_PROBS) \
    bash bench/regress/sol.sh >"$OUT/sol.txt" 2>&1
fi
for f in attn prefill; do echo "==== $f"; tail -20 "$OUT/$f.txt"; done
echo "==== gemm"; tail -45 "$OUT/gemm.txt" 2>/dev/null
for f in gqa mla; do
  echo "==== ncu $f"
  grep -E "DRAM Throughput|Memory Throughput|Duration|Achieved Occupancy|Registers Per|Stall|exit|ERR" "$OUT/ncu_$f.txt" "$OUT/ncu_${f}_run.txt" 2>/dev/null | head -14
  head -${NCU_TOP:-16} "$OUT/ncu_${f}_top.txt" 2>/dev/null
done
echo "==== gather_bw"; cat "$OUT/gather_bw.txt" 2>/dev/null
echo "==== sol"; tail -12 "$OUT/sol.txt" 2>/dev/null
# Everything but the timing cache goes into one archive.
(cd "$OUT" && tar czf sweep_logs.tgz --remove-files $(ls | grep -vx -e sol_cache.tgz -e sweep_logs.tgz))
