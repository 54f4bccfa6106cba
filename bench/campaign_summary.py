#!/usr/bin/env python3
"""Summarises a `kernelarc optimize` campaign folder against the problems' definitions: per problem
the best candidate, whether it beats the reference on every workload, and on the largest workload
(most bytes) its effective bandwidth (each input read once, each output written once) as a share
of a measured copy bandwidth. Usage: campaign_summary.py CAMPAIGN_DIR PROBLEMS_ROOT COPY_TB_S"""
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
        rows.append(f"{problem}: {n} candidates; best {best[1]} geomean {best[0]:.2f} us; beats the reference on "
                    f"{beats}/{len(best[2])} workloads (min speedup {min(r / m for _, _, m, r in best[2]):.2f}x); largest workload "
                    f"{by / 1e6:.1f} MB in {big[2]:.2f} us = {bw:.2f} TB/s = {100 * bw / copy:.1f}% of copy bandwidth")
    print("\n".join(rows))


if __name__ == "__main__":
    main()
