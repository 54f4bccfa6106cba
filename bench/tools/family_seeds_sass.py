#!/usr/bin/env python3
"""Per-seed SASS instruction counts of every CUDA family, without a GPU, and their comparison.

Each family's seeds (family.json "seeds"; a family without seeds uses its PROBES below) are
instantiated the way KernelArc does (problem defines, then knobs, prepended to the entry source;
the family folder and include/ on the include path), built to a cubin for sm_90a with the judge's
nvcc flags, and disassembled: per kernel, the instruction count (NOPs left out), registers and
spill bytes. The problem of a seed is the first FlashInfer-Bench problem (name order) the family
applies to on which the seed is a valid point.

  python3 bench/tools/family_seeds_sass.py record --out before.json [--root OLD_CHECKOUT] [--family NAME]
  python3 bench/tools/family_seeds_sass.py compare before.json after.json     # table; exit 1 if one grew
  python3 bench/tools/family_seeds_sass.py emit --outdir DIR [--root R]        # one .cu per seed (bench/tools/family_seeds_ab.sh)

CUOBJDUMP (or --cuobjdump) names a cuobjdump when the toolkit has none (a PyPI one or Triton's
works). Builds are cached under /tmp/ka_seeds_sass by source hash.
"""
import argparse
import hashlib
import itertools
import json
import os
import re
import shutil
import subprocess
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
PROBLEMS = [os.path.join(ROOT, "..", "shared", "problems", "sol-execbench", "FlashInfer-Bench"),
            os.path.join(ROOT, ".data", "problems", "sol-execbench", "FlashInfer-Bench"),
            "/work/shared/problems/sol-execbench/FlashInfer-Bench"]
# problem/problem.cpp's infer_op_type: the definition's op_type, else the first keyword in its name
OP_KINDS = ["fused_add_rmsnorm", "rmsnorm", "layernorm", "groupnorm", "gemm", "matmul", "gqa_paged_decode",
            "gqa_paged_prefill", "gqa_ragged_prefill", "mla_paged_decode", "mla_paged_prefill", "attention", "moe",
            "conv", "softmax", "rope", "embedding", "quant", "norm"]
# Points measured for families without seeds: (problem, knobs).
PROBES = {
    "rmsnorm_cuda": [("001_fused_add_rmsnorm_h2048", {"VEC": 8, "THREADS": 256, "ROWS": 1, "CACHE": 1, "STREAM": 0}),
                     ("025_rmsnorm_h4096", {"VEC": 8, "THREADS": 128, "ROWS": 2, "CACHE": 1, "STREAM": 1})],
}
DEFAULT_CUOBJDUMP = "/root/.pyenv/versions/3.11.7/lib/python3.11/site-packages/triton/backends/nvidia/bin/cuobjdump"


def problem_dirs():
    seen, out = set(), []
    for base in PROBLEMS:
        if not os.path.isdir(base):
            continue
        for n in sorted(os.listdir(base)):
            p = os.path.join(base, n)
            if n not in seen and os.path.isfile(os.path.join(p, "definition.json")):
                seen.add(n)
                out.append(p)
    return out


def const_axes(defn):
    return {k: v["value"] for k, v in defn["axes"].items() if v.get("type") == "const"}


def applies(fam, defn):
    at = fam["applies_to"]
    op = defn.get("op_type") or next((k for k in OP_KINDS if k in defn["name"]), "unknown")
    if op not in at["op_types"]:
        return False
    if at.get("dtypes") and any(t["dtype"] not in at["dtypes"] for t in defn["inputs"].values()):
        return False
    return all(a in const_axes(defn) for a in at.get("requires_axes", []))


def valid(fam, defn, knobs):
    env = dict(const_axes(defn))
    env.update(knobs)
    for c in fam.get("constraints", []):
        try:
            if not eval(c, {"__builtins__": {}}, env):
                return False
        except ZeroDivisionError:
            return False
    return True


def first_point(fam, defn):
    names = list(fam["knobs"])
    for vals in itertools.product(*(fam["knobs"][n] for n in names)):
        k = dict(zip(names, vals))
        if valid(fam, defn, k):
            return k
    return None


def problem_defines(fam, defn):
    out = {}
    for name, spec in fam.get("defines", {}).items():
        kind, _, body = spec.partition(":")
        if kind == "axis":
            out[name] = const_axes(defn)[body]
        elif kind == "has_input":
            out[name] = 1 if body in defn["inputs"] else 0
        else:
            rx, _, dflt = body.rpartition("|")
            m = re.search(rx, defn["reference"])
            out[name] = m.group(1) if m else dflt
    return out


def points(fam, fam_dir):
    """(problem dir, definition, knobs, label) per seed or probe."""
    probs = [(p, json.load(open(os.path.join(p, "definition.json")))) for p in problem_dirs()]
    out = []
    for i, s in enumerate(fam.get("seeds", [])):
        hit = next(((p, d) for p, d in probs if applies(fam, d) and valid(fam, d, s["knobs"])), None)
        if hit:
            out.append((hit[0], hit[1], s["knobs"], f"seed{i}"))
    for j, (pname, knobs) in enumerate(PROBES.get(fam["name"], [])):
        hit = next(((p, d) for p, d in probs if os.path.basename(p) == pname), None)
        if hit and applies(fam, hit[1]):
            k = knobs or first_point(fam, hit[1])
            if k and valid(fam, hit[1], k):
                out.append((hit[0], hit[1], k, f"probe{j}"))
    return out


def nvcc():
    return os.environ.get("KERNELARC_NVCC") or shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"


def expand_parts(text, fam, fam_dir, depth=0):
    """The family's folder headers ("sources") expanded where they are included, as
    src/families/family.cpp's instantiate does."""
    parts = set(fam.get("sources", []))
    out = []
    for line in text.split("\n"):
        m = re.match(r'\s*#\s*include\s*"([^"]+)"', line)
        if m and m.group(1) in parts and depth < 16:
            body = open(os.path.join(fam_dir, m.group(1))).read()
            out += [f"// ---- {m.group(1)} ----", expand_parts(body, fam, fam_dir, depth + 1).rstrip("\n"),
                    f"// ---- end of {m.group(1)} ----"]
        else:
            out.append(line)
    return "\n".join(out)


def point_text(fam, fam_dir, defn, knobs):
    """The entry source as KernelArc instantiates it (problem defines, then knobs, then the file
    with its parts expanded)."""
    text = "".join(f"#define KA_{n} {v}\n" for n, v in sorted(problem_defines(fam, defn).items()))
    text += "".join(f"#define KA_{n} {knobs[n]}\n" for n in fam["knobs"])
    return text + "\n" + expand_parts(open(os.path.join(fam_dir, fam["source"])).read(), fam, fam_dir)


def build(fam, fam_dir, root, defn, knobs, cuobjdump, cache):
    text = point_text(fam, fam_dir, defn, knobs) + "\nKA_ENTRY(" + fam.get("entry", "run") + ")\n"
    deps = "".join(open(os.path.join(fam_dir, f)).read() for f in sorted(os.listdir(fam_dir))
                   if os.path.isfile(os.path.join(fam_dir, f)))
    inc = os.path.join(root, "include")
    for dp, _, fs in sorted(os.walk(inc)):
        deps += "".join(open(os.path.join(dp, f)).read() for f in sorted(fs))
    h = hashlib.sha256((text + deps).encode()).hexdigest()[:20]
    base = os.path.join(cache, f"{fam['name']}_{h}")
    if os.path.exists(base + ".json") and "sass_sha" in open(base + ".json").read():
        return json.load(open(base + ".json"))
    open(base + ".cu", "w").write(text)
    cmd = [nvcc(), "-cubin", "-Xptxas", "-v", "-gencode=arch=compute_90a,code=sm_90a", "-O3",
           "-D__CUDA_NO_HALF_OPERATORS__", "-D__CUDA_NO_HALF_CONVERSIONS__", "-D__CUDA_NO_BFLOAT16_CONVERSIONS__",
           "-D__CUDA_NO_HALF2_OPERATORS__", "--expt-relaxed-constexpr", "-std=c++17", f"-I{fam_dir}", f"-I{inc}",
           "-o", base + ".cubin", base + ".cu"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        return {"error": r.stderr[-2000:]}
    regs, spills, cur = {}, {}, None
    for line in r.stderr.splitlines():
        m = re.search(r"Compiling entry function '(\w+)'|Function properties for (\w+)", line)
        if m:
            cur = m.group(1) or m.group(2)
        m = re.search(r"Used (\d+) registers", line)
        if m and cur:
            regs[cur] = int(m.group(1))
        m = re.search(r"(\d+) bytes spill stores", line)
        if m and cur:
            spills[cur] = int(m.group(1))
    sass = subprocess.run([cuobjdump, "-sass", base + ".cubin"], capture_output=True, text=True, check=True).stdout
    counts, text, fn = {}, {}, None
    for line in sass.splitlines():
        m = re.match(r"\s*Function : (\S+)", line)
        if m:
            fn = m.group(1)
            counts[fn], text[fn] = 0, []
            continue
        m = re.match(r"\s*/\*[0-9a-f]{4,6}\*/\s+(.*?);", line)
        if m and fn and not re.match(r"(@!?U?P\w+\s+)?NOP\b", m.group(1).strip()):
            counts[fn] += 1
            text[fn].append(m.group(1).strip())
    # sass_sha: the kernel's instruction text (addresses and NOPs left out): equal means the same code
    res = {"kernels": {k: {"instructions": n, "registers": regs.get(k), "spill_bytes": spills.get(k, 0),
                           "sass_sha": hashlib.sha256("\n".join(text[k]).encode()).hexdigest()[:16]}
                       for k, n in sorted(counts.items())}}
    json.dump(res, open(base + ".json", "w"))
    return res


def cuda_families(root, only):
    fams_dir = os.path.join(root, "families")
    for name in sorted(os.listdir(fams_dir)):
        d = os.path.join(fams_dir, name)
        if not os.path.isfile(os.path.join(d, "family.json")) or (only and name not in only):
            continue
        fam = json.load(open(os.path.join(d, "family.json")))
        if fam["target"] == "cuda":
            yield fam, d


def emit(a):
    """One source per seed (problem defines and knobs prepended: `kernelarc eval PROBLEM --solution
    FILE.cu` builds it as a family candidate; #include <kernelarc/...> resolves in the binary's
    include/) and a manifest line `key<TAB>problem dir<TAB>file`."""
    root = os.path.abspath(a.root or ROOT)
    os.makedirs(a.outdir, exist_ok=True)
    with open(os.path.join(a.outdir, "manifest.tsv"), "w") as man:
        for fam, d in cuda_families(root, a.family):
            for prob, defn, knobs, label in points(fam, d):
                path = os.path.join(a.outdir, f"{fam['name']}_{label}.cu")
                open(path, "w").write(point_text(fam, d, defn, knobs))
                man.write(f"{fam['name']}/{label}\t{prob}\t{path}\n")


def record(a):
    root = os.path.abspath(a.root or ROOT)
    os.makedirs(a.cache, exist_ok=True)
    out = {}
    for fam, d in cuda_families(root, a.family):
        for prob, defn, knobs, label in points(fam, d):
            res = build(fam, d, root, defn, knobs, a.cuobjdump, a.cache)
            key = f"{fam['name']}/{label}"
            out[key] = {"problem": os.path.basename(prob), "knobs": knobs, **res}
            tot = sum(k["instructions"] for k in res.get("kernels", {}).values())
            print(f"{key:28s} {os.path.basename(prob):48s} {'ERROR' if 'error' in res else tot}", flush=True)
    json.dump(out, open(a.out, "w"), indent=1, sort_keys=True)


def kernel_pairs(ko, kn):
    """(name, before, after) per kernel; by name, or by sorted order when the names changed (an
    anonymous namespace's mangled name carries the file's hash)."""
    if set(ko) == set(kn):
        return [(n, ko[n], kn[n]) for n in sorted(ko)]
    so, sn = sorted(ko), sorted(kn)
    return [(so[i] if i < len(so) else sn[i], ko[so[i]] if i < len(so) else None, kn[sn[i]] if i < len(sn) else None)
            for i in range(max(len(so), len(sn)))]


def compare(a):
    """Per seed: total instructions before and after, and how many kernels kept identical SASS
    (--kernels: a row per kernel). Exit 1 when a kernel's count grew or a seed no longer builds."""
    old, new = json.load(open(a.before)), json.load(open(a.after))
    worse = False
    if a.kernels:
        print("| seed | kernel | before | after | regs before/after | SASS |\n|---|---|---:|---:|---|---|")
    else:
        print("| seed | problem | kernels | instructions before | after | identical SASS |\n|---|---|---:|---:|---:|---|")
    for key in sorted(set(old) | set(new)):
        ko, kn = old.get(key, {}).get("kernels", {}), new.get(key, {}).get("kernels", {})
        if not ko or not kn:
            print(f"| {key} | (missing or failed: {'before' if not ko else 'after'}) | | | | |")
            worse |= bool(ko) and not kn
            continue
        pairs = kernel_pairs(ko, kn)
        same = 0
        for n, o, w in pairs:
            oi, ni = (o or {}).get("instructions"), (w or {}).get("instructions")
            worse |= bool(oi and ni and ni > oi) or (o is not None and w is None)
            so, sn = (o or {}).get("sass_sha"), (w or {}).get("sass_sha")
            same += bool(so and so == sn)
            if a.kernels:
                mark = "" if oi == ni else (" (lower)" if oi and ni and ni < oi else " (HIGHER)")
                sh = "identical" if so and so == sn else ("?" if not so or not sn else "differs")
                print(f"| {key} | {n} | {oi} | {ni}{mark} | {(o or {}).get('registers')}/{(w or {}).get('registers')} | {sh} |")
        if not a.kernels:
            to = sum((o or {}).get("instructions", 0) for _, o, _ in pairs)
            tn = sum((w or {}).get("instructions", 0) for _, _, w in pairs)
            have_sha = all((o or {}).get("sass_sha") for _, o, _ in pairs)
            print(f"| {key} | {new[key].get('problem', '')} | {len(pairs)} | {to} | {tn} | "
                  f"{f'{same}/{len(pairs)}' if have_sha else 'n/a (before without hashes)'} |")
    return 1 if worse else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("record")
    r.add_argument("--out", required=True)
    r.add_argument("--root", default="", help="the checkout whose families/ and include/ are built (default: this one)")
    r.add_argument("--family", action="append", default=[])
    r.add_argument("--cache", default="/tmp/ka_seeds_sass")
    r.add_argument("--cuobjdump", default=os.environ.get("CUOBJDUMP") or shutil.which("cuobjdump") or DEFAULT_CUOBJDUMP)
    e = sub.add_parser("emit")
    e.add_argument("--outdir", required=True)
    e.add_argument("--root", default="")
    e.add_argument("--family", action="append", default=[])
    c = sub.add_parser("compare")
    c.add_argument("before")
    c.add_argument("after")
    c.add_argument("--kernels", action="store_true", help="a row per kernel")
    a = ap.parse_args()
    if a.cmd == "record":
        return record(a)
    if a.cmd == "emit":
        return emit(a)
    return compare(a)


if __name__ == "__main__":
    sys.exit(main())
