#!/usr/bin/env python3
"""SASS of one attention-family point, without a GPU: instantiates the point as
bench/tools/attention_selftest.py does (problem defines + knobs prepended to the family source), builds a
cubin with nvcc for sm_90a and the judge's flags, prints ptxas's registers and spills, the kernel's
instruction count, its backward branches (the loops: `from -> to`), and an opcode histogram of the
whole kernel or of an address range (--range START END, hex, minus --skip A B ranges, e.g. the
masked branch of a tile loop). The toolkit on the dev machine has no cuobjdump; the PyPI wheel
nvidia-cuda-cuobjdump carries one (`pip download --no-deps nvidia-cuda-cuobjdump`, unzip, pass
--cuobjdump .../nvidia/cu13/bin/cuobjdump or set CUOBJDUMP).

  python3 bench/tools/family_sass.py --family gqa_prefill --problem 016_gqa_ragged_prefill_causal_h32_kv4_d128 \\
      --knobs WARPS=12,KV_TILE=64,STAGES=3,ORDER=2,Q_IN_SMEM=1,PERSIST=0,MMA=1,OVERLAP=1,WS=1,PINGPONG=1 \\
      [--range 2910 53a0 --skip 3430 4440] [--families DIR] [--out /tmp/ka_sass/p]

Knobs not given take the first valid point's values (as the self-test's --knobs).
"""
import argparse
import collections
import json
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import attention_selftest as st  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--family", required=True, choices=sorted(st.FAMILIES))
    ap.add_argument("--problem", required=True)
    ap.add_argument("--knobs", required=True, help="NAME=V,NAME=V")
    ap.add_argument("--range", nargs=2, metavar=("START", "END"), help="hex addresses: histogram of [START, END)")
    ap.add_argument("--skip", nargs=2, action="append", default=[], metavar=("A", "B"), help="hex range left out")
    ap.add_argument("--families", default="", help="another repo root (or families folder) to take the source from")
    ap.add_argument("--out", default="/tmp/ka_sass/point", help="prefix of the .cu / .cubin / .sass written")
    ap.add_argument("--cuobjdump", default=os.environ.get("CUOBJDUMP") or shutil.which("cuobjdump") or "")
    args = ap.parse_args()
    if args.families:
        root = os.path.abspath(args.families)
        st.FAMILIES_DIR = root if os.path.basename(root) == "families" else os.path.join(root, "families")
    if not args.cuobjdump or not os.path.exists(args.cuobjdump):
        raise SystemExit("no cuobjdump: pass --cuobjdump or set CUOBJDUMP (see --help)")
    fam = st.load_family(st.FAMILIES[args.family][0])
    defn = json.load(open(os.path.join(st.find_problem(args.problem), "definition.json")))
    pts = st.valid_points(fam, defn)
    k = dict(pts[0])
    for kv in args.knobs.split(","):
        n, v = kv.split("=")
        if n not in fam["knobs"]:
            raise SystemExit(f"{fam['name']} has no knob {n} (knobs: {', '.join(fam['knobs'])})")
        k[n] = int(v)
    if k not in pts:
        raise SystemExit(f"{k} is not a valid point of {fam['name']} on {args.problem}")
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    cu, cubin, sass = args.out + ".cu", args.out + ".cubin", args.out + ".sass"
    open(cu, "w").write(st.point_source(fam, defn, k))
    cmd = [st.nvcc_path(), "-cubin", "-Xptxas", "-v", *st.nvcc_flags("90a"), f"-I{fam['dir']}", "-o", cubin, cu]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"nvcc failed:\n{r.stderr[-3000:]}")
    for line in r.stderr.splitlines():
        if "registers" in line or "spill" in line or "Potential" in line:
            print(line.strip())
    d = subprocess.run([args.cuobjdump, "-sass", cubin], capture_output=True, text=True, check=True).stdout
    open(sass, "w").write(d)
    ins = []
    for line in d.splitlines():
        m = re.match(r"\s*/\*([0-9a-f]{4,6})\*/\s+(.*?);", line)
        if m:
            ins.append((int(m.group(1), 16), m.group(2)))
    print(f"{len(ins)} instructions ({sass})")
    for a, text in ins:
        m = re.search(r"\bBRA\s+(?:`\()?0x([0-9a-f]+)", text)
        if m and int(m.group(1), 16) < a:
            print(f"  backward branch {a:#06x} -> {int(m.group(1), 16):#06x}: {text.strip()}")
    lo, hi = (int(args.range[0], 16), int(args.range[1], 16)) if args.range else (0, 1 << 40)
    skips = [(int(a, 16), int(b, 16)) for a, b in args.skip]
    c = collections.Counter()
    for a, text in ins:
        if lo <= a < hi and not any(s <= a < e for s, e in skips):
            w = text.split()
            op = w[1] if w[0].startswith("@") and len(w) > 1 else w[0]
            c[op.split(".")[0]] += 1
    print(f"{sum(c.values())} in range:", " ".join(f"{o}={n}" for o, n in c.most_common()))


if __name__ == "__main__":
    main()
