#!/usr/bin/env python3
"""A rank of a job of many ranks on one GPU for bench/watch/watch-ranks: NCCL refuses two ranks
on one GPU, so the collective is a barrier on torch.distributed's TCPStore (rank 0 hosts
it) every step; a rank whose peer died waits in it for ever, as an NCCL rank waits in its
all-reduce. Every rank holds a CUDA context and a tensor on the GPU. The ranks named in
DIE (RANK:GIB,...) also allocate GIB more every STEP_S seconds until CUDA runs out of
memory (in a thread of their own: the growth goes on while the barrier waits), print the
time of their OOM and exit 1, as a rank that died in its backward."""
import datetime
import os
import threading
import time

import torch
import torch.distributed as dist

rank = int(os.environ["RANK"])
world = int(os.environ["WORLD_SIZE"])
die = dict(map(int, p.split(":")) for p in os.environ.get("DIE", "").split(",") if p)
step_s = float(os.environ.get("STEP_S", "1.5"))

torch.cuda.set_device(0)
x = torch.ones(1 << 20, device="cuda")
store = dist.TCPStore(os.environ["MASTER_ADDR"], int(os.environ.get("STORE_PORT") or os.environ["MASTER_PORT"]), world, rank == 0,
                      timeout=datetime.timedelta(hours=1))
print(f"rank {rank} pid {os.getpid()} up at {time.time() * 1000:.0f}", flush=True)


def grow(gib):
    """A leak beside the collective: it grows whether or not the barrier moves, so that a
    rank can die of it after a peer died (the others then wait in their barrier)."""
    held = []
    while True:
        time.sleep(step_s)
        try:
            held.append(torch.empty(gib << 30, dtype=torch.uint8, device="cuda"))
        except torch.OutOfMemoryError:
            print(f"rank {rank} OOM at {time.time() * 1000:.0f} after {len(held) * gib} GiB", flush=True)
            os._exit(1)


if rank in die:
    threading.Thread(target=grow, args=(die[rank],), daemon=True).start()
step = 0
while True:
    store.add(f"s{step}", 1)
    while store.add(f"s{step}", 0) < world:
        time.sleep(0.01)
    step += 1
    x.add_(1)
    torch.cuda.synchronize()
    time.sleep(0.05)
