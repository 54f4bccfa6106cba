#!/usr/bin/env bash
# Installs what KernelArc needs on Debian/Ubuntu: the C++ toolchain and libraries and headless
# Chromium (the report's render test) from the distribution, PyTorch (the reference oracle) and
# Plotly (the campaign report's charts) from PyPI. Runs as root as it is (a container has no sudo),
# and through sudo otherwise. The CUDA toolkit itself is expected to be installed already (nvcc on
# PATH or in /usr/local/cuda). KERNELARC_PYTHON picks the Python (default python3).
set -euo pipefail
if [ "$(id -u)" -eq 0 ]; then
  as_root=()
elif command -v sudo >/dev/null 2>&1; then
  as_root=(sudo)
else
  echo "install-deps: run this as root, or install sudo" >&2
  exit 2
fi
pkgs=(cmake ninja-build g++ make pkg-config nlohmann-json3-dev libcli11-dev libfmt-dev libspdlog-dev
      libsqlite3-dev libssl-dev libgtest-dev clang libclang-rt-dev python3 python3-pip chromium)
missing=()
for p in "${pkgs[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if [ ${#missing[@]} -gt 0 ]; then
  echo "install-deps: installing ${missing[*]}"
  "${as_root[@]}" apt-get update -qq
  "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# PyPI packages for $PY, pinned: pip_install NAME==VERSION (a distribution's Python refuses pip
# without --break-system-packages; as a user, pip installs into the user's site).
PY=${KERNELARC_PYTHON:-python3}
pip_install() {
  "$PY" -m pip install -q "$1" 2>/dev/null || "$PY" -m pip install -q --break-system-packages "$1"
}
if ! "$PY" -c "import torch" >/dev/null 2>&1; then
  echo "install-deps: installing PyTorch for the oracle"
  pip_install "torch==2.11.0"
fi
# References may call numpy (e.g. `.cpu().numpy()`), as SOL-ExecBench's environment allows.
NUMPY=2.4.6
if [ "$("$PY" -c 'import numpy; print(numpy.__version__)' 2>/dev/null)" != "$NUMPY" ]; then
  echo "install-deps: installing NumPy $NUMPY for the oracle's references"
  pip_install "numpy==$NUMPY"
fi
PLOTLY=7.1.0
if [ "$("$PY" -c 'import plotly; print(plotly.__version__)' 2>/dev/null)" != "$PLOTLY" ]; then
  echo "install-deps: installing Plotly $PLOTLY for the campaign reports"
  pip_install "plotly==$PLOTLY"
fi
echo "install-deps: done"
