/* A mixture of experts (MLP_MOE) as transformers runs it (grouped_mm): the router
 * (softmax, or sigmoid with a bias), the tokens sorted by expert, the experts' products,
 * the weighting, with a shared expert (plain or gated) where the family has one; and
 * the backward in autograd's order. */

#include <stdlib.h>

#include "plan/dtype.h"
#include "plan/sim_internal.h"

/* The sigmoid group router (ROUTER_SIGMOID_GROUP) over the post-attention norm's output:
 * fp32 copies of the input and the weight (kept by the fp32 linear), the fp32 logits,
 * their sigmoid (kept), the bias-corrected scores, the group mask made over them and
 * applied (a copy of it as scores, two boolean ones), the top experts, their scores
 * gathered (fp32 weights), normalized in place and scaled. The group scores themselves
 * (tokens x groups) are left out: small. What it keeps into sv as moe_router. */
static void sigmoid_router(struct step *s, struct tlist *sv, int keep)
{
	int64_t T = s->tokens, h = s->hidden, E = s->experts, k = s->topk;

	/* (without autograd sv holds the block's locals; the copies go with the linear) */
	s->stage = S_MLP_IN;
	int x32 = tensor(s, DT_FP32 * T * h), w32 = tensor(s, DT_FP32 * E * h);
	int rl = tensor(s, DT_FP32 * T * E);
	if (keep)
		save(s, sv, x32), save(s, sv, w32);
	else
		drop(s, x32), drop(s, w32);
	int sg = tensor(s, DT_FP32 * T * E);
	save(s, sv, sg), save(s, sv, rl); /* (the logits: a local to the block's return) */
	int sc = tensor(s, DT_FP32 * T * E), mk = tensor(s, DT_FP32 * T * E);
	int b1 = tensor(s, DT_BOOL * T * E), b2 = tensor(s, DT_BOOL * T * E);
	drop(s, b1);
	int mf = tensor(s, DT_FP32 * T * E);
	drop(s, b2), drop(s, mk), drop(s, sc);
	int tv = tensor(s, DT_FP32 * T * k), ti = tensor(s, DT_INT64 * T * k);
	drop(s, tv), drop(s, mf);
	save(s, sv, ti);
	int gw = tensor(s, DT_FP32 * T * k), sum = tensor(s, DT_FP32 * T);
	save(s, sv, sum);
	save(s, sv, gw);
	save(s, sv, tensor(s, DT_FP32 * T * k)); /* scaled: the routing weights */
}

/* The router of a mixture-of-experts MLP over the post-attention norm's output (a
 * linear, the softmax in fp32, the top experts and their weights), what it keeps into sv
 * (with keep: for the backward; else locals to the experts' return). */
static void moe_router(struct step *s, struct tlist *sv, int keep)
{
	if (s->fam->router == ROUTER_SIGMOID_GROUP) {
		sigmoid_router(s, sv, keep);
		return;
	}
	int64_t T = s->tokens, h = s->hidden, E = s->experts, rw = s->router_fp32 ? DT_FP32 : s->act_bytes;

	s->stage = S_MLP_IN;
	int rl = keep ? linear(s, sv, h, E, 0, s->lp.router, s->autocast)
		      : plain_linear(s, h, E, s->lp.router, s->autocast, 0);
	if (s->router_fp32) /* router_logits.float() */
		rl = remake(s, rl, DT_FP32 * T * E);
	int sm = tensor(s, DT_FP32 * T * E);
	drop(s, rl);
	int tv = tensor(s, DT_FP32 * T * s->topk), ti = tensor(s, DT_INT64 * T * s->topk), sum = tensor(s, DT_FP32 * T);
	save(s, sv, sm), save(s, sv, ti), save(s, sv, sum);
	if (rw != DT_FP32) {
		int w = tensor(s, rw * T * s->topk);
		save(s, sv, tv);
		tv = w;
	}
	save(s, sv, tv);
}

/* A mixture-of-experts MLP as transformers 5.17 runs it (grouped_mm experts) over the
 * output y of the post-attention norm: the router (a linear, the softmax in fp32, the top
 * experts and their weights), then the tokens' copies sorted by expert (S = tokens x
 * top), the grouped gate_up projection, the gate, the grouped down projection, each
 * copy weighted (mixtral: by fp32 weights, in fp32) and summed back per token. The
 * experts compute in the weights' dtype: fp32 under autocast too (grouped_mm casts its
 * input to the weight's). With sv NULL, without autograd. Returns the MLP's output. */
static int moe_forward(struct step *s, struct tlist *sv)
{
	int64_t T = s->tokens, h = s->hidden, S = T * s->topk, I = s->moe_inter;
	int64_t eb = s->weight_bytes, ab = s->act_bytes, rw = s->router_fp32 ? DT_FP32 : ab;
	int64_t wb = rw > eb ? rw : eb; /* the weighted copies' */
	struct tlist none = { 0 };
	int keep = sv != NULL;

	if (!sv)
		sv = &none;
	moe_router(s, sv, keep);
	int ids = tensor(s, DT_INT64 * S), perm = tensor(s, DT_INT64 * S), pk = tensor(s, DT_INT64 * S);
	save(s, sv, pk);
	/* the sorted copies and the product are kept for the experts' weights' gradients:
	 * not by frozen experts (LoRA's base) */
	int wtrain = keep && s->base_trains;
	int sel = tensor(s, eb * S * h);
	save(s, sv, tensor(s, rw * S)); /* the sorted weights */
	save(s, sv, tensor(s, DT_BOOL * S));      /* the sentinel mask */
	s->stage = S_SORTED;
	if (wtrain || !keep) /* (without autograd: a local to the experts' return) */
		save(s, sv, sel);
	int gu = tensor(s, eb * S * 2 * I), gum = tensor(s, eb * S * 2 * I);
	drop(s, gu);
	if (keep && !wtrain)
		drop(s, sel);
	s->stage = S_GATE;
	save(s, sv, gum);
	int act = tensor(s, eb * S * I);
	s->stage = S_MUL;
	save(s, sv, act);
	s->stage = S_DOWN;
	int prod = tensor(s, eb * S * I);
	if (wtrain)
		save(s, sv, prod);
	if (!keep)
		drop(s, act), drop(s, gum);
	int d = tensor(s, eb * S * h);
	if (!keep)
		drop(s, prod);
	int dm = tensor(s, eb * S * h);
	drop(s, d);
	s->stage = S_WEIGH;
	save(s, sv, dm);
	if (keep && !wtrain)
		drop(s, prod);
	int wo = tensor(s, wb * S * h);
	int inv = tensor(s, DT_INT64 * S), ar = tensor(s, DT_INT64 * S);
	drop(s, ar);
	int ro = tensor(s, wb * S * h);
	drop(s, wo);
	int out = tensor(s, wb * T * h);
	if (keep)
		drop(s, ro);
	else /* without autograd the locals go at the experts' return */
		save(s, sv, ro);
	drop(s, inv), drop(s, ids), drop(s, perm);
	if (wb != s->resid_bytes && wb != ab) { /* .to(hidden_states.dtype) */
		int c = tensor(s, ab * T * h);
		if (keep)
			drop(s, out);
		else
			save(s, sv, out);
		out = c;
	}
	free_all(s, &none);
	free(none.v), free(none.tag);
	return out;
}

/* The router's backward from the routing weights' gradient gw (freed here): back
 * through the top-k and the softmax, the linear (its weight's gradient into grads); the
 * sigmoid group router's through the scaling, the gather (a scatter into scores' size),
 * the sigmoid, the fp32 linear (fp32 gradients of the input's and the weight's copies,
 * cast back). Returns the input's gradient. */
static int router_backward(struct step *s, int gw, struct tlist *grads, int64_t gw_bytes)
{
	int64_t T = s->tokens, h = s->hidden, E = s->experts, ab = s->act_bytes;

	if (s->fam->router == ROUTER_SIGMOID_GROUP) {
		int gt = tensor(s, DT_FP32 * T * s->topk), gsc = tensor(s, DT_FP32 * T * E);
		drop(s, gw), drop(s, gt);
		int gsg = tensor(s, DT_FP32 * T * E);
		drop(s, gsc);
		int gx32 = tensor(s, DT_FP32 * T * h), gw32 = tensor(s, DT_FP32 * E * h);
		drop(s, gsg);
		if (gw_bytes)
			push(grads, tensor_as(s, s->lp.router * gw_bytes, C_GRADS));
		drop(s, gw32);
		return remake(s, gx32, ab * T * h);
	}
	/* the routing weights' gradient back through the top-k and the softmax */
	int gt = tensor(s, DT_FP32 * T * s->topk), gsm = tensor(s, DT_FP32 * T * E);
	drop(s, gw), drop(s, gt);
	int gl = tensor(s, ab * T * E);
	drop(s, gsm);
	if (gw_bytes)
		push(grads, tensor_as(s, s->lp.router * gw_bytes, C_GRADS));
	int gr = tensor(s, ab * T * h);
	drop(s, gl);
	return gr;
}

/* The experts' backward from the MLP output's gradient g (freed here), node by node;
 * their weights' gradients into grads. Returns the gradient of the MLP's input. */
static int moe_backward(struct step *s, int g, struct tlist *sv, struct tlist *grads, int64_t gw_bytes)
{
	int64_t T = s->tokens, h = s->hidden, S = T * s->topk, I = s->moe_inter;
	int64_t eb = s->weight_bytes, ab = s->act_bytes, rw = s->router_fp32 ? DT_FP32 : ab;
	int64_t wb = rw > eb ? rw : eb;

	if (wb != s->resid_bytes && wb != ab) /* the output's cast to the hidden dtype */
		g = remake(s, g, wb * T * h);
	int g1 = tensor(s, wb * S * h); /* the per-token sum's, expanded: a copy for the view */
	drop(s, g);
	int g2 = tensor(s, wb * S * h); /* the unsorting index's: zeros, then scattered */
	drop(s, g1);
	/* the weighting's, for the weights (then summed per copy) and for the masked output
	 * (cast to its dtype when the weights' is wider) */
	int tw = tensor(s, wb * S * h), g3 = tensor(s, wb * S * h);
	if (wb != eb)
		g3 = remake(s, g3, eb * S * h);
	int gw = tensor(s, rw * S);
	drop(s, tw), drop(s, g2);
	release(s, sv, S_WEIGH);
	int g4 = tensor(s, eb * S * h); /* the mask's */
	drop(s, g3);
	if (gw_bytes)
		push(grads, tensor_as(s, s->lp.down * gw_bytes, C_GRADS));
	int gp = tensor(s, eb * S * I);
	drop(s, g4);
	release(s, sv, S_DOWN);
	int gu = tensor(s, eb * S * I), ga = tensor(s, eb * S * I); /* up's, act's */
	drop(s, gp);
	release(s, sv, S_MUL);
	int gg = tensor(s, eb * S * I);
	drop(s, ga);
	release(s, sv, S_GATE);
	int cat = tensor(s, eb * S * 2 * I);
	drop(s, gg), drop(s, gu);
	int c2 = tensor(s, eb * S * 2 * I);
	drop(s, cat);
	if (gw_bytes)
		push(grads, tensor_as(s, s->lp.gate_up * gw_bytes, C_GRADS));
	int gs = tensor(s, eb * S * h);
	drop(s, c2);
	release(s, sv, S_SORTED);
	int gs2 = tensor(s, eb * S * h);
	drop(s, gs);
	int gx = tensor(s, eb * T * h);
	drop(s, gs2);
	int gr = router_backward(s, gw, grads, gw_bytes);
	int gy = tensor(s, ab * T * h);
	drop(s, gr), drop(s, gx);
	return gy;
}

/* A mixture of experts' shared expert (its gated MLP of shared_inter units) over the
 * block's input, which the block keeps: gate, silu (keeps gate), up, the product (keeps
 * act and up), down (keeps the product while its weight trains). With sv NULL, without
 * autograd. Returns down's output. */
static int shared_forward(struct step *s, struct tlist *sv)
{
	int64_t T = s->tokens, h = s->hidden, I = s->shared_inter, ab = s->act_bytes;
	int ca = s->autocast;

	if (!sv) {
		int g = plain_linear(s, h, I, s->lp.shared_gate, ca, 0), a = tensor(s, ab * T * I);
		drop(s, g);
		int u = plain_linear(s, h, I, s->lp.shared_up, ca, 0), p = tensor(s, ab * T * I);
		drop(s, a), drop(s, u);
		int dn = plain_linear(s, I, h, s->lp.shared_down, 0, 0);
		drop(s, p);
		return dn;
	}
	s->stage = S_SH_IN;
	int g = linear(s, sv, h, I, 0, s->lp.shared_gate, ca);
	s->stage = S_SH_GATE;
	save(s, sv, g);
	s->stage = S_SH_MUL;
	save(s, sv, tensor(s, ab * T * I)); /* act(gate) */
	s->stage = S_SH_IN;
	int u = linear(s, sv, h, I, 0, s->lp.shared_up, ca);
	s->stage = S_SH_MUL;
	save(s, sv, u);
	int p = tensor(s, ab * T * I);
	s->stage = S_SH_IN;
	int dn = linear(s, sv, I, h, 0, s->lp.shared_down, 0);
	s->stage = S_SH_DOWN;
	if (s->base_trains)
		save(s, sv, p);
	else
		drop(s, p);
	return dn;
}

/* qwen2_moe's gate on the shared expert's output sh, added to the experts' out (a new
 * tensor; out and the product go): sigmoid(Linear(h, 1)(x)) (the sigmoid kept), its
 * product with sh (which keeps sh). Returns the sum. */
static int shared_gate(struct step *s, struct tlist *sv, int sh, int out)
{
	int64_t T = s->tokens, h = s->hidden, ab = s->act_bytes;

	s->stage = S_SH_IN;
	int gl = sv ? linear(s, sv, h, 1, 0, s->lp.shared_gate_w, s->autocast)
		    : plain_linear(s, h, 1, s->lp.shared_gate_w, s->autocast, 0);
	int sig = tensor(s, ab * T);
	drop(s, gl);
	int p = tensor(s, ab * T * h);
	if (sv) {
		s->stage = S_SH_WEIGH;
		save(s, sv, sig), save(s, sv, sh);
	} else {
		drop(s, sig), drop(s, sh);
	}
	int sum = tensor(s, ab * T * h);
	drop(s, out), drop(s, p);
	return sum;
}

/* A mixture-of-experts block: the shared expert first (gated after: qwen2_moe), the
 * router and the experts (moe_forward), or the shared expert after them, its output
 * added to theirs (a new tensor: deepseek_v3, glm4_moe). With sv NULL, without
 * autograd. Returns the block's output. */
static int moe_block(struct step *s, struct tlist *sv)
{
	int64_t T = s->tokens, h = s->hidden;
	int first = s->shared_inter && s->fam->shared == SHARED_GATED_FIRST;
	int sh = first ? shared_forward(s, sv) : 0;
	int out = moe_forward(s, sv);

	if (first)
		return shared_gate(s, sv, sh, out);
	if (!s->shared_inter)
		return out;
	sh = shared_forward(s, sv);
	int sum = tensor(s, s->act_bytes * T * h);
	drop(s, out), drop(s, sh);
	return sum;
}

/* The experts (MLP_MOE) with autograd over their input y (moe_forward). */
int moe_mlp_forward(struct step *s, struct layer_fwd *c, struct tlist *sv, int y)
{
	(void)c;
	int dn = moe_block(s, sv);

	drop(s, y);
	return dn;
}

/* The shared expert's backward from the gradient g of its output (kept with keep_g:
 * the experts' take it after), node by node as mlp_backward. Returns its input's
 * gradient. */
static int shared_backward(struct step *s, int g, int keep_g, struct tlist *sv, struct tlist *grads, int64_t gw_bytes)
{
	const struct layer_params *p = &s->lp;
	const struct gated_mlp m = { s->shared_inter, p->shared_gate, p->shared_up, p->shared_down,
				     S_SH_DOWN, S_SH_MUL, S_SH_GATE, S_SH_IN, S_SH_IN };
	int bytes;

	return gated_backward(s, &m, keep_g ? 0 : g, (int)s->act_bytes, sv, grads, gw_bytes, &bytes);
}

/* qwen2_moe's shared gate's backward from the block output's gradient g (kept: the
 * experts take it next): the product's (the shared output's gradient, the sigmoid's
 * summed over the hidden units), the sigmoid's, the gate's row's (its input's gradient
 * into *gx). Returns the shared output's gradient. */
static int shared_gate_backward(struct step *s, struct tlist *sv, struct tlist *grads, int64_t gw_bytes, int *gx)
{
	int64_t T = s->tokens, h = s->hidden, ab = s->act_bytes;
	int gsh = tensor(s, ab * T * h), gt = tensor(s, ab * T * h), gsig = tensor(s, ab * T);

	drop(s, gt);
	release(s, sv, S_SH_WEIGH);
	int gl = tensor(s, ab * T);
	drop(s, gsig);
	weight_grad(s, grads, s->lp.shared_gate_w, gw_bytes);
	*gx = tensor(s, ab * T * h);
	drop(s, gl);
	return gsh;
}

/* The experts' backward (MLP_MOE: moe_backward), with the shared expert's where there is
 * one: in the order autograd runs them (the nodes made last first): the gated shared
 * expert's gate, the experts, then its MLP (qwen2_moe); the shared expert, then the
 * experts (deepseek_v3, glm4_moe). */
int moe_mlp_backward(struct step *s, int gp, struct tlist *sv, struct tlist *grads, int64_t gw_bytes, int *bytes)
{
	int gx = 0, gsh, gs;

	*bytes = (int)s->act_bytes;
	if (!s->shared_inter)
		return moe_backward(s, gp, sv, grads, gw_bytes);
	if (s->fam->shared == SHARED_GATED_FIRST) {
		gsh = shared_gate_backward(s, sv, grads, gw_bytes, &gx);
		gx = grad_sum(s, gx, moe_backward(s, gp, sv, grads, gw_bytes));
		gs = shared_backward(s, gsh, 0, sv, grads, gw_bytes);
		return grad_sum(s, gx, gs);
	}
	gs = shared_backward(s, gp, 1, sv, grads, gw_bytes);
	return grad_sum(s, gs, moe_backward(s, gp, sv, grads, gw_bytes));
}

int moe_mlp_plain(struct step *s, int y, struct tlist *cache)
{
	(void)cache;
	int dn = moe_block(s, NULL);

	drop(s, y); /* the MLP's input, replaced by its output */
	return dn;
}
