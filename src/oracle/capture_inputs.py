"""Example inputs and symbolic dimensions for capturing a reference with torch.export.

Picks the workload to trace (the smallest whose var axes are all >= 2, so that no axis is taken
for the constant 1), builds inputs of the definition's dtypes and shapes without drawing their
values (torch.export only reads shapes, dtypes and strides; the values of scalar inputs are kept),
and turns the definition's axes into torch.export dynamic-shape specs: one named Dim per var axis,
derived Dims for expr axes linear in one var axis, and automatic dims for the other expr axes.
"""

from __future__ import annotations

import ast
import os
import sys

import torch
from torch.export import Dim

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kernelarc_oracle as oracle  # noqa: E402  (the oracle's problem loading and input rules)

oracle.torch = torch  # the oracle imports torch in its main(); its helpers read this global

MIN_VAR_AXIS = 2  # a var axis traced at 1 would be specialised; graphs hold for every size >= 1


def axis_kinds(defn):
    return {name: (ax.get("type") if isinstance(ax, dict) else None) for name, ax in defn["axes"].items()}


def input_bytes(defn, axes):
    total = 0
    for spec in defn["inputs"].values():
        shape = oracle.resolve_shape(spec["shape"], axes)
        if shape is None:
            continue
        n = 1
        for d in shape:
            n *= d
        total += n * max(1, oracle.spec_to_torch_dtype(spec["dtype"]).itemsize)
    return total


def pick_workload(problem):
    """(uuid, workload, resolved axes): the smallest workload among those with the fewest var axes
    (of the input shapes) below 2."""
    defn = problem.definition
    used = {str(a) for spec in defn["inputs"].values() for a in (spec["shape"] or [])}
    var = [a for a, k in axis_kinds(defn).items() if k == "var" and a in used]
    best = None
    for uuid, w in problem.workloads.items():
        try:
            oracle.validate_workload(w)
            axes = oracle.resolve_axes(defn, w.get("axes"))
            size = input_bytes(defn, axes)
        except Exception:
            continue
        small_axes = sum(axes.get(a, 0) < MIN_VAR_AXIS for a in var)
        key = (small_axes, size, uuid)
        if best is None or key < best[0]:
            best = (key, uuid, w, axes)
    if best is None:
        raise ValueError("no usable workload in workload.jsonl")
    _, uuid, w, axes = best
    small = {a: MIN_VAR_AXIS for a in var if axes.get(a, 0) < MIN_VAR_AXIS}
    if small:  # no workload has them all >= 2: trace at 2 (the graph does not depend on the sizes)
        w = dict(w, axes={**(w.get("axes") or {}), **small})
        axes = oracle.resolve_axes(defn, w["axes"])
    return uuid, w, axes


def _custom_values(problem, namespace, workload, axes):
    """What the custom-inputs function makes: on the meta device when it can (no memory, no time),
    else on the CPU (a function that reads values, e.g. `.item()` for a global scale)."""
    entry = problem.definition.get("custom_inputs_entrypoint")
    fn = namespace.get(entry) if entry else None
    if fn is None or not any(d.get("type") == "custom" for d in workload["inputs"].values()):
        return {}
    scalars = {n: d["value"] for n, d in workload["inputs"].items() if d.get("type") == "scalar"}
    try:
        return fn({**axes, **scalars}, torch.device("meta"))
    except Exception:  # noqa: BLE001 — it reads values: make them for real
        pass
    torch.manual_seed(0)
    return fn({**axes, **scalars}, torch.device("cpu"))


def _empty_like_spec(value):
    """A CPU tensor of value's shape, strides and dtype whose memory is never touched."""
    return torch.empty_strided(tuple(value.shape), tuple(value.stride()), dtype=value.dtype)


def example_inputs(problem, namespace, workload, axes):
    """The inputs in definition order: tensors unfilled (torch.empty), scalars with their values."""
    defn = problem.definition
    custom = _custom_values(problem, namespace, workload, axes)
    gen = torch.Generator().manual_seed(0)
    values = []
    for name, spec in defn["inputs"].items():
        d = workload["inputs"].get(name, {"type": "random"})
        dtype = oracle.spec_to_torch_dtype(spec["dtype"])
        kind = d.get("type", "random")
        if kind == "scalar":
            values.append(d["value"])
        elif kind == "custom":
            if name not in custom:
                raise ValueError(f"custom input '{name}' was not produced by the custom-inputs function")
            v = custom[name]
            values.append(_empty_like_spec(v) if isinstance(v, torch.Tensor) else v)
        elif spec["shape"] is None:
            values.append(_random_scalar(dtype, gen))
        else:
            shape = list(oracle.resolve_shape(spec["shape"], axes))
            if dtype == torch.float4_e2m1fn_x2 and kind != "safetensors":
                shape[-1] //= 2  # the oracle draws the declared shape and packs two values a byte
            values.append(torch.empty(shape, dtype=dtype))
    return values


def real_inputs(problem, namespace, uuid, workload, axes):
    """The workload's inputs with their values, drawn as the oracle draws them (CPU, seed 0): for
    draft export, which decides data-dependent branches on the data."""
    defn = problem.definition
    shapes = {n: oracle.resolve_shape(s["shape"], axes) for n, s in defn["inputs"].items()}
    safe = {}
    if any(isinstance(d, dict) and d.get("type") == "safetensors" for d in workload["inputs"].values()):
        safe = oracle.load_safetensors_inputs(problem, workload, shapes)
    oracle.seed_everything(oracle.derive_seed(uuid, 0), torch.device("cpu"))
    values, _ = oracle.gen_inputs(problem, workload, axes, shapes, safe, namespace, torch.device("cpu"), [])
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
