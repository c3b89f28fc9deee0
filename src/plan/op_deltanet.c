/* qwen3_next's linear-attention layers (ATTN_DELTANET): Gated DeltaNet on transformers'
 * reference PyTorch path, as 5.17 runs it without flash-linear-attention and
 * causal-conv1d (torch_chunk_gated_delta_rule; the kernels would keep far less).
 * Written against the step and helpers of sim_internal.h. Every size below is of the
 * layer's own widths: kd = key heads x key dim, vd = value heads x value dim, qe =
 * value heads x key dim (q and k repeated to the value heads), chunks of DELTA_CHUNK
 * tokens. */

#include <stdlib.h>

#include "plan/dtype.h"
#include "plan/sim_internal.h"

#define DELTA_CHUNK 64

struct delta {
	int64_t T, B, S, hv, dk, dv, kd, vd, cd, qe, n; /* n: chunks a sequence */
};

static struct delta delta_of(const struct step *s)
{
	struct delta d = { .T = s->tokens, .B = s->batch, .S = s->seq, .hv = s->lin_v_heads, .dk = s->lin_k_dim,
			   .dv = s->lin_v_dim };

	d.kd = s->lin_k_heads * d.dk, d.vd = d.hv * d.dv, d.cd = 2 * d.kd + d.vd, d.qe = d.hv * d.dk;
	d.n = (d.S + DELTA_CHUNK - 1) / DELTA_CHUNK;
	return d;
}

/* A tensor kept for the backward (with sv); without autograd a local to the rule's
 * return (local: into loc), or gone now (rebound). */
static void delta_keep(struct step *s, struct tlist *sv, struct tlist *loc, int id, int local)
{
	if (sv)
		save(s, sv, id);
	else if (local)
		push(loc, id);
	else
		drop(s, id);
}

/* The projections to q, k, v: in_proj_qkvz, in_proj_ba, value and z reshaped out of
 * the projection (copies), q and k reshaped (copies), the three concatenated, turned
 * channels-first (a copy: the conv's input, kept), the depthwise conv (kernel - 1
 * padding; kept by silu), silu; then the cat's inputs go. q, k and v are views of
 * silu's output (its transpose split and reshaped: no copies); beta and g (small), q and
 * k repeated to the value heads (copies, when there are more value heads). The
 * projections, silu's output and the repeats are the module's locals to its return
 * (into out); z into *z, q, k, v into qkv (0: a view of silu's output). */
static void delta_in(struct step *s, struct tlist *sv, struct tlist *out, const struct delta *d, int *z, int *qkv)
{
	int64_t ab = s->act_bytes, h = s->hidden, T = d->T;
	int qz = sv ? linear(s, sv, h, 2 * d->kd + 2 * d->vd, 0, s->lp.lin_qkvz, s->autocast)
		    : plain_linear(s, h, 2 * d->kd + 2 * d->vd, s->lp.lin_qkvz, s->autocast, 0);
	int ba = sv ? linear(s, sv, h, 2 * d->hv, 0, s->lp.lin_ba, s->autocast)
		    : plain_linear(s, h, 2 * d->hv, s->lp.lin_ba, s->autocast, 0);
	int v = tensor(s, ab * T * d->vd);
	*z = tensor(s, ab * T * d->vd);
	int q0 = tensor(s, ab * T * d->kd), k0 = tensor(s, ab * T * d->kd);
	int mixed = tensor(s, ab * T * d->cd);
	push(out, qz), push(out, ba);
	int xt = tensor(s, ab * T * d->cd);
	int conv = tensor(s, ab * d->B * d->cd * (d->S + s->lin_conv - 1));
	delta_keep(s, sv, NULL, xt, 0);
	int act = tensor(s, ab * T * d->cd);
	delta_keep(s, sv, NULL, conv, 0);
	drop(s, mixed), drop(s, q0), drop(s, k0), drop(s, v);
	push(out, act);
	qkv[0] = qkv[1] = qkv[2] = 0;
	int beta = tensor(s, ab * T * d->hv), a32 = tensor(s, DT_FP32 * T * d->hv), g = tensor(s, DT_FP32 * T * d->hv);
	drop(s, a32);
	if (sv)
		save(s, sv, beta), save(s, sv, g);
	else
		push(out, beta), push(out, g);
	for (int i = 0; i < 2 && d->qe != d->kd; i++) /* repeat_interleave to the value heads */
		qkv[i] = tensor(s, ab * T * d->qe);
}

/* The chunked delta rule's set-up: q, k, v transposed and cast to fp32 (copies); q's
 * and k's L2 norms in fp32 (their inputs kept while it trains), q scaled, the three
 * padded to whole chunks (F.pad clones, even by nothing: kept while it trains); v and k
 * times beta; the decay within each chunk, k_beta k^T and q k^T each times it,
 * k_beta x exp(g), the triangular solve's two (value, k_cumdecay), all to the rule's
 * return; the first state and the output's zeros (returned: freed once the output is
 * copied out); q and k times their decays, which rebind the padded q and k. What
 * lives to the rule's return goes into loc; qkv (the module's q and k repeats) into
 * out. */
static int delta_prep(struct step *s, struct tlist *sv, struct tlist *loc, struct tlist *out, const struct delta *d,
		      const int *qkv)
{
	int64_t T = d->T, dm = DT_FP32 * T * d->hv * DELTA_CHUNK;
	const int64_t w[3] = { d->qe, d->qe, d->vd };
	int x[3], n[2], f[3];

	push(out, qkv[0]), push(out, qkv[1]);
	for (int i = 0; i < 3; i++)
		x[i] = tensor(s, DT_FP32 * T * w[i]);
	for (int i = 0; i < 2; i++) { /* x * rsqrt(sum(x * x)) */
		int sq = tensor(s, DT_FP32 * T * d->qe);
		drop(s, sq);
		n[i] = tensor(s, DT_FP32 * T * d->qe);
		delta_keep(s, sv, NULL, x[i], 0);
	}
	int qs = tensor(s, DT_FP32 * T * d->qe); /* q x scale */
	drop(s, n[0]);
	f[0] = tensor(s, DT_FP32 * T * d->qe), f[1] = tensor(s, DT_FP32 * T * d->qe);
	f[2] = tensor(s, DT_FP32 * T * d->vd);
	drop(s, qs), drop(s, n[1]), drop(s, x[2]);
	delta_keep(s, sv, loc, tensor(s, DT_FP32 * T * d->vd), 1); /* v x beta */
	delta_keep(s, sv, loc, tensor(s, DT_FP32 * T * d->qe), 1); /* k x beta */
	int d1 = tensor(s, dm), d2 = tensor(s, dm);
	drop(s, d1);
	delta_keep(s, sv, loc, tensor(s, dm), 1); /* the decay, exp */
	drop(s, d2);
	for (int i = 0; i < 2; i++) { /* k_beta k^T and q k^T, times the decay */
		int p = tensor(s, dm);
		delta_keep(s, sv, loc, tensor(s, dm), 1);
		drop(s, p);
	}
	delta_keep(s, sv, loc, tensor(s, DT_FP32 * T * d->qe), 1); /* k_beta x exp(g) */
	delta_keep(s, sv, loc, tensor(s, DT_FP32 * T * d->vd), 1); /* value */
	delta_keep(s, sv, loc, tensor(s, DT_FP32 * T * d->qe), 1); /* k_cumdecay */
	push(loc, tensor(s, DT_FP32 * d->B * d->hv * d->dk * d->dv)); /* the first state */
	int zeros = tensor(s, DT_FP32 * T * d->hv * d->dv);
	for (int i = 0; i < 2; i++) { /* q x exp(g), k x exp(g_last - g): the padded ones rebound */
		delta_keep(s, sv, loc, tensor(s, DT_FP32 * T * d->qe), 1);
		delta_keep(s, sv, loc, f[i], 0);
	}
	delta_keep(s, sv, loc, f[2], 1);
	return zeros;
}

/* The loop over each sequence's chunks (a Python loop): per chunk k_cumdecay times the
 * state; v_new; the decayed q times the state; the chunk's q k^T (computed before the
 * loop) times v_new; their sum written into the output; the next state (a new one,
 * kept). The decayed q and k and the scores are slices of tensors made before the loop,
 * so each chunk keeps only its v_new and its state: one tensor here; its temporaries
 * another. */
static void delta_loop(struct step *s, struct tlist *sv, struct tlist *loc, const struct delta *d)
{
	int64_t c = DELTA_CHUNK, row = DT_FP32 * d->B * d->hv;
	int64_t kept = row * (c * d->dv + d->dk * d->dv);
	int64_t tmp = row * (3 * c * d->dv + 2 * d->dk * d->dv);

	for (int64_t i = 0; i < d->n; i++) {
		int t = tensor(s, tmp), k = tensor(s, kept);
		drop(s, t);
		delta_keep(s, sv, loc, k, 0);
	}
}

/* The rule's output cast back, the gated RMSNorm over its heads ((w x normed in bf16) x
 * silu(z in fp32), cast: the fp32 input, the bf16 normed times w, z's fp32 copy and its
 * silu kept), out_proj (its input kept while it trains). z goes. Returns out_proj's
 * output. */
static int delta_out(struct step *s, struct tlist *sv, struct tlist *loc, const struct delta *d, int z, int zeros)
{
	int64_t T = d->T, ab = s->act_bytes, u = T * d->vd;
	int o32 = tensor(s, DT_FP32 * u);

	drop(s, zeros);
	int o = tensor(s, ab * u);
	drop(s, o32);
	free_all(s, loc); /* the rule's locals, at its return */
	int x32 = tensor(s, DT_FP32 * u), sq = tensor(s, DT_FP32 * u);
	drop(s, sq), drop(s, o);
	int n32 = tensor(s, DT_FP32 * u), nb = tensor(s, ab * u), wx = tensor(s, ab * u);
	drop(s, n32);
	int z32 = tensor(s, DT_FP32 * u), sz = tensor(s, DT_FP32 * u), pr = tensor(s, DT_FP32 * u);
	drop(s, z);
	int out = tensor(s, ab * u);
	drop(s, pr);
	if (sv) {
		save(s, sv, x32), save(s, sv, nb), save(s, sv, wx), save(s, sv, z32), save(s, sv, sz);
	} else {
		drop(s, x32), drop(s, nb), drop(s, wx), drop(s, z32), drop(s, sz);
	}
	int ao = sv ? linear(s, sv, d->vd, s->hidden, 0, s->lp.lin_out, 0)
		    : plain_linear(s, d->vd, s->hidden, s->lp.lin_out, 0, 0);
	if (sv && s->base_trains)
		save(s, sv, out), out = 0;
	drop(s, out);
	return ao;
}

/* The layer's attention: with autograd when sv (all it keeps of stage S_LIN), else
 * with a cache (inference) its conv state and fp32 recurrent state. The input y goes
 * (0: kept). Returns out_proj's output. */
static int delta_run(struct step *s, struct tlist *sv, int y, struct tlist *cache)
{
	struct delta d = delta_of(s);
	struct tlist loc = { 0 }, out = { 0 };
	int z, qkv[3];

	s->stage = S_QKV_IN;
	delta_in(s, sv, &out, &d, &z, qkv);
	if (!s->autocast)
		drop(s, y);
	s->stage = S_LIN;
	int zeros = delta_prep(s, sv, &loc, &out, &d, qkv);
	delta_loop(s, sv, &loc, &d);
	if (cache) { /* the conv state and the last recurrent state */
		push(cache, tensor_as(s, s->act_bytes * d.B * d.cd * s->lin_conv, C_KV_CACHE));
		push(cache, tensor_as(s, DT_FP32 * d.B * d.hv * d.dk * d.dv, C_KV_CACHE));
	}
	int ao = delta_out(s, sv, &loc, &d, z, zeros);
	free_all(s, &out); /* the module's locals, at its return */
	drop(s, y);
	free(loc.v), free(loc.tag), free(out.v), free(out.tag);
	return ao;
}

int deltanet_forward(struct step *s, struct layer_fwd *c, struct tlist *sv, int y)
{
	(void)c;
	return delta_run(s, sv, y, NULL);
}

int deltanet_plain(struct step *s, int y, struct tlist *cache)
{
	return delta_run(s, NULL, y, cache);
}

/* The backward from the residual stream's gradient (gp 0: not freed): out_proj's, the
 * gated norm's, the loop's chunks last first (each chunk's gradient temporaries, the
 * state's gradient carried), the set-up's (the output's, value's and k_cumdecay's
 * gradients, the triangular solve's and the decay's, q's, k's and v's in fp32, cast
 * back, the repeats summed), the conv's, the projections'; what the layer kept goes
 * once its module's backward is done. Returns the input's gradient. */
int deltanet_backward(struct step *s, int gp, struct tlist *sv, struct tlist *grads, int64_t gw_bytes, int *bytes)
{
	struct delta d = delta_of(s);
	int64_t T = d.T, ab = s->act_bytes, h = s->hidden, u = T * d.vd, dm = DT_FP32 * T * d.hv * DELTA_CHUNK;
	int64_t row = DT_FP32 * d.B * d.hv, c = DELTA_CHUNK;
	const struct layer_params *p = &s->lp;

	weight_grad(s, grads, p->lin_out, gw_bytes);
	int go = tensor(s, ab * u);
	drop(s, gp);
	int g1 = tensor(s, DT_FP32 * u), g2 = tensor(s, DT_FP32 * u), g3 = tensor(s, DT_FP32 * u);
	drop(s, go);
	weight_grad(s, grads, p->lin_norm, gw_bytes);
	int gz = tensor(s, ab * u);
	drop(s, g2);
	int gn = tensor(s, DT_FP32 * u);
	drop(s, g1), drop(s, g3);
	int gcore = tensor(s, DT_FP32 * u);
	drop(s, gn);
	int st = tensor(s, row * d.dk * d.dv);
	for (int64_t i = 0; i < d.n; i++) { /* each chunk's, the state's gradient carried */
		int t = tensor(s, row * (2 * c * c + 4 * c * d.dv + 2 * c * d.dk + 2 * d.dk * d.dv));
		drop(s, t);
	}
	drop(s, st);
	int gv = tensor(s, DT_FP32 * T * d.vd), gkc = tensor(s, DT_FP32 * T * d.qe);
	int gt = tensor(s, dm), gd = tensor(s, dm);
	int gq = tensor(s, DT_FP32 * T * d.qe), gk = tensor(s, DT_FP32 * T * d.qe);
	drop(s, gcore), drop(s, gt), drop(s, gd), drop(s, gkc);
	release(s, sv, S_LIN);
	int cq = tensor(s, ab * T * d.kd), ck = tensor(s, ab * T * d.kd), cv = tensor(s, ab * T * d.vd);
	drop(s, gq), drop(s, gk), drop(s, gv);
	int gact = tensor(s, ab * T * d.cd);
	drop(s, cq), drop(s, ck), drop(s, cv);
	int gconv = tensor(s, ab * d.B * d.cd * (d.S + s->lin_conv - 1));
	drop(s, gact);
	weight_grad(s, grads, p->lin_conv, gw_bytes);
	int gmix = tensor(s, ab * T * d.cd);
	drop(s, gconv);
	weight_grad(s, grads, p->lin_dt, gw_bytes), weight_grad(s, grads, p->lin_alog, gw_bytes);
	int gqz = tensor(s, ab * T * (2 * d.kd + 2 * d.vd));
	drop(s, gmix), drop(s, gz);
	int gi = proj_backward(s, gqz, (int)ab, h, p->lin_qkvz, s->autocast, 0, sv, S_QKV_IN, grads, gw_bytes);
	int gba = tensor(s, ab * T * 2 * d.hv);
	weight_grad(s, grads, p->lin_ba, gw_bytes);
	int gi2 = tensor(s, ab * T * h);
	drop(s, gba), drop(s, gi2); /* added into gi in place */
	*bytes = (int)ab;
	return gi;
}
