"""Shared by every oracle module: the errors a job or a command line can end in, one-line messages,
the dtype vocabulary (definition names to torch dtypes) and the device set-up. It imports torch only
inside the functions that need it, so that a command line or a spec can be refused (one line on
stderr, exit 2) before torch's import prints anything."""

from __future__ import annotations

import json
import os
import sys

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



def write_json(path, obj):
    """obj as JSON at path, atomically (through a temporary name)."""
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(obj, f, indent=1, allow_nan=False)
        f.write("\n")
    os.replace(tmp, path)


# Definition dtype name -> torch attribute name (sol-execbench-rules §1.2); the names are the ones
# the problem layer (src/problem/dtype.h) writes into the spec.
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


def spec_to_torch_dtype(name):
    import torch

    attr = _SPEC_DTYPES.get(name)
    if attr is None or not hasattr(torch, attr):
        raise ValueError(f"unsupported dtype '{name}'")
    return getattr(torch, attr)


def torch_dtype_name(dtype):
    """Name used in meta.json: the spec name where there is one, else torch's own name."""
    return str(dtype).replace("torch.", "")



def sync(device):
    import torch

    if device.type == "cuda":
        torch.cuda.synchronize()


def open_device(name):
    """The device "cuda" (cuda:0, made current) or "cpu" names; None, with a line on stderr, when
    CUDA is asked for but unusable."""
    import torch

    if name == "cuda" and not torch.cuda.is_available():
        print("kernelarc_oracle: --device cuda but torch.cuda.is_available() is false", file=sys.stderr)
        return None
    device = torch.device("cuda:0" if name == "cuda" else "cpu")
    if device.type == "cuda":
        torch.cuda.set_device(0)
    return device
