"""The torch.compile baseline: the reference compiled the way a user who knows the shapes would
compile it, and timed by the protocol of timing.py.

* One graph per workload shape. `torch.compile(run, dynamic=False)`, one wrapper per shape signature
  (the dtypes, shapes and strides of the tensor inputs and the values of the scalar ones), so each
  workload runs code specialised to its own shapes, as it would for a user compiling for that shape.
  Workloads of the same signature share the wrapper and compile once per process: every job executes
  the reference module afresh, so the wrappers are keyed by the reference's file and function name,
  not by the function object.
* No fallback to eager. torch._dynamo caches graphs per code object and falls back to running the
  frame eagerly once a code object has recompiled `recompile_limit` times (8): with one graph per
  shape, a problem's ninth shape would otherwise be timed eagerly and pass for a compiled time.
  The limits are raised (RECOMPILE_LIMIT) and `fail_on_recompile_limit_hit` is set, so a limit that
  is still hit raises instead of falling back.
* Warmed per workload. The warm-up (timing.py) runs on the workload's own inputs, so its first call
  compiles that workload's shape; the timed calls follow.
* Checked while timed. The timed calls run with `error_on_recompile` set and torch._dynamo's frame
  counters read before and after: a recompile, or any frame compiled during the timed calls, means
  the samples are not those of a warm compiled graph. That timing is dropped (compile_ms null,
  compile_timing {"error", "fallback": true}) and `compile_note` says why.
* Anomalies are named. `compile_note` also records graph breaks met while compiling the workload
  (parts of the reference then run eagerly between graphs) and a compile that produced no graph
  at all (the baseline is then the eager reference). C++ (Oracle, `kernelarc sol`, the judge's
  results) shows the note beside compile_ms.

Compiling and timing share a wall-clock budget per process (--compile-budget); a call that runs past
it is abandoned (SIGALRM), the workload and every later one get compile_timing {"skipped": ...}.
"""

from __future__ import annotations

import contextlib
import os
import signal
import statistics
import time

import torch

from .common import exc_text
from .timing import time_cpu, time_cuda

RECOMPILE_LIMIT = 4096  # graphs per code object: more shapes than any problem has workloads


def backend():
    """torch.compile's backend: inductor, what a user gets by default. KERNELARC_ORACLE_COMPILE_BACKEND
    names another (the tests use "eager": dynamo's graphs, guards and recompiles without inductor's
    C++ compile, which takes seconds per graph on a CPU); compile_timing records it."""
    return os.environ.get("KERNELARC_ORACLE_COMPILE_BACKEND", "").strip() or "inductor"

_STATE = {"wrappers": {}, "budget_s": 240.0, "spent_s": 0.0, "exhausted": None, "configured": False}


class _CompileBudget(BaseException):
    """Raised by the budget's alarm. A BaseException, so that torch's own `except Exception`
    handlers (dynamo falls back to eager on many errors) cannot swallow it and let the compile
    run on past the budget."""


class CompileFallback(Exception):
    """The compiled reference recompiled or fell back to eager during its timed calls."""


def set_budget(seconds):
    _STATE["budget_s"] = seconds


def _on_alarm(signum, frame):
    raise _CompileBudget()


def _configure_dynamo():
    """Raises dynamo's recompile limits and makes hitting one an error (see the module docstring).
    The names changed across torch versions (cache_size_limit before recompile_limit)."""
    if _STATE["configured"]:
        return
    cfg = torch._dynamo.config
    for name in ("recompile_limit", "cache_size_limit"):
        if hasattr(cfg, name):
            setattr(cfg, name, max(getattr(cfg, name), RECOMPILE_LIMIT))
    for name in ("accumulated_recompile_limit", "accumulated_cache_size_limit"):
        if hasattr(cfg, name):
            setattr(cfg, name, max(getattr(cfg, name), 4 * RECOMPILE_LIMIT))
    if hasattr(cfg, "fail_on_recompile_limit_hit"):
        cfg.fail_on_recompile_limit_hit = True
    _STATE["configured"] = True


def _counters():
    """(frames dynamo has tried to compile, graphs it made, graph breaks met), None where unreadable."""
    try:
        from torch._dynamo.utils import counters
        return (sum(counters["frames"].values()), counters["stats"]["unique_graphs"],
                sum(counters["graph_break"].values()))
    except Exception:
        return None


def shape_signature(values):
    """What a dynamic=False graph is specialised on: each tensor input's dtype, shape and strides,
    each scalar input's type and value."""
    sig = []
    for v in values:
        if isinstance(v, torch.Tensor):
            sig.append((str(v.dtype), tuple(v.shape), tuple(v.stride()), v.device.type))
        else:
            sig.append((type(v).__name__, v))
    return tuple(sig)


def _wrapper(run_fn, values):
    code = getattr(run_fn, "__code__", None)
    key = ((code.co_filename, code.co_name) if code is not None else id(run_fn), shape_signature(values))
    compiled = _STATE["wrappers"].get(key)
    if compiled is None:
        compiled = torch.compile(run_fn, dynamic=False, backend=backend())
        _STATE["wrappers"][key] = compiled
    return compiled


@contextlib.contextmanager
def _no_compiling_while_timed():
    """Around the timed calls: a recompile raises (error_on_recompile), and a frame compiled for the
    first time (counters moved) is caught after the calls."""
    before = _counters()
    try:
        with torch._dynamo.config.patch(error_on_recompile=True):
            yield
    except Exception as e:
        if type(e).__name__ in ("RecompileError", "FailOnRecompileLimitHit"):
            raise CompileFallback(f"torch._dynamo recompiled during the timed calls: {exc_text(e)[:300]}")
        raise
    after = _counters()
    if before is not None and after is not None and after[:2] != before[:2]:
        raise CompileFallback(f"torch._dynamo compiled {after[0] - before[0]} frame(s) during the timed calls")


def _anomalies(before, after):
    """compile_note's findings from the counters around one workload's compiled timing."""
    if before is None or after is None:
        return []
    out = []
    if after[2] > before[2]:
        out.append(f"{after[2] - before[2]} graph break(s) while compiling this workload: parts of the reference "
                   "run eagerly between compiled graphs")
    if after[1] == 0:
        out.append("torch.compile produced no graph: this baseline is the eager reference")
    return out


def time_compiled(run_fn, values, device, notes):
    """(compile_ms or None, compile_timing, compile_note or None) for one workload."""
    st = _STATE
    if st["exhausted"]:
        notes.append(f"torch.compile not timed: {st['exhausted']}")
        return None, {"skipped": st["exhausted"]}, None
    _configure_dynamo()
    left = st["budget_s"] - st["spent_s"]
    t0 = time.monotonic()
    old = signal.signal(signal.SIGALRM, _on_alarm)
    signal.setitimer(signal.ITIMER_REAL, max(left, 0.001))
    before = _counters()
    try:
        compiled = _wrapper(run_fn, values)
        timer = time_cuda if device.type == "cuda" else time_cpu
        args = (compiled, values, device) if device.type == "cuda" else (compiled, values)
        samples, info = timer(*args, compiled=True, guard=_no_compiling_while_timed)
        signal.setitimer(signal.ITIMER_REAL, 0)
        timing = {"method": info.pop("method"), "samples_ms": samples, "mode": "default", "backend": backend(),
                  "dynamic": False, "wall_s": time.monotonic() - t0}
        timing.update(info)
        found = _anomalies(before, _counters())
        return statistics.median(samples), timing, "; ".join(found) or None
    except _CompileBudget:
        st["exhausted"] = f"the compile budget of {st['budget_s']:g} s per oracle run was used up"
        notes.append(f"torch.compile not timed: {st['exhausted']}")
        try:
            torch._dynamo.reset()
            st["wrappers"].clear()
        except Exception:
            pass
        return None, {"skipped": st["exhausted"]}, None
    except CompileFallback as e:
        notes.append(f"torch.compile timing dropped: {e}")
        return None, {"error": str(e), "fallback": True}, f"not timed: {e}"
    except Exception as e:
        notes.append(f"torch.compile of the reference failed: {exc_text(e)[:300]}")
        return None, {"error": exc_text(e)[:2000]}, f"compile failed: {exc_text(e)[:300]}"
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
        st["spent_s"] += time.monotonic() - t0
        if device.type == "cuda":
            try:
                torch.cuda.synchronize(device)
            except Exception:
                pass
