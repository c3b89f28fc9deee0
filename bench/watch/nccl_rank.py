#!/usr/bin/env python3
"""A rank of a real two-GPU NCCL job for bench/watch/watch-nccl: init_process_group("nccl")
from the environment (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT, as a plain launcher or
torchrun sets them), an all-reduce every step. Rank 1 also allocates STEP_GIB more every
STEP_S seconds until CUDA runs out of memory, prints the time of its OOM and exits 1, as a
rank that died in its backward pass; rank 0 then hangs in its next all-reduce."""
import os
import sys
import time

import torch
import torch.distributed as dist

STEP_GIB = int(os.environ.get("STEP_GIB", "8"))
STEP_S = float(os.environ.get("STEP_S", "2"))

rank = int(os.environ["RANK"])
local = int(os.environ.get("LOCAL_RANK", rank))
torch.cuda.set_device(local)
dist.init_process_group("nccl", device_id=torch.device("cuda", local))
x = torch.ones(1 << 20, device="cuda")
held, last = [], time.monotonic()
print(f"rank {rank} pid {os.getpid()} up at {time.time() * 1000:.0f}", flush=True)
while True:
    dist.all_reduce(x)
    torch.cuda.synchronize()
    x.fill_(1)
    if rank == 1 and time.monotonic() - last >= STEP_S:
        last = time.monotonic()
        try:
            held.append(torch.empty(STEP_GIB << 30, dtype=torch.uint8, device="cuda"))
        except torch.OutOfMemoryError:
            print(f"OOM at {time.time() * 1000:.0f} after {len(held) * STEP_GIB} GiB", flush=True)
            os._exit(1)
    time.sleep(0.01)
