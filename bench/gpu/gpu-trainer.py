#!/usr/bin/env python3
"""bench/gpu/gpu-trainer.py CASES.json OUTDIR [FIRST [LAST]]

Issue 45's Trainer runs: each case of CASES.json ({"name", "model": config, "seq": S,
"args": {TrainingArguments keywords}}) trains a model made from its config (random
weights, in the config's dtype, as transformers 5 loads a checkpoint by default) with
transformers' own Trainer for args' max_steps, on random token ids of length S, in a
fresh process. OUTDIR gets trainer.jsonl (one line a case: torch's allocated and reserved
peaks, NVML's figure for the process, the versions) and NAME.args.json, the
TrainingArguments as that Trainer writes them (args.to_json_string()): the file
`headroom plan --trainer-args` is held to."""
import json
import os
import subprocess
import sys


def child(case, outdir):
    import torch
    torch.cuda.init()
    torch.empty(1, device="cuda")
    free0, total = torch.cuda.mem_get_info()
    from transformers import AutoConfig, AutoModelForCausalLM, Trainer, TrainingArguments
    import transformers
    m = dict(case["model"])
    dtype = {"bfloat16": torch.bfloat16, "float32": torch.float32}[m.get("torch_dtype", "bfloat16")]
    cfg = AutoConfig.for_model(**m)
    cfg._attn_implementation = "sdpa"
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(cfg, dtype=dtype)
    S = case["seq"]
    vocab = cfg.vocab_size

    class Random(torch.utils.data.Dataset):
        def __len__(self):
            return 100000

        def __getitem__(self, i):
            ids = torch.randint(0, vocab, (S,))
            return {"input_ids": ids, "labels": ids.clone()}

    tmp = os.path.join(outdir, "run-" + case["name"].replace("/", "_"))
    args = TrainingArguments(output_dir=tmp, report_to="none", save_strategy="no", logging_steps=1000,
                             dataloader_num_workers=0, learning_rate=1e-5, **case["args"])
    name = case["name"].replace("/", "_")
    with open(os.path.join(outdir, name + ".args.json"), "w") as fh:
        fh.write(args.to_json_string())
    trainer = Trainer(model=model, args=args, train_dataset=Random())
    oom = None
    try:
        trainer.train()
    except torch.cuda.OutOfMemoryError as e:
        oom = str(e).splitlines()[0][:300]
    torch.cuda.synchronize()
    smi = subprocess.run(["nvidia-smi", "--query-compute-apps=pid,used_memory", "--format=csv,noheader,nounits"],
                         capture_output=True, text=True).stdout
    used = None
    for line in smi.strip().splitlines():
        pid, u = [x.strip() for x in line.split(",")]
        if int(pid) == os.getpid():
            used = int(u)
    res = {"case": case, "oom": oom, "max_allocated": torch.cuda.max_memory_allocated(),
           "max_reserved": torch.cuda.max_memory_reserved(), "nvml_process_used_mib": used,
           "context_free_drop": total - free0, "n_params": sum(p.numel() for p in model.parameters()),
           "optim": str(args.optim), "torch": torch.__version__, "transformers": transformers.__version__,
           "gpu": torch.cuda.get_device_name(0)}
    with open(os.path.join(outdir, "trainer.jsonl"), "a") as fh:
        fh.write(json.dumps(res) + "\n")
    G = 2 ** 30
    print(f"{case['name']}: {'OOM ' if oom else ''}alloc={res['max_allocated'] / G:.2f}G "
          f"reserved={res['max_reserved'] / G:.2f}G nvml={used}MiB optim={res['optim']}", flush=True)


def main():
    if len(sys.argv) < 3 or sys.argv[1] in ("-h", "--help"):
        print(__doc__)
        return 0 if len(sys.argv) > 1 and sys.argv[1] in ("-h", "--help") else 2
    if sys.argv[1] == "--child":
        child(json.loads(sys.argv[2]), sys.argv[3])
        return 0
    cases = json.load(open(sys.argv[1]))
    outdir = sys.argv[2]
    os.makedirs(outdir, exist_ok=True)
    first = int(sys.argv[3]) if len(sys.argv) > 3 else 0
    last = int(sys.argv[4]) if len(sys.argv) > 4 else len(cases) - 1
    for c in cases[first:last + 1]:
        try:
            p = subprocess.run([sys.executable, __file__, "--child", json.dumps(c), outdir], timeout=240,
                               capture_output=True, text=True)
            print((p.stdout.strip().splitlines() or [c["name"] + ": " + p.stderr.strip()[-400:]])[-1], flush=True)
        except subprocess.TimeoutExpired:
            print(f"{c['name']}: timed out", flush=True)
    return 0


sys.exit(main())
