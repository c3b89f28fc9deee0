/* The step set up from the model and the settings: its shapes and dtypes, each layer's
 * kinds (a hybrid's, an interleaved MoE's), the attention masks made before the layers,
 * and the weights loaded in construction order. */

#include <stdlib.h>

#include "plan/dtype.h"
#include "plan/precision.h"
#include "plan/quant.h"
#include "plan/sim_internal.h"

/* Multi-head latent attention's sizes and weights (ATTN_MLA): q_proj, or q_a_proj, its
 * norm and q_b_proj; kv_a_proj_with_mqa, its norm, kv_b_proj; o_proj from the heads' v. */
static void mla_setup(struct step *s, const struct model_shape *m)
{
	int64_t h = s->hidden, H = s->heads, qr = m->q_lora_rank, kvr = m->kv_lora_rank;
	int64_t n = m->qk_nope_dim, vd = m->v_head_dim;

	s->q_lora = qr, s->kv_lora = kvr, s->v_head = vd;
	s->lp.q = qr ? 0 : h * s->q_dim;
	s->lp.q_a = h * qr, s->lp.q_a_norm = qr, s->lp.q_b = qr * s->q_dim;
	s->lp.k = s->lp.v = s->lp.k_bias = s->lp.q_bias = s->lp.v_bias = 0;
	s->lp.kv_a = h * (kvr + s->rot_dim), s->lp.kv_a_norm = kvr, s->lp.kv_b = kvr * H * (n + vd);
	s->lp.o = H * vd * h;
}

void setup(struct step *s, const struct model_shape *m, const struct train_settings *t)
{
	int64_t h = m->hidden, qd = m->heads * m->head_dim, k = m->kv_heads * m->head_dim, I = m->intermediate;

	s->tokens = t->batch * t->seq, s->batch = t->batch, s->seq = t->seq;
	s->hidden = h, s->layers = m->layers, s->heads = m->heads, s->q_dim = qd, s->kv_dim = k, s->inter = I, s->vocab = m->vocab;
	int wb = precision_compute_bytes(t);

	s->weight_bytes = wb;
	s->store_bytes = precision_weight_bytes(t);
	/* autocast casts fp32 tensors to bf16: over bf16 (or fp16) weights the activations
	 * and the residual stream are already in their dtype, and measured HF Trainer runs
	 * under bf16=True peak as the same run without it */
	s->autocast = t->autocast && wb == DT_FP32;
	s->fp32 = wb == DT_FP32 && !t->autocast;
	s->act_bytes = s->fp32 ? DT_FP32 : DT_BF16;
	s->resid_bytes = wb == DT_FP32 ? DT_FP32 : DT_BF16;
	s->quant = t->quant;
	s->double_quant = t->double_quant;
	s->fam = model_family(m);
	if (m->qk_norm_each) { /* the config's per-head q/k norms (glm4_moe's use_qk_norm) */
		s->fam_cfg = *s->fam;
		s->fam_cfg.qk_norm = QK_NORM_EACH;
		s->fam = &s->fam_cfg;
	}
	s->positions = m->positions;
	s->kv_heads = m->kv_heads;
	s->softcap = m->final_softcap;
	s->base_trains = t->lora_rank <= 0 || t->inference;
	/* full fine-tuning: a layer frozen for the moment takes no adapter path */
	s->lora_targets = s->base_trains ? 0 : t->lora_targets;
	s->lora_rank = t->lora_rank;
	if (!s->base_trains) { /* A (in x r) and B (r x out), fp32, per adapted projection */
		struct lora_proj p[LORA_MAX_PROJS];
		int n = lora_projs(m, t->lora_targets, p);
		for (int i = 0; i < n; i++) {
			s->adapters[s->nadapters++] = (struct adapter){ p[i].in * s->lora_rank, p[i].mlp };
			s->adapters[s->nadapters++] = (struct adapter){ s->lora_rank * p[i].out, p[i].mlp };
		}
	}
	s->experts = m->experts, s->topk = m->experts_per_tok, s->moe_inter = m->moe_inter;
	s->router_fp32 = s->fam->router_fp32;
	s->sliding_window = m->sliding_window, s->sliding_pattern = m->sliding_pattern;
	if (s->fam->fused_qkv)
		s->lp.qkv = h * (qd + 2 * k);
	else
		s->lp.q = h * qd, s->lp.k = h * k, s->lp.v = h * k;
	if (s->experts) { /* the experts' stacked gate_up_proj and down_proj, the router */
		s->lp.gate_up = s->experts * 2 * s->moe_inter * h;
		s->lp.router = s->experts * h;
	} else if (s->fam->fused_gate_up) {
		s->lp.gate_up = h * 2 * I;
	} else {
		s->lp.gate = h * I, s->lp.up = h * I;
	}
	s->lp.o = qd * h;
	s->lp.down = s->experts ? s->experts * s->moe_inter * h : I * h;
	s->m = m;
	s->mlp = s->fam->mlp, s->rope_on = 1, s->attn = s->fam->attn;
	s->rot_dim = m->rotary_dim;
	s->full_step = m->full_step, s->lin_k_heads = m->lin_k_heads, s->lin_v_heads = m->lin_v_heads;
	s->lin_k_dim = m->lin_k_dim, s->lin_v_dim = m->lin_v_dim, s->lin_conv = m->lin_conv;
	s->shared_inter = s->experts ? m->shared_inter : 0;
	if (s->shared_inter) { /* the shared expert's, beside the experts' */
		s->lp.shared_gate = s->lp.shared_up = s->lp.shared_down = h * s->shared_inter;
		s->lp.shared_gate_w = s->fam->shared == SHARED_GATED_FIRST ? h : 0;
	}
	if (s->fam->attn == ATTN_GATED_SDPA) /* q and its gate */
		s->lp.q = 2 * h * qd;
	if (s->fam->sinks)
		s->lp.sinks = s->heads;
	if (s->fam->expert_bias)
		s->lp.gate_up_bias = s->experts * 2 * s->moe_inter, s->lp.down_bias = s->experts * h;
	if (s->fam->router_bias)
		s->lp.router_bias = s->experts;
	s->dense_inter = m->dense_inter;
	s->nope_step = m->nope_step, s->model_qk_l2 = m->qk_l2, s->model_temperature = m->nope_temperature;
	if (s->fam->layer == LAYER_GPT2) /* its ops and LayerNorm's make their weights' gradients */
		return;
	s->lp.norm1 = s->lp.norm2 = h;
	if (s->fam->qk_norm != QK_NORM_NONE && s->fam->qk_norm_full)
		s->lp.q_norm = qd, s->lp.k_norm = k;
	if (m->qkv_bias)
		s->lp.q_bias = qd, s->lp.k_bias = k, s->lp.v_bias = k;
	if (m->o_bias)
		s->lp.o_bias = s->hidden;
	if (s->fam->attn == ATTN_MLA)
		mla_setup(s, m);
	s->moe_lp = s->lp, s->moe_experts = s->experts, s->moe_layer_inter = s->inter;
}

/* A hybrid family's layer l: the family's attention on every full_step-th layer, a
 * Gated DeltaNet's weights and kind on the others. */
static void hybrid_at(struct step *s, int64_t l)
{
	struct layer_params *p = &s->lp;
	int64_t h = s->hidden, kd = s->lin_k_heads * s->lin_k_dim, vd = s->lin_v_heads * s->lin_v_dim;
	int full = (l + 1) % s->full_step == 0;

	s->attn = full ? s->fam->attn : ATTN_DELTANET;
	p->q = full ? (s->fam->attn == ATTN_GATED_SDPA ? 2 : 1) * h * s->q_dim : 0;
	p->k = p->v = full ? h * s->kv_dim : 0;
	p->o = full ? s->q_dim * h : 0;
	p->lin_qkvz = full ? 0 : h * (2 * kd + 2 * vd);
	p->lin_ba = full ? 0 : h * 2 * s->lin_v_heads;
	p->lin_conv = full ? 0 : (2 * kd + vd) * s->lin_conv;
	p->lin_dt = p->lin_alog = full ? 0 : s->lin_v_heads;
	p->lin_norm = full ? 0 : s->lin_v_dim;
	p->lin_out = full ? 0 : vd * h;
}

/* Layer l's MLP in a mixture-of-experts model (model_dense_layer says which layers are
 * dense: first_k_dense_replace's, those off every decoder_sparse_step-th or
 * interleave_moe_layer_step-th, mlp_only_layers'): a dense layer's is a gated MLP of
 * dense_inter units, a sparse one's the family's experts with their shared expert (as
 * setup made them). Others' layers are all alike: nothing changes. */
static void mlp_at(struct step *s, int64_t l)
{
	struct layer_params *p = &s->lp;
	const struct layer_params *e = &s->moe_lp;
	int64_t h = s->hidden;

	if (!s->moe_experts)
		return;
	p->gate = e->gate, p->up = e->up, p->gate_up = e->gate_up, p->down = e->down, p->router = e->router;
	p->shared_gate = e->shared_gate, p->shared_up = e->shared_up, p->shared_down = e->shared_down;
	p->shared_gate_w = e->shared_gate_w;
	p->gate_up_bias = e->gate_up_bias, p->down_bias = e->down_bias, p->router_bias = e->router_bias;
	s->experts = s->moe_experts, s->mlp = s->fam->mlp, s->inter = s->moe_layer_inter;
	if (!model_dense_layer(s->m, l))
		return;
	s->mlp = MLP_GATED, s->experts = 0, s->inter = s->dense_inter;
	p->gate_up = p->router = p->shared_gate = p->shared_up = p->shared_down = p->shared_gate_w = 0;
	p->gate_up_bias = p->down_bias = p->router_bias = 0;
	p->gate = p->up = p->down = h * s->dense_inter;
}

/* Layer l's kinds where they vary by layer: its MLP (mlp_at), whether q and k are
 * rotated (and so L2-normalized), or q scaled; a hybrid family's attention (hybrid_at). */
void layer_at(struct step *s, int64_t l)
{
	if (s->nope_step) {
		s->rope_on = (l + 1) % s->nope_step != 0;
		s->qk_l2 = s->model_qk_l2 && s->rope_on;
		s->temperature = s->model_temperature && !s->rope_on;
	}
	mlp_at(s, l);
	if (s->full_step)
		hybrid_at(s, l);
}

/* A sliding window the keys reach: the model builds its boolean mask, seq x seq, once a
 * forward (the window's comparison and the causal one, each and-ed in) for every
 * layer's sdpa. Returns it (0: none). */
static int sliding_mask(struct step *s)
{
	if (s->fam->attn == ATTN_EAGER_SINKS) /* eager attention's float masks, whatever the seq */
		return eager_masks(s);
	if (!s->fam->window_mask_always && (!s->sliding_window || s->seq < s->sliding_window))
		return 0;
	/* (a chunked one a batch row each: its offsets are the row's; the causal comparison
	 * is one seq x seq for every row) */
	int64_t b = DT_BOOL * s->seq * s->seq * (s->fam->chunk ? s->batch : 1);
	int m1 = tensor(s, b), m2 = tensor(s, b);
	drop(s, m1);
	int m3 = tensor(s, DT_BOOL * s->seq * s->seq), mask = tensor(s, b);
	drop(s, m3), drop(s, m2);
	return mask;
}

/* A multimodal forward's masks (its wrapper's mm_masks): the causal one, then with a
 * window the sliding one, each the positions' comparison (seq x seq) or-ed with the
 * token types' equality and-ed in (batch x seq x seq); the sliding one and-ed again
 * with the window's comparison. Both held through the forward, into mask[0..1]. */
static void mm_masks(struct step *s, int mask[2])
{
	int64_t m = DT_BOOL * s->seq * s->seq, bm = m * s->batch;
	int kinds = 1 + (s->sliding_window > 0);

	mask[0] = mask[1] = 0;
	for (int k = 0; k < kinds; k++) {
		int cmp = tensor(s, m), causal = tensor(s, m);
		drop(s, cmp);
		int eq = tensor(s, bm), types = tensor(s, bm);
		drop(s, eq);
		int both = tensor(s, bm);
		drop(s, types), drop(s, causal);
		if (k) { /* the window: and-ed in, its comparison seq x seq */
			int anded = tensor(s, bm);
			drop(s, both);
			int gt = tensor(s, m);
			both = tensor(s, bm);
			drop(s, gt), drop(s, anded);
		}
		mask[k] = both;
	}
}

/* The model's wrapper (a multimodal config) has its forward build mm_masks' masks. */
static int mm_masked(const struct step *s)
{
	return s->m->wrapper && s->m->wrapper->mm_masks;
}

/* The masks a forward builds before its layers, into mask[0..1] (0: none): a
 * multimodal one's; else a training forward's sliding mask, eager attention's float
 * masks in either, and a chunked family's mask in inference too (as traced on
 * llama4_text), and one that builds its window mask always (qwen2_moe); other sliding
 * windows' inference masks are not built (not traced:
 * building them moved gemma3's and mistral's measured inference plans either way). */
void model_masks(struct step *s, int infer, int mask[2])
{
	mask[0] = mask[1] = 0;
	if (mm_masked(s))
		mm_masks(s, mask);
	else if (!infer || s->fam->chunk || s->fam->window_mask_always)
		mask[0] = sliding_mask(s);
	else if (s->fam->attn == ATTN_EAGER_SINKS)
		mask[0] = eager_masks(s);
}

/* Which layer runs next: a sliding-window layer whose keys reach the
 * window (transformers passes no mask where a causal one does) hands sdpa a boolean
 * mask, which sdpa turns into an additive bias of the query's dtype, batch x seq x seq,
 * a layer; its efficient kernel keeps it for the backward. With sim_train's jitter, the
 * layer makes a tensor of a new pseudo-random size, held until the next layer's (the
 * last one's through the loss, or the optimizer step: small blocks the sequence leaves
 * out sit there too). */
void layer_begin(struct step *s, int64_t l)
{
	layer_at(s, l);
	int sliding = s->sliding_window && (l + 1) % s->sliding_pattern != 0;

	int masked = (sliding && s->seq >= s->sliding_window) || mm_masked(s);

	s->mask_bytes = masked ? s->act_bytes * s->batch * s->seq * s->seq : 0;
	if (s->jitter) { /* sim_train's stand-in for unmodelled temporaries: a new size a layer */
		uint64_t cap = (uint64_t)s->jitter * (uint64_t)(s->tokens * s->hidden * s->act_bytes);
		/* Knuth's MMIX LCG, its high 31 bits: sizes up to 2 GiB */
		s->jitter_state = s->jitter_state * 6364136223846793005ULL + 1442695040888963407ULL;
		drop(s, s->jitter_id);
		s->jitter_id = tensor(s, (int64_t)((s->jitter_state >> 33) % (cap ? cap : 1)) + 1);
	}
}

/* The weights, in construction order: embedding, layers, final norm, lm_head (when
 * tied, freed again) (a ZeRO-3 shard keeps a 1/dp share); then the named buffers. */
int layer_frozen(const struct train_settings *t, int64_t l)
{
	return l >= t->freeze_first && l <= t->freeze_last;
}

/* One decoder layer's weights in construction order, in elements, into w: attention
 * (phi3 makes o_proj before qkv_proj), MLP, the two norms, the biases; into q (unless
 * NULL) whether each is an nn.Linear bitsandbytes quantizes: the projections, not the
 * MoE experts' stacked parameters, routers, norms or biases. How many. */
static int decoder_weights(const struct step *s, int64_t *w, unsigned char *q)
{
	const struct layer_params *p = &s->lp;
	const int64_t lp[LAYER_WEIGHTS_MAX] = { p->q,      p->k,    p->v,      p->o,     p->qkv,
						p->gate,   p->up,   p->gate_up, p->down, p->router,
						p->shared_gate, p->shared_up, p->shared_down, p->sinks,
						p->gate_up_bias, p->down_bias, p->router_bias, p->shared_gate_w,
						p->lin_qkvz, p->lin_ba, p->lin_conv, p->lin_dt, p->lin_alog,
						p->lin_norm, p->lin_out,
						p->norm1,  p->norm2, p->q_bias, p->k_bias, p->v_bias,
						p->o_bias, p->q_norm, p->k_norm, p->q_a, p->q_a_norm, p->q_b, p->kv_a,
						p->kv_a_norm, p->kv_b };
	/* lp's order: 1 where the entry is a linear projection's weight */
	static const unsigned char linear[LAYER_WEIGHTS_MAX] = { 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 1, 1, 1, 0, 0, 0, 0, 0,
								 1, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 1,
								 0, 1, 1, 0, 1 };
	int stacked = s->experts && p->router; /* an MoE layer: gate_up and down are the experts' */
	int n = 0;

	for (size_t i = 0; i < LAYER_WEIGHTS_MAX; i++)
		if (lp[i]) { /* 0: the model has none */
			if (q)
				q[n] = linear[i] && !(stacked && (i == 7 || i == 8)); /* gate_up, down */
			w[n++] = lp[i];
		}
	return n;
}

/* A GPT-2 block's: ln_1, c_attn, c_proj, ln_2, c_fc, c_proj, weights and biases (its
 * Conv1D layers are not quantized: q all 0). */
static int gpt2_weights(const struct step *s, int64_t *w, unsigned char *q)
{
	int64_t h = s->hidden, I = s->inter;
	const int64_t blk[] = { h, h, 3 * h * h, 3 * h, h * h, h, h, h, h * I, I, I * h, h };
	int n = 0;

	for (size_t i = 0; i < sizeof(blk) / sizeof(blk[0]); i++) {
		if (q)
			q[n] = 0;
		w[n++] = blk[i];
	}
	return n;
}

/* Each layer kind's weights in construction order (enum layer_kind): every kind's layer
 * is walked op by op alike (layer_forward, plain_layer, layer_backward). */
static int (*const layer_kinds[LAYER_KINDS])(const struct step *s, int64_t *w, unsigned char *q) = {
	[LAYER_DECODER] = decoder_weights,
	[LAYER_GPT2] = gpt2_weights,
};

int layer_weights(const struct step *s, int64_t *w)
{
	return layer_kinds[s->fam->layer](s, w, NULL);
}

/* A layer's weight i of elems elements as loaded: quantized (4-bit or int8, its scales
 * beside) where it is a linear projection and the run's base is quantized. A row's
 * scale counts the larger side of the projection (its output rows are one of them). */
static int64_t loaded_bytes(const struct step *s, int64_t elems, int quantized)
{
	if (!s->quant || !quantized)
		return elems * s->store_bytes;
	int64_t rows = elems / s->hidden > s->hidden ? elems / s->hidden : s->hidden;
	return quant_weight_bytes((enum quant_kind)s->quant, s->double_quant, elems, rows);
}

int layer_gathered(const struct step *s, int64_t *w)
{
	unsigned char q[LAYER_WEIGHTS_MAX];
	int n = layer_kinds[s->fam->layer](s, w, q);

	for (int i = 0; i < n; i++)
		w[i] = s->quant && q[i] ? loaded_bytes(s, w[i], 1) : w[i] * s->weight_bytes;
	return n;
}

/* A norm's weight tensors: the weight, and LayerNorm's bias. */
int norm_tensors(const struct step *s)
{
	return s->fam->norm == NORM_LAYER ? 2 : 1;
}

/* A multimodal model's vision tower, made before its text tower: its weights, which a
 * text-only step gives no gradient (so no optimizer state either). */
static void load_vision(struct step *s, const struct vision_shape *v, struct tlist *params)
{
	int64_t w[VISION_TENSORS_MAX];
	int n = vision_root_tensors(v, 1, w);

	if (s->host_weights) /* offloaded with the rest */
		return;
	for (int i = 0; i < n; i++)
		push(params, tensor(s, w[i] * s->store_bytes));
	n = vision_layer_tensors(v, w);
	for (int64_t l = 0; l < v->layers; l++)
		for (int i = 0; i < n; i++)
			push(params, tensor(s, w[i] * s->store_bytes));
	n = vision_root_tensors(v, 0, w);
	for (int i = 0; i < n; i++)
		push(params, tensor(s, w[i] * s->store_bytes));
}

/* A weight made on the GPU into params, its id; 0 (none) where the weights are kept in
 * host memory. */
static int kept(struct step *s, struct tlist *params, int64_t bytes)
{
	int id;

	if (s->host_weights)
		return 0;
	push(params, id = tensor(s, bytes));
	return id;
}

/* The weights, as load makes them, and which of them train: into trained (NULL: none
 * noted) unless frozen. The embedding (and learned positions), the layers, the final
 * norm, lm_head (when tied, made with its own weight, then tied to the embedding's). */
void load(struct step *s, const struct model_shape *m, const struct train_settings *t, struct tlist *params,
	  struct tlist *trained, int64_t shard)
{
	int64_t lw[LAYER_WEIGHTS_MAX], h = s->hidden;
	unsigned char lq[LAYER_WEIGHTS_MAX];
	int nlw;
	int emb_frozen = t->freeze_embed || (m->tied && t->freeze_head), id;
	struct tlist none = { 0 };

	if (!trained)
		trained = &none;
	load_vision(s, &m->vision, params);
	id = kept(s, params, s->vocab * h * s->store_bytes / shard);
	if (!emb_frozen && id)
		push(trained, id);
	if (s->fam->positions == POS_LEARNED) {
		if ((id = kept(s, params, s->positions * h * s->store_bytes / shard)))
			push(trained, id);
	}
	for (int64_t l = 0; l < s->layers; l++) {
		layer_at(s, l);
		nlw = layer_kinds[s->fam->layer](s, lw, lq);
		for (int i = 0; i < nlw; i++) {
			id = kept(s, params, loaded_bytes(s, lw[i], lq[i]) / shard);
			if (id && !layer_frozen(t, l))
				push(trained, id);
		}
	}
	for (int i = 0; i < norm_tensors(s); i++) {
		if ((id = kept(s, params, h * s->store_bytes)))
			push(trained, id);
	}
	if (!m->tied) {
		id = kept(s, params, s->vocab * h * s->store_bytes / shard);
		if (id && !t->freeze_head)
			push(trained, id);
	} else if (!s->host_weights) {
		drop(s, tensor(s, s->vocab * h * s->store_bytes / shard));
	}
	for (size_t i = 0; i < t->nbuffers; i++)
		for (int64_t c = 0; c < t->buffers[i].count; c++)
			tensor_as(s, (int64_t)t->buffers[i].item_bytes, C_BUFFERS);
	free(none.v);
}
