#!/usr/bin/env python3
"""Measures device-memory copy bandwidth on GPU 0 (bytes read + written) as the HBM ceiling:
a 2 GiB device-to-device copy, 5 warm-up + 20 timed with CUDA events, median. Prints one JSON line."""
import json
import statistics

import torch

n = 2 << 30
src = torch.empty(n, dtype=torch.uint8, device="cuda").random_()
dst = torch.empty_like(src)
for _ in range(5):
    dst.copy_(src)
times = []
for _ in range(20):
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    a.record()
    dst.copy_(src)
    b.record()
    b.synchronize()
    times.append(a.elapsed_time(b) / 1000)
t = statistics.median(times)
print(json.dumps({"device": torch.cuda.get_device_name(0), "bytes": 2 * n, "median_s": t, "copy_tb_s": 2 * n / t / 1e12}))
