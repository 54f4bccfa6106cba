"""KernelArc's own decompositions, applied after torch's Core ATen table when a reference is
captured (capture.py): each one replaces an op the graph compiler would otherwise have to lower
by ops it lowers already, and so shrinks the documented op set (docs/graph-format.md)."""

from __future__ import annotations


def extra_decompositions():
    """{OpOverload: decomposition} added to torch.export.default_decompositions()."""
    return {}
