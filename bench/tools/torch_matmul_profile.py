#!/usr/bin/env python3
"""Times torch.matmul(A, B.T) for every workload of a GEMM problem the way KernelArc's judge times
candidates (L2 flushed by zeroing 2x L2 before each call, 10 warm-up + 50 timed calls, median of the
per-call GPU span of the kernels the call launched), reading kernel times from PyTorch's profiler
(CUPTI). Used to cross-check the judge: a cuBLAS-backed solution's judged median should agree with
the cuBLAS kernel time reported here. Prints one JSON object per workload."""
import argparse
import json
import statistics
import sys

import torch
from torch.profiler import ProfilerActivity, profile


def time_matmul(a, b, warmup=10, iters=50):
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    flush = torch.empty(2 * l2, dtype=torch.int8, device="cuda")
    for _ in range(warmup):
        flush.zero_()
        torch.matmul(a, b.T)
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(iters):
            flush.zero_()
            torch.matmul(a, b.T)
        torch.cuda.synchronize()
    events = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
    events.sort(key=lambda e: e.time_range.start)
    spans, cur, names = [], None, set()
    for e in events:
        is_flush = "fill" in e.name.lower() or "memset" in e.name.lower()
        if is_flush:
            if cur:
                spans.append(cur[1] - cur[0])
            cur = None
            continue
        names.add(e.name)
        cur = [e.time_range.start, e.time_range.end] if cur is None else [cur[0], max(cur[1], e.time_range.end)]
    if cur:
        spans.append(cur[1] - cur[0])
    return statistics.median(spans), len(spans), sorted(names)


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("problem")
    args = ap.parse_args()
    d = json.load(open(f"{args.problem}/definition.json"))
    consts = {k: v["value"] for k, v in d["axes"].items() if v["type"] == "const"}
    dtype = getattr(torch, d["inputs"]["A"]["dtype"])
    for line in open(f"{args.problem}/workload.jsonl"):
        w = json.loads(line)
        axes = {**consts, **w["axes"]}
        m, n, k = axes["M"], axes["N"], axes["K"]
        a = torch.randn(m, k, dtype=dtype, device="cuda")
        b = torch.randn(n, k, dtype=dtype, device="cuda")
        us, count, names = time_matmul(a, b)
        print(json.dumps({"uuid": w["uuid"], "M": m, "N": n, "K": k, "torch_matmul_us": us, "calls": count,
                          "kernels": names}), flush=True)


if __name__ == "__main__":
    sys.exit(main())
