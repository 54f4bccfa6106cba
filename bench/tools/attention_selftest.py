#!/usr/bin/env python3
"""Self-test of the attention families outside KernelArc's judge: the paged-decode ones
(families/gqa_decode_cuda, families/mla_decode_cuda: --family gqa | mla | both) and the causal
prefill ones (families/gqa_prefill_cuda on 014 paged and 016 ragged, families/mla_prefill_cuda on
019: --family gqa_prefill | mla_prefill | prefill; --family all for the four). It builds family points, calls them through the native ABI (ctypes, the
`kernelarc_entry` symbol that KA_ENTRY exports) on torch tensors, compares with the definition's own
reference code by SOL-ExecBench's rule, and (cuda mode) times them.

  --mode emu   (no GPU needed) builds each point with g++ against the CPU emulator
               include/kernelarc/emu/ka_emu.h (threads as fibers, warp collectives for
               ldmatrix / mma.sync / shuffles, cp.async with poisoned destinations) and runs small
               synthetic cases built to hit the corner cases: empty sequences (alone, first, last, at
               chunk boundaries), one-token sequences, many sequences per chunk, sequences cut by
               chunk boundaries, kv_indptr[0] > 0, a KV range of zero tokens, permuted page ids.
               Prefill cases: qo_len = 1, qo_len = kv_len, qo_len < kv_len, qo_len > kv_len (rows
               that see no key: zeros where the reference skips them, NaN where its softmax makes
               them NaN; a NaN matching a reference NaN counts as equal here only), kv_len = 0 and
               qo_len = 0 sequences, tile edges, many unequal sequences, leading rows before
               qo_indptr[0], row maxima that jump from tile to tile (ramp_scores: the online
               softmax's rescaling); compared with the definition's reference code (CPU).
  --mode compile  builds every valid point (or --points) with nvcc for sm_90a (-Xptxas -v) on this
               machine, no GPU needed, and reports the count, failures, seconds, registers and spills.
  --mode cuda  builds each point with nvcc (sm_90a on Hopper) and runs (a) the same synthetic cases
               and (b) the problem's real workloads (kv_indptr/kv_indices from the blobs, random
               q/k/v as SOL-ExecBench draws them), reporting correctness, median time over
               L2-flushed calls (CUDA events) and the effective KV bandwidth (each KV byte once);
               prefill: achieved TFLOP/s counting only the unmasked scores.

  --trace      (cuda, both decode families and mla prefill, with --time) builds with -DKA_TRACE
               and adds to each timed workload where one call's time goes: per-CTA entry / first
               data / last data / exit times (span, spread of the CTAs' exits, first-data latency,
               loop and loop per key tile, tail, SM busy fraction, gaps between the CTAs of an SM).

Points: --points seeds (the family.json seeds, what a campaign times first), --points default (decode: one representative per structural knob combination and per split
mode, and one per (WARPS, TILE, STAGES) of gqa_decode's HEADS=0; prefill: one per (WARPS, tile[, QTOK]) with the other knobs cycled over their domains, and
for gqa_prefill one per value of WS, plus two seeded random points),
--points all (every valid point), or explicit --knobs NAME=V,NAME=V (repeatable).
Exit status 0 when every check passed. One JSON line per (point, case) goes to --jsonl when given.
"""
from __future__ import annotations

import argparse
import ctypes
import hashlib
import itertools
import json
import math
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from family_seeds_sass import const_axes, problem_defines  # noqa: E402  (one copy of the define rules)

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
FAMILIES_DIR = os.path.join(ROOT, "families")  # --families: another copy, for an A/B in one run
EMU_HEADER = os.path.join(ROOT, "include", "kernelarc", "emu", "ka_emu.h")
TRACE_HEADER = os.path.join(ROOT, "include", "kernelarc", "trace.h")
FAMILIES = {
    "gqa": ("gqa_decode_cuda", ["012_gqa_paged_decode_h32_kv4_d128_ps1"]),
    "mla": ("mla_decode_cuda", ["018_mla_paged_decode_h16_ckv512_kpe64_ps1"]),
    # causal prefill: one GQA family serves the paged (014) and the ragged (016) definition
    "gqa_prefill": ("gqa_prefill_cuda", ["014_gqa_paged_prefill_causal_h32_kv4_d128_ps1",
                                         "016_gqa_ragged_prefill_causal_h32_kv4_d128"]),
    "mla_prefill": ("mla_prefill_cuda", ["019_mla_paged_prefill_causal_h16_ckv512_kpe64_ps1"]),
}
FAMILY_SETS = {"both": ["gqa", "mla"], "prefill": ["gqa_prefill", "mla_prefill"],
               "all": ["gqa", "mla", "gqa_prefill", "mla_prefill"]}
PREFILL = ("gqa_prefill", "mla_prefill")
DTYPE_CODE = {torch.float64: 0, torch.float32: 1, torch.float16: 2, torch.bfloat16: 3, torch.int64: 8, torch.int32: 9}


class TensorArg(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("dtype", ctypes.c_int32), ("ndim", ctypes.c_int32),
                ("shape", ctypes.c_int64 * 8), ("strides", ctypes.c_int64 * 8)]


def find_problem(name):
    """The problem's folder: .data/problems or ../shared/problems, else the repo's copy of its
    definition alone (tests/data/attention: enough for the emulator's synthetic cases)."""
    bases = [os.path.join(ROOT, ".data", "problems", "sol-execbench", "FlashInfer-Bench"),
             os.path.join(ROOT, "..", "shared", "problems", "sol-execbench", "FlashInfer-Bench"),
             os.path.join(ROOT, "tests", "data", "attention")]
    for base in bases:
        p = os.path.join(base, name)
        if os.path.isfile(os.path.join(p, "definition.json")):
            return os.path.abspath(p)
    raise SystemExit(f"problem {name} not found under .data/problems, ../shared/problems or tests/data/attention")


def synthetic_scale(prob):
    """The softmax scale of the synthetic cases: the first workload's, or 0.1 without workloads."""
    path = os.path.join(prob, "workload.jsonl")
    if not os.path.isfile(path):
        return 0.1
    return next((json.loads(l)["inputs"]["sm_scale"]["value"] for l in open(path)), 0.1)


# ── family points ──────────────────────────────────────────────────────────────────────────────
def load_family(fam):
    d = os.path.join(FAMILIES_DIR, fam)
    j = json.load(open(os.path.join(d, "family.json")))
    j["dir"] = d
    j["text"] = open(os.path.join(d, j["source"])).read()
    # what a build also reads: the family's other files (its parts) and the device layer
    dev = os.path.join(ROOT, "include", "kernelarc", "device")
    j["deps"] = "".join(open(os.path.join(b, f)).read() for b in (d, dev) for f in sorted(os.listdir(b))
                        if os.path.isfile(os.path.join(b, f)))
    return j


def valid_points(fam, defn):
    axes = const_axes(defn)
    names = list(fam["knobs"])
    out = []
    for vals in itertools.product(*(fam["knobs"][n] for n in names)):
        env = dict(axes)
        env.update(zip(names, vals))
        ok = True
        for c in fam.get("constraints", []):
            try:
                if not eval(c, {"__builtins__": {}}, env):
                    ok = False
                    break
            except ZeroDivisionError:
                ok = False
                break
        if ok:
            out.append(dict(zip(names, vals)))
    return out


def default_points(fam, defn, pts, extra=6, seed=7):
    """Per combination of the knobs that shape the device code (WARPS, TILE, STAGES): one split-KV
    point (smallest split, fused merge) and one no-split point; plus `extra` seeded random points.
    gqa_decode_cuda's HEADS=0 (all kv heads per CTA, a different load and finalize path) counts as
    structural too, with one point per (WARPS, TILE, STAGES): in turn split with the fused merge,
    no split, and split with the merge kernel, QK_SPLIT alternating."""
    import random
    structural = [k for k in fam["knobs"] if k in ("WARPS", "TILE", "STAGES", "HEADS")]
    chosen = []
    keys = []
    for p in pts:
        key = tuple(p[k] for k in structural)
        if key not in keys:
            keys.append(key)
    n_heads0 = 0
    for key in keys:
        same = [p for p in pts if tuple(p[k] for k in structural) == key]
        split = sorted((p for p in same if p["SPLIT_TOKENS"] > 0),
                       key=lambda p: (p["SPLIT_TOKENS"], -p["FUSED_MERGE"], p["WAVES"], p["NO_SPLIT_BELOW"]))
        nosplit = [p for p in same if p["SPLIT_TOKENS"] == 0]
        if same[0].get("HEADS", 1) == 0:
            kind, qk = n_heads0 % 3, n_heads0 % 2
            n_heads0 += 1
            cand = split if kind == 0 else nosplit if kind == 1 else [p for p in split if p["FUSED_MERGE"] == 0]
            cand = [p for p in cand if p.get("QK_SPLIT", 0) == qk] or cand
            chosen += cand[:1]
            continue
        chosen += split[:1] + nosplit[:1]
    rest = [p for p in pts if p not in chosen]
    random.Random(seed).shuffle(rest)
    return chosen + rest[:extra]


def default_points_prefill(fam, pts, extra=2, seed=7):
    """Prefill families: one point per (WARPS, tile) pair, the other knobs (STAGES, ORDER, Q_IN_SMEM,
    ...) cycled through their domains so that every value of every knob is covered; plus `extra`
    seeded random points."""
    import random
    names = list(fam["knobs"])
    primary = [n for n in names if n in ("WARPS", "KV_TILE", "QTOK")]
    others = [n for n in names if n not in primary]
    keys = []
    for p in pts:
        key = tuple(p[k] for k in primary)
        if key not in keys:
            keys.append(key)
    chosen = []
    # A family with a WS knob (warp specialisation, a different code path): one point per value of
    # WS per (WARPS, tile) pair, the other knobs cycled with an offset per WS value.
    ws_vals = fam["knobs"].get("WS", [None])
    for i, key in enumerate(keys):
        same = [p for p in pts if tuple(p[k] for k in primary) == key]
        for wv in ws_vals:
            cand = [p for p in same if wv is None or p["WS"] == wv]
            if not cand:
                continue
            want = {n: fam["knobs"][n][(i + j + (wv or 0)) % len(fam["knobs"][n])] for j, n in enumerate(others)}
            if wv is not None:
                want["WS"] = wv
            # the valid point closest to the wanted values (most knobs equal)
            best = max(cand, key=lambda p: sum(p[n] == want[n] for n in others))
            if best not in chosen:
                chosen.append(best)
    rest = [p for p in pts if p not in chosen]
    random.Random(seed).shuffle(rest)
    return chosen + rest[:extra]


def point_source(fam, defn, knobs):
    lines = [f"// generated by attention_selftest from family {fam['name']}"]
    for n, v in sorted(problem_defines(fam, defn).items()):
        lines.append(f"#define KA_{n} {v}")
    for n in fam["knobs"]:
        lines.append(f"#define KA_{n} {knobs[n]}")
    return "\n".join(lines) + "\n\n" + fam["text"] + "\nKA_ENTRY(run)\n"


def knobs_str(k):
    return "_".join(f"{n}{k[n]}" for n in sorted(k))


def nvcc_path():
    return os.environ.get("KERNELARC_NVCC") or (shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc")


def nvcc_flags(arch):
    """The judge's nvcc flags for one arch (code generation, defines, includes), without the output
    kind (-shared / -cubin) and files."""
    return [f"-gencode=arch=compute_{arch},code=sm_{arch}", "-O3", "-D__CUDA_NO_HALF_OPERATORS__",
            "-D__CUDA_NO_HALF_CONVERSIONS__", "-D__CUDA_NO_BFLOAT16_CONVERSIONS__", "-D__CUDA_NO_HALF2_OPERATORS__",
            "--expt-relaxed-constexpr", "-std=c++17", f"-I{os.path.join(ROOT, 'include')}"]


def build(fam, defn, knobs, mode, workdir, arch, verbose_ptxas=False):
    src = point_source(fam, defn, knobs)
    h = hashlib.sha256((mode + arch + os.environ.get("KA_NVCC_EXTRA", "") + src + fam.get("deps", "") + open(EMU_HEADER).read() +
                        open(TRACE_HEADER).read()).encode()).hexdigest()[:16]  # (a trace build includes it)
    so = os.path.join(workdir, f"{fam['name']}_{knobs_str(knobs)}_{mode}_{h}.so")
    if os.path.exists(so) and not verbose_ptxas:
        return so, 0.0
    cu = so[:-3] + (".cu" if mode == "cuda" else ".cpp")
    open(cu, "w").write(src)
    inc = os.path.join(ROOT, "include")
    if mode == "emu":
        cmd = ["g++", "-std=c++17", "-O1", "-g", "-shared", "-fPIC", "-fno-gnu-unique", f"-I{fam['dir']}", f"-I{inc}",
               f'-DKA_EMULATE="{EMU_HEADER}"',
               "-o", so, cu]
    else:
        cmd = [nvcc_path(), "-shared", "-Xcompiler", "-fPIC", "-cudart", "shared", *nvcc_flags(arch), f"-I{fam['dir']}",
               "-o", so, cu]
        if verbose_ptxas:
            cmd[1:1] = ["-Xptxas", "-v"]
        cmd[1:1] = os.environ.get("KA_NVCC_EXTRA", "").split()  # e.g. -lineinfo for compute-sanitizer
    t0 = time.time()
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"build failed ({' '.join(cmd)}):\n{r.stdout}\n{r.stderr}")
    if verbose_ptxas:
        return so, time.time() - t0, r.stdout + r.stderr
    return so, time.time() - t0


def compile_all(fam, defn, pts, workdir, jobs):
    """nvcc every point for sm_90a; returns rows with seconds, registers and spill bytes per kernel."""
    from concurrent.futures import ThreadPoolExecutor

    def one(k):
        try:
            _, sec, log = build(fam, defn, k, "cuda", workdir, "90a", verbose_ptxas=True)
        except RuntimeError as e:
            return {"knobs": knobs_str(k), "ok": False, "error": str(e)[-800:]}
        regs = [int(x) for x in re.findall(r"Used (\d+) registers", log)]
        spill = sum(int(x) for x in re.findall(r"(\d+) bytes spill stores", log))
        stack = max([int(x) for x in re.findall(r"(\d+) bytes stack frame", log)] or [0])
        return {"knobs": knobs_str(k), "ok": True, "seconds": round(sec, 1), "regs": regs, "spill_bytes": spill,
                "stack_bytes": stack}

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as ex:
        return list(ex.map(one, pts))


# ── inputs, reference, comparison ──────────────────────────────────────────────────────────────
def make_inputs(defn, axes_extra, indptr, indices, num_pages, device, gen, scale):
    axes = const_axes(defn)
    B = len(indptr) - 1
    axes.update({"batch_size": B, "num_pages": num_pages, "len_indptr": B + 1, "num_kv_indices": len(indices),
                 "total_kv": indptr[-1]})
    axes.update(axes_extra)
    qo_indptr = axes_extra.get("_qo_indptr")
    if qo_indptr is not None:
        axes["total_q"] = qo_indptr[-1]
    vals = {}
    for name, t in defn["inputs"].items():
        if t["shape"] is None:
            vals[name] = scale
            continue
        shape = [axes[s] for s in t["shape"]]
        if name == "kv_indptr":
            vals[name] = torch.tensor(indptr, dtype=torch.int32, device=device)
        elif name == "qo_indptr":
            vals[name] = torch.tensor(qo_indptr, dtype=torch.int32, device=device)
        elif name == "kv_indices":
            vals[name] = torch.tensor(indices, dtype=torch.int32, device=device).reshape(shape)
        else:
            vals[name] = torch.randn(shape, dtype=torch.bfloat16, generator=gen, device=device)
    outs = {}
    for name, t in defn["outputs"].items():
        shape = [axes[s] for s in t["shape"]]
        dt = getattr(torch, t["dtype"])
        outs[name] = torch.full(shape, float("nan"), dtype=dt, device=device)
    return vals, outs


def reference_fn(defn):
    ns = {}
    exec(compile(defn["reference"], "<reference>", "exec"), ns)
    return ns["run"]


def compare(out, ref, atol=1e-2, rtol=1e-2, ratio=0.99, allow_neg_inf=True, nan_equal=False):
    """SOL-ExecBench's rule. nan_equal (prefill self-test only): a NaN where the reference has a NaN
    counts as equal (the ragged/MLA references give NaN rows for queries that see no key; the judge
    refuses any NaN in a reference, so no real workload has such rows)."""
    x, y = out.float().flatten().cpu(), ref.float().flatten().cpu()
    both = (x == -math.inf) & (y == -math.inf) if allow_neg_inf else torch.zeros_like(x, dtype=torch.bool)
    if nan_equal:
        both = both | (torch.isnan(x) & torch.isnan(y))
    bad_x = ~torch.isfinite(x) & ~both
    bad_y = ~torch.isfinite(y) & ~both
    info = {"nan": int(torch.isnan(x).sum()), "nonfinite_mismatch": int(bad_x.sum() + bad_y.sum())}
    if bad_x.any() or bad_y.any():
        info.update(ok=False, max_abs=float("inf"), fails=int(bad_x.sum()))
        return info
    keep = ~both
    x, y = x[keep], y[keep]
    if x.numel() == 0:
        info.update(ok=True, max_abs=0.0, fails=0)
        return info
    if float(y.norm()) > 0 and float(x.norm()) == 0:
        info.update(ok=False, max_abs=float(y.norm()), fails=x.numel())
        return info
    e = (x - y).abs()
    fails = int((e > atol + rtol * y.abs()).sum())
    info.update(ok=(1 - fails / x.numel()) >= ratio, max_abs=float(e.max()), fails=fails, numel=x.numel())
    return info


def make_args(defn, vals, outs):
    """The native ABI's argument array for one call, and the scalars it points into (keep both)."""
    args = []
    keep = []
    for name, t in list(defn["inputs"].items()) + list(defn["outputs"].items()):
        a = TensorArg()
        v = vals[name] if name in vals else outs[name]
        if t["shape"] is None:
            buf = ctypes.c_float(float(v)) if t["dtype"].startswith("float") else ctypes.c_int64(int(v))
            keep.append(buf)
            a.data = ctypes.addressof(buf)
            a.dtype = 1 if t["dtype"].startswith("float") else 8
            a.ndim = -1
        else:
            a.data = v.data_ptr() if v.numel() > 0 else None
            a.dtype = DTYPE_CODE[v.dtype]
            a.ndim = v.dim()
            for i in range(v.dim()):
                a.shape[i] = v.shape[i]
                a.strides[i] = v.stride(i)
        args.append(a)
    return (TensorArg * len(args))(*args), keep


def call(lib, defn, vals, outs):
    arr, _keep = make_args(defn, vals, outs)
    rc = lib.kernelarc_entry(arr, len(arr))
    if rc != 0:
        raise RuntimeError(f"kernelarc_entry returned {rc}")


_REF_CACHE = {}


def run_case(lib, defn, ref, case, device, seed):
    gen = torch.Generator(device=device).manual_seed(seed)
    extra = {"_qo_indptr": case["qo_indptr"]} if "qo_indptr" in case else {}
    vals, outs = make_inputs(defn, extra, case["indptr"], case["indices"], case["num_pages"], device, gen, case["scale"])
    if case.get("k_ramp"):  # key rows scaled by 1 + k_ramp * (their row in the cache)
        for name in ("k", "k_cache", "ckv_cache", "kpe_cache"):
            if name in vals:
                t = vals[name]
                ramp = 1.0 + case["k_ramp"] * torch.arange(t.shape[0], device=device, dtype=torch.float32)
                vals[name] = (t.float() * ramp.view(-1, *([1] * (t.dim() - 1)))).to(t.dtype)
    before = {k: v.clone() for k, v in vals.items() if torch.is_tensor(v)}
    call(lib, defn, vals, outs)
    if device == "cuda":
        torch.cuda.synchronize()
    key = (defn["name"], case["name"], seed)
    if key not in _REF_CACHE:  # the same inputs for every point (seeded), so one reference run
        r = ref(*[vals[n] for n in defn["inputs"]])
        if isinstance(r, dict):
            r = [r[n] for n in defn["outputs"]]
        _REF_CACHE[key] = [t.clone() for t in r]
    r = _REF_CACHE[key]
    res = {}
    ok = True
    for (name, _), rv in zip(defn["outputs"].items(), r):
        c = compare(outs[name], rv, nan_equal="qo_indptr" in case)
        res[name] = c
        ok &= c["ok"]
        # a stricter look: every element within tolerance, empty sequences exact
        if c.get("fails", 0):
            res[name]["strict"] = False
    for k, v in before.items():
        if not torch.equal(v, vals[k]):
            ok = False
            res["input_written"] = k
    return ok, res, vals, outs


def synthetic_cases(fam_key, rng):
    """(name, lengths, extra) with lengths per sequence; pages drawn as a random injection into a
    larger page pool."""
    cases = [
        ("one_seq_7", [7]),
        ("one_seq_1", [1]),
        ("empty_only", [0]),
        ("all_empty_3", [0, 0, 0]),
        ("mixed_small", [0, 5, 33, 0, 1, 17]),
        ("empties_at_edges", [0, 64, 0, 0, 128, 0, 63, 65, 0]),
        ("long_and_short", [700, 1, 2, 3, 300, 0, 129]),
        ("many_short", [1, 2, 3, 1, 0, 2, 1, 4, 1, 1, 0, 3, 2, 1, 5, 1]),
        ("skewed_16", [rng.randint(1, 40) for _ in range(15)] + [900]),
        ("one_long", [1500]),
        ("aligned", [128, 128, 256, 64, 64, 1, 63, 0, 512, 0]),
        ("span_many", [0, 3000, 0]),
    ]
    out = []
    for name, lens in cases:
        out.append({"name": name, "lens": lens, "lead": 0})
    out.append({"name": "indptr0_gt_0", "lens": [9, 0, 40], "lead": 5})
    return out


def prefill_cases(fam_key, rng):
    """(qo_lens, kv_lens) per case, small enough for the emulator: qo_len = 1, qo_len = kv_len,
    qo_len < kv_len, qo_len > kv_len (rows that see no key), kv_len = 0 and qo_len = 0 sequences,
    sequences shorter than a tile, lengths at tile boundaries (8/16 query tokens, 32/64/128 keys),
    many unequal sequences, more sequences than a warp scans at once, and q/kv rows before
    qo_indptr[0] / kv_indptr[0]."""
    many_q = [rng.randint(0, 6) for _ in range(12)]
    many_kv = [q + rng.randint(0, 20) for q in many_q]
    cases = [
        ("q1_kv1", [1], [1]),
        ("q1_kv70", [1], [70]),
        ("square_9", [9], [9]),
        ("square_16", [16], [16]),
        ("square_33", [33], [33]),
        ("q_lt_kv", [20], [100]),
        ("q_gt_kv", [24], [5]),
        ("kv_empty", [5, 3, 2], [0, 4, 0]),
        ("q_empty", [0, 4, 0], [10, 4, 0]),
        ("tile_bounds", [8, 16, 32, 1], [64, 128, 32, 129]),
        ("many_unequal", many_q, many_kv),
        ("unequal", [40, 2, 17], [160, 2, 30]),
        ("long_kv", [3], [300]),
    ]
    out = [{"name": n, "qlens": q, "kvlens": k, "qlead": 0, "kvlead": 0} for n, q, k in cases]
    out.append({"name": "leading_rows", "qlens": [4, 6, 0], "kvlens": [7, 6, 3], "qlead": 3, "kvlead": 2})
    # Scores whose row maxima keep jumping from tile to tile (K rows scaled up along the cache, a 4x
    # softmax scale): the online softmax's rescaling of O, which random inputs reach only at a row's
    # first tile.
    out.append({"name": "ramp_scores", "qlens": [6, 40], "kvlens": [300, 90], "qlead": 0, "kvlead": 0,
                "k_ramp": 0.05, "scale_mult": 4.0})
    # More sequences than a warp (the kernels find a tile's sequence by a warp scan, 32 at a time),
    # some empty, with rows before qo_indptr[0].
    mq = [(0 if i % 7 == 3 else 1 + (i * 5) % 6) for i in range(40)]
    out.append({"name": "seqs_40", "qlens": mq, "kvlens": [q + (i * 3) % 9 for i, q in enumerate(mq)],
                "qlead": 2, "kvlead": 1})
    return out


def materialise_prefill(case, rng, scale):
    qo = [case.get("qlead", 0)]
    for L in case["qlens"]:
        qo.append(qo[-1] + L)
    kv = [case.get("kvlead", 0)]
    for L in case["kvlens"]:
        kv.append(kv[-1] + L)
    n = kv[-1]
    num_pages = max(1, n + 3 + rng.randint(0, 50))
    perm = list(range(num_pages))
    rng.shuffle(perm)
    return {"name": case["name"], "qo_indptr": qo, "indptr": kv, "indices": perm[:n], "num_pages": num_pages,
            "scale": scale * case.get("scale_mult", 1.0), "k_ramp": case.get("k_ramp", 0.0)}


def materialise(case, rng, scale):
    lens, lead = case["lens"], case.get("lead", 0)
    indptr = [lead]
    for L in lens:
        indptr.append(indptr[-1] + L)
    n = indptr[-1]
    num_pages = max(1, n + 3 + rng.randint(0, 50))
    perm = list(range(num_pages))
    rng.shuffle(perm)
    indices = perm[:n]
    return {"name": case["name"], "indptr": indptr, "indices": indices, "num_pages": num_pages, "scale": scale}


def workload_cases(prob, defn, limit_names=None):
    if not os.path.isfile(os.path.join(prob, "workload.jsonl")):
        raise SystemExit(f"{prob}: no workload.jsonl (workload cases need the problem folder with its blobs: "
                         ".data/problems or ../shared/problems)")
    from_blob = []
    for line in open(os.path.join(prob, "workload.jsonl")):
        w = json.loads(line)
        blob = os.path.join(prob, w["inputs"]["kv_indptr"]["path"])
        t = load_safetensors_int32(blob)
        scale = w["inputs"]["sm_scale"]["value"]
        c = {"name": w["uuid"][:8], "indptr": t["kv_indptr"], "indices": t.get("kv_indices", []),
             "num_pages": w["axes"].get("num_pages", 1), "scale": scale, "axes": w["axes"]}
        if "qo_indptr" in t:
            c["qo_indptr"] = t["qo_indptr"]
        from_blob.append(c)
    return from_blob


def load_safetensors_int32(path):
    import struct
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for k, v in header.items():
        if k == "__metadata__":
            continue
        a, b = v["data_offsets"]
        assert v["dtype"] == "I32"
        out[k] = list(struct.unpack(f"<{(b - a) // 4}i", data[a:b]))
    return out


def prefill_flops(fam_key, case):
    """FLOPs of the unmasked scores only: per visible (query, key) pair and head, 2*d_qk (Q.K) +
    2*d_v (P.V)."""
    qo, kv = case["qo_indptr"], case["indptr"]
    pairs = 0
    for b in range(len(qo) - 1):
        ql, kl = qo[b + 1] - qo[b], kv[b + 1] - kv[b]
        if ql <= 0 or kl <= 0:
            continue
        lo = max(1, kl - ql + 1)
        pairs += (kl + lo) * (kl - lo + 1) // 2
    if fam_key == "gqa_prefill":
        return pairs * 32 * (2 * 128 + 2 * 128)
    return pairs * 16 * (2 * 576 + 2 * 512)


def kv_bytes(fam_key, case):
    n = case["indptr"][-1] - case["indptr"][0]
    if fam_key == "gqa":
        return n * 4 * 128 * 2 * 2
    return n * (512 + 64) * 2


_FLUSH = []


def time_call(lib, defn, vals, outs, iters=30):
    """Median µs of `iters` calls (after 5 warm-up ones), each after zeroing a buffer of twice the L2
    size (as the judge flushes), measured with CUDA events around the call. The argument array is
    built once, outside the timed interval: building it in Python takes tens of µs, longer than the
    flush, and the GPU would sit idle inside the interval (a ~30 µs floor under every small case)."""
    if not _FLUSH:
        _FLUSH.append(torch.empty(int(torch.cuda.get_device_properties(0).L2_cache_size) * 2, dtype=torch.int8,
                                  device="cuda"))
    flush = _FLUSH[0]
    arr, _keep = make_args(defn, vals, outs)
    entry, n = lib.kernelarc_entry, len(arr)
    ts = []
    for i in range(iters + 5):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        flush.zero_()
        a.record()
        rc = entry(arr, n)
        b.record()
        b.synchronize()
        if rc != 0:
            raise RuntimeError(f"kernelarc_entry returned {rc}")
        if i >= 5:
            ts.append(a.elapsed_time(b) * 1000)
    return statistics.median(ts)


TRACE_CTAS, TRACE_SLOTS, TRACE_MARKS = 16384, 10, 64


def _q(xs, f):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(f * len(xs)))] if xs else 0.0


def trace_call(lib, defn, vals, outs):
    """One L2-flushed call of a KA_TRACE build (kernelarc/trace.h's ka_trace_read): where the
    call's time goes, per CTA, in µs from the earliest CTA's entry (%globaltimer) and, for durations
    within a CTA, from %clock64 at the SM clock measured here. Returns a summary dict:
    span (first entry to last exit), entry/exit spread (p50 / p90 / max of each CTA's offset),
    first-data latency (entry to tile 0's data ready), loop (tile 0 ready to the last tile ready),
    tail (last tile ready to exit), loop_per_tile (loop over the CTA's tile count), gap (between one
    CTA's exit and the next one's entry on the same SM), and sm_busy: the mean over SMs of the
    fraction of the span in which the SM held at least one CTA (a one-wave tail shows as exits
    spread and sm_busy < 1). A build that also leaves per-iteration marks (ka_trace_read_marks: the
    MLA prefill item stream) adds `iterations` (summarize_marks)."""
    flush = _FLUSH[0]  # time_call made it: a workload is traced after it is timed
    arr, _keep = make_args(defn, vals, outs)
    flush.zero_()
    torch.cuda.synchronize()
    if lib.kernelarc_entry(arr, len(arr)) != 0:
        raise RuntimeError("kernelarc_entry failed")
    torch.cuda.synchronize()
    buf = (ctypes.c_ulonglong * (TRACE_CTAS * TRACE_SLOTS))()
    lib.ka_trace_read.argtypes = [ctypes.POINTER(ctypes.c_ulonglong), ctypes.c_int]
    lib.ka_trace_read.restype = ctypes.c_int
    n = lib.ka_trace_read(buf, TRACE_CTAS)
    recs = [list(buf[i * TRACE_SLOTS:(i + 1) * TRACE_SLOTS]) for i in range(n)]
    out = summarize_trace(recs)
    if hasattr(lib, "ka_trace_read_marks") and out.get("ctas"):
        mbuf = (ctypes.c_ulonglong * (TRACE_CTAS * TRACE_MARKS))()
        lib.ka_trace_read_marks.argtypes = [ctypes.POINTER(ctypes.c_ulonglong), ctypes.c_int]
        lib.ka_trace_read_marks.restype = ctypes.c_int
        m = lib.ka_trace_read_marks(mbuf, TRACE_CTAS)
        it = summarize_marks([list(mbuf[i * TRACE_MARKS:(i + 1) * TRACE_MARKS]) for i in range(m)], out["sm_ghz"])
        if it:
            out["iterations"] = it
    return out


def summarize_marks(marks, ghz):
    """Per-iteration marks (kernelarc/trace.h's ka_trace::mark, %clock64 with a tag in bit 63): slot
    2g is warpgroup 0 at the start of iteration g (tagged on an item's first tile), slot 2g+1 the O
    warpgroups at their mid-iteration barrier (tagged when they wrote an item's output there).
    Returns, in µs (p50 / p90 / max over all CTAs' iterations), the length of an iteration (its
    start to the next one's) for an item's first tile, for the iteration that writes an item's
    output, and for the others, and the O warpgroups' time from the start to their barrier in the
    latter two kinds; {} when no CTA left marks."""
    tag = 1 << 63
    kinds = {"item_first": [], "o_write": [], "other": []}
    to_b = {"o_write": [], "other": []}
    for row in marks:
        g = 0
        while 2 * g + 2 < len(row) and row[2 * g] and row[2 * g + 2]:
            a, a_next, b = row[2 * g], row[2 * g + 2], row[2 * g + 1]
            start, nxt = a & ~tag, a_next & ~tag
            kind = "o_write" if b & tag else "item_first" if a & tag else "other"
            kinds[kind].append((nxt - start) / ghz / 1000.0)
            if b and kind != "item_first":
                to_b[kind].append(((b & ~tag) - start) / ghz / 1000.0)
            g += 1
    if not any(kinds.values()):
        return {}
    q3 = lambda xs: [round(_q(xs, 0.5), 2), round(_q(xs, 0.9), 2), round(max(xs), 2)] if xs else []  # noqa: E731
    return {"n": {k: len(v) for k, v in kinds.items()}, **{f"{k}_us": q3(v) for k, v in kinds.items()},
            **{f"o_to_b_{k}_us": q3(v) for k, v in to_b.items()}}


def summarize_trace(recs):
    """trace_call's summary of per-CTA records [entry gt, ck, tile-0 gt, ck, last-tile gt, ck, exit gt, ck, sm, tiles]."""
    recs = [r for r in recs if r[0] and r[6]]
    if not recs:
        return {"ctas": 0}
    t0 = min(r[0] for r in recs)
    t1 = max(r[6] for r in recs)
    span_ns = max(1, t1 - t0)
    # SM clock (cycles per ns) from the CTAs' own entry-to-exit intervals in both clocks.
    ratios = [(r[7] - r[1]) / (r[6] - r[0]) for r in recs if r[6] > r[0] + 2000]
    ghz = statistics.median(ratios) if ratios else 1.98
    cyc = lambda a, b: (b - a) / ghz / 1000.0  # noqa: E731  cycles -> us
    first = [cyc(r[1], r[3]) for r in recs if r[3]]
    loop = [cyc(r[3], r[5]) for r in recs if r[3] and r[5]]
    tail = [cyc(r[5], r[7]) for r in recs if r[5]]
    busy = {}
    for r in recs:
        busy.setdefault(r[8], []).append((r[0], r[6]))
    frac, gaps = [], []
    for iv in busy.values():
        iv.sort()
        gaps += [(b[0] - a[1]) / 1000 for a, b in zip(iv, iv[1:]) if b[0] >= a[1]]  # one CTA after another
        cover, cur_s, cur_e = 0, None, None
        for a, b in iv:
            if cur_e is None or a > cur_e:
                if cur_e is not None:
                    cover += cur_e - cur_s
                cur_s, cur_e = a, b
            else:
                cur_e = max(cur_e, b)
        cover += cur_e - cur_s
        frac.append(cover / span_ns)
    q3 = lambda xs: [round(_q(xs, 0.5), 2), round(_q(xs, 0.9), 2), round(max(xs), 2)] if xs else []  # noqa: E731
    return {"ctas": len(recs), "sms": len(busy), "span_us": round(span_ns / 1000, 2), "sm_ghz": round(ghz, 3),
            "entry_us": q3([(r[0] - t0) / 1000 for r in recs]), "exit_us": q3([(r[6] - t0) / 1000 for r in recs]),
            "first_data_us": q3(first), "loop_us": q3(loop), "tail_us": q3(tail),
            "tiles": q3([r[9] for r in recs]), "sm_busy": round(sum(frac) / len(frac), 3),
            "gap_us": q3(gaps), "loop_per_tile_us": q3([cyc(r[3], r[5]) / r[9] for r in recs if r[3] and r[5] and r[9]])}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mode", choices=["emu", "cuda", "compile"], required=True)
    ap.add_argument("--family", choices=["gqa", "mla", "both", "gqa_prefill", "mla_prefill", "prefill", "all"],
                    default="both", help="both: the two decode families (as before); prefill: the two prefill ones")
    ap.add_argument("--points", default="default", choices=["default", "all", "first", "seeds"],
                    help="default | all | first | seeds (the family.json seeds that are valid points of the problem)")
    ap.add_argument("--knobs", action="append", default=[], help="NAME=V,NAME=V (repeatable); overrides --points")
    ap.add_argument("--cases", default="synthetic", help="synthetic | workloads | both (workloads: cuda only)")
    ap.add_argument("--only", default="", help="comma list of case names to run")
    ap.add_argument("--workdir", default=os.path.join(tempfile.gettempdir(), "ka_attn_selftest"))
    ap.add_argument("--jsonl", default="")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--sms", default="3,8", help="emu: SM counts to emulate (comma list)")
    ap.add_argument("--time", action="store_true", help="cuda: time the workloads")
    ap.add_argument("--trace", action="store_true",
                    help="cuda, both decode families and mla prefill: build with -DKA_TRACE and add per-CTA timings of one call to "
                         "each timed workload (where the time goes: span, entry/exit spread, first-data latency, loop, "
                         "tail, SM busy fraction, gaps; see trace_call)")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--families", default="",
                    help="build the family sources from this folder instead of the repo's families/ (e.g. an older "
                         "copy, `git archive HEAD~1 families | tar x -C DIR`, to compare two versions in one run)")
    args = ap.parse_args()
    if args.families:
        global FAMILIES_DIR
        FAMILIES_DIR = os.path.abspath(os.path.join(args.families, "families")
                                       if os.path.isdir(os.path.join(args.families, "families")) else args.families)
    if args.trace:  # a diagnostic build (own cache key: KA_NVCC_EXTRA is part of the build hash)
        os.environ["KA_NVCC_EXTRA"] = (os.environ.get("KA_NVCC_EXTRA", "") + " -DKA_TRACE").strip()

    import random
    os.makedirs(args.workdir, exist_ok=True)
    device = "cuda" if args.mode == "cuda" else "cpu"
    arch = "90a"
    if args.mode == "cuda":
        major, minor = torch.cuda.get_device_capability(0)
        arch = f"{major}{minor}" + ("a" if major >= 9 else "")
    log = open(args.jsonl, "a") if args.jsonl else None
    fams = FAMILY_SETS.get(args.family, [args.family])
    failures = 0
    rows = []
    for fk, (fname, pname) in [(fk, (FAMILIES[fk][0], pn)) for fk in fams for pn in FAMILIES[fk][1]]:
        if not os.path.isdir(os.path.join(FAMILIES_DIR, fname)):
            print(f"[skip] family {fname} missing")
            continue
        fam = load_family(fname)
        prob = find_problem(pname)
        defn = json.load(open(os.path.join(prob, "definition.json")))
        ref = reference_fn(defn)
        pts = valid_points(fam, defn)
        if args.knobs:
            sel = []
            # Knobs not named take the first valid point's values; a knob added later keeps its old
            # meaning by default (gqa_decode_cuda's HEADS=1: lists written before HEADS stay valid).
            base = next((p for p in pts if p.get("HEADS", 1) == 1), pts[0])
            for ks in args.knobs:
                k = dict(base)
                for kv in ks.split(","):
                    n, v = kv.split("=")
                    k[n] = int(v)
                if k not in pts:
                    raise SystemExit(f"{fname}: {k} is not a valid point")
                sel.append(k)
            pts = sel
        elif args.points == "default":
            pts = default_points_prefill(fam, pts) if fk in PREFILL else default_points(fam, defn, pts)
        elif args.points == "first":
            pts = pts[:1]
        elif args.points == "seeds":
            base = next((p for p in pts if p.get("HEADS", 1) == 1), pts[0])
            seeds = [{**base, **sd["knobs"]} for sd in fam.get("seeds", [])]
            pts = [k for i, k in enumerate(seeds) if k in pts and k not in seeds[:i]]
        print(f"== {fname} on {pname}: {len(pts)} point(s), mode {args.mode}", flush=True)
        if args.mode == "compile":
            t0 = time.time()
            res = compile_all(fam, defn, pts, args.workdir, args.jobs)
            wall = time.time() - t0
            bad = [r for r in res if not r["ok"]]
            spills = [r for r in res if r["ok"] and (r["spill_bytes"] or r["stack_bytes"])]
            regs = [max(r["regs"]) for r in res if r["ok"] and r["regs"]]
            for r in res:
                if log:
                    log.write(json.dumps({"family": fname, **r}) + "\n")
                if not r["ok"] or r["spill_bytes"] or r["stack_bytes"]:
                    print(f"  {'FAIL' if not r['ok'] else 'SPILL'} {r['knobs']}: {r.get('error', r)}")
            print(f"  {len(res)} points, {len(res) - len(bad)} compiled for sm_90a, {len(bad)} failed, "
                  f"{len(spills)} with spills/stack; registers {min(regs or [0])}..{max(regs or [0])}; "
                  f"{wall:.0f} s wall with {args.jobs} jobs ({sum(r.get('seconds', 0) for r in res):.0f} s of nvcc)")
            failures += len(bad) + len(spills)
            rows += res
            continue
        # Build in parallel.
        from concurrent.futures import ThreadPoolExecutor
        with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as ex:
            builds = list(ex.map(lambda k: build(fam, defn, k, args.mode, args.workdir, arch), pts))
        rng = random.Random(args.seed)
        cases = []
        if args.cases in ("synthetic", "both"):
            scale = synthetic_scale(prob)
            if fk in PREFILL:
                cases += [materialise_prefill(c, rng, scale) for c in prefill_cases(fk, rng)]
            else:
                cases += [materialise(c, rng, scale) for c in synthetic_cases(fk, rng)]
        if args.cases in ("workloads", "both"):
            cases += workload_cases(prob, defn)  # (emu: select small ones with --only)
        if args.only:
            names = set(args.only.split(","))
            cases = [c for c in cases if c["name"] in names]
        sms_all = [int(s) for s in args.sms.split(",")] if args.mode == "emu" else [0]
        for knobs, (so, bt) in zip(pts, builds):
            lib = ctypes.CDLL(so)
            lib.kernelarc_entry.argtypes = [ctypes.POINTER(TensorArg), ctypes.c_int]
            lib.kernelarc_entry.restype = ctypes.c_int
            # A prefill point sizes its grid from the SM count only when persistent (PERSIST >= 1).
            sms_list = sms_all if fk not in PREFILL or knobs.get("PERSIST", 0) >= 1 else sms_all[:1]
            for sms in sms_list:
                if args.mode == "emu":
                    # The emulator reads these at each launch (SM count, occupancy); a new value
                    # needs a fresh library (the family caches them), so copy the .so per setting.
                    so2 = so[:-3] + f"_sms{sms}.so"
                    if not os.path.exists(so2):
                        shutil.copy(so, so2)
                    os.environ["KA_EMU_SMS"] = str(sms)
                    os.environ["KA_EMU_OCC"] = "2"
                    lib = ctypes.CDLL(so2)
                    lib.kernelarc_entry.argtypes = [ctypes.POINTER(TensorArg), ctypes.c_int]
                    lib.kernelarc_entry.restype = ctypes.c_int
                for ci, case in enumerate(cases):
                    t0 = time.time()
                    try:
                        ok, res, vals, outs = run_case(lib, defn, ref, case, device, args.seed + ci)
                    except Exception as e:  # noqa: BLE001
                        ok, res, vals, outs = False, {"error": str(e)[:500]}, None, None
                    row = {"family": fname, "problem": pname[:3], "knobs": knobs_str(knobs), "case": case["name"], "sms": sms, "ok": ok,
                           "wall_s": round(time.time() - t0, 2), "source": args.families or "families"}
                    for name in defn["outputs"]:
                        if name in res:
                            row[f"{name}_max_abs"] = res[name].get("max_abs")
                            row[f"{name}_fails"] = res[name].get("fails")
                    if "error" in res:
                        row["error"] = res["error"]
                    if "input_written" in res:
                        row["input_written"] = res["input_written"]
                    if ok and args.mode == "cuda" and args.time and "axes" in case:
                        us = time_call(lib, defn, vals, outs)
                        row["us"] = round(us, 2)
                        if args.trace and hasattr(lib, "ka_trace_read"):
                            row["trace"] = trace_call(lib, defn, vals, outs)
                        if fk in PREFILL:
                            row["gflop"] = round(prefill_flops(fk, case) / 1e9, 3)
                            row["tflops"] = round(prefill_flops(fk, case) / (us * 1e-6) / 1e12, 2)
                        else:
                            row["kv_mb"] = round(kv_bytes(fk, case) / 1e6, 1)
                            row["tb_s"] = round(kv_bytes(fk, case) / (us * 1e-6) / 1e12, 3)
                    failures += 0 if ok else 1
                    rows.append(row)
                    if log:
                        log.write(json.dumps(row) + "\n")
                        log.flush()
                    flag = "ok  " if ok else "FAIL"
                    extra = " ".join(f"{k}={row[k]}" for k in row
                                     if k.endswith("max_abs") or k in ("us", "tb_s", "tflops", "error", "input_written", "trace"))
                    print(f"  [{flag}] {pname[:3]} {knobs_str(knobs)} sms={sms} {case['name']}: {extra} ({row['wall_s']} s)", flush=True)
    print(f"== {len(rows)} checks, {failures} failed")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
