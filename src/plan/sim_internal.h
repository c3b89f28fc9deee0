/* The simulation's insides (sim.h is its face), shared by its units and by no one
 * else: the step (a run's allocator and tensors, and the model's shape as the ops read
 * it), the stages of a layer's backward, what a layer's ops hand one another, and the
 * functions one unit of the simulation calls in another. Included only by src/plan's
 * sim*.c and op_*.c. */
#ifndef HEADROOM_PLAN_SIM_INTERNAL_H
#define HEADROOM_PLAN_SIM_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "plan/alloc.h"
#include "plan/component.h"
#include "plan/family.h"
#include "plan/lora.h"
#include "plan/shape.h"

struct sim_result;

/* A list of live tensors (ids into the step's table); a layer's saved tensors carry the
 * stage of its backward pass that lets them go (enum stage). */
struct tlist {
	int *v;
	size_t n, cap;
	unsigned char *tag;       /* saved tensors: the stage of each of v's */
	size_t cap_tag;
};

/* Where in a layer's backward pass autograd frees what the forward saved: each node
 * drops its saved tensors once it has run. In backward order. */
enum stage {
	S_PNORM2_W, /* gemma2's and gemma3's post-feedforward norm's weight: the normalized tensor */
	S_PNORM2,  /* that norm: the rest */
	S_WEIGH,   /* the experts' weighting: their masked output */
	S_DOWN,    /* down_proj: its input (the product) */
	S_MUL,     /* act x up: act and up (the experts': act) */
	S_GATE,    /* silu: gate (phi3: gate_up; the experts': gate_up's masked output) */
	S_SORTED,  /* the experts' gate_up: the tokens' sorted copies */
	S_UP_IN,   /* up_proj under autocast: its casts */
	S_MLP_IN,  /* gate/up projections: their input or autocast's casts (gate's) */
	S_NORM2_W, /* the post-attention norm's weight: the normalized tensor */
	S_NORM2,   /* the post-attention norm: the rest */
	S_PNORM1_W, /* gemma2's and gemma3's post-attention norm's weight: the normalized tensor */
	S_PNORM1,  /* that norm: the rest */
	S_O_IN,    /* o_proj's adapter */
	S_SDPA,    /* attention: q, k, v, output, log-sum-exp */
	S_KNORM_W, /* k's norm (qwen3's, gemma3's) weight: the normalized tensor */
	S_KNORM,   /* k's norm: the rest */
	S_QNORM_W, /* q's norm's weight: the normalized tensor */
	S_QNORM,   /* q's norm: the rest */
	S_V_IN,    /* v_proj under autocast: its casts */
	S_K_IN,    /* k_proj under autocast: its casts */
	S_QKV_IN,  /* q/k/v projections: their input or autocast's casts (q's) */
	S_NORM1_W, /* the input norm's weight: the normalized tensor */
	S_NORM1,   /* the input norm: the rest */
	/* llama4_text's MoE (op_dense_moe.c), after its shared expert's in the backward */
	S_XDOWN,   /* the experts' down bmm: its input */
	S_XMUL,    /* their act x up: act */
	S_XGATE,   /* their silu and up's slice: gate_up */
	S_XIN,     /* their gate_up bmm: the weighted copies */
	S_XREP,    /* the weighting: the copies and the weights */
	S_XROUTER, /* the router's sigmoid and scatter */
	S_EPROBS,  /* eager attention's softmax: its probabilities (op_eager.c) */
	S_EPV,     /* its product with v: the probabilities' contiguous copy */
	S_LIN,     /* a Gated DeltaNet's: all it keeps (op_deltanet.c) */
	S_OGATE,   /* the output gate's sigmoid and product (op_gated_attn.c) */
	/* a mixture of experts' shared expert (after the experts' stages in the backward:
	 * the gated one's sigmoid gate first of all) */
	S_SH_WEIGH, /* its gate's product: the sigmoid and the shared output */
	S_SH_DOWN, /* its down_proj: the product */
	S_SH_MUL,  /* act x up */
	S_SH_GATE, /* silu: gate */
	S_SH_IN,   /* its projections' (under autocast: casts) */
	/* multi-head latent attention (after sdpa's in the backward) */
	S_MLA_KVB, /* kv_b_proj: its input, the normalized latent */
	S_MLA_QB,  /* q_b_proj: its input, q's normalized low-rank output */
};

/* One decoder layer's parameter tensors, in elements. phi3 fuses q, k and v into one
 * qkv_proj and gate and up into one gate_up_proj: then those are 0, else qkv and gate_up
 * are. */
struct layer_params {
	int64_t q, k, v, qkv, o;
	int64_t gate, up, gate_up, down;
	int64_t norm1, norm2;            /* the input and the post-attention norm */
	int64_t router;                  /* mixture of experts: the router's (gate_up and down are
					  * then all experts', stacked) */
	int64_t q_bias, k_bias, v_bias;  /* 0 without qkv_bias */
	int64_t o_bias;                  /* 0 without o_bias */
	int64_t shared_gate, shared_up, shared_down; /* the experts' shared expert's (0 none) */
	int64_t sinks;                   /* a sink logit a head (0 none) */
	int64_t gate_up_bias, down_bias, router_bias; /* the experts' and router's biases (0 none) */
	int64_t shared_gate_w;           /* the shared expert's gate, Linear(hidden, 1) (0 none) */
	/* a Gated DeltaNet layer's (0 in others): in_proj_qkvz, in_proj_ba, the conv, dt_bias,
	 * A_log, the gated norm, out_proj */
	int64_t lin_qkvz, lin_ba, lin_conv, lin_dt, lin_alog, lin_norm, lin_out;
	/* multi-head latent attention's (q is q_proj's when there is no q_a_proj) */
	int64_t q_a, q_a_norm, q_b, kv_a, kv_a_norm, kv_b;
	int64_t q_norm, k_norm;          /* q's and k's norms spanning the projection (qk_norm_full);
					  * a head's (qwen3's, gemma3's) are left out, as tiny */
};

/* A LoRA adapter's tensor (A or B of one adapted projection). */
struct adapter {
	int64_t elems;
	int mlp;                  /* adapts a projection of the MLP (else of the attention) */
};

/* A run's allocator and tensors, and what of the model and the settings the sequence of
 * allocations depends on. */
struct step {
	struct alloc_sim a;
	int *block_of;            /* tensor id -> block, -1 when freed; id 0 unused */
	int64_t *bytes_of;        /* tensor id -> the bytes asked for (its block may be larger) */
	unsigned char *part_of;   /* tensor id -> its enum plan_component */
	size_t ntensors, cap_tensors, cap_bytes, cap_parts;
	/* the breakdown: the blocks live now by component, and as they were at the allocated
	 * peak (taken once the tensor that made the peak is tagged, at the next event) */
	int part;                 /* what tensors made now are for (enum plan_component) */
	const char *phase;        /* the step's phase now: "forward", "backward"... */
	uint64_t live[C_NCOMPONENTS], peak_parts[C_NCOMPONENTS];
	const char *peak_phase;
	int peak_pending;         /* a new allocated peak not yet taken */
	/* need_high's bound (docs/plan.md, The interval), kept as the live set moves: the
	 * phase whose frees are counted now, the largest request freed in it so far, and
	 * the bound's most over the run */
	const char *window, *need_high_phase;
	uint64_t window_freed, need_high_bytes;
	/* the live requests by component (rounded as asked, not the blocks that hold them:
	 * no placement moves them) */
	uint64_t live_req[C_NCOMPONENTS];
	/* a micro-step after the first of an accumulated step: a gradient made now is added
	 * into the one the parameter holds and let go (accum_drop: the one to let go at the
	 * next event) */
	int accumulating, accum_drop;
	/* the shape (elements); the layers' formulas write tokens, hidden, inter, q_dim,
	 * kv_dim and act_bytes as T, h, I, qd, k and ab */
	int64_t tokens;           /* batch x seq */
	int64_t batch, seq, hidden, layers, heads, kv_heads, vocab;
	int64_t q_dim;            /* heads x head_dim */
	int64_t kv_dim;           /* kv_heads x head_dim */
	int64_t inter;            /* the MLP's intermediate size */
	/* bytes per element */
	int weight_bytes;         /* the weights the layers compute with (FSDP2's gathered) */
	int host_weights;         /* the weights' shards in host memory (offloaded) */
	int store_bytes;          /* the weights as kept: FSDP2's shards under a
				   * MixedPrecisionPolicy, else weight_bytes */
	int act_bytes;            /* linear outputs: 2, or 4 for fp32 without autocast */
	int resid_bytes;          /* the residual stream: 4 with fp32 weights */
	int autocast;             /* bf16 autocast over fp32 weights */
	int quant, double_quant;  /* enum quant_kind of the layers' linear projections; its
				   * scales quantized too */
	int fp32;                 /* fp32 weights without autocast */
	const struct family *fam; /* what the layers are made of (plan/family.h) */
	int eval;                 /* the model in eval mode (inference): no dropout */
	int64_t positions;        /* learned positions */
	double softcap;           /* the final logit softcapping; 0 none */
	int base_trains;          /* the base weights train (not LoRA): linears keep their inputs */
	unsigned lora_targets;    /* LoRA: the LORA_* targets; 0 without LoRA */
	int64_t lora_rank;
	struct adapter adapters[2 * LORA_MAX_PROJS];  /* LoRA: one layer's, A then B per target */
	int nadapters;
	struct layer_params lp;
	int64_t experts, topk, moe_inter;  /* mixture of experts; 0 experts: a dense MLP */
	int router_fp32;          /* mixtral: the routing weights stay fp32 */
	int64_t sliding_window, sliding_pattern; /* sliding-window layers (model_shape) */
	int64_t mask_bytes;       /* this layer's attention mask as sdpa's additive bias: 0 none */
	int stage;                /* what layer_forward saves now is freed at this stage */
	struct tlist *kv;         /* training with use_cache: the cache's tensors, else NULL */
	struct tlist *ac_cache;   /* a checkpointed forward under autocast: autocast's weight
				   * casts, kept to the autocast region's end; else NULL */
	int nograd_in;            /* the next layer's input takes no gradient (the first
				   * trained layer's, after a frozen embedding, hidden states
				   * fed in, or frozen layers run without autograd) */
	int in_nograd;            /* the linears' input now takes no gradient (LoRA's first
				   * layer fed a frozen embedding: its norm's output) */
	int early_stop;           /* a checkpointed layer's recompute: it stops once its last
				   * saved tensor is packed (checkpoint's early stop) */
	int recomputed;           /* the backward of a checkpointed layer (node_done) */
	int jitter;               /* sim_train's jitter: its scale in hidden states, 0 off */
	uint64_t jitter_state;    /* its generator's state */
	int jitter_id;            /* the jitter tensor held now, 0 none */
	struct tlist *rot_last;   /* a rotary set's cos and sin, to go at their last use (the q
				   * rotation of the lowest trained layer using it); NULL in others */
	/* the layer now (layer_at): an interleaved family's MLP kind, rotary or not */
	enum mlp_kind mlp;
	int rope_on;              /* q and k rotated */
	int qk_l2;                /* q and k L2-normalized (a rotary layer of a use_qk_norm model) */
	int temperature;          /* q scaled (a layer without rotary embedding) */
	int64_t dense_inter, shared_inter, nope_step; /* (model_shape) */
	int model_qk_l2, model_temperature;
	enum attn_kind attn;      /* the layer's attention kind (hybrid families: layer_at) */
	int64_t full_step, lin_k_heads, lin_v_heads, lin_k_dim, lin_v_dim, lin_conv; /* (model_shape) */
	const struct model_shape *m;
	struct layer_params moe_lp; /* a MoE layer's (lp is the layer's now) */
	int64_t moe_experts;      /* a MoE layer's experts (experts: the layer's now) */
	int64_t moe_layer_inter;  /* a MoE layer's inter (inter: the layer's now) */
	int64_t rot_dim;          /* the rotated part of a head (0: all of it) */
	struct family fam_cfg;    /* the family's row as the config turns its options on */
	int64_t q_lora, kv_lora, v_head; /* multi-head latent attention's (model_shape) */
};

struct layer_fwd;

/* What a sublayer's kind (an attention kind, an MLP kind: plan/family.h) does, written
 * once: its forward with autograd over its norm's output y (0 when kept; what the
 * backward needs into sv, stages telling which node frees each), without autograd (a
 * cache, when given, takes an attention's keys and values), and its backward from its
 * output's gradient (0: the residual stream's), its input's gradient's bytes a unit
 * into *bytes. A new kind (MLA, linear attention, shared experts) is a new row. */
struct sublayer_ops {
	int (*forward)(struct step *s, struct layer_fwd *c, struct tlist *sv, int y);
	int (*plain)(struct step *s, int y, struct tlist *cache);
	int (*backward)(struct step *s, int gp, struct tlist *sv, struct tlist *grads, int64_t gw_bytes, int *bytes);
	int stops;                /* a checkpointed layer's recompute may stop in it early */
};

/* What a decoder layer's forward hands from one of its ops to the next. */
struct layer_fwd {
	int in;                   /* the layer's input */
	int nograd;               /* it takes no gradient (s->nograd_in as the layer began) */
	int h1;                   /* the residual stream after the attention */
	/* LoRA's first layer fed a frozen embedding (a frozen norm over an input without a
	 * gradient): a projection's input takes a gradient only once an adapter before it
	 * (ran) has run */
	int lora0;
	unsigned ran;
	int stop;                 /* a checkpointed layer's recompute that stops early */
};

/* The attention's tensors from the projections to sdpa's return. */
struct attn_live {
	int q, kk, v;             /* the projections' (v: fused, qkv) */
	int qe, ke;               /* q and k rotated */
};

/* A gated MLP's width, weights and the stages of what its nodes keep: the layer's MLP,
 * or a mixture of experts' shared expert. */
struct gated_mlp {
	int64_t inter, gate, up, down;
	enum stage down_st, mul_st, gate_st, up_st, in_st;
};

#define LAYER_WEIGHTS_MAX 39

/* The root's weights: the embedding, learned positions, the final norm's weight and
 * bias, lm_head. */
#define ROOT_WEIGHTS_MAX 5

/* A training run through the simulation: the step's tensors, and what lives from one
 * phase of a step to the next, or into the next step. */
struct train {
	struct step s;
	const struct model_shape *m;
	const struct train_settings *t;
	int lora;                 /* only LoRA's adapters train (fp32), the base is frozen */
	int past_told;            /* t->past called */
	int64_t grad_bytes;       /* a trained base weight's gradient, bytes a unit; 0 with LoRA */
	int64_t shard;            /* ZeRO-3: the weights' share kept is 1/shard */
	int64_t chunk;            /* tokens per lm_head + loss chunk */
	struct tlist params;      /* the weights, then LoRA's adapters */
	struct tlist trained;     /* those of params that train: their states and temporaries */
	int embed_trains, head_trains;
	int64_t embed_gw, head_gw;  /* their gradients' bytes a unit (0: frozen); with LoRA,
				     * modules_to_save's copies' (the weights' dtype) */
	int tied;                 /* the embedding and lm_head one weight (no copy of either trains) */
	int save_ids[2];          /* modules_to_save's copies, in trained (0 none) */
	int backward_workspace;   /* the backward's cuBLAS workspace is made */
	int64_t no_grad_layers;   /* the first layers, frozen with nothing before them to train:
				   * they run as without autograd, and have no backward */
	int inputs;               /* inputs_embeds: the step's hidden states, held to the next */
	struct tlist states;      /* the optimizer's, made at the first step */
	struct tlist grads;       /* to the optimizer step */
	int head_grad;            /* lm_head's gradient, in grads (0 none) */
	struct tlist *saved;      /* per layer: what its forward keeps for its backward */
	struct tlist ckpts;       /* gradient checkpointing: each layer's input */
	struct tlist head_saved;  /* what GPT-2's final norm and its embeddings' dropout keep */
	int head_wcast;           /* lm_head's weight cast to bf16 under autocast (0 none) */
	struct tlist norm_saved;  /* what the final norm keeps (not GPT-2's) */
	struct tlist tmp;         /* the loss's and the optimizer's temporaries */
	struct tlist rot;         /* the rotary embedding's cos and sin, held to the backward's end */
	struct tlist kv, prev_kv; /* use_cache: this step's cache, and the last step's */
	struct tlist ac_cache;    /* autocast's weight casts in a checkpointed forward */
	/* FSDP2 (ZeRO-3): each layer's weights gathered whole around its forward and its
	 * backward (and kept from one to the other without resharding), the root's (the
	 * embedding, the final norm, lm_head) from the forward's start to the backward's
	 * end; the gradients reduce-scattered to their shard */
	int fsdp;
	int masters;              /* an fp32 master copy of the trained weights on the GPU */
	int64_t trained_elems;    /* this rank's elements of the trained weights (ds_start) */
	int64_t bucket_elems;     /* DeepSpeed's reduce bucket (0: none) */
	int ds3;                  /* DeepSpeed's stage 3: its bucket and the gradients'
				   * partitions one flat buffer each, made as it starts */
	struct tlist ipg;         /* DeepSpeed's buckets of a backward (stages 1 and 2) */
	int zero2;                /* ZeRO-2: each group's gradients reduced into this rank's
				   * partition as the backward makes them, the whole ones let go */
	int64_t layer_bytes, root_bytes;  /* a layer's weights, the root's, whole */
	int64_t layer_param[LAYER_WEIGHTS_MAX], root_param[ROOT_WEIGHTS_MAX]; /* each weight's bytes, whole, in order */
	int nlayer_param, nroot_param;
	struct tlist *gathered;   /* per layer: its weights, whole (none: resharded) */
	unsigned char *issued;    /* per layer: its all-gather is in flight */
	struct tlist root;        /* the root's weights, whole */
	int ag;                   /* the last all-gather's buffer */
	struct tlist shards;      /* the gradients reduce-scattered this step */
	struct tlist buckets;     /* DDP's gradient buckets */
	uint64_t race_bytes;      /* sim_result's race_bytes */
	int states_made;          /* the optimizer's states made (at the first step) */
	int prev_logits;          /* the last step's logits: its output holds them (and prev_kv) */
	/* this step's */
	int emb;                  /* the embeddings (gemma: scaled), the first layer's input */
	int hidden;               /* the last layer's output */
	int final_out;            /* the final norm's output, lm_head's input */
	int logits;               /* the first chunk's, as the model returns them */
	struct tlist lsm;         /* each loss chunk's log-softmax */
	struct tlist capped;      /* gemma2: each loss chunk's tanh, kept by the softcap */
	int fused_gin, fused_gw;  /* Liger: the input's and lm_head's gradients, from the forward */
	int grad_res;             /* the residual stream's gradient */
	int mask[2];              /* the masks made before the layers (model_masks; 0 none):
				   * through the layers, checkpointed ones to their backward */
};

/* sim_live.c: the live set (the step's tensors, the saved lists, the result) */
int tensor_for(struct step *s, int64_t bytes, int stream, int part);
int tensor(struct step *s, int64_t bytes);
int tensor_as(struct step *s, int64_t bytes, enum plan_component part);
void drop(struct step *s, int id);
void accum_settle(struct step *s);
int remake(struct step *s, int x, int64_t bytes);
int remade_by(struct step *s, int x, int n);
void push(struct tlist *l, int id);
void save(struct step *s, struct tlist *l, int id);
void release(struct step *s, struct tlist *l, enum stage st);
void free_all(struct step *s, struct tlist *l);
int tlist_has(const struct tlist *l, int id);
void node_done(struct step *s, struct tlist *sv, enum stage st, int g);
int64_t tensor_bytes(const struct step *s, int id);
void step_result(struct step *s, struct sim_result *r);

/* sim_setup.c: the step's shape, each layer's kinds, the masks, the weights */
void setup(struct step *s, const struct model_shape *m, const struct train_settings *t);
void layer_at(struct step *s, int64_t l);
void model_masks(struct step *s, int infer, int mask[2]);
void layer_begin(struct step *s, int64_t l);
int layer_frozen(const struct train_settings *t, int64_t l);
int layer_weights(const struct step *s, int64_t *w);
/* Layer l's (layer_at) weights as FSDP gathers them, bytes into w: the quantized
 * projections as stored, the others in the dtype the layers compute with. How many. */
int layer_gathered(const struct step *s, int64_t *w);
int norm_tensors(const struct step *s);
void load(struct step *s, const struct model_shape *m, const struct train_settings *t, struct tlist *params,
	  struct tlist *trained, int64_t shard);

/* op_linear.c: projections and their gradients */
int linear(struct step *s, struct tlist *sv, int64_t in_u, int64_t out_u, unsigned target, int64_t w_elems, int cast_in);
int plain_linear(struct step *s, int64_t in_u, int64_t out_u, int64_t w_elems, int cast_in, unsigned target);
void adapter_grads(struct step *s, struct tlist *grads, int mlp_half);
void weight_grad(struct step *s, struct tlist *grads, int64_t elems, int64_t gw_bytes);
int proj_backward(struct step *s, int g, int g_bytes, int64_t in_u, int64_t w_elems, int cast_in, int acc,
		  struct tlist *sv, enum stage st, struct tlist *grads, int64_t gw_bytes);
int addmm_backward(struct step *s, int g, int64_t in_u, int64_t w_elems, int64_t bias, struct tlist *sv, enum stage st,
		   struct tlist *grads, int64_t gw_bytes);
int grad_sum(struct step *s, int a, int b);
void cublas_workspace(struct step *s);

/* op_norm.c: the norms */
int norm_out_bytes(const struct step *s, int in_bytes);
int plain_norm(struct step *s, int64_t rows, int64_t dim, int in_bytes);
int norm_at(struct step *s, struct tlist *sv, int64_t rows, int64_t dim, enum stage st);
int post_norm(struct step *s, struct tlist *sv, int x, enum stage st);
int norm(struct step *s, struct tlist *sv);
int rsqrt_backward(struct step *s, int64_t u, int a, int ib, struct tlist *sv, enum stage st, int gres);
int64_t sum_staging(int64_t u, int64_t dim);
int post_norm_backward(struct step *s, int gres, struct tlist *sv, enum stage w_st, enum stage st);
int rms_backward(struct step *s, int64_t u, int64_t dim, int g, int g_bytes, int ib, struct tlist *sv, enum stage w_st,
		 enum stage st, int gres);
int norm_backward(struct step *s, int g, int g_bytes, struct tlist *sv, enum stage w_st, enum stage st, int gres);
int layer_norm(struct step *s, struct tlist *sv, int in_bytes);
int layer_norm_backward(struct step *s, int g, struct tlist *sv, enum stage st, int gres, struct tlist *grads,
			int64_t gw);

/* op_attn.c: the attention (ATTN_SDPA) and what other kinds share of it */
int64_t qk_bytes(const struct step *s);
int64_t kv_bytes(const struct step *s);
int qkv_forward(struct step *s, struct tlist *sv, int *q, int *kk);
int sdpa_attn_forward(struct step *s, struct layer_fwd *c, struct tlist *sv, int y);
/* Whether sdpa keeps the DynamicCache's k and v themselves for its backward (no
 * autocast cast of them, no repeat_kv copies): then they outlive the model's output. */
int sdpa_keeps_cache(const struct step *s);
int64_t flash_workspace(const struct step *s);
int sdpa_attn_backward(struct step *s, int gp, struct tlist *sv, struct tlist *grads, int64_t gw_bytes, int *bytes);
int plain_qkv(struct step *s, int *q, int *kk);
int sdpa_attn_plain(struct step *s, int y, struct tlist *cache);

/* op_rope.c: the rotary embedding */
void position_qk(struct step *s, struct tlist *sv, struct attn_live *a);
void rope_forward(struct step *s, struct tlist *sv, struct attn_live *a);
int rope_bwd_core(struct step *s, int g, int64_t n, int64_t b, struct tlist *rot);
int rope_backward(struct step *s, int g, int64_t n, int64_t b, struct tlist *rot);
int rotary_set(const struct step *s, int64_t l);
void rotary(struct step *s, struct tlist *rot, int step);

/* op_mlp.c: the gated MLP (MLP_GATED) */
int gated_mlp_forward(struct step *s, struct layer_fwd *c, struct tlist *sv, int y);
int gated_backward(struct step *s, const struct gated_mlp *m, int g, int g_bytes, struct tlist *sv, struct tlist *grads,
		   int64_t gw_bytes, int *bytes);
int gated_mlp_backward(struct step *s, int gp, struct tlist *sv, struct tlist *grads, int64_t gw_bytes, int *bytes);
int gated_mlp_plain(struct step *s, int y, struct tlist *cache);

/* op_moe.c: a mixture of experts (MLP_MOE) */
int moe_mlp_forward(struct step *s, struct layer_fwd *c, struct tlist *sv, int y);
int moe_mlp_backward(struct step *s, int gp, struct tlist *sv, struct tlist *grads, int64_t gw_bytes, int *bytes);
int moe_mlp_plain(struct step *s, int y, struct tlist *cache);

/* op_gpt2.c: GPT-2's attention and MLP (ATTN_GPT2, MLP_GELU) */
int dropout(struct step *s, struct tlist *sv, int x, int64_t units, int64_t bytes);
int gpt2_attn_forward(struct step *s, struct layer_fwd *c, struct tlist *sv, int y);
int gpt2_attn_plain(struct step *s, int y, struct tlist *cache);
int gpt2_attn_backward(struct step *s, int gp, struct tlist *sv, struct tlist *grads, int64_t gw, int *bytes);
int gelu_mlp_forward(struct step *s, struct layer_fwd *c, struct tlist *sv, int y);
int gelu_mlp_plain(struct step *s, int y, struct tlist *cache);
int gelu_mlp_backward(struct step *s, int gp, struct tlist *sv, struct tlist *grads, int64_t gw, int *bytes);

/* op_layer.c: a decoder layer of its parts */
void lora_input(struct step *s, const struct layer_fwd *c);
int norm_keeps_input(const struct step *s);
int layer_forward(struct step *s, int in, struct tlist *sv, int frozen);
int layer_backward(struct step *s, int gres, struct tlist *sv, struct tlist *grads, int64_t gw_bytes);
int plain_layer(struct step *s, int in, struct tlist *cache);

/* op_position.c: positions beyond rope(), and their backward */
void rope_complex(struct step *s, struct attn_live *a);
int l2_norm(struct step *s, struct tlist *sv, int x, int64_t rows, int64_t dim, enum stage st);
int temper(struct step *s, int q, int64_t n);
int position_backward(struct step *s, int g, int64_t n, int64_t b, struct tlist *rot, struct tlist *sv, enum stage st,
		      int is_q);

/* op_dense_moe.c: llama4_text's experts (MLP_DENSE_MOE) */
int dense_moe_forward(struct step *s, struct layer_fwd *c, struct tlist *sv, int y);
int dense_moe_plain(struct step *s, int y, struct tlist *cache);
int dense_moe_backward(struct step *s, int gp, struct tlist *sv, struct tlist *grads, int64_t gw_bytes, int *bytes);

/* op_eager.c: gpt_oss's eager attention with sinks (ATTN_EAGER_SINKS) */
int eager_masks(struct step *s);
int eager_attn_forward(struct step *s, struct layer_fwd *c, struct tlist *sv, int y);
int eager_attn_plain(struct step *s, int y, struct tlist *cache);
int eager_attn_backward(struct step *s, int gp, struct tlist *sv, struct tlist *grads, int64_t gw_bytes, int *bytes);

/* op_clamped_moe.c: gpt_oss's experts (MLP_MOE_CLAMPED) */
int clamped_moe_forward(struct step *s, struct layer_fwd *c, struct tlist *sv, int y);
int clamped_moe_plain(struct step *s, int y, struct tlist *cache);
int clamped_moe_backward(struct step *s, int gp, struct tlist *sv, struct tlist *grads, int64_t gw_bytes, int *bytes);

/* op_gated_attn.c: qwen3_next's gated full attention (ATTN_GATED_SDPA) */
int gated_attn_forward(struct step *s, struct layer_fwd *c, struct tlist *sv, int y);
int gated_attn_plain(struct step *s, int y, struct tlist *cache);
int gated_attn_backward(struct step *s, int gp, struct tlist *sv, struct tlist *grads, int64_t gw_bytes, int *bytes);

/* op_deltanet.c: qwen3_next's Gated DeltaNet (ATTN_DELTANET) */
int deltanet_forward(struct step *s, struct layer_fwd *c, struct tlist *sv, int y);
int deltanet_plain(struct step *s, int y, struct tlist *cache);
int deltanet_backward(struct step *s, int gp, struct tlist *sv, struct tlist *grads, int64_t gw_bytes, int *bytes);

/* op_mla.c: multi-head latent attention (ATTN_MLA) */
int mla_attn_forward(struct step *s, struct layer_fwd *c, struct tlist *sv, int y);
int mla_attn_plain(struct step *s, int y, struct tlist *cache);
int mla_attn_backward(struct step *s, int gp, struct tlist *sv, struct tlist *grads, int64_t gw_bytes, int *bytes);

/* sim_dist.c: DDP's buckets, FSDP2's gathers and reduce-scatters */
void ddp_rebuild(struct train *tr);
void fsdp_issue(struct train *tr, int64_t bytes);
void fsdp_ag_free(struct train *tr);
void fsdp_copy_out(struct train *tr, struct tlist *l, const int64_t *bytes, int n);
void fsdp_gather(struct train *tr, int64_t l, int dir);
void fsdp_reshard(struct train *tr, int64_t l);
void fsdp_reduce_scatter(struct train *tr, size_t from);

#endif
