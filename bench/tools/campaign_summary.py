#!/usr/bin/env python3
"""Summarises a `kernelarc optimize` campaign folder against the problems' definitions: per problem
the best candidate, whether it beats the reference on every workload, and on the largest workload
(most bytes) its effective bandwidth (each input read once, each output written once) as a share
of a measured copy bandwidth. On a GPU with torch it also times, by the judge's protocol (L2 flushed
by zeroing 2x its size just before, device-side duration from the profiler, median of 30), a plain
device-to-device copy moving the same bytes (half read, half written): the ceiling that protocol
leaves at that size, where dirty lines from the flush are written back during the call.
Usage: campaign_summary.py CAMPAIGN_DIR PROBLEMS_ROOT COPY_TB_S"""
import json
import math
import os
import sqlite3
import sys

SIZES = {"float32": 4, "float16": 2, "bfloat16": 2, "int64": 8, "int32": 4, "float64": 8, "int8": 1, "bool": 1,
         "float8_e4m3fn": 1, "float8_e5m2": 1, "uint8": 1}


def workload_bytes(d, axes):
    consts = {k: v["value"] for k, v in d["axes"].items() if v["type"] == "const"}
    env = {**consts, **axes}
    total = 0
    for sec in ("inputs", "outputs"):
        for t in d[sec].values():
            if t["shape"] is None:
                continue
            n = 1
            for s in t["shape"]:
                n *= env[s] if isinstance(s, str) else s
            total += n * SIZES[t["dtype"]]
    return total


def copy_after_flush_us(nbytes):
    """Median device time (us) of a copy of nbytes/2 bytes right after the judge's L2 flush, or None."""
    try:
        import tempfile
        import statistics
        import torch
        if not torch.cuda.is_available():
            return None
        half = nbytes // 2
        src = torch.empty(half, dtype=torch.uint8, device="cuda").random_()
        dst = torch.empty_like(src)
        flush = torch.empty(2 * torch.cuda.get_device_properties(0).L2_cache_size, dtype=torch.int8, device="cuda")
        for _ in range(3):
            flush.zero_()
            dst.copy_(src)
        torch.cuda.synchronize()
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
            for _ in range(30):
                flush.zero_()
                dst.copy_(src)
            torch.cuda.synchronize()
        with tempfile.NamedTemporaryFile(suffix=".json") as f:
            prof.export_chrome_trace(f.name)
            trace = json.load(open(f.name))
        durs = [e["dur"] for e in trace.get("traceEvents", []) if e.get("cat") == "gpu_memcpy"]
        return statistics.median(durs) if durs else None
    except Exception as e:  # a summary without the copy column beats no summary
        print(f"(copy after flush not measured: {e})", file=sys.stderr)
        return None


def main():
    camp, root, copy = sys.argv[1], sys.argv[2], float(sys.argv[3])
    db = sqlite3.connect(f"file:{os.path.join(camp, 'campaign.db')}?mode=ro", uri=True)
    defs = {}
    for dirpath, _, files in os.walk(root):
        if "definition.json" in files:
            d = json.load(open(os.path.join(dirpath, "definition.json")))
            wl = {}
            for line in open(os.path.join(dirpath, "workload.jsonl")):
                w = json.loads(line)
                wl[w["uuid"]] = w["axes"]
            defs[d["name"]] = (d, wl)
    rows = []
    for (problem,) in db.execute("select distinct problem from candidates order by problem"):
        best = None
        for (cand, name) in db.execute("select hash, json_extract(solution,'$.name') from candidates where problem=?", (problem,)):
            ms = db.execute("select workload, verdict, median_us, reference_us from measurements where candidate=?", (cand,)).fetchall()
            if not ms or any(v != "passed" for _, v, _, _ in ms):
                continue
            g = math.exp(sum(math.log(m) for _, _, m, _ in ms) / len(ms))
            if best is None or g < best[0]:
                best = (g, name, ms)
        n = db.execute("select count(*) from candidates where problem=?", (problem,)).fetchone()[0]
        if best is None:
            rows.append(f"{problem}: {n} candidates, none passed")
            continue
        d, wl = defs[problem]
        beats = sum(1 for _, _, m, r in best[2] if r > 0 and m < r)
        big = max(best[2], key=lambda x: workload_bytes(d, wl[x[0]]))
        by = workload_bytes(d, wl[big[0]])
        bw = by / (big[2] * 1e-6) / 1e12
        cf = copy_after_flush_us(by)
        cf_text = (f"; a copy of the same bytes after the same flush takes {cf:.2f} us = {by / (cf * 1e-6) / 1e12:.2f} TB/s, "
                   f"the kernel takes {big[2] / cf:.2f}x that") if cf else ""
        rows.append(f"{problem}: {n} candidates; best {best[1]} geomean {best[0]:.2f} us; beats the reference on "
                    f"{beats}/{len(best[2])} workloads (min speedup {min(r / m for _, _, m, r in best[2]):.2f}x); largest workload "
                    f"{by / 1e6:.1f} MB in {big[2]:.2f} us = {bw:.2f} TB/s = {100 * bw / copy:.1f}% of copy bandwidth{cf_text}")
    print("\n".join(rows))


if __name__ == "__main__":
    main()
