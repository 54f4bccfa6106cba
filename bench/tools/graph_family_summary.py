#!/usr/bin/env python3
"""Summarises a graph-family campaign (bench/regress/graph_family.sh): per problem of the status file,
the best candidate (most workloads passed, then the lowest geomean time) with its workloads passed,
geomean µs, the geomeans of PyTorch eager and torch.compile over the same workloads (the judge's
reference timings; compile needs --time-compile), the geomean speedups against each, how many
workloads it is slower than torch.compile on, and the candidates judged per GPU-minute of the
problem's optimize call. Problems the family does not lower or that did not run say so.
Usage: graph_family_summary.py CAMPAIGN_DIR STATUS_TSV   (STATUS_TSV: problem, status, wall seconds)"""
import json
import math
import os
import sqlite3
import sys


def geomean(xs):
    xs = [x for x in xs if x and x > 0]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def fmt(x, spec=".2f"):
    return "-" if x is None else format(x, spec)


def best_candidate(db, problem):
    best = None
    for (cand,) in db.execute("select hash from candidates where problem=?", (problem,)):
        rows = db.execute("select workload, verdict, median_us, reference_us, extra from measurements where candidate=?",
                          (cand,)).fetchall()
        ok = [r for r in rows if r[1] == "passed" and r[2] > 0]
        if not rows:
            continue
        key = (-len(ok), geomean([r[2] for r in ok]) or math.inf)
        if best is None or key < best[0]:
            best = (key, rows, ok)
    return best


def compile_us(extra):
    try:
        e = json.loads(extra)
        return e.get("compile_us") if isinstance(e, dict) else None
    except (TypeError, ValueError):
        return None


def row(db, problem, status, wall):
    n = db.execute("select count(*) from candidates where problem=?", (problem,)).fetchone()[0] if db else 0
    if status != "ran" and n == 0:
        return [problem, status, "", "", "", "", "", "", "", ""]
    best = best_candidate(db, problem) if db else None
    per_min = n / (wall / 60) if wall > 0 else None
    if best is None:
        return [problem, f"0 ({n} candidates)", "-", "-", "-", "-", "-", "-", "-", fmt(per_min, ".1f")]
    _, rows, ok = best
    t = geomean([r[2] for r in ok])
    eager = geomean([r[3] for r in ok])
    comp = [compile_us(r[4]) for r in ok]
    compg = geomean(comp)
    vs_e = geomean([r[3] / r[2] for r in ok if r[3] > 0])
    vs_c = geomean([c / r[2] for r, c in zip(ok, comp) if c])
    slower = sum(1 for r, c in zip(ok, comp) if c and r[2] > c)
    return [problem, f"{len(ok)}/{len(rows)}", fmt(t), fmt(eager), fmt(compg), fmt(vs_e), fmt(vs_c),
            str(slower) if compg else "-", str(n), fmt(per_min, ".1f")]


def main():
    camp, status_file = sys.argv[1], sys.argv[2]
    path = os.path.join(camp, "campaign.db")
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True) if os.path.exists(path) else None
    head = ["problem", "passed", "best_us", "eager_us", "compile_us", "x_eager", "x_compile", "slower_than_compile",
            "candidates", "cand_per_gpu_min"]
    out = ["\t".join(head)]
    for line in open(status_file):
        parts = line.rstrip("\n").split("\t")
        if len(parts) < 3:
            continue
        out.append("\t".join(row(db, parts[0], parts[1], float(parts[2] or 0))))
    print("\n".join(out))


if __name__ == "__main__":
    main()
