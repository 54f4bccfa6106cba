#!/usr/bin/env python3
"""The attention figures from a `kernelarc optimize` campaign store over the attention problems (012 and
018 paged decode, 014 / 016 / 019 causal prefill): per problem the best candidate (the campaign's
leaderboard, as bench/tools/gemm_campaign_summary.py reads it), and for it
  - correctness: workloads passed of those measured (the judge's verdicts, lse included);
  - decode: on the workloads with more than 32 MB of KV (each KV byte counted once: tokens in the
    page table x KV width), the achieved TB/s and its share of the measured HBM bandwidth given as
    --copy-tb-s (a device copy, what bench/tools/copy_bandwidth.py measures) and, if given, --read-tb-s
    (a read-only stream, e.g. bench/tools/gather_bw.cu's sequential read); with --read-after-flush (the
    JSON lines of bench/tools/read_after_flush.py, measured on the same GPU) also the time a plain read of
    the same bytes takes right after the judge's L2 flush (interpolated between the measured sizes):
    the ceiling the timing protocol leaves at that size, whatever the kernel;
  - prefill: on the workloads with more than 50 GFLOP of unmasked work (only the visible query-key
    pairs), the achieved TFLOP/s and its share of --dense-tflops (default 760, the H200's measured
    bf16 dense rate; bench/regress/campaign.sh passes what bench/tools/copy_bandwidth.py measured in the run);
  - against the reference: the workloads where the best is not faster than PyTorch eager
    (reference_us) or, when the campaign ran with --time-compile, torch.compile (compile_us). A
    campaign run without --time-compile (the compiled references of these problems take minutes to
    time) can take the compiled timings from a `kernelarc sol` cache archive instead, --sol-cache
    (e.g. .data/sol-cache.tgz, bench/lib.sh: the oracle's timings-only entries, matched by definition and
    workload uuid); the summary says where each baseline came from. The judge itself takes both
    timings from such a cache, extracted into its cache folder, where they were measured on a GPU of
    the same name (Oracle::borrow_timings_for; measurements marked "reference_timed"), and then
    counts their compile timings as the campaign's.
KV sizes and FLOPs come from the workloads' page tables (bench/tools/attention_selftest.py's readers).
Usage: attention_campaign_summary.py CAMPAIGN_DIR --copy-tb-s X [--read-tb-s Y] [--dense-tflops 760]
                                     [--sol-cache .data/sol-cache.tgz] [--read-after-flush FILE]"""
import argparse
import json
import os
import sqlite3
import sys
import tarfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import attention_selftest as at  # noqa: E402  (the workload readers; it imports torch)
from gemm_campaign_summary import leaderboard  # noqa: E402


def sol_cache_compile_us(path):
    """{(definition, uuid): torch.compile'd reference in us} from a sol cache archive (oracle-timings/*/meta.json)."""
    out = {}
    with tarfile.open(path) as tf:
        for m in tf.getmembers():
            if not (m.isfile() and m.name.startswith("oracle-timings/") and m.name.endswith("/meta.json")):
                continue
            meta = json.load(tf.extractfile(m))
            if meta.get("compile_ms"):
                out[(meta.get("definition"), meta.get("uuid"))] = 1000.0 * meta["compile_ms"]
    return out


KINDS = {"012_": "gqa", "018_": "mla", "014_": "gqa_prefill", "016_": "gqa_prefill", "019_": "mla_prefill"}


def read_after_flush_us(rows, mb, key="read_zero_us"):
    """A plain read's device time (us) for mb MB right after the judge's flush (key rows_zero_us: the
    same bytes as random rows), linear between the two nearest measured sizes of
    bench/tools/read_after_flush.py's rows; None outside the measured range."""
    pts = sorted((r["mb"], r[key]) for r in rows if r.get(key))
    for (m0, t0), (m1, t1) in zip(pts, pts[1:]):
        if m0 <= mb <= m1:
            return t0 if m1 == m0 else t0 + (t1 - t0) * (mb - m0) / (m1 - m0)
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("campaign", help="campaign folder (campaign.db, per-problem leaderboard.json)")
    ap.add_argument("--copy-tb-s", type=float, required=True)
    ap.add_argument("--read-tb-s", type=float)
    ap.add_argument("--dense-tflops", type=float, default=760.0)
    ap.add_argument("--sol-cache", help="sol cache archive whose torch.compile timings stand in where the campaign has none")
    ap.add_argument("--read-after-flush", help="bench/tools/read_after_flush.py's JSON lines (same GPU): per decode workload, "
                    "the time a plain read of its KV bytes takes after the judge's flush")
    a = ap.parse_args()
    raf = [json.loads(l) for l in open(a.read_after_flush) if l.strip()] if a.read_after_flush else []
    cached = sol_cache_compile_us(a.sol_cache) if a.sol_cache and os.path.isfile(a.sol_cache) else {}
    db = sqlite3.connect(os.path.join(a.campaign, "campaign.db"))
    probs = [p for (p,) in db.execute("SELECT DISTINCT problem FROM candidates ORDER BY problem")]
    for prob in probs:
        kind = next((k for pre, k in KINDS.items() if prob.startswith(pre)), None)
        if kind is None:
            continue
        n_cands = db.execute("SELECT COUNT(*) FROM candidates WHERE problem = ?", (prob,)).fetchone()[0]
        lb = leaderboard(a.campaign, db, prob)
        if not lb or lb[0]["passed_workloads"] != lb[0]["workloads"] or lb[0]["workloads"] == 0:
            print(f"{prob}: {n_cands} candidates, none passed every workload")
            continue
        h, name, g = lb[0]["candidate"], lb[0].get("name") or lb[0]["candidate"], lb[0]["geomean_us"]
        rows = db.execute("SELECT workload, verdict, median_us, reference_us, extra FROM measurements WHERE candidate = ?",
                          (h,)).fetchall()
        cases = {c["name"]: c for c in at.workload_cases(at.find_problem(prob), None)}
        total = len(cases)
        print(f"{prob}: {n_cands} candidates; best {name}, geomean {g:.2f} us; passed {len(rows)}/{total} workloads")
        slower = []
        figs = []
        earlier = "an earlier run on this GPU model (the judge's oracle-timings cache)"
        comp_src = {"campaign": 0, earlier: 0, "sol cache": 0, "none": 0}
        eager_src = {"timed in the campaign": 0, earlier: 0}
        for wl, _, t, ref, extra in rows:
            extra = json.loads(extra or "null") or {}
            eager_src[earlier if extra.get("reference_timed") else "timed in the campaign"] += 1
            comp = extra.get("compile_us") or 0
            if comp:
                comp_src[earlier if extra.get("reference_timed") else "campaign"] += 1
            else:
                comp = cached.get((prob, wl), 0)
                comp_src["sol cache" if comp else "none"] += 1
            base = min(x for x in (ref, comp) if x > 0) if (ref > 0 or comp > 0) else 0
            if base and t >= base:
                slower.append(f"{wl[:8]} {t:.1f} vs {base:.1f} us")
            c = cases.get(wl[:8])
            if c is None:
                continue
            if kind in ("gqa", "mla"):
                b = at.kv_bytes(kind, c)
                if b > 32e6:
                    figs.append((b / (t * 1e-6) / 1e12, wl[:8], b / 1e6, t))
            else:
                f = at.prefill_flops(kind, c)
                if f > 50e9:
                    figs.append((f / (t * 1e-6) / 1e12, wl[:8], f / 1e9, t))
        if kind in ("gqa", "mla"):
            figs.sort()
            print(f"  decode, {len(figs)} workloads with > 32 MB of KV:")
            for bw, wl, mb, t in figs:
                read = f", {100 * bw / a.read_tb_s:.0f}% of read {a.read_tb_s}" if a.read_tb_s else ""
                floor = read_after_flush_us(raf, mb) if raf else None
                if floor:
                    read += (f"; a plain read of these bytes after the flush: {floor:.1f} us = "
                             f"{100 * mb * 1e6 / (floor * 1e-6) / 1e12 / a.copy_tb_s:.0f}% of copy")
                rows_floor = read_after_flush_us(raf, mb, "rows_zero_us") if raf else None
                if rows_floor:
                    read += (f", as random {raf[0].get('row_bytes')}-byte rows: {rows_floor:.1f} us = "
                             f"{100 * mb * 1e6 / (rows_floor * 1e-6) / 1e12 / a.copy_tb_s:.0f}%")
                print(f"    {wl}: {mb:8.1f} MB in {t:9.1f} us = {bw:.2f} TB/s = {100 * bw / a.copy_tb_s:.0f}% of copy {a.copy_tb_s:.2f}{read}")
        else:
            figs.sort()
            print(f"  prefill, {len(figs)} workloads with > 50 GFLOP unmasked:")
            for tf, wl, gf, t in figs:
                print(f"    {wl}: {gf:9.1f} GFLOP in {t:10.1f} us = {tf:6.1f} TFLOP/s = {100 * tf / a.dense_tflops:.0f}% of {a.dense_tflops:g}")
        print("  baselines: eager " + ", ".join(f"{k} ({v})" for k, v in eager_src.items() if v) +
              "; torch.compile from " + ", ".join(f"{k} ({v})" for k, v in comp_src.items() if v))
        print(f"  not faster than the faster of eager and torch.compile: {len(slower)}" +
              ("" if not slower else " (" + "; ".join(slower[:8]) + (" ..." if len(slower) > 8 else "") + ")"))


if __name__ == "__main__":
    main()
