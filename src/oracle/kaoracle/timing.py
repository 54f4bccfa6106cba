"""Timing a reference (eager or compiled) by SOL-ExecBench's protocol (sol-execbench-rules §5.3,
§5.4): warm-up calls, then timed calls on fresh clones of the inputs after a cache flush; on the CPU
by wall clock, on CUDA by each call's GPU span in a torch.profiler trace (CUDA events for slow
calls, or when the profiler fails).

Slow references. Upstream always runs 10 warm-up and 50 timed calls. Here a call that takes longer
than the time budgets allow (references with Python loops over sequences and heads run for 50-500
ms and launch 10^4-10^5 kernels per call) gets fewer: warm-up stops after WARMUP_BUDGET_S seconds of
warm calls (at least 2 calls, or 1 that took TIMED_BUDGET_S), timed calls are cut to fit
TIMED_BUDGET_S (at least MIN_TIMED_RUNS; one call at LONG_CALL_S and above, where a call is seconds
of ~10^5-10^6 launches and its spread is far below what a score can resolve), and calls slower than
SLOW_CALL_MS are timed with CUDA events rather than a profiler trace (a trace of 10^6 kernels takes
minutes to write and parse). The counts and the method used are recorded in the timing ("warmup",
"iterations", "method").
Calls of LONG_CALL_S and more are not repeated just to warm up: the eager reference's output call
is the warm-up of its timing, and it is the timed call itself when the process had already run the
reference on an earlier workload ("warmup" 0, "iterations" 1 and a method that says so). A compiled
call of LONG_CALL_S or more that compiled nothing (torch._dynamo's frame counters unchanged) is
likewise its own warm-up and the timed call.

`guard`, where given, is a context manager entered around the timed calls only (after the
warm-up): compile_baseline.py uses it to catch a compiled reference that recompiles or falls back
while it is being timed.
"""

from __future__ import annotations

import bisect
import contextlib
import json
import os
import re
import shutil
import statistics
import tempfile
import time

import torch

from .common import exc_text, warn

WARMUP_RUNS = 10
TIMED_RUNS = 50
# Slow references (see "Slow references" above): budgets for the warm-up and the timed calls, the
# fewest timed calls, and the per-call time above which CUDA events replace the profiler trace.
WARMUP_BUDGET_S = 0.5
TIMED_BUDGET_S = 2.0
MIN_TIMED_RUNS = 3
LONG_CALL_S = 1.0
SLOW_CALL_MS = 5.0

# Sizes (bytes) of the two host-to-device copies that bracket each timed call in the profiler
# trace. They are odd primes so that they are unlikely to collide with the reference's copies.
_MARK_BEFORE_BYTES = 12347
_MARK_AFTER_BYTES = 12373


def clone_args(values):
    return [v.clone() if isinstance(v, torch.Tensor) else v for v in values]


def _llc_bytes():
    best_level, best_size = -1, 0
    base = "/sys/devices/system/cpu/cpu0/cache"
    try:
        entries = sorted(os.listdir(base))
    except OSError:
        entries = []
    for e in entries:
        if not e.startswith("index"):
            continue
        try:
            with open(os.path.join(base, e, "level")) as f:
                level = int(f.read().strip())
            with open(os.path.join(base, e, "size")) as f:
                s = f.read().strip()
        except (OSError, ValueError):
            continue
        m = re.fullmatch(r"(\d+)\s*([KMG]?)", s, re.IGNORECASE)
        if not m:
            continue
        size = int(m.group(1)) * {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}[m.group(2).upper()]
        if level > best_level or (level == best_level and size > best_size):
            best_level, best_size = level, size
    return best_size if best_size > 0 else 32 << 20


def warm_up(call, counts_first=None):
    """Runs `call` (one reference call, synchronised; it returns the call's device time in ms)
    WARMUP_RUNS times, or fewer once the warm calls (every call after the first, which may compile
    or autotune) have used WARMUP_BUDGET_S; at least 2 calls, unless the first alone took
    TIMED_BUDGET_S without compiling. counts_first (compiled references only) says whether the first
    call compiled nothing: one that did compile is never taken for a warm call, however long (its
    time is the compiler's). A first call of LONG_CALL_S or more that compiled nothing is the
    timed call itself (see "Slow references"). Returns (warm-up calls made, wall seconds of one warm
    call: the median, the first call's ms when it counts as the timed call, else None)."""
    walls = []
    for i in range(WARMUP_RUNS):
        t0 = time.perf_counter()
        ms = call()
        walls.append(time.perf_counter() - t0)
        first_compiled = i == 0 and counts_first is not None and not counts_first()
        if i == 0 and walls[0] >= LONG_CALL_S and counts_first is not None and not first_compiled:
            return 0, walls[0], ms
        if i >= 1 and sum(walls[1:]) >= WARMUP_BUDGET_S:
            break
        if i == 0 and walls[0] >= TIMED_BUDGET_S and not first_compiled:  # seconds per call: no set-up cost matters
            break
    warm = walls[1:] or walls
    return len(walls), statistics.median(warm), None


def timed_runs(call_s):
    """Timed calls for a reference whose warm call takes call_s seconds: TIMED_RUNS, or as many
    as fit TIMED_BUDGET_S, at least MIN_TIMED_RUNS; one at LONG_CALL_S and above."""
    if call_s <= 0 or call_s * TIMED_RUNS <= TIMED_BUDGET_S:
        return TIMED_RUNS
    if call_s >= LONG_CALL_S:
        return 1
    return max(MIN_TIMED_RUNS, min(TIMED_RUNS, int(TIMED_BUDGET_S / call_s)))


def _dynamo_frames():
    """torch._dynamo's count of frames it has tried to compile (None where it cannot be read)."""
    try:
        from torch._dynamo.utils import counters
        return sum(counters["frames"].values())
    except Exception:
        return None


def _warm(call, prior, compiled, clock, info):
    """The warm-up of one timing (see "Slow references"). prior: (wall s, ms, counts) of the call
    just made on the same inputs (the reference's output call; counts: the process had run the
    reference before it), or None; compiled: `call` runs a torch.compile wrapper. Returns
    (samples, wall seconds of one call): samples is [ms] when a long call counted as the timed
    call, with info saying so, else None after the warm-up (info["warmup"] set)."""
    if prior is not None and prior[0] >= LONG_CALL_S:
        wall_s, ms, counts = prior
        if counts:
            info.update({"warmup": 0, "iterations": 1, "method": f"{clock} (the output call counted: "
                         f"{wall_s:.1f} s per call, the reference ran before in this process)"})
            return [ms], wall_s
        info["warmup"] = 0  # the output call was the warm-up
        return None, wall_s
    counts_first = None
    if compiled:
        before = _dynamo_frames()
        counts_first = lambda: before is not None and _dynamo_frames() == before
    warmup, call_s, first_ms = warm_up(call, counts_first)
    if first_ms is not None:
        info.update({"warmup": 0, "iterations": 1, "method": f"{clock} (the first call counted: "
                     f"{call_s:.1f} s per call, nothing compiled in it)"})
        return [first_ms], call_s
    info["warmup"] = warmup
    return None, call_s


def _propagates(e):
    """An exception the profiler's fallback must not swallow: a guard's verdict on the timed calls
    (torch._dynamo recompiling or hitting its recompile limit)."""
    return type(e).__name__ in ("RecompileError", "FailOnRecompileLimitHit")


def time_cpu(fn, values, prior=None, compiled=False, guard=contextlib.nullcontext):
    flush = torch.empty(2 * _llc_bytes(), dtype=torch.uint8)

    def call():
        args = clone_args(values)
        flush.fill_(1)
        t0 = time.perf_counter()
        fn(*args)
        return (time.perf_counter() - t0) * 1e3

    info = {"flush_bytes": flush.numel()}
    samples, call_s = _warm(call, prior, compiled, "cpu-wallclock", info)
    if samples is not None:
        return samples, info
    iterations = timed_runs(call_s)
    samples = []
    with guard():
        for i in range(iterations):
            args = clone_args(values)
            flush.fill_(i & 0xFF)
            t0 = time.perf_counter()
            fn(*args)
            t1 = time.perf_counter()
            del args
            samples.append((t1 - t0) * 1e3)
    info.update({"method": "cpu-wallclock", "iterations": iterations})
    return samples, info


def _load_chrome_trace(path):
    with open(path, "r", encoding="utf-8", errors="replace") as f:
        text = f.read()
    try:
        doc = json.loads(text)
    except ValueError:
        # Some Kineto versions print bare inf/nan (e.g. a bandwidth over a zero duration).
        text = re.sub(r"(?<=[:\[,])(\s*)-?(?:inf|nan)\b", r"\1null", text, flags=re.IGNORECASE)
        doc = json.loads(text)
    return doc.get("traceEvents", []) if isinstance(doc, dict) else doc


def split_trace(events, iterations):
    """Per-iteration GPU spans from Kineto chrome-trace events.

    Each timed call is bracketed by two host-to-device copies of distinctive sizes. As in
    upstream's CUPTI loop, the runtime/driver API calls whose start lies strictly between the
    two markers' API calls (on any thread) give correlation ids; every kernel, memcpy and
    memset with one of those ids belongs to the call, and its time is max(end) - min(start).
    Returns (samples_ms, kernel_sets_consistent).
    """
    api = []  # (ts_us, correlation)
    dev = {}  # correlation -> [(start_us, end_us, key)]
    for ev in events:
        if not isinstance(ev, dict) or ev.get("ph") != "X":
            continue
        cat = str(ev.get("cat", "")).lower()
        args = ev.get("args") or {}
        corr = args.get("correlation")
        if corr is None:
            continue
        try:
            ts = float(ev["ts"])
        except (KeyError, TypeError, ValueError):
            continue
        if cat in ("cuda_runtime", "cuda_driver", "runtime", "driver"):
            api.append((ts, corr))
        elif cat in ("kernel", "gpu_memcpy", "gpu_memset", "concurrent_kernel", "memcpy", "memset"):
            cat = "gpu_memcpy" if cat == "memcpy" else "gpu_memset" if cat == "memset" else cat
            dur = float(ev.get("dur") or 0.0)
            nbytes = args.get("bytes", 0)
            dev.setdefault(corr, []).append((ts, ts + dur, f"{cat}|{ev.get('name', '')}|{nbytes}", cat, nbytes))
    api.sort(key=lambda x: x[0])
    first_api_ts = {}
    for ts, corr in api:
        first_api_ts.setdefault(corr, ts)

    def marker_times(nbytes):
        out = []
        for corr, evs in dev.items():
            if any(e[3] == "gpu_memcpy" and e[4] == nbytes for e in evs) and corr in first_api_ts:
                out.append((first_api_ts[corr], corr))
        return sorted(out)

    before = marker_times(_MARK_BEFORE_BYTES)
    after = marker_times(_MARK_AFTER_BYTES)
    if len(before) != iterations or len(after) != iterations:
        raise RuntimeError(
            f"found {len(before)}/{len(after)} iteration markers in the profiler trace, expected {iterations}"
        )
    marker_corrs = {c for _, c in before} | {c for _, c in after}
    api_ts = [a[0] for a in api]
    samples, first_keys, consistent = [], None, True
    for i in range(iterations):
        t0, t1 = before[i][0], after[i][0]
        if not t0 < t1 or (i + 1 < iterations and not t1 < before[i + 1][0]):
            raise RuntimeError(f"iteration markers out of order at iteration {i}")
        lo = bisect.bisect_right(api_ts, t0)
        hi = bisect.bisect_left(api_ts, t1)
        corrs = {api[j][1] for j in range(lo, hi)} - marker_corrs
        evs = [e for c in corrs for e in dev.get(c, ())]
        if not evs:
            raise RuntimeError(f"no device activity recorded for iteration {i}")
        samples.append((max(e[1] for e in evs) - min(e[0] for e in evs)) / 1e3)
        keys = {e[2] for e in evs}
        if first_keys is None:
            first_keys = keys
        elif keys != first_keys:
            consistent = False
    return samples, consistent


def _time_cuda_profiler(fn, values, flush, iterations):
    from torch.profiler import ProfilerActivity, profile

    src_a = torch.zeros(_MARK_BEFORE_BYTES, dtype=torch.uint8)
    src_b = torch.zeros(_MARK_AFTER_BYTES, dtype=torch.uint8)
    try:
        src_a, src_b = src_a.pin_memory(), src_b.pin_memory()
    except Exception:
        pass
    dst_a = torch.empty(_MARK_BEFORE_BYTES, dtype=torch.uint8, device=flush.device)
    dst_b = torch.empty(_MARK_AFTER_BYTES, dtype=torch.uint8, device=flush.device)
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        torch.cuda.synchronize()
        for _ in range(iterations):
            args = clone_args(values)
            flush.zero_()
            dst_a.copy_(src_a, non_blocking=True)
            fn(*args)
            dst_b.copy_(src_b, non_blocking=True)
            torch.cuda.synchronize()
            del args
    tmpdir = tempfile.mkdtemp(prefix="kernelarc_trace_")
    try:
        path = os.path.join(tmpdir, "trace.json")
        prof.export_chrome_trace(path)
        events = _load_chrome_trace(path)
    finally:
        shutil.rmtree(tmpdir, ignore_errors=True)
    del prof
    return split_trace(events, iterations)


def _event_timed_call(fn, values, flush):
    """One call of fn on fresh copies of the values after flushing L2, timed by CUDA events (ms)."""
    args = clone_args(values)
    flush.zero_()
    start = torch.cuda.Event(enable_timing=True)
    end = torch.cuda.Event(enable_timing=True)
    start.record()
    fn(*args)
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end)


def _time_cuda_events(fn, values, flush, iterations):
    return [_event_timed_call(fn, values, flush) for _ in range(iterations)]


def time_cuda(fn, values, device, prior=None, compiled=False, guard=contextlib.nullcontext):
    """Samples (ms) and how they were taken. prior: (wall s, device ms, counts) of a call just made
    on the same inputs (the reference's output call), counts: the process had run the reference
    before. compiled: fn is a torch.compile wrapper. See "Slow references" for the long calls."""
    l2 = torch.cuda.get_device_properties(device).L2_cache_size
    flush = torch.empty(int(2 * l2), dtype=torch.int8, device=device)
    torch.cuda.synchronize()

    def call():
        return _event_timed_call(fn, values, flush)

    info = {"flush_bytes": flush.numel()}
    samples, call_s = _warm(call, prior, compiled, "cuda-events", info)
    if samples is not None:
        return samples, info
    iterations = timed_runs(call_s)
    info["iterations"] = iterations
    with guard():
        samples = _timed_cuda(fn, values, flush, iterations, call_s, info)
    return samples, info


def _timed_cuda(fn, values, flush, iterations, call_s, info):
    """The timed calls of time_cuda (info gets the method)."""
    if call_s * 1e3 > SLOW_CALL_MS:
        info["method"] = f"cuda-events (slow reference: {call_s * 1e3:.0f} ms per call)"
        return _time_cuda_events(fn, values, flush, iterations)
    try:
        samples, consistent = _time_cuda_profiler(fn, values, flush, iterations)
        info["method"] = "torch-profiler-kineto"
        info["kernel_sets_consistent"] = consistent
    except Exception as e:
        if _propagates(e):
            raise
        torch.cuda.synchronize()
        warn(f"profiler timing failed ({exc_text(e)}); falling back to CUDA events")
        samples = _time_cuda_events(fn, values, flush, iterations)
        info["method"] = f"cuda-events (profiler failed: {exc_text(e)[:300]})"
    return samples

