#include "plan/limits.h"
#include "plan/dtype.h"
#include "plan/family.h"
#include "plan/precision.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>

#define STR_(x) #x
#define STR(x) STR_(x)

/* Saturating arithmetic: UINT64_MAX stands for "more than 64 bits", past every limit. */
static uint64_t mul(uint64_t a, uint64_t b)
{
	uint64_t r;

	return __builtin_mul_overflow(a, b, &r) ? UINT64_MAX : r;
}

static uint64_t add(uint64_t a, uint64_t b)
{
	uint64_t r;

	return __builtin_add_overflow(a, b, &r) ? UINT64_MAX : r;
}

static int within(int64_t v, int64_t lo, int64_t hi)
{
	return v >= lo && v <= hi;
}

/* The first range m or t is out of, or NULL. */
static const char *out_of_range(const struct model_shape *m, const struct train_settings *t)
{
	const struct {
		int ok;
		const char *why;
	} r[] = {
		{ within(m->hidden, 1, PLAN_MAX_WIDTH), "hidden_size must be from 1 to " STR(PLAN_MAX_WIDTH) },
		{ within(m->intermediate, 1, PLAN_MAX_WIDTH), "intermediate_size must be from 1 to " STR(PLAN_MAX_WIDTH) },
		{ within(m->layers, 1, PLAN_MAX_LAYERS), "num_hidden_layers must be from 1 to " STR(PLAN_MAX_LAYERS) },
		{ within(m->heads, 1, PLAN_MAX_HEADS), "num_attention_heads must be from 1 to " STR(PLAN_MAX_HEADS) },
		{ within(m->kv_heads, 1, PLAN_MAX_HEADS), "num_key_value_heads must be from 1 to " STR(PLAN_MAX_HEADS) },
		{ within(m->head_dim, 1, PLAN_MAX_HEADS), "head_dim must be from 1 to " STR(PLAN_MAX_HEADS) },
		{ within(m->vocab, 1, PLAN_MAX_VOCAB), "vocab_size must be from 1 to " STR(PLAN_MAX_VOCAB) },
		{ within(m->positions, 0, PLAN_MAX_VOCAB), "n_positions must be from 1 to " STR(PLAN_MAX_VOCAB) },
		{ within(m->max_length, 0, PLAN_MAX_POSITIONS),
		  "max_position_embeddings must be from 1 to " STR(PLAN_MAX_POSITIONS) },
		{ within(m->experts, 0, PLAN_MAX_EXPERTS) && within(m->experts_per_tok, 0, m->experts) &&
			  within(m->moe_inter, 0, PLAN_MAX_WIDTH),
		  "num_experts (to " STR(PLAN_MAX_EXPERTS) "), num_experts_per_tok (to num_experts) and "
		  "moe_intermediate_size (to " STR(PLAN_MAX_WIDTH) ") out of range" },
		{ t->freeze_last < t->freeze_first || (t->freeze_first >= 0 && t->freeze_last < m->layers),
		  "freeze: the layers frozen must be among the model's num_hidden_layers (counted from 0)" },
		{ within(t->batch, 1, PLAN_MAX_BATCH), "batch must be from 1 to " STR(PLAN_MAX_BATCH) },
		{ within(t->seq, 1, PLAN_MAX_SEQ), "seq must be from 1 to " STR(PLAN_MAX_SEQ) },
		{ within(t->context, 0, PLAN_MAX_SEQ), "context must be from 1 to " STR(PLAN_MAX_SEQ) },
		{ t->loss_chunk >= 0, "loss_chunk must be from 1" },
		{ !t->loss_chunk || t->loss == LOSS_PLAIN || t->inference,
		  "loss_chunk chunks the plain loss: liger and cce chunk on their own (drop --loss-chunk)" },
		{ !attn_name_flash(t->attn_name) || model_family(m)->attn != ATTN_EAGER_SINKS,
		  "attn: a flash kernel's name is planned as sdpa's flash kernel, which this family's eager attention "
		  "(its sinks) is not: plan with --attn default" },
		{ !attn_name_flash(t->attn_name) || precision_compute_bytes(t) != DT_FP32 || t->autocast,
		  "attn: flash kernels run in bf16 or fp16, not fp32: plan with --attn sdpa (its math kernel)" },
		{ within(t->lora_rank, 0, PLAN_MAX_LORA_RANK), "lora_rank must be from 1 to " STR(PLAN_MAX_LORA_RANK) },
		{ within(t->dp, 1, PLAN_MAX_DP), "dp must be from 1 to " STR(PLAN_MAX_DP) },
		{ isfinite(t->momentum) && t->momentum >= 0 && t->momentum < 1, "momentum must be from 0 to below 1" },
		{ t->context_bytes <= PLAN_MAX_ITEM_BYTES, "context_bytes must be at most 1 TiB" },
		{ t->nbuffers <= PLAN_MAX_BUFFERS, "at most " STR(PLAN_MAX_BUFFERS) " buffers" },
	};

	for (size_t i = 0; i < sizeof(r) / sizeof(r[0]); i++)
		if (!r[i].ok)
			return r[i].why;
	for (size_t i = 0; i < t->nbuffers; i++) {
		if (!within(t->buffers[i].count, 0, PLAN_MAX_BUFFER_COUNT))
			return "a buffer's count must be from 1 to " STR(PLAN_MAX_BUFFER_COUNT);
		if (t->buffers[i].item_bytes > PLAN_MAX_ITEM_BYTES)
			return "a buffer's item must be at most 1 TiB";
	}
	return NULL;
}

int plan_check(const struct model_shape *m, const struct train_settings *t, const char **why)
{
	/* Upper bounds of what model.c and sim.c compute: every size there is a product of
	 * the factors below (in elements or bytes), at most the term it falls under. */
	uint64_t h, I, V, L, B, S, T, ctx, q, k, widths, per_layer, params, lora, experts, buffers = 0;

	if ((*why = out_of_range(m, t)))
		return -EINVAL;
	h = (uint64_t)m->hidden, I = (uint64_t)m->intermediate, V = (uint64_t)m->vocab, L = (uint64_t)m->layers;
	B = (uint64_t)t->batch, S = (uint64_t)t->seq, T = mul(B, S);
	ctx = t->context > t->seq ? (uint64_t)t->context : S;
	q = mul((uint64_t)m->heads, (uint64_t)m->head_dim);
	k = mul((uint64_t)m->kv_heads, (uint64_t)m->head_dim);
	if (!t->inference && t->loss_chunk > 0 && (uint64_t)t->loss_chunk < T &&
	    (T - 1) / (uint64_t)t->loss_chunk + 1 > PLAN_MAX_LOSS_CHUNKS) {
		*why = "loss_chunk makes more than " STR(PLAN_MAX_LOSS_CHUNKS) " chunks of batch x seq tokens";
		return -E2BIG;
	}
	/* a token's units in a layer (hidden, attention, MLP, LoRA), and 64 bytes a unit
	 * covers what a layer keeps and its temporaries in every precision; in fp32 without
	 * autocast the attention keeps its probabilities, batch x heads x seq x seq */
	widths = add(add(add(h, q), add(k, I)), add((uint64_t)t->lora_rank, 1));
	/* mixture of experts: each token's top experts' units, a router output per expert */
	widths = add(widths, add(mul((uint64_t)m->experts_per_tok, add(mul(3, (uint64_t)m->moe_inter), mul(2, h))),
				 (uint64_t)m->experts));
	per_layer = mul(mul(64, T), widths);
	if (precision_compute_bytes(t) == DT_FP32 && !t->autocast)
		per_layer = add(per_layer, mul(mul(mul(4, B), mul((uint64_t)m->heads, S)), S));
	if (m->sliding_window) /* a sliding layer's mask, batch x seq x seq (sim_setup.c, layer_begin) */
		per_layer = add(per_layer, mul(mul(4, B), mul(S, S)));
	/* a layer's parameters: its matrices, norms and biases */
	params = add(add(mul(mul(2, V), h), mul((uint64_t)m->positions, h)),
		     add(mul(L, mul(mul(8, add(h, 1)), widths)), mul(2, h)));
	lora = mul(mul(16, (uint64_t)t->lora_rank), mul(L, widths));
	experts = mul(L, mul((uint64_t)m->experts, add(mul(mul(3, h), (uint64_t)m->moe_inter), h)));
	params = add(add(params, experts), (uint64_t)vision_params(&m->vision)); /* (its ranges bound it) */
	for (size_t i = 0; i < t->nbuffers; i++)
		buffers = add(buffers, mul((uint64_t)t->buffers[i].count, t->buffers[i].item_bytes));

	const struct {
		uint64_t bytes;
		const char *what;
	} term[] = {
		/* weights, gradients, optimizer states and their temporaries: 4 bytes each */
		{ mul(32, add(params, lora)), "the plan is too large: the weights and optimizer states (the "
					      "parameters) pass the planner's limit of 1 PiB" },
		{ add(mul(L, per_layer), per_layer), "the plan is too large: the activations (batch x seq x the "
						     "layers' widths x num_hidden_layers; in fp32 batch x heads x seq x seq "
						     "a layer, with sliding windows batch x seq x seq) pass the "
						     "planner's limit of 1 PiB" },
		{ mul(mul(32, T), V), "the plan is too large: the logits (batch x seq x vocab_size) pass the "
				      "planner's limit of 1 PiB" },
		{ mul(mul(8, mul(L, B)), mul(ctx, k)), "the plan is too large: the KV cache (num_hidden_layers x "
						       "batch x context x key/value width) passes the planner's limit of 1 PiB" },
		{ buffers, "the plan is too large: the buffers pass the planner's limit of 1 PiB" },
	};
	uint64_t total = t->context_bytes;

	for (size_t i = 0; i < sizeof(term) / sizeof(term[0]); i++) {
		if (term[i].bytes > PLAN_MAX_BYTES) {
			*why = term[i].what;
			return -E2BIG;
		}
		total = add(total, term[i].bytes);
	}
	if (total > PLAN_MAX_BYTES) {
		*why = "the plan is too large: it passes the planner's limit of 1 PiB";
		return -E2BIG;
	}
	*why = NULL;
	return 0;
}
