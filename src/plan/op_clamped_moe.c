/* gpt_oss's experts (MLP_MOE_CLAMPED) as transformers 5.17 runs them (grouped_mm): the
 * router a linear with a bias, its top k, a softmax over them in their dtype; the
 * tokens' copies sorted by expert (S = tokens x top k), the grouped gate_up (weights
 * stored transposed: no view), its bias gathered a copy each and added in place, the
 * sentinel's masked copy; the clamped GLU over its interleaved halves (gate clamped
 * above, up clamped both ways, gate x alpha, its sigmoid, their product, up + 1, the
 * product); the grouped down, its bias likewise, masked; each copy weighted, unsorted,
 * summed per token. Written against the step and helpers of sim_internal.h. */

#include "plan/dtype.h"
#include "plan/sim_internal.h"

/* The router: what it keeps into sv (keep: for the backward; else freed). */
static void clamped_router(struct step *s, struct tlist *sv, int keep)
{
	int64_t T = s->tokens, h = s->hidden, E = s->experts, ab = s->act_bytes;

	s->stage = S_MLP_IN;
	int rl = keep ? linear(s, sv, h, E, 0, s->lp.router, s->autocast)
		      : plain_linear(s, h, E, s->lp.router, s->autocast, 0);
	int tv = tensor(s, ab * T * s->topk), ti = tensor(s, DT_INT64 * T * s->topk);
	int sm = tensor(s, ab * T * s->topk);
	drop(s, tv), drop(s, rl);
	if (keep)
		save(s, sv, ti), save(s, sv, sm);
	else
		drop(s, ti), drop(s, sm);
}

/* The clamped GLU over the masked gate_up gum (S x 2I): what autograd keeps goes into
 * sv (NULL: none; gum then goes with the GLU). Returns the product. */
static int clamped_glu(struct step *s, struct tlist *sv, int gum, int64_t n)
{
	int64_t eb = s->weight_bytes;
	int gc = tensor(s, eb * n), uc = tensor(s, eb * n), ga = tensor(s, eb * n), sg = tensor(s, eb * n);

	drop(s, ga);
	int glu = tensor(s, eb * n), u1 = tensor(s, eb * n);
	s->stage = S_GATE;
	if (sv)
		save(s, sv, gum), save(s, sv, gc), save(s, sv, sg), gum = gc = sg = 0;
	s->stage = S_MUL;
	if (sv)
		save(s, sv, glu), save(s, sv, u1), glu = u1 = 0;
	int prod = tensor(s, eb * n);
	drop(s, gc), drop(s, sg), drop(s, glu), drop(s, u1), drop(s, uc), drop(s, gum);
	return prod;
}

static int clamped_moe_run(struct step *s, struct tlist *sv, int y)
{
	int64_t T = s->tokens, h = s->hidden, S = T * s->topk, I = s->moe_inter, eb = s->weight_bytes;
	int64_t ab = s->act_bytes;
	int keep = sv != NULL, wtrain = keep && s->base_trains;

	clamped_router(s, sv, keep);
	int ids = tensor(s, DT_INT64 * S), perm = tensor(s, DT_INT64 * S), pk = tensor(s, DT_INT64 * S);
	int sel = tensor(s, eb * S * h), sw = tensor(s, ab * S), sent = tensor(s, DT_BOOL * S);
	if (keep)
		save(s, sv, pk), save(s, sv, sw), save(s, sv, sent), pk = sw = sent = 0;
	s->stage = S_SORTED;
	if (wtrain)
		save(s, sv, sel), sel = 0;
	int gu = tensor(s, eb * S * 2 * I), gb = tensor(s, eb * S * 2 * I); /* the bias's gathered copies */
	drop(s, sel);
	int gum = tensor(s, eb * S * 2 * I);
	drop(s, gu);
	int prod = clamped_glu(s, keep ? sv : NULL, gum, S * I);
	s->stage = S_DOWN;
	int d = tensor(s, eb * S * h);
	if (wtrain)
		save(s, sv, prod), prod = 0;
	drop(s, prod), drop(s, gb);
	int db = tensor(s, eb * S * h), dm = tensor(s, eb * S * h);
	drop(s, d);
	s->stage = S_WEIGH;
	if (keep)
		save(s, sv, dm), dm = 0;
	int wo = tensor(s, eb * S * h), inv = tensor(s, DT_INT64 * S);
	int ro = tensor(s, eb * S * h);
	drop(s, wo);
	int out = tensor(s, eb * T * h);
	drop(s, ro), drop(s, inv), drop(s, ids), drop(s, perm), drop(s, db), drop(s, dm);
	drop(s, pk), drop(s, sw), drop(s, sent), drop(s, y);
	return out;
}

int clamped_moe_forward(struct step *s, struct layer_fwd *c, struct tlist *sv, int y)
{
	(void)c;
	return clamped_moe_run(s, sv, y);
}

int clamped_moe_plain(struct step *s, int y, struct tlist *cache)
{
	(void)cache;
	return clamped_moe_run(s, NULL, y);
}

/* The backward from the MLP output's gradient (gp: 0, the residual stream's, not
 * freed), node by node as moe_backward's, with the biases' gradients (index_put into
 * experts x width) and the clamped GLU's chain. Returns the input's gradient. */
int clamped_moe_backward(struct step *s, int gp, struct tlist *sv, struct tlist *grads, int64_t gw_bytes, int *bytes)
{
	int64_t T = s->tokens, h = s->hidden, S = T * s->topk, I = s->moe_inter, E = s->experts, eb = s->weight_bytes;
	int64_t ab = s->act_bytes;

	int g1 = tensor(s, eb * S * h);
	drop(s, gp);
	int g2 = tensor(s, eb * S * h);
	drop(s, g1);
	int tw = tensor(s, eb * S * h), g3 = tensor(s, eb * S * h), gw = tensor(s, ab * S);
	drop(s, tw), drop(s, g2);
	release(s, sv, S_WEIGH);
	int g4 = tensor(s, eb * S * h);
	drop(s, g3);
	weight_grad(s, grads, s->lp.down_bias, gw_bytes);
	weight_grad(s, grads, s->lp.down, gw_bytes);
	int gpd = tensor(s, eb * S * I);
	drop(s, g4);
	release(s, sv, S_DOWN);
	/* (up + 1) x glu, glu = gate_c x sigmoid, the clamps: S x I each */
	int gu1 = tensor(s, eb * S * I), gglu = tensor(s, eb * S * I);
	drop(s, gpd);
	release(s, sv, S_MUL);
	int gup = tensor(s, eb * S * I), ggc = tensor(s, eb * S * I), gsg = tensor(s, eb * S * I);
	drop(s, gglu), drop(s, gu1);
	int gga = tensor(s, eb * S * I);
	drop(s, gsg);
	int ggs = tensor(s, eb * S * I);
	drop(s, gga), drop(s, ggs); /* added into the clamped gate's in place */
	int ggate = tensor(s, eb * S * I);
	drop(s, ggc);
	int z1 = tensor(s, eb * S * 2 * I), z2 = tensor(s, eb * S * 2 * I);
	drop(s, ggate), drop(s, gup), drop(s, z2); /* the slices' zeros, summed */
	release(s, sv, S_GATE);
	int gm = tensor(s, eb * S * 2 * I);
	drop(s, z1);
	weight_grad(s, grads, s->lp.gate_up_bias, gw_bytes);
	weight_grad(s, grads, s->lp.gate_up, gw_bytes);
	int gs = tensor(s, eb * S * h);
	drop(s, gm);
	release(s, sv, S_SORTED);
	int gx = tensor(s, eb * T * h);
	drop(s, gs);
	/* the routing weights' back through the softmax and the top k */
	int gt = tensor(s, ab * T * s->topk), gl = tensor(s, ab * T * E);
	drop(s, gw), drop(s, gt);
	weight_grad(s, grads, s->lp.router_bias, gw_bytes);
	weight_grad(s, grads, s->lp.router, gw_bytes);
	int gr = tensor(s, ab * T * h);
	drop(s, gl);
	drop(s, gr); /* added into gx in place */
	*bytes = (int)ab;
	return gx;
}
