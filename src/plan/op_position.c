/* Positions in q and k beyond the rotary embedding of rope(): llama4_text's complex
 * rotation, its weightless L2 norm of the rotated q and k, its temperature on layers
 * without rotary embedding, and their backward. Written against the step and helpers of
 * sim_internal.h. */

#include "plan/dtype.h"
#include "plan/sim_internal.h"

/* The complex rotation (apply_rotary_emb): q's and k's fp32 copies viewed as complex,
 * each times freqs_cis (a complex64 product of the copy's bytes), then cast back to
 * their dtype; the copies and products are the function's locals, gone at its return.
 * The product by a constant keeps nothing. q and k go once replaced. */
void rope_complex(struct step *s, struct attn_live *a)
{
	int64_t T = s->tokens, nq = T * s->q_dim, nk = T * s->kv_dim, ab = s->act_bytes;
	int q32 = tensor(s, DT_FP32 * nq), k32 = tensor(s, DT_FP32 * nk);
	int qp = tensor(s, DT_FP32 * nq), kp = tensor(s, DT_FP32 * nk);

	a->qe = tensor(s, ab * nq);
	a->ke = tensor(s, ab * nk);
	drop(s, q32), drop(s, k32), drop(s, qp), drop(s, kp);
	drop(s, a->q), drop(s, a->kk);
}

/* The weightless L2 norm of x over rows of dim units (_norm(x.float()).type_as(x)):
 * the fp32 copy and the rsqrt kept with autograd (stage st), x^2 and its mean, the
 * normalized fp32 tensor, its cast back. x goes; returns the cast. */
int l2_norm(struct step *s, struct tlist *sv, int x, int64_t rows, int64_t dim, enum stage st)
{
	int64_t u = rows * dim;
	int was = s->stage;
	int x32 = tensor(s, DT_FP32 * u), tmp = tensor(s, DT_FP32 * u), mean = tensor(s, DT_FP32 * rows);

	drop(s, x), drop(s, tmp);
	int r = tensor(s, DT_FP32 * rows);
	drop(s, mean);
	s->stage = st;
	if (sv)
		save(s, sv, x32), save(s, sv, r), x32 = r = 0;
	s->stage = was;
	int n32 = tensor(s, DT_FP32 * u);
	drop(s, x32), drop(s, r);
	int out = tensor(s, s->act_bytes * u);
	drop(s, n32);
	return out;
}

/* q times the attention temperature (attn_temperature_tuning), over n units: an fp32
 * product (the scales are fp32), cast back; the product by a constant keeps nothing.
 * q goes; returns the cast. */
int temper(struct step *s, int q, int64_t n)
{
	int p = tensor(s, DT_FP32 * n), out = tensor(s, s->act_bytes * n);

	drop(s, p), drop(s, q);
	return out;
}

/* The backward of a cast back from fp32 then of an fp32 product by a constant, over n
 * units, from g (freed): g cast to fp32, times the constant, cast to the input's dtype
 * (of in_bytes). Returns the input's gradient. */
static int cast_product_backward(struct step *s, int g, int64_t n, int64_t in_bytes)
{
	int a = tensor(s, DT_FP32 * n);

	drop(s, g);
	int b = tensor(s, DT_FP32 * n);
	drop(s, a);
	if (in_bytes == DT_FP32)
		return b;
	int c = tensor(s, in_bytes * n);
	drop(s, b);
	return c;
}

/* The backward of q's or k's positions (position_qk's, in reverse) from g, the gradient
 * of what sdpa got (b bytes a unit: fp32 under autocast; n units; freed): the
 * temperature's (q's, is_q), the L2 norm's (what it kept into sv of stage st going), the
 * rotation's (rope_backward's, the complex one's, none); rot: the model's cos and sin
 * to go at their last use. Returns the gradient of the projection's output. */
int position_backward(struct step *s, int g, int64_t n, int64_t b, struct tlist *rot, struct tlist *sv, enum stage st,
		      int is_q)
{
	if (s->temperature && is_q)
		g = cast_product_backward(s, g, n, s->act_bytes);
	if (s->qk_l2) {
		int a = tensor(s, DT_FP32 * n);
		drop(s, g);
		g = rsqrt_backward(s, n, a, (int)s->act_bytes, sv, st, 0);
	}
	if (s->rope_on && !s->fam->rope_complex)
		return rope_backward(s, g, n, b, rot);
	for (size_t i = 0; rot && i < rot->n; i++) /* the cos and sin's last use */
		drop(s, rot->v[i]);
	if (rot)
		rot->n = 0;
	return s->rope_on ? cast_product_backward(s, g, n, s->act_bytes) : g;
}
