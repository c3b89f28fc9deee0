/* llama4_text's mixture of experts (MLP_DENSE_MOE) as transformers 5.17 runs it
 * (Llama4TextMoe, no experts implementation): every expert computes every token, its
 * input weighed by a sigmoid over the top-k router logits (0 elsewhere), the sum over
 * the experts added in place into the shared expert's output. Memory scales with
 * experts x tokens, not top-k x tokens. Written against the step and helpers of
 * sim_internal.h. */

#include "plan/dtype.h"
#include "plan/sim_internal.h"

/* The shared expert's weights and width in the gated MLP's places (lp's gate, up, down;
 * inter) while its ops run; *was keeps what to put back (shared_restore). */
static void shared_swap(struct step *s, struct layer_params *was, int64_t *inter)
{
	*was = s->lp, *inter = s->inter;
	s->lp.gate = s->lp.shared_gate, s->lp.up = s->lp.shared_up, s->lp.down = s->lp.shared_down;
	s->lp.gate_up = 0;
	s->inter = s->shared_inter;
}

static void shared_restore(struct step *s, const struct layer_params *was, int64_t inter)
{
	s->lp = *was, s->inter = inter;
}

/* The router (Llama4Router): its logits (a linear), the top k, a -inf tensor with the
 * top values scattered in, its fp32 copy, the sigmoid (kept), cast back: the scores,
 * tokens x experts. With autograd (keep) what the backward needs goes into sv. Returns
 * the scores; the logits (the layer's second output, dropped at its return) into *rl. */
static int dense_router(struct step *s, struct tlist *sv, int keep, int *rl)
{
	int64_t T = s->tokens, h = s->hidden, E = s->experts, ab = s->act_bytes;

	s->stage = S_MLP_IN;
	*rl = keep ? linear(s, sv, h, E, 0, s->lp.router, s->autocast) : plain_linear(s, h, E, s->lp.router, s->autocast, 0);
	int tv = tensor(s, ab * T * s->topk), ti = tensor(s, DT_INT64 * T * s->topk);
	int full = tensor(s, ab * T * E);
	drop(s, tv);
	int f32 = tensor(s, DT_FP32 * T * E);
	drop(s, full);
	int sig = tensor(s, DT_FP32 * T * E);
	drop(s, f32);
	int sc = tensor(s, ab * T * E);
	s->stage = S_XROUTER;
	if (keep)
		save(s, sv, sig), save(s, sv, ti);
	else
		drop(s, sig), drop(s, ti);
	return sc;
}

/* The MoE over the post-attention norm's output y (0 when kept; with sv NULL, without
 * autograd): the router; the input repeated once an expert (E x T x h), times the scores
 * transposed (a copy, E x T); the experts' gate_up bmm (E x T x 2I), silu of the gate
 * half, its product with the up half, the down bmm (E x T x h); then the shared expert
 * (the gated MLP's ops); the experts' sum (T x h) added into its output in place.
 * Autograd keeps the repeated input and the scores (for each other's gradient), the
 * weighted copies, gate_up, act, the product. Returns the shared expert's output. */
static int dense_moe_run(struct step *s, struct layer_fwd *c, struct tlist *sv, int y)
{
	int64_t T = s->tokens, h = s->hidden, E = s->experts, I = s->moe_inter, ab = s->act_bytes, n = E * T;
	int keep = sv != NULL, wtrain = keep && s->base_trains, rl;
	int sc = dense_router(s, sv, keep, &rl);

	int rep = tensor(s, ab * n * h), sct = tensor(s, ab * n);
	int rin = tensor(s, ab * n * h);
	s->stage = S_XREP;
	if (wtrain) /* (the scores' gradient: the router trains) */
		save(s, sv, rep), rep = 0;
	if (keep)
		save(s, sv, sct), sct = 0;
	drop(s, rep), drop(s, sct);
	int gu = tensor(s, ab * n * 2 * I);
	s->stage = S_XIN;
	if (wtrain)
		save(s, sv, rin), rin = 0;
	int act = tensor(s, ab * n * I), prod = tensor(s, ab * n * I);
	if (keep) {
		s->stage = S_XGATE, save(s, sv, gu);
		s->stage = S_XMUL, save(s, sv, act);
		s->stage = S_XDOWN;
		if (wtrain)
			save(s, sv, prod), prod = 0;
		gu = act = 0;
	}
	drop(s, act);
	int dn = tensor(s, ab * n * h);
	/* the product goes with the bmm, gate_up at the experts' return, the weighted
	 * copies (a local) at the MoE's */
	drop(s, prod), drop(s, gu);

	struct layer_params was;
	int64_t inter;
	shared_swap(s, &was, &inter);
	int out = keep ? gated_mlp_forward(s, c, sv, y) : gated_mlp_plain(s, y, NULL);
	shared_restore(s, &was, inter);
	int sum = tensor(s, ab * T * h);
	drop(s, sum), drop(s, dn), drop(s, sc), drop(s, rl), drop(s, rin);
	return out;
}

int dense_moe_forward(struct step *s, struct layer_fwd *c, struct tlist *sv, int y)
{
	return dense_moe_run(s, c, sv, y);
}

int dense_moe_plain(struct step *s, int y, struct tlist *cache)
{
	(void)cache;
	return dense_moe_run(s, NULL, NULL, y);
}

/* The experts' backward from the sum's gradient ge (the output's gradient expanded and
 * reshaped: a copy, made before the shared expert's), after the shared expert's: the
 * down bmm's, act x up's, silu's,
 * the halves joined, the gate_up bmm's, the weighting's (for the copies, and for the
 * scores through a product summed per copy), the repeat's (summed per token), the
 * router's; their weights' gradients into grads. Returns the input's gradient. */
static int dense_experts_backward(struct step *s, int ge, struct tlist *sv, struct tlist *grads, int64_t gw_bytes)
{
	int64_t T = s->tokens, h = s->hidden, E = s->experts, I = s->moe_inter, ab = s->act_bytes, n = E * T;

	weight_grad(s, grads, s->lp.down, gw_bytes);
	int gp = tensor(s, ab * n * I);
	drop(s, ge);
	release(s, sv, S_XDOWN);
	int gup = tensor(s, ab * n * I), gact = tensor(s, ab * n * I);
	drop(s, gp);
	release(s, sv, S_XMUL);
	int gg = tensor(s, ab * n * I);
	drop(s, gact);
	release(s, sv, S_XGATE);
	int cat = tensor(s, ab * n * 2 * I);
	drop(s, gg), drop(s, gup);
	weight_grad(s, grads, s->lp.gate_up, gw_bytes);
	int gin = tensor(s, ab * n * h);
	drop(s, cat);
	release(s, sv, S_XIN);
	int grep = tensor(s, ab * n * h), t = tensor(s, ab * n * h);
	int gsc = tensor(s, ab * n);
	drop(s, t), drop(s, gin);
	release(s, sv, S_XREP);
	int gx = tensor(s, ab * T * h);
	drop(s, grep);
	/* the router's: the scores' transpose, the cast, the sigmoid, the scatter, the linear */
	int g1 = tensor(s, DT_FP32 * T * E);
	drop(s, gsc);
	int g2 = tensor(s, DT_FP32 * T * E);
	drop(s, g1);
	release(s, sv, S_XROUTER);
	int gl = tensor(s, ab * T * E);
	drop(s, g2);
	weight_grad(s, grads, s->lp.router, gw_bytes);
	int gr = tensor(s, ab * T * h);
	drop(s, gl), drop(s, gr); /* added into gx in place */
	return gx;
}

/* The backward from the residual stream's gradient gp (0: not freed; a family with
 * post-norms would hand its own): autograd runs nodes last made first: the experts'
 * sum's (its gradient expanded to every expert, reshaped: a copy), then the shared
 * expert's (made after the experts'), then the experts'; the input's gradients are
 * summed into the first in place. Returns it, its bytes a unit in *bytes. */
int dense_moe_backward(struct step *s, int gp, struct tlist *sv, struct tlist *grads, int64_t gw_bytes, int *bytes)
{
	struct layer_params was;
	int64_t inter;
	int ge = tensor(s, s->act_bytes * s->experts * s->tokens * s->hidden);

	shared_swap(s, &was, &inter);
	int gy = gated_mlp_backward(s, gp, sv, grads, gw_bytes, bytes);
	shared_restore(s, &was, inter);
	int gx = dense_experts_backward(s, ge, sv, grads, gw_bytes);
	drop(s, gx); /* added into gy in place */
	return gy;
}
