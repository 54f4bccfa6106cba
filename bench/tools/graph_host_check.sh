#!/usr/bin/env bash
# bench/tools/graph_host_check.sh — judges the graph family's host candidate of every captured and
# lowered problem on its smallest workload (CPU only) and prints pass counts.
#
#   bench/tools/graph_host_check.sh [PROBLEM_OR_FOLDER...]
#       default: ../shared/problems/sol-execbench/{L1,L2,Quant}
#   env: KA (the kernelarc binary, default build/src/kernelarc), OUT (results folder, default
#        /tmp/ka-graph-host-check; a re-run skips the problems that passed there and judges the
#        others again), TIMEOUT (seconds per judge call, default 900), JOBS (problems judged at
#        once, default 1), JUDGE=0 (judge nothing: coverage, then the counts of what OUT holds)
#
# Each problem is judged as a folder of its smallest workload alone (OUT/stage/<problem>), so a
# reference captured per shape (docs/graph-format.md) is captured at that one shape. Writes
# OUT/coverage.json (kernelarc coverage --json of the staged folders), OUT/cands/<problem>.graph_host.json (the
# generated candidates), OUT/logs/<problem>.txt (judge output) and OUT/results.tsv
# (problem, status: PASS | FAIL | NOT_CAPTURED | NOT_LOWERED, detail).
set -u
cd "$(dirname "$0")/../.."
KA=${KA:-build/src/kernelarc}
OUT=${OUT:-/tmp/ka-graph-host-check}
TIMEOUT=${TIMEOUT:-900}
JOBS=${JOBS:-1}
if [ $# -eq 0 ]; then
  set -- ../shared/problems/sol-execbench/L1 ../shared/problems/sol-execbench/L2 ../shared/problems/sol-execbench/Quant
fi
mkdir -p "$OUT/cands" "$OUT/logs" "$OUT/done" "$OUT/stage"

# Each problem as a one-workload problem folder (its smallest workload) under OUT/stage, so that a
# reference captured per shape is captured at that shape alone; plan.tsv: name, staged folder, uuid.
python3 - "$OUT/stage" "$@" > "$OUT/plan.tsv" <<'PY' || { echo "graph_host_check: cannot stage the problems (above)" >&2; exit 2; }
import json, math, os, shutil, sys
stage, roots = sys.argv[1], sys.argv[2:]
dirs = []
for root in roots:
    if os.path.isfile(os.path.join(root, "definition.json")):
        dirs.append(root)
    else:
        for d in sorted(os.listdir(root)):
            if os.path.isfile(os.path.join(root, d, "definition.json")):
                dirs.append(os.path.join(root, d))
for d in dirs:
    name = json.load(open(os.path.join(d, "definition.json")))["name"]
    lines = [l for l in open(os.path.join(d, "workload.jsonl")) if l.strip()]
    size = lambda l: math.prod(v for v in json.loads(l).get("axes", {}).values() if isinstance(v, int))
    smallest = min(lines, key=size) if lines else ""
    dst = os.path.join(stage, os.path.basename(d.rstrip("/")))
    if not os.path.isdir(dst):
        os.makedirs(dst + ".tmp", exist_ok=True)
        for f in ("definition.json", "metadata.json"):
            if os.path.isfile(os.path.join(d, f)):
                shutil.copy(os.path.join(d, f), dst + ".tmp")
        if os.path.isdir(os.path.join(d, "blobs")):  # hard links where the file system allows (blobs are large)
            shutil.copytree(os.path.join(d, "blobs"), os.path.join(dst + ".tmp", "blobs"),
                            copy_function=lambda a, b: os.link(a, b) if os.stat(a).st_dev == os.stat(os.path.dirname(b)).st_dev else shutil.copy2(a, b))
        open(os.path.join(dst + ".tmp", "workload.jsonl"), "w").write(smallest)
        os.rename(dst + ".tmp", dst)
    print("\t".join([name, dst, json.loads(smallest)["uuid"] if smallest else ""]))
PY
cut -f2 "$OUT/plan.tsv" | tr '\n' '\0' | xargs -0 "$KA" coverage --json --emit "$OUT/cands" > "$OUT/coverage.json" ||
  { echo "coverage failed" >&2; exit 2; }
python3 - "$OUT/coverage.json" "$OUT/plan.tsv" > "$OUT/plan2.tsv" <<'PY'
import json, sys
cov = {r["name"]: r for r in json.load(open(sys.argv[1]))}
for line in open(sys.argv[2]):
    name, d, uuid = line.rstrip("\n").split("\t")
    r = cov.get(name, {"captured": False, "reason": "not in coverage", "ops_not_lowered": []})
    if not r["captured"]:
        status, detail = "NOT_CAPTURED", r["reason"]
    elif r["ops_not_lowered"]:
        status, detail = "NOT_LOWERED", ",".join(r["ops_not_lowered"])
    else:
        status, detail = "JUDGE", ""
    print("\t".join([name, d, uuid, status, " ".join(detail.split())[:300]]))
PY
mv "$OUT/plan2.tsv" "$OUT/plan.tsv"

judge() {
  local name=$1 dir=$2 uuid=$3
  local cand="$OUT/cands/$name.graph_host.json"
  if [ ! -f "$cand" ]; then printf '%s\tFAIL\tno candidate emitted\n' "$name" > "$OUT/done/$name"; return; fi
  timeout "$TIMEOUT" "$KA" eval "$dir" --solution "$cand" --target host --workloads "$uuid" --timeout "$TIMEOUT" --no-time \
    --no-reference-time --no-sol > "$OUT/logs/$name.txt" 2>&1
  local rc=$?
  if [ $rc -eq 0 ]; then printf '%s\tPASS\t\n' "$name" > "$OUT/done/$name"
  else printf '%s\tFAIL\trc %s: %s\n' "$name" "$rc" "$(tail -3 "$OUT/logs/$name.txt" | tr '\t\n' '  ' | cut -c1-300)" > "$OUT/done/$name"; fi
}
export -f judge
export KA OUT TIMEOUT

while IFS=$'\t' read -r name dir uuid status detail; do
  [ "${JUDGE:-1}" = 0 ] && [ "$status" = JUDGE ] && continue
  if [ "$status" != JUDGE ]; then printf '%s\t%s\t%s\n' "$name" "$status" "$detail" > "$OUT/done/$name"; continue; fi
  [ -f "$OUT/done/$name" ] && grep -q $'\tPASS\t' "$OUT/done/$name" && continue
  printf '%s\0%s\0%s\0' "$name" "$dir" "$uuid"
done < "$OUT/plan.tsv" | xargs -0 -r -n 3 -P "$JOBS" bash -c 'judge "$@"' _

: > "$OUT/results.tsv"
while IFS=$'\t' read -r name _ _ status _; do  # a judged problem's verdict, from this run or one before
  if [ "$status" != JUDGE ] || grep -qE $'\t(PASS|FAIL)\t' "$OUT/done/$name" 2>/dev/null; then cat "$OUT/done/$name"
  else printf '%s\tNOT_JUDGED\t\n' "$name"; fi >> "$OUT/results.tsv"
done < "$OUT/plan.tsv"
total=$(wc -l < "$OUT/plan.tsv")
for s in PASS FAIL NOT_JUDGED NOT_CAPTURED NOT_LOWERED; do
  printf '%-13s %d\n' "$s" "$(cut -f2 "$OUT/results.tsv" | grep -cx "$s")"
done
printf '%-13s %d\n' total "$total"
