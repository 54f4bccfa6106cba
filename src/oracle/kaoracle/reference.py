"""Running the definition's reference: its source executed as a fresh module per job (a real file,
so that inspect and Triton can read it), its run() found and called once for the outputs, and
what it returns brought to {output name: tensor} as upstream does (sol-execbench-rules §1.5, §3)."""

from __future__ import annotations

import importlib.util
import inspect
import os
import shutil
import sys
import tempfile
import time

import torch

from . import scaled_mm
from .common import OracleError, exc_text, spec_to_torch_dtype, sync

# Whether this process has run the eager reference (any workload): see timing.py, "Slow references".
RAN_REFERENCE = {"any": False}


class ReferenceSource:
    """The definition's reference written to a real file (so inspect/triton can read it)."""

    def __init__(self, source):
        self.tmpdir = tempfile.mkdtemp(prefix="kernelarc_oracle_")
        self.path = os.path.join(self.tmpdir, "_reference.py")
        with open(self.path, "w", encoding="utf-8") as f:
            f.write(source)
        self.count = 0

    def load(self):
        """Execute the source in a fresh module; returns the module namespace."""
        self.count += 1
        modname = f"_kernelarc_reference_{self.count}"
        spec = importlib.util.spec_from_file_location(modname, self.path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[modname] = module
        try:
            spec.loader.exec_module(module)
        except BaseException:
            sys.modules.pop(modname, None)
            raise
        return vars(module)

    def unload(self):
        for k in [k for k in sys.modules if k.startswith("_kernelarc_reference_")]:
            del sys.modules[k]

    def cleanup(self):
        shutil.rmtree(self.tmpdir, ignore_errors=True)



def load_run(refsrc, input_names, notes):
    """Executes the reference afresh and returns its run(); OracleError (stage reference) when it
    does not load or defines no run(). A run() whose positional parameters are not the inputs gets
    a note. nvfp4 _scaled_mm calls are emulated where the device lacks them (scaled_mm.py)."""
    scaled_mm.install()
    try:
        namespace = refsrc.load()
    except BaseException as e:
        if isinstance(e, KeyboardInterrupt):
            raise
        raise OracleError("reference", f"Failed to exec reference code: {exc_text(e)}")
    run_fn = namespace.get("run")
    if not callable(run_fn):
        raise OracleError("reference", "Reference code does not define a top-level 'run' function")
    try:
        params = [
            p.name
            for p in inspect.signature(run_fn).parameters.values()
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
        ]
        if params != list(input_names):
            notes.append(f"run() positional parameters {params} differ from the definition inputs")
    except (TypeError, ValueError):
        pass
    return namespace, run_fn


def _is_cuda(d):
    return (isinstance(d, str) and d.startswith("cuda")) or (isinstance(d, torch.device) and d.type == "cuda")


class _CudaOnCpu(torch.overrides.TorchFunctionMode):
    """Tensors a reference asks for on 'cuda' (a literal device in its code) made on the CPU."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = dict(kwargs or {})
        if _is_cuda(kwargs.get("device")):
            kwargs["device"] = "cpu"
        if func is torch.Tensor.to and len(args) > 1 and _is_cuda(args[1]):
            args = (args[0], "cpu") + tuple(args[2:])
        if func is torch.Tensor.cuda:
            return args[0]
        return func(*args, **kwargs)


def on_device(run_fn, device):
    """run_fn as the oracle calls it: on a machine without CUDA, a reference that names the 'cuda'
    device (torch.device('cuda') in its code) runs on the CPU instead of failing."""
    if device.type != "cpu" or torch.cuda.is_available():
        return run_fn

    def run(*args):
        with _CudaOnCpu():
            return run_fn(*args)

    return run


def output_call(run_fn, values, device):
    """The call that produces the reference's outputs, timed (wall and, on CUDA, events): for a long
    reference it is the warm-up, or the timed call, of the eager timing (timing.py). Returns
    (result, (wall s, ms, whether the process had run the reference before))."""
    ran_before = RAN_REFERENCE["any"]
    t0 = time.perf_counter()
    ev = None
    if device.type == "cuda":
        ev = (torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
        ev[0].record()
    result = run_fn(*values)
    if ev is not None:
        ev[1].record()
    sync(device)
    wall = time.perf_counter() - t0
    RAN_REFERENCE["any"] = True
    return result, (wall, ev[0].elapsed_time(ev[1]) if ev else wall * 1e3, ran_before)


def normalize_outputs(result, outputs):
    """Upstream normalize_outputs (sol-execbench-rules §1.5): {output name: tensor}."""
    names = [o["name"] for o in outputs]
    dtypes = {o["name"]: spec_to_torch_dtype(o["dtype"]) for o in outputs}

    def conv(n, v):
        if isinstance(v, torch.Tensor):
            return v
        return torch.tensor(v, dtype=dtypes[n])

    if isinstance(result, dict):
        got = {k: conv(k, v) for k, v in result.items() if k in dtypes}
        out = {n: got[n] for n in names}  # a missing name raises KeyError, as upstream
    elif isinstance(result, torch.Tensor):
        if len(names) != 1:
            raise RuntimeError("Single Tensor returned but multiple outputs are defined")
        out = {names[0]: result}
    elif isinstance(result, (int, float, bool)):
        if len(names) != 1:
            raise RuntimeError("Scalar returned but multiple outputs are defined")
        out = {names[0]: conv(names[0], result)}
    elif isinstance(result, (tuple, list)):
        if len(result) != len(names):
            raise RuntimeError(f"Tuple/list has {len(result)} elements but {len(names)} outputs expected")
        out = {n: conv(n, v) for n, v in zip(names, result)}
    else:
        raise RuntimeError("Unexpected return type; must be Tensor, scalar, or dict[name -> Tensor/scalar]")
    return {n: t.detach() for n, t in out.items()}  # moved to the CPU tensor by tensor when written

