#!/usr/bin/env bash
# GPU checks of the worker's sandbox and of the timer's cross-checks (docs/judge.md: Sandbox,
# Timer), run from the repo root after scripts/device-pack.sh (carry .dev and .data). Logs go to
# $OUT/sandbox (OUT defaults to /tmp/ka-out); a summary is printed last:
#   1. the kernel's features (uname, LSMs, Landlock ABI as the worker saw it: its log line);
#   2. the adversarial CUDA candidates on 021_rmsnorm_h128: the sandbox twins (cache, judge memory,
#      judge environment, sockets; expected: passed, every attempt denied — a crash with exit code
#      42-49 means an attempt succeeded) and the timer attacks (cupti_disable, cupti_callbacks,
#      hidden_stream, lazy_thread: expected timing_mismatch; cupti_finalize: not passed);
#   3. honest solutions (021 RMSNorm, 004 GEMM cuBLASLt) judged with the sandbox on and with
#      KERNELARC_SANDBOX=off, alternating, twice each; with K_BASE=<a kernelarc built from the
#      previous main> also by that binary (the whole change's cost): median per workload and ratio.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
bench_out sandbox
K=${K:-.dev/bin/kernelarc}
P=.data/problems/sol-execbench/FlashInfer-Bench
summary=()

{ uname -r; cat /sys/kernel/security/lsm 2>/dev/null; echo; id; } >"$OUT/kernel.txt" 2>&1
summary+=("kernel: $(head -1 "$OUT/kernel.txt"), lsm: $(sed -n 2p "$OUT/kernel.txt"), $(tail -1 "$OUT/kernel.txt" | cut -d' ' -f1)")

verdicts() {  # report.json -> "verdict,verdict: first message"
  python3 - "$1" <<'PY'
import json, sys
try:
    ws = json.load(open(sys.argv[1]))["workloads"]
    msg = next((w.get("message", "") for w in ws if w.get("message")), "")
    print(",".join(w["verdict"] for w in ws) + (": " + msg[:160] if msg else ""))
except Exception as e:
    print("no report:", e)
PY
}

for a in sandbox_read_cache sandbox_judge_memory sandbox_judge_env sandbox_socket \
         cupti_disable cupti_callbacks cupti_finalize hidden_stream lazy_thread; do
  $K eval "$P/021_rmsnorm_h128" -s "tests/data/adversarial/cuda/$a.cu" --workloads 2 --timeout 30 --no-reference-time \
    --report "$OUT/adv_$a.json" >"$OUT/adv_$a.txt" 2>&1
  summary+=("adversarial $a: $(verdicts "$OUT/adv_$a.json")")
done
summary+=("worker sandbox lines: $(grep -h '^sandbox:' "$KERNELARC_CACHE"/logs/worker-*.log 2>/dev/null | sort | uniq -c | head -3)")

# Honest solutions: same binary with the sandbox on and off (and K_BASE), alternating.
run_honest() {  # tag binary env... -> report files
  local tag=$1 bin=$2
  shift 2
  env "$@" "$bin" eval "$P/021_rmsnorm_h128" -s examples/solutions/021_rmsnorm_h128/solution.json --no-reference-time \
    --report "$OUT/honest_021_$tag.json" >"$OUT/honest_021_$tag.txt" 2>&1
  env "$@" "$bin" eval "$P/004_gemm_n128_k2048" -s examples/solutions/004_gemm_n128_k2048/solution_cublas.json \
    --no-reference-time --report "$OUT/honest_004_$tag.json" >"$OUT/honest_004_$tag.txt" 2>&1
}
for round in 1 2; do
  run_honest "on$round" "$K"
  run_honest "off$round" "$K" KERNELARC_SANDBOX=off
  [ -n "${K_BASE:-}" ] && run_honest "base$round" "$K_BASE"
done
summary+=("$(python3 - "$OUT" <<'PY'
import glob, json, os, statistics, sys
out = sys.argv[1]
lines = []
for prob in ("021", "004"):
    med = {}
    for f in sorted(glob.glob(f"{out}/honest_{prob}_*.json")):
        tag = os.path.basename(f)[len(f"honest_{prob}_"):-5].rstrip("12")
        try:
            ws = json.load(open(f))["workloads"]
        except Exception:
            continue
        for w in ws:
            if w.get("verdict") != "passed" or not w.get("timing"):
                lines.append(f"{prob} {tag}: {w.get('verdict')} {w.get('message', '')[:120]}")
                continue
            med.setdefault(tag, {}).setdefault(w["uuid"], []).append(w["timing"]["median_us"])
    for tag in ("off", "base"):
        if tag not in med or "on" not in med:
            continue
        ratios = [statistics.median(med["on"][u]) / statistics.median(med[tag][u]) for u in med["on"] if u in med[tag]]
        if ratios:
            lines.append(f"{prob}: sandbox-on / {tag} median ratio over {len(ratios)} workloads: "
                         f"median {statistics.median(ratios):.3f}, min {min(ratios):.3f}, max {max(ratios):.3f}")
print("\n".join(lines) or "no honest timings")
PY
)")

printf '%s\n' "${summary[@]}" | tee "$OUT/summary.txt"
