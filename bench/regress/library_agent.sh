#!/usr/bin/env bash
# GPU check of the library agent (src/agents/library.h) and its family families/gemm_cublaslt_cuda
# (cublasLtMatmul with a static table of fully specified algorithms), on a Hopper GPU (H200, H100) from the repo root
# after scripts/device-pack.sh (carry .dev and .data):
#   1. `kernelarc lt-enum` on 004_gemm_n128_k2048 (and 006 when time allows): how many algo ids,
#      configs valid at some M, heuristic results, seconds;
#   2. `kernelarc optimize 004_gemm_n128_k2048 --agents library --budget BUDGET` (24): the agent's
#      single configs, its composed table(s), their verdicts and timings against the reference
#      (torch.matmul, i.e. cuBLAS with its own heuristic);
#   3. the same command again: a resume must replay everything (measured 0) from the recorded
#      enumeration and the store;
#   4. `kernelarc export` of the best solution (SOL-ExecBench solution.json keeps -lcublasLt);
#   5. prints a short table last: the leaderboard's head, the best table's rows, the findings.
# Everything goes to $OUT/library_logs.tgz. A global DEADLINE (seconds, default 540) keeps the run
# inside one 10-minute run: later steps are shortened or skipped when time runs out.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
deadline_start "${DEADLINE:-540}"
BUDGET=${BUDGET:-24}
bench_out library
rm -rf "$OUT" && mkdir -p "$OUT"
gpu_facts "$OUT/gpu.txt"

# 1. the enumeration
for prob in 004_gemm_n128_k2048 006_gemm_n2048_k4096; do
  if (($(left) < 300)) && [[ $prob != 004* ]]; then
    echo "lt-enum $prob skipped: $(left) s left" >>"$OUT/notes.txt"
    continue
  fi
  t0=$(date +%s.%N)
  timeout 240 "$K" lt-enum "$P/$prob" -o "$OUT/lt_enum_$prob.json" >"$OUT/lt_enum_$prob.log" 2>&1
  echo "exit $? in $(awk "BEGIN{printf \"%.1f\", $(date +%s.%N) - $t0}") s" >>"$OUT/lt_enum_$prob.log"
done

# 2. the campaign, 3. its resume
OPT_T=$(($(left) - 90))
((OPT_T > ${OPT_TIMEOUT:-400})) && OPT_T=${OPT_TIMEOUT:-400}
CMD=("$K" optimize "$P/004_gemm_n128_k2048" --target cuda --agents library --budget "$BUDGET" --out "$OUT/camp" --seed 1
  --no-progress)
if ((OPT_T > 60)); then
  t0=$(date +%s)
  timeout "$OPT_T" "${CMD[@]}" >"$OUT/optimize.txt" 2>&1
  echo "optimize exit $?, wall $(($(date +%s) - t0)) s (limit $OPT_T s)" >>"$OUT/optimize.txt"
else
  echo "optimize skipped: $OPT_T s left" >"$OUT/optimize.txt"
fi
if (($(left) > 70)) && [[ -f $OUT/camp/campaign.db ]]; then
  t0=$(date +%s)
  timeout $(($(left) - 40)) "${CMD[@]}" >"$OUT/resume.txt" 2>&1
  echo "resume exit $?, wall $(($(date +%s) - t0)) s" >>"$OUT/resume.txt"
else
  echo "resume skipped" >"$OUT/resume.txt"
fi

# 4. export
BEST=$OUT/camp/004_gemm_n128_k2048/best/solution.json
if [[ -f $BEST ]]; then
  "$K" export "$P/004_gemm_n128_k2048" --solution "$BEST" -o "$OUT/solution_sol_execbench.json" >"$OUT/export.txt" 2>&1
  echo "export exit $?" >>"$OUT/export.txt"
fi

# 5. the summary
python3 - "$OUT" >"$OUT/summary_library.txt" 2>&1 <<'EOF'
import json, os, re, sys
out = sys.argv[1]
for f in sorted(os.listdir(out)):
    if f.startswith("lt_enum_") and f.endswith(".json"):
        try:
            j = json.load(open(os.path.join(out, f)))
        except Exception as e:
            print(f"{f}: unreadable ({e})"); continue
        if "error" in j:
            print(f"{f}: error: {j['error']}"); continue
        algos = j.get("algos", [])
        print(f"{f}: {j.get('device')} sm{j.get('sm')} cublasLt {j.get('cublaslt_version')} {j.get('dtype')} N={j.get('N')} K={j.get('K')}: "
              f"{len(j.get('ms', []))} M values, {len(algos)} algo ids, {sum(a.get('checked', 0) for a in algos)} configs checked, "
              f"{len(j.get('configs', []))} listed (valid at some M), {j.get('heuristic_results')} heuristic results, {j.get('seconds', 0):.1f} s")
        seeds = [c for c in j.get("configs", []) if any(r == 0 for _, r in c.get("heuristic", []))]
        for c in seeds[:6]:
            print("   heuristic #1 at M={}: a{} tile {} stages {} splitK {} red {} swz {} custom {} inner {} cluster {}".format(
                ",".join(str(m) for m, r in c["heuristic"] if r == 0), c["algo"], c["tile"], c["stages"], c["splitk"],
                c["reduction"], c["swizzle"], c["custom"], c["inner"], c["cluster"]))
lb = os.path.join(out, "camp", "004_gemm_n128_k2048", "leaderboard.json")
if os.path.exists(lb):
    rows = json.load(open(lb))
    print(f"\nleaderboard 004 ({len(rows)} candidates): rank, passed, geomean us, speedup vs torch.matmul, table rows")
    for r in rows[:12]:
        t = r["knobs"].get("LT_TABLE", "") if isinstance(r["knobs"], dict) else ""
        n = t.count("{")
        print(f"  {r['rank']:>3} {r['passed_workloads']:>3}/{r['workloads']:<3} {r['geomean_us']:>10.3f} {r['speedup']:>6.2f}x  "
              f"{'composed, ' + str(n) + ' rows' if n > 1 else 'single config ' + t[:60]}")
    best = rows[0]
    t = best["knobs"].get("LT_TABLE", "") if isinstance(best["knobs"], dict) else ""
    print("best table:")
    for row in re.findall(r"\{([^}]*)\}", t):
        v = row.split(",")
        hi = "inf" if v[1] == "9223372036854775807" else v[1]
        print(f"  M {v[0]}..{hi}: algo {v[2]} tile {v[3]} stages {v[4]} splitK {v[5]} red {v[6]} swz {v[7]} custom {v[8]} inner {v[9]} cluster {v[10]}")
fj = os.path.join(out, "camp", "004_gemm_n128_k2048", "findings.json")
if os.path.exists(fj):
    fs = json.load(open(fj))
    print(f"\nfindings: {len(fs)}")
    for f in fs[:12]:
        print(f"  {f['kind']} by {f['author']} bucket '{f['bucket']}' median_us {f['claim'].get('median_us')} cites {len(f['cites'])}")
EOF

{
  echo "=== $(sed -n 2p "$OUT/gpu.txt"), $(date -u +%FT%TZ), $(($(date +%s) - START)) s"
  cat "$OUT/notes.txt" 2>/dev/null
  for f in "$OUT"/lt_enum_*.log; do echo "--- $(basename "$f"): $(tail -3 "$f" | tr '\n' ' ')"; done
  echo "--- kernelarc optimize 004 --agents library --budget $BUDGET:"
  tail -6 "$OUT/optimize.txt"
  echo "--- resume (must measure 0):"
  tail -4 "$OUT/resume.txt"
  cat "$OUT/export.txt" 2>/dev/null
  grep -h "library agent" "$OUT/optimize.txt" | head -3
  cat "$OUT/summary_library.txt"
} | tee "$OUT/summary.txt"
cp "$OUT/summary.txt" "$FINAL/library_summary.txt"
tar czf "$FINAL/library_logs.tgz" -C "$FINAL" library 2>/dev/null && rm -rf "$OUT"
