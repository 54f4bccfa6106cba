#!/usr/bin/env bash
# Packs a build made here for a run on a GPU machine that does not build KernelArc itself:
# .dev/bin/kernelarc (stripped; it finds the repo's oracle and headers two folders up) and
# .dev/lib with the non-system shared libraries it links (fmt, spdlog, CUDA runtime, CUPTI), plus
# .data/problems, a copy of ../shared/problems. Both folders are git-ignored: copy them with the checkout
# and run there with LD_LIBRARY_PATH=.dev/lib (bench/lib.sh sets it; bench/README.md).
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x build/src/kernelarc ] || scripts/build.sh
rm -rf .dev/bin .dev/lib && mkdir -p .dev/bin .dev/lib  # other things under .dev (an older build to compare with) stay
strip -o .dev/bin/kernelarc build/src/kernelarc
ldd build/src/kernelarc | awk '/=> \// {print $3}' | grep -E 'libfmt|libspdlog|libcupti|libcudart' | while read -r lib; do
  cp -L "$lib" .dev/lib/
done
if [ -d ../shared/problems ] && [ ! -d .data/problems ]; then
  mkdir -p .data && cp -r ../shared/problems .data/
fi
du -sh .dev .data 2>/dev/null
