#!/usr/bin/env python3
"""Issue 5's figures from a `kernelarc optimize` campaign folder over the GEMM problems: per problem
the best candidate (the campaign's incumbent, rank 1 of its leaderboard.json), its speedup over the
reference (torch.matmul, timed by the judge in the same run) on every workload, the geomean, the
slowest workload and how many fall below 0.97x; then the geomean over all workloads of all problems,
and what the best solutions are made of (family, or the parts of a piecewise candidate).
Usage: gemm_campaign_summary.py CAMPAIGN_DIR"""
import json
import math
import os
import sqlite3
import sys


def main():
    camp = sys.argv[1]
    db = sqlite3.connect(os.path.join(camp, "campaign.db"))
    all_sp, rows = [], []
    for prob in sorted(d for d in os.listdir(camp) if os.path.isfile(os.path.join(camp, d, "leaderboard.json"))):
        lb = json.load(open(os.path.join(camp, prob, "leaderboard.json")))
        if not lb or lb[0]["passed_workloads"] != lb[0]["workloads"] or lb[0]["workloads"] == 0:
            print(f"{prob}: no candidate passed every workload")
            continue
        best = lb[0]
        ms = db.execute("SELECT workload, verdict, median_us, reference_us, gpu, id FROM measurements WHERE candidate = ? "
                        "ORDER BY id", (best["candidate"],)).fetchall()
        gpu = ms[0][4]
        sp = [(r / t, w) for w, v, t, r, g, _ in ms if g == gpu and v == "passed" and t > 0 and r > 0]
        all_sp += [s for s, _ in sp]
        g = math.exp(sum(math.log(s) for s, _ in sp) / len(sp)) if sp else 0
        worst = min(sp) if sp else (0, "")
        below = sum(1 for s, _ in sp if s < 0.97)
        n_cand = db.execute("SELECT COUNT(*) FROM candidates WHERE problem = ?", (prob,)).fetchone()[0]
        what = best["family"]
        if best["family"] == "piecewise":
            what = "piecewise: " + "; ".join(f"<= {p['hi']}: {p['name']}" for p in best["knobs"]["pieces"])
        rows.append((prob, len(sp), g, worst[0], below, n_cand, what))
    print(f"{'problem':<24} {'workloads':>9} {'geomean':>8} {'min':>6} {'<0.97x':>6} {'cands':>5}  best")
    for prob, n, g, w, b, c, what in rows:
        print(f"{prob:<24} {n:>9} {g:>7.3f}x {w:>5.2f}x {b:>6} {c:>5}  {what}")
    if all_sp:
        g = math.exp(sum(math.log(s) for s in all_sp) / len(all_sp))
        print(f"ALL: {len(all_sp)} workloads, geomean {g:.3f}x over the reference, min {min(all_sp):.2f}x, "
              f"{sum(1 for s in all_sp if s < 0.97)} below 0.97x")


if __name__ == "__main__":
    main()
