#!/usr/bin/env bash
# bench/tools/device_selftest.sh — the device layer's primitives (include/kernelarc/device/) checked on
# a GPU: builds tests/device/primitives_check.cu with nvcc for the GPU at hand (the judge's flags)
# and runs it; the same checks run under the CPU emulator in CI (tests/test_device.cpp). Prints
# one line per check and "N checks, M failed"; exits non-zero on a failure.
#   bench/tools/device_selftest.sh [ARCH]      # ARCH: 90a (default), 100a, ...
set -euo pipefail
cd "$(dirname "$0")/../.."
arch="${1:-90a}"
out="${TMPDIR:-/tmp}/ka_device_selftest_$arch"
nvcc -std=c++17 -O3 "-gencode=arch=compute_$arch,code=sm_$arch" --expt-relaxed-constexpr \
  -D__CUDA_NO_HALF_OPERATORS__ -D__CUDA_NO_HALF_CONVERSIONS__ -D__CUDA_NO_BFLOAT16_CONVERSIONS__ \
  -D__CUDA_NO_HALF2_OPERATORS__ -Iinclude -x cu tests/device/primitives_check.cu -o "$out"
"$out"
