#!/usr/bin/env bash
# GPU check of the engine, on a GPU machine after
# scripts/device-pack.sh (carry .dev and .data): the device's copy bandwidth (and `kernelarc
# calibrate` when built in), then `kernelarc optimize` over the seven dev FlashInfer-Bench RMSNorm
# problems with BUDGET candidates each (default 10), summarised by bench/tools/campaign_summary.py.
# TORCH=1 also re-checks the torch-binding paths. Everything goes to $OUT/campaign_logs.tgz;
# the summary is printed last. Budget the call: on a cold machine the oracle alone took 7.5 min for
# these seven problems (2026-12-02), so run with OPT_TIMEOUT well under the call's limit and TORCH=0,
# and run again (it resumes) rather than raising the limit: RESUME=DIR starts from a campaign
# folder brought back in an earlier archive (carry it, e.g. under .data). CALIBRATE=0 skips
# `kernelarc calibrate`; PROBS="026_rmsnorm_h7168 ..." picks (and orders) the problems; OPT_ARGS
# adds options to `kernelarc optimize` (e.g. "--no-sol --agents library,exploiter"). GEMM problems
# (names with _gemm_) also get bench/tools/gemm_campaign_summary.py (the GEMM figures), the attention
# problems 012/014/016/018/019 bench/tools/attention_campaign_summary.py (the attention figures, against the copy
# bandwidth and bf16 dense rate bench/tools/copy_bandwidth.py measures in the run; READ_TB_S adds a
# read-only bandwidth to compare decode with, RAF (bench/tools/read_after_flush.py's JSON lines) the time a
# plain read of each decode workload's KV bytes takes after the judge's flush; torch.compile timings missing from the campaign, i.e.
# without --time-compile in OPT_ARGS, come from the sol cache $SOL_CACHE, see bench/lib.sh). PER_PROBLEM_S=T
# runs one `optimize` per problem (same store) with `--time-limit T` (no new candidates after T
# seconds; those in flight and the piecewise candidate are still judged), killed by SIGTERM only
# COMPOSE_S (default 60) seconds later and SIGKILL DRAIN_S (default 90) after that, all within
# OPT_TIMEOUT. ORACLE_S=T adds `--oracle-time-limit T`: a problem whose input sets the oracle
# cannot make in T seconds (018/019: ~1 GB random KV caches per set) ends cleanly, unsearched, with
# the sets made so far in the machine's oracle cache (/tmp/ka-cache), so that a call made while the
# device machine is still warm goes on from them. TARGET=host runs the
# campaigns on the CPU (a check of the script itself on a machine without a GPU).
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
bench_out campaign
BUDGET=${BUDGET:-10}
gpu_facts "$OUT/gpu.txt"
python3 bench/tools/copy_bandwidth.py >"$OUT/copy.json" 2>"$OUT/copy.err"
COPY=$(python3 -c "import json;print(json.load(open('$OUT/copy.json'))['copy_tb_s'])" 2>/dev/null || echo nan)
DENSE=$(python3 -c "import json;print(round(json.load(open('$OUT/copy.json'))['bf16_dense_tflops'], 1))" 2>/dev/null || echo "")
[[ ${CALIBRATE:-1} == 1 ]] && { $K calibrate >"$OUT/calibrate.txt" 2>&1 || true; }
[[ -n ${RESUME:-} ]] && cp -r "$RESUME" "$OUT/camp"
# The reference timings `sol` measured on a GPU of this name ($SOL_CACHE's oracle-timings) stand in
# for timing the references again (the judge's default; OPT_ARGS="--retime-reference" times them
# here): 018's and 019's check sets are then made with the untimed ones, several processes at once.
[[ ${TARGET:-cuda} == cuda && -f $SOL_CACHE ]] && mkdir -p "$KERNELARC_CACHE" &&
  { tar xzf "$SOL_CACHE" -C "$KERNELARC_CACHE" --skip-old-files oracle-timings 2>>"$OUT/gpu.txt" || true; }
probs=()
for n in ${PROBS:-021_rmsnorm_h128 022_rmsnorm_h512 023_rmsnorm_h1536 025_rmsnorm_h4096 026_rmsnorm_h7168 \
         001_fused_add_rmsnorm_h2048 003_fused_add_rmsnorm_h7168}; do probs+=("$P/$n"); done
start=$(date +%s)
if [[ -n ${PER_PROBLEM_S:-} ]]; then
  # One `optimize` per problem (same store): a slow problem cannot take the others' time, and each
  # gets DRAIN_S seconds after its SIGTERM to finish the candidates in flight (a SIGKILL loses them).
  : >"$OUT/optimize.txt"
  for pr in "${probs[@]}"; do
    rest=$(( ${OPT_TIMEOUT:-420} - ($(date +%s) - start) - ${DRAIN_S:-90} - ${COMPOSE_S:-60} ))
    ((rest < 30)) && { echo "$(basename "$pr"): not started, ${rest} s left" >>"$OUT/optimize.txt"; continue; }
    t=$(( rest < PER_PROBLEM_S ? rest : PER_PROBLEM_S ))
    t0=$(date +%s)
    timeout -k ${DRAIN_S:-90} $((t + ${COMPOSE_S:-60})) $K optimize "$pr" --target ${TARGET:-cuda} --budget "$BUDGET" \
      --out "$OUT/camp" --seed 1 --no-progress --time-limit "$t" ${ORACLE_S:+--oracle-time-limit $ORACLE_S} \
      ${OPT_ARGS:-} >>"$OUT/optimize.txt" 2>&1
    rc=$?  # before any command substitution resets $?: 124 = stopped by SIGTERM, 137 = killed after DRAIN_S
    echo "$(basename "$pr"): exit $rc, wall $(( $(date +%s) - t0 )) s (limit $t s)" >>"$OUT/optimize.txt"
  done
else
  timeout -k 45 ${OPT_TIMEOUT:-420} $K optimize "${probs[@]}" --target ${TARGET:-cuda} --budget "$BUDGET" --out "$OUT/camp" --seed 1 --no-progress ${OPT_ARGS:-} >"$OUT/optimize.txt" 2>&1
fi
echo "optimize wall: $(( $(date +%s) - start )) s" >>"$OUT/optimize.txt"
# The judge's own logs of this run (oracle progress, per-set load times), the last 256 KB of each.
mkdir -p "$OUT/runner_logs"
find "$KERNELARC_CACHE/logs" -name 'runner-*' -newer "$OUT/gpu.txt" 2>/dev/null | while read -r f; do
  tail -c 262144 "$f" >"$OUT/runner_logs/$(basename "$f")"
done
python3 bench/tools/campaign_summary.py "$OUT/camp" "$P" "$COPY" >"$OUT/summary_campaign.txt" 2>&1
[[ " ${probs[*]}" == *_gemm_* ]] && python3 bench/tools/gemm_campaign_summary.py "$OUT/camp" >>"$OUT/summary_campaign.txt" 2>&1
[[ " ${probs[*]}" =~ /01[24689]_ ]] && python3 bench/tools/attention_campaign_summary.py "$OUT/camp" --copy-tb-s "$COPY" \
  ${READ_TB_S:+--read-tb-s $READ_TB_S} ${RAF:+--read-after-flush $RAF} ${DENSE:+--dense-tflops $DENSE} ${SOL_CACHE:+--sol-cache $SOL_CACHE} >>"$OUT/summary_campaign.txt" 2>&1
# The store and the per-problem outputs travel back in the archive (one file to fetch from the GPU
# machine); a campaign cut short by the time limit is resumed by the same command.
if [[ ${TORCH:-0} == 1 ]]; then
  $K eval "$P/021_rmsnorm_h128" -s examples/solutions/021_rmsnorm_h128/torch_binding/solution.json >"$OUT/eval_torch_binding.txt" 2>&1
  $K export "$P/021_rmsnorm_h128" -s examples/solutions/021_rmsnorm_h128/solution.json -o "$OUT/export_021.json" >/dev/null
  $K eval "$P/021_rmsnorm_h128" -s "$OUT/export_021.json" >"$OUT/eval_exported.txt" 2>&1
fi
{
  echo "=== $(head -2 "$OUT/gpu.txt" | tail -1), $(date -u +%FT%TZ); copy bandwidth $(cat "$OUT/copy.json")"
  tail -12 "$OUT/optimize.txt"
  cat "$OUT/summary_campaign.txt"
  [[ ${TORCH:-0} == 1 ]] && echo "torch binding: $(tail -1 "$OUT/eval_torch_binding.txt"); exported: $(tail -1 "$OUT/eval_exported.txt")"
} | tee "$OUT/summary.txt"
tar czf "$FINAL/campaign_logs.tgz" -C "$FINAL" campaign && rm -rf "$OUT"
