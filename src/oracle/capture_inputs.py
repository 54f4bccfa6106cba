"""Example inputs and symbolic dimensions for capturing a reference with torch.export.

The workload to trace is chosen and resolved by the C++ problem layer (the spec's "capture": the
smallest whose var axes are all >= 2, so that no axis is taken for the constant 1). Inputs are
built with the spec's dtypes and shapes without drawing their values (torch.export only reads
shapes, dtypes and strides; the values of scalar inputs are kept), and the definition's axes become
torch.export dynamic-shape specs: one named Dim per var axis, derived Dims for expr axes linear in
one var axis, and automatic dims for the other expr axes.
"""

from __future__ import annotations

import ast
import os
import sys

import torch
from torch.export import Dim

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kaoracle.common  # noqa: E402,F401  (the oracle's dtype names and input rules)
import kaoracle.inputs  # noqa: E402,F401
import kaoracle as ko  # noqa: E402
import capture_graph  # noqa: E402

MIN_VAR_AXIS = 2  # a var axis traced at 1 would be specialised; graphs hold for every size >= 1


def definition_view(problem):
    """The definition's symbolic side, from the spec, keyed as definition.json keys it: name,
    reference, custom_inputs_entrypoint, axes {name: {"type", ...}}, inputs/outputs {name: {"dtype",
    "shape": dims as written}}."""
    return {
        "name": problem.name,
        "reference": problem.reference,
        "custom_inputs_entrypoint": problem.custom_entry,
        "axes": problem.axes,
        "inputs": {t["name"]: {"dtype": t["dtype"], "shape": t["dims"]} for t in problem.input_defs},
        "outputs": {t["name"]: {"dtype": t["dtype"], "shape": t["dims"]} for t in problem.output_defs},
    }


def axis_kinds(defn):
    return {name: (ax.get("type") if isinstance(ax, dict) else None) for name, ax in defn["axes"].items()}


def _custom_values(problem, namespace, workload):
    """What the custom-inputs function makes: on the meta device when it can (no memory, no time),
    else on the CPU (a function that reads values, e.g. `.item()` for a global scale)."""
    entry = problem.custom_entry
    fn = namespace.get(entry) if entry else None
    if fn is None or not any(i["source"] == "custom" for i in workload["inputs"]):
        return {}
    scalars = {i["name"]: i["value"] for i in workload["inputs"] if i["source"] == "scalar"}
    try:
        return fn({**workload["axes"], **scalars}, torch.device("meta"))
    except Exception:  # noqa: BLE001 — it reads values: make them for real
        pass
    torch.manual_seed(0)
    return fn({**workload["axes"], **scalars}, torch.device("cpu"))


def _empty_like_spec(value):
    """A CPU tensor of value's shape, strides and dtype whose memory is never touched."""
    return torch.empty_strided(tuple(value.shape), tuple(value.stride()), dtype=value.dtype)


def example_inputs(problem, namespace, workload):
    """The inputs in definition order: tensors unfilled (torch.empty), scalars with their values."""
    custom = _custom_values(problem, namespace, workload)
    gen = torch.Generator().manual_seed(0)
    values = []
    for spec in workload["inputs"]:
        name, kind = spec["name"], spec["source"]
        dtype = ko.common.spec_to_torch_dtype(spec["dtype"])
        if kind == "scalar":
            values.append(spec["value"])
        elif kind == "custom":
            if name not in custom:
                raise ValueError(f"custom input '{name}' was not produced by the custom-inputs function")
            v = custom[name]
            values.append(_empty_like_spec(v) if isinstance(v, torch.Tensor) else v)
        elif spec["shape"] is None:
            values.append(_random_scalar(dtype, gen))
        else:
            shape = list(spec["shape"])
            if dtype == torch.float4_e2m1fn_x2 and kind != "safetensors":
                shape[-1] //= 2  # the oracle draws the declared shape and packs two values a byte
            values.append(torch.empty(shape, dtype=dtype))
    return values


REAL_INPUT_HEADROOM = 2  # draft export holds the inputs and the reference's intermediates


def _mem_available():
    """Bytes a capture may use: KERNELARC_CAPTURE_MEMORY_GIB when set, else /proc/meminfo's MemAvailable."""
    if os.environ.get("KERNELARC_CAPTURE_MEMORY_GIB"):
        return int(float(os.environ["KERNELARC_CAPTURE_MEMORY_GIB"]) * 2**30)
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def check_room_for_real_inputs(values):
    """Refuses, before drawing them, real inputs this machine cannot hold with room for the
    reference's intermediates: the kernel would end the capture (out of memory) minutes later."""
    need = sum(v.numel() * v.element_size() for v in values if isinstance(v, torch.Tensor))
    avail = _mem_available()
    if avail is not None and need * REAL_INPUT_HEADROOM > avail:
        raise capture_graph.CaptureError(
            f"data-dependent: draft export runs the reference on real inputs of the traced workload "
            f"({need / 2**30:.1f} GiB), and this machine has {avail / 2**30:.1f} GiB available "
            f"(it needs about {REAL_INPUT_HEADROOM}x the inputs)", transient=True)


def real_inputs(problem, namespace, workload):
    """The workload's inputs with their values, drawn as the oracle draws them (CPU, seed 0): for
    draft export, which decides data-dependent branches on the data."""
    blobs = {}
    if any(i["source"] == "safetensors" for i in workload["inputs"]):
        blobs = ko.inputs.load_blob_inputs(workload)
    ko.inputs.seed_everything(ko.inputs.derive_seed(workload["uuid"], 0), torch.device("cpu"))
    values, _ = ko.inputs.gen_inputs(problem, workload, blobs, namespace, torch.device("cpu"), [])
    return values


def _random_scalar(dtype, gen):
    if dtype == torch.bool:
        return True
    if dtype.is_floating_point:
        return float(torch.randn((), generator=gen).item())
    return int(torch.randint(1, 1024, (), generator=gen).item())


# ───────────────────────────── dynamic shapes ─────────────────────────────


class DimBuilder:
    """torch.export dynamic-shape specs for the definition's axes."""

    def __init__(self, defn):
        self.defn = defn
        self.kinds = axis_kinds(defn)
        self.consts = {n: ax["value"] for n, ax in defn["axes"].items() if self.kinds[n] == "const"}
        self.dims = {}

    def var_dim(self, name):
        if name not in self.dims:
            self.dims[name] = Dim(name, min=MIN_VAR_AXIS)
        return self.dims[name]

    def spec_of(self, axis):
        """None (static), a Dim, a derived Dim, or Dim.AUTO for one dimension's axis string."""
        axis = str(axis)
        if axis.isdigit() or self.kinds.get(axis) in (None, "const"):
            return None
        if self.kinds[axis] == "var":
            return self.var_dim(axis)
        try:
            v = self._eval(ast.parse(self.defn["axes"][axis]["expression"], mode="eval").body)
        except Exception:
            return Dim.AUTO
        return None if isinstance(v, int) else v

    def _eval(self, node):
        if isinstance(node, ast.Constant) and isinstance(node.value, int):
            return node.value
        if isinstance(node, ast.Name):
            kind = self.kinds.get(node.id)
            if kind == "const":
                return self.consts[node.id]
            if kind == "var":
                return self.var_dim(node.id)
            if kind == "expr":
                return self._eval(ast.parse(self.defn["axes"][node.id]["expression"], mode="eval").body)
            raise ValueError(node.id)
        if isinstance(node, ast.BinOp):
            a, b = self._eval(node.left), self._eval(node.right)
            ints = isinstance(a, int) and isinstance(b, int)
            if isinstance(node.op, ast.Add):
                return a + b
            if isinstance(node.op, ast.Sub):
                return a - b
            if isinstance(node.op, ast.Mult) and (isinstance(a, int) or isinstance(b, int)):
                return a * b
            if isinstance(node.op, ast.FloorDiv) and ints:
                return a // b
            if isinstance(node.op, ast.Mod) and ints:
                return a % b
        raise ValueError("not linear in one var axis")

    def tensor_spec(self, shape_spec):
        if shape_spec is None:
            return None
        spec = {i: self.spec_of(a) for i, a in enumerate(shape_spec)}
        spec = {i: s for i, s in spec.items() if s is not None}
        return spec or None
