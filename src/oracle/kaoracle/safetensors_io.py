"""The safetensors files the oracle exchanges with the judge: inputs.safetensors and
reference.safetensors written here and read by the C++ reader (src/problem/safetensors.cpp), and the
workloads' blobs read here. The format (src/oracle/README.md, "safetensors dialect") has two
implementations, this one and the C++ one, because the two sides run in different processes;
tests/test_oracle_protocol.cpp checks that each reads what the other writes."""

from __future__ import annotations

import ctypes
import hashlib
import json
import os
import struct

import torch

from .common import torch_dtype_name

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



def tensor_sha256(t):
    """SHA-256 of a tensor's bytes, row-major on the CPU (as safetensors stores them)."""
    keep, data = _tensor_view(t)
    h = hashlib.sha256(data).hexdigest()
    del keep, data
    return h


def same_bytes(a, b):
    """Bitwise equality (NaN-safe) of two tensors."""
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    a, b = _cpu_contiguous(a), _cpu_contiguous(b)
    if a.numel() == 0:
        return True
    return torch.equal(a.reshape(-1).view(torch.uint8), b.reshape(-1).view(torch.uint8))
