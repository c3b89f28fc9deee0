#include "plan/family.h"
#include "plan/vision.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

/* Each family as its Hugging Face modeling code and config class have it (transformers
 * 5.17). Fields left out are 0: the decoder layer, RMSNorm, no post-norms, sdpa
 * attention, no q/k norms, q, k, v apart, rotary positions, a gated MLP, untied, no
 * biases, no sliding window. */
#define ROPE .rotary_sets = 1
#define GEMMA .norm = NORM_RMS_UNIT, .embed_scale = EMBED_SCALED_COPY, .tied = 1, .reads_attention_bias = 1

static const struct family families[] = {
	{ .type = "llama", ROPE, .reads_attention_bias = 1 },
	{ .type = "mistral", ROPE, .sliding = 1, .sliding_window = 4096, .sliding_pattern = SLIDE_EVERY_LAYER },
	{ .type = "qwen2", ROPE, .qkv_bias = 1 },
	{ .type = "qwen3", ROPE, .qk_norm = QK_NORM_EACH, .reads_attention_bias = 1 },
	{ .type = "phi3", ROPE, .fused_qkv = 1, .fused_gate_up = 1, .rope_pass_copy = 1,
	  .sliding = 1, .sliding_pattern = SLIDE_EVERY_LAYER },
	{ .type = "gemma", GEMMA, ROPE },
	{ .type = "gemma2", GEMMA, ROPE, .post_norms = 1, .final_softcap = 30.0, .sliding = 1,
	  .sliding_window = 4096, .sliding_pattern = 2 },
	{ .type = "gpt2", .layer = LAYER_GPT2, .norm = NORM_LAYER, .attn = ATTN_GPT2, .positions = POS_LEARNED,
	  .mlp = MLP_GELU,
	  .tied = 1, .qkv_bias = 1, .o_bias = 1, .gpt2_keys = 1, .positions_default = 1024,
	  .inner_per_hidden = 4 },
	{ .type = "qwen3_moe", ROPE, .qk_norm = QK_NORM_EACH, .reads_attention_bias = 1, .mlp = MLP_MOE,
	  .experts_key = "num_experts", .experts = 128, .experts_per_tok = 8, .moe_inter = 768, .sparse_step = 1 },
	{ .type = "mixtral", ROPE, .mlp = MLP_MOE, .router_fp32 = 1, .experts_key = "num_local_experts",
	  .experts = 8, .experts_per_tok = 2, .sliding = 1, .sliding_pattern = SLIDE_EVERY_LAYER },
	/* two rotary sets: the local layers' and the global ones' */
	{ .type = "gemma3_text", GEMMA, .rotary_sets = 2, .post_norms = 1, .qk_norm = QK_NORM_AFTER, .sliding = 1,
	  .sliding_window = 4096, .sliding_pattern = 6, .heads_default = 8, .kv_heads_default = 4,
	  .head_dim_default = 256, .vocab_default = 262208 },
	/* MoE on every interleave_moe_layer_step-th layer, gated MLPs of intermediate_size_mlp
	 * between; every no_rope_layer_interval-th layer without rotary embedding and with full
	 * attention, the others chunked */
	{ .type = "llama4_text", ROPE, .reads_attention_bias = 1, .attn_out_held = 1, .mlp = MLP_DENSE_MOE,
	  .qk_norm = QK_NORM_L2,
	  .experts_key = "num_local_experts", .experts = 16, .experts_per_tok = 1, .interleaved = 1,
	  .dense_inter = 16384, .nope_interval = 4, .chunk = 8192, .rope_complex = 1, .nope_temperature = 1,
	  .assumes = "every expert computed on every token (transformers' Llama4TextMoe); chunked layers "
		     "masked as sliding ones once seq reaches attention_chunk_size" },
	/* sliding and full layers alternating from a sliding layer 0 */
	{ .type = "gpt_oss", ROPE, .attn = ATTN_EAGER_SINKS, .mlp = MLP_MOE_CLAMPED, .qkv_bias = 1, .o_bias = 1,
	  .reads_attention_bias = 1, .sliding = 1, .sliding_window = 128, .sliding_pattern = 2,
	  .experts_key = "num_local_experts", .experts = 128, .experts_per_tok = 4, .sinks = 1, .expert_bias = 1,
	  .router_bias = 1, .attn_name = "eager",
	  .assumes = "eager attention with sinks (transformers 5.17 refuses sdpa for it): batch x heads x seq x "
		     "seq scores a layer; bf16 experts (MXFP4 checkpoints dequantized)" },
	{ .type = "qwen3_next", .norm = NORM_RMS_UNIT, ROPE, .attn = ATTN_GATED_SDPA, .qk_norm = QK_NORM_EACH,
	  .reads_attention_bias = 1, .mlp = MLP_MOE, .experts_key = "num_experts", .experts = 512,
	  .experts_per_tok = 10, .moe_inter = 512, .shared = SHARED_GATED_FIRST,
	  .shared_key = "shared_expert_intermediate_size", .shared_default = 512, .full_step = 4, .lin_k_heads = 16,
	  .lin_v_heads = 32, .lin_k_dim = 128, .lin_v_dim = 128, .lin_conv = 4,
	  .assumes = "Gated DeltaNet layers on transformers' reference PyTorch path (torch_chunk_gated_delta_rule: "
		     "no flash-linear-attention, no causal-conv1d installed); the full layers' partial rotary "
		     "planned over the whole head" },
	/* the shared expert first, gated by a sigmoid; q, k, v biases under their own key; a
	 * window mask always */
	{ .type = "qwen2_moe", ROPE, .qkv_bias = 1, .qkv_bias_key = "qkv_bias", .window_mask_always = 1, .mlp = MLP_MOE,
	  .experts_key = "num_experts", .experts = 60, .experts_per_tok = 4, .moe_inter = 1408, .sparse_step = 1,
	  .inter_default = 5632, .shared = SHARED_GATED_FIRST, .shared_key = "shared_expert_intermediate_size",
	  .shared_default = 5632 },
	/* dense first layers, the sigmoid group router (fp32 routing weights), a shared
	 * expert after the experts; half of a head rotated; attention_bias: q, k, v only */
	{ .type = "glm4_moe", ROPE, .attention_bias_no_o = 1, .rotary_factor = 0.5, .qk_norm_key = "use_qk_norm",
	  .mlp = MLP_MOE, .router_fp32 = 1, .router = ROUTER_SIGMOID_GROUP, .experts_key = "n_routed_experts", .experts = 128,
	  .experts_per_tok = 8, .moe_inter = 1408, .inter_default = 10944, .dense_first = 1, .shared = SHARED_AFTER,
	  .shared_default = 1 },
	/* multi-head latent attention; dense first layers, the sigmoid group router, shared
	 * experts after the experts (the multi-token-prediction layer is not built) */
	{ .type = "deepseek_v3", ROPE, .attn = ATTN_MLA, .q_lora = 1536, .kv_lora = 512, .qk_rope = 64,
	  .qk_nope = 128, .v_head = 128, .mlp = MLP_MOE, .router_fp32 = 1, .router = ROUTER_SIGMOID_GROUP,
	  .experts_key = "n_routed_experts", .experts = 256, .experts_per_tok = 8, .moe_inter = 2048,
	  .inter_default = 18432, .dense_first = 3, .shared = SHARED_AFTER, .shared_default = 1 },
	/* norms after the sublayers only, q's and k's over the whole projection, all in the
	 * weight x fp32 form; fp32 cos and sin */
	{ .type = "olmo2", ROPE, .norm = NORM_RMS_FP32, .no_pre_norms = 1, .post_norms = 1, .qk_norm = QK_NORM_EACH,
	  .qk_norm_full = 1, .rope_fp32 = 1, .reads_attention_bias = 1 },
	/* llama's layer; the embeddings, each sublayer's output and the logits scaled: a
	 * tensor each, whatever the multiplier */
	{ .type = "granite", ROPE, .reads_attention_bias = 1, .embed_scale = EMBED_SCALED_REPLACES, .residual_scale = 1, .logits_scale = 1,
	  .assumes = "granite's multipliers: their values change no memory; each (embedding, residual, logits) is "
		     "one more tensor, planned" },
	/* llama's layer; every no_rope_layer_interval-th layer without rope */
	{ .type = "smollm3", ROPE, .tied = 1, .reads_attention_bias = 1, .nope_interval = 4 },
	/* qwen2_5_vl's text tower: qwen2's layer (its multimodal rotary folds into cos and sin) */
	{ .type = "qwen2_5_vl_text", ROPE, .qkv_bias = 1 },
	/* multimodal configs: the text tower from text_config, the vision tower's weights */
	{ .type = "gemma3", .text_family = "gemma3_text", .vision = VISION_SIGLIP, .mm_masks = 1 },
	{ .type = "qwen2_5_vl", .text_family = "qwen2_5_vl_text", .vision = VISION_QWEN2_5 },
};

#define NFAMILIES (sizeof(families) / sizeof(families[0]))

const struct family *family_find(const char *type)
{
	for (size_t i = 0; type && i < NFAMILIES; i++)
		if (!strcmp(type, families[i].type))
			return &families[i];
	return NULL;
}

void family_names(char *buf, size_t size)
{
	size_t n = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < NFAMILIES && n < size; i++)
		n += (size_t)snprintf(buf + n, size - n, "%s%s", i ? ", " : "", families[i].type);
}

const struct family *family_default(void)
{
	return &families[0];
}

/* llama's layer. Its MLP is gated (three matrices of intermediate_size); config.c takes a
 * two-matrix MLP (phi's) for a gated one of two thirds its width. */
static const struct family generic = {
	.type = "generic", ROPE, .reads_attention_bias = 1, .generic = 1,
	.assumes = "this model_type has no row of its own: planned as a generic dense decoder (llama's layer: "
		   "RMSNorm, rotary positions, q, k, v apart, a gated MLP of intermediate_size, 4 x hidden where the "
		   "config names none; an MLP whose hidden_act is not a GLU's, such as phi's gelu, as a gated one of two "
		   "thirds its width: the same weights and activations); modelled, not measured"
};

const struct family *family_generic(void)
{
	return &generic;
}

/* The activation a generic model_type's config class defaults to, where its config.json
 * may name none (transformers' defaults): whether its MLP is gated. */
static const struct {
	const char *type, *act;
} generic_acts[] = {
	{ "falcon", "gelu" }, { "phi", "gelu_new" }, { "gpt_neox", "gelu" }, { "gptj", "gelu_new" },
	{ "opt", "relu" },    { "bloom", "gelu" },   { "mpt", "gelu" },      { "starcoder2", "gelu_pytorch_tanh" },
};

const char *family_generic_act(const char *type)
{
	for (size_t i = 0; type && i < sizeof(generic_acts) / sizeof(generic_acts[0]); i++)
		if (!strcmp(type, generic_acts[i].type))
			return generic_acts[i].act;
	return NULL;
}
