#!/usr/bin/env python3
"""Builds the solution.json files under examples/solutions/ from the .cu/.cuh sources beside them.

The judge compiles only the sources a solution.json lists, so each problem's JSON embeds its entry
.cu and every header it includes (the shared common/rmsnorm.cuh is embedded as "rmsnorm.cuh", at the
same level as the .cu that includes it). Run after editing any source:

    python3 examples/solutions/make_solutions.py          # rewrite the JSON files
    python3 examples/solutions/make_solutions.py --check  # exit 1 if any JSON is stale
"""
import argparse
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
COMMON = HERE / "common"

RMSNORM = [
    ("001_fused_add_rmsnorm_h2048", "Fused add + RMSNorm (h=2048, eps=1e-6): one 128-thread block per row, 16-byte vectors, fp32 sum of squares."),
    ("003_fused_add_rmsnorm_h7168", "Fused add + RMSNorm (h=7168, eps=1e-6): one 224-thread block per row, 16-byte vectors, fp32 sum of squares."),
    ("021_rmsnorm_h128", "RMSNorm (h=128, eps=1e-6): 16 threads per row, one 16-byte vector each, sub-warp shuffle reduction."),
    ("022_rmsnorm_h512", "RMSNorm (h=512, eps=1e-6): one warp per row, two 16-byte vectors per thread, warp shuffle reduction."),
    ("023_rmsnorm_h1536", "RMSNorm (h=1536, eps=1e-6): one 96-thread block per row, two 16-byte vectors per thread."),
    ("025_rmsnorm_h4096", "RMSNorm (h=4096, eps=1e-5): one 256-thread block per row, two 16-byte vectors per thread."),
    ("026_rmsnorm_h7168", "RMSNorm (h=7168, eps=1e-6): one 224-thread block per row, four 16-byte vectors per thread."),
]

# (problem, json file, solution name suffix, entry .cu, description, compile_options or None)
GEMM = [
    ("004_gemm_n128_k2048", "solution_cublas.json", "cublaslt", "gemm_cublas.cu",
     "C = A @ B.T (fp16, fp32 accumulation) through cuBLASLt; handle, workspace and per-shape plans cached in statics.",
     {"cflags": [], "cuda_cflags": ["-O3"], "ld_flags": ["-lcublasLt"]}),
    ("004_gemm_n128_k2048", "solution_wmma.json", "wmma", "gemm_wmma.cu",
     "C = A @ B.T (fp16, fp32 accumulation) with a plain 64x64x32 tiled WMMA tensor-core kernel, no libraries.",
     None),
]


def spec(entry, compile_options):
    s = {
        "languages": ["cuda_cpp"],
        "target_hardware": ["LOCAL"],
        "entry_point": f"{entry}::run",
        "destination_passing_style": True,
        "binding": "kernelarc",
    }
    if compile_options is not None:
        s["compile_options"] = compile_options
    return s


def solution(name, definition, description, entry, sources, compile_options=None):
    return {
        "name": name,
        "definition": definition,
        "author": "kernelarc",
        "description": description,
        "spec": spec(entry, compile_options),
        "sources": [{"path": p, "content": c} for p, c in sources],
    }


def render(obj):
    return json.dumps(obj, indent=2, ensure_ascii=False) + "\n"


def targets():
    """Yields (json path, text)."""
    cuh = (COMMON / "rmsnorm.cuh").read_text()
    for prob, desc in RMSNORM:
        cu = (HERE / prob / "rmsnorm.cu").read_text()
        sol = solution(f"{prob}_cuda", prob, desc, "rmsnorm.cu", [("rmsnorm.cu", cu), ("rmsnorm.cuh", cuh)])
        yield HERE / prob / "solution.json", render(sol)
    for prob, fname, suffix, entry, desc, co in GEMM:
        cu = (HERE / prob / entry).read_text()
        sol = solution(f"{prob}_{suffix}", prob, desc, entry, [(entry, cu)], co)
        yield HERE / prob / fname, render(sol)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="report stale JSON files instead of writing them")
    args = ap.parse_args()
    stale = []
    for path, text in targets():
        old = path.read_text() if path.exists() else None
        if old == text:
            continue
        if args.check:
            stale.append(path)
        else:
            path.write_text(text)
            print(f"wrote {path.relative_to(HERE)}")
    if stale:
        for p in stale:
            print(f"stale: {p.relative_to(HERE)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
