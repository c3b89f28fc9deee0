/* The gated MLP (MLP_GATED: llama's act(gate) x up, then down; phi3's fused gate_up),
 * with autograd, without, and its backward; a mixture of experts' shared expert runs it
 * too. */

#include "plan/dtype.h"
#include "plan/sim_internal.h"

/* The gated MLP (MLP_GATED) with autograd over its input y (0 when kept): gate and up
 * (fused: one tensor of both), act(gate) and act x up: silu keeps gate, the product
 * keeps act and up, down_proj keeps the product if its weight trains. A recompute that
 * stops early without post-norms stops at the product (down_proj would pack the last):
 * then 0. Returns down_proj's output. */
int gated_mlp_forward(struct step *s, struct layer_fwd *c, struct tlist *sv, int y)
{
	int64_t T = s->tokens, h = s->hidden, I = s->inter, ab = s->act_bytes;
	int g;

	if (s->fam->fused_gate_up) {
		g = linear(s, sv, h, 2 * I, LORA_GATE | LORA_UP, s->lp.gate_up, s->autocast);
		s->stage = S_GATE;
		save(s, sv, g);
		s->stage = S_MUL;
		save(s, sv, tensor(s, ab * T * I)); /* act(gate) */
	} else {
		g = linear(s, sv, h, I, LORA_GATE, s->lp.gate, s->autocast);
		s->stage = S_GATE;
		save(s, sv, g);
		s->stage = S_MUL;
		save(s, sv, tensor(s, ab * T * I)); /* act(gate) */
		s->stage = S_UP_IN;
		int u = linear(s, sv, h, I, LORA_UP, s->lp.up, s->autocast);
		s->stage = S_MUL;
		save(s, sv, u);
	}
	if (!s->autocast)
		drop(s, y);
	int prod = tensor(s, ab * T * I);
	s->stage = S_DOWN;
	if (c->stop && !s->fam->post_norms) {
		save(s, sv, prod);
		return 0;
	}
	c->ran |= LORA_GATE | LORA_UP;
	lora_input(s, c);
	int dn = linear(s, sv, I, h, LORA_DOWN, s->lp.down, 0);
	drop(s, y);
	if (s->base_trains)
		save(s, sv, prod);
	else
		drop(s, prod);
	return dn;
}

/* The MLP's backward (llama's and gemma's: an activation, gate and up apart, trained, no
 * adapters) from the gradient g of its output (g_bytes a unit; freed, 0: the residual
 * stream's, not freed), node by node: down_proj's, act
 * x up's (up's gradient, act's), up_proj's, silu's, gate_proj's, the two inputs'
 * gradients summed (under autocast gate's cast to fp32 added into up's in place).
 * Returns the gradient of the MLP's input and its bytes a unit in *bytes. */
int gated_backward(struct step *s, const struct gated_mlp *m, int g, int g_bytes, struct tlist *sv, struct tlist *grads,
		   int64_t gw_bytes, int *bytes)
{
	int64_t T = s->tokens, h = s->hidden, I = m->inter, ab = s->act_bytes;

	int gd = proj_backward(s, g, g_bytes, I, m->down, 0, 0, sv, m->down_st, grads, gw_bytes);
	int gup = tensor(s, ab * T * I), gact = tensor(s, ab * T * I);
	node_done(s, sv, m->mul_st, gd);
	int gu = proj_backward(s, gup, (int)ab, h, m->up, s->autocast, 0, sv, m->up_st, grads, gw_bytes);
	int gg = tensor(s, ab * T * I);
	node_done(s, sv, m->gate_st, gact);
	int gi = proj_backward(s, gg, (int)ab, h, m->gate, s->autocast, gu, sv, m->in_st, grads, gw_bytes);
	if (gi == gu) {
		*bytes = DT_FP32;
		return gu;
	}
	int sum = tensor(s, ab * T * h);
	drop(s, gu), drop(s, gi);
	*bytes = (int)ab;
	return sum;
}

static int mlp_backward(struct step *s, int g, int g_bytes, struct tlist *sv, struct tlist *grads, int64_t gw_bytes,
			int *bytes)
{
	const struct layer_params *p = &s->lp;
	const struct gated_mlp m = { s->inter, p->gate, p->up, p->down, S_DOWN, S_MUL, S_GATE, S_UP_IN, S_MLP_IN };

	return gated_backward(s, &m, g, g_bytes, sv, grads, gw_bytes, bytes);
}

/* The gated MLP's backward where the traced path (mlp_backward) does not cover it (fused
 * gate_up, adapters, a frozen base): down_proj's node, act x up's, silu's, then gate's
 * and up's (a fused gate_up's gradient the concatenation of both) from the gradient gp
 * of its output (0: the residual stream's, not freed). Returns its input's gradient. */
static int gated_mlp_backward_any(struct step *s, int gp, struct tlist *sv, struct tlist *grads, int64_t gw_bytes)
{
	int64_t T = s->tokens, h = s->hidden, I = s->inter, ab = s->act_bytes;
	const struct layer_params *p = &s->lp;
	int cat = 0;

	weight_grad(s, grads, p->down, gw_bytes);
	adapter_grads(s, grads, 1);
	int t1 = tensor(s, ab * T * I);
	drop(s, gp);
	release(s, sv, S_DOWN);
	int t2 = tensor(s, ab * T * I), t3 = tensor(s, ab * T * I);
	drop(s, t1);
	release(s, sv, S_MUL);
	int t4 = tensor(s, ab * T * I);
	drop(s, t3);
	release(s, sv, S_GATE);
	if (s->fam->fused_gate_up)
		cat = tensor(s, ab * T * 2 * I);
	weight_grad(s, grads, p->gate_up, gw_bytes);
	weight_grad(s, grads, p->up, gw_bytes);
	weight_grad(s, grads, p->gate, gw_bytes);
	int gy = tensor(s, ab * T * h);
	drop(s, t2), drop(s, t4), drop(s, cat);
	return gy;
}

/* The gated MLP's backward (MLP_GATED) from the gradient gp of its output (0: the
 * residual stream's). Returns its input's gradient, its bytes a unit in *bytes. */
int gated_mlp_backward(struct step *s, int gp, struct tlist *sv, struct tlist *grads, int64_t gw_bytes, int *bytes)
{
	int ab = (int)s->act_bytes;

	if (!s->fam->fused_gate_up && s->base_trains && !s->nadapters && gw_bytes)
		return mlp_backward(s, gp, gp ? ab : s->resid_bytes, sv, grads, gw_bytes, bytes);
	*bytes = ab;
	return gated_mlp_backward_any(s, gp, sv, grads, gw_bytes);
}

/* The gated MLP without autograd: down(act(gate(x)) x up(x)); a fused gate_up's output
 * lives until its product. */
int gated_mlp_plain(struct step *s, int y, struct tlist *cache)
{
	(void)cache;
	int64_t T = s->tokens, h = s->hidden, I = s->inter, ab = s->act_bytes;
	int ca = s->autocast, gu = 0, a, u = 0;

	if (s->fam->fused_gate_up) {
		gu = plain_linear(s, h, 2 * I, s->lp.gate_up, ca, LORA_GATE | LORA_UP);
		a = tensor(s, ab * T * I);
	} else {
		int g = plain_linear(s, h, I, s->lp.gate, ca, LORA_GATE);
		a = tensor(s, ab * T * I);
		drop(s, g);
		u = plain_linear(s, h, I, s->lp.up, ca, LORA_UP);
	}
	int p = tensor(s, ab * T * I);
	drop(s, a), drop(s, u), drop(s, gu);
	int dn = plain_linear(s, I, h, s->lp.down, 0, LORA_DOWN);
	drop(s, p);
	drop(s, y); /* the MLP's input, replaced by its output */
	return dn;
}
