#!/usr/bin/env bash
# Judge hand-picked knob points of a kernel family on a problem's workloads with the judge's own
# protocol (`kernelarc eval`, torch reference timed in the same process), on a GPU from the repo
# root after scripts/device-pack.sh (carry .dev and .data). What the family self-tests cannot say:
# how a point compares with the reference under the judge's timing.
#   RUNS="PROBLEM|MRANGE|FAMILY|KNOB=v,KNOB=v ..." (one run per line): each point is generated as
#   the engine generates a candidate (`#define KA_<KNOB> v` lines, then the family's source) and
#   judged on the problem's workloads whose axis M lies in MRANGE: "64" is M <= 64, "17-256" is
#   17 <= M <= 256, "0" all workloads.
#   EVAL_ARGS: extra `kernelarc eval` options (default --no-sol).
# Writes $OUT/point_eval.txt: per run the eval's table, then a summary line per run (geomean of
# reference / candidate over its workloads, slowest and fastest workload).
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
OUT=${OUT:-/tmp/point-eval}
W=${WORK:-/tmp/point-eval-work}
mkdir -p "$OUT" "$W"
: >"$OUT/point_eval.txt"
i=0
while IFS='|' read -r prob mmax fam knobs; do
  [[ -z ${prob// /} ]] && continue
  i=$((i + 1))
  src=$(cd "families/$fam" && ls *.cu | head -1)
  f=$W/run$i.cu
  { for kv in ${knobs//,/ }; do echo "#define KA_${kv%%=*} ${kv#*=}"; done; cat "families/$fam/$src"; } >"$f"
  wl=$(python3 - "$P/$prob/workload.jsonl" "$mmax" <<'EOF'
import json, sys
lo, _, hi = sys.argv[2].rpartition("-")
lo, hi = int(lo or 0), int(hi)
ids = [j["uuid"][:8] for j in map(json.loads, open(sys.argv[1])) if hi == 0 or lo <= j["axes"].get("M", 0) <= hi]
print(",".join(ids))
EOF
)
  echo "== run $i: $prob M in $mmax $fam $knobs" >>"$OUT/point_eval.txt"
  timeout 300 "$K" eval "$P/$prob" -s "$f" --workloads "$wl" --report "$W/run$i.json" ${EVAL_ARGS:---no-sol} \
    >>"$OUT/point_eval.txt" 2>&1
  echo "exit $?" >>"$OUT/point_eval.txt"
  python3 - "$W/run$i.json" "$i" "$prob" "$fam $knobs" >>"$W/summary.txt" 2>&1 <<'EOF'
import json, math, sys
r = json.load(open(sys.argv[1]))
rows = []
for w in r.get("workloads", []):
    t, ref = (w.get("timing") or {}).get("median_us", 0), w.get("reference_us") or 0
    if t > 0 and ref > 0:
        rows.append((ref / t, w.get("axes", {}).get("M"), ref, t, w.get("verdict", "?")))
ok = sum(1 for w in r.get("workloads", []) if w.get("verdict") == "passed")
if rows:
    g = math.exp(sum(math.log(x[0]) for x in rows) / len(rows))
    lo, hi = min(rows), max(rows)
    print(f"run {sys.argv[2]} {sys.argv[3]}: {ok}/{len(r.get('workloads', []))} passed, geomean {g:.3f}x over {len(rows)}, "
          f"min {lo[0]:.2f}x (M={lo[1]}: {lo[2]:.1f} vs {lo[3]:.1f} us), max {hi[0]:.2f}x (M={hi[1]}) -- {sys.argv[4]}")
else:
    print(f"run {sys.argv[2]} {sys.argv[3]}: no timed workloads -- {sys.argv[4]}")
EOF
done <<<"${RUNS:?set RUNS, one PROBLEM|MMAX|FAMILY|KNOBS per line}"
echo "== summary (reference / candidate, judge's protocol)" >>"$OUT/point_eval.txt"
cat "$W/summary.txt" >>"$OUT/point_eval.txt" 2>/dev/null
rm -f "$W/summary.txt"
tail -n "$((i + 1))" "$OUT/point_eval.txt"
