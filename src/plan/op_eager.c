/* gpt_oss's attention (ATTN_EAGER_SINKS) as transformers 5.17 runs it: its model says
 * _supports_sdpa = False, so with no kernels package it runs eager_attention_forward
 * with a sink logit a head. The scores are batch x heads x seq x seq a layer, sliding
 * layers too (their window only shows in the mask). Written against the step and
 * helpers of sim_internal.h. */

#include "plan/dtype.h"
#include "plan/sim_internal.h"

/* The eager masks: a float batch x 1 x seq x seq mask in the activations' dtype for
 * each kind of layer the model has (full, sliding), each built through a boolean one,
 * made once a forward and held to its end (checkpointed: to the backward's). One tensor
 * stands for them all. Returns it. */
int eager_masks(struct step *s)
{
	int kinds = 1 + (s->sliding_window > 0 && s->sliding_pattern > 1);
	int64_t n = s->batch * s->seq * s->seq;
	int b = tensor(s, DT_BOOL * n);
	int f = tensor(s, kinds * s->act_bytes * n);

	drop(s, b);
	return f;
}

/* The scores' units (batch x heads x seq x seq) and with the sink column's. */
static int64_t eager_scores(const struct step *s, int sink)
{
	return s->batch * s->heads * s->seq * (s->seq + sink);
}

/* The core from the rotated q (a->qe) and k, v (in the cache when there is one), with
 * autograd when sv: k and v repeated to every head (repeat_kv's copies, kept by the
 * products), q k^T, scaled, plus the mask, the sinks concatenated, the row maxima (their
 * indices kept), subtracted, the softmax (kept), the product with v (over the
 * probabilities without the sink column: a view), its transpose made
 * contiguous (o_proj's input, kept by it while its weight trains). The concatenation and
 * the subtraction are the function's locals, gone at its return; the probabilities are
 * its second output, dropped once the attention returns (*probs). Returns o_proj's
 * input. */
static int eager_core(struct step *s, struct tlist *sv, struct attn_live *a, int *probs)
{
	int64_t T = s->tokens, qd = s->q_dim, ab = s->act_bytes, ss = eager_scores(s, 0), ss1 = eager_scores(s, 1);
	int64_t rows = s->batch * s->heads * s->seq;
	int krep = tensor(s, ab * T * qd), vrep = tensor(s, ab * T * qd);

	s->stage = S_SDPA;
	if (sv)
		save(s, sv, a->qe), save(s, sv, krep), save(s, sv, vrep), a->qe = krep = vrep = 0;
	int mm = tensor(s, ab * ss), w1 = tensor(s, ab * ss);
	drop(s, mm);
	int w2 = tensor(s, ab * ss);
	drop(s, w1);
	int cat = tensor(s, ab * ss1);
	int mx = tensor(s, ab * rows), idx = tensor(s, DT_INT64 * rows);
	int sub = tensor(s, ab * ss1);
	drop(s, cat), drop(s, mx);
	if (sv)
		save(s, sv, idx), idx = 0;
	drop(s, idx);
	*probs = tensor(s, ab * ss1);
	s->stage = S_EPROBS;
	if (sv)
		save(s, sv, *probs);
	drop(s, w2); /* dropout (p 0) hands the probabilities' view back: attn_weights rebound */
	/* matmul folds the heads into bmm's batch: the view without the sink column folds
	 * too (rows strided by the sink column), so bmm takes it as it is and keeps the
	 * view (the softmax's output) for v's gradient */
	s->stage = S_EPV;
	int o = tensor(s, ab * T * qd);
	int oc = tensor(s, ab * T * qd);
	drop(s, o), drop(s, sub), drop(s, krep), drop(s, vrep);
	return oc;
}

/* With autograd over the input norm's output y (0 when kept): q, k, v (with their
 * biases), rotated, into the cache with use_cache, the core, o_proj (with its bias).
 * Returns o_proj's output. */
int eager_attn_forward(struct step *s, struct layer_fwd *c, struct tlist *sv, int y)
{
	int64_t h = s->hidden, qd = s->q_dim;
	struct attn_live a;
	int probs;

	lora_input(s, c);
	a.v = qkv_forward(s, sv, &a.q, &a.kk);
	c->ran |= LORA_Q | LORA_K | LORA_V;
	if (!s->autocast)
		drop(s, y);
	rope_forward(s, sv, &a);
	int oc = eager_core(s, sv, &a, &probs);
	s->stage = S_O_IN;
	if (s->base_trains)
		save(s, sv, oc), oc = 0;
	lora_input(s, c);
	int ao = linear(s, sv, qd, h, LORA_O, s->lp.o, 0);
	c->ran |= LORA_O;
	drop(s, oc), drop(s, a.ke), drop(s, a.v), drop(s, a.qe);
	if (!s->base_trains)
		drop(s, probs); /* (kept by the softmax while the base trains) */
	if (s->autocast)
		drop(s, y);
	return ao;
}

/* Without autograd: the same ops, every temporary gone as Python drops it; with a
 * cache, its copies of k and v. Returns o_proj's output; the input goes. */
int eager_attn_plain(struct step *s, int y, struct tlist *cache)
{
	int64_t T = s->tokens, h = s->hidden, qd = s->q_dim, k = s->kv_dim, rq = kv_bytes(s);
	struct attn_live a = { 0 };
	int probs;

	a.v = plain_qkv(s, &a.q, &a.kk);
	position_qk(s, NULL, &a);
	if (cache) {
		push(cache, tensor_as(s, rq * T * k, C_KV_CACHE));
		push(cache, tensor_as(s, rq * T * k, C_KV_CACHE));
		drop(s, a.ke), drop(s, a.v);
		a.ke = a.v = 0;
	}
	int oc = eager_core(s, NULL, &a, &probs);
	int ao = plain_linear(s, qd, h, s->lp.o, 0, LORA_O);
	drop(s, oc), drop(s, probs), drop(s, a.qe), drop(s, a.ke), drop(s, a.v), drop(s, y);
	return ao;
}

/* The backward from the residual stream's gradient (gp 0: not freed) node by node:
 * o_proj's (its bias's gradient), the product's (the scores' and v's gradients), the
 * slice's (zeros with the sink column), the softmax's, the maxima's (zeros scattered,
 * added in place), the sinks' gradient, the scaling's, q k^T's, the repeats' (summed per
 * kv head), the rotations', then v's, k's and q's projections, their inputs' gradients
 * summed. Returns the input's gradient, its bytes a unit in *bytes. */
int eager_attn_backward(struct step *s, int gp, struct tlist *sv, struct tlist *grads, int64_t gw_bytes, int *bytes)
{
	int64_t T = s->tokens, h = s->hidden, qd = s->q_dim, k = s->kv_dim, ab = s->act_bytes;
	int64_t ss = eager_scores(s, 0), ss1 = eager_scores(s, 1), rows = s->batch * s->heads * s->seq;
	const struct layer_params *p = &s->lp;

	weight_grad(s, grads, p->o_bias, gw_bytes);
	int go = proj_backward(s, gp, gp ? (int)ab : s->resid_bytes, qd, p->o, 0, 0, sv, S_O_IN, grads, gw_bytes);
	int gsc = tensor(s, ab * ss), gv = tensor(s, ab * T * qd);
	drop(s, go);
	release(s, sv, S_EPV);
	int gsl = tensor(s, ab * ss1);
	drop(s, gsc);
	int gsm = tensor(s, ab * ss1), gy = tensor(s, ab * ss1); /* and its grad x output */
	drop(s, gy);
	release(s, sv, S_EPROBS);
	drop(s, gsl);
	int neg = tensor(s, ab * ss1); /* the subtraction's, for the maxima, summed */
	int gmx = tensor(s, ab * rows);
	drop(s, neg);
	int z = tensor(s, ab * ss1);
	drop(s, gmx), drop(s, z); /* added into the softmax's gradient in place */
	weight_grad(s, grads, p->sinks, gw_bytes);
	int gw1 = tensor(s, ab * ss);
	drop(s, gsm);
	int gq = tensor(s, ab * T * qd), gk = tensor(s, ab * T * qd);
	drop(s, gw1);
	release(s, sv, S_SDPA);
	gk = remake(s, gk, ab * T * k);
	gv = remake(s, gv, ab * T * k);
	gk = position_backward(s, gk, T * k, ab, NULL, sv, S_KNORM, 0);
	gq = position_backward(s, gq, T * qd, ab, s->rot_last, sv, S_QNORM, 1);
	int acc = proj_backward(s, gv, (int)ab, h, p->v, s->autocast, 0, sv, S_V_IN, grads, gw_bytes);
	int gi = proj_backward(s, gk, (int)ab, h, p->k, s->autocast, 0, sv, S_K_IN, grads, gw_bytes);
	drop(s, gi); /* added into v's in place */
	gi = proj_backward(s, gq, (int)ab, h, p->q, s->autocast, 0, sv, S_QKV_IN, grads, gw_bytes);
	drop(s, gi);
	*bytes = (int)ab;
	return acc;
}
