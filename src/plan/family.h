/* The model families the planner knows, as data: one row per config.json model_type,
 * saying what a decoder layer is made of (its norms and where they sit, its projections,
 * its attention, its MLP) and what the family's config class fills in when config.json
 * leaves a field out. The simulation (sim*.c, op_*.c) and the model (model.c) read
 * these fields, never a family's name: a new family is a new row (and, for a layer part
 * no row has yet, a new value of one of the kinds below and its ops in an op_*.c). Pure
 * data. */
#ifndef HEADROOM_PLAN_FAMILY_H
#define HEADROOM_PLAN_FAMILY_H

#include <stddef.h>
#include <stdint.h>

/* How a norm computes (the modeling code's class). */
enum norm_kind {
	NORM_RMS,        /* llama's RMSNorm: the normalized tensor cast back to the input's
			  * dtype, times the weight */
	NORM_RMS_UNIT,   /* gemma's RMSNorm: times (1 + weight) in fp32, the product cast back */
	NORM_LAYER,      /* LayerNorm with a bias (GPT-2) */
	NORM_RMS_FP32,   /* olmo2's RMSNorm: the weight times the fp32 normalized tensor, the
			  * product cast back (the fp32 normalized tensor is what it keeps) */
};

/* Where q's and k's per-head norms sit. */
enum qk_norm_at {
	QK_NORM_NONE,
	QK_NORM_EACH,    /* as each projection returns (qwen3) */
	QK_NORM_AFTER,   /* after q, k and v are all projected (gemma3) */
	QK_NORM_L2,      /* a weightless L2 norm of the rotated q and k, on rotary layers
			  * only, when use_qk_norm (llama4_text) */
};

/* Where a position enters. */
enum position_kind {
	POS_ROPE,        /* rotary embedding of q and k in every layer */
	POS_LEARNED,     /* a learned position embedding added to the tokens' (GPT-2) */
};

/* How the embeddings are scaled (the scaled tensor is a new one either way). */
enum embed_scale_kind {
	EMBED_UNSCALED,
	EMBED_SCALED_COPY,     /* the model scales a copy for its layers and holds the
				* embeddings to its end (gemma's hidden_states) */
	EMBED_SCALED_REPLACES, /* the scaled tensor replaces the embeddings at once, before
				* the rotary's cos and sin (granite's inputs_embeds) */
};

/* The attention's kind: its ops in op_layer.c (attn_kinds). */
enum attn_kind {
	ATTN_SDPA,       /* q, k, v projections (grouped queries, sliding windows by the
			  * model's fields), rotary, sdpa, o_proj */
	ATTN_GPT2,       /* GPT-2's: c_attn (q, k, v fused, with its bias), sdpa, c_proj,
			  * the residual dropout */
	ATTN_EAGER_SINKS, /* eager attention (q k^T, scaled, masked, a sink column per head,
			   * max-subtracted softmax, times v) over k and v repeated to every
			   * head (gpt_oss: op_eager.c) */
	ATTN_GATED_SDPA, /* ATTN_SDPA with q_proj twice as wide: its second half gates the
			  * output, sigmoid(gate) x attention, before o_proj (qwen3_next's full
			  * layers: op_gated_attn.c) */
	ATTN_DELTANET,   /* Gated DeltaNet linear attention on transformers' reference
			  * PyTorch path (qwen3_next's linear layers: op_deltanet.c) */
	ATTN_MLA,        /* multi-head latent attention (deepseek_v3): q through a low-rank
			  * pair with its norm (or one q_proj), k and v from a normalized latent
			  * (kv_a, kv_b), a one-head rotary key part, sdpa, o_proj; the cache
			  * keeps the latents */
	ATTN_KINDS
};

/* The MLP's kind: its ops in op_layer.c (mlp_kinds). */
enum mlp_kind {
	MLP_GATED,       /* down(act(gate(x)) x up(x)) */
	MLP_GELU,        /* GPT-2's c_proj(gelu_new(c_fc(x))), with biases and dropout */
	MLP_MOE,         /* routed gated experts behind a router (grouped_mm) */
	MLP_DENSE_MOE,   /* every expert run on every token, weighed by a top-k sigmoid
			  * router, a shared expert added in place (llama4_text:
			  * op_dense_moe.c) */
	MLP_MOE_CLAMPED, /* grouped_mm experts with biases and a clamped GLU behind a top-k
			  * then softmax router with a bias (gpt_oss: op_clamped_moe.c) */
	MLP_KINDS
};

/* A mixture of experts' shared expert (a gated MLP every token goes through). */
enum shared_kind {
	SHARED_NONE,
	SHARED_GATED_FIRST, /* before the router, its output times sigmoid(a Linear(h, 1)) added
			     * into the experts' in place (qwen2_moe) */
	SHARED_AFTER,       /* after the experts, on the block's input, added out of place
			     * (deepseek_v3, glm4_moe) */
};

/* How a mixture of experts' router picks and weighs the experts. */
enum router_kind {
	ROUTER_SOFTMAX,     /* a linear, softmax in fp32, top-k (qwen3_moe, mixtral, qwen2_moe) */
	ROUTER_SIGMOID_GROUP, /* the linear in fp32 over fp32 copies of its input and weight,
			     * sigmoid, the bias-corrected group-limited top-k, the scores
			     * gathered, normalized and scaled in fp32 (deepseek_v3, glm4_moe) */
};

/* A layer's weights in construction order (sim_setup.c's layer table; every kind's
 * layer is walked op by op as the fields below say). */
enum layer_kind {
	LAYER_DECODER,   /* q, k, v, o (or qkv), the MLP's, the norms, the biases */
	LAYER_GPT2,      /* ln_1, c_attn, c_proj, ln_2, c_fc, c_proj, weights and biases */
	LAYER_KINDS
};

/* Sliding-window layers every layer but every N-th: all of them. */
#define SLIDE_EVERY_LAYER (-1)

struct family {
	const char *type;                /* config.json's model_type */
	/* the decoder layer */
	enum layer_kind layer;
	enum norm_kind norm;
	int post_norms;                  /* the attention's and the MLP's outputs are normalized
					  * before the residual add (sandwich norms: 4 a layer) */
	int attn_out_held;               /* the attention's output lives to the layer's return
					  * (a local of its own: llama4's attention_states) */
	enum attn_kind attn;
	enum qk_norm_at qk_norm;
	int fused_qkv;                   /* one qkv_proj matrix (q, k, v are its slices) */
	int fused_gate_up;               /* one gate_up_proj matrix */
	int rope_pass_copy;              /* the rotated part is concatenated with the (empty)
					  * pass-through part: one copy more (phi3) */
	enum position_kind positions;
	int rotary_sets;                 /* sets of cos and sin (gemma3: local and global) */
	enum embed_scale_kind embed_scale;
	enum mlp_kind mlp;
	int router_fp32;                 /* MoE: the routing weights stay fp32 (mixtral) */
	/* config.json's defaults, as the family's config class has them */
	int tied;                        /* tie_word_embeddings */
	int qkv_bias;                    /* q, k, v biases (qwen2's always; GPT-2's c_attn) */
	int o_bias;                      /* o_proj's bias (GPT-2's c_proj) */
	int reads_attention_bias;        /* attention_bias sets the q, k, v and o biases */
	double final_softcap;            /* final_logit_softcapping; 0 none */
	int sliding;                     /* reads sliding_window (and layer_types) */
	int64_t sliding_window;          /* its default (0: none) */
	int64_t sliding_pattern;         /* a full-attention layer every N-th (SLIDE_EVERY_LAYER) */
	int window_mask_always;          /* the forward builds the sliding-window mask whatever the
					  * config (its config class sets the window to 0 when off,
					  * never to none), and hands it to every layer's sdpa */
	/* MoE: the experts' keys and defaults */
	const char *experts_key;         /* num_experts, num_local_experts */
	int64_t experts, experts_per_tok;
	int64_t moe_inter;               /* moe_intermediate_size's default; 0: intermediate_size
					  * (then no moe_intermediate_size key) */
	/* mixture-of-experts layers: the shared expert, the router, which layers are dense */
	enum shared_kind shared;
	const char *shared_key;          /* its width's key (shared_expert_intermediate_size), or
					  * NULL: n_shared_experts x moe_intermediate_size */
	int64_t shared_default;          /* that key's default (0: none), or n_shared_experts' */
	enum router_kind router;
	int64_t inter_default;           /* intermediate_size's default: the dense layers' width */
	int dense_first;                 /* reads first_k_dense_replace (its default here) */
	int sparse_step;                 /* reads decoder_sparse_step and mlp_only_layers */
	int attention_bias_no_o;         /* attention_bias sets q, k and v's biases, not o's */
	const char *qkv_bias_key;        /* a boolean key of its own for q, k and v's biases */
	const char *qk_norm_key;         /* a boolean key that turns per-head q/k norms on (as
					  * each projection returns: qwen3's) */
	double rotary_factor;            /* partial_rotary_factor's default (0: the whole head) */
	/* ATTN_MLA's defaults: q_lora_rank, kv_lora_rank, qk_rope_head_dim, qk_nope_head_dim,
	 * v_head_dim */
	int64_t q_lora, kv_lora, qk_rope, qk_nope, v_head;
	/* GPT-2's config keys and defaults */
	int gpt2_keys;                   /* n_embd, n_layer, n_head, n_inner, n_positions */
	int64_t positions_default;       /* learned positions */
	int64_t inner_per_hidden;        /* n_inner's default: this many x n_embd */
	/* llama4_text's: layers of two kinds, rotary and not, chunked attention */
	int interleaved;                 /* interleave_moe_layer_step (or moe_layers): the MLP
					  * kind on every N-th layer, a gated MLP of
					  * intermediate_size_mlp on the others */
	int64_t dense_inter;             /* intermediate_size_mlp's default */
	int64_t nope_interval;           /* no_rope_layer_interval's default: every N-th layer
					  * has no rotary embedding (0: every layer has it) */
	int64_t chunk;                   /* attention_chunk_size's default: the rotary layers
					  * attend within chunks, as sliding windows do to masks
					  * and k/v copies (0: no chunked attention) */
	int rope_complex;                /* the rotation as a complex product over fp32 copies
					  * of q and k, before their transpose */
	int nope_temperature;            /* attn_temperature_tuning: q scaled on layers without
					  * rotary embedding (an fp32 product, cast back) */
	const char *assumes;             /* what the plan of this family assumes, said aloud */
	int generic;                     /* no row of its own: a config of the common keys (and
					  * falcon's) planned as a dense decoder */
	int sinks;                       /* a sink logit per head (a parameter of heads) */
	int expert_bias;                 /* the experts' gate_up and down have biases */
	int router_bias;                 /* the router's linear has a bias */
	const char *attn_name;           /* the attention transformers runs, as "assumed" says
					  * it (NULL: sdpa) */
	/* qwen3_next's hybrid layers: `attn` on every full_attention_interval-th layer
	 * (full_step's default), Gated DeltaNet linear attention on the others */
	int64_t full_step;               /* 0: every layer `attn` */
	int64_t lin_k_heads, lin_v_heads, lin_k_dim, lin_v_dim, lin_conv; /* linear_*'s defaults */
	/* layer parts issue 30's families brought */
	int no_pre_norms;                /* the attention and the MLP take the residual stream
					  * itself: no norm before them (olmo2; with post_norms,
					  * normalized after) */
	int qk_norm_full;                /* q's and k's norms span the whole projection, not a
					  * head (olmo2: weights of heads x head_dim) */
	int rope_fp32;                   /* cos and sin stay fp32: q and k are rotated in fp32
					  * and cast back (olmo2) */
	int residual_scale;              /* each sublayer's output is multiplied by a scalar
					  * before the residual add: a new tensor (granite) */
	int logits_scale;                /* the logits are divided by a scalar: a new tensor
					  * (granite) */
	/* sizes the config class fills in when config.json leaves them out (0: it must give
	 * them): gemma-3-4b's text_config gives no heads, head_dim or vocabulary; the key/value
	 * heads' default goes with the heads' */
	int64_t heads_default, kv_heads_default, head_dim_default, vocab_default;
	/* a multimodal config (gemma3, qwen2_5_vl): its text tower is planned */
	const char *text_family;         /* text_config's model_type when it gives none (the
					  * row's other fields then unused) */
	int vision;                      /* its vision tower's kind (enum vision_kind) */
	int mm_masks;                    /* its forward takes token_type_ids and lets images
					  * attend both ways: the causal mask is or-ed with the
					  * token types' (no causal skip), so it and the sliding
					  * one are boolean batch x seq x seq tensors, held
					  * through the forward, and every layer's sdpa takes a
					  * mask (gemma3) */
};

/* The row of model_type type, or NULL. */
const struct family *family_find(const char *type);
/* The families' model_types, comma-separated, into buf (truncated to size). */
void family_names(char *buf, size_t size);
/* The first row (llama's): what a model shape built without a family has. */
const struct family *family_default(void);

/* The row of a model_type with none of its own whose config has a decoder's common keys
 * (phi, falcon, ...): llama's layer, said as an assumption. */
const struct family *family_generic(void);

/* The activation a model_type planned as a generic decoder defaults to in transformers
 * (falcon's gelu...), for a config.json naming none; NULL: not known. */
const char *family_generic_act(const char *type);

#endif
