#!/usr/bin/env bash
# The judge against cheating candidates on a GPU (docs/judge.md, "What the judge defends against"),
# run from the repo root after scripts/device-pack.sh (carry .dev and .data):
#   1. every CUDA candidate of tests/data/adversarial/cuda judged on 021_rmsnorm_h128 (memo_gemm on
#      004_gemm_n128_k2048): verdicts and medians per workload;
#   2. the honest solutions (021 and 004 cuBLASLt/WMMA from examples/solutions) and the side-stream
#      control with its default-stream twin: medians per workload.
# With an old judge binary in $KA_OLD (default .dev/bin/kernelarc-old when present: a strip of
# build/src/kernelarc made at the commit before the protocol change, in a bin/ folder whose parent
# holds that commit's src/oracle, include and families), both steps also run under it,
# alternating new and old per candidate in the same session, and the summary gives the honest
# medians' new/old ratio per workload. Env: WORKLOADS (default 4: the first N of each problem),
# STEPS ("adversarial honest"), OUT (logs; default /tmp/ka-out).
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
bench_out judge_adversarial
NEW=.dev/bin/kernelarc
OLD=${KA_OLD:-.dev/bin/kernelarc-old}
[ -x "$OLD" ] || OLD=""
P=.data/problems/sol-execbench/FlashInfer-Bench
N=${WORKLOADS:-4}
STEPS=${STEPS:-"adversarial honest"}
ADV=tests/data/adversarial/cuda
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem --format=csv >"$OUT/gpu.txt" 2>&1

# judge TAG PROBLEM SOLUTION: eval with the new binary (and the old one when given) → report_TAG_{new,old}.json
judge() {
  local tag=$1 problem=$2 sol=$3
  for which in new old; do
    local bin=$NEW home=${KERNELARC_HOME:-}
    if [ $which = old ]; then
      bin=$OLD; [ -n "$bin" ] || continue
      home=$(cd "$(dirname "$OLD")/.." && pwd)  # the old binary finds its oracle beside it (bin/..)
    fi
    KERNELARC_HOME=$home $bin eval "$P/$problem" -s "$sol" --workloads "$N" --timeout 30 --no-reference-time --no-sol \
      --report "$OUT/report_${tag}_$which.json" >"$OUT/eval_${tag}_$which.txt" 2>&1
  done
}

if [[ $STEPS == *adversarial* ]]; then
  for a in poison_sniff memo_fingerprint replay_burst write_past_end write_before_start write_past_input \
           steal_reference side_stream side_stream_twin remember untouched write_input; do
    judge "adv_$a" 021_rmsnorm_h128 "$ADV/$a.cu"
  done
  judge adv_memo_gemm 004_gemm_n128_k2048 "$ADV/memo_gemm.cu"
fi
if [[ $STEPS == *honest* ]]; then
  judge honest_021 021_rmsnorm_h128 examples/solutions/021_rmsnorm_h128/solution.json
  judge honest_004_cublas 004_gemm_n128_k2048 examples/solutions/004_gemm_n128_k2048/solution_cublas.json
  judge honest_004_wmma 004_gemm_n128_k2048 examples/solutions/004_gemm_n128_k2048/solution_wmma.json
fi

python3 - "$OUT" <<'PY' | tee "$OUT/summary.txt"
import glob, json, os, sys
out = sys.argv[1]
gpu = open(f"{out}/gpu.txt").read().splitlines()
print("=== judge_adversarial on", gpu[1] if len(gpu) > 1 else "?")
def load(path):
    try:
        return json.load(open(path))["workloads"]
    except Exception:
        return None
def fmt(ws):
    if ws is None:
        return "no report"
    return "  ".join(f"{w['verdict']}" + (f" {w['timing']['median_us']:.2f}us" if w.get("timing") else "") for w in ws)
tags = sorted({os.path.basename(p)[7:].rsplit("_", 1)[0] for p in glob.glob(f"{out}/report_*_*.json")})
ratios = {}
for tag in tags:
    new, old = load(f"{out}/report_{tag}_new.json"), load(f"{out}/report_{tag}_old.json")
    print(f"{tag}\n  new: {fmt(new)}" + (f"\n  old: {fmt(old)}" if old is not None else ""))
    for which, rep in (("new", new), ("old", old)):  # a missing report: what the eval said instead
        log = f"{out}/eval_{tag}_{which}.txt"
        if rep is None and os.path.exists(log):
            print(f"  {which}: no report; the eval ended with: " + " | ".join(open(log).read().strip().splitlines()[-3:])[:300])
    if new and old and (tag.startswith("honest") or tag.startswith("adv_side_stream")):
        r = [n["timing"]["median_us"] / o["timing"]["median_us"] for n, o in zip(new, old)
             if n.get("timing") and o.get("timing") and o["timing"]["median_us"] > 0]
        if r:
            ratios[tag] = r
            print(f"  new/old medians: " + " ".join(f"{x:.3f}" for x in r))
for tag, r in ratios.items():
    if tag.startswith("honest"):
        print(f"{tag}: worst |new/old - 1| = {max(abs(x - 1) for x in r):.1%} over {len(r)} workloads")
side, twin = load(f"{out}/report_adv_side_stream_new.json"), load(f"{out}/report_adv_side_stream_twin_new.json")
if side and twin:
    r = [s["timing"]["median_us"] / t["timing"]["median_us"] for s, t in zip(side, twin) if s.get("timing") and t.get("timing")]
    print("side stream / default-stream twin (new protocol): " + " ".join(f"{x:.3f}" for x in r))
PY
tar czf "$FINAL/judge_adversarial_logs.tgz" -C "$FINAL" judge_adversarial
