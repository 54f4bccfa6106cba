#!/usr/bin/env bash
# bench/tools/graph_capture_pack.sh — captures problems' references as operator graphs here (no GPU:
# capture runs the references on the CPU or the meta device) and packs the captured graphs into an
# archive that a GPU run unpacks first (graph_check.sh and graph_family.sh take it as GRAPHS_TGZ),
# so the GPU machine's time goes to judging, not capturing. A capture depends on the definition
# and the capture code, not on the device.
#
#   bench/tools/graph_capture_pack.sh [PROBLEM_OR_FOLDER...]
#       default: the sample of bench/regress/graph_family.sh (dev L1, L2, Quant at positions 0, 4, 8, ...)
#   env: KA (kernelarc binary, default build/src/kernelarc), CACHE (default /tmp/ka-capture-cache),
#        ARCHIVE (default .data/graphs.tgz), TIMEOUT (seconds per problem, default 900)
# Prints one line per problem (captured or why not, seconds).
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
KA=${KA:-build/src/kernelarc}
CACHE=${CACHE:-/tmp/ka-capture-cache}
ARCHIVE=${ARCHIVE:-.data/graphs.tgz}
TIMEOUT=${TIMEOUT:-900}
DEV=../shared/problems/sol-execbench
probs=("$@")
((${#probs[@]} == 0)) && mapfile -t probs < <(graph_sample "$DEV")
mkdir -p "$CACHE" "$(dirname "$ARCHIVE")"
for pr in "${probs[@]}"; do
  t0=$(date +%s)
  line=$(KERNELARC_CACHE=$CACHE timeout "$TIMEOUT" "$KA" coverage "$pr" --json 2>/dev/null | python3 -c "
import json, sys
for r in json.load(sys.stdin):
    print(r['name'], 'captured' if r['captured'] else 'not captured: ' + (r['reason'] or '')[:120])" 2>/dev/null) ||
    line="$(basename "$pr") capture failed or timed out"
  echo "$line ($(($(date +%s) - t0)) s)"
done
tar czf "$ARCHIVE" -C "$CACHE/graphs" --exclude='tmp-*' . && echo "graphs: $ARCHIVE ($(du -h "$ARCHIVE" | cut -f1))"
