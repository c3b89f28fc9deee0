#!/usr/bin/env python3
"""Measure each rank's peak GPU memory of a few data-parallel training steps: DDP
(gradient buckets, bucket_cap_mb as its default) or FSDP2's fully_shard (per decoder
layer, then the root; reshard_after_forward on or off), bf16 weights or fp32 weights
under bf16 autocast. Run under torchrun, one process a GPU:
  python3 -m torch.distributed.run --nproc_per_node 2 bench/gpu/gpu-dist.py OUT_JSONL CASE_JSON
CASE_JSON as bench/gpu/gpu-measure.py's, its "train" with "dp": ranks and either "ddp": true
or "zero_stage": 3 with "reshard_after_forward" (and "fsdp_param_dtype", "fsdp_reduce_dtype",
"offload": ["optimizer", "params"] as the planner's settings). Each rank appends its own line:
torch's peaks, NVML's per-process device memory (the NCCL buffers included). With
HEADROOM_TRACE_DIR set, each rank also writes its caching allocator's history there
(NAME.rankR.trace, lines as bench/gpu/gpu-measure.py's with HEADROOM_TRACE_STACKS=1; with
HEADROOM_TRACE_STREAMS=1 each line ends with the stream whose pool its block is in)."""
import json, os, subprocess, sys

import torch
import torch.distributed as dist

out_path, case = sys.argv[1], json.loads(sys.argv[2])
m, t = case["model"], case["train"]
rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
torch.empty(1, device="cuda")
free0, total = torch.cuda.mem_get_info()
trace_dir = os.environ.get("HEADROOM_TRACE_DIR")
if trace_dir:
    torch.cuda.memory._record_memory_history(context="alloc", stacks="python", max_entries=2000000)
dist.init_process_group("nccl", device_id=torch.device("cuda", torch.cuda.current_device()))

from transformers import AutoConfig, AutoModelForCausalLM
cfg = AutoConfig.for_model(**m)
cfg._attn_implementation = "sdpa"
dtype = {"bf16": torch.bfloat16, "fp32": torch.float32}[t["param_dtype"]]
torch.manual_seed(0)
# offloaded shards: the model built on the CPU, as HF Trainer and accelerate load it for
# FSDP (fully_shard keeps the shards there); else on the GPU
offloaded = "params" in (t.get("offload") or [])
with torch.device("cpu" if offloaded else "cuda"):
    model = AutoModelForCausalLM.from_config(cfg, torch_dtype=dtype)
if t.get("grad_ckpt"):
    model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
model.train()
if t.get("ddp"):
    from torch.nn.parallel import DistributedDataParallel as DDP
    wrapped = DDP(model, device_ids=[torch.cuda.current_device()])
else:
    from torch.distributed.fsdp import CPUOffloadPolicy, MixedPrecisionPolicy, OffloadPolicy, fully_shard
    r = t.get("reshard_after_forward", True)
    dt = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32, "none": None}
    # "fsdp_param_dtype"/"fsdp_reduce_dtype": the MixedPrecisionPolicy; "offload" with
    # "params": CPUOffloadPolicy (the shards, their gradients and the step on the host)
    mp = MixedPrecisionPolicy(param_dtype=dt[t.get("fsdp_param_dtype", "none")],
                              reduce_dtype=dt[t.get("fsdp_reduce_dtype", "none")])
    off = CPUOffloadPolicy() if "params" in (t.get("offload") or []) else OffloadPolicy()
    for layer in model.model.layers:
        fully_shard(layer, reshard_after_forward=r, mp_policy=mp, offload_policy=off)
    fully_shard(model, reshard_after_forward=r, mp_policy=mp, offload_policy=off)
    wrapped = model
after_weights = torch.cuda.memory_allocated()
opt = torch.optim.AdamW(model.parameters(), lr=1e-5, fused=t.get("fused", False),
                        foreach=None if t.get("fused") else True)
B, S = t["batch"], t["seq"]
per_step = []
for step in range(t.get("steps", 3)):
    ids = torch.randint(0, cfg.vocab_size, (B, S), device="cuda")
    with torch.autocast("cuda", dtype=torch.bfloat16, enabled=bool(t.get("autocast"))):
        out = wrapped(input_ids=ids, labels=ids)
    torch.cuda.synchronize()
    fwd = [torch.cuda.memory_allocated(), torch.cuda.max_memory_allocated()]
    loss = out.loss
    if not t.get("keep_outputs"):  # HF Trainer: the output goes as the loss is taken
        out = None
    loss.backward()
    loss = None
    torch.cuda.synchronize()
    bwd = [torch.cuda.memory_allocated(), torch.cuda.max_memory_allocated()]
    opt.step()
    opt.zero_grad(set_to_none=True)
    torch.cuda.synchronize()
    per_step.append({"max_allocated": torch.cuda.max_memory_allocated(),
                     "max_reserved": torch.cuda.max_memory_reserved(),
                     "phases": {"forward": fwd, "backward": bwd, "optimizer": [torch.cuda.memory_allocated(),
                                                                             torch.cuda.max_memory_allocated()]}})
dist.barrier()
smi = subprocess.run(["nvidia-smi", "--query-compute-apps=pid,used_memory", "--format=csv,noheader,nounits"],
                     capture_output=True, text=True).stdout
used = None
for line in smi.strip().splitlines():
    pid, mib = [x.strip() for x in line.split(",")]
    if int(pid) == os.getpid():
        used = int(mib)
res = {"case": case, "rank": rank, "world": world, "n_params": sum(p.numel() for p in model.parameters()),
       "weights_allocated": after_weights, "max_allocated": torch.cuda.max_memory_allocated(),
       "max_reserved": torch.cuda.max_memory_reserved(), "per_step": per_step,
       "context_free_drop": total - free0, "device_total": total, "nvml_process_used_mib": used,
       "torch": torch.__version__, "cuda": torch.version.cuda, "gpu": torch.cuda.get_device_name(0)}
if trace_dir:
    # each rank's caching-allocator history, as gpu-measure.py writes it, with the
    # innermost frame in transformers, torch.distributed or torch.optim that allocated
    snap = torch.cuda.memory._snapshot()
    with open(os.path.join(trace_dir, case["name"].replace("/", "_") + f".rank{rank}.trace"), "w") as fh:
        for e in snap["device_traces"][torch.cuda.current_device()]:
            fr = [f for f in e.get("frames") or [] if any(k in f["filename"] for k in
                  ("transformers", "distributed", "optim", "parallel", "gpu-dist"))]
            f = (fr or e.get("frames") or [None])[0]
            where = f" {f['filename'].split('/')[-1]}:{f['line']}:{f['name']}" if f else ""
            # HEADROOM_TRACE_STREAMS=1: the stream whose pool the block is in, last
            pool = f" stream={e.get('stream', 0)}" if os.environ.get("HEADROOM_TRACE_STREAMS") else ""
            fh.write(f"{e['action']} {e['size']} {e['addr']}{where}{pool}\n")
dist.barrier()
for r in range(world):
    if r == rank:
        with open(out_path, "a") as fh:
            fh.write(json.dumps(res) + "\n")
    dist.barrier()
print(f"{case['name']} rank {rank}: alloc={res['max_allocated']/2**30:.2f}G reserved={res['max_reserved']/2**30:.2f}G nvml={used}MiB")
dist.destroy_process_group()
