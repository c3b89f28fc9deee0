/* What a plan is made of: a decoder model's shape (from its config.json) and the
 * settings of the training step (or inference) planned for it. Plain data, shared by
 * the model, the simulation and the solver. */
#ifndef HEADROOM_PLAN_SHAPE_H
#define HEADROOM_PLAN_SHAPE_H

#include <stddef.h>
#include <stdint.h>

#include "plan/family.h"
#include "plan/vision.h"

/* plan/limits.h's PLAN_MAX_LAYERS (a shape's per-layer flags are this many bits) */
#define PLAN_SHAPE_MAX_LAYERS 1024

struct model_shape {
	char type[32];            /* model_type from config.json */
	const struct family *family; /* its row (plan/family.h); NULL: the first row's */
	int64_t hidden, layers, heads, kv_heads, head_dim, intermediate, vocab, positions;
	/* the longest sequence it takes: max_position_embeddings (GPT-2's positions); 0 not
	 * given. seq and context are checked, and solved, against it */
	int64_t max_length;
	int tied;                 /* lm_head shares the embedding */
	int qkv_bias;             /* q, k, v have biases */
	int o_bias;               /* o_proj has one */
	double final_softcap;     /* final_logit_softcapping; 0 none */
	/* mixture of experts (the family's mlp MLP_MOE): every layer's MLP is `experts` gated
	 * experts of moe_inter units behind a router, top `experts_per_tok` a token; 0 dense */
	int64_t experts, experts_per_tok, moe_inter;
	/* sliding-window layers (the family's, or its config's window): every layer but each
	 * sliding_pattern-th attends within sliding_window positions (0: no sliding layers) */
	int64_t sliding_window, sliding_pattern;
	int64_t nope_step;        /* every nope_step-th layer has no rotary embedding (0: none) */
	int qk_l2;                /* q and k L2-normalized on rotary layers (QK_NORM_L2's use_qk_norm) */
	int nope_temperature;     /* q scaled on layers without rotary embedding */
	/* hybrid layers: the family's attention on every full_step-th layer, Gated DeltaNet on
	 * the others (0: every layer the family's), its heads and widths, conv kernel */
	int64_t full_step, lin_k_heads, lin_v_heads, lin_k_dim, lin_v_dim, lin_conv;
	/* mixture of experts: the shared expert's width (0 none); dense layers (a gated MLP
	 * of dense_inter units: intermediate_size, llama4_text's intermediate_size_mlp): the
	 * first dense_first, those off every sparse_step-th (decoder_sparse_step,
	 * interleave_moe_layer_step), and those in dense_layers (mlp_only_layers) */
	int64_t shared_inter, dense_first, sparse_step, dense_inter;
	uint64_t dense_layers[(PLAN_SHAPE_MAX_LAYERS + 63) / 64];
	int64_t rotary_dim;       /* the rotated part of a head (partial_rotary_factor); 0: all */
	int qk_norm_each;         /* the config turns q's and k's per-head norms on (the
				   * family's qk_norm_key) */
	/* multi-head latent attention (ATTN_MLA): q's low rank (0: one q_proj), k and v's
	 * latent, a head's rotated and unrotated q/k units and its v units; head_dim is then
	 * their q/k head (nope + rope) and rotary_dim the rope part */
	int64_t q_lora_rank, kv_lora_rank, qk_rope_dim, qk_nope_dim, v_head_dim;
	/* a multimodal config: its row (the text tower is what the rest describes), its
	 * vision tower's weights (VISION_NONE: not counted, vision_why says why) */
	const struct family *wrapper;
	struct vision_shape vision;
	const char *vision_why;
	/* the checkpoint's dtype as config.json names it (its "dtype", "torch_dtype" before
	 * transformers 5): what from_pretrained loads by default; "" not given */
	char dtype[24];
};

/* Whether layer l's MLP is a dense one in a mixture-of-experts model. */
static inline int model_dense_layer(const struct model_shape *m, int64_t l)
{
	if (!m->experts || l < 0 || l >= PLAN_SHAPE_MAX_LAYERS)
		return 0;
	return l < m->dense_first || (m->sparse_step > 1 && (l + 1) % m->sparse_step) ||
	       (m->dense_layers[l / 64] >> (l % 64) & 1);
}

/* m's family row. */
static inline const struct family *model_family(const struct model_shape *m)
{
	return m->family ? m->family : family_default();
}

/* plan/optimizer.h's rows */
enum optimizer { OPT_ADAMW, OPT_SGD, OPT_NONE, OPT_ADAMW_8BIT, OPT_PAGED_ADAMW_8BIT, OPT_PAGED_ADAMW, OPT_ADAFACTOR, OPT_LION,
		OPT_ADAMW_AO_8BIT, OPT_ADAMW_AO_4BIT };

struct buffer_spec {
	char name[32];
	int64_t count;
	uint64_t item_bytes;
};

#define PLAN_MAX_BUFFERS 8

/* The loss's kernel: the plain one (logits, chunked by loss_chunk), Liger's fused
 * linear cross-entropy, Apple's Cut Cross-Entropy. */
enum loss_kind { LOSS_PLAIN, LOSS_LIGER, LOSS_CCE, LOSS_KINDS };

/* The attention asked for by name (settings.c's words): from ATTN_NAME_FA2 on, a flash
 * kernel's, planned as sdpa's flash kernel. */
enum attn_name { ATTN_NAME_DEFAULT, ATTN_NAME_SDPA, ATTN_NAME_FA2, ATTN_NAME_FA3, ATTN_NAME_FLEX, ATTN_NAME_XFORMERS,
		ATTN_NAMES };

static inline int attn_name_flash(int name)
{
	return name >= ATTN_NAME_FA2;
}

struct train_settings {
	int param_bytes;          /* 4 fp32, 2 bf16/fp16 */
	int fp16;                 /* 2-byte weights are fp16, not bf16 (named only: the same bytes) */
	int autocast;             /* bf16 autocast over fp32 weights */
	enum optimizer opt;
	int fused;                /* AdamW fused=True (no foreach temporaries) */
	double momentum;          /* SGD */
	int grad_ckpt;
	int use_cache;            /* the model's use_cache in training (its default, 1; off with
				   * grad_ckpt): each layer's keys and values held to the next step */
	int keep_outputs;         /* the step's output (logits, cache) held into the next step, as a
				   * loop keeping `out = model(...)` does; 0: let go as the loss is
				   * taken, as HF Trainer's training_step does */
	int64_t batch, seq;
	int64_t loss_chunk;       /* tokens per lm_head + loss chunk; 0: all at once */
	enum loss_kind loss;      /* the loss's kernel (sim.c's loss table) */
	int attn_name;            /* the attention asked for, as settings.c names it (0: default) */
	int64_t grad_accum;       /* micro-batches a step, their gradients accumulated (1: none) */
	int zero_stage;           /* 0 none; 1 optimizer, 2 + gradients, 3 + weights (FSDP full shard) */
	int64_t dp;               /* data-parallel degree the states are sharded over */
	int64_t lora_rank;        /* 0: full fine-tuning */
	unsigned lora_targets;    /* LORA_* bits */
	unsigned lora_save;       /* LORA_SAVE_* bits: PEFT's modules_to_save, trained copies */
	int64_t steps;            /* the run's training steps (0: a long run); the simulation runs
				   * up to PLAN_SETTLE_STEPS of them */
	int inference;            /* no gradients, no optimizer; a KV cache of batch x context */
	int64_t context;          /* inference: tokens kept in the KV cache */
	struct buffer_spec buffers[PLAN_MAX_BUFFERS];
	size_t nbuffers;
	uint64_t context_bytes;   /* CUDA context and library workspaces; 0: the default */
	uint64_t limit_bytes;     /* what the caching allocator may reserve on the GPU (its
				   * memory less the context and the margin); 0: unlimited */
	/* called once, from the plain run's thread, when its live segments pass past_bytes
	 * (the run then cannot complete on the GPU): so that a caller may start on what it
	 * does next while the plan runs on (NULL: never) */
	void (*past)(void *ctx);
	void *past_ctx;
	uint64_t past_bytes;
	/* frozen parts (no gradient, no optimizer state): the embedding, lm_head, and the
	 * decoder layers freeze_first..freeze_last (freeze_last < freeze_first: none) */
	int freeze_embed, freeze_head;
	int64_t freeze_first, freeze_last;
	int inputs_embeds;        /* fed hidden states of batch x seq x hidden: no embedding lookup */
	int expandable;           /* PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True */
	int logits_all;           /* inference: logits of every position (model(input_ids)), not
				   * only the last (generate()) */
	int ddp;                  /* DDP over dp ranks: a whole replica and gradient buckets a rank */
	int keep_gathered;        /* FSDP2 (zero_stage 3) with reshard_after_forward=False */
	int mp_param_bytes;       /* FSDP2's MixedPrecisionPolicy param_dtype: the layers gathered
				   * and computed in it, the shards kept in the weights' dtype (0: the
				   * weights' own) */
	int mp_fp16;              /* that param_dtype is fp16, not bf16 (named only) */
	int mp_reduce_bytes;      /* its reduce_dtype (0: the param dtype's) */
	int mp_reduce_fp16;       /* that reduce_dtype is fp16 (named only) */
	int master_weights;       /* an fp32 copy of the trained weights the optimizer updates,
				   * beside 16-bit ones (DeepSpeed's bf16/fp16 engine) */
	int offload_optimizer;    /* the optimizer's states (and master weights) in host memory,
				   * its step on the CPU */
	int offload_params;       /* ZeRO-3/FSDP2: the weights' shards in host memory */
	int64_t reduce_bucket;    /* DeepSpeed's reduce_bucket_size, elements (-1: "auto", hidden
				   * x hidden as HF's integration fills it; 0: not DeepSpeed's
				   * buckets, a group of gradients reduced at a time) */
	int overlap_comm;         /* DeepSpeed's: a second bucket (stages 1 and 2) */
	int quant;                /* enum quant_kind: the base's linear projections quantized */
	int double_quant;         /* 4-bit: the scales quantized too */
	int kbit_prepare;         /* PEFT's prepare_model_for_kbit_training: the weights left
				   * unquantized cast to fp32 (the default with quant, in training) */
	int one_placement;        /* not a setting: with expandable segments, simulate only the
				   * plain placement (the verdict and the interval come from it; a
				   * hint's candidates need no more) */
};

enum { LORA_Q = 1, LORA_K = 2, LORA_V = 4, LORA_O = 8, LORA_GATE = 16, LORA_UP = 32, LORA_DOWN = 64 };
/* The modules PEFT's modules_to_save may name that the planner models: the embedding and
 * lm_head, each trained as a copy beside the frozen original. */
enum { LORA_SAVE_EMBED = 1, LORA_SAVE_HEAD = 2 };

#endif
