#!/usr/bin/env python3
"""How far a GEMM campaign's target is from what the device allows: per workload of the GEMM
problems in a campaign store, a lower bound on any kernel's judged time, the larger of
  - the judged read-of-B floor of its shape (--floor PREFIX=us, e.g. the fastest small-M kernel's
    judged time at M <= 8: it reads B once and little else),
  - its FLOPs at --rate TFLOP/s plus --overhead us,
  - its bytes (A, B and C once) at --bw TB/s plus --overhead us;
then the geometric mean of the reference's time (torch.matmul, timed by the judge in the same run)
over that bound, per problem and over all. A target speedup above this geomean cannot be reached
by any kernel under those assumptions.
Usage: gemm_ceiling.py CAMPAIGN_DB PROBLEMS_DIR --floor 004=3.0 --floor 007=13.3 ... [--rate 700]
       [--overhead 3] [--bw 3.65]"""
import argparse
import collections
import glob
import json
import math
import os
import sqlite3


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("db")
    ap.add_argument("problems", help="folder holding the problem folders (their workload.jsonl)")
    ap.add_argument("--floor", action="append", default=[], help="PREFIX=us: judged floor of the problems starting with PREFIX")
    ap.add_argument("--rate", type=float, default=700.0, help="dense TFLOP/s (default 700)")
    ap.add_argument("--overhead", type=float, default=3.0, help="fixed us per call (default 3)")
    ap.add_argument("--bw", type=float, default=3.65, help="TB/s for the bytes of A, B and C (default 3.65)")
    a = ap.parse_args()
    floors = dict((k, float(v)) for k, v in (f.split("=", 1) for f in a.floor))
    m_of = {}
    for wl in glob.glob(os.path.join(a.problems, "*", "workload.jsonl")):
        for line in open(wl):
            j = json.loads(line)
            m_of[j["uuid"]] = j["axes"].get("M")
    refs = collections.defaultdict(list)
    for prob, wl, r in sqlite3.connect(a.db).execute("SELECT problem, workload, reference_us FROM measurements"):
        if r > 0 and "_gemm_n" in prob and m_of.get(wl):
            refs[(prob, wl)].append(r)
    per = collections.defaultdict(list)
    for (prob, wl), rs in refs.items():
        ref = sorted(rs)[len(rs) // 2]
        M = m_of[wl]
        N = int(prob.split("_n")[1].split("_")[0])
        K = int(prob.split("_k")[1].split("_")[0])
        bound = max(next((v for k, v in floors.items() if prob.startswith(k)), 0.0),
                    2.0 * M * N * K / (a.rate * 1e12) * 1e6 + a.overhead,
                    2.0 * (M * K + N * K + M * N) / (a.bw * 1e12) * 1e6 + a.overhead)
        per[prob].append(math.log(ref / bound))
    if not per:
        raise SystemExit("no GEMM workloads with reference times in " + a.db)
    print(f"bound: max(judged floor, FLOPs at {a.rate:g} TFLOP/s, bytes at {a.bw:g} TB/s) + {a.overhead:g} us")
    for prob, v in sorted(per.items()):
        print(f"{prob:<28} {len(v):>4} workloads  reference / bound {math.exp(sum(v) / len(v)):.3f}x")
    allv = [x for v in per.values() for x in v]
    print(f"ALL {len(allv)} workloads: geomean reference / bound {math.exp(sum(allv) / len(allv)):.3f}x")


if __name__ == "__main__":
    main()
