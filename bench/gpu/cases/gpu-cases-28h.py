#!/usr/bin/env python3
"""bench/gpu/cases/gpu-cases-28h.py: writes bench/gpu/cases/gpu-cases-28h.json, issue 28's held-out check of our
own: real-scale shapes and settings the set of bench/gpu/cases/gpu-cases-28.json does not have,
planned (bench/results/gpu-cases-28h-plan.md) before they run (gpu-session rh)."""
import json

M = {
 "qwen2.5-7b": {"model_type": "qwen2", "hidden_size": 3584, "num_hidden_layers": 28, "num_attention_heads": 28, "num_key_value_heads": 4, "intermediate_size": 18944, "vocab_size": 152064, "max_position_embeddings": 32768, "tie_word_embeddings": False},
 "mistral-7b": {"model_type": "mistral", "hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8, "intermediate_size": 14336, "vocab_size": 32768, "max_position_embeddings": 32768, "tie_word_embeddings": False, "sliding_window": None},
 "mixtral-e8k2-l8": {"model_type": "mixtral", "hidden_size": 4096, "num_hidden_layers": 8, "num_attention_heads": 32, "num_key_value_heads": 8, "intermediate_size": 14336, "num_local_experts": 8, "num_experts_per_tok": 2, "vocab_size": 32000, "max_position_embeddings": 32768, "tie_word_embeddings": False},
 "qwen3-4b": {"model_type": "qwen3", "hidden_size": 2560, "num_hidden_layers": 36, "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 128, "intermediate_size": 9728, "vocab_size": 151936, "max_position_embeddings": 40960, "tie_word_embeddings": True},
 "gemma2-9b": {"model_type": "gemma2", "hidden_size": 3584, "num_hidden_layers": 42, "num_attention_heads": 16, "num_key_value_heads": 8, "head_dim": 256, "intermediate_size": 14336, "vocab_size": 256000, "max_position_embeddings": 8192, "sliding_window": 4096, "final_logit_softcapping": 30.0, "attn_logit_softcapping": None, "query_pre_attn_scalar": 256, "tie_word_embeddings": True},
 "drafter-llama70b-x4": {"model_type": "llama", "hidden_size": 8192, "num_hidden_layers": 4, "num_attention_heads": 64, "num_key_value_heads": 8, "intermediate_size": 28672, "vocab_size": 128256, "max_position_embeddings": 131072, "tie_word_embeddings": False},
 "llama3.1-8b": {"model_type": "llama", "hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8, "intermediate_size": 14336, "vocab_size": 128256, "max_position_embeddings": 131072, "tie_word_embeddings": False, "rope_theta": 500000.0},
}


def case(model, prec, opt, b, s, ckpt=False, expandable=False, **kw):
    t = {"param_dtype": "bf16", "autocast": False} if prec == "bf16" else {"param_dtype": "fp32", "autocast": True}
    t.update({"optimizer": opt, "steps": 6, "batch": b, "seq": s})
    tag = [prec if prec == "bf16" else "mp", opt]
    if kw.get("fused"):
        tag.append("fused")
    if ckpt:
        t["grad_ckpt"] = True
        tag.append("ckpt")
    if kw.get("lora_rank"):
        tag.append(f"lora{kw['lora_rank']}")
    if kw.get("freeze"):
        tag.append("frozen-embeds")
    t.update(kw)
    name = f"{model}/{'-'.join(tag)}/b{b}s{s}"
    if expandable:
        t["alloc_conf"] = "expandable_segments:True"
        name += "/expandable"
    return {"name": name, "model": M[model], "train": t}


D = dict(freeze=["embed", "lm_head"], inputs_embeds=True)
cases = [
    case("qwen2.5-7b", "bf16", "adamw", 1, 16384, ckpt=True),
    case("qwen2.5-7b", "bf16", "adamw", 2, 8192, lora_rank=32, lora_targets="all"),
    case("mistral-7b", "bf16", "adamw", 1, 16384, fused=True),
    case("mistral-7b", "amp", "adamw", 2, 4096, ckpt=True, fused=True),
    case("mixtral-e8k2-l8", "bf16", "adamw", 1, 8192, ckpt=True),
    case("qwen3-4b", "amp", "adamw", 1, 16384, ckpt=True),
    case("qwen3-4b", "bf16", "adamw", 2, 16384, ckpt=True, expandable=True),
    case("gemma2-9b", "bf16", "sgd", 2, 8192, ckpt=True),
    case("drafter-llama70b-x4", "bf16", "adamw", 1, 16384, **D),
    case("llama3.1-8b", "bf16", "adamw", 4, 8192, ckpt=True, lora_rank=16),
    case("llama3.1-8b", "bf16", "adamw", 1, 10240),
]
json.dump(cases, open("bench/gpu/cases/gpu-cases-28h.json", "w"), indent=1)
print(len(cases))
