"""torch._scaled_mm where the device has no kernel for it. nvfp4 operands (float4_e2m1fn_x2, two
e2m1 values per byte, the even column in the low nibble) with 1×16 float8_e4m3fn block scales in
cuBLAS's blocked layout need a Blackwell GPU; the CPU takes only per-tensor scales. On any other
device the reference's call is emulated: both operands are dequantised exactly (value × its block's
scale) to float32, multiplied in float32 (as the GPU accumulates), the bias added, and the result
cast to out_dtype. Every other call goes to torch's own _scaled_mm.

install() replaces torch._scaled_mm for the references the oracle runs (reference.load_run); the
capture does not install it, so a captured graph keeps the _scaled_mm node."""

from __future__ import annotations

import math

import torch

_E2M1 = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0)
_ORIGINAL = {}


def unpack_fp4(x):
    """(R, C/2) float4_e2m1fn_x2 packed along the last dim → (R, C) float32 values."""
    u = x.view(torch.uint8).contiguous()
    codes = torch.stack([u & 0xF, u >> 4], dim=-1).reshape(u.shape[0], u.shape[1] * 2)
    return torch.tensor(_E2M1, dtype=torch.float32, device=x.device)[codes.long()]


def unblock_scales(s, rows, cols):
    """cuBLAS's blocked scale layout (128×4 tiles, each stored as 32×16) → (rows, cols) float32."""
    rb, cb = math.ceil(rows / 128), math.ceil(cols / 4)
    t = s.reshape(-1).float().view(rb * cb, 32, 4, 4).transpose(1, 2).reshape(rb, cb, 128, 4)
    return t.permute(0, 2, 1, 3).reshape(rb * 128, cb * 4)[:rows, :cols]


def dequantize_nvfp4(x, scales):
    """(R, K/2) packed e2m1 with blocked 1×16 scales → (R, K) float32."""
    v = unpack_fp4(x)
    s = unblock_scales(scales, v.shape[0], v.shape[1] // 16)
    return v * s.repeat_interleave(16, dim=1)


def needs_emulation(a):
    if a.dtype != torch.float4_e2m1fn_x2:
        return False
    if a.device.type != "cuda":
        return True
    return torch.cuda.get_device_capability(a.device) < (10, 0)


def emulated_scaled_mm(a, b, scale_a, scale_b, bias=None, out_dtype=None):
    """a: (M, K/2), b: (K/2, N) (the transpose of an (N, K/2) packed matrix), both nvfp4."""
    a_deq = dequantize_nvfp4(a, scale_a)
    b_deq = dequantize_nvfp4(b.t(), scale_b)
    out = a_deq @ b_deq.t()
    if bias is not None:
        out = out + bias.float()
    return out.to(out_dtype or torch.float32)


def install():
    """torch._scaled_mm emulated for nvfp4 where the device lacks it; idempotent."""
    if "_scaled_mm" in _ORIGINAL:
        return
    original = torch._scaled_mm
    _ORIGINAL["_scaled_mm"] = original

    def scaled_mm(a, b, scale_a, scale_b, bias=None, scale_result=None, out_dtype=None, use_fast_accum=False):
        if needs_emulation(a) and scale_result is None:
            return emulated_scaled_mm(a, b, scale_a, scale_b, bias, out_dtype)
        return original(a, b, scale_a, scale_b, bias=bias, scale_result=scale_result, out_dtype=out_dtype,
                        use_fast_accum=use_fast_accum)

    torch._scaled_mm = scaled_mm
