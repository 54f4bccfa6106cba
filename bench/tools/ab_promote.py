#!/usr/bin/env python3
"""Promotes the winner of a prefill A/B to its family's first seed, in a copy of families/ that a
campaign later in the same queue reads (kernelarc optimize --families DIR), so that a queue cut
between runs still searches from the measured best. Used by bench/regress/queue.sh.

Reads self-test rows (bench/tools/attention_selftest.py --jsonl, as bench/tools/prefill_ab.sh writes them),
keeps the repo's source (not an OLD copy), and compares every point of FAMILY with BASELINE on the
workloads BASELINE ran: a point correct on all of them whose geomean time is below (1 - MIN_GAIN)
of the baseline's wins (the lowest geomean). The winner goes first in the copy's family.json seeds
(the old seeds follow), with the measurement as its "why". Nothing is written without a winner.

  python3 bench/tools/ab_promote.py ROWS.jsonl --family gqa_prefill_cuda --baseline K=V,K=V,... \\
      --families-out DIR [--families-in families] [--min-gain 0.02] [--date YYYY-MM-DD]
"""
import argparse
import datetime
import json
import math
import os
import re
import shutil


def parse_knobs(k):
    """'KV_TILE64_MMA1_WS1' -> {'KV_TILE': 64, 'MMA': 1, 'WS': 1} (the self-test's knobs_str)."""
    return {n: int(v) for n, v in re.findall(r"([A-Z][A-Z_]*?)(\d+)(?:_|$)", k)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("rows")
    ap.add_argument("--family", required=True)
    ap.add_argument("--baseline", required=True, help="K=V,... (knobs not named: their first value, the old behaviour)")
    ap.add_argument("--families-out", required=True)
    ap.add_argument("--families-in", default="families")
    ap.add_argument("--min-gain", type=float, default=0.02)
    ap.add_argument("--date", default=datetime.date.today().isoformat())
    a = ap.parse_args()
    base = {n: int(v) for n, v in (kv.split("=") for kv in a.baseline.split(","))}
    domains = json.load(open(os.path.join(a.families_in, a.family, "family.json")))["knobs"]
    rows = []
    for line in open(a.rows):
        r = json.loads(line)
        if r.get("family") == a.family and r.get("source", "families") == "families":
            rows.append(r)
    by_point = {}
    for r in rows:
        by_point.setdefault(r["knobs"], {})[(r["problem"], r["case"])] = r
    def is_base(k):
        kn = parse_knobs(k)
        return all(v == base.get(n, domains[n][0] if n in domains else v) for n, v in kn.items())
    bases = [k for k in by_point if is_base(k)]
    if not bases:
        print(f"ab_promote: no row of the baseline {a.baseline} in {a.rows}: nothing promoted")
        return
    b = by_point[bases[0]]
    cases = [c for c, r in b.items() if r.get("ok") and r.get("us")]
    best = None
    for k, pr in by_point.items():
        if k in bases:
            continue
        if not all(c in pr and pr[c].get("ok") and pr[c].get("us") for c in cases) or not cases:
            print(f"ab_promote: {k}: not correct and timed on every baseline workload")
            continue
        g = math.exp(sum(math.log(pr[c]["us"] / b[c]["us"]) for c in cases) / len(cases))
        print(f"ab_promote: {k}: geomean time {g:.3f} x the baseline on {len(cases)} workloads")
        if g < 1 - a.min_gain and (best is None or g < best[1]):
            best = (k, g)
    if best is None:
        print("ab_promote: no point beats the baseline by the margin: nothing promoted")
        return
    k, g = best
    if not os.path.isdir(a.families_out):
        shutil.copytree(a.families_in, a.families_out)
    path = os.path.join(a.families_out, a.family, "family.json")
    fam = json.load(open(path))
    knobs = {n: v for n, v in parse_knobs(k).items() if n in fam["knobs"]}
    for n, dom in fam["knobs"].items():
        knobs.setdefault(n, dom[0])  # a knob the row's source lacked: its first value (the old behaviour)
    ws = ", ".join(f"{p} {c}" for p, c in cases)
    why = (f"H200, {a.date}, bench/regress/queue.sh A/B (self-test timing): geomean time {g:.3f} x the seed "
           f"{a.baseline} on {ws}")
    fam["seeds"] = [{"knobs": knobs, "why": why}] + [s for s in fam.get("seeds", []) if s.get("knobs") != knobs]
    with open(path, "w") as f:
        json.dump(fam, f, indent=2)
        f.write("\n")
    print(f"ab_promote: {a.family}: {k} is the first seed in {path}")


if __name__ == "__main__":
    main()
