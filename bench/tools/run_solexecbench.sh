#!/usr/bin/env bash
# Runs NVIDIA's own SOL-ExecBench evaluator (github.com/NVIDIA/SOL-ExecBench, its `sol-execbench`
# CLI, unmodified) on one problem folder and one solution.json, offline, on the GPU machine.
#
#   bench/tools/run_solexecbench.sh PROBLEM_DIR SOLUTION_JSON TRACES_JSONL
#
# Run from the repo root. Needs, carried as ignored paths:
#   .whl/                     the wheels the GPU image lacks (pydantic and its deps, cupti-python);
#   .data/sol-execbench-src/  upstream's src/sol_execbench package, with its LICENSE.
# The evaluator stages the problem in a temp dir, builds a C++ solution there with
# torch.utils.cpp_extension.load (python build_ext.py), then runs python eval_driver.py, which prints
# one Trace JSON per workload; the CLI writes them to TRACES_JSONL (JSON lines). Target hardware is
# whatever the solution says (LOCAL: -gencode for nvidia-smi's compute capability, e.g. sm_90 on an
# H200); clocks are not locked (no --lock-clocks, SOL_EXECBENCH_CLOCKS_LOCKED unset).
#
# Environment (all optional):
#   SXB_COMPILE_TIMEOUT  seconds for the build phase (--compile-timeout; default 180, upstream's 120)
#   SXB_TIMEOUT          seconds for the eval phase, all workloads together (--timeout; default 300,
#                        as upstream's scripts/run_dataset.py). The whole run is also capped at
#                        both + 60 s (540 s by default, under a 10-minute command limit).
#   SXB_WHEELS           folder of wheels to install            (default .whl)
#   SXB_SITE             pip --target folder                    (default /tmp/site)
#   SXB_VERBOSE=1        pass -v (show compiler / driver stderr) and --keep-staging
#   PYTHON               interpreter                            (default python3)
# Exit code: the CLI's (0 only when every workload is PASSED; 1 for any other status, a build
# failure or a run with no trace), 124 when the outer cap fired, 2 for bad usage.
set -uo pipefail

if [[ $# -ne 3 ]]; then
  sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
fi
problem=$1 solution=$2 traces=$3
[[ -f $problem/definition.json && -f $problem/workload.jsonl ]] || { echo "no definition.json/workload.jsonl in $problem" >&2; exit 2; }
[[ -f $solution ]] || { echo "no such solution: $solution" >&2; exit 2; }

root=$PWD
src=$root/.data/sol-execbench-src
wheels=${SXB_WHEELS:-.whl}
site=${SXB_SITE:-/tmp/site}
compile_timeout=${SXB_COMPILE_TIMEOUT:-180}
eval_timeout=${SXB_TIMEOUT:-300}
py=$(command -v "${PYTHON:-python3}") || { echo "no ${PYTHON:-python3}" >&2; exit 2; }
[[ -f $src/sol_execbench/cli/main.py ]] || { echo "missing $src (carry .data/sol-execbench-src)" >&2; exit 2; }

# 1. The carried wheels, into a private target (reinstalled only when the wheel set changes).
shopt -s nullglob
whls=("$wheels"/*.whl)
shopt -u nullglob
[[ ${#whls[@]} -gt 0 ]] || { echo "no wheels in $wheels (carry .whl)" >&2; exit 2; }
stamp=$(ls -l "${whls[@]}" | md5sum | cut -d' ' -f1)
if [[ ! -f $site/.sxb-stamp || $(cat "$site/.sxb-stamp") != "$stamp" ]]; then
  rm -rf "$site"
  PIP_ROOT_USER_ACTION=ignore PIP_DISABLE_PIP_VERSION_CHECK=1 \
    "$py" -m pip install -q --no-index --no-deps --no-compile --target "$site" "${whls[@]}" || exit 1
  echo "$stamp" >"$site/.sxb-stamp"
fi

# 2. Environment. Both phases run as `python build_ext.py` / `python eval_driver.py` with the staging
# dir as cwd, so `python` must be this interpreter (a wrapper, not a symlink, so that a venv's
# pyvenv.cfg is still found) and every path must be absolute.
exe=$("$py" -c 'import sys; print(sys.executable)')
shim=$(mktemp -d /tmp/sxb-bin.XXXXXX)
trap 'rm -rf "$shim"' EXIT
printf '#!/bin/sh\nexec "%s" "$@"\n' "$exe" >"$shim/python"
chmod +x "$shim/python"
export PATH="$shim:$(dirname "$exe"):$PATH"   # the venv's bin also holds ninja
export PYTHONPATH="$site:$src${PYTHONPATH:+:$PYTHONPATH}"
export PYTHONNOUSERSITE=1
# Safetensors inputs: upstream resolves blob paths against the staging dir, then this root.
export FLASHINFER_TRACE_DIR=$(cd "$problem" && pwd)
unset SOL_EXECBENCH_CLOCKS_LOCKED

args=("$problem" --solution "$solution" --output "$traces"
      --compile-timeout "$compile_timeout" --timeout "$eval_timeout")
[[ ${SXB_VERBOSE:-0} == 1 ]] && args+=(-v --keep-staging)

mkdir -p "$(dirname "$traces")"
rm -f "$traces"
# Upstream's CLI entry point ([project.scripts] sol-execbench = sol_execbench.cli:cli), started in a
# session of its own. Its timeouts kill only its direct child (`python build_ext.py` or
# `python eval_driver.py`), and ninja starts nvcc in new process groups, so whatever of that session
# is still alive when the CLI is done (or past the outer cap) is killed here, found by session id.
"$py" - "$((compile_timeout + eval_timeout + 60))" "${args[@]}" <<'PY'
import os, signal, subprocess, sys, time
limit = int(sys.argv[1])
cmd = [sys.executable, "-c", "from sol_execbench.cli import cli; cli(prog_name='sol-execbench')", *sys.argv[2:]]
p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, start_new_session=True)
try:
    rc = p.wait(timeout=limit)
except subprocess.TimeoutExpired:
    print(f"run_solexecbench: outer timeout after {limit} s", file=sys.stderr)
    rc = 124

def session(sid):
    pids = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                fields = open(f"/proc/{d}/stat").read().rsplit(")", 1)[1].split()
            except (OSError, IndexError):
                continue
            if int(fields[3]) == sid and fields[0] != "Z":  # state ppid pgrp session
                pids.append(int(d))
    return pids

for _ in range(20):
    p.poll()
    left = session(p.pid)
    if not left:
        break
    for pid in left:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    time.sleep(0.2)
sys.exit(rc)
PY
rc=$?
if [[ -s $traces ]]; then
  "$py" - "$traces" <<'PY' >&2
import collections, json, sys
st = collections.Counter(json.loads(l)["evaluation"]["status"] for l in open(sys.argv[1]) if l.strip())
print("run_solexecbench: " + ", ".join(f"{k} {v}" for k, v in sorted(st.items())))
PY
else
  echo "run_solexecbench: no traces written (rc=$rc)" >&2
fi
exit $rc
