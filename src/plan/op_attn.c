/* The attention (ATTN_SDPA, and what other attention kinds share of it): q, k and v
 * projected (with q's and k's per-head norms), sdpa and o_proj, with autograd, without
 * (a cache takes the keys and values), and the backward node by node. */

#include "plan/dtype.h"
#include "plan/pytorch.h"
#include "plan/sim_internal.h"

/* Whether sdpa gets k and v repeated to every query head (with a mask:
 * sdpa_attn_forward says why). */
static int kv_repeated(const struct step *s)
{
	return s->mask_bytes && s->kv_heads < s->heads;
}

/* Units of a token's k and v as sdpa gets them: repeated, q's. */
static int64_t kv_units(const struct step *s)
{
	return kv_repeated(s) ? s->q_dim : s->kv_dim;
}

/* Whether the repeated k and v are copies (repeat_kv's, of more than one kv head; one
 * kv head repeats as a view). */
static int kv_copies(const struct step *s)
{
	return kv_repeated(s) && s->kv_heads > 1;
}

/* Bytes an element of q and k as their norms leave them (qwen3's; gemma's cast back). */
int64_t qk_bytes(const struct step *s)
{
	int normed = s->fam->qk_norm != QK_NORM_NONE && s->fam->qk_norm != QK_NORM_L2; /* (L2: type_as) */
	return normed && s->fam->norm == NORM_RMS ? norm_out_bytes(s, s->act_bytes) : s->act_bytes;
}

/* Bytes an element of the rotated q and k, and of the cache's keys and values: fp32
 * under autocast (cos and sin are). */
int64_t kv_bytes(const struct step *s)
{
	return s->autocast && !s->fam->rope_fp32 ? DT_FP32 : qk_bytes(s);
}

/* The rows a token's q or k (of heads heads) is normalized in: a head each (qwen3's,
 * gemma3's), or one spanning the projection (qk_norm_full: olmo2's). */
static int64_t qk_norm_rows(const struct step *s, int64_t heads)
{
	return s->fam->qk_norm_full ? 1 : heads;
}

/* q's or k's norm over the tokens' heads x dim units (per head, or the whole projection),
 * what it keeps of stage st: x goes, the norm's output comes back. */
static int head_norm(struct step *s, struct tlist *sv, int x, int64_t heads, int64_t dim, enum stage st)
{
	int64_t rows = qk_norm_rows(s, heads);
	int n = norm_at(s, sv, s->tokens * rows, dim / rows, st);

	drop(s, x);
	return n;
}

/* q, k and v projected from the attention's input: one fused qkv (q, k and v its views),
 * or each apart with q's and k's per-head norms where the family has them (as each
 * projection returns, or after all three). Returns v (fused: qkv); q and k into *q, *kk
 * (0 when fused). */
int qkv_forward(struct step *s, struct tlist *sv, int *q, int *kk)
{
	int64_t h = s->hidden, qd = s->q_dim, k = s->kv_dim;
	int each = s->fam->qk_norm == QK_NORM_EACH;

	*q = *kk = 0;
	if (s->fam->fused_qkv)
		return linear(s, sv, h, qd + 2 * k, LORA_Q | LORA_K | LORA_V, s->lp.qkv, s->autocast);
	*q = linear(s, sv, h, qd, LORA_Q, s->lp.q, s->autocast);
	if (each)
		*q = head_norm(s, sv, *q, s->heads, qd, S_QNORM);
	s->stage = S_K_IN;
	*kk = linear(s, sv, h, k, LORA_K, s->lp.k, s->autocast);
	if (each)
		*kk = head_norm(s, sv, *kk, s->kv_heads, k, S_KNORM);
	s->stage = S_V_IN;
	int v = linear(s, sv, h, k, LORA_V, s->lp.v, s->autocast);
	s->stage = S_QKV_IN;
	if (s->fam->qk_norm == QK_NORM_AFTER) {
		*q = head_norm(s, sv, *q, s->heads, qd, S_QNORM);
		*kk = head_norm(s, sv, *kk, s->kv_heads, k, S_KNORM);
	}
	return v;
}

/* sdpa's output takes q's layout: a q that the rotation concatenated (with a
 * pass-through or an unrotated part) is batch x heads x seq, so the output's
 * transpose().contiguous() before o_proj is a copy; a q rotated elementwise keeps its
 * projection's batch x seq x heads, and the transpose is contiguous already. */
static int attn_out_copied(const struct step *s)
{
	return s->rope_on && (s->fam->rope_pass_copy || s->rot_dim);
}

int sdpa_keeps_cache(const struct step *s)
{
	return !s->autocast && !kv_copies(s);
}

/* sdpa with autograd: what it keeps (q, k, v as it gets them: under autocast its bf16
 * casts; with a mask k and v repeated; the mask's bias; its output and log-sum-exp; in
 * fp32 the math kernel's probabilities). */
static void sdpa_forward(struct step *s, struct tlist *sv, struct attn_live *a, int copies)
{
	int64_t T = s->tokens, qd = s->q_dim, ab = s->act_bytes, rq = kv_bytes(s), ku = kv_units(s);
	int krep = copies ? tensor(s, rq * T * qd) : 0, vrep = copies ? tensor(s, (s->kv ? rq : ab) * T * qd) : 0;

	if (s->autocast) { /* sdpa's bf16 casts (of the cache's fp32 v too; a bf16 v is kept as it is) */
		if (s->kv)
			save(s, sv, tensor(s, DT_BF16 * T * ku));
		else if (vrep)
			save(s, sv, vrep), vrep = 0;
		save(s, sv, tensor(s, DT_BF16 * T * ku));
		save(s, sv, tensor(s, DT_BF16 * T * qd));
		drop(s, a->ke);
		a->ke = 0;
	} else {
		save(s, sv, a->qe);
		if (copies)
			save(s, sv, krep), save(s, sv, vrep), krep = vrep = 0;
		else if (a->ke)
			save(s, sv, a->ke), a->ke = 0;
	}
	int bias = s->mask_bytes ? tensor(s, s->mask_bytes) : 0;
	if (bias && !s->fp32) /* (the math kernel adds it and keeps nothing of it) */
		save(s, sv, bias), bias = 0;
	save(s, sv, tensor(s, ab * T * qd));                 /* attention output, kept by sdpa */
	save(s, sv, tensor(s, DT_FP32 * s->batch * s->heads * s->seq)); /* log-sum-exp */
	if (s->fp32) /* fp32 sdpa runs the math kernel, which keeps the probabilities */
		save(s, sv, tensor(s, DT_FP32 * s->batch * s->heads * s->seq * s->seq));
	drop(s, bias), drop(s, krep), drop(s, vrep);
}

/* The attention (ATTN_SDPA) with autograd over its input y (the norm's output, 0 when
 * kept): q, k, v, their rotation, sdpa, o_proj. With a mask sdpa is handed k and v
 * repeated to every query head (transformers leaves grouped queries to sdpa only without
 * one): views of one kv head, copies (repeat_kv's) of more, which live to sdpa's return.
 * Returns o_proj's output. */
int sdpa_attn_forward(struct step *s, struct layer_fwd *c, struct tlist *sv, int y)
{
	int64_t T = s->tokens, h = s->hidden, qd = s->q_dim, ab = s->act_bytes;
	struct attn_live a;
	int copies = kv_copies(s);

	lora_input(s, c);
	a.v = qkv_forward(s, sv, &a.q, &a.kk);
	c->ran |= LORA_Q | LORA_K | LORA_V;
	s->stage = S_SDPA;
	if (!s->kv && !copies) /* sdpa keeps v (fused: a slice, all of qkv) */
		save(s, sv, a.v);
	if (!s->autocast) /* (under autocast the fp32 norm output lives to the attention's end) */
		drop(s, y);
	rope_forward(s, sv, &a);
	sdpa_forward(s, sv, &a, copies);
	/* the output copied (attn_out_copied), kept by o_proj for its weight's gradient */
	int oc = attn_out_copied(s) ? tensor(s, ab * T * qd) : 0;
	if (oc && s->base_trains)
		save(s, sv, oc), oc = 0;
	s->stage = S_O_IN;
	lora_input(s, c);
	int ao = linear(s, sv, qd, h, LORA_O, s->lp.o, 0);
	c->ran |= LORA_O;
	drop(s, oc);
	/* at the attention's return: a fused qkv, a v that sdpa had copies of */
	if ((s->fam->fused_qkv && s->kv) || (copies && !s->kv))
		drop(s, a.v);
	drop(s, a.ke);
	if (s->autocast) /* the fp32 rotated q and norm output, there too */
		drop(s, a.qe), drop(s, y);
	return ao;
}

/* Flash attention's backward workspace, one block: dq accumulated in fp32, with grouped
 * query attention dk and dv for every query head (bf16) before they are summed per kv
 * head, and the softmax's row sums; sizes as the H200's allocator histories show them
 * (32.5 MiB for 8 x 1024 tokens of 16 heads of 64; 64.5 MiB with 4 kv heads; without
 * grouping where k and v come repeated). The math kernel (fp32) works otherwise: its
 * dq-sized fp32 temporary stands for it. */
int64_t flash_workspace(const struct step *s)
{
	int64_t b = DT_FP32 * s->tokens * s->q_dim;

	if (s->fp32)
		return b;
	if (s->kv_heads < s->heads && !kv_repeated(s))
		b += 2 * DT_BF16 * s->tokens * s->q_dim;
	return b + DT_FP32 * s->batch * s->heads * s->seq + pytorch_constants()->flash_bwd_extra;
}

/* A head-major gradient (g, of heads heads, bytes in all) taken back to the projection's
 * token-major view: a copy (g freed) unless one head makes it a view. */
static int view_copy(struct step *s, int g, int64_t heads, int64_t bytes)
{
	return heads < 2 ? g : remake(s, g, bytes);
}

/* The attention's backward (q, k and v apart, trained, no adapters, no biases, no mask:
 * sdpa's efficient kernels) from the gradient g of its output (g_bytes a unit; freed, 0:
 * the residual stream's, not freed), node by node as traced: o_proj's; sdpa's (dq, dk,
 * dv, then its workspace); under autocast q's and k's casts back to fp32 (and v's from
 * the cache's fp32 copy, then to v's dtype); k's rotation, q's; v's projection; then k's
 * norm (qwen3's, gemma3's) and projection, q's; each projection from its gradient's
 * view (view_copy), their inputs' gradients summed (under autocast k's and q's added in
 * place into v's fp32 one; else v's and k's added, q's into the sum). Returns the
 * gradient of the attention's input and its bytes a unit in *bytes. */
static int attn_backward(struct step *s, int g, int g_bytes, struct tlist *sv, struct tlist *grads, int64_t gw_bytes,
			 int *bytes)
{
	int64_t T = s->tokens, h = s->hidden, qd = s->q_dim, k = s->kv_dim, ab = s->act_bytes, rq = kv_bytes(s);
	int qb = (int)qk_bytes(s);
	const struct layer_params *p = &s->lp;

	int64_t ku = kv_units(s); /* k and v as sdpa had them: repeated with a mask */
	int go = proj_backward(s, g, g_bytes, qd, p->o, 0, 0, sv, S_O_IN, grads, gw_bytes);
	int dq = tensor(s, ab * T * qd), dk = tensor(s, ab * T * ku), dv = tensor(s, ab * T * ku);
	int ws = tensor(s, flash_workspace(s));
	drop(s, ws), drop(s, go);
	release(s, sv, S_SDPA);
	int vb = s->kv ? rq : ab; /* v from the cache's copy, in k's dtype */
	if (rq != ab) { /* sdpa's casts of the fp32 rotated q and k (and the cache's v) */
		dq = remake(s, dq, rq * T * qd);
		dk = remake(s, dk, rq * T * ku);
		if (vb != ab)
			dv = remake(s, dv, vb * T * ku);
	}
	if (ku != k) { /* repeat_kv's backward: the copies' gradients summed per kv head */
		dv = remake(s, dv, vb * T * k);
		dk = remake(s, dk, rq * T * k);
	}
	if (vb != ab) /* to v's dtype */
		dv = remake(s, dv, ab * T * k);
	int64_t rb = rq;
	if (s->fam->rope_fp32 && s->rope_on) { /* the casts back's backward, k's first: to fp32 */
		dk = remake(s, dk, DT_FP32 * T * k);
		dq = remake(s, dq, DT_FP32 * T * qd);
		rb = DT_FP32;
	}
	int gk = position_backward(s, dk, T * k, rb, NULL, sv, S_KNORM, 0);
	int gq = position_backward(s, dq, T * qd, rb, s->rot_last, sv, S_QNORM, 1);
	/* q's and k's norms are over a head, or over the projection */
	int64_t qn = qd / qk_norm_rows(s, s->heads), kn = k / qk_norm_rows(s, s->kv_heads);
	if (s->fam->qk_norm == QK_NORM_AFTER) { /* normalized after all three projections: first back */
		gk = rms_backward(s, T * k, kn, gk, qb, (int)ab, sv, S_KNORM_W, S_KNORM, 0);
		gq = rms_backward(s, T * qd, qn, gq, qb, (int)ab, sv, S_QNORM_W, S_QNORM, 0);
	}
	/* sdpa's dv already has v_proj's token-major layout where nothing was repeated or
	 * cast (traced: a checkpointed qwen3-14b in bf16); from a cache's copy or repeat_kv's
	 * sum it is head-major */
	int vw = s->kv || ku != k ? view_copy(s, dv, s->kv_heads, ab * T * k) : dv;
	int acc = p->v_bias ? addmm_backward(s, vw, h, p->v, p->v_bias, sv, S_V_IN, grads, gw_bytes)
			    : proj_backward(s, vw, (int)ab, h, p->v, s->autocast, 0, sv, S_V_IN, grads, gw_bytes);
	if (s->fam->qk_norm == QK_NORM_EACH)
		gk = rms_backward(s, T * k, kn, gk, qb, (int)ab, sv, S_KNORM_W, S_KNORM, 0);
	int kw = view_copy(s, gk, s->kv_heads, ab * T * k);
	int gi = p->k_bias ? addmm_backward(s, kw, h, p->k, p->k_bias, sv, S_K_IN, grads, gw_bytes)
			   : proj_backward(s, kw, (int)ab, h, p->k, s->autocast, s->autocast ? acc : 0, sv, S_K_IN, grads,
					   gw_bytes);
	if (gi != acc) {
		int sum = tensor(s, ab * T * h);
		drop(s, acc), drop(s, gi);
		acc = sum;
	}
	if (s->fam->qk_norm == QK_NORM_EACH)
		gq = rms_backward(s, T * qd, qn, gq, qb, (int)ab, sv, S_QNORM_W, S_QNORM, 0);
	int qw = view_copy(s, gq, s->heads, ab * T * qd);
	gi = p->q_bias ? addmm_backward(s, qw, h, p->q, p->q_bias, sv, S_QKV_IN, grads, gw_bytes)
		       : proj_backward(s, qw, (int)ab, h, p->q, s->autocast, acc, sv, S_QKV_IN, grads, gw_bytes);
	if (gi != acc)
		drop(s, gi); /* added into the sum in place */
	*bytes = s->autocast ? DT_FP32 : (int)ab;
	return acc;
}

/* The attention's backward where the traced path (attn_backward) does not cover it
 * (fused qkv, fp32, biases, adapters, a frozen base): o_proj (its bias's gradient with
 * its weight's), sdpa, the rotations, then the q, k, v projections (q, k, v slices of one
 * fused output: each slice's gradient a zero-filled tensor of its size, added into the
 * first), from the gradient gp of its output (0: the residual stream's, not freed).
 * Returns its input's gradient. */
static int sdpa_attn_backward_any(struct step *s, int gp, struct tlist *sv, struct tlist *grads, int64_t gw_bytes)
{
	int64_t T = s->tokens, h = s->hidden, qd = s->q_dim, k = s->kv_dim, ab = s->act_bytes;
	const struct layer_params *p = &s->lp;
	int cat = 0;

	weight_grad(s, grads, p->o, gw_bytes);
	weight_grad(s, grads, p->o_bias, gw_bytes);
	adapter_grads(s, grads, 0);
	int t1 = tensor(s, ab * T * qd);
	drop(s, gp);
	release(s, sv, S_O_IN);
	int t2 = tensor(s, flash_workspace(s));
	int64_t ku = kv_units(s); /* repeated k and v: their gradients summed per kv head after */
	int gq = tensor(s, ab * T * qd), gk = tensor(s, ab * T * ku), gv = tensor(s, ab * T * ku);
	drop(s, t2), drop(s, t1);
	release(s, sv, S_SDPA);
	if (ku != k) {
		gk = remake(s, gk, ab * T * k);
		gv = remake(s, gv, ab * T * k);
	}
	release(s, sv, S_QNORM_W), release(s, sv, S_QNORM), release(s, sv, S_KNORM_W), release(s, sv, S_KNORM);
	if (s->fam->fused_qkv) {
		int64_t full = ab * T * (qd + 2 * k);
		cat = tensor(s, full);
		drop(s, gv);
		int z = tensor(s, full);
		drop(s, gk), drop(s, z);
		z = tensor(s, full);
		drop(s, gq), drop(s, z);
	}
	weight_grad(s, grads, p->qkv, gw_bytes);
	weight_grad(s, grads, p->v, gw_bytes);
	weight_grad(s, grads, p->k, gw_bytes);
	weight_grad(s, grads, p->q, gw_bytes);
	int gy = tensor(s, ab * T * h);
	drop(s, gq), drop(s, gk), drop(s, gv), drop(s, cat);
	release(s, sv, S_V_IN), release(s, sv, S_K_IN), release(s, sv, S_QKV_IN);
	return gy;
}

/* The attention's backward (ATTN_SDPA) from the gradient gp of its output (0: the
 * residual stream's). Returns its input's gradient, its bytes a unit in *bytes. */
int sdpa_attn_backward(struct step *s, int gp, struct tlist *sv, struct tlist *grads, int64_t gw_bytes, int *bytes)
{
	const struct layer_params *p = &s->lp;
	int ab = (int)s->act_bytes;

	if (!s->fam->fused_qkv && !s->fp32 && !p->o_bias && (!p->q_bias || !s->autocast) && s->base_trains &&
	    !s->nadapters && gw_bytes)
		return attn_backward(s, gp, gp ? ab : s->resid_bytes, sv, grads, gw_bytes, bytes);
	*bytes = ab;
	return sdpa_attn_backward_any(s, gp, sv, grads, gw_bytes);
}

/* q, k and v projected without autograd (qkv_forward's, each per-head norm as its
 * projection returns). Returns v (fused: qkv); q and k into *q, *kk. */
int plain_qkv(struct step *s, int *q, int *kk)
{
	int64_t T = s->tokens, h = s->hidden, qd = s->q_dim, k = s->kv_dim, ab = s->act_bytes;
	int ca = s->autocast; /* the linears' inputs are fp32: autocast casts each */

	*q = *kk = 0;
	if (s->fam->fused_qkv)
		return plain_linear(s, h, qd + 2 * k, s->lp.qkv, ca, LORA_Q | LORA_K | LORA_V);
	int normed = s->fam->qk_norm != QK_NORM_NONE && s->fam->qk_norm != QK_NORM_L2; /* (L2: position_qk) */
	*q = plain_linear(s, h, qd, s->lp.q, ca, LORA_Q);
	int64_t qr = qk_norm_rows(s, s->heads), kr = qk_norm_rows(s, s->kv_heads);
	if (normed)
		*q = remade_by(s, *q, plain_norm(s, T * qr, qd / qr, (int)ab));
	*kk = plain_linear(s, h, k, s->lp.k, ca, LORA_K);
	if (normed)
		*kk = remade_by(s, *kk, plain_norm(s, T * kr, k / kr, (int)ab));
	return plain_linear(s, h, k, s->lp.v, ca, LORA_V);
}

/* sdpa without autograd: with a mask, k and v repeated to every query head
 * (sdpa_attn_forward); it casts fp32 rotated k and q (and the cache's v) to the compute
 * dtype, then makes the mask's bias, which goes with its casts when it returns; fp32
 * runs the math kernel (its probabilities). Returns its output. */
static int plain_sdpa(struct step *s, int cached)
{
	int64_t T = s->tokens, qd = s->q_dim, ab = s->act_bytes, rq = kv_bytes(s), ku = kv_units(s);
	int copies = kv_copies(s), o;
	int krep = copies ? tensor(s, rq * T * qd) : 0, vrep = copies ? tensor(s, (cached ? rq : ab) * T * qd) : 0;
	int ck = rq > ab ? tensor(s, ab * T * ku) : 0, cv = rq > ab && cached ? tensor(s, ab * T * ku) : 0;
	int cq = rq > ab ? tensor(s, ab * T * qd) : 0;
	int bias = s->mask_bytes ? tensor(s, s->mask_bytes) : 0;

	if (s->fp32) { /* the math kernel's probabilities */
		int pr = tensor(s, DT_FP32 * s->batch * s->heads * s->seq * s->seq);
		o = tensor(s, ab * T * qd);
		drop(s, pr);
	} else {
		o = tensor(s, ab * T * qd);
	}
	drop(s, bias), drop(s, cq), drop(s, cv), drop(s, ck), drop(s, krep), drop(s, vrep);
	return o;
}

/* The attention (ATTN_SDPA) without autograd over the norm's output; with a cache, the
 * cache's copies (of k's dtype) replace k and v. Returns o_proj's output; the caller
 * frees the input. */
int sdpa_attn_plain(struct step *s, int y, struct tlist *cache)
{
	int64_t T = s->tokens, h = s->hidden, qd = s->q_dim, k = s->kv_dim, rq = kv_bytes(s);
	struct attn_live a = { 0 };
	int v = plain_qkv(s, &a.q, &a.kk), qkv = 0;

	if (s->fam->fused_qkv) /* q, k and v its views */
		qkv = v, v = 0;
	position_qk(s, NULL, &a);
	int qe = a.qe, ke = a.ke;
	if (cache) {
		push(cache, tensor_as(s, rq * T * k, C_KV_CACHE));
		push(cache, tensor_as(s, rq * T * k, C_KV_CACHE));
		drop(s, ke), drop(s, v);
		ke = v = 0;
	}
	int o = plain_sdpa(s, cache != NULL);
	if (attn_out_copied(s))
		o = remake(s, o, s->act_bytes * T * qd);
	int ao = plain_linear(s, qd, h, s->lp.o, 0, LORA_O);
	drop(s, o);
	drop(s, qe), drop(s, ke), drop(s, v); /* the attention's inputs live to its return */
	drop(s, qkv);
	drop(s, y); /* the attention's input, replaced by its output */
	return ao;
}
