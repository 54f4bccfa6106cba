"""The reference oracle's work, one module per concern; kernelarc_oracle.py is its command line.

common           errors, one-line messages, dtype names, device set-up
spec             the problem as the C++ problem layer resolved it (--spec FILE)
safetensors_io   the safetensors files exchanged with the judge, and the workloads' blobs
inputs           input generation and seeding
reference        executing the reference and calling it for its outputs
timing           timing a reference (eager or compiled)
compile_baseline the torch.compile baseline: per-shape graphs, no eager fallback timed
work_count       FLOPs by dtype and fewest bytes of one reference call
jobs             generate / regen / count for one workload

The C++ side hashes every file listed here into the oracle's version (Oracle::version): editing
one changes every cache key. common and spec do not import torch at import time: the scripts read
their arguments and the spec first, and import the rest (and torch) after.
"""
