#!/usr/bin/env python3
"""Summarises the tables `kernelarc sol` printed (one file per problem, as bench/regress/sol.sh writes
them): per problem the workloads, how many have every local column (FLOPs, bytes, limiting term,
SOL, eager, compile) filled, the limiting terms, and the median ratios eager/SOL and compile/eager.
Usage: sol_summary.py DIR"""
import os
import statistics
import sys


def rows_of(path):
    rows, seen_header = [], False
    for line in open(path):
        t = line.split()
        if not t:
            continue
        if t[0] == "workload":
            seen_header = True
            continue
        if seen_header and len(t) == 9:
            rows.append(t)
        elif seen_header and "count failed" in line:
            rows.append(None)
    return rows


def num(s):
    return None if s == "-" else float(s)


def main():
    d = sys.argv[1]
    for name in sorted(f for f in os.listdir(d) if f.endswith(".txt") and f[:3].isdigit()):
        rows = rows_of(os.path.join(d, name))
        full = [r for r in rows if r and all(x != "-" for x in r[1:7])]
        limits = sorted({r[3] for r in rows if r})
        sol_ratio = [num(r[5]) / num(r[4]) for r in full if num(r[4])]
        comp_ratio = [num(r[6]) / num(r[5]) for r in full if num(r[5])]
        med = lambda v: f"{statistics.median(v):.2f}" if v else "-"
        print(f"{name[:-4]}: {len(rows)} workloads, {len(full)} with every column; limiting {','.join(limits) or '-'}; "
              f"median eager/SOL {med(sol_ratio)}, compile/eager {med(comp_ratio)}")


if __name__ == "__main__":
    main()
