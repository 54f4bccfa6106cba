#!/usr/bin/env python3
"""Captures a definition's reference `run` as an operator graph (docs/graph-format.md).

    python3 capture.py --spec FILE -o OUT_DIR [--workload UUID [--static]]

FILE is the problem as the C++ problem layer resolved it (src/oracle/spec.cpp): the definition's
axes and dims as written, every workload resolved, and the workload to trace ("capture").
torch.export traces `run` on example inputs of that workload (values never drawn: only
shapes, dtypes and scalar values matter) with every var axis of the definition symbolic, the
program is decomposed to Core ATen (run_decompositions() plus capture_decomp's table), and
OUT_DIR/graph.json (+ constants.safetensors) is written. Float scalar inputs, which torch.export
bakes into the graph as constants, are found by tracing a second time with the scalars perturbed
and become references to the scalar input; where a scalar changes the graph in another way the
input is marked "specialized" with the value traced.

With --static the workload's shapes and int scalars are traced as constants (no symbolic axis):
the graph of one shape, for a reference whose Python control flow depends on a var axis's size. The
caller (src/graph/capture.cpp) captures each distinct shape of the problem's workloads this way and
generates one candidate that dispatches on the shapes.

Exit 0: stdout gets one JSON line {"captured": true, "nodes": N, "ops": {op: count}, ...}.
Exit 3: the reference could not be captured; stdout gets one JSON line
{"captured": false, "reason": ..., "op": ... or null, "source": "definition reference line N: ..." or null}.
Exit 4: the same line, for a reason of this machine at this time (not enough memory to draw the
real inputs draft export needs): the caller does not cache it.
Exit 2: usage error (one line on stderr). Everything else goes to stderr.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import math
import os
import re
import sys
import time
import traceback
import warnings

CAPTURE_FORMAT_VERSION = 1


def _quiet_imports():
    warnings.filterwarnings("ignore")
    global torch, ko, capture_inputs, capture_graph, capture_decomp
    with contextlib.redirect_stderr(io.StringIO()):
        import torch  # noqa: F401
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import capture_decomp  # noqa: F401
    import capture_graph  # noqa: F401
    import capture_inputs  # noqa: F401
    import kaoracle.common  # noqa: F401
    import kaoracle.reference  # noqa: F401
    import kaoracle.safetensors_io  # noqa: F401
    import kaoracle.scaled_mm  # noqa: F401
    import kaoracle.spec  # noqa: F401
    import kaoracle as ko  # noqa: F401
    torch.fx.proxy.TracerBase._filter_traceback_frames = _reference_frames_only


# ───────────────────────────── source lines ─────────────────────────────

REFERENCE_FILE = "_reference.py"  # the oracle's ReferenceSource writes the reference under this name


def _reference_frames_only(self, summary):
    """Stack traces that torch records on traced nodes, cut to the reference's own frames (torch
    keeps only frames of functions named `forward`, which the reference's `run` is not)."""
    frames = [f for f in summary if os.path.basename(f.filename) == REFERENCE_FILE]
    return traceback.StackSummary.from_list(frames)



class SourceLines:
    """Maps a stack trace or traceback to 'line N: text' of the definition's reference."""

    def __init__(self, path, source):
        self.path = path
        self.lines = source.splitlines()
        self.pre = {}

    def line_text(self, n):
        text = self.lines[n - 1].strip() if 0 < n <= len(self.lines) else ""
        return f"line {n}: {text}" if text else f"line {n}"

    def from_text(self, text):
        if not text:
            return None
        found = None
        for m in re.finditer(r'File "([^"]+)", line (\d+)', text):
            if os.path.basename(m.group(1)) == os.path.basename(self.path):
                found = int(m.group(2))
        return self.line_text(found) if found else None

    def find_line(self, text):
        """'line N: text' for the first reference line whose code is text (a traced frame's `loc`)."""
        text = text.strip()
        for i, line in enumerate(self.lines, 1):
            if text and line.strip() == text:
                return self.line_text(i)
        return text or None

    def remember(self, ep):
        """Keeps the traced program's stack traces: decomposition re-traces and loses them, but its
        nodes name their origin (meta "from_node")."""
        for n in ep.graph.nodes:
            if n.meta.get("stack_trace"):
                self.pre[n.name] = n.meta["stack_trace"]

    def of_node(self, node):
        own = self.from_text(node.meta.get("stack_trace"))
        if own:
            return own
        todo = list(node.meta.get("from_node") or [])
        while todo:
            s = todo.pop(0)
            if s.name in self.pre:
                found = self.from_text(self.pre[s.name])
                if found:
                    return found
            todo.extend(s.from_node or [])
        return None

    def of_exception(self, e):
        frames = [f for f in traceback.extract_tb(e.__traceback__) if os.path.basename(f.filename) == os.path.basename(self.path)]
        from_msg = self.from_text(str(e))
        if from_msg:
            return from_msg
        return self.line_text(frames[-1].lineno) if frames else None


# ───────────────────────────── export ─────────────────────────────


def _normalize(result, names):
    """run's result as a tuple in the definition's output order (tensor, tuple/list or dict)."""
    if isinstance(result, dict):
        return tuple(result[n] for n in names)
    if isinstance(result, (tuple, list)):
        if len(result) != len(names):
            raise capture_graph.CaptureError(f"run returns {len(result)} values, the definition names {len(names)}")
        return tuple(result)
    return (result,)


def make_module(run_fn, names, ties):
    """An nn.Module whose forward calls run and ties int scalar inputs to the tensor dims they equal."""

    class Reference(torch.nn.Module):
        def forward(self, *args):
            for si, ti, dim in ties:
                torch._check(args[si] == args[ti].shape[dim])
            return _normalize(run_fn(*args), names)

    return Reference()


def _suggested_fixes(msg):
    if "Suggested fixes:" not in msg:
        return None
    block = msg.split("Suggested fixes:", 1)[1]
    fixes = []
    for line in block.splitlines()[1:]:
        if " = " not in line:
            if fixes:
                break
            continue
        fixes.append(line.strip())
    return "Suggested fixes:\n" + "\n".join("  " + f for f in fixes) if fixes else None


def export_program(module, args, dynamic_shapes, src):
    """torch.export with the definition's dims, refined from torch's suggested fixes (divisibility,
    relations between axes) until it traces. Returns (program, dynamic_shapes used)."""
    from torch.export.dynamic_shapes import refine_dynamic_shapes_from_suggested_fixes

    ds = (dynamic_shapes,)
    deferred = False  # guards torch cannot prove become run-time asserts (kept as constraints)
    for _ in range(8):
        try:
            with contextlib.redirect_stdout(sys.stderr), torch.no_grad():
                return torch.export.export(module, tuple(args), dynamic_shapes=ds, strict=False,
                                           prefer_deferred_runtime_asserts_over_guards=deferred), ds
        except Exception as e:  # noqa: BLE001 — every tracer failure becomes a reason
            fixes = _suggested_fixes(str(e))
            new = None
            if fixes:
                try:
                    new = refine_dynamic_shapes_from_suggested_fixes(fixes, ds)
                except Exception:  # noqa: BLE001
                    new = None
            if new is not None and str(new) != str(ds):
                ds = new
            elif "Constraints violated" in str(e) and not deferred:
                deferred = True
            else:
                raise
    raise capture_graph.CaptureError("the dynamic shapes did not settle after eight refinements")


def decompose(ep):
    table = torch.export.default_decompositions()
    table.update(capture_decomp.extra_decompositions())
    with contextlib.redirect_stdout(sys.stderr):
        return ep.run_decompositions(table)


# ───────────────────────────── float scalars ─────────────────────────────


def _perturbed(values, float_idx):
    out = list(values)
    for k, i in enumerate(float_idx):
        v = values[i]
        out[i] = v * (1.0 + (k + 1) * 2.0**-12) if v != 0.0 else (k + 1) * 2.0**-20
    return out


def _float_leaves(a, path, out):
    if isinstance(a, float):
        out[path] = a
    elif isinstance(a, (list, tuple)):
        for i, x in enumerate(a):
            _float_leaves(x, path + (i,), out)


def _node_floats(node):
    out = {}
    for i, a in enumerate(node.args):
        _float_leaves(a, (i,), out)
    for k, a in node.kwargs.items():
        _float_leaves(a, (k,), out)
    return out


def scalar_references(ep1, ep2, values1, values2, float_idx):
    """{(node name, arg path): input index} where a float constant is a float scalar input, and the
    set of float inputs that change the graph otherwise (those stay specialised)."""
    n1 = [n for n in ep1.graph.nodes if n.op == "call_function"]
    n2 = [n for n in ep2.graph.nodes if n.op == "call_function"]
    changed_other = set()
    refs = {}
    if [n.target for n in n1] != [n.target for n in n2]:
        return refs, set(float_idx)
    for a, b in zip(n1, n2):
        fa, fb = _node_floats(a), _node_floats(b)
        if fa.keys() != fb.keys():
            return {}, set(float_idx)
        for path, x in fa.items():
            y = fb[path]
            if x == y:
                continue
            hit = [i for i in float_idx if x == values1[i] and y == values2[i]]
            if len(hit) == 1:
                refs[(a.name, path)] = hit[0]
            else:  # computed from a scalar (1 / scale, sqrt(eps)): which one is not known
                changed_other.update(float_idx)
    return refs, changed_other


_COMMON_FLOATS = {0.0, 1.0, -1.0, 0.5, 2.0, -0.5, -2.0}


def _count_floats(ep, v):
    out = []
    for n in ep.graph.nodes:
        if n.op == "call_function":
            out += [(n.name, path) for path, x in _node_floats(n).items() if x == v]
    return out


def refs_by_value(ep, pre, refs_pre, values, float_idx, specialized):
    """Scalar references in the decomposed program by value, when the traced programs show that
    every constant equal to a float scalar is that scalar (and it is not a common constant that a
    decomposition might add): saves decomposing the second trace. None when not sure."""
    refs = {}
    for i in float_idx:
        if i in specialized:
            continue
        v = values[i]
        found = sum(1 for k in refs_pre.values() if k == i)
        if v in _COMMON_FLOATS or len(_count_floats(pre, v)) != found:
            return None
        hits = _count_floats(ep, v)
        if found and not hits:
            return None
        refs.update({key: i for key in hits})
    return refs


def scalar_constants(ep1, ep2, values1, values2, float_idx):
    """{lifted constant name: input index} for one-element constants that hold a float scalar input
    in both traces (`torch.tensor(scale)`): made from the input at run time instead of baked in."""
    out = {}
    for k, t in ep1.constants.items():
        u = ep2.constants.get(k)
        if not (isinstance(t, torch.Tensor) and isinstance(u, torch.Tensor) and t.numel() == 1 and u.numel() == 1
                and t.is_floating_point() and t.dim() == 0):
            continue
        x, y = t.item(), u.item()
        hit = [i for i in float_idx if x == torch.tensor(values1[i], dtype=t.dtype).item()
               and y == torch.tensor(values2[i], dtype=t.dtype).item()]
        if len(hit) == 1 and x != y:
            out[k] = hit[0]
    return out


def constant_changes(ep1, ep2, scalar_consts=()):
    """Names of lifted constants whose data differ between two traces (scalar_consts excepted)."""
    out = []
    for k, t in ep1.constants.items():
        u = ep2.constants.get(k)
        if k in scalar_consts:
            continue
        if isinstance(t, torch.Tensor) and isinstance(u, torch.Tensor) and (t.shape != u.shape or not torch.equal(t, u)):
            out.append(k)
    return out


# ───────────────────────────── symbols ─────────────────────────────


def input_symbols(ep, defn, user_nodes, int_roles):
    """torch symbol -> sympy expression over axis names, from where each axis sits in the inputs."""
    import sympy

    subs = {}
    specs = list(defn["inputs"].values())
    names = list(defn["inputs"].keys())
    kinds = capture_inputs.axis_kinds(defn)
    for node, spec, name in zip(user_nodes, specs, names):
        val = node.meta.get("val")
        if isinstance(val, torch.Tensor) and spec["shape"] is not None:
            for d, axis in zip(val.shape, spec["shape"]):
                axis = str(axis)
                if isinstance(d, torch.SymInt) and kinds.get(axis) in ("var", "expr"):
                    _map_linear(d.node.expr, sympy.Symbol(axis), subs)
        elif isinstance(val, torch.SymInt):
            _map_linear(val.node.expr, sympy.Symbol(int_roles.get(name, name)), subs)
    return subs


def _map_linear(expr, axis_sym, subs):
    """expr (torch symbols) equals axis_sym: when expr is a*s + b in one unmapped symbol s, map
    s -> (axis_sym - b) / a."""
    import sympy

    free = [s for s in expr.free_symbols if s not in subs]
    if len(free) != 1 or len(expr.free_symbols) != 1:
        return
    s = free[0]
    poly = sympy.Poly(expr, s) if expr.is_polynomial(s) else None
    if poly is None or poly.degree() != 1:
        return
    a, b = poly.all_coeffs()
    subs[s] = (axis_sym - b) / a


# ───────────────────────────── driver ─────────────────────────────


def scalar_roles(defn, problem, values):  # noqa: C901
    """For each int scalar input: ('tie', axis, input index, dim), ('dynamic',), or ('static',)."""
    names = list(defn["inputs"].keys())
    roles = {}
    for i, (name, spec) in enumerate(defn["inputs"].items()):
        v = values[i]
        if spec["shape"] is not None or isinstance(v, bool) or not isinstance(v, int):
            continue
        seen = [(w["inputs"][i]["value"], w["axes"]) for w in problem.workloads.values()
                if w["inputs"][i]["source"] == "scalar"]
        tie = None
        for axis, kind in capture_inputs.axis_kinds(defn).items():
            if kind != "var" or not seen or not all(axes.get(axis) == val for val, axes in seen):
                continue
            for ti, tspec in enumerate(defn["inputs"].values()):
                if tspec["shape"] and axis in [str(a) for a in tspec["shape"]]:
                    tie = ("tie", axis, ti, [str(a) for a in tspec["shape"]].index(axis))
                    break
            if tie:
                break
        if tie:
            roles[names[i]] = tie
        elif len({val for val, _ in seen}) > 1:
            roles[names[i]] = ("dynamic",)
        else:
            roles[names[i]] = ("static",)
    return roles


def capture(spec_path, out_dir, workload_uuid=None, static=False):
    """Captures the problem; returns the summary dict. Raises CaptureError."""
    t0 = time.time()
    problem = ko.spec.ProblemSpec(spec_path)
    defn = capture_inputs.definition_view(problem)
    if workload_uuid:
        try:
            w = problem.workload(workload_uuid)
        except ko.common.OracleError as e:
            raise ko.common.UsageError(str(e))
    else:
        w = problem.capture_workload
    refsrc = ko.reference.ReferenceSource(defn["reference"])
    src = SourceLines(refsrc.path, defn["reference"])
    try:
        try:
            namespace = refsrc.load()
        except Exception as e:
            raise capture_graph.CaptureError(f"the reference does not load: {ko.common.exc_text(e)}",
                                             source=src.of_exception(e))
        run_fn = namespace.get("run")
        if not callable(run_fn):
            raise capture_graph.CaptureError("the reference defines no run()")
        try:
            values = capture_inputs.example_inputs(problem, namespace, w)
        except Exception as e:
            raise capture_graph.CaptureError(f"example inputs: {ko.common.exc_text(e)}", source=src.of_exception(e))
        def real_inputs():
            capture_inputs.check_room_for_real_inputs(values)
            try:
                return capture_inputs.real_inputs(problem, namespace, w)
            except Exception as e:  # noqa: BLE001
                raise capture_graph.CaptureError(f"real inputs for draft export: {ko.common.exc_text(e)}",
                                                 source=src.of_exception(e))

        return _capture_traced(problem, defn, w, values, run_fn, src, out_dir, t0, real_inputs, static)
    finally:
        refsrc.cleanup()


class Tracing:
    """How the reference is traced: torch.export on unfilled example inputs, or — when that meets a
    data-dependent branch — torch.export.draft_export on real inputs of the same workload, which
    takes the branch the data take (recorded in `assumptions`) and refuses to fix a data-dependent
    size."""

    def __init__(self, module, src):
        self.module, self.src = module, src
        self.draft = False
        self.assumptions = []

    def trace(self, values, dyn, decomposed=True):
        """(program, dynamic shapes used); the traced program is kept in self.pre."""
        try:
            if self.draft:
                ep, ds = self._draft(values, dyn)
            else:
                ep, ds = export_program(self.module, values, dyn, self.src)
            self.src.remember(ep)
            self.pre = ep
            return (decompose(ep) if decomposed else ep), ds
        except capture_graph.CaptureError:
            raise
        except Exception as e:  # noqa: BLE001
            raise failure_of(e, self.src)

    def _draft(self, values, dyn):
        ds = (dyn,)
        _emulate_scaled_mm_on_cpu()
        with contextlib.redirect_stdout(sys.stderr), torch.no_grad():
            ep = torch.export.draft_export(self.module, tuple(values), dynamic_shapes=ds, strict=False)
        found = []
        for f in ep._report.failures:
            data = f.data if isinstance(f.data, dict) else {}
            expr, result = str(data.get("expr", "")), str(data.get("result", ""))
            locals_ = data.get("frame_locals") if isinstance(data.get("frame_locals"), dict) else {}
            source = self.src.find_line(str(locals_.get("loc", "")))
            if f.failure_type.name == "DATA_DEPENDENT_ERROR" and _is_condition(expr):
                found.append({"condition": expr, "taken": result, "source": source})
                continue
            what = "a size computed from tensor data" if f.failure_type.name == "DATA_DEPENDENT_ERROR" \
                else f.failure_type.name
            raise capture_graph.CaptureError(f"data-dependent: {what} ({expr}) would be fixed to the traced value "
                                             f"{result}", source=source)
        self.assumptions = found
        return ep, ds


_CPU_OVERRIDES = []


def _emulate_scaled_mm_on_cpu():
    """draft_export runs the reference on real CPU tensors, and the CPU `_scaled_mm` takes only
    per-tensor scales. During a capture it is replaced by an emulation: nvfp4 operands as the
    oracle emulates them (kaoracle/scaled_mm.py), per-tensor fp8 scales exactly, zeros of the right
    shape otherwise (other block scales) — the values only steer data-dependent branches."""
    if _CPU_OVERRIDES:
        return
    lib = torch.library.Library("aten", "IMPL")

    def scaled_mm(a, b, scale_a, scale_b, bias=None, scale_result=None, out_dtype=None, use_fast_accum=False):
        dtype = out_dtype or a.dtype
        if a.dtype == torch.float4_e2m1fn_x2:
            return ko.scaled_mm.emulated_scaled_mm(a, b, scale_a, scale_b, bias, dtype)
        if scale_a.numel() == 1 and scale_b.numel() == 1:
            out = (a.float() * scale_a.float()) @ (b.float() * scale_b.float())
            if bias is not None:
                out = out + bias.float()
            return out.to(dtype)
        return torch.zeros(a.shape[0], b.shape[1], dtype=dtype)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        lib.impl("_scaled_mm", scaled_mm, "CPU")
    _CPU_OVERRIDES.append(lib)


def _is_condition(expr):
    """Whether a guard is a true/false condition (a branch), not an integer (a size)."""
    return bool(re.match(r"^(Eq|Ne|Lt|Le|Gt|Ge|Not|And|Or|Unequality|Equality)\(", expr)) or \
        any(op in expr for op in ("<", ">", "==", "!=")) or expr in ("True", "False")


def _capture_traced(problem, defn, w, values, run_fn, src, out_dir, t0, real_inputs, static=False):
    from torch.export import Dim

    uuid, axes = w["uuid"], w["axes"]
    names_out = list(defn["outputs"].keys())
    dims = capture_inputs.DimBuilder(defn)
    roles = {} if static else scalar_roles(defn, problem, values)
    dyn, ties, int_roles = [], [], {}
    for i, (name, spec) in enumerate(defn["inputs"].items()):
        role = roles.get(name)
        if static:
            dyn.append(None)
        elif isinstance(values[i], torch.Tensor):
            dyn.append(dims.tensor_spec(spec["shape"]))
        elif role and role[0] == "tie":
            dyn.append(Dim.DYNAMIC)
            ties.append((i, role[2], role[3]))
            int_roles[name] = role[1]
        elif role and role[0] == "dynamic":
            dyn.append(Dim.AUTO)
        else:
            dyn.append(None)
    def apply_ties(vals):  # a tied int scalar equals its axis (also where the trace raised an axis to 2)
        for si, ti, dim in ties:
            vals[si] = int(vals[ti].shape[dim])
        return vals

    values = apply_ties(list(values))
    tracing = Tracing(make_module(run_fn, names_out, ties), src)
    try:
        ep, ds = tracing.trace(values, tuple(dyn))
    except capture_graph.CaptureError as e:
        if not e.reason.startswith("data-dependent"):
            raise
        values = apply_ties(list(real_inputs()))
        tracing.draft = True
        ep, ds = tracing.trace(values, tuple(dyn))
    float_idx = [i for i, v in enumerate(values) if isinstance(v, float)]
    refs, specialized, consts = {}, set(), {}
    if float_idx:
        pre1 = tracing.pre
        values2 = _perturbed(values, float_idx)
        try:
            pre2, _ = tracing.trace(values2, ds[0], decomposed=False)
            refs_pre, specialized = scalar_references(pre1, pre2, values, values2, float_idx)
            consts = scalar_constants(pre1, pre2, values, values2, float_idx)
            if constant_changes(pre1, pre2, consts):
                specialized.update(float_idx)
            refs = refs_by_value(ep, pre1, refs_pre, values, float_idx, specialized)
            if refs is None:  # not sure from the traced programs: compare the decomposed ones
                ep2 = decompose(pre2)
                refs, specialized = scalar_references(ep, ep2, values, values2, float_idx)
                consts = scalar_constants(ep, ep2, values, values2, float_idx)
                if constant_changes(ep, ep2, consts):
                    specialized.update(float_idx)
        except capture_graph.CaptureError:
            specialized.update(float_idx)
    consts = {k: i for k, i in consts.items() if i not in specialized}
    graph = build_graph(ep, defn, problem, w, values, int_roles, refs, specialized, src, static, consts)
    if tracing.assumptions:
        graph["assumptions"] = tracing.assumptions
    graph["capture"] = {"workload": uuid, "axes": {a: axes[a] for a in axes}, "torch": torch.__version__,
                        "seconds": round(time.time() - t0, 2), "static": static}
    write_graph(graph, out_dir)
    ops = {}
    for n in graph["nodes"]:
        ops[n["op"]] = ops.get(n["op"], 0) + 1
    return {"captured": True, "problem": defn.get("name"), "nodes": len(graph["nodes"]), "ops": ops,
            "notes": graph.get("notes", []), "specialized": [v["name"] for v in graph["inputs"] if "specialized" in v],
            "assumptions": len(tracing.assumptions), "workload": uuid, "seconds": graph["capture"]["seconds"],
            "static": static}


def build_graph(ep, defn, problem, workload, values, int_roles, refs, specialized, src, static=False, consts=None):
    from torch.export.graph_signature import InputKind, OutputKind

    sig = ep.graph_signature
    placeholders = [n for n in ep.graph.nodes if n.op == "placeholder"]
    by_name = dict(zip([s.arg.name for s in sig.input_specs], sig.input_specs))
    user_nodes = [n for n in placeholders if by_name[n.name].kind == InputKind.USER_INPUT]
    subs = input_symbols(ep, defn, user_nodes, int_roles)
    if not static:
        check_var_axes(defn, user_nodes)
    gw = capture_graph.GraphWriter(ep, subs, src.of_node)
    names_in = list(defn["inputs"].keys())
    inputs = []
    for k, node in enumerate(user_nodes):
        vid = gw.new_value(node.meta["val"] if node.meta.get("val") is not None else values[k], node)
        gw.value_of[node.name] = vid
        entry = {"name": names_in[k], "value": vid}
        v = values[k]
        if isinstance(v, bool) or (isinstance(v, int) and not isinstance(node.meta.get("val"), torch.SymInt)) \
                or (isinstance(v, float) and k in specialized):
            if not isinstance(v, torch.Tensor):
                entry["specialized"] = v
        if isinstance(v, float):
            gw.values[vid]["dtype"] = "float64"
        inputs.append(entry)
    for (node_name, path), k in refs.items():
        gw.scalar_refs[(node_name, path)] = inputs[k]["value"]
    for node in placeholders:
        spec = by_name[node.name]
        if spec.kind == InputKind.USER_INPUT:
            continue
        t = ep.constants.get(spec.target) if spec.target in ep.constants else ep.state_dict.get(spec.target)
        if not isinstance(t, torch.Tensor):
            raise capture_graph.CaptureError(f"input {spec.target} of kind {spec.kind.name} is not a tensor")
        if consts and spec.target in consts:
            gw.add_scalar_tensor(node, t, inputs[consts[spec.target]]["value"])
        else:
            gw.add_constant(node, t)
    for node in ep.graph.nodes:
        if node.op == "call_function":
            gw.add_call(node)
        elif node.op == "get_attr":
            raise capture_graph.CaptureError("a nested graph (control flow the tracer kept)", source=src.of_node(node))
    out_node = next(n for n in ep.graph.nodes if n.op == "output")
    outs = out_node.args[0]
    outputs, mutations = [], []
    names_out = list(defn["outputs"].keys())
    for spec, a in zip(sig.output_specs, outs):
        ref = gw.arg(a, out_node, ("out",)) if a is not None else None
        if spec.kind == OutputKind.USER_OUTPUT:
            if ref is None or "value" not in ref:
                raise capture_graph.CaptureError(f"output {len(outputs)} is not a tensor value ({ref})")
            outputs.append({"name": names_out[len(outputs)], "value": ref["value"]})
        elif spec.kind == OutputKind.USER_INPUT_MUTATION:
            mutations.append({"input": names_in[[n.name for n in user_nodes].index(spec.target)],
                              "value": ref["value"] if ref else None})
    graph = {
        "format": "kernelarc-graph",
        "version": CAPTURE_FORMAT_VERSION,
        "problem": defn.get("name"),
        "axes": defn["axes"],
        "values": gw.values,
        "inputs": inputs,
        "outputs": outputs,
        "constants": gw.constants,
        "nodes": gw.nodes,
    }
    if mutations:
        graph["mutations"] = mutations
    constraints = range_constraints(ep, subs) + [c for c in gw.asserts if c not in ("True",)]
    if constraints:
        graph["constraints"] = constraints
    notes = check_outputs(graph, defn, workload)
    if notes:
        graph["notes"] = notes
    graph["_constant_tensors"] = gw.constant_tensors
    return graph


def check_var_axes(defn, user_nodes):
    """A var axis that the trace turned into a constant (a loop or branch over its size) fails."""
    kinds = capture_inputs.axis_kinds(defn)
    for node, spec in zip(user_nodes, defn["inputs"].values()):
        val = node.meta.get("val")
        if not isinstance(val, torch.Tensor) or spec["shape"] is None:
            continue
        for d, axis in zip(val.shape, spec["shape"]):
            if kinds.get(str(axis)) == "var" and isinstance(d, int):
                raise capture_graph.CaptureError(
                    f"var axis '{axis}' was specialized to {d} by the trace (Python control flow over its size)")


def range_constraints(ep, subs):
    """Divisibility facts torch found (an axis traced as a multiple of k), as 'axis % k == 0'."""
    import sympy

    out = []
    for s, e in subs.items():
        num, den = sympy.fraction(sympy.together(e))
        if den != 1 and den.is_Integer:
            out.append(f"({capture_graph.expr_text(num)}) % {int(den)} == 0")
    return out


def check_outputs(graph, defn, workload):
    """Notes where an output's dtype or shape (at the traced workload) differs from the definition."""
    import sympy

    notes = []
    axes = {k: sympy.Integer(v) for k, v in workload["axes"].items()}
    resolved = {o["name"]: o["shape"] for o in workload["outputs"]}
    vals = graph["values"]
    for o in graph["outputs"]:
        spec = defn["outputs"][o["name"]]
        v = vals[o["value"]]
        want = spec["dtype"]
        if v.get("dtype") != want and not (want == "float4_e2m1" and v.get("dtype") == "float4_e2m1fn_x2"):
            notes.append(f"output '{o['name']}' is {v.get('dtype')}, the definition says {want}")
        if spec["shape"] is not None and v["kind"] == "tensor":
            try:
                got = [int(sympy.sympify(str(s), locals=dict(axes))) for s in v["shape"]]
                exp = list(resolved[o["name"]])
                if got != exp:
                    notes.append(f"output '{o['name']}' has shape {got} at the traced workload, the definition {exp}")
            except Exception as e:  # noqa: BLE001
                notes.append(f"output '{o['name']}' shape {v['shape']} not checked: {e}")
    return notes


def write_graph(graph, out_dir):
    os.makedirs(out_dir, exist_ok=True)
    tensors = graph.pop("_constant_tensors")
    if tensors:
        ko.safetensors_io.write_safetensors(os.path.join(out_dir, "constants.safetensors"), tensors)
    tmp = os.path.join(out_dir, "graph.json.tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(graph, f, indent=1)
        f.write("\n")
    os.replace(tmp, os.path.join(out_dir, "graph.json"))


# ───────────────────────────── failures ─────────────────────────────


_OP_PATTERNS = [
    r"\b(aten|prims)\.(\w+)\.(\w+)",
    r"\b(aten|prims)::(\w+)(?:\.(\w+))?",
]


def failure_of(e, src):
    """A CaptureError naming the op and reference line a tracer exception points at."""
    text = str(e)
    first = next((ln.strip() for ln in text.splitlines() if ln.strip()), type(e).__name__)
    first = re.sub(r"\s+", " ", first)[:300]
    op = None
    for pat in _OP_PATTERNS:
        m = re.search(pat, text)
        if m:
            op = f"{m.group(1)}.{m.group(2)}.{m.group(3) or 'default'}"
            break
    kind = type(e).__name__
    if "data-dependent" in text or "data dependent" in text or "GuardOnDataDependent" in kind:
        reason = f"data-dependent: {first}"
    elif "Constraints violated" in text:
        reason = "a var axis cannot stay symbolic: " + _violation_summary(text)
    else:
        reason = f"{kind}: {first}"
    return capture_graph.CaptureError(reason, op=op, source=src.of_exception(e))


def _violation_summary(text):
    lines = [ln.strip(" -") for ln in text.splitlines() if "specialized" in ln or "Not all values" in ln]
    return re.sub(r"\s+", " ", lines[0])[:300] if lines else "constraint violated"


def result_of(spec_path, out_dir, workload=None, static=False):
    """(exit status, result line) for one capture: 0 captured, 3 not, 4 not for now; UsageError passes through."""
    try:
        return 0, capture(spec_path, out_dir, workload, static)
    except capture_graph.CaptureError as e:
        src = f"definition reference {e.source}" if e.source else None
        return 4 if e.transient else 3, {"captured": False, "reason": e.reason, "op": e.op, "source": src}
    except ko.common.UsageError:
        raise
    except Exception as e:  # noqa: BLE001 — an unexpected failure is still a reason, with a traceback
        traceback.print_exc()
        return 3, {"captured": False, "reason": f"internal: {type(e).__name__}: {str(e)[:300]}", "op": None,
                   "source": None}


def main(argv=None):
    p = argparse.ArgumentParser(description="Capture a definition's reference as an operator graph.")
    p.add_argument("--spec", required=True, help="the problem's spec (written by the C++ problem layer)")
    p.add_argument("-o", "--out", required=True, help="output folder for graph.json")
    p.add_argument("--workload", help="trace this workload instead of the smallest")
    p.add_argument("--static", action="store_true",
                   help="trace the workload's shapes and int scalars as constants (needs --workload)")
    a = p.parse_args(argv)
    if a.static and not a.workload:
        print("capture: --static needs --workload", file=sys.stderr)
        return 2
    _quiet_imports()
    try:
        rc, result = result_of(a.spec, a.out, a.workload, a.static)
    except ko.common.UsageError as e:
        print(f"capture: {e}", file=sys.stderr)
        return 2
    print(json.dumps(result))
    return rc


if __name__ == "__main__":
    sys.exit(main())
