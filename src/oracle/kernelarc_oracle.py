#!/usr/bin/env python3
"""KernelArc reference oracle, command line. The C++ judge (src/oracle/oracle.cpp) runs it as a
subprocess to get SOL-ExecBench-style inputs, reference outputs, timings and work counts:

    python3 kernelarc_oracle.py generate --spec FILE --device cpu|cuda \
        --job UUID:SEED:OUTDIR [--job ...] [--time-reference] [--time-compile [--compile-budget S]] \
        [--timings-only]
    python3 kernelarc_oracle.py regen --spec FILE --device cpu|cuda --job UUID:SEED:OUTDIR \
        --inputs NAME[,NAME...]
    python3 kernelarc_oracle.py count --spec FILE --device cpu|cuda --workload UUID [--workload ...]

FILE is the problem as the C++ problem layer resolved it (src/oracle/spec.cpp): every workload's
inputs and outputs with dtypes, concrete shapes and input sources. The oracle parses no definition
and evaluates no expression. The work is done by the kaoracle package next to this file; see
src/oracle/README.md for the protocol, the files written and the deliberate departures from
upstream.

Stdout carries exactly one JSON line per job (generate, regen) or workload (count). Everything
else (warnings, prints from reference code, torch logs) goes to stderr. Exit status 0 once every
job was attempted; 2 for a usage error or an unusable spec or device, with one line on stderr.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time


class UsageError(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        raise UsageError(message)


def _add_common(p):
    p.add_argument("--spec", required=True, help="the problem's spec (written by the C++ problem layer)")
    p.add_argument("--device", required=True, choices=["cpu", "cuda"])


def parse_args(argv):
    p = _Parser(prog="kernelarc_oracle.py", add_help=True)
    sub = p.add_subparsers(dest="command")
    g = sub.add_parser("generate", help="generate inputs and reference outputs")
    _add_common(g)
    g.add_argument("--job", action="append", required=True, metavar="UUID:SEED:OUTDIR")
    g.add_argument("--time-reference", action="store_true", help="time the reference (10 warm-up + 50 timed calls)")
    g.add_argument("--time-compile", action="store_true",
                   help="also time torch.compile(run) per workload shape (meta compile_ms, compile_note)")
    g.add_argument("--timings-only", action="store_true",
                   help="write only meta.json (timings, shapes): no inputs or reference outputs on disk")
    g.add_argument("--compile-budget", type=float, default=240.0, metavar="SECONDS",
                   help="wall-clock budget for compiling and timing torch.compile in this run (default 240)")
    r = sub.add_parser("regen", help="generate a job's inputs again (no reference run); write the named ones")
    _add_common(r)
    r.add_argument("--job", action="append", required=True, metavar="UUID:SEED:OUTDIR")
    r.add_argument("--inputs", required=True, metavar="NAME[,NAME...]")
    c = sub.add_parser("count", help="count FLOPs (by dtype) and fewest bytes of workloads' references")
    _add_common(c)
    c.add_argument("--workload", action="append", required=True, metavar="UUID")
    args = p.parse_args(argv)
    if args.command == "count":
        return args, list(args.workload)
    if args.command not in ("generate", "regen"):
        raise UsageError("expected the 'generate', 'regen' or 'count' command")
    if args.command == "regen" and len(args.job) != 1:
        raise UsageError("regen takes exactly one --job")
    return args, [_parse_job(spec) for spec in args.job]


def _parse_job(spec):
    """UUID:SEED:OUTDIR, split at the first two colons (OUTDIR may hold colons)."""
    parts = spec.split(":", 2)
    if len(parts) != 3 or not parts[0] or not parts[2]:
        raise UsageError(f"bad --job '{spec}' (expected UUID:SEED:OUTDIR)")
    try:
        seed = int(parts[1])
    except ValueError:
        raise UsageError(f"bad seed in --job '{spec}'")
    if not os.path.isdir(parts[2]):
        raise UsageError(f"output folder '{parts[2]}' does not exist")
    return parts[0], seed, parts[2]


def _generate(ko, problem, refsrc, args, jobs, device, out):
    opts = ko.jobs.Options(args.time_reference, args.time_compile, args.timings_only)
    ko.compile_baseline.set_budget(args.compile_budget)
    for uuid, seed, outdir in jobs:
        t_job = time.monotonic()
        for name in ko.jobs.OUTPUT_FILES:
            stale = os.path.join(outdir, name)
            if os.path.exists(stale):
                ko.common.warn(f"removing stale {stale}")
                os.remove(stale)
        ok = ko.jobs.run_job(problem, refsrc, uuid, seed, outdir, device, opts)
        out.write(json.dumps({"uuid": uuid, "seed": seed, "ok": ok, "seconds": round(time.monotonic() - t_job, 3)}) + "\n")
        out.flush()
    return 0


def _regen(ko, problem, refsrc, args, jobs, device, out):
    uuid, seed, outdir = jobs[0]
    t_job = time.monotonic()
    try:
        ko.jobs.regen_job(problem, refsrc, uuid, seed, outdir, device, [n for n in args.inputs.split(",") if n])
    except Exception as e:
        print(f"kernelarc_oracle: regen {uuid}:{seed} failed: {ko.common.exc_text(e)}", file=sys.stderr, flush=True)
        return 1
    out.write(json.dumps({"uuid": uuid, "seed": seed, "ok": True, "seconds": round(time.monotonic() - t_job, 3)}) + "\n")
    return 0


def _count(ko, problem, refsrc, args, jobs, device, out):
    for uuid in jobs:
        out.write(json.dumps(ko.jobs.count_job(problem, refsrc, uuid, device)) + "\n")
        out.flush()
    return 0


def main(argv=None):
    # Keep the real stdout for the JSON lines; everything else written to fd 1 (reference prints,
    # C++ libraries) goes to stderr.
    sys.stdout.flush()
    json_out = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    try:
        args, jobs = parse_args(sys.argv[1:] if argv is None else argv)
    except UsageError as e:
        print(f"kernelarc_oracle: {' '.join(str(e).split())}", file=sys.stderr)
        return 2
    except SystemExit as e:  # --help
        return e.code if isinstance(e.code, int) else 0
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from kaoracle import common, spec  # no torch yet: a bad spec is one line on stderr

    try:
        problem = spec.ProblemSpec(args.spec)
    except common.UsageError as e:
        print(f"kernelarc_oracle: {common.one_line(str(e))}", file=sys.stderr)
        return 2
    import kaoracle.compile_baseline  # noqa: F401  (these import torch: after stdout has been redirected)
    import kaoracle.jobs  # noqa: F401
    import kaoracle.reference  # noqa: F401
    import kaoracle as ko

    device = ko.common.open_device(args.device)
    if device is None:
        return 2
    refsrc = ko.reference.ReferenceSource(problem.reference)
    command = {"generate": _generate, "regen": _regen, "count": _count}[args.command]
    try:
        return command(ko, problem, refsrc, args, jobs, device, json_out)
    finally:
        refsrc.cleanup()


if __name__ == "__main__":
    sys.exit(main())
