import json
M = {
 "llama3.1-8b": {"model_type": "llama", "hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8, "intermediate_size": 14336, "vocab_size": 128256, "max_position_embeddings": 131072, "tie_word_embeddings": False, "rope_theta": 500000.0},
 "llama3.2-3b": {"model_type": "llama", "hidden_size": 3072, "num_hidden_layers": 28, "num_attention_heads": 24, "num_key_value_heads": 8, "head_dim": 128, "intermediate_size": 8192, "vocab_size": 128256, "max_position_embeddings": 131072, "tie_word_embeddings": True, "rope_theta": 500000.0},
 "llama3.2-1b": {"model_type": "llama", "hidden_size": 2048, "num_hidden_layers": 16, "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 64, "intermediate_size": 8192, "vocab_size": 128256, "max_position_embeddings": 131072, "tie_word_embeddings": True, "rope_theta": 500000.0},
 "qwen3-8b": {"model_type": "qwen3", "hidden_size": 4096, "num_hidden_layers": 36, "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 128, "intermediate_size": 12288, "vocab_size": 151936, "max_position_embeddings": 40960, "tie_word_embeddings": False},
 "qwen3-14b": {"model_type": "qwen3", "hidden_size": 5120, "num_hidden_layers": 40, "num_attention_heads": 40, "num_key_value_heads": 8, "head_dim": 128, "intermediate_size": 17408, "vocab_size": 151936, "max_position_embeddings": 40960, "tie_word_embeddings": False},
 "mistral-nemo-12b": {"model_type": "mistral", "hidden_size": 5120, "num_hidden_layers": 40, "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 128, "intermediate_size": 14336, "vocab_size": 131072, "max_position_embeddings": 131072, "tie_word_embeddings": False, "sliding_window": None},
 "gemma2-9b": {"model_type": "gemma2", "hidden_size": 3584, "num_hidden_layers": 42, "num_attention_heads": 16, "num_key_value_heads": 8, "head_dim": 256, "intermediate_size": 14336, "vocab_size": 256000, "max_position_embeddings": 8192, "sliding_window": 4096, "final_logit_softcapping": 30.0, "attn_logit_softcapping": None, "query_pre_attn_scalar": 256, "tie_word_embeddings": True},
 "gemma3-12b": {"model_type": "gemma3_text", "hidden_size": 3840, "num_hidden_layers": 48, "num_attention_heads": 16, "num_key_value_heads": 8, "head_dim": 256, "intermediate_size": 15360, "vocab_size": 262208, "max_position_embeddings": 131072, "sliding_window": 1024, "query_pre_attn_scalar": 256, "tie_word_embeddings": True},
 "phi3-medium-14b": {"model_type": "phi3", "hidden_size": 5120, "num_hidden_layers": 40, "num_attention_heads": 40, "num_key_value_heads": 10, "intermediate_size": 17920, "vocab_size": 32064, "max_position_embeddings": 4096, "tie_word_embeddings": False, "sliding_window": None},
 "phi3-mini-3.8b": {"model_type": "phi3", "hidden_size": 3072, "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 32, "intermediate_size": 8192, "vocab_size": 32064, "max_position_embeddings": 4096, "tie_word_embeddings": False, "sliding_window": None},
 "qwen3moe-e128k8-l12": {"model_type": "qwen3_moe", "hidden_size": 2048, "num_hidden_layers": 12, "num_attention_heads": 32, "num_key_value_heads": 4, "head_dim": 128, "intermediate_size": 6144, "moe_intermediate_size": 768, "num_experts": 128, "num_experts_per_tok": 8, "vocab_size": 151936, "max_position_embeddings": 40960, "tie_word_embeddings": False},
 "qwen3moe-e64k8-h2560-l8": {"model_type": "qwen3_moe", "hidden_size": 2560, "num_hidden_layers": 8, "num_attention_heads": 32, "num_key_value_heads": 4, "head_dim": 128, "intermediate_size": 9728, "moe_intermediate_size": 1024, "num_experts": 64, "num_experts_per_tok": 8, "vocab_size": 151936, "max_position_embeddings": 40960, "tie_word_embeddings": False},
 "drafter-qwen14b-x5": {"model_type": "llama", "hidden_size": 5120, "num_hidden_layers": 5, "num_attention_heads": 40, "num_key_value_heads": 8, "head_dim": 128, "intermediate_size": 17408, "vocab_size": 151936, "max_position_embeddings": 131072, "tie_word_embeddings": False},
 "drafter-llama8b-x5": {"model_type": "llama", "hidden_size": 4096, "num_hidden_layers": 5, "num_attention_heads": 32, "num_key_value_heads": 8, "intermediate_size": 14336, "vocab_size": 128256, "max_position_embeddings": 131072, "tie_word_embeddings": False},
}
BF16 = {"param_dtype": "bf16", "autocast": False}
AMP = {"param_dtype": "fp32", "autocast": True}
def case(model, prec, opt, b, s, ckpt=False, expandable=False, **kw):
    t = dict(BF16 if prec == "bf16" else AMP)
    t.update({"optimizer": opt, "steps": 6, "batch": b, "seq": s})
    tag = [prec if prec == "bf16" else "mp", opt]
    if kw.get("fused"): tag.append("fused")
    if ckpt: t["grad_ckpt"] = True; tag.append("ckpt")
    if kw.get("lora_rank"): tag.append(f"lora{kw['lora_rank']}")
    if kw.get("freeze"): tag.append("frozen-embeds")
    if kw.get("inference"): tag = [prec, "infer"]
    t.update(kw)
    name = f"{model}/{'-'.join(tag)}/b{b}s{s}"
    if expandable:
        t["alloc_conf"] = "expandable_segments:True"; name += "/expandable"
    return {"name": name, "model": M[model], "train": t}
D = dict(freeze=["embed", "lm_head"], inputs_embeds=True)
cases = [
 case("llama3.2-3b", "amp", "adamw", 2, 4096, ckpt=True),
 case("llama3.2-3b", "bf16", "adamw", 2, 8192),
 case("llama3.1-8b", "bf16", "adamw", 1, 8192),
 case("llama3.1-8b", "bf16", "adamw", 1, 8192, expandable=True),
 case("llama3.1-8b", "bf16", "adamw", 1, 32768, ckpt=True),
 case("llama3.1-8b", "amp", "adamw", 1, 8192, ckpt=True, fused=True),
 case("qwen3-8b", "bf16", "adamw", 2, 8192, ckpt=True),
 case("qwen3-8b", "bf16", "adamw", 1, 16384, ckpt=True, expandable=True),
 case("qwen3-8b", "amp", "adamw", 1, 8192, ckpt=True, fused=True),
 case("llama3.1-8b", "bf16", "adamw", 1, 11264),
 case("qwen3-14b", "bf16", "sgd", 1, 32768, ckpt=True),
 case("qwen3-14b", "bf16", "adamw", 1, 8192, ckpt=True, fused=True),
 case("qwen3-14b", "bf16", "adamw", 2, 16384, ckpt=True, lora_rank=16),
 case("mistral-nemo-12b", "bf16", "adamw", 4, 8192, ckpt=True, lora_rank=64, lora_targets="all"),
 case("mistral-nemo-12b", "bf16", "adamw", 1, 8192, ckpt=True, fused=True),
 case("gemma2-9b", "bf16", "adamw", 1, 8192, ckpt=True),
 case("gemma3-12b", "bf16", "adamw", 2, 8192, ckpt=True, lora_rank=16),
 case("gemma3-12b", "bf16", "sgd", 1, 16384, ckpt=True),
 case("phi3-medium-14b", "bf16", "adamw", 2, 4096, lora_rank=32),
 case("phi3-mini-3.8b", "amp", "adamw", 4, 4096, ckpt=True),
 case("qwen3moe-e128k8-l12", "bf16", "adamw", 1, 8192),
 case("qwen3moe-e128k8-l12", "bf16", "adamw", 1, 8192, expandable=True),
 case("qwen3moe-e64k8-h2560-l8", "bf16", "adamw", 2, 8192, ckpt=True),
 case("drafter-qwen14b-x5", "bf16", "adamw", 1, 32768, **D),
 case("drafter-qwen14b-x5", "bf16", "adamw", 1, 32768, expandable=True, **D),
 case("llama3.1-8b", "bf16", "none", 16, 8192, inference=True),
 case("qwen3-14b", "bf16", "none", 8, 16384, inference=True, context=32768),
 # expected to OOM
 case("qwen3-14b", "bf16", "adamw", 1, 4096, ckpt=True),
 case("llama3.2-1b", "bf16", "adamw", 1, 65536, ckpt=True),
 case("gemma3-12b", "bf16", "sgd", 2, 16384, ckpt=True),
 case("llama3.1-8b", "amp", "adamw", 1, 4096, ckpt=True),
 case("drafter-llama8b-x5", "bf16", "adamw", 1, 65536, **D),
]
for c in cases:
    if c["train"].get("inference"):
        for k in ("optimizer",): c["train"].pop(k)
json.dump(cases, open("bench/gpu/cases/gpu-cases-28.json", "w"), indent=1)
print(len(cases))
