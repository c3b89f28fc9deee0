/* The norms: RMSNorm in its forms (llama's, gemma's 1 + weight, olmo2's fp32 product),
 * LayerNorm, with autograd and without, and their backward; gemma2's and gemma3's
 * post-norms. */

#include "plan/dtype.h"
#include "plan/pytorch.h"
#include "plan/sim_internal.h"

/* Llama's RMSNorm multiplies its weight by the normalized tensor cast back to the
 * input's dtype, outside autocast's list: with fp32 weights under autocast a bf16 input
 * (qwen3's q and k) comes out fp32. */
int norm_out_bytes(const struct step *s, int in_bytes)
{
	return in_bytes < s->weight_bytes ? s->weight_bytes : in_bytes;
}

/* Whether a norm keeps its fp32 normalized tensor and casts an fp32 product back
 * (gemma's (1 + weight) form, olmo2's weight x fp32 form). */
static int norm_fp32_product(const struct step *s)
{
	return s->fam->norm == NORM_RMS_UNIT || s->fam->norm == NORM_RMS_FP32;
}

/* The stage of a norm's normalized tensor, which its weight's product keeps (the
 * product's node goes first in the backward), from the norm's own. */
static enum stage weight_stage(enum stage st)
{
	switch (st) {
	case S_NORM1:
		return S_NORM1_W;
	case S_NORM2:
		return S_NORM2_W;
	case S_PNORM1:
		return S_PNORM1_W;
	case S_PNORM2:
		return S_PNORM2_W;
	case S_QNORM:
		return S_QNORM_W;
	case S_KNORM:
		return S_KNORM_W;
	default:
		return st;
	}
}

/* A norm's normalized tensor n: kept by the weight's product (at its weight stage) when
 * the weight trains, else gone. */
static void keep_normed(struct step *s, struct tlist *sv, int n)
{
	int st = s->stage;

	if (!s->base_trains) {
		drop(s, n);
		return;
	}
	s->stage = weight_stage(st);
	save(s, sv, n);
	s->stage = st;
}

/* RMSNorm over rows x dim units whose input has in_bytes a unit, as Hugging Face writes
 * it: an fp32 copy of a bf16 input (saved), x^2 (a temporary), the rsqrt (saved), the
 * normalized fp32 tensor, then the weight times it: llama casts the normalized tensor
 * back to the input's dtype and multiplies; gemma multiplies by (1 + weight) in fp32 and
 * casts the product. The product keeps the normalized tensor only for the weight's
 * gradient: not when the weight is frozen (LoRA). Returns the output. */
static int norm_of(struct step *s, struct tlist *sv, int64_t rows, int64_t dim, int in_bytes)
{
	int64_t u = rows * dim;
	int kept;

	/* an input without a gradient to take (nograd_in) keeps neither for the backward */
	int x32 = in_bytes == DT_BF16 ? tensor(s, DT_FP32 * u) : 0;
	if (x32 && !s->nograd_in)
		save(s, sv, x32), x32 = 0;
	/* x.pow(2) and its mean, the mean + eps and its rsqrt (traced: the mean lives to
	 * the norm's return, a local; with heads normalized, q's and k's, these are
	 * rows of heads and large blocks) */
	int tmp = tensor(s, DT_FP32 * u);
	int mean = tensor(s, DT_FP32 * rows);
	drop(s, tmp);
	int eps = tensor(s, DT_FP32 * rows);
	int r = tensor(s, DT_FP32 * rows);
	drop(s, eps);
	if (!s->nograd_in)
		save(s, sv, r), r = 0;
	int n32 = tensor(s, DT_FP32 * u);
	drop(s, x32), drop(s, r);
	if (norm_fp32_product(s)) {
		int out;
		if (s->early_stop == 2) { /* the product would pack the last saved tensors */
			keep_normed(s, sv, n32);
			drop(s, mean);
			return 0;
		}
		if (in_bytes == DT_FP32) {
			out = tensor(s, DT_FP32 * u);
		} else {
			int p32 = tensor(s, DT_FP32 * u);
			out = tensor(s, DT_BF16 * u);
			drop(s, p32);
		}
		keep_normed(s, sv, n32);
		drop(s, mean);
		return out;
	}
	kept = in_bytes == DT_BF16 ? tensor(s, DT_BF16 * u) : n32;
	int out = tensor(s, norm_out_bytes(s, in_bytes) * u);
	if (kept != n32) /* the fp32 tensor lives to the norm's return */
		drop(s, n32);
	keep_normed(s, sv, kept);
	drop(s, mean);
	return out;
}

/* The same norm without autograd: the fp32 copy goes once the normalized tensor exists,
 * the normalized tensor at the norm's return, the cast once multiplied. */
int plain_norm(struct step *s, int64_t rows, int64_t dim, int in_bytes)
{
	int64_t u = rows * dim;
	int x32 = in_bytes == DT_BF16 ? tensor(s, DT_FP32 * u) : 0;
	int tmp = tensor(s, DT_FP32 * u);
	drop(s, tmp);
	int n32 = tensor(s, DT_FP32 * u);
	drop(s, x32);
	int unit = norm_fp32_product(s);
	int cast = unit ? tensor(s, DT_FP32 * u) : in_bytes == DT_BF16 ? tensor(s, DT_BF16 * u) : 0;
	if (s->fam->norm == NORM_RMS_UNIT) /* gemma rebinds it; olmo2's local lives to the return */
		drop(s, n32);
	int out = tensor(s, (unit ? in_bytes : norm_out_bytes(s, in_bytes)) * u);
	drop(s, cast), drop(s, n32);
	return out;
}

/* norm_of over rows x dim units of the activations' dtype, what it keeps of stage st. */
int norm_at(struct step *s, struct tlist *sv, int64_t rows, int64_t dim, enum stage st)
{
	int was = s->stage;

	s->stage = st;
	int n = norm_of(s, sv, rows, dim, (int)s->act_bytes);
	s->stage = was;
	return n;
}

/* gemma2 and gemma3 normalize a sublayer's output (attention's, the MLP's) before the
 * residual add: x goes, the norm's output comes back; what the norm keeps is of stage
 * st; with sv NULL, without autograd. Other models return x as it is. */
int post_norm(struct step *s, struct tlist *sv, int x, enum stage st)
{
	if (!s->fam->post_norms)
		return x;
	int n = sv ? norm_at(s, sv, s->tokens, s->hidden, st) : plain_norm(s, s->tokens, s->hidden, (int)s->act_bytes);
	drop(s, x);
	return n;
}

int norm(struct step *s, struct tlist *sv)
{
	return norm_of(s, sv, s->tokens, s->hidden, s->resid_bytes);
}

/* The rsqrt's product's and the variance's nodes of an RMSNorm's backward over u units
 * (its input of ib bytes a unit), from a, the gradient of the normalized tensor (fp32,
 * freed here): the product's (for the rsqrt and for the input); the variance's (mean, pow, two
 * products), what the norm saved of stage st going after it. The input's gradient is
 * added into gres in place (autograd accumulates into a buffer it alone holds), or is
 * it when gres is 0 (in the input's dtype: a cast back from fp32). Returns it. */
int rsqrt_backward(struct step *s, int64_t u, int a, int ib, struct tlist *sv, enum stage st, int gres)
{
	int d = tensor(s, DT_FP32 * u), e = tensor(s, DT_FP32 * u);

	drop(s, d), drop(s, a);
	if (ib == DT_FP32 && gres) {
		drop(s, e);
		e = gres;
	}
	int f1 = tensor(s, DT_FP32 * u), f2 = tensor(s, DT_FP32 * u), f3 = tensor(s, DT_FP32 * u), f4 = tensor(s, DT_FP32 * u);
	drop(s, f3), drop(s, f2), drop(s, f1);
	release(s, sv, st);
	drop(s, f4); /* added into e */
	if (ib == DT_BF16) {
		int o = tensor(s, DT_BF16 * u);
		drop(s, e);
		if (gres)
			drop(s, o);
		else
			gres = o;
	} else if (!gres) {
		gres = e;
	}
	return gres;
}

/* gemma's RMSNorm backward over u units (its input ib bytes a unit, the output cast to that dtype,
 * the weight taken as (1 + weight) in fp32) from the gradient g of its output (g_bytes a
 * unit; freed here unless keep_g: a post-norm's is the residual stream's gradient
 * itself), node by node: the output cast's back to fp32; the weight's product (for a
 * trained weight g x the normalized tensor first, summed over the tokens through a
 * temporary of twice its size, then g x (1 + weight)); then rsqrt_backward. What the
 * norm saved goes at its nodes: the normalized tensor with w_st, the rest with st.
 * Returns the input's gradient (added into gres when there is one). */
/* A norm weight's gradient is summed over the rows of its input (u units, dim wide)
 * by a reduction whose staging buffer is twice the fp32 sum's size, up to what the
 * kernel's grid holds: sum_staging_max bytes, in rows of sum_staging_rows, whatever dim
 * (traced on the H200: the cap at 128, 3072 and 4096 wide, rounded up to a row at 5120). */
int64_t sum_staging(int64_t u, int64_t dim)
{
	const struct pytorch_constants *pc = pytorch_constants();
	int64_t row = pc->sum_staging_rows * dim * DT_FP32;
	int64_t cap = (pc->sum_staging_max + row - 1) / row * row;

	return 2 * DT_FP32 * u < cap ? 2 * DT_FP32 * u : cap;
}

static int gemma_norm_backward(struct step *s, int64_t u, int64_t dim, int g, int g_bytes, int keep_g, int ib,
			       struct tlist *sv, enum stage w_st, enum stage st, int gres)
{
	if (g_bytes != DT_FP32) {
		int c = tensor(s, DT_FP32 * u);
		if (!keep_g)
			drop(s, g);
		g = c, keep_g = 0;
	}
	int b = s->base_trains ? tensor(s, DT_FP32 * u) : 0, a = tensor(s, DT_FP32 * u);
	if (s->recomputed)
		release(s, sv, w_st);
	if (b) {
		int t = tensor(s, sum_staging(u, dim));
		drop(s, t), drop(s, b);
	}
	if (!keep_g)
		drop(s, g);
	release(s, sv, w_st);
	return rsqrt_backward(s, u, a, ib, sv, st, gres);
}

/* gemma2's and gemma3's post-norm's backward (post_norm's, stage st, w_st its weight's)
 * from the residual stream's gradient gres (not freed): the residual add hands it on
 * (cast to the sublayer's dtype when the stream's is wider). Returns the gradient of the
 * sublayer's output, of act_bytes a unit. */
int post_norm_backward(struct step *s, int gres, struct tlist *sv, enum stage w_st, enum stage st)
{
	int ab = (int)s->act_bytes, g = gres, keep = 1;

	if (s->resid_bytes != ab)
		g = tensor(s, ab * s->tokens * s->hidden), keep = 0;
	return gemma_norm_backward(s, s->tokens * s->hidden, s->hidden, g, ab, keep, ab, sv, w_st, st, 0);
}

/* The backward of an RMSNorm over u units (its input ib bytes a unit) from the gradient
 * g of its output, of g_bytes a unit (freed here), node by node as autograd runs it:
 * autocast's cast of the output back; the weight's product (g x weight, and for a
 * trained weight g x the normalized tensor, summed over the tokens through a temporary
 * of twice its fp32 size; a bf16 input's gradient cast to its dtype when the product is
 * wider); the cast to the input's dtype back to fp32; then rsqrt_backward. What the
 * norm saved goes at its nodes: the normalized tensor with w_st, the rest with st.
 * Returns the input's gradient (gres, when given, with it added in). gemma's:
 * gemma_norm_backward. */
int rms_backward(struct step *s, int64_t u, int64_t dim, int g, int g_bytes, int ib, struct tlist *sv, enum stage w_st,
		 enum stage st, int gres)
{
	int ob = norm_out_bytes(s, ib);

	if (norm_fp32_product(s))
		return gemma_norm_backward(s, u, dim, g, g_bytes, 0, ib, sv, w_st, st, gres);
	if (g_bytes != ob)
		g = remake(s, g, ob * u);
	int a = tensor(s, ob * u);
	if (s->base_trains) {
		int b = tensor(s, ob * u);
		if (s->recomputed)
			release(s, sv, w_st);
		int t = tensor(s, sum_staging(u, dim));
		drop(s, t), drop(s, b);
	}
	if (ib == DT_BF16 && ob != DT_BF16) /* to the bf16 input's dtype first */
		a = remake(s, a, DT_BF16 * u);
	drop(s, g);
	release(s, sv, w_st);
	if (ib == DT_BF16)
		a = remake(s, a, DT_FP32 * u);
	return rsqrt_backward(s, u, a, ib, sv, st, gres);
}

/* The backward of norm()'s RMSNorm, over the residual stream (rms_backward). */
int norm_backward(struct step *s, int g, int g_bytes, struct tlist *sv, enum stage w_st, enum stage st, int gres)
{
	return rms_backward(s, s->tokens * s->hidden, s->hidden, g, g_bytes, s->resid_bytes, sv, w_st, st, gres);
}

/* GPT-2's LayerNorm over the tokens' hidden units of in_bytes: the output (fp32 under
 * autocast, which runs layer_norm in fp32), the mean and the reciprocal deviation per
 * token (kept, with the input, for the backward pass). */
int layer_norm(struct step *s, struct tlist *sv, int in_bytes)
{
	int out = tensor(s, (s->autocast ? DT_FP32 : in_bytes) * s->tokens * s->hidden);
	int mean = tensor(s, DT_FP32 * s->tokens), rstd = tensor(s, DT_FP32 * s->tokens);

	if (sv) {
		save(s, sv, mean), save(s, sv, rstd);
	} else {
		drop(s, mean), drop(s, rstd);
	}
	return out;
}

/* LayerNorm's backward over the residual stream from the gradient g of its output
 * (freed): its input's gradient, its weight's and bias's (into grads), what it saved
 * (stage st) going after them, then the sum with the residual stream's gradient gres
 * (a new tensor; gres goes). Returns it. */
int layer_norm_backward(struct step *s, int g, struct tlist *sv, enum stage st, int gres, struct tlist *grads,
			int64_t gw)
{
	int64_t u = s->tokens * s->hidden;
	int gn = tensor(s, s->resid_bytes * u);

	drop(s, g);
	weight_grad(s, grads, s->hidden, gw), weight_grad(s, grads, s->hidden, gw);
	release(s, sv, st);
	int sum = tensor(s, s->resid_bytes * u);
	drop(s, gn), drop(s, gres);
	return sum;
}
