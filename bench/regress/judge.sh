#!/usr/bin/env bash
# GPU checks of the judge, on a GPU machine after scripts/device-pack.sh (carry .dev and .data). Writes logs to $OUT (or /tmp/ka-out) and prints a
# summary last:
#   1. the hand-written CUDA solutions of the seven dev RMSNorm problems and GEMM 004 (cuBLASLt
#      and WMMA), every workload;
#   2. the adversarial CUDA candidates (crash, hang, input write, untouched output, illegal memory
#      access, remembered results), with a correct candidate judged after each;
#   3. the cuBLASLt GEMM's judged medians against torch.matmul's cuBLAS kernel time from PyTorch's
#      profiler with the same L2 flush (bench/tools/torch_matmul_profile.py);
#   4. an exported solution.json built and called the way SOL-ExecBench does (bench/tools/check_export.py);
#   5. (torch) a solution written for SOL-ExecBench (torch binding) and an exported one, judged here;
#   6. (upstream) exported solutions run under SOL-ExecBench's own evaluator (bench/tools/run_solexecbench.sh;
#      needs .whl and .data/sol-execbench-src carried).
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
bench_out judge   # everything lands here, then one archive goes back ($FINAL/judge_logs.tgz)
STEPS=${STEPS:-"solutions adversarial matmul export torch upstream"}
gpu_facts "$OUT/gpu.txt"
summary=()

if [[ $STEPS == *solutions* ]]; then
  for n in 021_rmsnorm_h128 022_rmsnorm_h512 023_rmsnorm_h1536 025_rmsnorm_h4096 026_rmsnorm_h7168 \
           001_fused_add_rmsnorm_h2048 003_fused_add_rmsnorm_h7168; do
    $K eval "$P/$n" -s "examples/solutions/$n/solution.json" --report "$OUT/report_$n.json" -o "$OUT/traces.jsonl" \
      >"$OUT/eval_$n.txt" 2>&1
    summary+=("$n: $(tail -1 "$OUT/eval_$n.txt")")
  done
  for s in cublas wmma; do
    $K eval "$P/004_gemm_n128_k2048" -s "examples/solutions/004_gemm_n128_k2048/solution_$s.json" \
      --report "$OUT/report_004_$s.json" -o "$OUT/traces.jsonl" >"$OUT/eval_004_$s.txt" 2>&1
    summary+=("004 $s: $(tail -1 "$OUT/eval_004_$s.txt")")
  done
fi

if [[ $STEPS == *adversarial* ]]; then
  good=examples/solutions/021_rmsnorm_h128/solution.json
  for a in crash hang write_input untouched illegal_access remember; do
    $K eval "$P/021_rmsnorm_h128" -s "tests/data/adversarial/cuda/$a.cu" --workloads 2 --timeout 10 --no-reference-time \
      --report "$OUT/adv_$a.json" >"$OUT/adv_$a.txt" 2>&1
    v=$(python3 -c "import json;print(','.join(w['verdict'] for w in json.load(open('$OUT/adv_$a.json'))['workloads']))" 2>/dev/null)
    $K eval "$P/021_rmsnorm_h128" -s $good --workloads 2 --no-reference-time >"$OUT/adv_${a}_next.txt" 2>&1
    summary+=("adversarial $a: $v; next candidate: $(tail -1 "$OUT/adv_${a}_next.txt")")
  done
fi

if [[ $STEPS == *matmul* ]]; then
  python3 bench/tools/torch_matmul_profile.py "$P/004_gemm_n128_k2048" >"$OUT/torch_matmul.jsonl" 2>"$OUT/torch_matmul.err"
  summary+=("$(python3 - "$OUT" <<'PY'
import json, sys
out = sys.argv[1]
rep = {w["uuid"]: w for w in json.load(open(f"{out}/report_004_cublas.json"))["workloads"]}
rows, worst = [], 0
for line in open(f"{out}/torch_matmul.jsonl"):
    t = json.loads(line)
    w = rep.get(t["uuid"])
    if not w or "timing" not in w:
        continue
    k = w["timing"]["median_us"]
    d = k / t["torch_matmul_us"] - 1
    worst = max(worst, abs(d))
    rows.append(f"M={t['M']}: judge {k:.2f} us, torch profiler {t['torch_matmul_us']:.2f} us ({d:+.1%})")
open(f"{out}/matmul_compare.txt", "w").write("\n".join(rows) + "\n")
print(f"cuBLASLt judged vs torch.matmul profiler: {len(rows)} workloads, worst |diff| {worst:.1%}")
PY
)")
fi

if [[ $STEPS == *export* ]]; then
  $K export "$P/021_rmsnorm_h128" -s examples/solutions/021_rmsnorm_h128/solution.json -o "$OUT/export_021.json" >/dev/null
  python3 bench/tools/check_export.py "$P/021_rmsnorm_h128" "$OUT/export_021.json" >"$OUT/export_021.txt" 2>"$OUT/export_021.err"
  summary+=("export 021 under the torch cpp_extension build: $(grep -c '"ok": true' "$OUT/export_021.txt") ok, $(grep -c '"ok": false' "$OUT/export_021.txt") failed")
fi

if [[ $STEPS == *torch* ]]; then
  $K eval "$P/021_rmsnorm_h128" -s examples/solutions/021_rmsnorm_h128/torch_binding/solution.json \
    --report "$OUT/report_021_torch_binding.json" >"$OUT/eval_021_torch_binding.txt" 2>&1
  summary+=("021 written for SOL-ExecBench (torch binding), judged by KernelArc: $(tail -1 "$OUT/eval_021_torch_binding.txt")")
  $K export "$P/021_rmsnorm_h128" -s examples/solutions/021_rmsnorm_h128/solution.json -o "$OUT/export_021.json" >/dev/null
  $K eval "$P/021_rmsnorm_h128" -s "$OUT/export_021.json" --report "$OUT/report_021_exported.json" \
    >"$OUT/eval_021_exported.txt" 2>&1
  summary+=("021 exported by KernelArc, judged by KernelArc: $(tail -1 "$OUT/eval_021_exported.txt")")
fi

if [[ $STEPS == *upstream* ]]; then
  for spec in 021_rmsnorm_h128:solution.json 001_fused_add_rmsnorm_h2048:solution.json 004_gemm_n128_k2048:solution_cublas.json; do
    n=${spec%%:*}; f=${spec#*:}
    $K export "$P/$n" -s "examples/solutions/$n/$f" -o "$OUT/upstream_$n.json" >/dev/null
    SXB_TIMEOUT=240 bash bench/tools/run_solexecbench.sh "$P/$n" "$OUT/upstream_$n.json" "$OUT/upstream_traces_$n.jsonl" \
      >"$OUT/upstream_$n.txt" 2>&1
    summary+=("SOL-ExecBench's own evaluator on KernelArc's export of $n: $(python3 -c "
import json, collections
c = collections.Counter(json.loads(l)['evaluation']['status'] for l in open('$OUT/upstream_traces_$n.jsonl') if l.startswith('{'))
print(dict(c))" 2>/dev/null || echo 'no traces')")
  done
fi

{
  echo "=== summary ($(head -2 "$OUT/gpu.txt" | tail -1)), $(date -u +%FT%TZ)"
  printf '%s\n' "${summary[@]}"
} | tee "$OUT/summary.txt"
tar czf "$FINAL/judge_logs.tgz" -C "$FINAL" judge && rm -rf "$OUT"
