#!/usr/bin/env python3
"""Writes gpu-trainer-45.json: issue 45's HF Trainer runs (bench/gpu/gpu-trainer.py), four
models in the config's dtype (bf16, as transformers 5 loads a bf16 checkpoint) under
bf16=True, with and without checkpointing and accumulation. Run from the repository root."""
import json

LLAMA1B = {"model_type": "llama", "hidden_size": 2048, "num_hidden_layers": 16, "num_attention_heads": 32,
           "num_key_value_heads": 8, "head_dim": 64, "intermediate_size": 8192, "vocab_size": 128256,
           "tie_word_embeddings": True, "rope_theta": 500000.0, "max_position_embeddings": 131072,
           "torch_dtype": "bfloat16"}
LLAMA3B = dict(LLAMA1B, hidden_size=3072, num_hidden_layers=28, num_attention_heads=24, head_dim=128)
QWEN17 = {"model_type": "qwen3", "hidden_size": 2048, "num_hidden_layers": 28, "num_attention_heads": 16,
          "num_key_value_heads": 8, "head_dim": 128, "intermediate_size": 6144, "vocab_size": 151936,
          "tie_word_embeddings": True, "max_position_embeddings": 40960, "torch_dtype": "bfloat16"}
QWEN05 = {"model_type": "qwen2", "hidden_size": 896, "num_hidden_layers": 24, "num_attention_heads": 14,
          "num_key_value_heads": 2, "intermediate_size": 4864, "vocab_size": 151936,
          "tie_word_embeddings": True, "max_position_embeddings": 32768, "torch_dtype": "bfloat16"}


def args(batch, accum, ckpt, steps):
    return {"per_device_train_batch_size": batch, "gradient_accumulation_steps": accum,
            "gradient_checkpointing": ckpt, "bf16": True, "optim": "adamw_torch", "max_steps": steps}


cases = [
    {"name": "llama3.2-1b/trainer-ckpt-accum4/b4s2048", "model": LLAMA1B, "seq": 2048, "args": args(4, 4, True, 2)},
    {"name": "qwen3-1.7b/trainer/b2s2048", "model": QWEN17, "seq": 2048, "args": args(2, 1, False, 3)},
    {"name": "qwen2.5-0.5b/trainer-accum2/b8s1024", "model": QWEN05, "seq": 1024, "args": args(8, 2, False, 2)},
    {"name": "llama3.2-3b/trainer-ckpt/b1s4096", "model": LLAMA3B, "seq": 4096, "args": args(1, 1, True, 3)},
]
json.dump(cases, open("bench/gpu/cases/gpu-trainer-45.json", "w"), indent=1)
