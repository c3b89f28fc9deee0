/* qwen3_next's full-attention layers (ATTN_GATED_SDPA): q_proj is twice as wide, its
 * second half per head a gate: the chunk reshaped into a contiguous copy, then after
 * sdpa the output times sigmoid(gate) (the sigmoid and the product kept), then o_proj.
 * The rest is ATTN_SDPA's (q's and k's per-head norms, rotary, sdpa). Written against
 * the step and helpers of sim_internal.h. The gating's tensors are made around
 * ATTN_SDPA's ops (before q, k, v, after o_proj): the same bytes, alive over the same
 * ops, but for o_proj's output made a little earlier. */

#include "plan/sim_internal.h"

/* The gate's half of q_proj's output and its contiguous copy: the half goes once
 * copied. Returns the copy. */
static int gate_copy(struct step *s)
{
	int64_t n = s->tokens * s->q_dim;
	int half = tensor(s, s->act_bytes * n), gc = tensor(s, s->act_bytes * n);

	drop(s, half);
	return gc;
}

/* sigmoid(gate) and its product with the attention's output (with autograd: both kept,
 * the product by o_proj). The copy gc goes. */
static void gate_apply(struct step *s, struct tlist *sv, int gc)
{
	int64_t n = s->tokens * s->q_dim;
	int sg = tensor(s, s->act_bytes * n), pr = tensor(s, s->act_bytes * n);

	s->stage = S_OGATE;
	if (sv)
		save(s, sv, sg), save(s, sv, pr), sg = pr = 0;
	drop(s, sg), drop(s, pr), drop(s, gc);
}

int gated_attn_forward(struct step *s, struct layer_fwd *c, struct tlist *sv, int y)
{
	int gc = gate_copy(s);
	int ao = sdpa_attn_forward(s, c, sv, y);

	gate_apply(s, sv, gc);
	return ao;
}

int gated_attn_plain(struct step *s, int y, struct tlist *cache)
{
	int gc = gate_copy(s);
	int ao = sdpa_attn_plain(s, y, cache);

	gate_apply(s, NULL, gc);
	return ao;
}

/* ATTN_SDPA's backward, with the gate's nodes: the product's (the attention output's
 * gradient and the gate's), the sigmoid's, the gate copy's into q_proj's gradient. */
int gated_attn_backward(struct step *s, int gp, struct tlist *sv, struct tlist *grads, int64_t gw_bytes, int *bytes)
{
	int64_t n = s->tokens * s->q_dim, ab = s->act_bytes;
	int ga = tensor(s, ab * n), gs = tensor(s, ab * n);
	int gg = tensor(s, ab * n);

	drop(s, gs);
	release(s, sv, S_OGATE);
	int gi = sdpa_attn_backward(s, gp, sv, grads, gw_bytes, bytes);
	drop(s, ga), drop(s, gg); /* (into the output's and q_proj's gradients) */
	return gi;
}
