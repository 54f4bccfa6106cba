#!/usr/bin/env python3
"""Top SASS instructions by warp-stall samples, from `ncu -i REPORT --page source --csv
--print-source sass` (the CSV on stdin or in the file given): the instructions that gather most of
the "Warp Stall Sampling (All Samples)" column, with their share, until 90% of the samples (at most
--top rows), and the per-reason totals where the CSV has per-reason columns. Usage:
ncu_sass_top.py FILE [--top N]"""
import csv
import sys


def num(s):
    try:
        return float(s.replace(",", ""))
    except (AttributeError, ValueError):
        return 0.0


def main():
    args = sys.argv[1:]
    top = 25
    if "--top" in args:
        i = args.index("--top")
        top = int(args[i + 1])
        del args[i:i + 2]
    f = open(args[0], newline="") if args else sys.stdin
    lines = f.read().splitlines()
    # ncu prints a "Kernel Name" line (and any banner) before the table: start at its header.
    start = next((i for i, l in enumerate(lines) if l.startswith('"Address"')), None)
    if start is None:
        print("no table header (\"Address\", ...) found")
        return 1
    rows = list(csv.DictReader(lines[start:]))
    if not rows:
        print("no rows (was the report exported with --page source --csv --print-source sass?)")
        return 1
    cols = [c for c in rows[0].keys() if c]
    samp = next((c for c in cols if "Stall Sampling (All" in c), None)
    src = next((c for c in cols if c.strip() == "Source"), None)
    addr = next((c for c in cols if "Address" in c), None)
    if not samp or not src:
        print("columns not found; have:", cols)
        return 1
    total = sum(num(r[samp]) for r in rows) or 1.0
    print(f"{len(rows)} instructions, {total:.0f} stall samples")
    acc = 0.0
    for r in sorted(rows, key=lambda r: -num(r[samp]))[:top]:
        s = num(r[samp])
        acc += s
        print(f"{100 * s / total:5.1f}%  {r.get(addr, '')}  {r[src].strip()[:90]}")
        if acc / total >= 0.9:
            break
    reasons = [c for c in cols if c.startswith("stall_") or "Stall Reason" in c]
    for c in sorted(reasons, key=lambda c: -sum(num(r[c]) for r in rows))[:12]:
        print(f"  {c}: {sum(num(r[c]) for r in rows):.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
