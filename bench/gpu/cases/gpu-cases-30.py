"""Issue 30's cases: the nine new families and two multimodal configs, at 0.5-4 B
parameters (the real configs' widths, fewer layers; a few with fewer experts, named so),
each trained in bf16 with AdamW with and without checkpointing, and run for inference.
Writes bench/gpu/cases/gpu-cases-30.json. docs/families-30.md says where each shape comes from."""
import json

M = {
    # allenai/OLMo-2-1124-7B, 4 of its 32 layers
    "olmo2-7b-l4": {"model_type": "olmo2", "hidden_size": 4096, "num_hidden_layers": 4, "num_attention_heads": 32,
                    "num_key_value_heads": 32, "intermediate_size": 11008, "vocab_size": 100352,
                    "max_position_embeddings": 4096, "rope_theta": 500000, "rms_norm_eps": 1e-6,
                    "attention_bias": False, "tie_word_embeddings": False},
    # Qwen/Qwen1.5-MoE-A2.7B, 4 of its 24 layers
    "qwen1.5moe-a2.7b-l4": {"model_type": "qwen2_moe", "hidden_size": 2048, "num_hidden_layers": 4,
                            "num_attention_heads": 16, "num_key_value_heads": 16, "intermediate_size": 5632,
                            "moe_intermediate_size": 1408, "shared_expert_intermediate_size": 5632,
                            "num_experts": 60, "num_experts_per_tok": 4, "norm_topk_prob": False,
                            "decoder_sparse_step": 1, "vocab_size": 151936, "max_position_embeddings": 8192,
                            "rope_theta": 1000000.0, "tie_word_embeddings": False},
    # moonshotai/Moonlight-16B-A3B (deepseek_v3, no q LoRA), 4 of its 27 layers (1 dense)
    "moonlight-16b-l4": {"model_type": "deepseek_v3", "hidden_size": 2048, "num_hidden_layers": 4,
                         "num_attention_heads": 16, "num_key_value_heads": 16, "intermediate_size": 11264,
                         "moe_intermediate_size": 1408, "n_routed_experts": 64, "n_shared_experts": 2,
                         "num_experts_per_tok": 6, "n_group": 1, "topk_group": 1, "first_k_dense_replace": 1,
                         "routed_scaling_factor": 2.446, "norm_topk_prob": True, "q_lora_rank": None,
                         "kv_lora_rank": 512, "qk_rope_head_dim": 64, "qk_nope_head_dim": 128, "v_head_dim": 128,
                         "vocab_size": 163840, "max_position_embeddings": 8192, "rope_theta": 50000.0,
                         "tie_word_embeddings": False},
    # DeepSeek-V3's attention and routing (q LoRA 1536, 8 groups, top-4 groups) at
    # Moonlight's width: a synthetic shape (no checkpoint has it), 4 layers (1 dense)
    "dsv3-mla-q1536-g8-l4": {"model_type": "deepseek_v3", "hidden_size": 2048, "num_hidden_layers": 4,
                             "num_attention_heads": 16, "num_key_value_heads": 16, "intermediate_size": 11264,
                             "moe_intermediate_size": 1408, "n_routed_experts": 64, "n_shared_experts": 1,
                             "num_experts_per_tok": 8, "n_group": 8, "topk_group": 4, "first_k_dense_replace": 1,
                             "routed_scaling_factor": 2.5, "norm_topk_prob": True, "q_lora_rank": 1536,
                             "kv_lora_rank": 512, "qk_rope_head_dim": 64, "qk_nope_head_dim": 128,
                             "v_head_dim": 128, "vocab_size": 129280, "max_position_embeddings": 163840,
                             "tie_word_embeddings": False},
    # zai-org/GLM-4.5-Air, 2 of its 46 layers (1 dense)
    "glm4.5-air-l2": {"model_type": "glm4_moe", "hidden_size": 4096, "num_hidden_layers": 2,
                      "num_attention_heads": 96, "num_key_value_heads": 8, "head_dim": 128,
                      "intermediate_size": 10944, "moe_intermediate_size": 1408, "n_routed_experts": 128,
                      "n_shared_experts": 1, "num_experts_per_tok": 8, "n_group": 1, "topk_group": 1,
                      "first_k_dense_replace": 1, "routed_scaling_factor": 1.0, "norm_topk_prob": True,
                      "partial_rotary_factor": 0.5, "attention_bias": True, "use_qk_norm": False,
                      "vocab_size": 151552, "max_position_embeddings": 131072, "rope_theta": 1000000,
                      "tie_word_embeddings": False},
    # ibm-granite/granite-3.1-8b-instruct, 8 of its 40 layers
    "granite3.1-8b-l8": {"model_type": "granite", "hidden_size": 4096, "num_hidden_layers": 8,
                         "num_attention_heads": 32, "num_key_value_heads": 8, "intermediate_size": 12800,
                         "vocab_size": 49155, "max_position_embeddings": 131072, "rope_theta": 10000000.0,
                         "embedding_multiplier": 12.0, "logits_scaling": 16.0, "residual_multiplier": 0.22,
                         "attention_multiplier": 0.0078125, "attention_bias": False, "mlp_bias": False,
                         "tie_word_embeddings": True},
    # openai/gpt-oss-20b (bf16 weights, no MXFP4), 2 of its 24 layers (1 sliding, 1 full)
    "gpt-oss-20b-l2": {"model_type": "gpt_oss", "hidden_size": 2880, "num_hidden_layers": 2,
                       "num_attention_heads": 64, "num_key_value_heads": 8, "head_dim": 64,
                       "intermediate_size": 2880, "num_local_experts": 32, "num_experts_per_tok": 4,
                       "sliding_window": 128, "layer_types": ["sliding_attention", "full_attention"],
                       "attention_bias": True, "vocab_size": 201088, "max_position_embeddings": 131072,
                       "rope_theta": 150000, "tie_word_embeddings": False,
                       "rope_scaling": {"rope_type": "yarn", "factor": 32.0, "beta_fast": 32.0, "beta_slow": 1.0,
                                        "truncate": False, "original_max_position_embeddings": 4096}},
    # HuggingFaceTB/SmolLM3-3B, 12 of its 36 layers (every 4th without rope)
    "smollm3-3b-l12": {"model_type": "smollm3", "hidden_size": 2048, "num_hidden_layers": 12,
                       "num_attention_heads": 16, "num_key_value_heads": 4, "intermediate_size": 11008,
                       "vocab_size": 128256, "max_position_embeddings": 65536, "rope_theta": 5000000.0,
                       "no_rope_layer_interval": 4, "attention_bias": False, "tie_word_embeddings": True},
    # meta-llama/Llama-4-Scout-17B-16E's text model at its width, 4 layers interleaved as
    # Maverick's (dense, MoE, dense, MoE), 4 experts instead of 16, chunked attention at
    # 2048 (Scout's 8192) so that the sequence crosses a chunk
    "llama4-scout-l4-e4": {"model_type": "llama4_text", "hidden_size": 5120, "num_hidden_layers": 4,
                           "num_attention_heads": 40, "num_key_value_heads": 8, "head_dim": 128,
                           "intermediate_size": 8192, "intermediate_size_mlp": 16384, "num_local_experts": 4,
                           "num_experts_per_tok": 1, "interleave_moe_layer_step": 2, "use_qk_norm": True,
                           "attention_chunk_size": 2048, "no_rope_layer_interval": 4, "vocab_size": 202048,
                           "max_position_embeddings": 10485760, "rope_theta": 500000.0,
                           "tie_word_embeddings": False},
    # Qwen/Qwen3-Next-80B-A3B, 4 of its 48 layers (3 gated delta-net, 1 full), 128
    # experts instead of 512
    "qwen3next-80b-l4-e128": {"model_type": "qwen3_next", "hidden_size": 2048, "num_hidden_layers": 4,
                              "num_attention_heads": 16, "num_key_value_heads": 2, "head_dim": 256,
                              "intermediate_size": 5120, "moe_intermediate_size": 512,
                              "shared_expert_intermediate_size": 512, "num_experts": 128,
                              "num_experts_per_tok": 10, "norm_topk_prob": True, "decoder_sparse_step": 1,
                              "full_attention_interval": 4, "linear_num_value_heads": 32,
                              "linear_num_key_heads": 16, "linear_key_head_dim": 128, "linear_value_head_dim": 128,
                              "linear_conv_kernel_dim": 4, "partial_rotary_factor": 0.25, "vocab_size": 151936,
                              "max_position_embeddings": 262144, "rope_theta": 10000000,
                              "tie_word_embeddings": False},
    # google/gemma-3-4b-it as published (model_type gemma3: SigLIP vision tower and a
    # gemma3_text text_config), 8 of its 34 text layers; the whole model, fed text only
    "gemma3-4b-vlm-l8": {"model_type": "gemma3", "mm_tokens_per_image": 256, "image_token_index": 262144,
                         "boi_token_index": 255999, "eoi_token_index": 256000,
                         "text_config": {"model_type": "gemma3_text", "hidden_size": 2560, "num_hidden_layers": 8,
                                         "num_attention_heads": 8, "num_key_value_heads": 4, "head_dim": 256,
                                         "intermediate_size": 10240, "vocab_size": 262208,
                                         "sliding_window": 1024, "query_pre_attn_scalar": 256,
                                         "max_position_embeddings": 131072, "rope_theta": 1000000.0,
                                         "rope_scaling": {"rope_type": "linear", "factor": 8.0}},
                         "vision_config": {"model_type": "siglip_vision_model", "hidden_size": 1152,
                                           "intermediate_size": 4304, "num_hidden_layers": 27,
                                           "num_attention_heads": 16, "image_size": 896, "patch_size": 14,
                                           "vision_use_head": False}},
    # its text tower alone, as the planner would plan it from text_config
    "gemma3-4b-text-l8": {"model_type": "gemma3_text", "hidden_size": 2560, "num_hidden_layers": 8,
                          "num_attention_heads": 8, "num_key_value_heads": 4, "head_dim": 256,
                          "intermediate_size": 10240, "vocab_size": 262208, "sliding_window": 1024,
                          "query_pre_attn_scalar": 256, "max_position_embeddings": 131072,
                          "rope_theta": 1000000.0, "rope_scaling": {"rope_type": "linear", "factor": 8.0},
                          "tie_word_embeddings": True},
    # Qwen/Qwen2.5-VL-3B-Instruct, 8 of its 36 text layers, the whole model, fed text only
    "qwen2.5vl-3b-l8": {"model_type": "qwen2_5_vl", "image_token_id": 151655, "video_token_id": 151656,
                        "vision_start_token_id": 151652, "tie_word_embeddings": True,
                        "text_config": {"model_type": "qwen2_5_vl_text", "hidden_size": 2048,
                                        "num_hidden_layers": 8, "num_attention_heads": 16,
                                        "num_key_value_heads": 2, "intermediate_size": 11008,
                                        "vocab_size": 151936, "max_position_embeddings": 128000,
                                        "rope_theta": 1000000.0, "tie_word_embeddings": True,
                                        "rope_scaling": {"type": "mrope", "mrope_section": [16, 24, 24]}},
                        "vision_config": {"depth": 32, "hidden_size": 1280, "out_hidden_size": 2048,
                                          "intermediate_size": 3420, "num_heads": 16, "patch_size": 14,
                                          "spatial_merge_size": 2, "temporal_patch_size": 2,
                                          "window_size": 112, "fullatt_block_indexes": [7, 15, 23, 31]}},
}


def case(model, kind, b, s, **kw):
    """kind: "train" (bf16, AdamW), "ckpt" (that with checkpointing) or "infer"."""
    t = {"param_dtype": "bf16", "autocast": False}
    if kind == "infer":
        t.update({"inference": True, "steps": 3, "batch": b, "seq": s})
    else:
        t.update({"optimizer": "adamw", "steps": 6, "batch": b, "seq": s})
        if kind == "ckpt":
            t["grad_ckpt"] = True
    t.update(kw)
    tag = {"train": "bf16-adamw", "ckpt": "bf16-adamw-ckpt", "infer": "bf16-infer"}[kind]
    return {"name": f"{model}/{tag}/b{b}s{s}", "model": M[model], "train": t}


# gpt_oss: transformers runs it with eager attention (it refuses sdpa): "attn":
# "default" leaves the choice to transformers, as a user's run does
OSS = {"attn": "default"}
cases = [
    case("olmo2-7b-l4", "train", 1, 4096),
    case("olmo2-7b-l4", "ckpt", 2, 8192),
    case("olmo2-7b-l4", "infer", 4, 8192),
    case("qwen1.5moe-a2.7b-l4", "train", 2, 4096),
    case("qwen1.5moe-a2.7b-l4", "ckpt", 2, 8192),
    case("qwen1.5moe-a2.7b-l4", "infer", 4, 8192),
    case("moonlight-16b-l4", "train", 1, 4096),
    case("moonlight-16b-l4", "ckpt", 2, 8192),
    case("moonlight-16b-l4", "infer", 4, 8192),
    case("dsv3-mla-q1536-g8-l4", "train", 1, 4096),
    case("dsv3-mla-q1536-g8-l4", "ckpt", 1, 8192),
    case("glm4.5-air-l2", "train", 1, 4096),
    case("glm4.5-air-l2", "ckpt", 1, 8192),
    case("glm4.5-air-l2", "infer", 4, 8192),
    case("granite3.1-8b-l8", "train", 1, 4096),
    case("granite3.1-8b-l8", "ckpt", 2, 8192),
    case("granite3.1-8b-l8", "infer", 4, 8192),
    case("gpt-oss-20b-l2", "train", 1, 2048, **OSS),
    case("gpt-oss-20b-l2", "ckpt", 1, 4096, **OSS),
    case("gpt-oss-20b-l2", "infer", 2, 4096, **OSS),
    case("smollm3-3b-l12", "train", 1, 4096),
    case("smollm3-3b-l12", "ckpt", 2, 8192),
    case("smollm3-3b-l12", "infer", 4, 8192),
    case("llama4-scout-l4-e4", "train", 1, 4096),
    case("llama4-scout-l4-e4", "ckpt", 1, 8192),
    case("llama4-scout-l4-e4", "infer", 2, 8192),
    case("qwen3next-80b-l4-e128", "train", 1, 4096),
    case("qwen3next-80b-l4-e128", "ckpt", 2, 8192),
    case("qwen3next-80b-l4-e128", "infer", 4, 8192),
    case("gemma3-4b-vlm-l8", "train", 1, 4096),
    case("gemma3-4b-vlm-l8", "ckpt", 2, 8192),
    case("gemma3-4b-text-l8", "train", 1, 4096),
    case("gemma3-4b-text-l8", "ckpt", 2, 8192),
    case("qwen2.5vl-3b-l8", "ckpt", 2, 8192),
    case("qwen2.5vl-3b-l8", "infer", 4, 8192),
]
json.dump(cases, open("bench/gpu/cases/gpu-cases-30.json", "w"), indent=1)
print(len(cases))
