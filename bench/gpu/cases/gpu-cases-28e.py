#!/usr/bin/env python3
"""bench/gpu/cases/gpu-cases-28e.py: writes bench/gpu/cases/gpu-cases-28e.json, issue 28's runs at the card's
edge: shapes the planner puts within 5 % of the H200 (or just past it), planned
(bench/results/gpu-cases-28e-plan.md) before they run (gpu-session re)."""
import json

exec(open(__file__.replace("28e.py", "28.py")).read().split("cases = [")[0].replace("json.dump(cases", "#"))
cases = [
    case("llama3.2-3b", "bf16", "adamw", 2, 9728),
    case("mistral-nemo-12b", "bf16", "adamw", 1, 24576, ckpt=True, fused=True),
    case("drafter-qwen14b-x5", "bf16", "adamw", 1, 30720, freeze=["embed", "lm_head"], inputs_embeds=True),
    case("llama3.1-8b", "bf16", "adamw", 1, 10752),
    case("phi3-medium-14b", "bf16", "adamw", 2, 6144, lora_rank=32),
    case("llama3.1-8b", "bf16", "adamw", 1, 36864, ckpt=True),
    case("qwen3-8b", "bf16", "adamw", 1, 10240),
]
json.dump(cases, open(__file__.replace(".py", ".json"), "w"), indent=1)
print(len(cases))
