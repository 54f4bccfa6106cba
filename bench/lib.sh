# bench/lib.sh — what every GPU script under bench/ starts with; source it, don't run it:
#   source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
# It moves to the repository root (every path in the scripts is relative to it) and sets:
#   ROOT      the repository root;
#   K         the kernelarc binary: .dev/bin/kernelarc (scripts/device-pack.sh) or build/src/kernelarc;
#   P         the FlashInfer-Bench problems: $PROBLEMS, else .data/problems/... (device-pack's copy),
#             else ../shared/problems/...;
#   SOL_CACHE the `kernelarc sol` cache archive (reference timings and work counts), default
#             .data/sol-cache.tgz: git-ignored, carried with .data, rebuilt by bench/tools/sol_cache.sh
#             and bench/regress/sol.sh;
#   LD_LIBRARY_PATH (.dev/lib first) and KERNELARC_CACHE (default /tmp/ka-cache), exported.
# Functions: bench_out SUB (FINAL=$OUT or /tmp/ka-out, OUT=$FINAL/SUB, created), gpu_facts FILE
# (nvidia-smi's name, driver and clocks), deadline_start SECONDS and left (seconds still left),
# knob_args LIST (`--knobs` per point), stage_problem NAME SEL (a workload subset as a problem),
# graph_sample DEV (the graph family's GPU sample) and problem_cache NAME (one problem's oracle cache).
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT" || exit 2
export LD_LIBRARY_PATH=$ROOT/.dev/lib:${LD_LIBRARY_PATH:-}
export KERNELARC_CACHE=${KERNELARC_CACHE:-/tmp/ka-cache}
K=${KERNELARC:-$ROOT/.dev/bin/kernelarc}
[[ -x $K ]] || K=$ROOT/build/src/kernelarc
P=${PROBLEMS:-.data/problems/sol-execbench/FlashInfer-Bench}
[[ -d $P ]] || P=../shared/problems/sol-execbench/FlashInfer-Bench
SOL_CACHE=${SOL_CACHE:-.data/sol-cache.tgz}

bench_out() {  # bench_out SUB: results of this script go under $OUT/SUB, the call's folder is $FINAL
  FINAL=${OUT:-/tmp/ka-out}
  OUT=$FINAL/$1
  mkdir -p "$OUT"
}

gpu_facts() {  # gpu_facts FILE [EXTRA_FIELDS]: the device's name, driver and clocks as found
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem${2:+,$2} --format=csv >"$1" 2>&1
}

deadline_start() {  # deadline_start SECONDS: `left` then says how many of them remain
  START=$(date +%s)
  DEADLINE=$1
}
left() { echo $((DEADLINE - ($(date +%s) - START))); }

knob_args() { for k in $1; do printf -- '--knobs %s ' "$k"; done; }  # "K=v,K=v K=v,..." -> --knobs ...

# stage_problem NAME SEL: problem NAME of $P with only the workloads SEL (0-based lines of
# workload.jsonl, comma-separated, or "all") as a problem folder $STAGE/NAME, its blobs linked.
stage_problem() {  # name, comma list of workload indices or "all"
  local name=$1 sel=$2 dst=$STAGE/$1
  rm -rf "$dst" && mkdir -p "$dst"
  cp "$P/$name/definition.json" "$dst/"
  [[ -f $P/$name/metadata.json ]] && cp "$P/$name/metadata.json" "$dst/"
  ln -s "$(cd "$P/$name/blobs" && pwd)" "$dst/blobs"
  python3 - "$P/$name/workload.jsonl" "$dst/workload.jsonl" "$sel" <<'PY'
import sys
src, dst, sel = sys.argv[1:]
lines = open(src).read().splitlines()
keep = range(len(lines)) if sel == "all" else [int(x) for x in sel.split(",")]
open(dst, "w").write("".join(lines[i] + "\n" for i in keep))
PY
}

# graph_sample DEV: the dev L1, L2 and Quant problems under DEV at positions 0, 4, 8, ... of each
# category in name order (the graph family's GPU sample), one folder per line.
graph_sample() {
  local cat d i
  for cat in L1 L2 Quant; do
    i=0
    for d in $(ls "$1/$cat" 2>/dev/null | sort); do
      ((i % 4 == 0)) && echo "$1/$cat/$d"
      i=$((i + 1))
    done
  done
}

# problem_cache NAME: a fresh oracle cache for one problem (/tmp/kc-NAME, echoed) that shares the
# captured graphs of $KERNELARC_CACHE/graphs; remove it when the problem is done, so that many
# problems' input sets never fill the disk.
problem_cache() {
  local cache=/tmp/kc-$1
  rm -rf "$cache" && mkdir -p "$cache" "$KERNELARC_CACHE/graphs" &&
    ln -s "$(cd "$KERNELARC_CACHE/graphs" && pwd)" "$cache/graphs" && echo "$cache"
}
