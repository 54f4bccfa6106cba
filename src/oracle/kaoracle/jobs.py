"""The oracle's jobs, one workload each: `generate` (inputs, reference outputs, meta.json and the
timings), `regen` (a job's inputs drawn again) and `count` (the reference's work). Each takes its
workload from the problem's spec (spec.py) and the steps from the other modules."""

from __future__ import annotations

import gc
import os
import statistics
import sys
import traceback

import torch

from . import compile_baseline
from .common import OracleError, exc_text, one_line, spec_to_torch_dtype, sync, torch_dtype_name, warn, write_json
from .inputs import derive_seed, gen_inputs, load_blob_inputs, regen_threshold, seed_everything, to_storable
from .reference import load_run, normalize_outputs, on_device, output_call
from .safetensors_io import read_safetensors, same_bytes, tensor_sha256, write_safetensors
from .spec import shape_of
from .timing import time_cpu, time_cuda
from .work_count import count_work

ORACLE_VERSION = "kernelarc-oracle-2"  # meta.json's oracle_version: 2 since inputs come from the spec
OUTPUT_FILES = ("inputs.safetensors", "reference.safetensors", "meta.json", "error.json")


class Prepared:
    """What prepare_job built for one job: the workload's spec, the reference's run(), the inputs in
    definition order and their sources, the seed they were drawn with."""


def prepare_job(problem, refsrc, uuid, seed, device, notes):
    """Finds the workload, executes the reference module, reseeds and generates the inputs.

    Shared by ``generate``, ``regen`` and ``count`` so that all draw the same random numbers in the
    same order. Raises OracleError (stage load/reference) or another exception (stage gen_inputs).
    """
    j = Prepared()
    j.workload = problem.workload(uuid)
    try:
        for t in j.workload["inputs"] + j.workload["outputs"]:
            spec_to_torch_dtype(t["dtype"])
    except Exception as e:
        raise OracleError("load", exc_text(e))
    blobs = {}
    if any(i["source"] == "safetensors" for i in j.workload["inputs"]):
        try:
            blobs = load_blob_inputs(j.workload)
        except Exception as e:
            raise OracleError("load", f"Failed to load safetensors: {exc_text(e)}")
    namespace, run_fn = load_run(refsrc, problem.input_names, notes)
    j.run_fn = on_device(run_fn, device)
    j.dseed = derive_seed(uuid, seed)
    seed_everything(j.dseed, device)
    j.values, j.sources = gen_inputs(problem, j.workload, blobs, namespace, device, notes)
    sync(device)
    return j


def _store_inputs(problem, j, outdir, timings_only, notes):
    """Writes inputs.safetensors (unless timings_only) and returns meta.json's "inputs"."""
    threshold = regen_threshold()
    stored, meta = {}, {}
    for name, v in zip(problem.input_names, j.values):
        t, m = to_storable(name, v)
        m["source"] = j.sources[name]
        meta[name] = m
        if isinstance(v, torch.Tensor):
            m["strides"] = list(v.stride())  # layout as generated, in elements
            if not v.is_contiguous():
                notes.append(f"input '{name}' is not contiguous (strides {list(v.stride())}); stored contiguous")
            if not timings_only and j.sources[name] == "random" and v.numel() * v.element_size() > threshold:
                m["regenerate"] = True  # not stored: the judge rebuilds it with `regen`
                m["sha256"] = tensor_sha256(v)
                continue
        stored[name] = t
    if not timings_only:
        write_safetensors(os.path.join(outdir, "inputs.safetensors"), stored, {"format": "pt"})
    return meta


def _outputs_meta(j, outputs, notes):
    """meta.json's "outputs", with a note for each output that differs from what the spec resolved."""
    meta = {}
    for spec in j.workload["outputs"]:
        name, t = spec["name"], outputs[spec["name"]]
        meta[name] = {"dtype": torch_dtype_name(t.dtype), "shape": list(t.shape)}
        want = spec_to_torch_dtype(spec["dtype"])
        if t.dtype != want:
            notes.append(f"output '{name}': reference returned {torch_dtype_name(t.dtype)}, "
                         f"definition declares {torch_dtype_name(want)}")
        if shape_of(spec) is not None and tuple(t.shape) != shape_of(spec):
            notes.append(f"output '{name}': reference returned shape {list(t.shape)}, "
                         f"definition resolves to {spec['shape']}")
    return meta


def _mutated(problem, j, inputs_meta, outdir):
    """The inputs the reference modified in place (compared with the file, one by one)."""
    out = []
    for n, v in zip(problem.input_names, j.values):
        if not isinstance(v, torch.Tensor):
            continue
        if inputs_meta[n].get("regenerate"):
            if tensor_sha256(v) != inputs_meta[n]["sha256"]:
                out.append(n)
            continue
        stored = read_safetensors(os.path.join(outdir, "inputs.safetensors"), [n])[0][n]
        if not same_bytes(v, stored):
            out.append(n)
        del stored
    return out


def _time_reference(j, device, prior):
    samples, info = (time_cuda(j.run_fn, j.values, device, prior=prior) if device.type == "cuda"
                     else time_cpu(j.run_fn, j.values, prior=prior))
    timing = {"method": info.pop("method"), "samples_ms": samples}
    timing.update(info)
    return statistics.median(samples), timing


class Options:
    """What `generate` was asked for: time_reference, time_compile, timings_only."""

    def __init__(self, time_reference=False, time_compile=False, timings_only=False):
        self.time_reference, self.time_compile, self.timings_only = time_reference, time_compile, timings_only


def _generate(problem, refsrc, uuid, seed, outdir, device, opts, notes, stage):
    stage[0] = "gen_inputs"
    j = prepare_job(problem, refsrc, uuid, seed, device, notes)
    inputs_meta = _store_inputs(problem, j, outdir, opts.timings_only, notes)
    stage[0] = "reference"
    result, prior = output_call(j.run_fn, j.values, device)
    outputs = normalize_outputs(result, j.workload["outputs"])
    del result
    outputs_meta = _outputs_meta(j, outputs, notes)
    if not opts.timings_only:
        write_safetensors(os.path.join(outdir, "reference.safetensors"), outputs, {"format": "pt"})
    del outputs
    mutated = [] if opts.timings_only else _mutated(problem, j, inputs_meta, outdir)
    reference_ms = timing = compile_ms = compile_timing = compile_note = None
    if opts.time_reference:
        stage[0] = "timing"
        reference_ms, timing = _time_reference(j, device, prior)
    if opts.time_compile:
        stage[0] = "timing"
        compile_ms, compile_timing, compile_note = compile_baseline.time_compiled(j.run_fn, j.values, device, notes)
    return {
        "oracle_version": ORACLE_VERSION,
        "uuid": uuid,
        "seed": seed,
        "derived_seed": j.dseed,
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
        "compile_note": compile_note,
        "timings_only": opts.timings_only,
        "notes": notes,
    }


def _cleanup(refsrc, device):
    refsrc.unload()
    gc.collect()
    if device.type == "cuda":
        try:
            torch.cuda.empty_cache()
        except Exception:
            pass


def run_job(problem, refsrc, uuid, seed, outdir, device, opts):
    """`generate` for one job: writes meta.json, or error.json naming the stage that failed."""
    notes, stage = [], ["load"]
    try:
        write_json(os.path.join(outdir, "meta.json"), _generate(problem, refsrc, uuid, seed, outdir, device, opts,
                                                                notes, stage))
        return True
    except BaseException as e:
        if isinstance(e, KeyboardInterrupt):
            raise
        if isinstance(e, OracleError):
            where, message = e.stage, one_line(str(e))
        else:
            where, message = stage[0], exc_text(e)
        warn(f"job {uuid}:{seed} failed at {where}: {message}")
        if not isinstance(e, OracleError):
            traceback.print_exc(file=sys.stderr)
        try:
            write_json(os.path.join(outdir, "error.json"), {"stage": where, "message": message})
        except OSError as werr:
            warn(f"cannot write error.json for {uuid}:{seed}: {exc_text(werr)}")
        return False
    finally:
        _cleanup(refsrc, device)


def regen_job(problem, refsrc, uuid, seed, outdir, device, names):
    """``regen``: the job's inputs generated again; only ``names`` written to OUTDIR/inputs.safetensors."""
    unknown = [n for n in names if n not in problem.input_names]
    if unknown:
        raise OracleError("load", f"no input named {', '.join(unknown)} in the definition")
    try:
        j = prepare_job(problem, refsrc, uuid, seed, device, [])
        by_name = dict(zip(problem.input_names, j.values))
        write_safetensors(os.path.join(outdir, "inputs.safetensors"),
                          {n: to_storable(n, by_name[n])[0] for n in names}, {"format": "pt"})
    finally:
        refsrc.unload()


def count_job(problem, refsrc, uuid, device):
    """The `count` command for one workload: inputs as `generate` draws them (seed 0), the
    reference run once under the counters."""
    notes = []
    try:
        j = prepare_job(problem, refsrc, uuid, 0, device, notes)
        out = count_work(j.run_fn, j.values, problem.input_names, j.workload["outputs"])
        sync(device)
        out.update({"uuid": uuid, "ok": True, "axes": j.workload["axes"]})
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
