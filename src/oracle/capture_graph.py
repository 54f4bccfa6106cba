"""Serialises a torch.export ExportedProgram (Core ATen, after run_decompositions) as KernelArc's
graph.json (docs/graph-format.md): SSA values with shapes written in the problem's own axis
expression language, nodes with their schema-ordered arguments, constants, and the source line
of the reference each node came from.

The driver (capture.py) decides what the graph's inputs mean (which definition input, which axis
each dimension is); this module only translates the FX graph and the sympy shape expressions.
"""

from __future__ import annotations

import math
import operator
import re

import sympy
import torch
from torch.utils._sympy.functions import (
    CeilToInt,
    FloatTrueDiv,
    FloorDiv,
    FloorToInt,
    IntTrueDiv,
    Max,
    Min,
    Mod,
    PythonMod,
    TruncToInt,
)

INLINE_CONSTANT_ELEMENTS = 64  # larger constants go to constants.safetensors (the contract's limit)

# torch dtype -> the definition's dtype name (the contract's vocabulary, complex added)
_DTYPE_NAMES = {
    torch.float64: "float64",
    torch.float32: "float32",
    torch.float16: "float16",
    torch.bfloat16: "bfloat16",
    torch.float8_e4m3fn: "float8_e4m3fn",
    torch.float8_e5m2: "float8_e5m2",
    torch.float4_e2m1fn_x2: "float4_e2m1fn_x2",
    torch.int64: "int64",
    torch.int32: "int32",
    torch.int16: "int16",
    torch.int8: "int8",
    torch.uint8: "uint8",
    torch.bool: "bool",
    torch.complex64: "complex64",
    torch.complex128: "complex128",
}

# Python operators on symbolic scalars (what `.item()` arithmetic leaves in the graph)
_SCALAR_OPS = {
    operator.add: "scalar.add",
    operator.sub: "scalar.sub",
    operator.mul: "scalar.mul",
    operator.truediv: "scalar.truediv",
    operator.floordiv: "scalar.floordiv",
    operator.mod: "scalar.mod",
    operator.pow: "scalar.pow",
    operator.neg: "scalar.neg",
    operator.eq: "scalar.eq",
    operator.ne: "scalar.ne",
    operator.lt: "scalar.lt",
    operator.le: "scalar.le",
    operator.gt: "scalar.gt",
    operator.ge: "scalar.ge",
    math.sqrt: "scalar.sqrt",
}

# ops that check, not compute: dropped from the graph
_DROPPED_OPS = {
    "aten._assert_tensor_metadata.default",
    "aten._assert_scalar.default",
    "aten.sym_constrain_range_for_size.default",
    "aten.sym_constrain_range.default",
    "aten._assert_async.msg",
    "aten._assert_async.default",
}


class CaptureError(Exception):
    """A graph that cannot be written: why, the op and the reference's source line."""

    def __init__(self, reason, op=None, source=None, transient=False):
        super().__init__(reason)
        self.reason, self.op, self.source = reason, op, source
        self.transient = transient  # a matter of this machine now (memory): not to be cached


def dtype_name(dtype):
    name = _DTYPE_NAMES.get(dtype)
    if name is None:
        raise CaptureError(f"dtype {dtype} has no name in the graph format")
    return name


def op_name(target):
    """'aten.mm.default' for an OpOverload, 'scalar.mul' for Python operators on symbols."""
    if isinstance(target, torch._ops.OpOverload):
        return f"{target.namespace}.{target._schema.name.split('::')[1]}.{target._overloadname}"
    if target in _SCALAR_OPS:
        return _SCALAR_OPS[target]
    if isinstance(target, torch._ops.HigherOrderOperator):
        return f"higher_order.{target.name()}"
    return getattr(target, "__name__", str(target))


# ───────────────────────────── symbolic expressions ─────────────────────────────


_REL_OPS = {"==": "==", "!=": "!=", "<": "<", "<=": "<=", ">": ">", ">=": ">="}


def _prec(e):
    if isinstance(e, sympy.Add):
        return 1
    if isinstance(e, (sympy.Mul, FloorDiv, Mod, PythonMod)):
        return 2
    return 3


def expr_text(e):
    """A sympy integer expression in the definition's axis language (Python syntax)."""
    e = sympy.sympify(e)
    if e.is_Integer:
        return str(int(e))
    if e.is_Rational and not e.is_Integer:
        return f"{e.p} // {e.q}" if e.q > 0 else str(float(e))
    if e.is_Symbol:
        return e.name
    if isinstance(e, (sympy.Add, sympy.Mul)) and any(
            a.is_Rational and not a.is_Integer for a in sympy.preorder_traversal(e)):
        num, den = sympy.fraction(sympy.together(e))  # exact by construction (see map_input_symbols)
        if den.is_Integer and den > 1:
            return f"{_paren(sympy.expand(num), 2)} // {int(den)}"
    if isinstance(e, sympy.Add):
        terms = sorted(e.args, key=lambda t: (t.is_Number, sympy.default_sort_key(t)))
        out = expr_text(terms[0])
        for t in terms[1:]:
            if t.could_extract_minus_sign():
                out += " - " + _paren(-t, 1)
            else:
                out += " + " + _paren(t, 1)
        return out
    if isinstance(e, sympy.Mul):
        num, den = e.as_numer_denom()
        if den != 1:  # a rational coefficient: exact by construction (see map_input_symbols)
            return f"{_paren(num, 2)} // {_paren(den, 3)}"
        coeff, rest = e.as_coeff_Mul()
        factors = list(sympy.Mul.make_args(rest))
        # a floor division or modulo inside a product needs parentheses: `a * b // 2 * c` is
        # ((a * b) // 2) * c in Python
        parts = ([] if coeff == 1 else ["-" if coeff == -1 else str(coeff)]) + [
            _paren(f, 3 if isinstance(f, (FloorDiv, Mod, PythonMod, sympy.Mod)) else 2) for f in factors]
        if parts and parts[0] == "-":
            return "-" + " * ".join(parts[1:])
        return " * ".join(parts)
    if isinstance(e, sympy.core.relational.Relational) and e.rel_op in _REL_OPS:
        return f"{expr_text(e.lhs)} {_REL_OPS[e.rel_op]} {expr_text(e.rhs)}"
    if isinstance(e, (sympy.And, sympy.Or)):
        joiner = " and " if isinstance(e, sympy.And) else " or "
        return joiner.join(f"({expr_text(a)})" for a in e.args)
    if isinstance(e, sympy.Pow) and e.exp.is_Integer and e.exp > 0:
        return " * ".join([_paren(e.base, 2)] * int(e.exp))
    if isinstance(e, FloorDiv):
        return f"{_paren(e.args[0], 2)} // {_paren(e.args[1], 3)}"
    if isinstance(e, (Mod, PythonMod, sympy.Mod)):
        return f"{_paren(e.args[0], 2)} % {_paren(e.args[1], 3)}"
    if isinstance(e, (Max, sympy.Max)):
        return f"max({', '.join(expr_text(a) for a in e.args)})"
    if isinstance(e, (Min, sympy.Min)):
        return f"min({', '.join(expr_text(a) for a in e.args)})"
    if isinstance(e, (CeilToInt,)) or isinstance(e, sympy.ceiling):
        a = e.args[0]
        if isinstance(a, (IntTrueDiv, FloatTrueDiv)):
            return f"-(-{_paren(a.args[0], 3)} // {_paren(a.args[1], 3)})"
    if isinstance(e, (FloorToInt, TruncToInt)) or isinstance(e, sympy.floor):
        a = e.args[0]
        if isinstance(a, (IntTrueDiv, FloatTrueDiv)):
            return f"{_paren(a.args[0], 2)} // {_paren(a.args[1], 3)}"
    raise CaptureError(f"symbolic size {e} has no form in the axis expression language")


def _paren(e, prec):
    s = expr_text(e)
    return f"({s})" if _prec(sympy.sympify(e)) < prec or (s.startswith("-") and prec > 1) else s


def sym_text(v, subs):
    """An int or SymInt (backed) as an axis expression after substituting torch's symbols."""
    if isinstance(v, int):
        return str(v)
    e = v.node.expr.xreplace(subs) if hasattr(v, "node") else sympy.sympify(v).xreplace(subs)
    e = sympy.simplify(e) if any(not s.name.isidentifier() for s in e.free_symbols) else e
    return expr_text(sympy.expand(e) if isinstance(e, (sympy.Add, sympy.Mul)) else e)


def is_unbacked(v):
    if not isinstance(v, (torch.SymInt, torch.SymFloat, torch.SymBool)):
        return False
    return any(s.name.startswith(("u", "zuf", "zf")) for s in v.node.expr.free_symbols)


# ───────────────────────────── the graph writer ─────────────────────────────


class GraphWriter:
    """Builds the graph.json dict from an ExportedProgram.

    subs: torch symbol -> sympy expression over the definition's axis names (and int scalar
    input names). scalar_refs: {(node name, arg path): value id} for float constants that are
    really a scalar input (found by capture.py's perturbation pass), keyed by the node name and
    the position of the constant in its arguments.
    """

    def __init__(self, ep, subs, source_of):
        self.ep = ep
        self.subs = subs
        self.source_of = source_of  # node -> "line N: text" or None
        self.values = []
        self.value_of = {}  # fx node name -> value id, or list of ids for tuple outputs
        self.nodes = []
        self.constants = []
        self.constant_tensors = {}  # key -> tensor for constants.safetensors
        self.scalar_refs = {}
        self.asserts = []  # run-time asserts torch kept on the axes, as axis-language conditions

    # values
    def new_value(self, val, node=None):
        vid = len(self.values)
        if isinstance(val, torch.Tensor):
            shape = [self.size_text(s, node) for s in val.shape]
            v = {"id": vid, "kind": "tensor", "dtype": dtype_name(val.dtype), "shape": shape}
            if val.dim() > 1 and not self._contiguous(val):
                v["strides"] = [self.size_text(s, node) for s in val.stride()]
        elif isinstance(val, (bool, torch.SymBool)):
            v = {"id": vid, "kind": "scalar", "dtype": "bool"}
        elif isinstance(val, (int, torch.SymInt)):
            v = {"id": vid, "kind": "scalar", "dtype": "int64"}
        elif isinstance(val, (float, torch.SymFloat)):
            v = {"id": vid, "kind": "scalar", "dtype": "float64"}
        else:
            raise CaptureError(f"a value of type {type(val).__name__} has no form in the graph format",
                               source=self.source_of(node) if node is not None else None)
        self.values.append(v)
        return vid

    @staticmethod
    def _contiguous(t):
        expect = 1
        for size, stride in reversed(list(zip(t.shape, t.stride()))):
            if size != 1 and stride != expect:
                return False
            expect = expect * size
        return True

    def size_text(self, s, node=None):
        if is_unbacked(s):
            raise CaptureError("data-dependent shape (a size known only at run time)",
                               op=op_name(node.target) if node is not None and node.op == "call_function" else None,
                               source=self.source_of(node) if node is not None else None)
        return sym_text(s, self.subs)

    # arguments
    def arg(self, a, node, path):
        if isinstance(a, torch.fx.Node):
            if a.name in self.value_of:
                vid = self.value_of[a.name]
                if isinstance(vid, list):
                    raise CaptureError("a tuple value used whole", source=self.source_of(node))
                return {"value": vid}
            val = a.meta.get("val")
            if isinstance(val, (torch.SymInt, int)) and not isinstance(val, bool):
                return {"sym": self.size_text(val, node)}
            raise CaptureError(f"argument {a.name} of {op_name(node.target)} has no value",
                               source=self.source_of(node))
        if (node.name, path) in self.scalar_refs:
            return {"value": self.scalar_refs[(node.name, path)]}
        if a is None:
            return None
        if isinstance(a, bool):
            return {"bool": a}
        if isinstance(a, int):
            return {"int": a}
        if isinstance(a, float):
            return {"float": a if math.isfinite(a) else ("nan" if math.isnan(a) else ("inf" if a > 0 else "-inf"))}
        if isinstance(a, torch.SymInt):
            return {"sym": self.size_text(a, node)}
        if isinstance(a, str):
            return {"str": a}
        if isinstance(a, torch.dtype):
            return {"dtype": dtype_name(a)}
        if isinstance(a, torch.device):
            return {"device": a.type}
        if isinstance(a, torch.layout):
            return {"layout": str(a).replace("torch.", "")}
        if isinstance(a, torch.memory_format):
            return {"memory_format": str(a).replace("torch.", "")}
        if isinstance(a, (list, tuple)):
            return {"list": [self.arg(x, node, path + (i,)) for i, x in enumerate(a)]}
        raise CaptureError(f"argument of type {type(a).__name__} to {op_name(node.target)}", op=op_name(node.target),
                           source=self.source_of(node))

    def _record_assert(self, node):
        cond = node.args[0]
        val = cond.meta.get("val") if isinstance(cond, torch.fx.Node) else cond
        if isinstance(val, torch.SymBool) and not is_unbacked(val):
            try:
                text = expr_text(val.node.expr.xreplace(self.subs))
            except CaptureError:
                return
            if text not in self.asserts:
                self.asserts.append(text)

    # nodes
    def add_constant(self, node, tensor):
        vid = self.new_value(tensor, node)
        t = tensor.detach().cpu().contiguous()
        if t.numel() <= INLINE_CONSTANT_ELEMENTS and t.dtype not in (torch.float4_e2m1fn_x2,) and not t.is_complex():
            data = t.to(torch.float64 if t.is_floating_point() else torch.int64).reshape(-1).tolist()
            if t.is_floating_point():
                data = [x if math.isfinite(x) else ("nan" if math.isnan(x) else ("inf" if x > 0 else "-inf")) for x in data]
            self.constants.append({"value": vid, "data": data})
        else:
            key = f"c{vid}"
            self.constant_tensors[key] = t
            self.constants.append({"value": vid, "key": key})
        self.value_of[node.name] = vid

    def add_scalar_tensor(self, node, tensor, input_vid):
        """A lifted constant that is `torch.tensor(scalar input)`: a 0-d tensor made from the input
        at run time (aten.scalar_tensor), not the value traced."""
        vid = self.new_value(tensor, node)
        self.nodes.append({"op": "aten.scalar_tensor.default", "args": [{"value": input_vid}],
                           "kwargs": {"dtype": {"dtype": dtype_name(tensor.dtype)}}, "outputs": [vid]})
        self.value_of[node.name] = vid

    def add_call(self, node):
        name = op_name(node.target)
        if name == "aten._assert_scalar.default":
            self._record_assert(node)
        if name in _DROPPED_OPS:
            return
        val = node.meta.get("val")
        if node.target is operator.getitem:
            src, idx = node.args
            ids = self.value_of.get(src.name)
            if not isinstance(ids, list):
                raise CaptureError("getitem on a value that is not a tuple", source=self.source_of(node))
            self.value_of[node.name] = ids[idx]
            return
        # symbolic integers with a known expression are folded into their users' arguments
        if not isinstance(node.target, torch._ops.OpOverload) or name == "aten.sym_size.int":
            if isinstance(val, (torch.SymInt, int)) and not isinstance(val, bool) and not is_unbacked(val):
                return
            if isinstance(val, torch.SymBool) and not is_unbacked(val):
                return
            if node.target not in _SCALAR_OPS and name != "aten.sym_size.int":
                raise CaptureError(f"call of {name}, which is not an ATen operator", op=name,
                                   source=self.source_of(node))
        if name == "aten.sym_size.int" and is_unbacked(val):
            raise CaptureError("data-dependent shape (a size known only at run time)", op=name,
                               source=self.source_of(node))
        args = [self.arg(a, node, (i,)) for i, a in enumerate(node.args)]
        kwargs = {k: self.arg(v, node, (k,)) for k, v in node.kwargs.items()}
        if isinstance(val, (list, tuple)):
            users = {u.args[1] for u in node.users if u.target is operator.getitem}
            outs = [self.new_value(v, node) if (i in users and v is not None) else None for i, v in enumerate(val)]
            self.value_of[node.name] = outs
        elif val is None:
            outs = []
        else:
            outs = [self.new_value(val, node)]
            self.value_of[node.name] = outs[0]
        entry = {"op": name, "args": args, "kwargs": kwargs, "outputs": outs}
        src = self.source_of(node)
        if src:
            entry["source"] = src
        self.nodes.append(entry)
