"""KernelArc's own decompositions, applied after torch's Core ATen table when a reference is
captured (capture.py): each one replaces an op the graph compiler would otherwise have to lower
by ops it lowers already, and so shrinks the documented op set (docs/graph-format.md).

torch ships decompositions for most of these, but they emit prims (prims.var,
broadcast_in_dim) or as_strided views; these are written with Core ATen ops only. Normalisations
keep torch's precision: half-precision inputs are computed in float32 and the result cast back,
as the CPU and CUDA kernels do. `addmm` (what `F.linear` with a bias becomes) is left whole: eager
adds the bias inside the GEMM and rounds once, and mm followed by add would round twice.
"""

from __future__ import annotations

import torch

aten = torch.ops.aten
_LOW_PRECISION = (torch.float16, torch.bfloat16)


def _compute_dtype(x):
    return torch.float32 if x.dtype in _LOW_PRECISION else x.dtype


def _split_with_sizes(x, split_sizes, dim=0):
    out, start = [], 0
    for size in split_sizes:
        out.append(aten.slice.Tensor(x, dim, start, start + size))
        start = start + size
    return out


def _split(x, split_size, dim=0):
    n = x.shape[dim]
    sizes = [split_size] * (n // split_size) + ([n % split_size] if n % split_size else [])
    return _split_with_sizes(x, sizes, dim)


def _count(x, dims):
    n = 1
    for d in dims:
        n = n * x.shape[d]
    return n


def _var_mean(x, dim=None, *, correction=None, keepdim=False):
    dims = list(range(x.dim())) if dim is None else [d % x.dim() for d in dim]
    xc = aten._to_copy.default(x, dtype=_compute_dtype(x)) if _compute_dtype(x) != x.dtype else x
    mean = aten.mean.dim(xc, dims, True)
    centred = aten.sub.Tensor(xc, mean)
    total = aten.sum.dim_IntList(aten.mul.Tensor(centred, centred), dims, keepdim)
    var = aten.div.Tensor(total, _count(x, dims) - (1 if correction is None else correction))
    mean = mean if keepdim else aten.squeeze.dims(mean, dims)
    if xc is not x:
        var, mean = aten._to_copy.default(var, dtype=x.dtype), aten._to_copy.default(mean, dtype=x.dtype)
    return var, mean


def _var(x, dim=None, *, correction=None, keepdim=False):
    return _var_mean(x, dim, correction=correction, keepdim=keepdim)[0]


def _normalise(x, dims, eps):
    """(x - mean) * rstd over dims, with mean and rstd kept (keepdim), in x's dtype."""
    var, mean = _var_mean(x, dims, correction=0, keepdim=True)
    rstd = aten.rsqrt.default(aten.add.Tensor(var, eps))
    return aten.mul.Tensor(aten.sub.Tensor(x, mean), rstd), mean, rstd


def _native_layer_norm(x, normalized_shape, weight, bias, eps):
    k = len(normalized_shape)
    dims = list(range(x.dim() - k, x.dim()))
    xc = aten._to_copy.default(x, dtype=_compute_dtype(x)) if _compute_dtype(x) != x.dtype else x
    out, mean, rstd = _normalise(xc, dims, eps)
    if weight is not None:
        out = aten.mul.Tensor(out, weight)
    if bias is not None:
        out = aten.add.Tensor(out, bias)
    if out.dtype != x.dtype:
        out = aten._to_copy.default(out, dtype=x.dtype)
    return out, mean, rstd


def _native_group_norm(x, weight, bias, n, c, hxw, group, eps):
    xc = aten._to_copy.default(x, dtype=_compute_dtype(x)) if _compute_dtype(x) != x.dtype else x
    grouped = aten.view.default(xc, [n, group, (c // group) * hxw])
    normed, mean, rstd = _normalise(grouped, [2], eps)
    out = aten.view.default(normed, list(x.shape))
    affine_shape = [1, c] + [1] * (x.dim() - 2)
    if weight is not None:
        out = aten.mul.Tensor(out, aten.view.default(weight, affine_shape))
    if bias is not None:
        out = aten.add.Tensor(out, aten.view.default(bias, affine_shape))
    if out.dtype != x.dtype:
        out = aten._to_copy.default(out, dtype=x.dtype)
    return out, aten.view.default(mean, [n, group]), aten.view.default(rstd, [n, group])


def extra_decompositions():
    """{OpOverload: decomposition} added to torch.export.default_decompositions()."""
    return {
        aten.split_with_sizes.default: _split_with_sizes,
        aten.split.Tensor: _split,
        aten.var.correction: _var,
        aten.var_mean.correction: _var_mean,
        aten.native_layer_norm.default: _native_layer_norm,
        aten.native_group_norm.default: _native_group_norm,
    }
