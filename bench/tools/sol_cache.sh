#!/usr/bin/env bash
# Builds the `kernelarc sol` cache archive the GPU scripts start from (SOL_CACHE, default
# .data/sol-cache.tgz, git-ignored; see bench/lib.sh), in two halves:
#   - here, on this machine's CPU: the work counts (`kernelarc sol --count-only --device cpu`) of the
#     dev FlashInfer-Bench problems in PROBS (default: all of them), added to the archive. Counts do
#     not depend on the device (the cache key leaves it out), and a reference that loops in Python
#     over ~10^6 small ops (014) is best counted here once: on an H200 machine eight count processes
#     did not finish 014 in 288 s;
#   - on the GPU: `bash bench/regress/sol.sh` (carry .dev and .data) times the references and
#     returns $OUT/sol_cache.tgz; copy it to .data/sol-cache.tgz. Reference timings are kept per GPU
#     name; campaigns on a GPU of that name borrow them instead of timing the references again.
# Usage: [PROBS="<problem folder names>"] bash bench/tools/sol_cache.sh (K: the kernelarc binary,
# default build/src/kernelarc). A problem whose count fails here (an op with no CPU kernel; 020's fp8
# experts need ~12 GB per count process and were killed for memory on a 24 GB machine) prints its
# error and is counted on the GPU machine instead.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
K=${KERNELARC:-build/src/kernelarc}
C=$(mktemp -d)
trap 'rm -rf "$C"' EXIT
mkdir -p "$(dirname "$SOL_CACHE")"
[[ -f $SOL_CACHE ]] && tar xzf "$SOL_CACHE" -C "$C"
for n in ${PROBS:-$(ls "$P")}; do
  KERNELARC_CACHE=$C "$K" sol "$P/$n" --count-only --device cpu || echo "$n: count failed here" >&2
done
(cd "$C" && tar czf - $(ls -d oracle-timings bounds 2>/dev/null)) >"$SOL_CACHE.new" && mv "$SOL_CACHE.new" "$SOL_CACHE"
echo "bounds in $SOL_CACHE: $(tar tzf "$SOL_CACHE" | grep -c '^bounds/.')"
