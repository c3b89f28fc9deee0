#!/usr/bin/env python3
"""A rank of a fake two-process job for bench/watch/watch-gpu-check: `steady` holds 8 GiB and
keeps computing until it is signalled; `grow` allocates 1 GiB every 0.25 s until CUDA
runs out of memory, prints the time of its OOM and exits 1, as a rank that died in its
backward pass would."""
import sys
import time

import torch

mode = sys.argv[1]
torch.cuda.init()
if mode == "steady":
    x = torch.empty(8 << 30, dtype=torch.uint8, device="cuda")
    a = torch.randn(2048, 2048, device="cuda")
    while True:
        a = a @ a.T / 2048
        torch.cuda.synchronize()
        time.sleep(0.05)
held = []
try:
    while True:
        held.append(torch.empty(1 << 30, dtype=torch.uint8, device="cuda"))
        time.sleep(0.25)
except torch.OutOfMemoryError:
    print(f"OOM at {time.time() * 1000:.0f} after {len(held)} GiB", flush=True)
    sys.exit(1)
