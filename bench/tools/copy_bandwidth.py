#!/usr/bin/env python3
"""Measures GPU 0's two ceilings that the campaign summaries divide by, with CUDA events (median):
  copy_tb_s          device-memory copy bandwidth (bytes read + written): a 2 GiB device-to-device
                     copy, 5 warm-up + 20 timed;
  bf16_dense_tflops  the bf16 dense rate: an 8192 x 8192 x 8192 torch.matmul on random data, 3
                     warm-up + 10 timed (cuBLAS; KINDS.md's figures are measured the same way).
Prints one JSON line."""
import json
import statistics

import torch


def median_s(fn, warm, reps):
    for _ in range(warm):
        fn()
    times = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b) / 1000)
    return statistics.median(times)


n = 2 << 30
src = torch.empty(n, dtype=torch.uint8, device="cuda").random_()
dst = torch.empty_like(src)
t = median_s(lambda: dst.copy_(src), 5, 20)
del src, dst
m = 8192
x = torch.randn(m, m, dtype=torch.bfloat16, device="cuda")
y = torch.randn(m, m, dtype=torch.bfloat16, device="cuda")
tm = median_s(lambda: torch.matmul(x, y), 3, 10)
print(json.dumps({"device": torch.cuda.get_device_name(0), "bytes": 2 * n, "median_s": t, "copy_tb_s": 2 * n / t / 1e12,
                  "matmul_median_s": tm, "bf16_dense_tflops": 2 * m ** 3 / tm / 1e12}))
