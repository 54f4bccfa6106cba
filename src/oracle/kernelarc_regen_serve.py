#!/usr/bin/env python3
"""KernelArc oracle, regeneration server: kernelarc_oracle.py's ``regen`` for many jobs from one
process. The judge (src/oracle/oracle.cpp, Oracle::load_inputs) starts one per problem and keeps it
for every input set it loads, so the Python start (torch import, CUDA set-up: seconds on the H200)
is paid once instead of once per set: 018's and 019's random KV caches (~1 GB, above the oracle's
regeneration threshold) are rebuilt for every set a judge worker loads, two per workload.

    python3 kernelarc_regen_serve.py --spec FILE --device cpu|cuda

Requests, one JSON object per stdin line: {"uuid": ..., "seed": N, "outdir": DIR, "inputs": [NAME, ...]}
(the job's inputs are drawn again by kaoracle.jobs.regen_job, the same code path and random draws as
``generate``, and the named ones written to DIR/inputs.safetensors). Replies, one JSON line per request
on stdout, in order: {"ok": true, "seconds": S} or {"ok": false, "message": ...}; a failed request does
not end the server. EOF on stdin ends it (exit 0). Everything else goes to stderr, which starts with one
line "kernelarc_oracle: regen-serve for PROBLEM on DEVICE (pid N)".

A file of its own, not a command of kernelarc_oracle.py: the oracle cache's keys hold the hashes of
kernelarc_oracle.py and kaoracle/ (Oracle::version), and serving requests changes no entry's content.
"""
import argparse
import gc
import json
import os
import sys
import time



def serve(ko, problem, refsrc, device, requests, replies):
    import torch

    print(f"kernelarc_oracle: regen-serve for {problem.name} on {device} (pid {os.getpid()})", file=sys.stderr,
          flush=True)
    while True:
        line = requests.readline()  # one request at a time: the judge waits for each reply
        if not line:
            return 0
        if not line.strip():
            continue
        t0 = time.monotonic()
        try:
            req = json.loads(line)
            uuid, seed, outdir, names = req["uuid"], int(req["seed"]), req["outdir"], list(req["inputs"])
            if not os.path.isdir(outdir):
                raise ko.common.OracleError("load", f"output folder '{outdir}' does not exist")
            ko.jobs.regen_job(problem, refsrc, uuid, seed, outdir, device, names)
            reply = {"ok": True, "seconds": round(time.monotonic() - t0, 3)}
        except Exception as e:
            reply = {"ok": False, "message": ko.common.one_line(str(e)) if isinstance(e, ko.common.OracleError)
                     else ko.common.exc_text(e)}
            print(f"kernelarc_oracle: regen-serve request failed: {reply['message']}", file=sys.stderr, flush=True)
        # Hand the set's memory back between requests: the judge's worker keeps sets on the same GPU.
        gc.collect()
        if device.type == "cuda":
            torch.cuda.empty_cache()
        replies.write(json.dumps(reply) + "\n")
        replies.flush()


def main():
    # Replies go to the real stdout; anything else written to fd 1 (reference module imports, C++
    # libraries) goes to stderr, as in kernelarc_oracle.main.
    sys.stdout.flush()
    replies = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    ap = argparse.ArgumentParser(prog="kernelarc_regen_serve.py", description=__doc__.split("\n")[0])
    ap.add_argument("--spec", required=True, help="the problem's spec (written by the C++ problem layer)")
    ap.add_argument("--device", required=True, choices=["cpu", "cuda"])
    args = ap.parse_args()
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from kaoracle import common, spec  # no torch yet: a bad spec is one line on stderr

    try:
        problem = spec.ProblemSpec(args.spec)
    except common.UsageError as e:
        print(f"kernelarc_oracle: {common.one_line(str(e))}", file=sys.stderr)
        return 2
    import kaoracle.jobs  # noqa: F401  (imports torch: after stdout has been redirected)
    import kaoracle.reference  # noqa: F401
    import kaoracle as ko

    device = ko.common.open_device(args.device)
    if device is None:
        return 2
    refsrc = ko.reference.ReferenceSource(problem.reference)
    try:
        return serve(ko, problem, refsrc, device, sys.stdin, replies)
    finally:
        refsrc.cleanup()


if __name__ == "__main__":
    sys.exit(main())
