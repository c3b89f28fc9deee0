/* Multi-head latent attention (ATTN_MLA: deepseek_v3): q through a low-rank pair with
 * its norm (or one q_proj), k and v from a normalized latent (kv_a, kv_b), a one-head
 * rotary key part, sdpa, o_proj; a cache keeps the latents. Written against the step
 * and helpers of sim_internal.h. */

#include "plan/dtype.h"
#include "plan/sim_internal.h"

/* Multi-head latent attention's tensors from the projections to sdpa. */
struct mla_live {
	int q;                    /* q_proj's (q_b_proj's) output, a local to the return */
	int ckv;                  /* kv_a_proj_with_mqa's: the latent and the rope key */
	int kn;                   /* the normalized latent (kv_b_proj's input) */
	int qrot, krot;           /* the rotated parts of q (every head) and of k (one head) */
};

/* The interleaved rotation of a rope part of bytes (a view of its projection: no copy):
 * x1 cos - x2 sin and x1 sin + x2 cos over its even and odd halves, each from two
 * products, then the two concatenated; the halves go once the concatenation exists. */
static int rope_halves(struct step *s, int64_t bytes)
{
	int half[2];

	for (int i = 0; i < 2; i++) {
		int a = tensor(s, bytes / 2), b = tensor(s, bytes / 2);
		half[i] = tensor(s, bytes / 2);
		drop(s, a), drop(s, b);
	}
	int e = tensor(s, bytes);
	drop(s, half[1]), drop(s, half[0]);
	return e;
}

/* Latent attention's projections and rotations (MLA), with autograd (sv) or without
 * (NULL): q (q_a_proj, its norm, q_b_proj; or q_proj), kv_a_proj_with_mqa, the latent's
 * norm, the rope parts' rotations (over q's heads, k's one); with a cache (cache, or in
 * training use_cache) the normalized latent and the rotated key part are copied into it
 * (the latents, not keys and values); without autograd the cache's copies replace them
 * (kv_b_proj reads the cache's). */
static void mla_project(struct step *s, struct tlist *sv, struct mla_live *a, struct tlist *cache)
{
	int64_t T = s->tokens, h = s->hidden, H = s->heads, r = s->rot_dim, ab = s->act_bytes;
	int64_t qr = s->q_lora, kvr = s->kv_lora, ca = s->autocast;

	s->stage = S_QKV_IN;
	if (qr) {
		int qa = sv ? linear(s, sv, h, qr, 0, s->lp.q_a, ca) : plain_linear(s, h, qr, s->lp.q_a, ca, 0);
		int qn = sv ? norm_at(s, sv, T, qr, S_QNORM) : plain_norm(s, T, qr, (int)ab);
		drop(s, qa);
		s->stage = S_MLA_QB;
		a->q = sv ? linear(s, sv, qr, s->q_dim, 0, s->lp.q_b, 0) : plain_linear(s, qr, s->q_dim, s->lp.q_b, 0, 0);
		if (sv && s->base_trains)
			save(s, sv, qn);
		else
			drop(s, qn);
	} else {
		a->q = sv ? linear(s, sv, h, s->q_dim, LORA_Q, s->lp.q, ca) : plain_linear(s, h, s->q_dim, s->lp.q, ca, LORA_Q);
	}
	s->stage = S_K_IN;
	a->ckv = sv ? linear(s, sv, h, kvr + r, 0, s->lp.kv_a, ca) : plain_linear(s, h, kvr + r, s->lp.kv_a, ca, 0);
	a->kn = sv ? norm_at(s, sv, T, kvr, S_KNORM) : plain_norm(s, T, kvr, (int)ab);
	s->stage = S_SDPA;
	a->qrot = rope_halves(s, ab * T * H * r);
	a->krot = rope_halves(s, ab * T * r);
	if (cache) {
		push(cache, tensor_as(s, ab * T * kvr, C_KV_CACHE));
		push(cache, tensor_as(s, ab * T * r, C_KV_CACHE));
		if (!sv) {
			drop(s, a->kn), drop(s, a->krot);
			a->kn = a->krot = 0;
		}
	}
}

/* The attention (ATTN_MLA) with autograd over its input y (0 when kept): the projections
 * and rotations (mla_project), q assembled (cat of the unrotated and rotated parts),
 * kv_b_proj over the latent (keeps it), the key assembled (an empty tensor, the nope
 * part and the one-head rope part copied in), sdpa (keeps q, k, kv_b's output: v is a
 * view of it; its output and log-sum-exp), the output made contiguous (kept by o_proj),
 * o_proj. Returns o_proj's output. */
int mla_attn_forward(struct step *s, struct layer_fwd *c, struct tlist *sv, int y)
{
	int64_t T = s->tokens, h = s->hidden, H = s->heads, qd = s->q_dim, ab = s->act_bytes, vd = s->v_head;
	struct mla_live a;

	lora_input(s, c);
	mla_project(s, sv, &a, s->kv);
	c->ran |= LORA_Q;
	if (!s->autocast)
		drop(s, y);
	int query = tensor(s, ab * T * qd);
	s->stage = S_MLA_KVB;
	int kvb = linear(s, sv, s->kv_lora, H * (s->q_dim / H - s->rot_dim + vd), 0, s->lp.kv_b, 0);
	if (s->base_trains)
		save(s, sv, a.kn);
	else
		drop(s, a.kn);
	int key = tensor(s, ab * T * qd);
	s->stage = S_SDPA;
	save(s, sv, query), save(s, sv, key), save(s, sv, kvb);
	save(s, sv, tensor(s, ab * T * H * vd));                          /* the output, kept by sdpa */
	save(s, sv, tensor(s, DT_FP32 * s->batch * s->heads * s->seq)); /* log-sum-exp */
	int oc = tensor(s, ab * T * H * vd); /* the heads' outputs made contiguous */
	s->stage = S_O_IN;
	if (s->base_trains)
		save(s, sv, oc), oc = 0;
	lora_input(s, c);
	int ao = linear(s, sv, H * vd, h, LORA_O, s->lp.o, 0);
	c->ran |= LORA_O;
	drop(s, oc);
	drop(s, a.q), drop(s, a.ckv), drop(s, a.qrot), drop(s, a.krot); /* locals to the return */
	if (s->autocast)
		drop(s, y);
	return ao;
}

/* The same without autograd (q, k and kv_b's output locals to the return); with a cache
 * it keeps the latents. */
int mla_attn_plain(struct step *s, int y, struct tlist *cache)
{
	int64_t T = s->tokens, h = s->hidden, H = s->heads, qd = s->q_dim, ab = s->act_bytes, vd = s->v_head;
	struct mla_live a;

	mla_project(s, NULL, &a, cache);
	int query = tensor(s, ab * T * qd);
	int kvb = plain_linear(s, s->kv_lora, H * (qd / H - s->rot_dim + vd), s->lp.kv_b, 0, 0);
	int key = tensor(s, ab * T * qd);
	int o = tensor(s, ab * T * H * vd);
	int oc = tensor(s, ab * T * H * vd);
	drop(s, o);
	int ao = plain_linear(s, H * vd, h, s->lp.o, 0, LORA_O);
	drop(s, oc);
	drop(s, a.q), drop(s, a.qrot), drop(s, a.ckv), drop(s, query), drop(s, key), drop(s, kvb);
	drop(s, a.kn), drop(s, a.krot);
	drop(s, y);
	return ao;
}

/* The attention's backward (ATTN_MLA) from the gradient gp of its output (0: the residual
 * stream's), node by node: o_proj's; sdpa's (dq, dk, dv, its workspace); the key's
 * assembly (the rope part's gradient summed over the heads); kv_b's output split (its
 * gradient the nope and v parts' concatenated); kv_b_proj's; q's assembly (the rope part
 * rotated back, its interleaving copy, both parts into q's gradient); q_b_proj's, q's
 * norm's, q_a_proj's (or q_proj's); k's rope part rotated back, the latent's norm, both
 * into kv_a's gradient, kv_a's; the inputs' gradients summed. Returns its input's. */
int mla_attn_backward(struct step *s, int gp, struct tlist *sv, struct tlist *grads, int64_t gw_bytes, int *bytes)
{
	int64_t T = s->tokens, h = s->hidden, H = s->heads, qd = s->q_dim, ab = s->act_bytes, vd = s->v_head;
	int64_t r = s->rot_dim, n = qd / H - r, qr = s->q_lora, kvr = s->kv_lora, ca = s->autocast;
	const struct layer_params *p = &s->lp;
	int ib = (int)ab;

	*bytes = ib;
	int go = proj_backward(s, gp, gp ? ib : s->resid_bytes, H * vd, p->o, 0, 0, sv, S_O_IN, grads, gw_bytes);
	int dq = tensor(s, ab * T * qd), dk = tensor(s, ab * T * qd), dv = tensor(s, ab * T * H * vd);
	int ws = tensor(s, flash_workspace(s));
	drop(s, ws), drop(s, go);
	release(s, sv, S_SDPA);
	int gkr = tensor(s, ab * T * r);
	int gkvb = tensor(s, ab * T * H * (n + vd));
	drop(s, dk), drop(s, dv);
	int gkn = proj_backward(s, gkvb, ib, kvr, p->kv_b, 0, 0, sv, S_MLA_KVB, grads, gw_bytes);
	int gqr = remake(s, rope_bwd_core(s, 0, T * H * r, ab, s->rot_last), ab * T * H * r);
	int gq = tensor(s, ab * T * qd);
	drop(s, dq), drop(s, gqr);
	int gx;
	if (qr) {
		int gqn = proj_backward(s, gq, ib, qr, p->q_b, 0, 0, sv, S_MLA_QB, grads, gw_bytes);
		gqn = rms_backward(s, T * qr, qr, gqn, ib, ib, sv, S_QNORM_W, S_QNORM, 0);
		gx = proj_backward(s, gqn, ib, h, p->q_a, ca, 0, sv, S_QKV_IN, grads, gw_bytes);
	} else {
		gx = proj_backward(s, gq, ib, h, p->q, ca, 0, sv, S_QKV_IN, grads, gw_bytes);
	}
	int gk = remake(s, rope_bwd_core(s, gkr, T * r, ab, NULL), ab * T * r);
	gkn = rms_backward(s, T * kvr, kvr, gkn, ib, ib, sv, S_KNORM_W, S_KNORM, 0);
	int gckv = tensor(s, ab * T * (kvr + r));
	drop(s, gk), drop(s, gkn);
	int gy = proj_backward(s, gckv, ib, h, p->kv_a, ca, 0, sv, S_K_IN, grads, gw_bytes);
	weight_grad(s, grads, p->kv_a_norm, gw_bytes);
	weight_grad(s, grads, p->q_a_norm, gw_bytes);
	release(s, sv, S_QKV_IN);
	return grad_sum(s, gx, gy);
}
