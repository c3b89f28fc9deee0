/* A decoder layer made of its parts: its sublayers' kinds (the attention's and the
 * MLP's rows of struct sublayer_ops) between the pre-norms, post-norms and residual
 * adds, with autograd (what the backward needs, by stage), without, and the layer's
 * backward; a checkpointed layer's recompute. */

#include "plan/dtype.h"
#include "plan/sim_internal.h"

/* The kinds' rows (their tables follow the ops). */
static const struct sublayer_ops *attn_op(const struct step *s);
static const struct sublayer_ops *mlp_op(const struct step *s);

/* The attention's output once the residual add has it: held to the layer's return where
 * the family holds it (attn_out_held: returned, for the caller to drop then), else gone
 * now (0). */
static int attn_out_after_add(struct step *s, int ao)
{
	if (s->fam->attn_out_held)
		return ao;
	drop(s, ao);
	return 0;
}

/* A sublayer's output x multiplied by the family's scalar before the residual add
 * (residual_scale: granite's residual_multiplier): a new tensor; nothing kept. x lives
 * through the add (residual + x * multiplier, then x's name reassigned): into *unscaled,
 * for the caller to drop once the sum exists (0 without the scaling). */
static int branch_scale(struct step *s, int x, int *unscaled)
{
	*unscaled = 0;
	if (!s->fam->residual_scale || !x)
		return x;
	*unscaled = x;
	return tensor(s, s->act_bytes * s->tokens * s->hidden);
}

/* The attention's residual sum h1 once the layer is done with it: kept by the
 * post-attention norm when fp32 (its input), by the MLP's projections without a pre-norm
 * (saved already), else gone. */
static void residual_done(struct step *s, struct tlist *sv, int h1)
{
	s->stage = S_NORM2;
	if (s->resid_bytes == DT_FP32 && !s->fam->no_pre_norms)
		save(s, sv, h1);
	else if (!tlist_has(sv, h1))
		drop(s, h1);
}

/* A checkpointed layer's recompute stopped early (layer_forward): the residual sum its
 * frame held goes with it (residual_done); no output. */
static int recompute_end(struct step *s, struct tlist *sv, int h1)
{
	residual_done(s, sv, h1);
	return 0;
}

/* Whether the next projection's input takes no gradient (layer_fwd's lora0). */
void lora_input(struct step *s, const struct layer_fwd *c)
{
	s->in_nograd = c->lora0 && !(s->lora_targets & c->ran);
}

/* Whether the layer's norm keeps its input itself, whatever the residual stream's dtype
 * (LayerNorm; an RMSNorm keeps its fp32 copy, or its fp32 input). */
int norm_keeps_input(const struct step *s)
{
	return s->fam->norm == NORM_LAYER;
}

/* A sublayer's pre-norm over the residual stream x, what it keeps of stage st; its
 * output kept by the sublayer's first projections (stage in_st) while their weights
 * train (under autocast their casts are, and the norm's output lives to the sublayer's
 * end). Returns the output, 0 once kept. */
static int pre_norm(struct step *s, struct tlist *sv, int x, enum stage st, enum stage in_st)
{
	int y;

	s->stage = st;
	if (norm_keeps_input(s)) {
		save(s, sv, x);
		y = layer_norm(s, sv, s->resid_bytes);
	} else {
		y = norm(s, sv);
	}
	s->nograd_in = 0;
	s->stage = in_st;
	if (s->base_trains && !s->autocast) {
		save(s, sv, y);
		return 0;
	}
	return y;
}

/* What a sublayer takes from the residual stream x: its pre-norm's output (pre_norm), or
 * without pre-norms (no_pre_norms) x itself, kept by the sublayer's first projections
 * (stage in_st) while their weights train (under autocast their bf16 casts are); x
 * stays the caller's. Returns the input, 0 (kept, or x). */
static int sublayer_input(struct step *s, struct tlist *sv, int x, enum stage st, enum stage in_st)
{
	if (!s->fam->no_pre_norms)
		return pre_norm(s, sv, x, st, in_st);
	s->nograd_in = 0;
	s->stage = in_st;
	if (s->base_trains && !s->autocast)
		save(s, sv, x);
	return 0;
}

/* A layer's end after the MLP's output dn: the residual add, then the MLP's input y
 * (when the MLP left it) goes; the attention's residual sum kept by the post-attention
 * norm when fp32 (a LayerNorm kept it already). Returns the layer's output. */
static int residual_end(struct step *s, struct tlist *sv, int dn, int y, int h1)
{
	int out = tensor(s, s->resid_bytes * s->tokens * s->hidden);

	drop(s, dn), drop(s, y);
	if (!norm_keeps_input(s))
		residual_done(s, sv, h1);
	return out;
}

/* One decoder layer's forward for training, op by op as the family describes it (the
 * attention's and the MLP's kinds from sim_ops, post-norms where it has them): what the
 * backward pass needs goes into sv. A frozen layer (frozen) keeps what its input's
 * gradient needs and nothing for its weights', as LoRA's frozen base does: autograd
 * saves a product's operand only for the other operand's gradient. An input without a
 * gradient to take (s->nograd_in, cleared here) is kept by nothing of this layer.
 * Returns the layer's output (0: a recompute stopped early). */
int layer_forward(struct step *s, int in, struct tlist *sv, int frozen)
{
	struct layer_fwd c = { .in = in, .nograd = s->nograd_in };
	int base_trains = s->base_trains, out = 0;

	/* a checkpointed layer's recompute, traced where its end is plain: bf16 or fp32
	 * weights, trained, dense */
	c.stop = s->early_stop && !frozen && base_trains && !s->nadapters && !s->autocast && mlp_op(s)->stops;
	if (frozen)
		s->base_trains = 0;
	c.lora0 = c.nograd && !s->base_trains;
	int y = sublayer_input(s, sv, in, S_NORM1, S_QKV_IN);
	int ao = attn_op(s)->forward(s, &c, sv, y);
	int unscaled;
	ao = branch_scale(s, post_norm(s, sv, ao, S_PNORM1), &unscaled);
	c.h1 = tensor(s, s->resid_bytes * s->tokens * s->hidden);
	int held = attn_out_after_add(s, ao);
	drop(s, unscaled), drop(s, y); /* (y: when the attention left it) */
	/* fp32: the norm keeps its input */
	if (s->resid_bytes == DT_FP32 && !c.nograd && !norm_keeps_input(s) && !s->fam->no_pre_norms) {
		s->stage = S_NORM1;
		save(s, sv, in);
	}
	y = sublayer_input(s, sv, c.h1, S_NORM2, S_MLP_IN);
	lora_input(s, &c);
	int dn = mlp_op(s)->forward(s, &c, sv, y);
	if (dn) {
		s->in_nograd = 0;
		s->early_stop = c.stop ? 2 : 0; /* a post-norm's product packs the last */
		dn = branch_scale(s, post_norm(s, sv, dn, S_PNORM2), &unscaled);
		s->early_stop = 0;
	}
	if (c.stop)
		recompute_end(s, sv, c.h1);
	else
		out = residual_end(s, sv, dn, y, c.h1);
	drop(s, unscaled), drop(s, held);
	s->base_trains = base_trains;
	return out;
}

/* A sublayer's pre-norm's backward by the norm's kind (norm_backward's; LayerNorm's
 * weight gradients come with it). */
static int pre_norm_backward(struct step *s, int g, int g_bytes, struct tlist *sv, enum stage w_st, enum stage st,
			     int gres, struct tlist *grads, int64_t gw_bytes)
{
	if (s->fam->norm == NORM_LAYER)
		return layer_norm_backward(s, g, sv, st, gres, grads, gw_bytes);
	return norm_backward(s, g, g_bytes, sv, w_st, st, gres);
}

/* A sublayer's input's gradient g (g_bytes a unit) into the residual stream's, gres:
 * through its pre-norm (pre_norm_backward), or without pre-norms added into gres in
 * place (autograd accumulates into the buffer it alone holds), cast to its dtype first.
 * Returns gres. */
static int sublayer_input_backward(struct step *s, int g, int g_bytes, struct tlist *sv, enum stage w_st,
				   enum stage st, int gres, struct tlist *grads, int64_t gw_bytes)
{
	if (!s->fam->no_pre_norms)
		return pre_norm_backward(s, g, g_bytes, sv, w_st, st, gres, grads, gw_bytes);
	if (g_bytes != s->resid_bytes)
		g = remake(s, g, s->resid_bytes * s->tokens * s->hidden);
	drop(s, g);
	return gres;
}

/* The gradient of a scaled sublayer output (branch_scale's): the residual stream's times
 * the scalar, a new tensor of the activations' dtype (0 without residual_scale: the
 * residual stream's own). */
static int branch_scale_backward(struct step *s)
{
	return s->fam->residual_scale ? tensor(s, s->act_bytes * s->tokens * s->hidden) : 0;
}

/* One decoder layer's backward, op by op in the forward's reverse, node by node as
 * autograd runs them: the MLP's post-norm (where the family has one), the MLP's, its
 * norm's; the attention's post-norm, the attention's, its norm's; then the biases' and
 * norms' weight gradients (into grads, which live to the optimizer step). What the
 * layer saved (sv) goes stage by stage as each node has run. */
int layer_backward(struct step *s, int gres, struct tlist *sv, struct tlist *grads, int64_t gw_bytes)
{
	const struct layer_params *p = &s->lp;
	int gy, gy_bytes;
	int gp = 0; /* the sublayer output's gradient, its post-norm's */

	if (s->fam->post_norms)
		gp = post_norm_backward(s, gres, sv, S_PNORM2_W, S_PNORM2);
	else
		gp = branch_scale_backward(s);
	gy = mlp_op(s)->backward(s, gp, sv, grads, gw_bytes, &gy_bytes);
	release(s, sv, S_UP_IN), release(s, sv, S_MLP_IN);
	gres = sublayer_input_backward(s, gy, gy_bytes, sv, S_NORM2_W, S_NORM2, gres, grads, gw_bytes);
	gp = s->fam->post_norms ? post_norm_backward(s, gres, sv, S_PNORM1_W, S_PNORM1) : branch_scale_backward(s);
	gy = attn_op(s)->backward(s, gp, sv, grads, gw_bytes, &gy_bytes);
	int gx = sublayer_input_backward(s, gy, gy_bytes, sv, S_NORM1_W, S_NORM1, gres, grads, gw_bytes);
	weight_grad(s, grads, p->k_norm, gw_bytes);
	weight_grad(s, grads, p->q_norm, gw_bytes);
	weight_grad(s, grads, p->v_bias, gw_bytes);
	weight_grad(s, grads, p->k_bias, gw_bytes);
	weight_grad(s, grads, p->q_bias, gw_bytes);
	weight_grad(s, grads, p->norm2, gw_bytes);
	weight_grad(s, grads, p->norm1, gw_bytes);
	return gx;
}

/* A sublayer's pre-norm over the residual stream without autograd. */
static int plain_pre_norm(struct step *s)
{
	if (s->fam->no_pre_norms) /* the sublayer takes the residual stream itself */
		return 0;
	if (s->fam->norm == NORM_LAYER)
		return layer_norm(s, NULL, s->resid_bytes);
	return plain_norm(s, s->tokens, s->hidden, s->resid_bytes);
}

/* One decoder layer's forward keeping nothing for a backward pass (inference, the first
 * forward of a checkpointed layer, a frozen layer with nothing before it to train), op
 * by op as layer_forward: every temporary is freed as soon as Python drops it; with a
 * cache, the layer's keys and values go into it (copies: the cache concatenates onto
 * its empty start). Returns the output; the caller frees the input. */
int plain_layer(struct step *s, int in, struct tlist *cache)
{
	int64_t T = s->tokens, h = s->hidden;

	(void)in;
	int y = plain_pre_norm(s);
	int ao = attn_op(s)->plain(s, y, cache);
	int unscaled;
	ao = branch_scale(s, post_norm(s, NULL, ao, S_PNORM1), &unscaled);
	int h1 = tensor(s, s->resid_bytes * T * h);
	int held = attn_out_after_add(s, ao);
	drop(s, unscaled), drop(s, y); /* (y: when the attention left it to the residual add) */
	y = plain_pre_norm(s);
	int dn = mlp_op(s)->plain(s, y, NULL);
	dn = branch_scale(s, post_norm(s, NULL, dn, S_PNORM2), &unscaled);
	int out = tensor(s, s->resid_bytes * T * h);
	drop(s, dn), drop(s, unscaled), drop(s, y), drop(s, h1), drop(s, held);
	return out;
}

static const struct sublayer_ops attn_kinds[ATTN_KINDS] = {
	[ATTN_SDPA] = { sdpa_attn_forward, sdpa_attn_plain, sdpa_attn_backward, 0 },
	[ATTN_GPT2] = { gpt2_attn_forward, gpt2_attn_plain, gpt2_attn_backward, 0 },
	[ATTN_EAGER_SINKS] = { eager_attn_forward, eager_attn_plain, eager_attn_backward, 0 },
	[ATTN_GATED_SDPA] = { gated_attn_forward, gated_attn_plain, gated_attn_backward, 0 },
	[ATTN_DELTANET] = { deltanet_forward, deltanet_plain, deltanet_backward, 0 },
	[ATTN_MLA] = { mla_attn_forward, mla_attn_plain, mla_attn_backward, 0 },
};

/* (a recompute stops early where traced: in the gated MLP) */
static const struct sublayer_ops mlp_kinds[MLP_KINDS] = {
	[MLP_GATED] = { gated_mlp_forward, gated_mlp_plain, gated_mlp_backward, 1 },
	[MLP_GELU] = { gelu_mlp_forward, gelu_mlp_plain, gelu_mlp_backward, 0 },
	[MLP_MOE] = { moe_mlp_forward, moe_mlp_plain, moe_mlp_backward, 0 },
	[MLP_DENSE_MOE] = { dense_moe_forward, dense_moe_plain, dense_moe_backward, 0 },
	[MLP_MOE_CLAMPED] = { clamped_moe_forward, clamped_moe_plain, clamped_moe_backward, 0 },
};

static const struct sublayer_ops *attn_op(const struct step *s)
{
	return &attn_kinds[s->attn];
}

static const struct sublayer_ops *mlp_op(const struct step *s)
{
	return &mlp_kinds[s->mlp];
}
