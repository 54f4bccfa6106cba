#!/usr/bin/env bash
# GPU check of the generated family graph_cuda (the graph generator's CUDA backend), on a GPU
# machine after scripts/device-pack.sh (carry .dev and .data): per problem, `kernelarc coverage`
# (captured? lowered for cuda?), then a campaign of at most N candidates (default 16) of that family
# alone (`optimize --families` a folder holding only graph_cuda, `--time-compile`: the judge times
# PyTorch eager and torch.compile), then bench/tools/graph_family_summary.py's table: problem,
# workloads passed, best µs, eager µs, compile µs (geomeans over the passed workloads), speedup vs
# eager and vs compile, workloads slower than compile, candidates per GPU-minute.
#
#   bash bench/regress/graph_family.sh [PROBLEM_DIR...]
#
# Default problems: the dev L1, L2 and Quant problems at positions 0, 4, 8, ... of each category in
# name order (under $DEV, default the parent of $P: .data/problems/sol-execbench). Resumable: a
# problem with a line in $OUT/graph_family/status.tsv is skipped, and its row of the table is kept in
# rows.tsv, so the same command in a later call goes on (carry $OUT back with RESUME=DIR, a
# graph_family folder from an earlier archive; its campaign folder may be left out). Each problem
# has its own oracle cache, removed after it; captured graphs are shared
# ($KERNELARC_CACHE/graphs; GRAPHS_TGZ, an archive of graphs captured on another machine, is
# unpacked into it first). Environment: N (candidates per problem),
# PER_PROBLEM_S (default 300: --time-limit of one problem's optimize), DEADLINE (seconds for the
# whole call, default 540: no problem starts with less than PER_PROBLEM_S + 30 left), OPT_ARGS
# (more optimize options), COMPILE_BUDGET (seconds for torch.compile over a problem's workloads,
# default 480: one graph per shape), TARGET=host (checks the script without a GPU; no compile timings).
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
bench_out graph_family
N=${N:-16}
PER_PROBLEM_S=${PER_PROBLEM_S:-300}
COMPILE_BUDGET=${COMPILE_BUDGET:-480}  # torch.compile builds a graph per shape: 16 shapes need more than the oracle's 240 s
deadline_start "${DEADLINE:-540}"
DEV=${DEV:-$(dirname "$P")}
[[ -n ${RESUME:-} && ! -f $OUT/status.tsv ]] && cp -r "$RESUME"/. "$OUT"/
GRAPHS=$KERNELARC_CACHE/graphs  # captured graphs, shared by the problems' caches
mkdir -p "$OUT/logs" "$OUT/families" "$GRAPHS"
rm -f "$OUT/logs/skipped.txt"  # this call's list; an earlier call's came with RESUME
touch "$OUT/status.tsv" "$OUT/rows.tsv"
[[ -n ${GRAPHS_TGZ:-} && -f $GRAPHS_TGZ ]] && tar xzf "$GRAPHS_TGZ" -C "$GRAPHS" --skip-old-files 2>>"$OUT/logs/graphs.err"
FAMILY=graph_${TARGET:-cuda}  # the family of the target: graph_host when the script is checked on a CPU
rm -rf "$OUT/families"/graph_* && cp -r "families/$FAMILY" "$OUT/families/"
if [[ ! -f $OUT/gpu.txt ]]; then
  if [[ ${TARGET:-cuda} == cuda ]]; then gpu_facts "$OUT/gpu.txt"; else echo "no GPU (target host)" >"$OUT/gpu.txt"; fi
fi
[[ ${TARGET:-cuda} == cuda && -f $SOL_CACHE ]] && mkdir -p "$KERNELARC_CACHE" &&
  { tar xzf "$SOL_CACHE" -C "$KERNELARC_CACHE" --skip-old-files oracle-timings 2>>"$OUT/gpu.txt" || true; }

probs=("$@")
((${#probs[@]} == 0)) && mapfile -t probs < <(graph_sample "$DEV")

name_of() { python3 -c "import json,sys;print(json.load(open(sys.argv[1]+'/definition.json'))['name'])" "$1"; }
# status NAME STATUS WALL: the problem is done; its row of the table goes to rows.tsv at once, so
# a later call (RESUME with this folder, even without its campaign) keeps the figures.
status() {
  printf '%s\t%s\t%s\n' "$1" "$2" "$3" >>"$OUT/status.tsv"
  python3 bench/tools/graph_family_summary.py "$OUT/camp" <(printf '%s\t%s\t%s\n' "$1" "$2" "$3") 2>>"$OUT/summary.err" |
    tail -n +2 >>"$OUT/rows.tsv"
}

for pr in "${probs[@]}"; do
  name=$(name_of "$pr") || { echo "$pr: no definition.json" >>"$OUT/logs/skipped.txt"; continue; }
  grep -q "^$name	" "$OUT/status.tsv" && continue
  if (($(left) < PER_PROBLEM_S + 30)); then
    echo "$name: not started, $(left) s left" >>"$OUT/logs/skipped.txt"
    continue
  fi
  timeout -k 10 $(($(left) - 30)) $K coverage "$pr" --json --families "$OUT/families" >"$OUT/logs/$name.coverage.json" \
    2>"$OUT/logs/$name.coverage.err"
  if (($? == 124)); then  # a capture per shape cut at the deadline: the next call goes on from the shapes cached
    echo "$name: capture cut at the deadline" >>"$OUT/logs/skipped.txt"
    continue
  fi
  lowered=$(python3 -c "import json,sys
r=json.load(open(sys.argv[1]))[0]
print('yes' if r['captured'] and r['backends'].get(sys.argv[2],{}).get('lowered') else ('not captured' if not r['captured'] else 'not lowered: '+','.join(r['backends'][sys.argv[2]]['ops_not_lowered'])))" \
    "$OUT/logs/$name.coverage.json" "${TARGET:-cuda}" 2>/dev/null || echo "coverage failed")
  if [[ $lowered != yes ]]; then
    status "$name" "$lowered" 0
    continue
  fi
  t0=$(date +%s)
  cache=$(problem_cache "$name") || continue
  KERNELARC_CACHE=$cache timeout -k 90 $((PER_PROBLEM_S + 120)) $K optimize "$pr" --target ${TARGET:-cuda} --budget "$N" --families "$OUT/families" \
    --out "$OUT/camp" --seed 1 --no-progress --no-sol --time-limit "$PER_PROBLEM_S" \
    $([[ ${TARGET:-cuda} == cuda ]] && echo --time-compile --compile-budget "$COMPILE_BUDGET") ${OPT_ARGS:-} >"$OUT/logs/$name.optimize.txt" 2>&1
  rc=$?
  wall=$(($(date +%s) - t0))
  echo "$name: exit $rc, wall $wall s" >>"$OUT/logs/optimize_exits.txt"
  # A run cut off by its own time limit still counts as done (its candidates are in the store).
  cp "$cache"/logs/runner-*.log "$cache"/logs/oracle-*.log "$OUT/logs/" 2>/dev/null
  rm -rf "$cache"
  ((rc == 0 || rc == 124)) && status "$name" ran "$wall"
done

python3 bench/tools/graph_family_summary.py "$OUT/camp" /dev/null >"$OUT/summary_table.tsv" 2>>"$OUT/summary.err"
cat "$OUT/rows.tsv" >>"$OUT/summary_table.tsv"
{
  echo "=== $FAMILY campaign: $(head -2 "$OUT/gpu.txt" | tail -1), $(date -u +%FT%TZ), N=$N, $(wc -l <"$OUT/status.tsv") problems done"
  [[ -s $OUT/logs/skipped.txt ]] && echo "not started this call: $(wc -l <"$OUT/logs/skipped.txt") (run again to resume)"
  column -t -s $'\t' "$OUT/summary_table.tsv" 2>/dev/null || cat "$OUT/summary_table.tsv"
} | tee "$OUT/summary.txt"
tar czf "$FINAL/graph_family.tgz" -C "$FINAL" graph_family
