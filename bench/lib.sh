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
# (nvidia-smi's name, driver and clocks), deadline_start SECONDS and left (seconds still left).
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
