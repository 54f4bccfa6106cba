"""The problem as the C++ problem layer resolved it (src/oracle/spec.cpp, docs/oracle-protocol.md):
one JSON document per problem, read here and nowhere parsed again. The oracle takes every name,
dtype, shape and input source from it; a document it cannot use is a usage error (exit 2)."""

from __future__ import annotations

import json

from .common import OracleError, UsageError, exc_text

FORMAT = "kernelarc-oracle-spec-1"
SOURCES = ("random", "scalar", "safetensors", "custom")


class ProblemSpec:
    """name, op_type, reference (source), custom_entry, input_names, output_names, the workloads by
    uuid, and for capture: axes ({name: {"type", "value" | "expression"}}), input_defs/output_defs
    (dims as the definition writes them) and capture_workload (the one to trace)."""

    def __init__(self, path):
        try:
            with open(path, "r", encoding="utf-8") as f:
                d = json.load(f)
        except (OSError, ValueError) as e:
            raise UsageError(f"cannot read the spec {path}: {exc_text(e)}")
        if not isinstance(d, dict) or d.get("format") != FORMAT:
            raise UsageError(f"{path}: not a spec of format {FORMAT}")
        try:
            self.name = str(d["name"])
            self.op_type = d.get("op_type")
            self.reference = str(d["reference"])
            self.custom_entry = d.get("custom_inputs_entrypoint")
            self.axes = dict(d["axes"])
            self.input_defs = list(d["inputs"])
            self.output_defs = list(d["outputs"])
            self.input_names = [t["name"] for t in self.input_defs]
            self.output_names = [t["name"] for t in self.output_defs]
            self.workloads = {}
            for w in d["workloads"]:
                _check_workload(w, self.input_names, self.output_names)
                self.workloads[w["uuid"]] = w
            self.capture_workload = d.get("capture")
        except (KeyError, TypeError, ValueError) as e:
            raise UsageError(f"{path}: malformed spec: {exc_text(e)}")

    def workload(self, uuid):
        w = self.workloads.get(uuid)
        if w is None:
            raise OracleError("load", f"workload {uuid} is not in the problem's spec")
        return w


def _check_workload(w, input_names, output_names):
    """The fields every command reads; their values were validated by the problem layer."""
    if not isinstance(w.get("uuid"), str) or not isinstance(w.get("axes"), dict):
        raise ValueError("a workload needs 'uuid' and 'axes'")
    if [i["name"] for i in w["inputs"]] != input_names or [o["name"] for o in w["outputs"]] != output_names:
        raise ValueError(f"workload {w['uuid']}: inputs/outputs differ from the definition's")
    for t in w["inputs"] + w["outputs"]:
        if not isinstance(t.get("dtype"), str) or not (t["shape"] is None or isinstance(t["shape"], list)):
            raise ValueError(f"workload {w['uuid']}: '{t['name']}' needs 'dtype' and 'shape'")
    for i in w["inputs"]:
        if i.get("source") not in SOURCES:
            raise ValueError(f"workload {w['uuid']}: input '{i['name']}' has source {i.get('source')!r}")


def shape_of(t):
    """A spec tensor's shape as a tuple, None for a scalar input."""
    return None if t["shape"] is None else tuple(int(d) for d in t["shape"])
