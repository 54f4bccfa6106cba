#!/usr/bin/env bash
# Installs what KernelArc needs on Debian/Ubuntu (run as root or with sudo): the C++ toolchain and
# libraries from the distribution, and PyTorch from PyPI for the reference oracle. The CUDA
# toolkit itself is expected to be installed already (nvcc on PATH or in /usr/local/cuda).
set -euo pipefail
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
pkgs=(cmake ninja-build g++ make pkg-config nlohmann-json3-dev libcli11-dev libfmt-dev libspdlog-dev
      libsqlite3-dev libssl-dev libgtest-dev clang libclang-rt-dev python3 python3-pip)
missing=()
for p in "${pkgs[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if [ ${#missing[@]} -gt 0 ]; then
  echo "install-deps: installing ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi
PY=${KERNELARC_PYTHON:-python3}
if ! "$PY" -c "import torch" >/dev/null 2>&1; then
  echo "install-deps: installing PyTorch for the oracle"
  "$PY" -m pip install -q "torch==2.11.0" || "$PY" -m pip install -q --break-system-packages "torch==2.11.0"
fi
echo "install-deps: done"
