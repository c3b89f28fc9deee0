#!/usr/bin/env python3
"""Which thread frees DDP's old gradient buckets when it rebuilds them (step 2)?
Run under torchrun on two GPUs; each rank appends a line to OUT_JSONL:
  python3 -m torch.distributed.run --nproc_per_node 2 bench/gpu/ddp-rebuild.py OUT_JSONL CASE_JSON PAUSE_S
PAUSE_S: seconds slept after step 1 (0: none). Step 2's allocator history is recorded;
for each block of at least 1 MiB allocated before it and freed during it, the line keeps
its size and the Python frame that freed it (none: freed by a thread without Python,
such as ProcessGroupNCCL's watchdog dropping a finished collective's stashed tensors),
with the forward's allocated memory, as bench/gpu/gpu-dist.py measures it."""
import json, os, sys, time

import torch
import torch.distributed as dist

out_path, case, pause = sys.argv[1], json.loads(sys.argv[2]), float(sys.argv[3])
m, t = case["model"], case["train"]
rank = int(os.environ["RANK"])
torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
dist.init_process_group("nccl", device_id=torch.device("cuda", torch.cuda.current_device()))
from transformers import AutoConfig, AutoModelForCausalLM
from torch.nn.parallel import DistributedDataParallel as DDP
cfg = AutoConfig.for_model(**m)
cfg._attn_implementation = "sdpa"
dtype = {"bf16": torch.bfloat16, "fp32": torch.float32}[t["param_dtype"]]
torch.manual_seed(0)
with torch.device("cuda"):
    model = AutoModelForCausalLM.from_config(cfg, torch_dtype=dtype)
model.train()
ddp = DDP(model, device_ids=[torch.cuda.current_device()])
opt = torch.optim.AdamW(model.parameters(), lr=1e-5, foreach=True)
B, S = t["batch"], t["seq"]
res = {"name": case["name"], "rank": rank, "pause_s": pause, "fwd_allocated": [], "bwd_peak": []}
for step in range(3):
    if step == 1:
        torch.cuda.memory._record_memory_history(max_entries=500000, stacks="python")
    ids = torch.randint(0, cfg.vocab_size, (B, S), device="cuda")
    with torch.autocast("cuda", dtype=torch.bfloat16, enabled=bool(t.get("autocast"))):
        out = ddp(input_ids=ids, labels=ids)
    torch.cuda.synchronize()
    res["fwd_allocated"].append(torch.cuda.memory_allocated())
    out.loss.backward()
    torch.cuda.synchronize()
    res["bwd_peak"].append(torch.cuda.max_memory_allocated())
    opt.step()
    opt.zero_grad(set_to_none=True)
    torch.cuda.synchronize()
    if step == 0 and pause:
        time.sleep(pause)
    if step == 1:
        snap = torch.cuda.memory._snapshot()
        torch.cuda.memory._record_memory_history(enabled=None)
        seen, frees = set(), {}
        for e in snap["device_traces"][torch.cuda.current_device()]:
            if e["action"] == "alloc":
                seen.add(e["addr"])
            elif e["action"] == "free_completed" and e["addr"] not in seen and e["size"] >= 1 << 20:
                fr = e.get("frames") or []
                where = next((f"{os.path.basename(f['filename'])}:{f['line']}:{f['name']}" for f in fr
                              if f["filename"].endswith(".py")), "none")
                k = frees.setdefault(where, [0, 0])
                k[0] += 1
                k[1] += e["size"]
        res["old_blocks_freed_in_step2"] = frees
for r in range(2):
    if r == rank:
        with open(out_path, "a") as fh:
            fh.write(json.dumps(res) + "\n")
    dist.barrier()
print(json.dumps(res))
dist.destroy_process_group()
