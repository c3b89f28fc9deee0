#!/usr/bin/env python3
"""Writes gpu-cases-45.json: issue 45's measured recipes. Gradient accumulation 1 against 8
on two models (a full bf16 fine-tune without checkpointing, an amp-bf16 one with it),
bitsandbytes' 8-bit optimizers, and QLoRA / 8-bit loading (bitsandbytes through
from_pretrained, PEFT with prepare_model_for_kbit_training). Run from the repository root."""
import json

LLAMA1B = {"model_type": "llama", "hidden_size": 2048, "num_hidden_layers": 16, "num_attention_heads": 32,
           "num_key_value_heads": 8, "head_dim": 64, "intermediate_size": 8192, "vocab_size": 128256,
           "tie_word_embeddings": True, "rope_theta": 500000.0, "max_position_embeddings": 131072}
LLAMA3B = dict(LLAMA1B, hidden_size=3072, num_hidden_layers=28, num_attention_heads=24, head_dim=128)
QWEN17 = {"model_type": "qwen3", "hidden_size": 2048, "num_hidden_layers": 28, "num_attention_heads": 16,
          "num_key_value_heads": 8, "head_dim": 128, "intermediate_size": 6144, "vocab_size": 151936,
          "tie_word_embeddings": True, "max_position_embeddings": 40960}
QWEN8 = {"model_type": "qwen3", "hidden_size": 4096, "num_hidden_layers": 36, "num_attention_heads": 32,
         "num_key_value_heads": 8, "head_dim": 128, "intermediate_size": 12288, "vocab_size": 151936,
         "tie_word_embeddings": False, "max_position_embeddings": 40960}
cases = []
for acc in (1, 8):
    cases.append({"name": f"llama3.2-1b/bf16-adamw/b1s4096/accum{acc}", "model": LLAMA1B,
                  "train": {"param_dtype": "bf16", "autocast": False, "optimizer": "adamw", "batch": 1,
                            "seq": 4096, "grad_accum": acc, "steps": 2}})
    cases.append({"name": f"qwen3-1.7b/amp-adamw-ckpt/b1s8192/accum{acc}", "model": QWEN17,
                  "train": {"param_dtype": "fp32", "autocast": True, "optimizer": "adamw", "batch": 1,
                            "seq": 8192, "grad_ckpt": True, "grad_accum": acc, "steps": 2}})
for opt in ("adamw-8bit", "paged-adamw-8bit"):
    cases.append({"name": f"llama3.2-1b/bf16-{opt}/b1s2048", "model": LLAMA1B,
                  "train": {"param_dtype": "bf16", "autocast": False, "optimizer": opt, "batch": 1,
                            "seq": 2048, "steps": 3}})
q = {"param_dtype": "bf16", "autocast": False, "optimizer": "adamw", "lora_rank": 16,
     "lora_targets": "all", "grad_ckpt": True, "steps": 3}
cases.append({"name": "llama3.2-3b/qlora-nf4-dq-r16-all-ckpt/b2s2048", "model": LLAMA3B,
              "train": dict(q, quant="nf4", double_quant=True, batch=2, seq=2048)})
cases.append({"name": "llama3.2-3b/int8-r16-all-ckpt/b2s2048", "model": LLAMA3B,
              "train": dict(q, quant="int8", batch=2, seq=2048)})
cases.append({"name": "qwen3-8b/qlora-nf4-dq-r16-all-ckpt/b1s4096", "model": QWEN8,
              "train": dict(q, quant="nf4", double_quant=True, batch=1, seq=4096)})
cases.append({"name": "qwen3-1.7b/qlora-fp4-r64-qv/b1s4096", "model": QWEN17,
              "train": dict(q, quant="fp4", lora_rank=64, lora_targets="q,v", grad_ckpt=False, batch=1, seq=4096)})
json.dump(cases, open("bench/gpu/cases/gpu-cases-45.json", "w"), indent=1)
