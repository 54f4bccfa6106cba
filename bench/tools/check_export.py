#!/usr/bin/env python3
"""Builds an exported SOL-ExecBench solution.json the way SOL-ExecBench's cuda_cpp path does
(torch.utils.cpp_extension.load of every top-level source, module name benchmark_kernel, the
solution's compile_options plus the local gencode flag), then calls `run` in destination-passing
style on random inputs (inputs then torch.zeros outputs, on cuda:0) and compares against the
definition's reference with atol = rtol = 1e-2. A stand-in for the upstream harness where that
harness itself cannot run; prints one JSON line per workload checked."""
import argparse
import json
import os
import sys
import tempfile

import torch
from torch.utils.cpp_extension import load


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("problem")
    ap.add_argument("solution")
    ap.add_argument("--workloads", type=int, default=3)
    a = ap.parse_args()
    d = json.load(open(os.path.join(a.problem, "definition.json")))
    sol = json.load(open(a.solution))
    stage = tempfile.mkdtemp(prefix="sol_execbench_")
    for s in sol["sources"]:
        path = os.path.join(stage, s["path"])
        os.makedirs(os.path.dirname(path), exist_ok=True)
        open(path, "w").write(s["content"])
    top = [os.path.join(stage, f) for f in os.listdir(stage) if f.endswith((".cu", ".cpp", ".cc", ".cxx", ".c"))]
    co = sol["spec"].get("compile_options", {})
    cap = torch.cuda.get_device_capability(0)
    arch = f"{cap[0]}{cap[1]}"
    cuda_cflags = co.get("cuda_cflags", ["-O3", "--use_fast_math"])
    if not any("-gencode" in f or "-arch" in f for f in cuda_cflags):
        cuda_cflags = [f"-gencode=arch=compute_{arch},code=sm_{arch}"] + cuda_cflags
    mod = load(name="benchmark_kernel", sources=top, extra_cflags=co.get("cflags", []),
               extra_cuda_cflags=cuda_cflags, extra_ldflags=co.get("ld_flags", ["-lcuda"]),
               extra_include_paths=[stage], build_directory=stage, verbose=False)
    fn = getattr(mod, sol["spec"]["entry_point"].split("::")[1])
    ns = {}
    exec(d["reference"], ns)
    consts = {k: v["value"] for k, v in d["axes"].items() if v["type"] == "const"}
    for i, line in enumerate(open(os.path.join(a.problem, "workload.jsonl"))):
        if i >= a.workloads:
            break
        w = json.loads(line)
        axes = {**consts, **w["axes"]}
        ins = [torch.randn([axes[x] if isinstance(x, str) else x for x in v["shape"]], device="cuda").to(getattr(torch, v["dtype"]))
               for v in d["inputs"].values()]
        outs = [torch.zeros([axes[x] if isinstance(x, str) else x for x in v["shape"]], device="cuda",
                            dtype=getattr(torch, v["dtype"])) for v in d["outputs"].values()]
        ref = ns["run"](*ins)
        ref = ref if isinstance(ref, (tuple, list)) else [ref]
        fn(*ins, *outs)
        torch.cuda.synchronize()
        ok = all(torch.allclose(o.float(), r.float(), atol=1e-2, rtol=1e-2) for o, r in zip(outs, ref))
        err = max(float((o.float() - r.float()).abs().max()) for o, r in zip(outs, ref))
        print(json.dumps({"uuid": w["uuid"], "axes": w["axes"], "ok": ok, "max_abs_err": err}), flush=True)


if __name__ == "__main__":
    sys.exit(main())
