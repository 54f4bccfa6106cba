#!/usr/bin/env python3
"""KernelArc reference oracle: generates SOL-ExecBench-style inputs and reference outputs.

This is the only Python in KernelArc. The C++ judge runs it as a subprocess:

    python3 kernelarc_oracle.py generate --problem DIR --device cpu|cuda \
        --job UUID:SEED:OUTDIR [--job ...] [--time-reference] [--time-compile [--compile-budget S]]
    python3 kernelarc_oracle.py count --problem DIR --device cpu|cuda --workload UUID [--workload ...]
    python3 kernelarc_oracle.py regen --problem DIR --device cpu|cuda --job UUID:SEED:OUTDIR \
        --inputs NAME[,NAME...]

``count`` prints one JSON line per workload: FLOPs by dtype, elementwise FLOPs and the fewest
bytes (see "work counting" below); it writes no files.

For each job it finds the workload UUID in DIR/workload.jsonl, generates the inputs the way
SOL-ExecBench's harness does (docs/sol-execbench-rules.md sections 2 and 3), runs the
definition's reference, and writes into OUTDIR:

* ``inputs.safetensors``    every definition input, by name (scalars as 0-D tensors), except
                            large random ones (see "Regenerated inputs" below);
* ``reference.safetensors`` every definition output, by name, as the reference returned it;
* ``meta.json``             versions, seeds, dtypes/shapes, optional reference timing;
* ``error.json``            instead of meta.json when the job failed: {"stage", "message"}.

``regen`` redoes the input generation of one job (the same code path and random draws as
``generate``, no reference run) and writes only the named inputs to OUTDIR/inputs.safetensors:
see "Regenerated inputs" below.

Stdout carries exactly one JSON line per job, written when the job ends: {"uuid": ..., "seed": ...,
"ok": bool, "seconds": wall time of the job}.
Everything else (warnings, prints from reference code, torch logs) goes to stderr.

Dependencies: the Python standard library and torch. The safetensors format is written and
read here; neither the ``safetensors`` nor the ``numpy`` package is used.

Deliberate deviations from upstream (NVIDIA SOL-ExecBench, HEAD 8d2237d)
----------------------------------------------------------------------
* Seeding. Upstream seeds ``random``, ``torch`` and ``torch.cuda`` once per process with 200
  and then draws every workload and every correctness round from that single stream, so the
  values of workload k depend on everything that ran before it. That sequence cannot be
  replayed job by job. Here every job (workload UUID, SEED) reseeds all three generators with
  ``int(sha256(f"{uuid}:{seed}").hexdigest()[:15], 16)`` right before input generation (after
  the reference module was executed, as upstream executes it before its own seeding). The
  distributions are identical to upstream; the exact values are not.
* float64 random inputs. Upstream's base generator raises ``ValueError("Unsupported random
  dtype")`` for float64 (the workload then fails with RUNTIME_ERROR). Here a float64 random
  input (tensor or scalar) that no name heuristic claimed is drawn with ``torch.randn`` in
  float64, and a line saying so is added to ``meta.json["notes"]``.
* FP4. Random ``float4_e2m1fn_x2`` inputs follow upstream literally: ``randn`` of the
  *declared* shape in float32 (not clamped), quantised to E2M1 codes with upstream's interval
  table, and two neighbouring elements of the last dimension packed into one byte (even element
  in the low nibble). The generated tensor therefore has a last dimension of half the declared
  one, and an odd declared last dimension fails (stage gen_inputs), as upstream. Safetensors
  store it as ``F4_E2M1FN_X2`` with the packed shape (one byte per element).
* Inputs are stored as generated, before the reference runs. If the reference modifies an
  input in place (upstream would then hand the modified tensor to the candidate), the
  input's name is listed in ``meta.json["reference_mutated_inputs"]`` (for a regenerated input,
  its bytes' SHA-256 after the run differs from the recorded one).
* Regenerated inputs. A random input larger than REGEN_BYTES (256 MiB; the environment variable
  KERNELARC_ORACLE_REGEN_BYTES overrides it) is not written to ``inputs.safetensors``:
  ``meta.json["inputs"][name]`` records ``"regenerate": true`` and the SHA-256 of its bytes as
  generated (row-major, as safetensors would hold them), and the judge rebuilds it with ``regen``
  when it loads the set, checking the hash (the paged KV caches and fp8 weights of the large
  attention/MoE problems would otherwise take 50-110 GB of disk per problem). Generation is
  deterministic per job (see "Seeding"), all inputs are drawn every time in definition order
  whether stored or not, so ``regen`` reproduces the bytes exactly on the same torch version and
  device; on another the hash check fails. The mutation check below compares a regenerated
  input's hash instead of the file. Cost per loaded set: one Python start (~2 s, torch import)
  plus drawing every input again (a 512 MiB bfloat16 input: ~7 s on a 2-core CPU).
* Timing uses fresh clones of the job's inputs for every call instead of upstream's shifting
  memory pool (a new 256-byte-shifted view per call); on CUDA the GPU span of each call is
  taken from a torch.profiler (Kineto/CUPTI) trace instead of cupti-python.
* Slow references. Upstream always runs 10 warm-up and 50 timed calls. Here a call that takes
  longer than the time budgets allow (references with Python loops over sequences and heads run
  for 50-500 ms and launch 10^4-10^5 kernels per call) gets fewer: warm-up stops after
  WARMUP_BUDGET_S seconds of warm calls (at least 2 calls, or 1 that took TIMED_BUDGET_S: 014's
  reference takes ~20 s a call on its longest workload), timed calls are cut to fit
  TIMED_BUDGET_S (at least MIN_TIMED_RUNS; one call at LONG_CALL_S and above, where a call is
  seconds of ~10^5-10^6 launches and its spread is far below what a score can resolve), and calls
  slower than SLOW_CALL_MS are timed with CUDA events rather than a profiler trace (a trace of
  10^6 kernels takes minutes to write and parse; at these durations the two differ by far less
  than the run-to-run spread). SLOW_CALL_MS was 20 ms: 012's decode reference takes 9-17 ms a
  call and launches ~10^4 kernels, and its 60 traced calls (eager and compiled) cost ~5 s per
  workload, 4.5 minutes of `sol` for that problem. The counts and the method used are recorded in
  the timing ("warmup", "iterations", "method").
  Calls of LONG_CALL_S and more are not repeated just to warm up: 014's 30 workloads take ~4
  minutes per pass over them, and `sol` made five passes (the call that writes the reference's
  outputs, a warm-up and a timed call, eagerly and compiled). The eager reference's output call
  (CUDA events around it) is the warm-up of its timing, and it is the timed call itself when the
  process had already run the reference on an earlier workload (libraries initialised; what is
  left, the allocator growing to new shapes, is milliseconds against seconds): "warmup" 0,
  "iterations" 1 and a method that says so. A compiled call of LONG_CALL_S or more that compiled
  nothing (torch._dynamo's frame counters unchanged: every frame it ran was compiled for an earlier
  workload or left to eager) is likewise its own warm-up and the timed call. So a long workload
  costs one eager pass, and one compiled pass once compiling has settled.
"""

from __future__ import annotations

import argparse
import ast
import bisect
import ctypes
import gc
import hashlib
import importlib.util
import inspect
import json
import math
import os
import random
import re
import shutil
import statistics
import struct
import sys
import tempfile
import time
import traceback

ORACLE_VERSION = "kernelarc-oracle-1"

WARMUP_RUNS = 10
TIMED_RUNS = 50
# Slow references (see "Slow references" above): budgets for the warm-up and the timed calls, the
# fewest timed calls, and the per-call time above which CUDA events replace the profiler trace.
WARMUP_BUDGET_S = 0.5
TIMED_BUDGET_S = 2.0
MIN_TIMED_RUNS = 3
LONG_CALL_S = 1.0
SLOW_CALL_MS = 5.0

# Random inputs larger than this (bytes) are regenerated by the judge instead of stored (see
# "Regenerated inputs" above).
REGEN_BYTES = 256 * 1024 * 1024  # above the RMSNorm problems' largest input (238 MB)

OUTPUT_FILES = ("inputs.safetensors", "reference.safetensors", "meta.json", "error.json")

torch = None  # imported once in main(), after stdout has been redirected

# Sizes (bytes) of the two host-to-device copies that bracket each timed call in the profiler
# trace. They are odd primes so that they are unlikely to collide with the reference's copies.
_MARK_BEFORE_BYTES = 12347
_MARK_AFTER_BYTES = 12373


class OracleError(Exception):
    """A job failure with the stage it happened in."""

    def __init__(self, stage, message):
        super().__init__(message)
        self.stage = stage


class UsageError(Exception):
    pass


def one_line(text, limit=2000):
    s = " ".join(str(text).split())
    return s if len(s) <= limit else s[: limit - 3] + "..."


def exc_text(e):
    name = type(e).__name__
    msg = str(e)
    return one_line(f"{name}: {msg}" if msg else name)


def warn(msg):
    print(f"kernelarc_oracle: {msg}", file=sys.stderr, flush=True)


# ───────────────────────────────────────── dtypes ─────────────────────────────────────────

# spec dtype name -> torch attribute name (definition.json vocabulary, sol-execbench-rules §1.2)
_SPEC_DTYPES = {
    "float64": "float64",
    "float32": "float32",
    "float16": "float16",
    "bfloat16": "bfloat16",
    "float8_e4m3fn": "float8_e4m3fn",
    "float8_e5m2": "float8_e5m2",
    "float4_e2m1": "float4_e2m1fn_x2",
    "float4_e2m1fn_x2": "float4_e2m1fn_x2",
    "int64": "int64",
    "int32": "int32",
    "int16": "int16",
    "int8": "int8",
    "bool": "bool",
}

# torch attribute name -> safetensors code (writer); the reader accepts these plus aliases.
_ST_CODES = {
    "float64": "F64",
    "float32": "F32",
    "float16": "F16",
    "bfloat16": "BF16",
    "float8_e4m3fn": "F8_E4M3",
    "float8_e5m2": "F8_E5M2",
    "float4_e2m1fn_x2": "F4_E2M1FN_X2",
    "int64": "I64",
    "int32": "I32",
    "int16": "I16",
    "int8": "I8",
    "uint8": "U8",
    "uint16": "U16",
    "uint32": "U32",
    "uint64": "U64",
    "bool": "BOOL",
}
_ST_ALIASES = {"F8_E4M3FN": "float8_e4m3fn"}


def spec_to_torch_dtype(name):
    attr = _SPEC_DTYPES.get(name)
    if attr is None or not hasattr(torch, attr):
        raise ValueError(f"unsupported dtype '{name}'")
    return getattr(torch, attr)


def torch_dtype_name(dtype):
    """Name used in meta.json: the spec name where there is one, else torch's own name."""
    return str(dtype).replace("torch.", "")


def _st_code_of(dtype):
    code = _ST_CODES.get(torch_dtype_name(dtype))
    if code is None:
        raise ValueError(f"dtype {dtype} cannot be stored in safetensors by this oracle")
    return code


def _st_dtype_of(code):
    attr = _ST_ALIASES.get(code)
    if attr is None:
        for k, v in _ST_CODES.items():
            if v == code:
                attr = k
                break
    if attr is None or not hasattr(torch, attr):
        raise ValueError(f"unsupported safetensors dtype '{code}'")
    return getattr(torch, attr)


# ─────────────────────────────────────── safetensors ──────────────────────────────────────


def _cpu_contiguous(t):
    t = t.detach()
    if t.device.type != "cpu":
        t = t.to("cpu")
    return t.contiguous()


def _tensor_view(t):
    """(keep-alive tensor, memoryview of its raw little-endian bytes in row-major order)."""
    t = _cpu_contiguous(t)
    n = t.numel() * t.element_size()
    if n == 0:
        return t, memoryview(b"")
    return t, memoryview((ctypes.c_char * n).from_address(t.data_ptr())).cast("B")


def write_safetensors(path, tensors, metadata=None):
    """Write {name: tensor} (any device) as a safetensors file, atomically via a temporary name.

    Data are laid out by decreasing element size (so every tensor stays aligned to its own
    element size), ties in the given order; the buffer has no holes, as the format requires.
    Tensors are brought to the CPU one at a time while writing, so the peak extra memory is
    the largest tensor, not the sum.
    """
    items = []
    for name, t in tensors.items():
        if not isinstance(name, str) or not name or name == "__metadata__":
            raise ValueError(f"bad tensor name {name!r}")
        items.append((name, t, _st_code_of(t.dtype), t.numel() * t.element_size()))
    order = sorted(range(len(items)), key=lambda i: (-items[i][1].element_size(), i))
    header = {}
    if metadata:
        header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    offset = 0
    for i in order:
        name, t, code, nbytes = items[i]
        header[name] = {"dtype": code, "shape": list(t.shape), "data_offsets": [offset, offset + nbytes]}
        offset += nbytes
    hbytes = json.dumps(header, separators=(",", ":")).encode("utf-8")
    hbytes += b" " * ((-len(hbytes)) % 8)
    tmp = path + ".tmp"
    try:
        with open(tmp, "wb") as f:
            f.write(struct.pack("<Q", len(hbytes)))
            f.write(hbytes)
            for i in order:
                keep, data = _tensor_view(items[i][1])
                if len(data) != items[i][3]:
                    raise RuntimeError(f"tensor '{items[i][0]}' changed size while being written")
                f.write(data)
                del keep, data
        os.replace(tmp, path)
    except BaseException:
        try:
            os.remove(tmp)
        except OSError:
            pass
        raise


def read_safetensors(path, names=None):
    """Read a safetensors file into ({name: CPU tensor}, metadata dict).

    With ``names``, only those tensors are read (a missing name is simply absent).
    """
    with open(path, "rb") as f:
        f.seek(0, os.SEEK_END)
        size = f.tell()
        f.seek(0)
        if size < 8:
            raise ValueError(f"{path}: truncated safetensors file")
        (hlen,) = struct.unpack("<Q", f.read(8))
        if hlen > 100 * 1024 * 1024 or 8 + hlen > size:
            raise ValueError(f"{path}: bad safetensors header length {hlen}")
        header = json.loads(f.read(hlen).decode("utf-8"))
        if not isinstance(header, dict):
            raise ValueError(f"{path}: safetensors header is not an object")
        data_start, data_len = 8 + hlen, size - 8 - hlen
        metadata = header.pop("__metadata__", None) or {}
        out = {}
        for name, e in header.items():
            if names is not None and name not in names:
                continue
            shape = [int(d) for d in e["shape"]]
            if e["dtype"] == "F4":
                # The safetensors library's own FP4 code counts 4-bit elements; pack pairs
                # along the last dimension into float4_e2m1fn_x2 (low nibble first).
                if not shape or shape[-1] % 2:
                    raise ValueError(f"{path}: F4 tensor '{name}' needs an even last dimension")
                shape[-1] //= 2
                dtype = torch.float4_e2m1fn_x2
            else:
                dtype = _st_dtype_of(e["dtype"])
            begin, end = (int(x) for x in e["data_offsets"])
            numel = 1
            for d in shape:
                if d < 0:
                    raise ValueError(f"{path}: tensor '{name}' has a negative dimension")
                numel *= d
            esize = torch.empty((), dtype=dtype).element_size()
            if not (0 <= begin <= end <= data_len) or end - begin != numel * esize:
                raise ValueError(f"{path}: tensor '{name}' has bad data_offsets [{begin}, {end}]")
            if numel == 0:
                out[name] = torch.empty(shape, dtype=dtype)
                continue
            buf = bytearray(end - begin)
            f.seek(data_start + begin)
            if f.readinto(buf) != len(buf):
                raise ValueError(f"{path}: short read for tensor '{name}'")
            out[name] = torch.frombuffer(buf, dtype=torch.uint8).view(dtype).reshape(shape)
    return out, metadata


# ─────────────────────────────────────── definition ───────────────────────────────────────


class Problem:
    def __init__(self, directory):
        self.dir = os.path.abspath(directory)
        dpath = os.path.join(self.dir, "definition.json")
        wpath = os.path.join(self.dir, "workload.jsonl")
        try:
            with open(dpath, "r", encoding="utf-8") as f:
                d = json.load(f)
        except (OSError, ValueError) as e:
            raise UsageError(f"cannot read {dpath}: {exc_text(e)}")
        if not isinstance(d, dict):
            raise UsageError(f"{dpath}: not a JSON object")
        for key, kind in (("axes", dict), ("inputs", dict), ("outputs", dict), ("reference", str)):
            if not isinstance(d.get(key), kind):
                raise UsageError(f"{dpath}: '{key}' is missing or not a {kind.__name__}")
        for section in ("inputs", "outputs"):
            for name, spec in d[section].items():
                if not isinstance(spec, dict) or "dtype" not in spec or "shape" not in spec:
                    raise UsageError(f"{dpath}: {section}.{name} needs 'dtype' and 'shape'")
        self.definition = d
        self.name = d.get("name", os.path.basename(self.dir))
        self.workloads = {}
        try:
            with open(wpath, "r", encoding="utf-8") as f:
                lines = f.readlines()
        except OSError as e:
            raise UsageError(f"cannot read {wpath}: {exc_text(e)}")
        for lineno, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                w = json.loads(line)
            except ValueError as e:
                warn(f"{wpath}:{lineno}: skipping unparsable line ({exc_text(e)})")
                continue
            uuid = w.get("uuid") if isinstance(w, dict) else None
            if not isinstance(uuid, str) or not uuid:
                warn(f"{wpath}:{lineno}: skipping a line without a uuid")
                continue
            if uuid in self.workloads:
                warn(f"{wpath}:{lineno}: duplicate uuid {uuid}; keeping the first")
                continue
            self.workloads[uuid] = w


def eval_axis_expression(expr, values):
    """Evaluate an expr axis: int/float literals, axis names, + - * / // % **, unary + -."""
    binops = {
        ast.Add: lambda a, b: a + b,
        ast.Sub: lambda a, b: a - b,
        ast.Mult: lambda a, b: a * b,
        ast.Div: lambda a, b: a / b,
        ast.FloorDiv: lambda a, b: a // b,
        ast.Mod: lambda a, b: a % b,
        ast.Pow: lambda a, b: a**b,
    }
    unops = {ast.UAdd: lambda a: +a, ast.USub: lambda a: -a}

    def ev(node):
        if isinstance(node, ast.Constant):
            if isinstance(node.value, (int, float)):
                return node.value
            raise TypeError(f"unsupported constant {node.value!r}")
        if isinstance(node, ast.Name):
            if node.id not in values:
                raise NameError(f"unknown axis '{node.id}' in expression '{expr}'")
            v = values[node.id]
            if not isinstance(v, int):
                raise TypeError(f"axis '{node.id}' must be an int, got {type(v).__name__}")
            return v
        if isinstance(node, ast.BinOp) and type(node.op) in binops:
            return binops[type(node.op)](ev(node.left), ev(node.right))
        if isinstance(node, ast.UnaryOp) and type(node.op) in unops:
            return unops[type(node.op)](ev(node.operand))
        raise TypeError(f"unsupported syntax {type(node).__name__} in expression '{expr}'")

    value = ev(ast.parse(expr, mode="eval").body)
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if not isinstance(value, int):
        raise TypeError(f"expression '{expr}' gives {value!r}, not an integer")
    return value


def resolve_axes(definition, workload_axes):
    """Const axes, then every workload axis (overwriting), then expr axes in definition order."""
    values = {}
    for name, ax in definition["axes"].items():
        if isinstance(ax, dict) and ax.get("type") == "const":
            values[name] = ax["value"]
    for name, v in (workload_axes or {}).items():
        values[name] = v
    for name, ax in definition["axes"].items():
        if isinstance(ax, dict) and ax.get("type") == "expr":
            values[name] = eval_axis_expression(ax["expression"], values)
    return values


def resolve_shape(spec_shape, axes):
    if spec_shape is None:
        return None
    shape = []
    for a in spec_shape:
        a = str(a)
        if a.isdigit():
            shape.append(int(a))
        elif a in axes:
            shape.append(int(axes[a]))
        else:
            raise KeyError(f"axis '{a}' has no value")
    return tuple(shape)


# ──────────────────────────────────── random generation ───────────────────────────────────


def _pack_fp4x2(x):
    """fp32 tensor -> E2M1 codes (upstream's interval table) packed 2 per byte along dim -1."""
    mag = x.abs()
    code = (
        (mag > 0.25).to(torch.uint8)
        + (mag >= 0.75).to(torch.uint8)
        + (mag > 1.25).to(torch.uint8)
        + (mag >= 1.75).to(torch.uint8)
        + (mag > 2.5).to(torch.uint8)
        + (mag >= 3.5).to(torch.uint8)
        + (mag > 5.0).to(torch.uint8)
    )
    code = code + (x < 0).to(torch.uint8) * 8  # NaN and -0.0 stay code 0, as upstream
    packed = code[..., 0::2] + code[..., 1::2] * 16
    return packed.contiguous().view(torch.float4_e2m1fn_x2)


def base_random(shape, dtype, device, notes, name):
    """Upstream's per-dtype generator (sol-execbench-rules §2.3), float64 extension noted."""
    if dtype in (torch.float32, torch.float16, torch.bfloat16):
        return torch.randn(shape, dtype=dtype, device=device)
    if dtype in (torch.float8_e4m3fn, torch.float8_e5m2):
        return torch.randn(shape, dtype=torch.float32, device=device).clamp_(-2.0, 2.0).to(dtype)
    if dtype == torch.float4_e2m1fn_x2:
        return _pack_fp4x2(torch.randn(shape, dtype=torch.float32, device=device))
    if dtype == torch.bool:
        return torch.randint(0, 2, shape, dtype=torch.bool, device=device)
    if dtype == torch.int8:
        return torch.randint(-128, 128, shape, dtype=dtype, device=device)
    if dtype in (torch.int16, torch.int32, torch.int64):
        return torch.randint(-1024, 1024, shape, dtype=dtype, device=device)
    if dtype == torch.float64:
        notes.append(
            f"input '{name}': float64 random drawn with torch.randn in float64 "
            "(upstream raises ValueError 'Unsupported random dtype' here)"
        )
        return torch.randn(shape, dtype=dtype, device=device)
    raise ValueError(f"Unsupported random dtype: {dtype}")


_DIGITS = "0123456789"


def _is_norm_param(name, suffix):
    if name == "norm" + suffix:
        return True
    if name.endswith(suffix):
        prefix = name[: -len(suffix)]
        if prefix.endswith(("_norm", "_layernorm", "layernorm")):
            return True
        stripped = prefix.rstrip(_DIGITS)
        if stripped and stripped.endswith(("norm", "layernorm")):
            return True
    return False


def _is_causal_mask(name, shape, desc):
    if len(shape) < 2 or shape[-1] != shape[-2]:
        return False
    if name in ("attention_mask", "causal_mask"):
        return True
    d = (desc or "").lower()
    return bool(desc) and "attention mask" in d and "causal" in d


def _is_binary_mask(name, desc):
    if name in ("x_mask", "text_mask", "aspect_ratio_mask", "drop_mask", "attention_mask"):
        return True
    if name.endswith("_mask") and desc:
        d = desc.lower()
        return any(k in d for k in ("binary", "{0, 1}", "0 or 1", "1.0 for valid", "0.0 for masked"))
    return False


def _is_positive(name):
    names = ("rstd", "std", "variance", "var")
    if name in names or name.endswith(("_rstd", "_std", "_variance", "_var")):
        return True
    base = name.rstrip(_DIGITS)
    return base in names or base.endswith(("_rstd", "_std", "_var"))


def _is_softmax_output(name, desc):
    if name in ("attn_weights", "attention_weights", "routing_weights"):
        return True
    d = (desc or "").lower()
    return bool(desc) and "softmax" in d and "output" in d


_WEIGHT_SUFFIXES = ("_weight", "_weights", "_proj", "_projs", "_proj_weight", "_proj_weights", "_weight_matrix")


def _is_weight_matrix(name, shape):
    if len(shape) < 2:
        return False
    if name == "weight" or name.endswith(_WEIGHT_SUFFIXES):
        return True
    stripped = name.rstrip(_DIGITS)
    return stripped == "weight" or stripped.endswith(_WEIGHT_SUFFIXES)


def heuristic_random(name, shape, dtype, device, desc):
    """Upstream's name/description heuristics (sol-execbench-rules §2.4), first match wins."""
    if not dtype.is_floating_point:
        return None
    if dtype in (torch.float8_e4m3fn, torch.float8_e5m2, torch.float4_e2m1fn_x2):
        return None
    if _is_norm_param(name, "_weight"):
        return torch.ones(shape, dtype=dtype, device=device)
    if _is_norm_param(name, "_bias"):
        return torch.zeros(shape, dtype=dtype, device=device)
    if _is_causal_mask(name, shape, desc):
        n = shape[-1]
        above = torch.ones(n, n, device=device).triu(diagonal=1).bool()
        return torch.zeros(shape, dtype=dtype, device=device).masked_fill_(above, torch.finfo(dtype).min)
    if _is_binary_mask(name, desc):
        return torch.randint(0, 2, shape, device=device).to(dtype)
    if name in ("cos", "sin", "cos_cached", "sin_cached", "rope_cos", "rope_sin"):
        t = torch.randn(shape, dtype=torch.float32, device=device).clamp_(-math.pi, math.pi)
        t = torch.cos(t) if name in ("cos", "cos_cached", "rope_cos") else torch.sin(t)
        return t.to(dtype)
    if _is_positive(name):
        return torch.randn(shape, dtype=dtype, device=device).abs() + 0.1
    if name == "A_cumsum":
        return torch.empty(shape, dtype=dtype, device=device).uniform_(-0.1, 0.0).cumsum(dim=-1)
    if name == "A_log":
        return torch.empty(shape, dtype=dtype, device=device).uniform_(-5.0, -1.0)
    if name == "A":
        return torch.empty(shape, dtype=dtype, device=device).uniform_(-1.0, -0.001)
    if name == "g":
        return torch.empty(shape, dtype=dtype, device=device).uniform_(-5.0, 0.0)
    if _is_softmax_output(name, desc):
        return torch.softmax(torch.randn(shape, dtype=torch.float32, device=device), dim=-1).to(dtype)
    if _is_weight_matrix(name, shape):
        return torch.randn(shape, dtype=dtype, device=device) / math.sqrt(shape[-1])
    return None


# ───────────────────────────────────────── jobs ───────────────────────────────────────────


def derive_seed(uuid, seed):
    return int(hashlib.sha256(f"{uuid}:{seed}".encode("utf-8")).hexdigest()[:15], 16)


def seed_everything(value, device):
    random.seed(value)
    torch.manual_seed(value)
    if device.type == "cuda":
        torch.cuda.manual_seed_all(value)


def sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize()


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


def _resolve_blob(problem_dir, rel):
    if os.path.isabs(rel):
        return rel
    roots = [problem_dir]
    extra = os.environ.get("FLASHINFER_TRACE_DIR")
    if extra:
        roots.append(extra)
    parts = [p for p in rel.replace("\\", "/").split("/") if p not in ("", ".")]
    for root in roots:
        for start in range(len(parts)):
            cand = os.path.join(root, *parts[start:])
            if os.path.exists(cand):
                return cand
    return os.path.join(problem_dir, rel)


def load_safetensors_inputs(problem, workload, shapes):
    """Upstream load_safetensors: key present, definition-resolved shape and dtype match."""
    defn = problem.definition
    cache = {}
    out = {}
    for name, desc in workload["inputs"].items():
        if not isinstance(desc, dict) or desc.get("type") != "safetensors":
            continue
        if name not in defn["inputs"]:
            continue
        path = os.path.realpath(_resolve_blob(problem.dir, str(desc.get("path", ""))))
        if path not in cache:
            cache[path] = read_safetensors(path)[0]
        tensors = cache[path]
        key = desc.get("tensor_key")
        if key not in tensors:
            raise ValueError(f"Missing key '{key}' in '{path}'")
        t = tensors[key]
        if tuple(t.shape) != shapes[name]:
            raise ValueError(f"'{name}' expected {list(shapes[name])}, got {list(t.shape)}")
        want = spec_to_torch_dtype(defn["inputs"][name]["dtype"])
        if t.dtype != want:
            raise ValueError(f"'{name}' expected {want}, got {t.dtype}")
        out[name] = t.contiguous()
    return out


def validate_workload(workload):
    inputs = workload.get("inputs")
    if inputs is None:
        inputs = workload["inputs"] = {}
    if not isinstance(inputs, dict):
        raise ValueError("workload 'inputs' is not an object")
    axes = workload.get("axes") or {}
    if not isinstance(axes, dict):
        raise ValueError("workload 'axes' is not an object")
    for k, v in axes.items():
        if not isinstance(v, int) or isinstance(v, bool) or v < 0:
            raise ValueError(f"workload axis '{k}' must be an int >= 0, got {v!r}")
    types = set()
    for name, d in inputs.items():
        t = d.get("type") if isinstance(d, dict) else None
        if t not in ("random", "scalar", "safetensors", "custom"):
            raise ValueError(f"workload input '{name}' has unknown type {t!r}")
        if t == "scalar" and (not isinstance(d.get("value"), (int, float, bool))):
            raise ValueError(f"scalar input '{name}' needs an int/float/bool value")
        if t == "safetensors" and not (isinstance(d.get("path"), str) and isinstance(d.get("tensor_key"), str)):
            raise ValueError(f"safetensors input '{name}' needs 'path' and 'tensor_key'")
        types.add(t)
    if "custom" in types and len(types) > 1:
        raise ValueError("a workload may not mix custom inputs with other input types")


def gen_inputs(problem, workload, axes, shapes, safe, namespace, device, notes):
    """Inputs in definition order (sol-execbench-rules §2.2). Returns (values, sources)."""
    defn = problem.definition
    winputs = workload["inputs"]
    custom = None
    entry = defn.get("custom_inputs_entrypoint")
    custom_fn = namespace.get(entry) if entry else None
    if entry and custom_fn is None:
        notes.append(f"custom_inputs_entrypoint '{entry}' is not defined by the reference")
    if custom_fn is not None:
        scalars = {n: d["value"] for n, d in winputs.items() if d.get("type") == "scalar"}
        custom = custom_fn({**axes, **scalars}, device)
    values, sources = [], {}
    for name, spec in defn["inputs"].items():
        dtype = spec_to_torch_dtype(spec["dtype"])
        d = winputs.get(name, {"type": "random"})
        kind = d.get("type", "random")
        sources[name] = kind if name in winputs else "random"
        if kind == "safetensors":
            values.append(safe[name].to(device))
        elif kind == "scalar":
            values.append(d["value"])
        elif kind == "custom":
            if custom is None or name not in custom:
                raise RuntimeError(f"custom input '{name}' was not produced by custom_inputs_entrypoint")
            v = custom[name]
            values.append(v.to(device) if isinstance(v, torch.Tensor) else v)
        else:
            shape = shapes[name]
            if shape is None:
                v = base_random((), dtype, device, notes, name).item()
            else:
                v = heuristic_random(name, shape, dtype, device, spec.get("description"))
                if v is None:
                    v = base_random(shape, dtype, device, notes, name)
                if defn.get("op_type") == "sampling" and name == "probs":
                    v = torch.softmax(v, dim=-1)
            values.append(v)
    return values, sources


def regen_threshold():
    v = os.environ.get("KERNELARC_ORACLE_REGEN_BYTES", "")
    return int(v) if v.strip() else REGEN_BYTES


def tensor_sha256(t):
    """SHA-256 of a tensor's bytes, row-major on the CPU (as safetensors stores them)."""
    keep, data = _tensor_view(t)
    h = hashlib.sha256(data).hexdigest()
    del keep, data
    return h


def to_storable(name, value):
    """Tensor to store for an input value (0-D tensor for a Python scalar), plus meta info."""
    if isinstance(value, torch.Tensor):
        t = value.detach()  # brought to the CPU (contiguous) tensor by tensor while writing
        return t, {"dtype": torch_dtype_name(t.dtype), "shape": list(t.shape)}
    if isinstance(value, bool):
        t, pytype = torch.tensor(value, dtype=torch.bool), "bool"
    elif isinstance(value, int):
        t, pytype = torch.tensor(value, dtype=torch.int64), "int"
    elif isinstance(value, float):
        t, pytype = torch.tensor(value, dtype=torch.float64), "float"
    else:
        raise TypeError(f"input '{name}' is a {type(value).__name__}, which cannot be stored")
    return t, {"dtype": torch_dtype_name(t.dtype), "shape": [], "scalar": True, "python_type": pytype}


def normalize_outputs(result, defn):
    """Upstream normalize_outputs (sol-execbench-rules §1.5): {output name: tensor}."""
    names = list(defn["outputs"].keys())
    dtypes = {n: spec_to_torch_dtype(s["dtype"]) for n, s in defn["outputs"].items()}

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


def _same_bytes(a, b):
    """Bitwise equality (NaN-safe) of two tensors."""
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    a, b = _cpu_contiguous(a), _cpu_contiguous(b)
    if a.numel() == 0:
        return True
    return torch.equal(a.reshape(-1).view(torch.uint8), b.reshape(-1).view(torch.uint8))


# ──────────────────────────────────────── timing ──────────────────────────────────────────


def _clone_args(values):
    return [v.clone() if isinstance(v, torch.Tensor) else v for v in values]


def _llc_bytes():
    best_level, best_size = -1, 0
    base = "/sys/devices/system/cpu/cpu0/cache"
    try:
        entries = sorted(os.listdir(base))
    except OSError:
        entries = []
    for e in entries:
        if not e.startswith("index"):
            continue
        try:
            with open(os.path.join(base, e, "level")) as f:
                level = int(f.read().strip())
            with open(os.path.join(base, e, "size")) as f:
                s = f.read().strip()
        except (OSError, ValueError):
            continue
        m = re.fullmatch(r"(\d+)\s*([KMG]?)", s, re.IGNORECASE)
        if not m:
            continue
        size = int(m.group(1)) * {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}[m.group(2).upper()]
        if level > best_level or (level == best_level and size > best_size):
            best_level, best_size = level, size
    return best_size if best_size > 0 else 32 << 20


def warm_up(call, counts_first=None):
    """Runs `call` (one reference call, synchronised; it returns the call's device time in ms)
    WARMUP_RUNS times, or fewer once the warm calls (every call after the first, which may compile
    or autotune) have used WARMUP_BUDGET_S; at least 2 calls, unless the first alone took
    TIMED_BUDGET_S. A first call of LONG_CALL_S or more for which counts_first() is true is the
    timed call itself (see "Slow references"). Returns (warm-up calls made, wall seconds of one warm
    call: the median, the first call's ms when it counts as the timed call, else None)."""
    walls = []
    for i in range(WARMUP_RUNS):
        t0 = time.perf_counter()
        ms = call()
        walls.append(time.perf_counter() - t0)
        if i == 0 and walls[0] >= LONG_CALL_S and counts_first is not None and counts_first():
            return 0, walls[0], ms
        if i >= 1 and sum(walls[1:]) >= WARMUP_BUDGET_S:
            break
        if i == 0 and walls[0] >= TIMED_BUDGET_S:  # seconds per call: no set-up cost matters there
            break
    warm = walls[1:] or walls
    return len(walls), statistics.median(warm), None


def timed_runs(call_s):
    """Timed calls for a reference whose warm call takes call_s seconds: TIMED_RUNS, or as many
    as fit TIMED_BUDGET_S, at least MIN_TIMED_RUNS; one at LONG_CALL_S and above."""
    if call_s <= 0 or call_s * TIMED_RUNS <= TIMED_BUDGET_S:
        return TIMED_RUNS
    if call_s >= LONG_CALL_S:
        return 1
    return max(MIN_TIMED_RUNS, min(TIMED_RUNS, int(TIMED_BUDGET_S / call_s)))


def _dynamo_frames():
    """torch._dynamo's count of frames it has tried to compile (None where it cannot be read)."""
    try:
        from torch._dynamo.utils import counters
        return sum(counters["frames"].values())
    except Exception:
        return None


def _warm(call, prior, compiled, clock, info):
    """The warm-up of one timing (see "Slow references"). prior: (wall s, ms, counts) of the call
    just made on the same inputs (the reference's output call; counts: the process had run the
    reference before it), or None; compiled: `call` runs a torch.compile wrapper. Returns
    (samples, wall seconds of one call): samples is [ms] when a long call counted as the timed
    call, with info saying so, else None after the warm-up (info["warmup"] set)."""
    if prior is not None and prior[0] >= LONG_CALL_S:
        wall_s, ms, counts = prior
        if counts:
            info.update({"warmup": 0, "iterations": 1, "method": f"{clock} (the output call counted: "
                         f"{wall_s:.1f} s per call, the reference ran before in this process)"})
            return [ms], wall_s
        info["warmup"] = 0  # the output call was the warm-up
        return None, wall_s
    counts_first = None
    if compiled:
        before = _dynamo_frames()
        counts_first = lambda: before is not None and _dynamo_frames() == before
    warmup, call_s, first_ms = warm_up(call, counts_first)
    if first_ms is not None:
        info.update({"warmup": 0, "iterations": 1, "method": f"{clock} (the first call counted: "
                     f"{call_s:.1f} s per call, nothing compiled in it)"})
        return [first_ms], call_s
    info["warmup"] = warmup
    return None, call_s


def time_cpu(fn, values, prior=None, compiled=False):
    flush = torch.empty(2 * _llc_bytes(), dtype=torch.uint8)

    def call():
        args = _clone_args(values)
        flush.fill_(1)
        t0 = time.perf_counter()
        fn(*args)
        return (time.perf_counter() - t0) * 1e3

    info = {"flush_bytes": flush.numel()}
    samples, call_s = _warm(call, prior, compiled, "cpu-wallclock", info)
    if samples is not None:
        return samples, info
    iterations = timed_runs(call_s)
    samples = []
    for i in range(iterations):
        args = _clone_args(values)
        flush.fill_(i & 0xFF)
        t0 = time.perf_counter()
        fn(*args)
        t1 = time.perf_counter()
        del args
        samples.append((t1 - t0) * 1e3)
    info.update({"method": "cpu-wallclock", "iterations": iterations})
    return samples, info


def _load_chrome_trace(path):
    with open(path, "r", encoding="utf-8", errors="replace") as f:
        text = f.read()
    try:
        doc = json.loads(text)
    except ValueError:
        # Some Kineto versions print bare inf/nan (e.g. a bandwidth over a zero duration).
        text = re.sub(r"(?<=[:\[,])(\s*)-?(?:inf|nan)\b", r"\1null", text, flags=re.IGNORECASE)
        doc = json.loads(text)
    return doc.get("traceEvents", []) if isinstance(doc, dict) else doc


def split_trace(events, iterations):
    """Per-iteration GPU spans from Kineto chrome-trace events.

    Each timed call is bracketed by two host-to-device copies of distinctive sizes. As in
    upstream's CUPTI loop, the runtime/driver API calls whose start lies strictly between the
    two markers' API calls (on any thread) give correlation ids; every kernel, memcpy and
    memset with one of those ids belongs to the call, and its time is max(end) - min(start).
    Returns (samples_ms, kernel_sets_consistent).
    """
    api = []  # (ts_us, correlation)
    dev = {}  # correlation -> [(start_us, end_us, key)]
    for ev in events:
        if not isinstance(ev, dict) or ev.get("ph") != "X":
            continue
        cat = str(ev.get("cat", "")).lower()
        args = ev.get("args") or {}
        corr = args.get("correlation")
        if corr is None:
            continue
        try:
            ts = float(ev["ts"])
        except (KeyError, TypeError, ValueError):
            continue
        if cat in ("cuda_runtime", "cuda_driver", "runtime", "driver"):
            api.append((ts, corr))
        elif cat in ("kernel", "gpu_memcpy", "gpu_memset", "concurrent_kernel", "memcpy", "memset"):
            cat = "gpu_memcpy" if cat == "memcpy" else "gpu_memset" if cat == "memset" else cat
            dur = float(ev.get("dur") or 0.0)
            nbytes = args.get("bytes", 0)
            dev.setdefault(corr, []).append((ts, ts + dur, f"{cat}|{ev.get('name', '')}|{nbytes}", cat, nbytes))
    api.sort(key=lambda x: x[0])
    first_api_ts = {}
    for ts, corr in api:
        first_api_ts.setdefault(corr, ts)

    def marker_times(nbytes):
        out = []
        for corr, evs in dev.items():
            if any(e[3] == "gpu_memcpy" and e[4] == nbytes for e in evs) and corr in first_api_ts:
                out.append((first_api_ts[corr], corr))
        return sorted(out)

    before = marker_times(_MARK_BEFORE_BYTES)
    after = marker_times(_MARK_AFTER_BYTES)
    if len(before) != iterations or len(after) != iterations:
        raise RuntimeError(
            f"found {len(before)}/{len(after)} iteration markers in the profiler trace, expected {iterations}"
        )
    marker_corrs = {c for _, c in before} | {c for _, c in after}
    api_ts = [a[0] for a in api]
    samples, first_keys, consistent = [], None, True
    for i in range(iterations):
        t0, t1 = before[i][0], after[i][0]
        if not t0 < t1 or (i + 1 < iterations and not t1 < before[i + 1][0]):
            raise RuntimeError(f"iteration markers out of order at iteration {i}")
        lo = bisect.bisect_right(api_ts, t0)
        hi = bisect.bisect_left(api_ts, t1)
        corrs = {api[j][1] for j in range(lo, hi)} - marker_corrs
        evs = [e for c in corrs for e in dev.get(c, ())]
        if not evs:
            raise RuntimeError(f"no device activity recorded for iteration {i}")
        samples.append((max(e[1] for e in evs) - min(e[0] for e in evs)) / 1e3)
        keys = {e[2] for e in evs}
        if first_keys is None:
            first_keys = keys
        elif keys != first_keys:
            consistent = False
    return samples, consistent


def _time_cuda_profiler(fn, values, flush, iterations):
    from torch.profiler import ProfilerActivity, profile

    src_a = torch.zeros(_MARK_BEFORE_BYTES, dtype=torch.uint8)
    src_b = torch.zeros(_MARK_AFTER_BYTES, dtype=torch.uint8)
    try:
        src_a, src_b = src_a.pin_memory(), src_b.pin_memory()
    except Exception:
        pass
    dst_a = torch.empty(_MARK_BEFORE_BYTES, dtype=torch.uint8, device=flush.device)
    dst_b = torch.empty(_MARK_AFTER_BYTES, dtype=torch.uint8, device=flush.device)
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        torch.cuda.synchronize()
        for _ in range(iterations):
            args = _clone_args(values)
            flush.zero_()
            dst_a.copy_(src_a, non_blocking=True)
            fn(*args)
            dst_b.copy_(src_b, non_blocking=True)
            torch.cuda.synchronize()
            del args
    tmpdir = tempfile.mkdtemp(prefix="kernelarc_trace_")
    try:
        path = os.path.join(tmpdir, "trace.json")
        prof.export_chrome_trace(path)
        events = _load_chrome_trace(path)
    finally:
        shutil.rmtree(tmpdir, ignore_errors=True)
    del prof
    return split_trace(events, iterations)


def _event_timed_call(fn, values, flush):
    """One call of fn on fresh copies of the values after flushing L2, timed by CUDA events (ms)."""
    args = _clone_args(values)
    flush.zero_()
    start = torch.cuda.Event(enable_timing=True)
    end = torch.cuda.Event(enable_timing=True)
    start.record()
    fn(*args)
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end)


def _time_cuda_events(fn, values, flush, iterations):
    return [_event_timed_call(fn, values, flush) for _ in range(iterations)]


def time_cuda(fn, values, device, prior=None, compiled=False):
    """Samples (ms) and how they were taken. prior: (wall s, device ms, counts) of a call just made
    on the same inputs (the reference's output call), counts: the process had run the reference
    before. compiled: fn is a torch.compile wrapper. See "Slow references" for the long calls."""
    l2 = torch.cuda.get_device_properties(device).L2_cache_size
    flush = torch.empty(int(2 * l2), dtype=torch.int8, device=device)
    torch.cuda.synchronize()

    def call():
        return _event_timed_call(fn, values, flush)

    info = {"flush_bytes": flush.numel()}
    samples, call_s = _warm(call, prior, compiled, "cuda-events", info)
    if samples is not None:
        return samples, info
    iterations = timed_runs(call_s)
    info["iterations"] = iterations
    if call_s * 1e3 > SLOW_CALL_MS:
        info["method"] = f"cuda-events (slow reference: {call_s * 1e3:.0f} ms per call)"
        return _time_cuda_events(fn, values, flush, iterations), info
    try:
        samples, consistent = _time_cuda_profiler(fn, values, flush, iterations)
        info["method"] = "torch-profiler-kineto"
        info["kernel_sets_consistent"] = consistent
    except Exception as e:
        torch.cuda.synchronize()
        warn(f"profiler timing failed ({exc_text(e)}); falling back to CUDA events")
        samples = _time_cuda_events(fn, values, flush, iterations)
        info["method"] = f"cuda-events (profiler failed: {exc_text(e)[:300]})"
    return samples, info


# ──────────────────────────────────────── work counting ───────────────────────────────────
#
# The speed-of-light bound of a workload needs the floating-point work of its reference and the
# fewest bytes that must move. Matrix, convolution and attention work comes from PyTorch's FLOP
# counter formulas (torch.utils.flop_counter.flop_registry, the table FlopCounterMode uses),
# attributed to the dtype of the op's first tensor input. Two corrections to FlopCounterMode:
# the CPU flash-attention op (aten._scaled_dot_product_flash_attention_for_cpu), which
# FlopCounterMode does not count at all, is counted with the same SDPA formula; and a causal SDPA
# (is_causal=True) counts only the unmasked query/key pairs (upper-left aligned, as PyTorch's
# causal mask: row i sees min(i + 1, Skv) keys), where FlopCounterMode reports the full
# 4·B·H·Sq·Skv·D. FlopCounterMode's own total is kept beside ("flop_counter_total").
# Elementwise work: every pointwise op counts its output's element count, every reduction (and
# softmax-like op) its largest input's element count, as FLOPs at the fp32 (CUDA-core) rate.
# Bytes: each output written once, and each tensor input read once, charged for the rows (indices
# along its first dimension) the reference reads from it. A paged KV cache is a pool of pages of
# which a workload reads a few (018: 8 of 989 669 pages, 1.14 GB of pool): a kernel must move the
# pages it reads, not the pool. The counter follows each input's storage through views and
# through dtype conversions that keep its rows (`cache.squeeze(1).to(torch.float32)`), records
# the rows an indexing op gathers through it (`flat[page_ids]`: aten.index, index_select,
# embedding), and charges every other op that reads it with the rows its memory spans (a whole
# tensor read, a slice, a select). An input the counter never sees read is charged whole.

_SOFTMAX_LIKE = {"_softmax", "_log_softmax", "softmax", "log_softmax", "logsumexp", "native_layer_norm",
                 "native_group_norm", "native_batch_norm", "_native_batch_norm_legit_no_training", "_fused_rms_norm",
                 "topk", "sort", "cumsum", "cumprod", "var_mean", "std_mean"}
_SDPA_OPS = {"_scaled_dot_product_flash_attention_for_cpu", "_scaled_dot_product_flash_attention",
             "_scaled_dot_product_efficient_attention", "_scaled_dot_product_cudnn_attention",
             "_scaled_dot_product_fused_attention_overrideable"}


def _causal_pairs(sq, skv):
    """Query/key pairs a causal (upper-left aligned) mask keeps: sum over rows of min(i+1, Skv)."""
    full = min(sq, skv)
    return full * (full + 1) // 2 + max(0, sq - skv) * skv


class _SolCounting:
    """The counting of SolCounter (see _make_counter): FLOPs by dtype and op, elementwise FLOPs, and
    the rows of each input that the reference reads."""

    def __init__(self):
        super().__init__()
        self.matrix = {}      # dtype name -> FLOPs
        self.by_op = {}       # op name -> FLOPs (matrix and elementwise)
        self.elementwise = 0
        self.notes = []
        # Row reads (see "Bytes" above): storage address -> (input index, first row, bytes per
        # row, byte offset of row 0, the storage kept alive so that its address is not reused).
        self.storages = {}
        self.touched = {}     # input index -> bool tensor over its rows (CPU)

    def track_inputs(self, args):
        for i, t in enumerate(args):
            if isinstance(t, torch.Tensor) and t.dim() >= 1 and t.numel() > 0 and t.stride(0) > 0:
                st = t.untyped_storage()
                self.storages[st.data_ptr()] = (i, 0, t.stride(0) * t.element_size(),
                                                t.storage_offset() * t.element_size(), st)
                self.touched[i] = torch.zeros(t.shape[0], dtype=torch.bool)

    def _window(self, t):
        """(input index, first row, end row, whether t's dim 0 runs along those rows) of the
        input rows t's memory spans, or None when t is no input's."""
        if t.numel() == 0:
            return None
        try:
            reg = self.storages.get(t.untyped_storage().data_ptr())
        except Exception:
            return None
        if reg is None:
            return None
        i, base, row_bytes, off0, _ = reg
        es = t.element_size()
        off = t.storage_offset() * es - off0
        span = (sum((n - 1) * abs(st) for n, st in zip(t.shape, t.stride())) + 1) * es
        first, end = off // row_bytes, (off + span - 1) // row_bytes + 1
        aligned = t.dim() >= 1 and t.stride(0) * es == row_bytes and off % row_bytes == 0
        return i, base + first, base + end, aligned

    def _read(self, w):
        i, first, end, _ = w
        rows = self.touched[i]
        rows[max(first, 0):min(end, rows.numel())] = True

    def _track(self, func, name, args, leaves, out):
        if getattr(func, "is_view", False) or not self.storages:
            return
        wins = [(a, self._window(a)) for a in leaves]
        if not any(w for _, w in wins):
            return
        src = args[0] if args and isinstance(args[0], torch.Tensor) else None
        ws = self._window(src) if src is not None else None
        gathered = None
        if ws and ws[3]:
            if name == "index" and len(args) > 1 and args[1] and isinstance(args[1][0], torch.Tensor):
                gathered = args[1][0]
            elif name == "index_select" and len(args) > 2 and int(args[1]) == 0:
                gathered = args[2]
            elif name == "embedding" and len(args) > 1:
                gathered = args[1]
            if gathered is not None and gathered.dtype in (torch.bool, torch.uint8):
                gathered = None
            if name in ("_to_copy", "clone") and isinstance(out, torch.Tensor) and out.dim() >= 1 and \
                    out.shape[0] == src.shape[0] and out.stride(0) > 0:
                st = out.untyped_storage()
                self.storages[st.data_ptr()] = (ws[0], ws[1], out.stride(0) * out.element_size(),
                                                out.storage_offset() * out.element_size(), st)
                return
        for a, w in wins:
            if not w:
                continue
            if a is src and gathered is not None:
                idx = gathered.detach().flatten().to("cpu", torch.long) % max(src.shape[0], 1)
                rows = self.touched[w[0]]
                idx = idx + w[1]
                rows[idx[(idx >= 0) & (idx < rows.numel())]] = True
            else:
                self._read(w)

    def input_bytes(self, values, names):
        """Bytes charged for the inputs (see "Bytes" above), and notes on the partial ones."""
        total, notes = 0, []
        for i, v in enumerate(values):
            if not isinstance(v, torch.Tensor):
                continue
            full = v.numel() * v.element_size()
            rows = self.touched.get(i)
            if rows is None or not bool(rows.any()):
                total += full
                continue
            n = int(rows.sum())
            total += full * n // rows.numel()
            if n < rows.numel():
                name = names[i] if i < len(names) else f"input {i}"
                notes.append(f"{name}: {n} of {rows.numel()} rows read")
        return total, notes

    def _add(self, dtype, op, n):
        self.matrix[dtype] = self.matrix.get(dtype, 0) + int(n)
        self.by_op[op] = self.by_op.get(op, 0) + int(n)

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        try:
            self._count(func, args, kwargs, out)
        except Exception as e:  # counting must never break the reference
            self.notes.append(f"cannot count {func}: {exc_text(e)[:200]}")
        return out

    def _count(self, func, args, kwargs, out):
        from torch.utils.flop_counter import flop_registry, sdpa_flop_count

        packet = func.overloadpacket
        name = packet.__name__
        tensors = [a for a in torch.utils._pytree.tree_leaves((args, kwargs)) if isinstance(a, torch.Tensor)]
        try:
            self._track(func, name, args, tensors, out)
        except Exception as e:
            self.notes.append(f"cannot follow the reads of {func}: {exc_text(e)[:200]}")
        dtype = torch_dtype_name(tensors[0].dtype) if tensors else "float32"
        if name in _SDPA_OPS:
            q, k, v = args[0], args[1], args[2]
            named = {a.name: a for a in func._schema.arguments}
            causal = False
            names = [a.name for a in func._schema.arguments]
            if "is_causal" in names:
                i = names.index("is_causal")
                causal = bool(kwargs["is_causal"]) if "is_causal" in kwargs else (
                    bool(args[i]) if i < len(args) else bool(named["is_causal"].default_value or False))
            flops = sdpa_flop_count(tuple(q.shape), tuple(k.shape), tuple(v.shape))
            if causal:
                sq, skv = q.shape[-2], k.shape[-2]
                flops = flops * _causal_pairs(sq, skv) // (sq * skv)
            self._add(dtype, name + (" (causal)" if causal else ""), flops)
            return
        if packet in flop_registry:
            self._add(dtype, name, flop_registry[packet](*args, **kwargs, out_val=out))
            return
        tags = set(func.tags)
        outs = [o for o in torch.utils._pytree.tree_leaves(out) if isinstance(o, torch.Tensor)]
        if torch.Tag.pointwise in tags:
            if name in ("copy", "copy_", "_to_copy", "clone", "fill", "fill_", "zero_", "zeros_like", "ones_like"):
                return
            n = sum(o.numel() for o in outs)
        elif torch.Tag.reduction in tags or name in _SOFTMAX_LIKE:
            n = max([t.numel() for t in tensors] or [0])
        else:
            return
        if n:
            self.elementwise += int(n)
            self.by_op[name] = self.by_op.get(name, 0) + int(n)


def _make_counter():
    """The counter class: _SolCounting as a torch dispatch mode (torch is imported lazily)."""
    from torch.utils._python_dispatch import TorchDispatchMode

    return type("SolCounter", (_SolCounting, TorchDispatchMode), {})


def count_work(run_fn, values, defn):
    """FLOPs by dtype, elementwise FLOPs and fewest bytes for one call of the reference (run once,
    under the counters; its outputs give the bytes written)."""
    from torch.utils.flop_counter import FlopCounterMode

    SolCounter = _make_counter()
    counter = SolCounter()
    fcm = FlopCounterMode(display=False)
    args = _clone_args(values)
    counter.track_inputs(args)
    with fcm:
        with counter:
            result = run_fn(*args)
    outputs = normalize_outputs(result, defn)
    del result
    bytes_in, read_notes = counter.input_bytes(args, list(defn["inputs"].keys()))
    counter.notes.extend(read_notes)
    del args
    bytes_in_whole = sum(v.numel() * v.element_size() for v in values if isinstance(v, torch.Tensor))
    bytes_out = sum(t.numel() * t.element_size() for t in outputs.values())
    del outputs
    return {
        "matrix_flops": counter.matrix,
        "elementwise_flops": counter.elementwise,
        "flops": sum(counter.matrix.values()) + counter.elementwise,
        "flop_counter_total": int(fcm.get_total_flops()),
        "by_op": counter.by_op,
        "bytes_in": int(bytes_in),
        "bytes_in_whole": int(bytes_in_whole),
        "bytes_out": int(bytes_out),
        "bytes": int(bytes_in + bytes_out),
        "notes": counter.notes,
    }


def count_job(problem, refsrc, uuid, device):
    """The `count` command for one workload: inputs as `generate` draws them (seed 0), the
    reference run once under the counters."""
    defn = problem.definition
    notes = []
    try:
        workload = problem.workloads.get(uuid)
        if workload is None:
            raise OracleError("load", f"workload {uuid} is not in workload.jsonl")
        validate_workload(workload)
        axes = resolve_axes(defn, workload.get("axes"))
        shapes = {n: resolve_shape(s["shape"], axes) for n, s in defn["inputs"].items()}
        safe = {}
        if any(isinstance(d, dict) and d.get("type") == "safetensors" for d in workload["inputs"].values()):
            safe = load_safetensors_inputs(problem, workload, shapes)
        namespace = refsrc.load()
        run_fn = namespace.get("run")
        if not callable(run_fn):
            raise OracleError("reference", "Reference code does not define a top-level 'run' function")
        seed_everything(derive_seed(uuid, 0), device)
        values, _ = gen_inputs(problem, workload, axes, shapes, safe, namespace, device, notes)
        out = count_work(run_fn, values, defn)
        sync(device)
        out.update({"uuid": uuid, "ok": True, "axes": axes})
        out["notes"] = notes + out["notes"]
        return out
    except BaseException as e:
        if isinstance(e, KeyboardInterrupt):
            raise
        warn(f"count {uuid} failed: {exc_text(e)}")
        return {"uuid": uuid, "ok": False, "message": one_line(str(e) if isinstance(e, OracleError) else exc_text(e))}
    finally:
        refsrc.unload()
        gc.collect()


# ──────────────────────────────────────── driver ──────────────────────────────────────────


# torch.compile baseline. One compiled wrapper per reference per process, default mode and
# default dynamic-shape handling (the first shape compiles static, a new shape recompiles with
# dynamic sizes, later shapes reuse that graph): what a user gets from `torch.compile(run)` over a
# stream of shapes, and one compile per problem rather than one per workload. Compiling and timing
# share a wall-clock budget per process (--compile-budget); a call that runs past it is abandoned
# (SIGALRM), the workload and every later one get compile_timing {"skipped": ...} and a note.
# Whether this process has run the eager reference (any workload): see "Slow references".
_RAN_REFERENCE = {"any": False}

_COMPILE = {"wrappers": {}, "budget_s": 240.0, "spent_s": 0.0, "exhausted": None}


class _CompileBudget(Exception):
    pass


def _on_alarm(signum, frame):
    raise _CompileBudget()


def time_compiled(run_fn, values, device, notes):
    import signal

    st = _COMPILE
    if st["exhausted"]:
        notes.append(f"torch.compile not timed: {st['exhausted']}")
        return None, {"skipped": st["exhausted"]}
    left = st["budget_s"] - st["spent_s"]
    t0 = time.monotonic()
    old = signal.signal(signal.SIGALRM, _on_alarm)
    signal.setitimer(signal.ITIMER_REAL, max(left, 0.001))
    try:
        # Keyed by the reference's file and name, not the function object: every job executes the
        # reference module afresh (a new run() and code object each time), and a wrapper per job
        # would compile the reference again for every workload.
        code = getattr(run_fn, "__code__", None)
        key = (code.co_filename, code.co_name) if code is not None else id(run_fn)
        compiled = st["wrappers"].get(key)
        if compiled is None:
            compiled = torch.compile(run_fn)
            st["wrappers"][key] = compiled
        if device.type == "cuda":
            samples, info = time_cuda(compiled, values, device, compiled=True)
        else:
            samples, info = time_cpu(compiled, values, compiled=True)
        signal.setitimer(signal.ITIMER_REAL, 0)
        timing = {"method": info.pop("method"), "samples_ms": samples, "mode": "default", "dynamic": "default (automatic)",
                  "wall_s": time.monotonic() - t0}
        timing.update(info)
        return statistics.median(samples), timing
    except _CompileBudget:
        st["exhausted"] = f"the compile budget of {st['budget_s']:g} s per oracle run was used up"
        notes.append(f"torch.compile not timed: {st['exhausted']}")
        try:
            torch._dynamo.reset()
            st["wrappers"].clear()
        except Exception:
            pass
        return None, {"skipped": st["exhausted"]}
    except Exception as e:
        notes.append(f"torch.compile of the reference failed: {exc_text(e)[:300]}")
        return None, {"error": exc_text(e)[:2000]}
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
        st["spent_s"] += time.monotonic() - t0
        if device.type == "cuda":
            try:
                torch.cuda.synchronize(device)
            except Exception:
                pass


class _Prepared:
    """What prepare_job built for one job: the reference's run(), the inputs in definition order."""


def prepare_job(problem, refsrc, uuid, seed, device, notes):
    """Loads the workload, executes the reference module, reseeds and generates the inputs.

    Shared by ``generate`` and ``regen`` so that both draw the same random numbers in the same
    order. Raises OracleError (stage load/reference) or another exception (stage gen_inputs).
    """
    defn = problem.definition
    j = _Prepared()
    workload = problem.workloads.get(uuid)
    if workload is None:
        raise OracleError("load", f"workload {uuid} is not in workload.jsonl")
    try:
        validate_workload(workload)
        axes = resolve_axes(defn, workload.get("axes"))
        shapes = {n: resolve_shape(s["shape"], axes) for n, s in defn["inputs"].items()}
        j.out_shapes = {n: resolve_shape(s["shape"], axes) for n, s in defn["outputs"].items()}
        for s in list(defn["inputs"].values()) + list(defn["outputs"].values()):
            spec_to_torch_dtype(s["dtype"])
    except Exception as e:
        raise OracleError("load", exc_text(e))
    safe = {}
    if any(isinstance(d, dict) and d.get("type") == "safetensors" for d in workload["inputs"].values()):
        try:
            safe = load_safetensors_inputs(problem, workload, shapes)
        except Exception as e:
            raise OracleError("load", f"Failed to load safetensors: {exc_text(e)}")

    try:
        namespace = refsrc.load()
    except BaseException as e:
        if isinstance(e, KeyboardInterrupt):
            raise
        raise OracleError("reference", f"Failed to exec reference code: {exc_text(e)}")
    j.run_fn = namespace.get("run")
    if not callable(j.run_fn):
        raise OracleError("reference", "Reference code does not define a top-level 'run' function")
    try:
        params = [
            p.name
            for p in inspect.signature(j.run_fn).parameters.values()
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
        ]
        if params != list(defn["inputs"].keys()):
            notes.append(f"run() positional parameters {params} differ from the definition inputs")
    except (TypeError, ValueError):
        pass

    j.dseed = derive_seed(uuid, seed)
    seed_everything(j.dseed, device)
    j.values, j.sources = gen_inputs(problem, workload, axes, shapes, safe, namespace, device, notes)
    sync(device)
    return j


def run_job(problem, refsrc, uuid, seed, outdir, device, time_reference, time_compile=False, timings_only=False):
    defn = problem.definition
    notes = []
    stage = "load"
    try:
        stage = "gen_inputs"
        j = prepare_job(problem, refsrc, uuid, seed, device, notes)
        run_fn, values, sources, dseed, out_shapes = j.run_fn, j.values, j.sources, j.dseed, j.out_shapes
        threshold = regen_threshold()
        stored_inputs, inputs_meta = {}, {}
        for (name, v) in zip(defn["inputs"].keys(), values):
            t, m = to_storable(name, v)
            m["source"] = sources[name]
            if isinstance(v, torch.Tensor):
                m["strides"] = list(v.stride())  # layout as generated, in elements
                if not v.is_contiguous():
                    notes.append(f"input '{name}' is not contiguous (strides {list(v.stride())}); stored contiguous")
                if (not timings_only and sources[name] == "random"
                        and v.numel() * v.element_size() > threshold):
                    m["regenerate"] = True  # not stored: the judge rebuilds it with `regen`
                    m["sha256"] = tensor_sha256(v)
                    inputs_meta[name] = m
                    continue
            stored_inputs[name] = t
            inputs_meta[name] = m
        inputs_path = os.path.join(outdir, "inputs.safetensors")
        if not timings_only:
            write_safetensors(inputs_path, stored_inputs, {"format": "pt"})
        del stored_inputs

        stage = "reference"
        # The output call is timed too (wall and, on CUDA, events): for a long reference it is the
        # warm-up, or the timed call, of the eager timing below (see "Slow references").
        ran_before = _RAN_REFERENCE["any"]
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
        output_call = (wall, ev[0].elapsed_time(ev[1]) if ev else wall * 1e3, ran_before)
        _RAN_REFERENCE["any"] = True
        outputs = normalize_outputs(result, defn)
        del result
        outputs_meta = {}
        for name, t in outputs.items():
            outputs_meta[name] = {"dtype": torch_dtype_name(t.dtype), "shape": list(t.shape)}
            want = spec_to_torch_dtype(defn["outputs"][name]["dtype"])
            if t.dtype != want:
                notes.append(f"output '{name}': reference returned {torch_dtype_name(t.dtype)}, definition declares {torch_dtype_name(want)}")
            if out_shapes[name] is not None and tuple(t.shape) != out_shapes[name]:
                notes.append(f"output '{name}': reference returned shape {list(t.shape)}, definition resolves to {list(out_shapes[name])}")
        if not timings_only:
            write_safetensors(os.path.join(outdir, "reference.safetensors"), outputs, {"format": "pt"})
        del outputs
        mutated = []  # inputs the reference modified in place (compared with the file, one by one)
        for n, v in zip(defn["inputs"].keys(), values):
            if isinstance(v, torch.Tensor) and not timings_only:
                if inputs_meta[n].get("regenerate"):
                    if tensor_sha256(v) != inputs_meta[n]["sha256"]:
                        mutated.append(n)
                    continue
                stored = read_safetensors(inputs_path, [n])[0][n]
                if not _same_bytes(v, stored):
                    mutated.append(n)
                del stored

        reference_ms, timing = None, None
        if time_reference:
            stage = "timing"
            if device.type == "cuda":
                samples, info = time_cuda(run_fn, values, device, prior=output_call)
            else:
                samples, info = time_cpu(run_fn, values, prior=output_call)
            reference_ms = statistics.median(samples)
            timing = {"method": info.pop("method"), "samples_ms": samples}
            timing.update(info)

        compile_ms, compile_timing = None, None
        if time_compile:
            stage = "timing"
            compile_ms, compile_timing = time_compiled(run_fn, values, device, notes)

        meta = {
            "oracle_version": ORACLE_VERSION,
            "uuid": uuid,
            "seed": seed,
            "derived_seed": dseed,
            "device": device.type,
            "torch": torch.__version__,
            "device_name": torch.cuda.get_device_name(0) if device.type == "cuda" else "cpu",
            "definition": problem.name,
            "inputs": inputs_meta,
            "outputs": outputs_meta,
            "reference_mutated_inputs": mutated,
            "reference_ms": reference_ms,
            "reference_timing": timing,
            "compile_ms": compile_ms,
            "compile_timing": compile_timing,
            "timings_only": timings_only,
            "notes": notes,
        }
        _write_json(os.path.join(outdir, "meta.json"), meta)
        return True
    except BaseException as e:
        if isinstance(e, KeyboardInterrupt):
            raise
        if isinstance(e, OracleError):
            stage, message = e.stage, one_line(str(e))
        else:
            stage, message = stage, exc_text(e)
        warn(f"job {uuid}:{seed} failed at {stage}: {message}")
        if not isinstance(e, OracleError):
            traceback.print_exc(file=sys.stderr)
        try:
            _write_json(os.path.join(outdir, "error.json"), {"stage": stage, "message": message})
        except OSError as werr:
            warn(f"cannot write error.json for {uuid}:{seed}: {exc_text(werr)}")
        return False
    finally:
        refsrc.unload()
        gc.collect()
        if device.type == "cuda":
            try:
                torch.cuda.empty_cache()
            except Exception:
                pass


def regen_job(problem, refsrc, uuid, seed, outdir, device, names):
    """``regen``: the job's inputs generated again; only ``names`` written to OUTDIR/inputs.safetensors."""
    defn = problem.definition
    unknown = [n for n in names if n not in defn["inputs"]]
    if unknown:
        raise OracleError("load", f"no input named {', '.join(unknown)} in the definition")
    try:
        j = prepare_job(problem, refsrc, uuid, seed, device, [])
        by_name = dict(zip(defn["inputs"].keys(), j.values))
        write_safetensors(os.path.join(outdir, "inputs.safetensors"),
                          {n: to_storable(n, by_name[n])[0] for n in names}, {"format": "pt"})
    finally:
        refsrc.unload()


def _write_json(path, obj):
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(obj, f, indent=1, allow_nan=False)
        f.write("\n")
    os.replace(tmp, path)


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        raise UsageError(message)


def parse_args(argv):
    p = _Parser(prog="kernelarc_oracle.py", add_help=True)
    sub = p.add_subparsers(dest="command")
    g = sub.add_parser("generate", help="generate inputs and reference outputs")
    g.add_argument("--problem", required=True, help="problem folder (definition.json, workload.jsonl)")
    g.add_argument("--device", required=True, choices=["cpu", "cuda"])
    g.add_argument("--job", action="append", required=True, metavar="UUID:SEED:OUTDIR")
    g.add_argument("--time-reference", action="store_true", help="time the reference (10 warm-up + 50 timed calls)")
    g.add_argument("--time-compile", action="store_true",
                   help="also time torch.compile(run) by the same protocol (meta compile_ms)")
    g.add_argument("--timings-only", action="store_true",
                   help="write only meta.json (timings, shapes): no inputs or reference outputs on disk")
    g.add_argument("--compile-budget", type=float, default=240.0, metavar="SECONDS",
                   help="wall-clock budget for compiling and timing torch.compile in this run (default 240)")
    r = sub.add_parser("regen", help="generate a job's inputs again (no reference run); write the named ones")
    r.add_argument("--problem", required=True, help="problem folder (definition.json, workload.jsonl)")
    r.add_argument("--device", required=True, choices=["cpu", "cuda"])
    r.add_argument("--job", action="append", required=True, metavar="UUID:SEED:OUTDIR")
    r.add_argument("--inputs", required=True, metavar="NAME[,NAME...]")
    c = sub.add_parser("count", help="count FLOPs (by dtype) and fewest bytes of workloads' references")
    c.add_argument("--problem", required=True, help="problem folder (definition.json, workload.jsonl)")
    c.add_argument("--device", required=True, choices=["cpu", "cuda"])
    c.add_argument("--workload", action="append", required=True, metavar="UUID")
    args = p.parse_args(argv)
    if args.command == "count":
        return args, list(args.workload)
    if args.command not in ("generate", "regen"):
        raise UsageError("expected the 'generate', 'regen' or 'count' command")
    if args.command == "regen" and len(args.job) != 1:
        raise UsageError("regen takes exactly one --job")
    jobs = []
    for spec in args.job:
        parts = spec.split(":", 2)
        if len(parts) != 3 or not parts[0] or not parts[2]:
            raise UsageError(f"bad --job '{spec}' (expected UUID:SEED:OUTDIR)")
        try:
            seed = int(parts[1])
        except ValueError:
            raise UsageError(f"bad seed in --job '{spec}'")
        outdir = parts[2]
        if not os.path.isdir(outdir):
            raise UsageError(f"output folder '{outdir}' does not exist")
        jobs.append((parts[0], seed, outdir))
    return args, jobs


def open_device(name):
    """Imports torch (into this module's global) and returns the device "cuda" (cuda:0, made
    current) or "cpu" names; None, with a line on stderr, when CUDA is asked for but unusable."""
    global torch
    import torch as _torch

    torch = _torch
    if name == "cuda" and not torch.cuda.is_available():
        print("kernelarc_oracle: --device cuda but torch.cuda.is_available() is false", file=sys.stderr)
        return None
    device = torch.device("cuda:0" if name == "cuda" else "cpu")
    if device.type == "cuda":
        torch.cuda.set_device(0)
    return device


def main(argv=None):
    # Keep the real stdout for the per-job JSON lines; everything else written to fd 1
    # (reference prints, C++ libraries) goes to stderr.
    sys.stdout.flush()
    json_out = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr

    try:
        args, jobs = parse_args(sys.argv[1:] if argv is None else argv)
        problem = Problem(args.problem)
    except UsageError as e:
        print(f"kernelarc_oracle: {one_line(str(e))}", file=sys.stderr)
        return 2
    except SystemExit as e:  # --help
        return e.code if isinstance(e.code, int) else 0

    device = open_device(args.device)
    if device is None:
        return 2

    refsrc = ReferenceSource(problem.definition["reference"])
    if args.command == "generate":
        _COMPILE["budget_s"] = args.compile_budget
    if args.command == "count":
        try:
            for uuid in jobs:
                json_out.write(json.dumps(count_job(problem, refsrc, uuid, device)) + "\n")
                json_out.flush()
        finally:
            refsrc.cleanup()
        return 0
    if args.command == "regen":
        uuid, seed, outdir = jobs[0]
        t_job = time.monotonic()
        names = [n for n in args.inputs.split(",") if n]
        try:
            regen_job(problem, refsrc, uuid, seed, outdir, device, names)
        except BaseException as e:
            if isinstance(e, KeyboardInterrupt):
                raise
            print(f"kernelarc_oracle: regen {uuid}:{seed} failed: {exc_text(e)}", file=sys.stderr, flush=True)
            return 1
        finally:
            refsrc.cleanup()
        json_out.write(json.dumps({"uuid": uuid, "seed": seed, "ok": True,
                                   "seconds": round(time.monotonic() - t_job, 3)}) + "\n")
        return 0
    try:
        for uuid, seed, outdir in jobs:
            t_job = time.monotonic()
            for name in OUTPUT_FILES:
                stale = os.path.join(outdir, name)
                if os.path.exists(stale):
                    warn(f"removing stale {stale}")
                    os.remove(stale)
            ok = run_job(problem, refsrc, uuid, seed, outdir, device, args.time_reference, args.time_compile,
                         args.timings_only)
            json_out.write(json.dumps({"uuid": uuid, "seed": seed, "ok": ok,
                                       "seconds": round(time.monotonic() - t_job, 3)}) + "\n")
            json_out.flush()
    finally:
        refsrc.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
