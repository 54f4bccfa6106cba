#!/usr/bin/env python3
"""Summary of attention self-test rows (bench/tools/attention_selftest.py --jsonl) from two or more family
sources (--families), e.g. bench/tools/prefill_ab.sh's: per (problem, workload) the time and TFLOP/s
(prefill) or TB/s (decode) of every (point, source), and per point the geomean time ratio of each
source against the first source that ran it on the same workloads. A knob that only some sources
have (added since) counts at 0 as the same point as the older sources' without it (knobs are added
with 0 meaning the old behaviour), e.g. QREG0 in the new source against no QREG in the old.

  python3 bench/tools/ab_summary.py ROWS.jsonl [ROWS2.jsonl ...]
"""
import collections
import json
import math
import re
import sys


def parse_knobs(k):
    """'KV_TILE64_MMA1_WS1' -> {'KV_TILE': 64, 'MMA': 1, 'WS': 1} (self-test's knobs_str)."""
    return {n: int(v) for n, v in re.findall(r"([A-Z][A-Z_]*?)(\d+)(?:_|$)", k)}


def main():
    rows = []
    for path in sys.argv[1:]:
        for line in open(path):
            r = json.loads(line)
            if r.get("ok") and "us" in r:
                rows.append(r)
    if not rows:
        raise SystemExit("no timed rows (did the self-test run with --time on workloads?)")
    sources = list(dict.fromkeys(r.get("source", "families") for r in rows))
    t = {(r["problem"], r["case"], r["knobs"], r.get("source", "families")): r for r in rows}
    by_case = collections.defaultdict(set)
    for p, c, k, _ in t:
        by_case[(p, c)].add(k)
    for (p, c), knobs in sorted(by_case.items()):
        any_row = next(r for (pp, cc, _, _), r in t.items() if pp == p and cc == c)
        size = f"{any_row['gflop']} GFLOP" if "gflop" in any_row else f"{any_row.get('kv_mb', '?')} MB"
        print(f"{p} {c} ({size})")
        for k in sorted(knobs):
            cells = []
            for s in sources:
                r = t.get((p, c, k, s))
                if r:
                    rate = f"{r['tflops']} TFLOP/s" if "tflops" in r else f"{r.get('tb_s')} TB/s"
                    cells.append(f"{s}: {r['us']} us {rate}")
            print(f"  {k}: " + " | ".join(cells))
    # Comparison key: the knobs every source of the family has; a point whose other knobs are not
    # all 0 is compared only with itself.
    names = collections.defaultdict(dict)  # family -> source -> knob names
    for r in rows:
        names[r.get("family")].setdefault(r.get("source", "families"), set()).update(parse_knobs(r["knobs"]))
    key_of = {}
    for r in rows:
        common = set.intersection(*names[r.get("family")].values())
        kn = parse_knobs(r["knobs"])
        extra = {n: v for n, v in kn.items() if n not in common}
        key_of[r["knobs"]] = (r["knobs"] if any(extra.values()) else
                              "_".join(f"{n}{kn[n]}" for n in sorted(common)))
    t = {(p, c, key_of[k], s): r for (p, c, k, s), r in t.items()}
    print("geomean time ratio against the first source that ran the point (< 1: faster):")
    for k in sorted({kk for (_, _, kk, _) in t}):
        base = next((s for s in sources if any(kk == k and ss == s for (_, _, kk, ss) in t)), None)
        for s in sources:
            if s == base:
                continue
            pairs = [(t[(p, c, k, base)]["us"], t[(p, c, k, s)]["us"]) for (p, c, kk, ss) in t
                     if kk == k and ss == s and (p, c, k, base) in t]
            if pairs:
                g = math.exp(sum(math.log(b / a) for a, b in pairs) / len(pairs))
                print(f"  {k}: {s} / {base} = {g:.3f} over {len(pairs)} workloads")


if __name__ == "__main__":
    main()
