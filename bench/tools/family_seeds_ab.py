#!/usr/bin/env python3
"""Summary of bench/tools/family_seeds_ab.sh: per seed, the verdicts of the old and the new source and
the geomean over workloads of new/old judged medians (per round and over all rounds: below 1 is
faster), then per workload the medians of every round. A seed is `ok` when both sides pass every
workload; `SLOWER` when its overall geomean is above 1 + NOISE (default 0.03).

  python3 bench/tools/family_seeds_ab.py OUT_DIR [--noise 0.03]
"""
import argparse
import collections
import glob
import json
import math
import os
import re


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("dir")
    ap.add_argument("--noise", type=float, default=0.03)
    a = ap.parse_args()
    runs = collections.defaultdict(dict)  # (seed, round) -> side -> {uuid: (verdict, median)}
    for path in sorted(glob.glob(os.path.join(a.dir, "*_r*.json"))):
        m = re.match(r"(old|new)_(.+)_r(\d+)\.json$", os.path.basename(path))
        if not m:
            continue
        rep = json.load(open(path))
        runs[(m.group(2), int(m.group(3)))][m.group(1)] = {
            w["uuid"]: (w["verdict"], (w.get("timing") or {}).get("median_us")) for w in rep.get("workloads", [])}
    seeds = sorted({s for s, _ in runs})
    print(f"{'seed':34s} {'old':>10s} {'new':>10s}  new/old per round            overall")
    rows = []
    for s in seeds:
        ratios_all, per_round, verdicts = [], [], {"old": set(), "new": set()}
        for (seed, r), sides in sorted(runs.items()):
            if seed != s:
                continue
            for side in ("old", "new"):
                verdicts[side] |= {v for v, _ in sides.get(side, {}).values()} or {"missing"}
            o, n = sides.get("old", {}), sides.get("new", {})
            rr = [math.log(n[u][1] / o[u][1]) for u in o if u in n and o[u][1] and n[u][1]]
            ratios_all += rr
            per_round.append(math.exp(sum(rr) / len(rr)) if rr else float("nan"))
            for u in sorted(o):
                rows.append((s, r, u, o[u], n.get(u)))
        overall = math.exp(sum(ratios_all) / len(ratios_all)) if ratios_all else float("nan")
        ok = verdicts["old"] == {"passed"} and verdicts["new"] == {"passed"}
        flag = "ok" if ok and not overall > 1 + a.noise else ("SLOWER" if ok else "FAILED")
        print(f"{s:34s} {','.join(sorted(verdicts['old'])):>10s} {','.join(sorted(verdicts['new'])):>10s}  "
              f"{' '.join(f'{x:.3f}' for x in per_round):28s} {overall:.3f}  {flag}")
    print("\nper workload: seed round uuid  old verdict/median_us  new verdict/median_us")
    for s, r, u, o, n in rows:
        print(f"{s:34s} r{r} {u[:8]}  {o[0]:>12s} {o[1] or 0:10.2f}  {(n or ('missing', 0))[0]:>12s} {(n or ('', 0))[1] or 0:10.2f}")


if __name__ == "__main__":
    main()
