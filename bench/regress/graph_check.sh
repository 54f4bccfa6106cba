#!/usr/bin/env bash
# Correctness sweep of the generated family graph_cuda on a GPU, without timing: per problem,
# `kernelarc coverage --emit` (captured? lowered? the family's default candidate), then
# `kernelarc eval --no-time` of that candidate on every workload. It answers "does the generator's
# code pass?" for many problems in one call, where bench/regress/graph_family.sh (campaigns, with
# eager and torch.compile timed per workload) covers a few; run it first, then time what passed.
#
#   bash bench/regress/graph_check.sh [PROBLEM_DIR...]
#
# Default problems: the dev L1, L2 and Quant problems at positions 0, 4, 8, ... of each category in
# name order (graph_family.sh's sample). JOBS problems are checked at once (default 3; no timing
# is taken, so they may share the GPU). Each problem gets its own oracle cache, removed when it is
# done, so the inputs of many workloads never fill the disk; captured graphs are shared
# ($KERNELARC_CACHE/graphs; GRAPHS_TGZ, an archive of captured graphs made on
# another machine, is unpacked into it first: a capture depends on the definition, not the device).
# Resumable: a problem with a line in $OUT/graph_check/check.tsv is skipped (RESUME=DIR copies an
# earlier graph_check folder in first); one cut by the call's deadline gets no line, so the next
# call takes it again. DEADLINE (seconds, default 540): no problem starts with
# less than MIN_LEFT (default 150) left. TARGET=host checks the script on a CPU (family graph_host). Writes check.tsv (problem, PASS | FAIL | NOT_CAPTURED |
# NOT_LOWERED | ERROR, passed/total workloads, seconds, first failing verdict) and logs/.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
bench_out graph_check
JOBS=${JOBS:-3}
MIN_LEFT=${MIN_LEFT:-150}
deadline_start "${DEADLINE:-540}"
DEV=${DEV:-$(dirname "$P")}
GRAPHS=$KERNELARC_CACHE/graphs
[[ -n ${RESUME:-} && ! -f $OUT/check.tsv ]] && cp -r "$RESUME"/. "$OUT"/
mkdir -p "$OUT/logs" "$OUT/families" "$OUT/cands" "$GRAPHS"
rm -f "$OUT/logs/skipped.txt"  # this call's list; an earlier call's came with RESUME
touch "$OUT/check.tsv"
TARGET=${TARGET:-cuda}  # host: the script checked on a CPU, with the host family
rm -rf "$OUT/families"/graph_* && cp -r "families/graph_$TARGET" "$OUT/families/"
if [[ ! -f $OUT/gpu.txt ]]; then
  if [[ $TARGET == cuda ]]; then gpu_facts "$OUT/gpu.txt"; else printf 'device\nno GPU (target host)\n' >"$OUT/gpu.txt"; fi
fi
[[ -n ${GRAPHS_TGZ:-} && -f $GRAPHS_TGZ ]] && tar xzf "$GRAPHS_TGZ" -C "$GRAPHS" --skip-old-files 2>>"$OUT/logs/graphs.err"

probs=("$@")
((${#probs[@]} == 0)) && mapfile -t probs < <(graph_sample "$DEV")

# check_one DIR: one problem, its line appended to check.tsv (one write, so parallel jobs don't mix).
check_one() {
  local pr=$1 name t0 cache cov lowered rc verdict
  name=$(python3 -c "import json,sys;print(json.load(open(sys.argv[1]+'/definition.json'))['name'])" "$pr") || return
  grep -q "^$name	" "$OUT/check.tsv" && return
  if (($(left) < MIN_LEFT)); then echo "$name: not started, $(left) s left" >>"$OUT/logs/skipped.txt"; return; fi
  t0=$(date +%s)
  cache=$(problem_cache "$name") || return
  cov=$OUT/logs/$name.coverage.json
  # A capture per shape can take minutes a shape: cut at the deadline, and the next call goes on
  # from the shapes captured so far (they are cached one by one in $GRAPHS).
  KERNELARC_CACHE=$cache timeout -k 10 $(($(left) > 60 ? $(left) - 30 : 30)) $K coverage "$pr" --json --families "$OUT/families" \
    --emit "$OUT/cands" >"$cov" 2>"$OUT/logs/$name.coverage.err"
  if (($? == 124)); then
    echo "$name: capture cut at the deadline (run again to resume)" >>"$OUT/logs/skipped.txt"
    rm -rf "$cache"
    return
  fi
  lowered=$(python3 -c "import json,sys
r=json.load(open(sys.argv[1]))[0]
b=r['backends'].get(sys.argv[2],{})
print('yes' if r['captured'] and b.get('lowered') else ('NOT_CAPTURED\t-' if not r['captured'] else 'NOT_LOWERED\t'+','.join(b.get('ops_not_lowered',[]))))" "$cov" "$TARGET" 2>/dev/null ||
    echo "ERROR	coverage failed")
  if [[ $lowered != yes ]]; then
    printf '%s\t%s\t-\t%s\n' "$name" "${lowered%%	*}" "$(($(date +%s) - t0))	${lowered#*	}" >>"$OUT/check.tsv"
    rm -rf "$cache"
    return
  fi
  KERNELARC_CACHE=$cache timeout -k 30 $(($(left) > 60 ? $(left) - 20 : 40)) $K eval "$pr" -s "$OUT/cands/$name.graph_$TARGET.json" \
    --no-time --no-sol --timeout 120 --report "$OUT/logs/$name.eval.json" >"$OUT/logs/$name.eval.txt" 2>&1
  rc=$?
  verdict=$(python3 - "$OUT/logs/$name.eval.json" "$rc" <<'PY'
import json, sys
path, rc = sys.argv[1], int(sys.argv[2])
try:
    ws = json.load(open(path))["workloads"]
except Exception:
    print(f"{'TIMEOUT' if rc == 124 else 'ERROR'}\t-\teval exit {rc}, no report"); sys.exit()
ok = sum(1 for w in ws if w.get("verdict") == "passed")
bad = next((w for w in ws if w.get("verdict") != "passed"), None)
why = "-" if bad is None else f"{bad.get('verdict')}: {str(bad.get('message') or bad.get('detail') or '')[:160]}"
print(f"{'PASS' if ok == len(ws) and ws else 'FAIL'}\t{ok}/{len(ws)}\t{why}")
PY
)
  IFS=$'\t' read -r st frac why <<<"$verdict"
  if [[ $st == TIMEOUT ]]; then  # cut by the call's deadline: not a verdict, the next call judges it again
    echo "$name: judging cut at the deadline (run again to resume)" >>"$OUT/logs/skipped.txt"
    rm -rf "$cache"
    return
  fi
  printf '%s\t%s\t%s\t%s\t%s\n' "$name" "$st" "$frac" "$(($(date +%s) - t0))" "${why//	/ }" >>"$OUT/check.tsv"
  cp "$cache"/logs/runner-*.log "$cache"/logs/oracle-*.log "$OUT/logs/" 2>/dev/null
  rm -rf "$cache"
}
export -f check_one left problem_cache
export OUT K START DEADLINE MIN_LEFT GRAPHS TARGET KERNELARC_CACHE

printf '%s\n' "${probs[@]}" | xargs -r -d '\n' -P "$JOBS" -I{} bash -c 'check_one "$1"' _ {}
{
  echo "=== graph_$TARGET default candidate, every workload, no timing: $(sed -n 2p "$OUT/gpu.txt"), $(date -u +%FT%TZ)"
  [[ -s $OUT/logs/skipped.txt ]] && echo "not finished this call: $(wc -l <"$OUT/logs/skipped.txt") (run again to resume)"
  cut -f2 "$OUT/check.tsv" | sort | uniq -c
  column -t -s $'\t' "$OUT/check.tsv"
} | tee "$OUT/summary.txt"
tar czf "$FINAL/graph_check.tgz" -C "$FINAL" --exclude=graph_check/cands graph_check
