#!/usr/bin/env bash
# Debug aid for the attention families on the GPU: runs single self-test cases
# (bench/tools/attention_selftest.py --only CASE) built with -lineinfo, first plainly with
# CUDA_LAUNCH_BLOCKING=1, then under compute-sanitizer (memcheck), so that a fault names its kernel
# and source line. Usage (repo root, on the GPU machine):
#   CASES="gqa:WARPS=4,TILE=64,...:one_seq_7 mla:...:mixed_small" bash bench/tools/attention_debug.sh
# Each entry is FAMILY:KNOBS:CASE. Output: $OUT/attn_debug.txt (the last lines of each run).
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
FINAL=${OUT:-/tmp/ka-out}
mkdir -p "$FINAL"
SAN=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
export KA_NVCC_EXTRA=-lineinfo
for c in ${CASES:?set CASES}; do
  IFS=: read -r fam knobs case <<<"$c"
  {
    echo "=== $fam $knobs $case (CUDA_LAUNCH_BLOCKING=1)"
    CUDA_LAUNCH_BLOCKING=1 timeout 120 python3 bench/tools/attention_selftest.py --mode cuda --family "$fam" --knobs "$knobs" \
      --cases synthetic --only "$case" --workdir /tmp/ka-attn-debug 2>&1 | grep -v "^Search for\|^CUDA kernel errors\|^For debugging\|^Compile with" | tail -15
    if [[ ${SANITIZE:-1} == 1 ]]; then
      echo "=== $fam $knobs $case (compute-sanitizer)"
      timeout ${SAN_TIMEOUT:-150} "$SAN" --tool memcheck --print-limit 4 --show-backtrace device \
        python3 bench/tools/attention_selftest.py --mode cuda --family "$fam" --knobs "$knobs" --cases synthetic --only "$case" \
        --workdir /tmp/ka-attn-debug 2>&1 | grep -v "^Search for\|^CUDA kernel errors\|^For debugging\|^Compile with" | head -60
    fi
  } >>"$FINAL/attn_debug.txt" 2>&1
done
cat "$FINAL/attn_debug.txt"
