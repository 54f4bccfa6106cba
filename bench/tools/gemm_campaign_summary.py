#!/usr/bin/env python3
"""The GEMM figures from a `kernelarc optimize` campaign folder over the GEMM problems: per problem
the best candidate (the campaign's incumbent, rank 1 of its leaderboard.json), its speedup over the
reference (torch.matmul, timed by the judge in the same run) on every workload, the geomean, the
slowest workload and how many fall below 0.97x; then the geomean over all workloads of all problems,
and what the best solutions are made of (family, or the parts of a piecewise candidate), with the
search cost per problem (candidates; minutes from its first candidate to its last measurement, on
one GPU). A problem whose optimize process was killed before writing leaderboard.json is ranked
from the store.
Usage: gemm_campaign_summary.py CAMPAIGN_DIR"""
import datetime
import json
import math
import os
import sqlite3
import sys


def iso(t):
    """Seconds since the epoch of the store's UTC timestamps (2026-12-04T13:27:17.321Z)."""
    return datetime.datetime.strptime(t, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=datetime.timezone.utc).timestamp()


def leaderboard_from_store(db, prob):
    """The leaderboard's first rows as the engine ranks them: every workload passed, then the
    geometric mean of the median times (one GPU assumed)."""
    rows = []
    for h, fam, knobs in db.execute("SELECT hash, family, knobs FROM candidates WHERE problem = ?", (prob,)):
        ms = db.execute("SELECT verdict, median_us FROM measurements WHERE candidate = ? AND problem = ?",
                        (h, prob)).fetchall()
        ok = [t for v, t in ms if v == "passed" and t > 0]
        g = math.exp(sum(math.log(t) for t in ok) / len(ok)) if ok else float("inf")
        rows.append({"candidate": h, "family": fam, "knobs": json.loads(knobs or "{}"),
                     "workloads": len(ms), "passed_workloads": len(ok), "geomean_us": g})
    rows.sort(key=lambda r: (r["passed_workloads"] != r["workloads"], r["geomean_us"]))
    return rows


def leaderboard(camp, db, prob):
    """The problem's leaderboard rows, best first: the campaign's leaderboard.json, or, when the
    optimize process was killed before writing it, ranked from the store (with a note printed)."""
    lb_path = os.path.join(camp, prob, "leaderboard.json")
    if os.path.isfile(lb_path):
        return json.load(open(lb_path))
    print(f"{prob}: no leaderboard.json (process killed?); best taken from the store")
    return leaderboard_from_store(db, prob)


def main():
    camp = sys.argv[1]
    db = sqlite3.connect(os.path.join(camp, "campaign.db"))
    all_sp, rows = [], []
    probs = sorted(r[0] for r in db.execute("SELECT DISTINCT problem FROM candidates"))
    for prob in probs:
        lb = leaderboard(camp, db, prob)
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
        # Search minutes: the first candidate's record to the last measurement (builds, judging and
        # the agents' time; the problem's oracle run before it is not counted). One GPU per run.
        t0, t1 = db.execute("SELECT (SELECT MIN(created_at) FROM candidates WHERE problem = ?), "
                            "(SELECT MAX(created_at) FROM measurements WHERE problem = ?)", (prob, prob)).fetchone()
        minutes = (iso(t1) - iso(t0)) / 60 if t0 and t1 else float("nan")
        what = best["family"]
        if best["family"] == "piecewise":
            what = "piecewise: " + "; ".join(f"<= {p['hi']}: {p['name']}" for p in best["knobs"]["pieces"])
        rows.append((prob, len(sp), g, worst[0], below, n_cand, minutes, what))
    print(f"{'problem':<24} {'workloads':>9} {'geomean':>8} {'min':>6} {'<0.97x':>6} {'cands':>5} {'minutes':>7}  best")
    for prob, n, g, w, b, c, mins, what in rows:
        print(f"{prob:<24} {n:>9} {g:>7.3f}x {w:>5.2f}x {b:>6} {c:>5} {mins:>7.1f}  {what}")
    if all_sp:
        g = math.exp(sum(math.log(s) for s in all_sp) / len(all_sp))
        print(f"ALL: {len(all_sp)} workloads, geomean {g:.3f}x over the reference, min {min(all_sp):.2f}x, "
              f"{sum(1 for s in all_sp if s < 0.97)} below 0.97x")


if __name__ == "__main__":
    main()
