#!/usr/bin/env python3
"""Regenerates tests/data/valid/base and tests/data/malformed/NN_name/ (run from anywhere).

Each malformed folder is the valid base problem (SOL-ExecBench layout: definition.json,
workload.jsonl, blobs/*.safetensors) broken in exactly one way. test_malformed.cpp holds what
`kernelarc problems` must say about each one. Standard library only.
"""
import copy
import json
import shutil
import struct
from pathlib import Path

HERE = Path(__file__).resolve().parent

UUIDS = [
    "6f1c2a9e-0b8d-4e53-9a7f-1d2e3c4b5a60",
    "a3e7d5c1-9f2b-4c8e-b6a4-7e9d0c1b2a35",
    "c0ffee00-1234-4abc-8def-0123456789ab",
]

REFERENCE = """import torch

@torch.no_grad()
def run(hidden_states, weight, group_scale, indptr, eps):
    x = hidden_states.to(torch.float32)
    inv_rms = torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + eps)
    g = group_scale.repeat_interleave(x.shape[-1] // group_scale.shape[0])
    y = x * inv_rms * weight.to(torch.float32) * g
    return y.to(hidden_states.dtype)
"""

BASE_DEF = {
    "name": "m_grouped_rmsnorm_h8",
    "description": "Base of the malformed-problem tests: RMSNorm with a per-group scale.",
    "axes": {
        "batch_size": {"type": "var", "description": "Number of rows."},
        "hidden_size": {"type": "const", "value": 8},
        "num_groups": {"type": "expr", "expression": "hidden_size // 4"},
        "len_indptr": {"type": "var", "description": "batch_size + 1"},
    },
    "custom_inputs_entrypoint": None,
    "inputs": {
        "hidden_states": {"shape": ["batch_size", "hidden_size"], "dtype": "bfloat16"},
        "weight": {"shape": ["hidden_size"], "dtype": "bfloat16"},
        "group_scale": {"shape": ["num_groups"], "dtype": "float32"},
        "indptr": {"shape": ["len_indptr"], "dtype": "int32"},
        "eps": {"shape": None, "dtype": "float32"},
    },
    "outputs": {"output": {"shape": ["batch_size", "hidden_size"], "dtype": "bfloat16"}},
    "constraints": ["len_indptr == batch_size + 1"],
    "reference": REFERENCE,
}


def blob_input(i):
    return {"type": "safetensors", "path": f"blobs/{UUIDS[i]}.safetensors", "tensor_key": "indptr"}


def base_workloads():
    def inputs(indptr):
        return {
            "hidden_states": {"type": "random"},
            "weight": {"type": "random"},
            "group_scale": {"type": "random"},
            "indptr": indptr,
            "eps": {"type": "scalar", "value": 1e-6},
        }

    return [
        {"uuid": UUIDS[0], "axes": {"batch_size": 2, "len_indptr": 3}, "inputs": inputs(blob_input(0))},
        {"uuid": UUIDS[1], "axes": {"batch_size": 4, "len_indptr": 5}, "inputs": inputs(blob_input(1)),
         "tolerance": {"max_atol": 0.01, "max_rtol": 0.01}},
        {"uuid": UUIDS[2], "axes": {"batch_size": 1, "len_indptr": 2}, "inputs": inputs({"type": "random"})},
    ]


def safetensors(tensors, metadata=None):
    """tensors: {name: (code, shape, bytes)} -> file bytes (8-aligned header, as safetensors writes)."""
    header, data = {}, b""
    if metadata:
        header["__metadata__"] = metadata
    for name, (code, shape, raw) in tensors.items():
        header[name] = {"dtype": code, "shape": shape, "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * ((8 - (8 + len(h)) % 8) % 8)
    return struct.pack("<Q", len(h)) + h + data


def indptr_blob(n, code="I32", key="indptr", fmt="<i"):
    vals = list(range(n))
    raw = b"".join(struct.pack(fmt, v) for v in vals)
    return safetensors({key: (code, [n], raw)}, {"format": "pt"})


class Problem:
    def __init__(self):
        self.definition = copy.deepcopy(BASE_DEF)
        self.workloads = base_workloads()
        self.blobs = {f"blobs/{UUIDS[0]}.safetensors": indptr_blob(3), f"blobs/{UUIDS[1]}.safetensors": indptr_blob(5)}
        self.definition_text = None  # overrides the JSON dump
        self.workload_lines = None  # overrides the JSON dumps, one string per line
        self.symlinks = {}  # path in the folder -> link target (written in place of a blob)

    def write(self, d: Path):
        if d.exists():
            shutil.rmtree(d)
        (d / "blobs").mkdir(parents=True)
        text = self.definition_text or json.dumps(self.definition, indent=4) + "\n"
        (d / "definition.json").write_text(text)
        lines = self.workload_lines if self.workload_lines is not None else [json.dumps(w) for w in self.workloads]
        (d / "workload.jsonl").write_text("".join(l + "\n" for l in lines))
        for rel, data in self.blobs.items():
            (d / rel).write_bytes(data)
        for rel, target in self.symlinks.items():
            (d / rel).unlink(missing_ok=True)
            (d / rel).symlink_to(target)


def variants():
    v = {}

    def variant(name):
        def deco(f):
            v[name] = f
            return f
        return deco

    # ---- definition.json ----
    @variant("01_def_malformed_json")
    def _(p):
        text = json.dumps(p.definition, indent=4) + "\n"
        p.definition_text = text.replace('"value": 8\n        },', '"value": 8\n        }', 1)  # drop a comma

    @variant("02_def_unknown_dtype")
    def _(p):
        p.definition["inputs"]["weight"]["dtype"] = "bfloat17"

    @variant("03_def_axis_cycle")
    def _(p):
        p.definition["axes"]["num_groups"]["expression"] = "hidden_size // group_size"
        p.definition["axes"]["group_size"] = {"type": "expr", "expression": "hidden_size // num_groups"}

    @variant("04_def_expr_unknown_axis")
    def _(p):
        p.definition["axes"]["num_groups"]["expression"] = "hidden_size // group_size"

    @variant("05_def_missing_outputs")
    def _(p):
        del p.definition["outputs"]

    @variant("06_def_name_not_string")
    def _(p):
        p.definition["name"] = 42

    @variant("07_def_shape_unknown_axis")
    def _(p):
        p.definition["inputs"]["hidden_states"]["shape"] = ["batch_size", "hidden_dim"]

    @variant("08_def_const_axis_not_integer")
    def _(p):
        p.definition["axes"]["hidden_size"]["value"] = "8"

    @variant("09_def_unknown_axis_type")
    def _(p):
        p.definition["axes"]["batch_size"]["type"] = "variable"

    @variant("10_def_bad_constraint")
    def _(p):
        p.definition["constraints"] = ["len_indptr == batch_size +"]

    @variant("11_def_negative_dimension")
    def _(p):
        p.definition["inputs"]["weight"]["shape"] = [-8]

    @variant("12_def_entrypoint_not_in_reference")
    def _(p):
        p.definition["custom_inputs_entrypoint"] = "make_inputs"

    @variant("13_def_dimension_wrong_type")
    def _(p):
        p.definition["inputs"]["weight"]["shape"] = [True]

    @variant("14_def_reference_without_run")
    def _(p):
        p.definition["reference"] = REFERENCE.replace("def run(", "def forward(")

    @variant("15_def_input_output_clash")
    def _(p):
        p.definition["outputs"] = {"weight": {"shape": ["hidden_size"], "dtype": "bfloat16"}}

    @variant("16_def_axis_expression_syntax")
    def _(p):
        p.definition["axes"]["num_groups"]["expression"] = "hidden_size // (4"

    @variant("17_def_axes_not_object")
    def _(p):
        p.definition["axes"] = ["batch_size", "hidden_size", "num_groups", "len_indptr"]

    # ---- workload.jsonl ----
    @variant("20_wl_malformed_json")
    def _(p):
        lines = [json.dumps(w) for w in p.workloads]
        lines[1] = lines[1][:-1]  # line 2 loses its closing brace
        p.workload_lines = lines

    @variant("21_wl_missing_var_axis")
    def _(p):
        del p.workloads[1]["axes"]["batch_size"]

    @variant("22_wl_unknown_axis")
    def _(p):
        p.workloads[1]["axes"]["seq_len"] = 16

    @variant("23_wl_constraint_violated")
    def _(p):
        p.workloads[2]["axes"]["len_indptr"] = 3

    @variant("24_wl_unknown_input_type")
    def _(p):
        p.workloads[1]["inputs"]["hidden_states"]["type"] = "randn"

    @variant("25_wl_custom_without_entrypoint")
    def _(p):
        p.workloads[2]["inputs"] = {k: {"type": "custom"} for k in p.workloads[2]["inputs"]}

    @variant("26_wl_duplicate_uuid")
    def _(p):
        p.workloads[2]["uuid"] = UUIDS[0]

    @variant("27_wl_tolerance_wrong_type")
    def _(p):
        p.workloads[1]["tolerance"]["max_atol"] = "0.01"

    @variant("28_wl_empty_file")
    def _(p):
        p.workload_lines = []

    @variant("29_wl_expr_not_integer")
    def _(p):
        p.definition["axes"]["num_groups"]["expression"] = "hidden_size / 3"

    @variant("30_wl_negative_axis")
    def _(p):
        p.workloads[2]["axes"]["batch_size"] = -1

    @variant("31_wl_axis_not_integer")
    def _(p):
        p.workloads[1]["axes"]["batch_size"] = 2.5

    @variant("32_wl_line_not_object")
    def _(p):
        lines = [json.dumps(w) for w in p.workloads]
        lines[1] = json.dumps([p.workloads[1]])
        p.workload_lines = lines

    @variant("33_wl_missing_uuid")
    def _(p):
        del p.workloads[1]["uuid"]

    @variant("34_wl_scalar_value_not_number")
    def _(p):
        p.workloads[1]["inputs"]["eps"]["value"] = "1e-6"

    @variant("35_wl_input_not_in_definition")
    def _(p):
        p.workloads[1]["inputs"]["bias"] = {"type": "random"}

    @variant("36_wl_tolerance_ratio_above_one")
    def _(p):
        p.workloads[1]["tolerance"]["required_matched_ratio"] = 1.5

    # ---- blobs (reported as unavailable inputs; errors under --strict) ----
    @variant("40_blob_missing")
    def _(p):
        del p.blobs[f"blobs/{UUIDS[1]}.safetensors"]

    @variant("41_blob_truncated")
    def _(p):
        b = p.blobs[f"blobs/{UUIDS[1]}.safetensors"]
        p.blobs[f"blobs/{UUIDS[1]}.safetensors"] = b[: len(b) - 6]

    @variant("42_blob_wrong_dtype")
    def _(p):
        p.blobs[f"blobs/{UUIDS[1]}.safetensors"] = indptr_blob(5, code="I64", fmt="<q")

    @variant("43_blob_wrong_shape")
    def _(p):
        p.blobs[f"blobs/{UUIDS[1]}.safetensors"] = indptr_blob(4)

    @variant("44_blob_missing_key")
    def _(p):
        p.blobs[f"blobs/{UUIDS[1]}.safetensors"] = indptr_blob(5, key="kv_indptr")

    @variant("45_blob_bad_header")
    def _(p):
        b = p.blobs[f"blobs/{UUIDS[1]}.safetensors"]
        p.blobs[f"blobs/{UUIDS[1]}.safetensors"] = b[:8] + b"[" + b[9:]  # header starts with '[' not '{'

    @variant("46_blob_size_mismatch")
    def _(p):
        raw = b"".join(struct.pack("<i", v) for v in range(4))  # 16 bytes for a [5] int32 tensor
        p.blobs[f"blobs/{UUIDS[1]}.safetensors"] = safetensors({"indptr": ("I32", [5], raw)})

    @variant("47_blob_overlapping_tensors")
    def _(p):
        raw = b"".join(struct.pack("<i", v) for v in range(5))
        header = {"indptr": {"dtype": "I32", "shape": [5], "data_offsets": [0, 20]},
                  "other": {"dtype": "I32", "shape": [1], "data_offsets": [16, 20]}}  # inside indptr's bytes
        h = json.dumps(header, separators=(",", ":")).encode()
        h += b" " * ((8 - (8 + len(h)) % 8) % 8)
        p.blobs[f"blobs/{UUIDS[1]}.safetensors"] = struct.pack("<Q", len(h)) + h + raw

    # ---- blob paths leading out of the problem folder (always errors, never read) ----
    outside = f"valid/base/blobs/{UUIDS[1]}.safetensors"  # a well-formed blob of another folder

    @variant("48_blob_path_dotdot")
    def _(p):
        p.workloads[1]["inputs"]["indptr"]["path"] = f"blobs/../../../{outside}"

    @variant("49_blob_path_absolute")
    def _(p):
        p.workloads[1]["inputs"]["indptr"]["path"] = "/etc/passwd"

    @variant("50_blob_symlink_escape")
    def _(p):
        p.symlinks[f"blobs/{UUIDS[1]}.safetensors"] = f"../../../{outside}"

    return v


def main():
    Problem().write(HERE / "valid" / "base")
    out = HERE / "malformed"
    if out.exists():
        shutil.rmtree(out)
    out.mkdir()
    for name, mutate in variants().items():
        p = Problem()
        mutate(p)
        p.write(out / name)


if __name__ == "__main__":
    main()
