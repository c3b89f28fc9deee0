#include "plan/sim.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "plan/alloc.h"
#include "plan/dtype.h"
#include "plan/pytorch.h"
#include "plan/sim_internal.h"
#include "util/grow.h"
#include "util/xalloc.h"

/* What a sublayer's kind (an attention kind, an MLP kind: plan/family.h) does, written
 * once: its forward with autograd over its norm's output y (0 when kept; what the
 * backward needs into sv, stages telling which node frees each), without autograd (a
 * cache, when given, takes an attention's keys and values), and its backward from its
 * output's gradient (0: the residual stream's), its input's gradient's bytes a unit
 * into *bytes. A new kind (MLA, linear attention, shared experts) is a new row. */
struct sublayer_ops {
	int (*forward)(struct step *s, struct layer_fwd *c, struct tlist *sv, int y);
	int (*plain)(struct step *s, int y, struct tlist *cache);
	int (*backward)(struct step *s, int gp, struct tlist *sv, struct tlist *grads, int64_t gw_bytes, int *bytes);
	int stops;                /* a checkpointed layer's recompute may stop in it early */
};

/* The kinds' rows (their tables follow the ops). */
static const struct sublayer_ops *attn_op(const struct step *s);

static const struct sublayer_ops *mlp_op(const struct step *s);

/* Take the breakdown at the allocated peak the last allocation made, once every tensor
 * alive then has its final tag (before the next allocation or free). */
static void peak_take(struct step *s)
{
	if (s->peak_pending) {
		memcpy(s->peak_parts, s->live, sizeof(s->live));
		s->peak_pending = 0;
	}
}

/* A tensor on a CUDA stream (0: the default one), for part. */
static int tensor_for(struct step *s, int64_t bytes, int stream, int part)
{
	int id = (int)s->ntensors;
	uint64_t was = s->a.max_allocated_bytes;

	peak_take(s);
	ARRAY_GROW(s->block_of, s->ntensors + 1, s->cap_tensors);
	ARRAY_GROW(s->bytes_of, s->ntensors + 1, s->cap_bytes);
	ARRAY_GROW(s->part_of, s->ntensors + 1, s->cap_parts);
	s->bytes_of[id] = bytes > 0 ? bytes : 1;
	s->block_of[id] = alloc_sim_malloc_on(&s->a, (uint64_t)s->bytes_of[id], stream);
	s->part_of[id] = (unsigned char)part;
	s->live[part] += s->a.b[s->block_of[id]].size;
	if (s->a.max_allocated_bytes > was) {
		s->peak_phase = s->phase;
		s->peak_pending = 1;
	}
	s->ntensors++;
	return id;
}

/* A tensor for what the step does now (s->part). */
int tensor(struct step *s, int64_t bytes)
{
	return tensor_for(s, bytes, 0, s->part);
}

/* A tensor for another component than the phase's. */
int tensor_as(struct step *s, int64_t bytes, enum plan_component part)
{
	return tensor_for(s, bytes, 0, (int)part);
}

void drop(struct step *s, int id)
{
	if (id > 0 && s->block_of[id] >= 0) {
		peak_take(s);
		s->live[s->part_of[id]] -= s->a.b[s->block_of[id]].size;
		alloc_sim_release(&s->a, s->block_of[id]);
		s->block_of[id] = -1;
	}
}

/* A tensor made from x (a cast, a copy, a sum) of bytes: x goes once it exists. */
int remake(struct step *s, int x, int64_t bytes)
{
	int c = tensor(s, bytes);

	drop(s, x);
	return c;
}

/* x replaced by n, made from it: x goes once n exists. Returns n. */
static int remade_by(struct step *s, int x, int n)
{
	drop(s, x);
	return n;
}

void push(struct tlist *l, int id)
{
	ARRAY_GROW(l->v, l->n + 1, l->cap);
	l->v[l->n++] = id;
}

/* Keep a tensor for the backward pass, freed at the current stage. */
void save(struct step *s, struct tlist *l, int id)
{
	ARRAY_GROW(l->tag, l->n + 1, l->cap_tag);
	l->tag[l->n] = (unsigned char)s->stage;
	push(l, id);
}

/* Free what a layer saved for one stage of its backward. */
void release(struct step *s, struct tlist *l, enum stage st)
{
	for (size_t i = 0; i < l->n; i++)
		if (l->tag[i] == st)
			drop(s, l->v[i]);
}

void free_all(struct step *s, struct tlist *l)
{
	for (size_t i = 0; i < l->n; i++)
		drop(s, l->v[i]);
	l->n = 0;
}

/* Whether l holds tensor id (a layer kept it). */
static int tlist_has(const struct tlist *l, int id)
{
	for (size_t i = 0; id && i < l->n; i++)
		if (l->v[i] == id)
			return 1;
	return 0;
}

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

/* Llama's RMSNorm multiplies its weight by the normalized tensor cast back to the
 * input's dtype, outside autocast's list: with fp32 weights under autocast a bf16 input
 * (qwen3's q and k) comes out fp32. */
static int norm_out_bytes(const struct step *s, int in_bytes)
{
	return in_bytes < s->weight_bytes ? s->weight_bytes : in_bytes;
}

/* Bytes an element of q and k as their norms leave them (qwen3's; gemma's cast back). */
static int64_t qk_bytes(const struct step *s)
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

/* Bytes an element of the rotation's products: fp32 with fp32 cos and sin (autocast's,
 * or a family's rope_fp32, which casts the rotated q and k back). */
static int64_t rope_bytes(const struct step *s)
{
	return s->fam->rope_fp32 ? DT_FP32 : kv_bytes(s);
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
static int post_norm(struct step *s, struct tlist *sv, int x, enum stage st)
{
	if (!s->fam->post_norms)
		return x;
	int n = sv ? norm_at(s, sv, s->tokens, s->hidden, st) : plain_norm(s, s->tokens, s->hidden, (int)s->act_bytes);
	drop(s, x);
	return n;
}

/* The attention's output once the residual add has it: held to the layer's return where
 * the family holds it (attn_out_held: returned, for the caller to drop then), else gone
 * now (0). */
static int attn_out_after_add(struct step *s, int ao)
{
	if (s->fam->attn_out_held)
		return ao;
	drop(s, ao);
	return 0;
}

/* A sublayer's output x multiplied by the family's scalar before the residual add
 * (residual_scale: granite's residual_multiplier): a new tensor; nothing kept. x lives
 * through the add (residual + x * multiplier, then x's name reassigned): into *unscaled,
 * for the caller to drop once the sum exists (0 without the scaling). */
static int branch_scale(struct step *s, int x, int *unscaled)
{
	*unscaled = 0;
	if (!s->fam->residual_scale || !x)
		return x;
	*unscaled = x;
	return tensor(s, s->act_bytes * s->tokens * s->hidden);
}

/* The rotary embedding of one of q, k (bytes; in_bytes before: under autocast the
 * products with fp32 cos and sin are fp32): x cos, rotate_half(x) (the negated half,
 * then both halves concatenated) times sin, then their sum; a family with
 * rope_pass_copy (phi3) concatenates the rotated part with the (empty) pass-through
 * part, one copy more. */
static int rope_core(struct step *s, int64_t bytes, int64_t in_bytes)
{
	int t1 = tensor(s, bytes), neg = tensor(s, in_bytes / 2), rh = tensor(s, in_bytes);
	drop(s, neg);
	int t2 = tensor(s, bytes);
	drop(s, rh);
	int e = tensor(s, bytes);

	drop(s, t1), drop(s, t2);
	return e;
}

/* Of a q or k tensor of bytes, its rotated part's: a partial rotation's (glm4_moe),
 * else all of it. */
static int64_t rotated_part(const struct step *s, int64_t bytes)
{
	return s->rot_dim ? bytes / (s->q_dim / s->heads) * s->rot_dim : bytes;
}

static int rope(struct step *s, int64_t bytes, int64_t in_bytes)
{
	int e = rope_core(s, rotated_part(s, bytes), rotated_part(s, in_bytes));

	if (!s->fam->rope_pass_copy && !s->rot_dim)
		return e;
	return remake(s, e, bytes); /* the rotated part concatenated with the rest */
}

/* A linear layer's output over the step's tokens, in_u units in, out_u out, w_elems
 * weights; cast_in: its input is fp32 under autocast. With full fine-tuning the caller
 * keeps its input (for the weight's gradient); a frozen base keeps no input (under
 * autocast its weight's cast, for the input's gradient), and a LoRA adapter on it
 * (PEFT's: base(x) + B(A(x in A's dtype, fp32)) x scale, in the base output's dtype)
 * keeps its fp32 copy of the input and A's output, under autocast A's bf16 cast of the
 * input and A's bf16 output instead. */
int linear(struct step *s, struct tlist *sv, int64_t in_u, int64_t out_u, unsigned target, int64_t w_elems, int cast_in)
{
	int64_t T = s->tokens;
	int cast = 0;

	/* under autocast: the weight's bf16 cast (autocast caches a trained weight's), kept
	 * by the product for the input's gradient or the weight's (a frozen weight's goes
	 * with the product when the input takes none: s->in_nograd), and a bf16 cast of an
	 * fp32 input, kept by the product when the weight trains */
	int wc = s->autocast ? tensor(s, DT_BF16 * w_elems) : 0;
	if (wc && (s->base_trains || !s->in_nograd))
		save(s, sv, wc), wc = 0;
	if (cast_in) {
		cast = tensor(s, DT_BF16 * T * in_u);
		if (s->base_trains)
			save(s, sv, cast), cast = 0;
	}
	int out = tensor(s, s->act_bytes * T * out_u);
	drop(s, cast), drop(s, wc);
	if (s->base_trains || !(s->lora_targets & target))
		return out;
	if (s->autocast) {
		/* the adapter under autocast: x in fp32 copies a bf16 input, A's autocast casts
		 * it to bf16 (kept for A's gradient), A's output (kept for B's), B's, scaled,
		 * added in bf16 */
		int x32 = cast_in ? 0 : tensor(s, DT_FP32 * T * in_u);
		save(s, sv, tensor(s, DT_BF16 * T * in_u));
		drop(s, x32);
		save(s, sv, tensor(s, DT_BF16 * T * s->lora_rank));
		int b = tensor(s, DT_BF16 * T * out_u), sc = tensor(s, DT_BF16 * T * out_u);
		drop(s, b);
		int sum = tensor(s, DT_BF16 * T * out_u);
		drop(s, out), drop(s, sc);
		return sum;
	}
	save(s, sv, tensor(s, DT_FP32 * T * in_u));
	save(s, sv, tensor(s, DT_FP32 * T * s->lora_rank));
	int b = tensor(s, DT_FP32 * T * out_u), sc = tensor(s, DT_FP32 * T * out_u);
	drop(s, b);
	int c = tensor(s, s->act_bytes * T * out_u);
	drop(s, sc);
	int sum = tensor(s, s->act_bytes * T * out_u);
	drop(s, out), drop(s, c);
	return sum;
}

static int norm(struct step *s, struct tlist *sv)
{
	return norm_of(s, sv, s->tokens, s->hidden, s->resid_bytes);
}

/* A node of the backward has run: its incoming gradient g goes, and what it saved (sv's
 * stage st). A checkpointed layer's saved tensors were unpacked into the node's locals,
 * which go as it returns, before its argument g (and before autograd sums a broadcast
 * operand's gradient); others' the engine releases after the node. */
static void node_done(struct step *s, struct tlist *sv, enum stage st, int g)
{
	if (s->recomputed)
		release(s, sv, st);
	drop(s, g);
	release(s, sv, st);
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
static int64_t sum_staging(int64_t u, int64_t dim)
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
static int post_norm_backward(struct step *s, int gres, struct tlist *sv, enum stage w_st, enum stage st)
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
static int norm_backward(struct step *s, int g, int g_bytes, struct tlist *sv, enum stage w_st, enum stage st,
			 int gres)
{
	return rms_backward(s, s->tokens * s->hidden, s->hidden, g, g_bytes, s->resid_bytes, sv, w_st, st, gres);
}

/* A linear keeping nothing for a backward pass: under autocast the weight's bf16 cast
 * and (cast_in) the input's are made for it and go after it, but a checkpointed
 * forward runs with autograd on, so autocast caches a trained weight's cast (ac_cache).
 * Returns the output. */
int plain_linear(struct step *s, int64_t in_u, int64_t out_u, int64_t w_elems, int cast_in, unsigned target)
{
	int64_t T = s->tokens;
	int w = s->autocast ? tensor(s, DT_BF16 * w_elems) : 0;
	int c = s->autocast && cast_in ? tensor(s, DT_BF16 * T * in_u) : 0;
	int out = tensor(s, s->act_bytes * T * out_u);

	drop(s, c);
	if (w && s->ac_cache && s->base_trains)
		push(s->ac_cache, w);
	else
		drop(s, w);
	if (s->base_trains || !(s->lora_targets & target))
		return out;
	/* LoRA's adapter without autograd (a checkpointed layer's first pass): x in fp32
	 * (under autocast cast back to bf16 for A), A's output, B's, scaled, in the base
	 * output's dtype, added; each goes once the next is made (traced: gpu-session rs2) */
	int wide = s->autocast ? DT_BF16 : DT_FP32;
	int x = cast_in ? 0 : tensor(s, DT_FP32 * T * in_u);
	if (s->autocast) {
		int xb = tensor(s, DT_BF16 * T * in_u);
		drop(s, x);
		x = xb;
	}
	int a = tensor(s, wide * T * s->lora_rank);
	drop(s, x);
	int b = tensor(s, wide * T * out_u);
	drop(s, a);
	int sc = tensor(s, wide * T * out_u);
	drop(s, b);
	if (wide != s->act_bytes) {
		int cast = tensor(s, s->act_bytes * T * out_u);
		drop(s, sc);
		sc = cast;
	}
	int sum = tensor(s, s->act_bytes * T * out_u);
	drop(s, sc), drop(s, out);
	return sum;
}

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

/* The attention's residual sum h1 once the layer is done with it: kept by the
 * post-attention norm when fp32 (its input), by the MLP's projections without a pre-norm
 * (saved already), else gone. */
static void residual_done(struct step *s, struct tlist *sv, int h1)
{
	s->stage = S_NORM2;
	if (s->resid_bytes == DT_FP32 && !s->fam->no_pre_norms)
		save(s, sv, h1);
	else if (!tlist_has(sv, h1))
		drop(s, h1);
}

/* A checkpointed layer's recompute stopped early (layer_forward): the residual sum its
 * frame held goes with it (residual_done); no output. */
static int recompute_end(struct step *s, struct tlist *sv, int h1)
{
	residual_done(s, sv, h1);
	return 0;
}

/* GPT-2's LayerNorm over the tokens' hidden units of in_bytes: the output (fp32 under
 * autocast, which runs layer_norm in fp32), the mean and the reciprocal deviation per
 * token (kept, with the input, for the backward pass). */
static int layer_norm(struct step *s, struct tlist *sv, int in_bytes)
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

/* Dropout (GPT-2 trains with p 0.1): its mask (one byte a unit, kept) and output; x goes. */
static int dropout(struct step *s, struct tlist *sv, int x, int64_t units, int64_t bytes)
{
	if (s->eval) /* nn.Dropout in eval mode hands its input back */
		return x;
	int mask = tensor(s, DT_UINT8 * units), out = tensor(s, bytes * units);

	if (sv)
		save(s, sv, mask);
	else
		drop(s, mask);
	drop(s, x);
	return out;
}

/* GPT-2's gelu_new as Python ops, 0.5 x (1 + tanh(c (x + 0.044715 x^3))), over the
 * c_fc output x: 0.5 x first, then pow, scale, add, scale, tanh, 1 + ...; autograd
 * keeps x (pow's), tanh's output, 0.5 x and 1 + tanh for the product. Under autocast
 * pow runs in fp32 (a cast of x kept) and the fp32 result carries on. Returns the
 * product; x stays with the caller. */
static int gelu_new(struct step *s, struct tlist *sv, int64_t units)
{
	int64_t ab = s->act_bytes, gb = s->autocast ? DT_FP32 : ab;
	int g = tensor(s, ab * units), x32 = s->autocast ? tensor(s, DT_FP32 * units) : 0;
	int a = tensor(s, gb * units);
	if (sv && x32)
		save(s, sv, x32);
	else
		drop(s, x32);
	int b = tensor(s, gb * units);
	drop(s, a);
	int c = tensor(s, gb * units);
	drop(s, b);
	int d = tensor(s, gb * units);
	drop(s, c);
	int e = tensor(s, gb * units);
	drop(s, d);
	int f = tensor(s, gb * units);
	if (sv)
		save(s, sv, e);
	else
		drop(s, e);
	s->stage = S_MUL;
	int out = tensor(s, gb * units);
	if (sv) {
		save(s, sv, g), save(s, sv, f);
	} else {
		drop(s, g), drop(s, f);
	}
	return out;
}

/* Whether the next projection's input takes no gradient (layer_fwd's lora0). */
void lora_input(struct step *s, const struct layer_fwd *c)
{
	s->in_nograd = c->lora0 && !(s->lora_targets & c->ran);
}

/* Whether the layer's norm keeps its input itself, whatever the residual stream's dtype
 * (LayerNorm; an RMSNorm keeps its fp32 copy, or its fp32 input). */
static int norm_keeps_input(const struct step *s)
{
	return s->fam->norm == NORM_LAYER;
}

/* A sublayer's pre-norm over the residual stream x, what it keeps of stage st; its
 * output kept by the sublayer's first projections (stage in_st) while their weights
 * train (under autocast their casts are, and the norm's output lives to the sublayer's
 * end). Returns the output, 0 once kept. */
static int pre_norm(struct step *s, struct tlist *sv, int x, enum stage st, enum stage in_st)
{
	int y;

	s->stage = st;
	if (norm_keeps_input(s)) {
		save(s, sv, x);
		y = layer_norm(s, sv, s->resid_bytes);
	} else {
		y = norm(s, sv);
	}
	s->nograd_in = 0;
	s->stage = in_st;
	if (s->base_trains && !s->autocast) {
		save(s, sv, y);
		return 0;
	}
	return y;
}

/* What a sublayer takes from the residual stream x: its pre-norm's output (pre_norm), or
 * without pre-norms (no_pre_norms) x itself, kept by the sublayer's first projections
 * (stage in_st) while their weights train (under autocast their bf16 casts are); x
 * stays the caller's. Returns the input, 0 (kept, or x). */
static int sublayer_input(struct step *s, struct tlist *sv, int x, enum stage st, enum stage in_st)
{
	if (!s->fam->no_pre_norms)
		return pre_norm(s, sv, x, st, in_st);
	s->nograd_in = 0;
	s->stage = in_st;
	if (s->base_trains && !s->autocast)
		save(s, sv, x);
	return 0;
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

/* q and k rotated into *qe, *ke (their products rope_bytes a unit): each rotated and
 * concatenated with its pass-through part in turn (phi3), or with a partial rotation
 * (glm4_moe) both rotated, then both concatenated with the rest; with rope_fp32 both
 * cast back once both exist (apply_rotary_pos_emb's return); q and k go. */
static void rotate_qk(struct step *s, int q, int kk, int *qe, int *ke)
{
	int64_t T = s->tokens, qd = s->q_dim, k = s->kv_dim, rb = rope_bytes(s), qb = qk_bytes(s);

	if (s->rot_dim && !s->fam->rope_pass_copy) {
		int qr = rope_core(s, rotated_part(s, rb * T * qd), rotated_part(s, qb * T * qd));
		int kr = rope_core(s, rotated_part(s, rb * T * k), rotated_part(s, qb * T * k));
		*qe = remake(s, qr, rb * T * qd);
		*ke = remake(s, kr, rb * T * k);
	} else {
		*qe = rope(s, rb * T * qd, qb * T * qd);
		*ke = rope(s, rb * T * k, qb * T * k);
	}
	if (s->fam->rope_fp32) {
		int qc = tensor(s, qb * T * qd), kc = tensor(s, qb * T * k);
		drop(s, *qe), drop(s, *ke);
		*qe = qc, *ke = kc;
	}
	drop(s, q), drop(s, kk); /* apply_rotary_pos_emb returns both */
}

/* q's and k's positions: rotated (complex for rope_complex families: op_position.c;
 * not on a layer without rotary embedding), then on an L2 family's rotary layers their
 * weightless norms (what they keep into sv; NULL without autograd), on the others q's
 * temperature. q and k go once replaced. */
void position_qk(struct step *s, struct tlist *sv, struct attn_live *a)
{
	int64_t T = s->tokens, qd = s->q_dim, k = s->kv_dim;

	if (!s->rope_on)
		a->qe = a->q, a->ke = a->kk;
	else if (s->fam->rope_complex)
		rope_complex(s, a);
	else
		rotate_qk(s, a->q, a->kk, &a->qe, &a->ke);
	if (s->qk_l2) {
		a->qe = l2_norm(s, sv, a->qe, T * s->heads, qd / s->heads, S_QNORM);
		a->ke = l2_norm(s, sv, a->ke, T * s->kv_heads, k / s->kv_heads, S_KNORM);
	}
	if (s->temperature)
		a->qe = temper(s, a->qe, T * qd);
}

/* The rotary embedding of q and k (two temporaries each; with fp32 cos/sin under
 * autocast the rotated q and k are fp32 and sdpa casts them back), then with use_cache
 * (the model's default; off with checkpointing) the keys and values copied into the
 * DynamicCache (concatenated onto an empty tensor of k's dtype): sdpa works on (and
 * keeps) the copies; the model's output holds the cache until the caller drops it. */
void rope_forward(struct step *s, struct tlist *sv, struct attn_live *a)
{
	int64_t T = s->tokens, k = s->kv_dim, rq = kv_bytes(s);

	s->stage = S_SDPA;
	position_qk(s, sv, a);
	if (!s->kv)
		return;
	push(s->kv, tensor_as(s, rq * T * k, C_KV_CACHE));
	push(s->kv, tensor_as(s, rq * T * k, C_KV_CACHE));
	drop(s, a->ke);
	a->ke = 0;
	if (!s->fam->fused_qkv)
		drop(s, a->v);
}

/* sdpa's output takes q's layout: a q that the rotation concatenated (with a
 * pass-through or an unrotated part) is batch x heads x seq, so the output's
 * transpose().contiguous() before o_proj is a copy; a q rotated elementwise keeps its
 * projection's batch x seq x heads, and the transpose is contiguous already. */
static int attn_out_copied(const struct step *s)
{
	return s->rope_on && (s->fam->rope_pass_copy || s->rot_dim);
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

/* The experts (MLP_MOE) with autograd over their input y (moe_forward). */
static int moe_mlp_forward(struct step *s, struct layer_fwd *c, struct tlist *sv, int y)
{
	(void)c;
	int dn = moe_block(s, sv);

	drop(s, y);
	return dn;
}

/* A layer's end after the MLP's output dn: the residual add, then the MLP's input y
 * (when the MLP left it) goes; the attention's residual sum kept by the post-attention
 * norm when fp32 (a LayerNorm kept it already). Returns the layer's output. */
static int residual_end(struct step *s, struct tlist *sv, int dn, int y, int h1)
{
	int out = tensor(s, s->resid_bytes * s->tokens * s->hidden);

	drop(s, dn), drop(s, y);
	if (!norm_keeps_input(s))
		residual_done(s, sv, h1);
	return out;
}

/* One decoder layer's forward for training, op by op as the family describes it (the
 * attention's and the MLP's kinds from sim_ops, post-norms where it has them): what the
 * backward pass needs goes into sv. A frozen layer (frozen) keeps what its input's
 * gradient needs and nothing for its weights', as LoRA's frozen base does: autograd
 * saves a product's operand only for the other operand's gradient. An input without a
 * gradient to take (s->nograd_in, cleared here) is kept by nothing of this layer.
 * Returns the layer's output (0: a recompute stopped early). */
static int layer_forward(struct step *s, int in, struct tlist *sv, int frozen)
{
	struct layer_fwd c = { .in = in, .nograd = s->nograd_in };
	int base_trains = s->base_trains, out = 0;

	/* a checkpointed layer's recompute, traced where its end is plain: bf16 or fp32
	 * weights, trained, dense */
	c.stop = s->early_stop && !frozen && base_trains && !s->nadapters && !s->autocast && mlp_op(s)->stops;
	if (frozen)
		s->base_trains = 0;
	c.lora0 = c.nograd && !s->base_trains;
	int y = sublayer_input(s, sv, in, S_NORM1, S_QKV_IN);
	int ao = attn_op(s)->forward(s, &c, sv, y);
	int unscaled;
	ao = branch_scale(s, post_norm(s, sv, ao, S_PNORM1), &unscaled);
	c.h1 = tensor(s, s->resid_bytes * s->tokens * s->hidden);
	int held = attn_out_after_add(s, ao);
	drop(s, unscaled), drop(s, y); /* (y: when the attention left it) */
	/* fp32: the norm keeps its input */
	if (s->resid_bytes == DT_FP32 && !c.nograd && !norm_keeps_input(s) && !s->fam->no_pre_norms) {
		s->stage = S_NORM1;
		save(s, sv, in);
	}
	y = sublayer_input(s, sv, c.h1, S_NORM2, S_MLP_IN);
	lora_input(s, &c);
	int dn = mlp_op(s)->forward(s, &c, sv, y);
	if (dn) {
		s->in_nograd = 0;
		s->early_stop = c.stop ? 2 : 0; /* a post-norm's product packs the last */
		dn = branch_scale(s, post_norm(s, sv, dn, S_PNORM2), &unscaled);
		s->early_stop = 0;
	}
	if (c.stop)
		recompute_end(s, sv, c.h1);
	else
		out = residual_end(s, sv, dn, y, c.h1);
	drop(s, unscaled), drop(s, held);
	s->base_trains = base_trains;
	return out;
}

/* The gradients of a layer's LoRA adapters of one half (1: the MLP), last first. */
static void adapter_grads(struct step *s, struct tlist *grads, int mlp_half)
{
	for (int i = s->nadapters - 1; i >= 0; i--)
		if (s->adapters[i].mlp == mlp_half)
			push(grads, tensor_as(s, s->adapters[i].elems * DT_FP32, C_GRADS));
}

/* A weight's gradient, into grads (they live to the optimizer step), when the weights
 * train (gw_bytes a unit) and the layer has the tensor (elems not 0). */
void weight_grad(struct step *s, struct tlist *grads, int64_t elems, int64_t gw_bytes)
{
	if (gw_bytes && elems)
		push(grads, tensor_as(s, elems * gw_bytes, C_GRADS));
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

/* A trained projection's node in the backward from the gradient g of its output (g_bytes
 * a unit; freed here): the weight's gradient, then the input's (in_u units a token);
 * under autocast the weight's in bf16, cast to fp32 after the input's cast back (an fp32
 * input's: added in place into acc when there is one), and an fp32 g cast to bf16 first.
 * What the projection saved goes with stage st once it has run. Returns the input's
 * gradient (acc when added into it). */
int proj_backward(struct step *s, int g, int g_bytes, int64_t in_u, int64_t w_elems, int cast_in, int acc,
		  struct tlist *sv, enum stage st, struct tlist *grads, int64_t gw_bytes)
{
	int64_t T = s->tokens;
	int gc = s->autocast && g_bytes == DT_FP32 ? tensor(s, DT_BF16 * T * (w_elems / in_u)) : 0;
	int wb = s->autocast ? tensor(s, DT_BF16 * w_elems) : 0;

	if (!wb)
		weight_grad(s, grads, w_elems, gw_bytes);
	int gi = tensor(s, (s->autocast ? DT_BF16 : s->act_bytes) * T * in_u);
	drop(s, gc);
	node_done(s, sv, st, g);
	if (cast_in) {
		gi = remake(s, gi, DT_FP32 * T * in_u);
		if (acc) {
			drop(s, gi);
			gi = acc;
		}
	}
	if (wb) {
		weight_grad(s, grads, w_elems, gw_bytes);
		drop(s, wb);
	}
	return gi;
}

/* A projection with a bias (addmm's backward, outside autocast) from its output's
 * gradient g (out units wide; freed at the node's end), node by node as traced: the
 * input's gradient, the weight's, then the bias's summed over the tokens through the
 * reduction's staging buffer (the bias's own gradient is layer_backward's). Returns the
 * input's gradient. */
static int addmm_backward(struct step *s, int g, int64_t in_u, int64_t w_elems, int64_t bias, struct tlist *sv,
			  enum stage st, struct tlist *grads, int64_t gw_bytes)
{
	int64_t T = s->tokens;
	int gi = tensor(s, s->act_bytes * T * in_u);
	weight_grad(s, grads, w_elems, gw_bytes);
	drop(s, tensor(s, sum_staging(T * bias, bias)));
	node_done(s, sv, st, g);
	return gi;
}

/* A gated MLP's width, weights and the stages of what its nodes keep: the layer's MLP,
 * or a mixture of experts' shared expert. */
struct gated_mlp {
	int64_t inter, gate, up, down;
	enum stage down_st, mul_st, gate_st, up_st, in_st;
};

/* The MLP's backward (llama's and gemma's: an activation, gate and up apart, trained, no
 * adapters) from the gradient g of its output (g_bytes a unit; freed, 0: the residual
 * stream's, not freed), node by node: down_proj's, act
 * x up's (up's gradient, act's), up_proj's, silu's, gate_proj's, the two inputs'
 * gradients summed (under autocast gate's cast to fp32 added into up's in place).
 * Returns the gradient of the MLP's input and its bytes a unit in *bytes. */
static int gated_backward(struct step *s, const struct gated_mlp *m, int g, int g_bytes, struct tlist *sv,
			  struct tlist *grads, int64_t gw_bytes, int *bytes)
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

/* The backward of the rotation of a tensor of n units (its gradient g, b bytes a unit:
 * fp32 under autocast, whose cos and sin are; freed here), node by node: g x sin (cast
 * to the dtype the rotation's input had), rotate_half's negation and its two halves'
 * slices (the second added into the first), g x cos (cast, added in); the model's sin
 * and cos (rot, when given) after their last products. Returns the first slice: the
 * gradient of the rotation's input. */
int rope_bwd_core(struct step *s, int g, int64_t n, int64_t b, struct tlist *rot)
{
	int64_t o = qk_bytes(s);
	int m = tensor(s, b * n);

	for (size_t i = 1; rot && i < rot->n; i += 2) /* sin's last product */
		drop(s, rot->v[i]);

	if (b != o)
		m = remake(s, m, o * n);
	int ng = tensor(s, o * n / 2), s1 = tensor(s, o * n);
	drop(s, ng);
	int s2 = tensor(s, o * n);
	drop(s, m), drop(s, s2);
	m = tensor(s, b * n);
	if (b != o)
		m = remake(s, m, o * n);
	drop(s, g);
	for (size_t i = 0; rot && i < rot->n; i += 2) /* cos's */
		drop(s, rot->v[i]);
	if (rot)
		rot->n = 0;
	drop(s, m);
	return s1;
}

int rope_backward(struct step *s, int g, int64_t n, int64_t b, struct tlist *rot)
{
	if (!s->rot_dim)
		return rope_bwd_core(s, g, n, b, rot);
	/* a partial rotation's: over the rotated part, then its slice's gradient into a
	 * whole head's (zeros, copied in) */
	int s1 = rope_bwd_core(s, g, n / (s->q_dim / s->heads) * s->rot_dim, b, rot);
	return remake(s, s1, qk_bytes(s) * n);
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

/* a + b, a new tensor of the tokens' hidden units (autograd's sum of an input's
 * gradients); both go. */
int grad_sum(struct step *s, int a, int b)
{
	int sum = tensor(s, s->act_bytes * s->tokens * s->hidden);

	drop(s, a), drop(s, b);
	return sum;
}

/* The experts' backward (MLP_MOE: moe_backward), with the shared expert's where there is
 * one: in the order autograd runs them (the nodes made last first): the gated shared
 * expert's gate, the experts, then its MLP (qwen2_moe); the shared expert, then the
 * experts (deepseek_v3, glm4_moe). */
static int moe_mlp_backward(struct step *s, int gp, struct tlist *sv, struct tlist *grads, int64_t gw_bytes,
			    int *bytes)
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

/* LayerNorm's backward over the residual stream from the gradient g of its output
 * (freed): its input's gradient, its weight's and bias's (into grads), what it saved
 * (stage st) going after them, then the sum with the residual stream's gradient gres
 * (a new tensor; gres goes). Returns it. */
static int layer_norm_backward(struct step *s, int g, struct tlist *sv, enum stage st, int gres, struct tlist *grads,
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

/* A sublayer's pre-norm's backward by the norm's kind (norm_backward's; LayerNorm's
 * weight gradients come with it). */
static int pre_norm_backward(struct step *s, int g, int g_bytes, struct tlist *sv, enum stage w_st, enum stage st,
			     int gres, struct tlist *grads, int64_t gw_bytes)
{
	if (s->fam->norm == NORM_LAYER)
		return layer_norm_backward(s, g, sv, st, gres, grads, gw_bytes);
	return norm_backward(s, g, g_bytes, sv, w_st, st, gres);
}

/* A sublayer's input's gradient g (g_bytes a unit) into the residual stream's, gres:
 * through its pre-norm (pre_norm_backward), or without pre-norms added into gres in
 * place (autograd accumulates into the buffer it alone holds), cast to its dtype first.
 * Returns gres. */
static int sublayer_input_backward(struct step *s, int g, int g_bytes, struct tlist *sv, enum stage w_st,
				   enum stage st, int gres, struct tlist *grads, int64_t gw_bytes)
{
	if (!s->fam->no_pre_norms)
		return pre_norm_backward(s, g, g_bytes, sv, w_st, st, gres, grads, gw_bytes);
	if (g_bytes != s->resid_bytes)
		g = remake(s, g, s->resid_bytes * s->tokens * s->hidden);
	drop(s, g);
	return gres;
}

/* The gradient of a scaled sublayer output (branch_scale's): the residual stream's times
 * the scalar, a new tensor of the activations' dtype (0 without residual_scale: the
 * residual stream's own). */
static int branch_scale_backward(struct step *s)
{
	return s->fam->residual_scale ? tensor(s, s->act_bytes * s->tokens * s->hidden) : 0;
}

/* One decoder layer's backward, op by op in the forward's reverse, node by node as
 * autograd runs them: the MLP's post-norm (where the family has one), the MLP's, its
 * norm's; the attention's post-norm, the attention's, its norm's; then the biases' and
 * norms' weight gradients (into grads, which live to the optimizer step). What the
 * layer saved (sv) goes stage by stage as each node has run. */
static int layer_backward(struct step *s, int gres, struct tlist *sv, struct tlist *grads, int64_t gw_bytes)
{
	const struct layer_params *p = &s->lp;
	int gy, gy_bytes;
	int gp = 0; /* the sublayer output's gradient, its post-norm's */

	if (s->fam->post_norms)
		gp = post_norm_backward(s, gres, sv, S_PNORM2_W, S_PNORM2);
	else
		gp = branch_scale_backward(s);
	gy = mlp_op(s)->backward(s, gp, sv, grads, gw_bytes, &gy_bytes);
	release(s, sv, S_UP_IN), release(s, sv, S_MLP_IN);
	gres = sublayer_input_backward(s, gy, gy_bytes, sv, S_NORM2_W, S_NORM2, gres, grads, gw_bytes);
	gp = s->fam->post_norms ? post_norm_backward(s, gres, sv, S_PNORM1_W, S_PNORM1) : branch_scale_backward(s);
	gy = attn_op(s)->backward(s, gp, sv, grads, gw_bytes, &gy_bytes);
	int gx = sublayer_input_backward(s, gy, gy_bytes, sv, S_NORM1_W, S_NORM1, gres, grads, gw_bytes);
	weight_grad(s, grads, p->k_norm, gw_bytes);
	weight_grad(s, grads, p->q_norm, gw_bytes);
	weight_grad(s, grads, p->v_bias, gw_bytes);
	weight_grad(s, grads, p->k_bias, gw_bytes);
	weight_grad(s, grads, p->q_bias, gw_bytes);
	weight_grad(s, grads, p->norm2, gw_bytes);
	weight_grad(s, grads, p->norm1, gw_bytes);
	return gx;
}

/* Multi-head latent attention's sizes and weights (ATTN_MLA): q_proj, or q_a_proj, its
 * norm and q_b_proj; kv_a_proj_with_mqa, its norm, kv_b_proj; o_proj from the heads' v. */
static void mla_setup(struct step *s, const struct model_shape *m)
{
	int64_t h = s->hidden, H = s->heads, qr = m->q_lora_rank, kvr = m->kv_lora_rank;
	int64_t n = m->qk_nope_dim, vd = m->v_head_dim;

	s->q_lora = qr, s->kv_lora = kvr, s->v_head = vd;
	s->lp.q = qr ? 0 : h * s->q_dim;
	s->lp.q_a = h * qr, s->lp.q_a_norm = qr, s->lp.q_b = qr * s->q_dim;
	s->lp.k = s->lp.v = s->lp.k_bias = s->lp.q_bias = s->lp.v_bias = 0;
	s->lp.kv_a = h * (kvr + s->rot_dim), s->lp.kv_a_norm = kvr, s->lp.kv_b = kvr * H * (n + vd);
	s->lp.o = H * vd * h;
}

static void setup(struct step *s, const struct model_shape *m, const struct train_settings *t)
{
	int64_t h = m->hidden, qd = m->heads * m->head_dim, k = m->kv_heads * m->head_dim, I = m->intermediate;

	s->tokens = t->batch * t->seq, s->batch = t->batch, s->seq = t->seq;
	s->hidden = h, s->layers = m->layers, s->heads = m->heads, s->q_dim = qd, s->kv_dim = k, s->inter = I, s->vocab = m->vocab;
	s->weight_bytes = t->param_bytes;
	s->autocast = t->autocast;
	s->fp32 = t->param_bytes == DT_FP32 && !t->autocast;
	s->act_bytes = s->fp32 ? DT_FP32 : DT_BF16;
	s->resid_bytes = t->param_bytes == DT_FP32 ? DT_FP32 : DT_BF16;
	s->fam = model_family(m);
	if (m->qk_norm_each) { /* the config's per-head q/k norms (glm4_moe's use_qk_norm) */
		s->fam_cfg = *s->fam;
		s->fam_cfg.qk_norm = QK_NORM_EACH;
		s->fam = &s->fam_cfg;
	}
	s->positions = m->positions;
	s->kv_heads = m->kv_heads;
	s->softcap = m->final_softcap;
	s->base_trains = t->lora_rank <= 0 || t->inference;
	/* full fine-tuning: a layer frozen for the moment takes no adapter path */
	s->lora_targets = s->base_trains ? 0 : t->lora_targets;
	s->lora_rank = t->lora_rank;
	if (!s->base_trains) { /* A (in x r) and B (r x out), fp32, per adapted projection */
		struct lora_proj p[LORA_MAX_PROJS];
		int n = lora_projs(m, t->lora_targets, p);
		for (int i = 0; i < n; i++) {
			s->adapters[s->nadapters++] = (struct adapter){ p[i].in * s->lora_rank, p[i].mlp };
			s->adapters[s->nadapters++] = (struct adapter){ s->lora_rank * p[i].out, p[i].mlp };
		}
	}
	s->experts = m->experts, s->topk = m->experts_per_tok, s->moe_inter = m->moe_inter;
	s->router_fp32 = s->fam->router_fp32;
	s->sliding_window = m->sliding_window, s->sliding_pattern = m->sliding_pattern;
	if (s->fam->fused_qkv)
		s->lp.qkv = h * (qd + 2 * k);
	else
		s->lp.q = h * qd, s->lp.k = h * k, s->lp.v = h * k;
	if (s->experts) { /* the experts' stacked gate_up_proj and down_proj, the router */
		s->lp.gate_up = s->experts * 2 * s->moe_inter * h;
		s->lp.router = s->experts * h;
	} else if (s->fam->fused_gate_up) {
		s->lp.gate_up = h * 2 * I;
	} else {
		s->lp.gate = h * I, s->lp.up = h * I;
	}
	s->lp.o = qd * h;
	s->lp.down = s->experts ? s->experts * s->moe_inter * h : I * h;
	s->m = m;
	s->mlp = s->fam->mlp, s->rope_on = 1, s->attn = s->fam->attn;
	s->rot_dim = m->rotary_dim;
	s->full_step = m->full_step, s->lin_k_heads = m->lin_k_heads, s->lin_v_heads = m->lin_v_heads;
	s->lin_k_dim = m->lin_k_dim, s->lin_v_dim = m->lin_v_dim, s->lin_conv = m->lin_conv;
	s->shared_inter = s->experts ? m->shared_inter : 0;
	if (s->shared_inter) { /* the shared expert's, beside the experts' */
		s->lp.shared_gate = s->lp.shared_up = s->lp.shared_down = h * s->shared_inter;
		s->lp.shared_gate_w = s->fam->shared == SHARED_GATED_FIRST ? h : 0;
	}
	if (s->fam->attn == ATTN_GATED_SDPA) /* q and its gate */
		s->lp.q = 2 * h * qd;
	if (s->fam->sinks)
		s->lp.sinks = s->heads;
	if (s->fam->expert_bias)
		s->lp.gate_up_bias = s->experts * 2 * s->moe_inter, s->lp.down_bias = s->experts * h;
	if (s->fam->router_bias)
		s->lp.router_bias = s->experts;
	s->dense_inter = m->dense_inter;
	s->nope_step = m->nope_step, s->model_qk_l2 = m->qk_l2, s->model_temperature = m->nope_temperature;
	if (s->fam->layer == LAYER_GPT2) /* its ops and LayerNorm's make their weights' gradients */
		return;
	s->lp.norm1 = s->lp.norm2 = h;
	if (s->fam->qk_norm != QK_NORM_NONE && s->fam->qk_norm_full)
		s->lp.q_norm = qd, s->lp.k_norm = k;
	if (m->qkv_bias)
		s->lp.q_bias = qd, s->lp.k_bias = k, s->lp.v_bias = k;
	if (m->o_bias)
		s->lp.o_bias = s->hidden;
	if (s->fam->attn == ATTN_MLA)
		mla_setup(s, m);
	s->moe_lp = s->lp, s->moe_experts = s->experts, s->moe_layer_inter = s->inter;
}

/* A hybrid family's layer l: the family's attention on every full_step-th layer, a
 * Gated DeltaNet's weights and kind on the others. */
static void hybrid_at(struct step *s, int64_t l)
{
	struct layer_params *p = &s->lp;
	int64_t h = s->hidden, kd = s->lin_k_heads * s->lin_k_dim, vd = s->lin_v_heads * s->lin_v_dim;
	int full = (l + 1) % s->full_step == 0;

	s->attn = full ? s->fam->attn : ATTN_DELTANET;
	p->q = full ? (s->fam->attn == ATTN_GATED_SDPA ? 2 : 1) * h * s->q_dim : 0;
	p->k = p->v = full ? h * s->kv_dim : 0;
	p->o = full ? s->q_dim * h : 0;
	p->lin_qkvz = full ? 0 : h * (2 * kd + 2 * vd);
	p->lin_ba = full ? 0 : h * 2 * s->lin_v_heads;
	p->lin_conv = full ? 0 : (2 * kd + vd) * s->lin_conv;
	p->lin_dt = p->lin_alog = full ? 0 : s->lin_v_heads;
	p->lin_norm = full ? 0 : s->lin_v_dim;
	p->lin_out = full ? 0 : vd * h;
}

/* Layer l's MLP in a mixture-of-experts model (model_dense_layer says which layers are
 * dense: first_k_dense_replace's, those off every decoder_sparse_step-th or
 * interleave_moe_layer_step-th, mlp_only_layers'): a dense layer's is a gated MLP of
 * dense_inter units, a sparse one's the family's experts with their shared expert (as
 * setup made them). Others' layers are all alike: nothing changes. */
static void mlp_at(struct step *s, int64_t l)
{
	struct layer_params *p = &s->lp;
	const struct layer_params *e = &s->moe_lp;
	int64_t h = s->hidden;

	if (!s->moe_experts)
		return;
	p->gate = e->gate, p->up = e->up, p->gate_up = e->gate_up, p->down = e->down, p->router = e->router;
	p->shared_gate = e->shared_gate, p->shared_up = e->shared_up, p->shared_down = e->shared_down;
	p->shared_gate_w = e->shared_gate_w;
	p->gate_up_bias = e->gate_up_bias, p->down_bias = e->down_bias, p->router_bias = e->router_bias;
	s->experts = s->moe_experts, s->mlp = s->fam->mlp, s->inter = s->moe_layer_inter;
	if (!model_dense_layer(s->m, l))
		return;
	s->mlp = MLP_GATED, s->experts = 0, s->inter = s->dense_inter;
	p->gate_up = p->router = p->shared_gate = p->shared_up = p->shared_down = p->shared_gate_w = 0;
	p->gate_up_bias = p->down_bias = p->router_bias = 0;
	p->gate = p->up = p->down = h * s->dense_inter;
}

/* Layer l's kinds where they vary by layer: its MLP (mlp_at), whether q and k are
 * rotated (and so L2-normalized), or q scaled; a hybrid family's attention (hybrid_at). */
static void layer_at(struct step *s, int64_t l)
{
	if (s->nope_step) {
		s->rope_on = (l + 1) % s->nope_step != 0;
		s->qk_l2 = s->model_qk_l2 && s->rope_on;
		s->temperature = s->model_temperature && !s->rope_on;
	}
	mlp_at(s, l);
	if (s->full_step)
		hybrid_at(s, l);
}

/* A sliding window the keys reach: the model builds its boolean mask, seq x seq, once a
 * forward (the window's comparison and the causal one, each and-ed in) for every
 * layer's sdpa. Returns it (0: none). */

static int sliding_mask(struct step *s)
{
	if (s->fam->attn == ATTN_EAGER_SINKS) /* eager attention's float masks, whatever the seq */
		return eager_masks(s);
	if (!s->fam->window_mask_always && (!s->sliding_window || s->seq < s->sliding_window))
		return 0;
	/* (a chunked one a batch row each: its offsets are the row's; the causal comparison
	 * is one seq x seq for every row) */
	int64_t b = DT_BOOL * s->seq * s->seq * (s->fam->chunk ? s->batch : 1);
	int m1 = tensor(s, b), m2 = tensor(s, b);
	drop(s, m1);
	int m3 = tensor(s, DT_BOOL * s->seq * s->seq), mask = tensor(s, b);
	drop(s, m3), drop(s, m2);
	return mask;
}

/* A multimodal forward's masks (its wrapper's mm_masks): the causal one, then with a
 * window the sliding one, each the positions' comparison (seq x seq) or-ed with the
 * token types' equality and-ed in (batch x seq x seq); the sliding one and-ed again
 * with the window's comparison. Both held through the forward, into mask[0..1]. */
static void mm_masks(struct step *s, int mask[2])
{
	int64_t m = DT_BOOL * s->seq * s->seq, bm = m * s->batch;
	int kinds = 1 + (s->sliding_window > 0);

	mask[0] = mask[1] = 0;
	for (int k = 0; k < kinds; k++) {
		int cmp = tensor(s, m), causal = tensor(s, m);
		drop(s, cmp);
		int eq = tensor(s, bm), types = tensor(s, bm);
		drop(s, eq);
		int both = tensor(s, bm);
		drop(s, types), drop(s, causal);
		if (k) { /* the window: and-ed in, its comparison seq x seq */
			int anded = tensor(s, bm);
			drop(s, both);
			int gt = tensor(s, m);
			both = tensor(s, bm);
			drop(s, gt), drop(s, anded);
		}
		mask[k] = both;
	}
}

/* The model's wrapper (a multimodal config) has its forward build mm_masks' masks. */
static int mm_masked(const struct step *s)
{
	return s->m->wrapper && s->m->wrapper->mm_masks;
}

/* The masks a forward builds before its layers, into mask[0..1] (0: none): a
 * multimodal one's; else a training forward's sliding mask, eager attention's float
 * masks in either, and a chunked family's mask in inference too (as traced on
 * llama4_text), and one that builds its window mask always (qwen2_moe); other sliding
 * windows' inference masks are not built (not traced:
 * building them moved gemma3's and mistral's measured inference plans either way). */
static void model_masks(struct step *s, int infer, int mask[2])
{
	mask[0] = mask[1] = 0;
	if (mm_masked(s))
		mm_masks(s, mask);
	else if (!infer || s->fam->chunk || s->fam->window_mask_always)
		mask[0] = sliding_mask(s);
	else if (s->fam->attn == ATTN_EAGER_SINKS)
		mask[0] = eager_masks(s);
}

/* Which layer runs next: a sliding-window layer whose keys reach the
 * window (transformers passes no mask where a causal one does) hands sdpa a boolean
 * mask, which sdpa turns into an additive bias of the query's dtype, batch x seq x seq,
 * a layer; its efficient kernel keeps it for the backward. With sim_train's jitter, the
 * layer makes a tensor of a new pseudo-random size, held until the next layer's (the
 * last one's through the loss, or the optimizer step: small blocks the sequence leaves
 * out sit there too). */
static void layer_begin(struct step *s, int64_t l)
{
	layer_at(s, l);
	int sliding = s->sliding_window && (l + 1) % s->sliding_pattern != 0;

	int masked = (sliding && s->seq >= s->sliding_window) || mm_masked(s);

	s->mask_bytes = masked ? s->act_bytes * s->batch * s->seq * s->seq : 0;
	if (s->jitter) { /* sim_train's stand-in for unmodelled temporaries: a new size a layer */
		uint64_t cap = (uint64_t)s->jitter * (uint64_t)(s->tokens * s->hidden * s->act_bytes);
		/* Knuth's MMIX LCG, its high 31 bits: sizes up to 2 GiB */
		s->jitter_state = s->jitter_state * 6364136223846793005ULL + 1442695040888963407ULL;
		drop(s, s->jitter_id);
		s->jitter_id = tensor(s, (int64_t)((s->jitter_state >> 33) % (cap ? cap : 1)) + 1);
	}
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

static int moe_mlp_plain(struct step *s, int y, struct tlist *cache)
{
	(void)cache;
	int dn = moe_block(s, NULL);

	drop(s, y); /* the MLP's input, replaced by its output */
	return dn;
}

/* GPT-2's attention (ATTN_GPT2) with autograd over ln_1's output y (0 when kept): c_attn
 * (q, k, v fused, kept by sdpa as views), sdpa (its output and log-sum-exp kept; no
 * rotary, no grouping), c_proj, the residual dropout. Linears keep their input (their
 * bf16 cast under autocast) while the weights train. Returns the dropout's output; y
 * stays with the caller to the residual add. */
static int gpt2_attn_forward(struct step *s, struct layer_fwd *c, struct tlist *sv, int y)
{
	int64_t T = s->tokens, h = s->hidden, ab = s->act_bytes;

	(void)c, (void)y;
	int qkv = linear(s, sv, h, 3 * h, 0, 3 * h * h, s->autocast);
	s->stage = S_SDPA;
	if (s->kv) { /* use_cache: the keys and values copied into the cache */
		push(s->kv, tensor_as(s, ab * T * h, C_KV_CACHE));
		push(s->kv, tensor_as(s, ab * T * h, C_KV_CACHE));
	}
	int o = tensor(s, ab * T * h), lse = tensor(s, DT_FP32 * s->batch * s->heads * s->seq);
	save(s, sv, qkv), save(s, sv, lse);
	s->stage = S_O_IN;
	int p = linear(s, sv, h, h, 0, h * h, 0);
	save(s, sv, o); /* sdpa's output, kept by sdpa (and c_proj) */
	return dropout(s, sv, p, T * h, ab);
}

/* The same without autograd: every linear casts its input under autocast; c_attn's
 * output goes once c_proj has run. */
static int gpt2_attn_plain(struct step *s, int y, struct tlist *cache)
{
	int64_t T = s->tokens, h = s->hidden, ab = s->act_bytes;

	(void)y;
	int qkv = plain_linear(s, h, 3 * h, 3 * h * h, 1, 0);
	if (cache) {
		push(cache, tensor_as(s, ab * T * h, C_KV_CACHE));
		push(cache, tensor_as(s, ab * T * h, C_KV_CACHE));
	}
	int o = tensor(s, ab * T * h), lse = tensor(s, DT_FP32 * s->batch * s->heads * s->seq);
	drop(s, lse);
	int p = plain_linear(s, h, h, h * h, 0, 0);
	drop(s, o), drop(s, qkv);
	return dropout(s, NULL, p, T * h, ab);
}

/* GPT-2's residual dropout's backward and its projection's (Conv1D's) from the residual
 * stream's gradient (gp 0: not freed): the dropout's gradient, the weight's (w_elems)
 * and bias's gradients, the input's (in_bytes); what the projection saved (stage st)
 * goes after it. Returns the input's gradient. */
static int dropout_proj_backward(struct step *s, int gp, int64_t w_elems, int64_t in_bytes, struct tlist *sv,
				 enum stage st, struct tlist *grads, int64_t gw)
{
	int g = tensor(s, s->act_bytes * s->tokens * s->hidden);

	drop(s, gp);
	weight_grad(s, grads, w_elems, gw), weight_grad(s, grads, s->hidden, gw);
	int gi = tensor(s, in_bytes);
	drop(s, g);
	release(s, sv, st);
	return gi;
}

/* GPT-2's attention's backward from the residual stream's gradient (gp 0: not freed):
 * the dropout's, c_proj's (its weight's and bias's gradients), sdpa's (its gradients of
 * q, k and v joined into one), c_attn's. */
static int gpt2_attn_backward(struct step *s, int gp, struct tlist *sv, struct tlist *grads, int64_t gw, int *bytes)
{
	int64_t T = s->tokens, h = s->hidden, ab = s->act_bytes;

	int go = dropout_proj_backward(s, gp, h * h, ab * T * h, sv, S_O_IN, grads, gw);
	int ws = tensor(s, flash_workspace(s));
	int gq = tensor(s, ab * T * h), gk = tensor(s, ab * T * h), gv = tensor(s, ab * T * h);
	drop(s, ws), drop(s, go);
	release(s, sv, S_SDPA);
	int cat = tensor(s, ab * T * 3 * h);
	drop(s, gq), drop(s, gk), drop(s, gv);
	weight_grad(s, grads, 3 * h * h, gw), weight_grad(s, grads, 3 * h, gw);
	int gy = tensor(s, ab * T * h);
	drop(s, cat);
	release(s, sv, S_QKV_IN);
	*bytes = (int)ab;
	return gy;
}

/* GPT-2's MLP (MLP_GELU) with autograd over ln_2's output y (0 when kept): c_fc,
 * gelu_new, c_proj, the residual dropout. Returns the dropout's output; y stays with
 * the caller to the residual add. */
static int gelu_mlp_forward(struct step *s, struct layer_fwd *c, struct tlist *sv, int y)
{
	int64_t T = s->tokens, h = s->hidden, I = s->inter;

	(void)c, (void)y;
	int fc = linear(s, sv, h, I, 0, h * I, s->autocast);
	s->stage = S_GATE;
	if (!s->autocast) /* pow keeps it (under autocast, its fp32 cast) */
		save(s, sv, fc);
	int act = gelu_new(s, sv, T * I);
	if (s->autocast)
		drop(s, fc);
	s->stage = S_DOWN;
	int dn = linear(s, sv, I, h, 0, I * h, s->autocast);
	if (!s->autocast)
		save(s, sv, act);
	else
		drop(s, act);
	return dropout(s, sv, dn, T * h, s->act_bytes);
}

static int gelu_mlp_plain(struct step *s, int y, struct tlist *cache)
{
	int64_t T = s->tokens, h = s->hidden, I = s->inter;

	(void)y, (void)cache;
	int fc = plain_linear(s, h, I, h * I, 1, 0);
	int act = gelu_new(s, NULL, T * I);
	drop(s, fc);
	int dn = plain_linear(s, I, h, I * h, 1, 0);
	drop(s, act);
	return dropout(s, NULL, dn, T * h, s->act_bytes);
}

/* GPT-2's MLP's backward from the residual stream's gradient (gp 0: not freed): the
 * dropout's, c_proj's (weight and bias), gelu_new's chain rule (fp32 under autocast,
 * cast back), c_fc's. */
static int gelu_mlp_backward(struct step *s, int gp, struct tlist *sv, struct tlist *grads, int64_t gw, int *bytes)
{
	int64_t T = s->tokens, h = s->hidden, I = s->inter, ab = s->act_bytes;
	int64_t gb = s->autocast ? DT_FP32 : ab;

	int g2 = dropout_proj_backward(s, gp, I * h, gb * T * I, sv, S_DOWN, grads, gw);
	int ga = tensor(s, gb * T * I), gf = tensor(s, gb * T * I);
	drop(s, g2);
	release(s, sv, S_MUL);
	int t1 = tensor(s, gb * T * I), t2 = tensor(s, gb * T * I);
	drop(s, gf), drop(s, t1);
	int t3 = tensor(s, gb * T * I);
	drop(s, t2);
	int t4 = tensor(s, gb * T * I), t5 = tensor(s, gb * T * I);
	drop(s, t4);
	int gx = tensor(s, gb * T * I);
	drop(s, t3), drop(s, t5), drop(s, ga);
	if (gb != ab)
		gx = remake(s, gx, ab * T * I);
	release(s, sv, S_GATE);
	weight_grad(s, grads, h * I, gw), weight_grad(s, grads, I, gw);
	int gy = tensor(s, ab * T * h);
	drop(s, gx);
	*bytes = (int)ab;
	return gy;
}

/* A sublayer's pre-norm over the residual stream without autograd. */
static int plain_pre_norm(struct step *s)
{
	if (s->fam->no_pre_norms) /* the sublayer takes the residual stream itself */
		return 0;
	if (s->fam->norm == NORM_LAYER)
		return layer_norm(s, NULL, s->resid_bytes);
	return plain_norm(s, s->tokens, s->hidden, s->resid_bytes);
}

/* One decoder layer's forward keeping nothing for a backward pass (inference, the first
 * forward of a checkpointed layer, a frozen layer with nothing before it to train), op
 * by op as layer_forward: every temporary is freed as soon as Python drops it; with a
 * cache, the layer's keys and values go into it (copies: the cache concatenates onto
 * its empty start). Returns the output; the caller frees the input. */
static int plain_layer(struct step *s, int in, struct tlist *cache)
{
	int64_t T = s->tokens, h = s->hidden;

	(void)in;
	int y = plain_pre_norm(s);
	int ao = attn_op(s)->plain(s, y, cache);
	int unscaled;
	ao = branch_scale(s, post_norm(s, NULL, ao, S_PNORM1), &unscaled);
	int h1 = tensor(s, s->resid_bytes * T * h);
	int held = attn_out_after_add(s, ao);
	drop(s, unscaled), drop(s, y); /* (y: when the attention left it to the residual add) */
	y = plain_pre_norm(s);
	int dn = mlp_op(s)->plain(s, y, NULL);
	dn = branch_scale(s, post_norm(s, NULL, dn, S_PNORM2), &unscaled);
	int out = tensor(s, s->resid_bytes * T * h);
	drop(s, dn), drop(s, unscaled), drop(s, y), drop(s, h1), drop(s, held);
	return out;
}

static const struct sublayer_ops attn_kinds[ATTN_KINDS] = {
	[ATTN_SDPA] = { sdpa_attn_forward, sdpa_attn_plain, sdpa_attn_backward, 0 },
	[ATTN_GPT2] = { gpt2_attn_forward, gpt2_attn_plain, gpt2_attn_backward, 0 },
	[ATTN_EAGER_SINKS] = { eager_attn_forward, eager_attn_plain, eager_attn_backward, 0 },
	[ATTN_GATED_SDPA] = { gated_attn_forward, gated_attn_plain, gated_attn_backward, 0 },
	[ATTN_DELTANET] = { deltanet_forward, deltanet_plain, deltanet_backward, 0 },
	[ATTN_MLA] = { mla_attn_forward, mla_attn_plain, mla_attn_backward, 0 },
};

/* (a recompute stops early where traced: in the gated MLP) */
static const struct sublayer_ops mlp_kinds[MLP_KINDS] = {
	[MLP_GATED] = { gated_mlp_forward, gated_mlp_plain, gated_mlp_backward, 1 },
	[MLP_GELU] = { gelu_mlp_forward, gelu_mlp_plain, gelu_mlp_backward, 0 },
	[MLP_MOE] = { moe_mlp_forward, moe_mlp_plain, moe_mlp_backward, 0 },
	[MLP_DENSE_MOE] = { dense_moe_forward, dense_moe_plain, dense_moe_backward, 0 },
	[MLP_MOE_CLAMPED] = { clamped_moe_forward, clamped_moe_plain, clamped_moe_backward, 0 },
};

static const struct sublayer_ops *attn_op(const struct step *s)
{
	return &attn_kinds[s->attn];
}

static const struct sublayer_ops *mlp_op(const struct step *s)
{
	return &mlp_kinds[s->mlp];
}

/* cuBLAS's workspace: PyTorch allocates it through the caching allocator at the first
 * matrix product (the rotary embedding's) and keeps it (its size: plan/pytorch.h). A workspace is a
 * cuBLAS handle's, and handles are a thread's: autograd's backward thread makes a second
 * one at its first product, lm_head's, after that product's first output (every
 * training history recorded on the H200 has both). */
static void cublas_workspace(struct step *s)
{
	tensor_as(s, pytorch_constants()->cublas_workspace, C_WORKSPACE);
}

/* The weights, in construction order: embedding, layers, final norm, lm_head (when
 * tied, freed again) (a ZeRO-3 shard keeps a 1/dp share); then the named buffers. */
static int layer_frozen(const struct train_settings *t, int64_t l)
{
	return l >= t->freeze_first && l <= t->freeze_last;
}

#define LAYER_WEIGHTS_MAX 39

/* The root's weights: the embedding, learned positions, the final norm's weight and
 * bias, lm_head. */
#define ROOT_WEIGHTS_MAX 5

/* One decoder layer's weights in construction order, in elements, into w: attention
 * (phi3 makes o_proj before qkv_proj), MLP, the two norms, the biases. How many. */
static int decoder_weights(const struct step *s, int64_t *w)
{
	const struct layer_params *p = &s->lp;
	const int64_t lp[LAYER_WEIGHTS_MAX] = { p->q,      p->k,    p->v,      p->o,     p->qkv,
						p->gate,   p->up,   p->gate_up, p->down, p->router,
						p->shared_gate, p->shared_up, p->shared_down, p->sinks,
						p->gate_up_bias, p->down_bias, p->router_bias, p->shared_gate_w,
						p->lin_qkvz, p->lin_ba, p->lin_conv, p->lin_dt, p->lin_alog,
						p->lin_norm, p->lin_out,
						p->norm1,  p->norm2, p->q_bias, p->k_bias, p->v_bias,
						p->o_bias, p->q_norm, p->k_norm, p->q_a, p->q_a_norm, p->q_b, p->kv_a,
						p->kv_a_norm, p->kv_b };
	int n = 0;

	for (size_t i = 0; i < LAYER_WEIGHTS_MAX; i++)
		if (lp[i]) /* 0: the model has none */
			w[n++] = lp[i];
	return n;
}

/* A GPT-2 block's: ln_1, c_attn, c_proj, ln_2, c_fc, c_proj, weights and biases. */
static int gpt2_weights(const struct step *s, int64_t *w)
{
	int64_t h = s->hidden, I = s->inter;
	const int64_t blk[] = { h, h, 3 * h * h, 3 * h, h * h, h, h, h, h * I, I, I * h, h };
	int n = 0;

	for (size_t i = 0; i < sizeof(blk) / sizeof(blk[0]); i++)
		w[n++] = blk[i];
	return n;
}

/* Each layer kind's weights in construction order (enum layer_kind): every kind's layer
 * is walked op by op alike (layer_forward, plain_layer, layer_backward). */
static int (*const layer_kinds[LAYER_KINDS])(const struct step *s, int64_t *w) = {
	[LAYER_DECODER] = decoder_weights,
	[LAYER_GPT2] = gpt2_weights,
};

static int layer_weights(const struct step *s, int64_t *w)
{
	return layer_kinds[s->fam->layer](s, w);
}

/* A norm's weight tensors: the weight, and LayerNorm's bias. */
static int norm_tensors(const struct step *s)
{
	return s->fam->norm == NORM_LAYER ? 2 : 1;
}

/* A multimodal model's vision tower, made before its text tower: its weights, which a
 * text-only step gives no gradient (so no optimizer state either). */
static void load_vision(struct step *s, const struct vision_shape *v, struct tlist *params)
{
	int64_t w[VISION_TENSORS_MAX];
	int n = vision_root_tensors(v, 1, w);

	for (int i = 0; i < n; i++)
		push(params, tensor(s, w[i] * s->weight_bytes));
	n = vision_layer_tensors(v, w);
	for (int64_t l = 0; l < v->layers; l++)
		for (int i = 0; i < n; i++)
			push(params, tensor(s, w[i] * s->weight_bytes));
	n = vision_root_tensors(v, 0, w);
	for (int i = 0; i < n; i++)
		push(params, tensor(s, w[i] * s->weight_bytes));
}

/* The weights, as load makes them, and which of them train: into trained (NULL: none
 * noted) unless frozen. The embedding (and learned positions), the layers, the final
 * norm, lm_head (when tied, made with its own weight, then tied to the embedding's). */
static void load(struct step *s, const struct model_shape *m, const struct train_settings *t,
		 struct tlist *params, struct tlist *trained, int64_t shard)
{
	int64_t lw[LAYER_WEIGHTS_MAX], h = s->hidden;
	int nlw;
	int emb_frozen = t->freeze_embed || (m->tied && t->freeze_head), id;
	struct tlist none = { 0 };

	if (!trained)
		trained = &none;
	load_vision(s, &m->vision, params);
	push(params, id = tensor(s, s->vocab * h * s->weight_bytes / shard));
	if (!emb_frozen)
		push(trained, id);
	if (s->fam->positions == POS_LEARNED) {
		push(params, id = tensor(s, s->positions * h * s->weight_bytes / shard));
		push(trained, id);
	}
	for (int64_t l = 0; l < s->layers; l++) {
		layer_at(s, l);
		nlw = layer_weights(s, lw);
		for (int i = 0; i < nlw; i++) {
			push(params, id = tensor(s, lw[i] * s->weight_bytes / shard));
			if (!layer_frozen(t, l))
				push(trained, id);
		}
	}
	for (int i = 0; i < norm_tensors(s); i++) {
		push(params, id = tensor(s, h * s->weight_bytes));
		push(trained, id);
	}
	if (!m->tied) {
		push(params, id = tensor(s, s->vocab * h * s->weight_bytes / shard));
		if (!t->freeze_head)
			push(trained, id);
	} else {
		drop(s, tensor(s, s->vocab * h * s->weight_bytes / shard));
	}
	for (size_t i = 0; i < t->nbuffers; i++)
		for (int64_t c = 0; c < t->buffers[i].count; c++)
			tensor_as(s, (int64_t)t->buffers[i].item_bytes, C_BUFFERS);
	free(none.v);
}

/* A training run through the simulation: the step's tensors, and what lives from one
 * phase of a step to the next, or into the next step. */
struct train {
	struct step s;
	const struct model_shape *m;
	const struct train_settings *t;
	int lora;                 /* only LoRA's adapters train (fp32), the base is frozen */
	int past_told;            /* t->past called */
	int64_t grad_bytes;       /* a trained base weight's gradient, bytes a unit; 0 with LoRA */
	int64_t shard;            /* ZeRO-3: the weights' share kept is 1/shard */
	int64_t chunk;            /* tokens per lm_head + loss chunk */
	struct tlist params;      /* the weights, then LoRA's adapters */
	struct tlist trained;     /* those of params that train: their states and temporaries */
	int embed_trains, head_trains;
	int backward_workspace;   /* the backward's cuBLAS workspace is made */
	int64_t no_grad_layers;   /* the first layers, frozen with nothing before them to train:
				   * they run as without autograd, and have no backward */
	int inputs;               /* inputs_embeds: the step's hidden states, held to the next */
	struct tlist states;      /* the optimizer's, made at the first step */
	struct tlist grads;       /* to the optimizer step */
	int head_grad;            /* lm_head's gradient, in grads (0 none) */
	struct tlist *saved;      /* per layer: what its forward keeps for its backward */
	struct tlist ckpts;       /* gradient checkpointing: each layer's input */
	struct tlist head_saved;  /* what GPT-2's final norm and its embeddings' dropout keep */
	int head_wcast;           /* lm_head's weight cast to bf16 under autocast (0 none) */
	struct tlist norm_saved;  /* what the final norm keeps (not GPT-2's) */
	struct tlist tmp;         /* the loss's and the optimizer's temporaries */
	struct tlist rot;         /* the rotary embedding's cos and sin, held to the backward's end */
	struct tlist kv, prev_kv; /* use_cache: this step's cache, and the last step's */
	struct tlist ac_cache;    /* autocast's weight casts in a checkpointed forward */
	/* FSDP2 (ZeRO-3): each layer's weights gathered whole around its forward and its
	 * backward (and kept from one to the other without resharding), the root's (the
	 * embedding, the final norm, lm_head) from the forward's start to the backward's
	 * end; the gradients reduce-scattered to their shard */
	int fsdp;
	int64_t layer_bytes, root_bytes;  /* a layer's weights, the root's, whole */
	int64_t layer_param[LAYER_WEIGHTS_MAX], root_param[ROOT_WEIGHTS_MAX]; /* each weight's bytes, whole, in order */
	int nlayer_param, nroot_param;
	struct tlist *gathered;   /* per layer: its weights, whole (none: resharded) */
	unsigned char *issued;    /* per layer: its all-gather is in flight */
	struct tlist root;        /* the root's weights, whole */
	int ag;                   /* the last all-gather's buffer */
	struct tlist shards;      /* the gradients reduce-scattered this step */
	struct tlist buckets;     /* DDP's gradient buckets */
	int prev_logits;          /* the last step's logits: its output holds them (and prev_kv) */
	/* this step's */
	int emb;                  /* the embeddings (gemma: scaled), the first layer's input */
	int hidden;               /* the last layer's output */
	int final_out;            /* the final norm's output, lm_head's input */
	int logits;               /* the first chunk's, as the model returns them */
	struct tlist lsm;         /* each loss chunk's log-softmax */
	struct tlist capped;      /* gemma2: each loss chunk's tanh, kept by the softcap */
	int grad_res;             /* the residual stream's gradient */
	int mask[2];              /* the masks made before the layers (model_masks; 0 none):
				   * through the layers, checkpointed ones to their backward */
};

/* The bytes a live tensor asked for (its block may be larger: the allocator keeps a
 * small remainder in it). */
static int64_t tensor_bytes(const struct step *s, int id)
{
	return s->bytes_of[id];
}

/* Set up the run and load the model: the weights, then LoRA's adapters, fp32, tensor
 * by tensor after the model (their gradients and states are small-pool blocks, apart
 * from the activations' segments). */
static void train_start(struct train *tr, const struct model_shape *m, const struct train_settings *t)
{
	struct step *s = &tr->s;

	tr->m = m;
	tr->t = t;
	tr->lora = t->lora_rank > 0;
	tr->grad_bytes = tr->lora ? 0 : t->param_bytes;
	setup(s, m, t);
	alloc_sim_init(&s->a);
	s->a.limit_bytes = t->limit_bytes;
	s->a.expandable = t->expandable;
	s->part = C_WEIGHTS, s->phase = "load";
	tensor(s, 0); /* id 0 means none */
	tr->saved = xcalloc((size_t)s->layers, sizeof(*tr->saved));
	/* a model called for training keeps use_cache unless checkpointing turns it off */
	s->kv = t->grad_ckpt || !t->use_cache ? NULL : &tr->kv;
	tr->chunk = t->loss_chunk > 0 && t->loss_chunk < s->tokens ? t->loss_chunk : s->tokens;
	tr->shard = t->zero_stage >= 3 ? t->dp : 1;
	load(s, m, t, &tr->params, tr->lora ? NULL : &tr->trained, tr->shard);
	tr->embed_trains = !tr->lora && !t->freeze_embed && !(m->tied && t->freeze_head);
	tr->head_trains = !tr->lora && !t->freeze_head && !(m->tied && t->freeze_embed);
	if (!tr->embed_trains || t->inputs_embeds)
		while (tr->no_grad_layers < s->layers && layer_frozen(t, tr->no_grad_layers))
			tr->no_grad_layers++;
	if (tr->lora)
		for (int64_t l = 0; l < s->layers; l++)
			for (int i = 0; i < s->nadapters; i++) {
				int id = tensor(s, s->adapters[i].elems * DT_FP32);
				push(&tr->params, id);
				push(&tr->trained, id);
			}
	if (t->zero_stage == 3) {
		int64_t h = s->hidden;
		tr->fsdp = 1;
		tr->gathered = xcalloc((size_t)s->layers, sizeof(*tr->gathered));
		tr->issued = xcalloc((size_t)s->layers, 1);
		tr->nlayer_param = layer_weights(s, tr->layer_param);
		for (int i = 0; i < tr->nlayer_param; i++)
			tr->layer_param[i] *= s->weight_bytes;
		/* the root's: the embedding (and learned positions), the final norm, lm_head */
		tr->root_param[tr->nroot_param++] = s->vocab * h * s->weight_bytes;
		if (s->fam->positions == POS_LEARNED)
			tr->root_param[tr->nroot_param++] = s->positions * h * s->weight_bytes;
		for (int i = 0; i < norm_tensors(s); i++)
			tr->root_param[tr->nroot_param++] = h * s->weight_bytes;
		if (!m->tied)
			tr->root_param[tr->nroot_param++] = s->vocab * h * s->weight_bytes;
		for (int i = 0; i < tr->nlayer_param; i++)
			tr->layer_bytes += tr->layer_param[i];
		for (int i = 0; i < tr->nroot_param; i++)
			tr->root_bytes += tr->root_param[i];
	}
	/* DDP: its construction makes the gradient buckets as one tensor */
	if (t->ddp) {
		int64_t all = 0;
		for (size_t i = 0; i < tr->trained.n; i++)
			all += tensor_bytes(s, tr->trained.v[i]);
		push(&tr->buckets, tensor_as(s, all, C_COLLECTIVE));
	}
}

/* DDP's bucket rebuild before the second step's forward: the first iteration's buckets
 * go, and new ones are made a tensor each, in the order the gradients became ready (the
 * parameters in reverse), a bucket closed once it holds ddp_first_bucket (the first) or
 * bucket_cap_mb, ddp_bucket (the others: plan/pytorch.h). */
static void ddp_rebuild(struct train *tr)
{
	struct step *s = &tr->s;
	int64_t bucket = 0, cap = pytorch_constants()->ddp_first_bucket;

	free_all(s, &tr->buckets);
	for (size_t i = tr->trained.n; i-- > 0;) {
		bucket += tensor_bytes(s, tr->trained.v[i]);
		if (bucket >= cap || !i) {
			push(&tr->buckets, tensor_as(s, bucket, C_COLLECTIVE));
			bucket = 0, cap = pytorch_constants()->ddp_bucket;
		}
	}
}

/* FSDP2's all-gathers and reduce-scatters run on streams of their own: their buffers
 * come from those streams' pools. */
enum { FSDP_ALL_GATHER = 1, FSDP_REDUCE_SCATTER = 2 };

/* FSDP2's all-gather of bytes into a buffer on its own stream; the last one's buffer
 * goes once this one has been made (FSDP2 holds it until the next all-gather). */
static void fsdp_issue(struct train *tr, int64_t bytes)
{
	int b = tensor_for(&tr->s, bytes, FSDP_ALL_GATHER, C_COLLECTIVE);

	drop(&tr->s, tr->ag);
	tr->ag = b;
}

/* The last all-gather's buffer freed (FSDP2's post-forward and post-backward of the
 * root, its pre-backward once the root's weights are copied out). */
static void fsdp_ag_free(struct train *tr)
{
	drop(&tr->s, tr->ag);
	tr->ag = 0;
}

/* The all-gather's copy-out: each weight whole, a tensor of its own on the default
 * stream, into l. */
static void fsdp_copy_out(struct train *tr, struct tlist *l, const int64_t *bytes, int n)
{
	for (int i = 0; i < n; i++)
		push(l, tensor_as(&tr->s, bytes[i], C_GATHERED));
}

/* FSDP2 before layer l's forward or backward: its weights whole (all-gathered unless
 * already in flight, then copied out), unless kept from the forward; in the backward
 * the next layer's all-gather (dir -1) issued ahead (dir 0: none, the forward's
 * all-gathers come each at its layer's pre-forward). */
/* Layer l's weights' bytes, whole, into w (a MoE model's dense layers have their own),
 * the layer now (cur) left as it was. How many; their sum into *total. */
static int fsdp_layer(struct train *tr, int64_t l, int64_t cur, int64_t *w, int64_t *total)
{
	struct step *s = &tr->s;
	int n;

	layer_at(s, l);
	n = layer_weights(s, w);
	*total = 0;
	for (int i = 0; i < n; i++)
		*total += w[i] *= s->weight_bytes;
	layer_at(s, cur);
	return n;
}

static void fsdp_gather(struct train *tr, int64_t l, int dir)
{
	int64_t w[LAYER_WEIGHTS_MAX], total;

	if (!tr->fsdp)
		return;
	if (!tr->gathered[l].n) {
		int n = fsdp_layer(tr, l, l, w, &total);
		if (!tr->issued[l])
			fsdp_issue(tr, total);
		tr->issued[l] = 0;
		fsdp_copy_out(tr, &tr->gathered[l], w, n);
	}
	if (l + dir >= 0 && l + dir < tr->s.layers && !tr->gathered[l + dir].n && !tr->issued[l + dir]) {
		fsdp_layer(tr, l + dir, l, w, &total);
		fsdp_issue(tr, total);
		tr->issued[l + dir] = 1;
	}
}

static void fsdp_reshard(struct train *tr, int64_t l)
{
	if (tr->fsdp)
		free_all(&tr->s, &tr->gathered[l]);
}

/* FSDP2 after a group's backward: the gradients from grads' entry `from` on, whole, are
 * copied into the reduce-scatter's input (on the default stream) and go; the shard
 * comes back on the reduce-scatter's stream. */
static void fsdp_reduce_scatter(struct train *tr, size_t from)
{
	struct step *s = &tr->s;
	int64_t bytes = 0;

	if (!tr->fsdp || from >= tr->grads.n)
		return;
	for (size_t i = from; i < tr->grads.n; i++)
		bytes += tensor_bytes(s, tr->grads.v[i]);
	int in = tensor_as(s, bytes, C_COLLECTIVE);
	for (size_t i = from; i < tr->grads.n; i++)
		drop(s, tr->grads.v[i]);
	tr->grads.n = from;
	push(&tr->shards, tensor_for(s, (bytes + tr->t->dp - 1) / tr->t->dp, FSDP_REDUCE_SCATTER, C_GRADS));
	drop(s, in);
}

/* The first layer that trains takes an input without a gradient when the embedding does
 * not train or hidden states are fed in (the only cases in which layers before it run
 * without autograd, train_start). */
static int input_nograd(const struct train *tr, int64_t l)
{
	return l == tr->no_grad_layers && (!tr->embed_trains || tr->t->inputs_embeds);
}

/* The rotary embedding's sets of cos and sin: gemma3's (gemma's norms with q/k norms)
 * local and global layers have one each; GPT-2 has none. */
static int rotary_sets(const struct step *s)
{
	return s->fam->positions == POS_ROPE ? s->fam->rotary_sets : 0;
}

/* The rotary set layer l uses (rotary's): gemma3's global layers, every
 * sliding_pattern-th, the second. */
static int rotary_set(const struct step *s, int64_t l)
{
	return rotary_sets(s) == 2 && s->sliding_window && (l + 1) % s->sliding_pattern == 0;
}

/* The rotary embedding's cos and sin for the step (the model's, once a forward: one
 * sequence's positions, head_dim wide, the model called without position_ids; gemma3's
 * local and global layers each have a set): the frequencies' product (at step 0 the
 * first product: cuBLAS's workspace after it) and their concatenation (fp32), cos and
 * sin scaled, cast to the residual stream's dtype when it is narrower. Held in rot. */
static void rotary(struct step *s, struct tlist *rot, int step)
{
	int64_t u = s->seq * (s->rot_dim ? s->rot_dim : s->q_dim / s->heads);
	for (int i = 0; i < rotary_sets(s); i++) {
		int f = tensor(s, DT_FP32 * u / 2);
		if (!step && !i)
			cublas_workspace(s);
		int c = tensor(s, DT_FP32 * u), t = tensor(s, DT_FP32 * u), cm = tensor(s, DT_FP32 * u);
		drop(s, t);
		t = tensor(s, DT_FP32 * u);
		int sm = tensor(s, DT_FP32 * u);
		drop(s, t);
		if (s->resid_bytes == DT_BF16 && !s->fam->rope_fp32) {
			push(rot, tensor(s, DT_BF16 * u));
			push(rot, tensor(s, DT_BF16 * u));
			drop(s, f), drop(s, c), drop(s, cm), drop(s, sm);
		} else {
			drop(s, f), drop(s, c);
			push(rot, cm);
			push(rot, sm);
		}
	}
}

/* The forward pass: the embeddings (gemma scales them: a new tensor), then the layers;
 * a checkpointed layer keeps only its input, its temporaries go as they would without
 * autograd. */
static void train_forward(struct train *tr, int step)
{
	struct step *s = &tr->s;
	int x, hs;

	s->part = C_ACTIVATIONS, s->phase = "forward";
	if (tr->t->ddp && step == 1)
		ddp_rebuild(tr);
	if (tr->fsdp) { /* the root's weights, gathered before the embedding */
		fsdp_issue(tr, tr->root_bytes);
		fsdp_copy_out(tr, &tr->root, tr->root_param, tr->nroot_param);
	}
	x = hs = tensor(s, s->resid_bytes * s->tokens * s->hidden);
	if (tr->t->inputs_embeds) { /* the caller's hidden states: the last step's go now */
		drop(s, tr->inputs);
		tr->inputs = x;
	} else if (s->fam->embed_scale) {
		int scaled = tensor(s, s->resid_bytes * s->tokens * s->hidden);
		drop(s, x);
		x = hs = scaled;
	}
	if (s->fam->positions == POS_LEARNED) { /* the positions' embeddings, added, the dropout */
		if (!step) /* (at the first layer's product) */
			cublas_workspace(s);
		int pos = tensor(s, s->resid_bytes * s->tokens * s->hidden);
		hs = dropout(s, &tr->head_saved, pos, s->tokens * s->hidden, s->resid_bytes);
	}
	model_masks(s, 0, tr->mask);
	rotary(s, &tr->rot, step);
	for (int64_t l = 0; l < s->layers; l++) {
		int out;
		layer_begin(s, l);
		fsdp_gather(tr, l, 0);
		if (l < tr->no_grad_layers) {
			out = plain_layer(s, hs, s->kv);
			if (hs != x)
				drop(s, hs);
		} else if (tr->t->grad_ckpt) {
			int base_trains = s->base_trains;
			push(&tr->ckpts, hs);
			s->ac_cache = s->autocast ? &tr->ac_cache : NULL;
			s->base_trains = base_trains && !layer_frozen(tr->t, l);
			out = plain_layer(s, hs, NULL);
			s->base_trains = base_trains;
			s->ac_cache = NULL;
		} else {
			s->nograd_in = input_nograd(tr, l);
			out = layer_forward(s, hs, &tr->saved[l], layer_frozen(tr->t, l));
			/* a bf16 layer keeps no input of its own (its norm keeps an fp32 copy) */
			if (!norm_keeps_input(s) && (s->resid_bytes == DT_BF16 || s->fam->no_pre_norms) && hs != x &&
			    !tlist_has(&tr->saved[l], hs))
				drop(s, hs);
		}
		if (!tr->t->keep_gathered)
			fsdp_reshard(tr, l);
		hs = out;
	}
	tr->emb = x;
	tr->hidden = hs;
}

/* The final norm, lm_head and the loss over chunks, in the forward: logits as
 * returned, their fp32 copy, the log-softmax (kept); only then does the caller drop
 * the last step's output (its logits and cache), or, as HF Trainer, this step's
 * logits (keep_outputs). */
static void loss_forward(struct train *tr)
{
	struct step *s = &tr->s;
	int64_t chunk = tr->chunk;
	int yf;

	if (s->fam->norm == NORM_LAYER) { /* ln_f keeps its input */
		push(&tr->head_saved, tr->hidden);
		yf = layer_norm(s, &tr->head_saved, s->resid_bytes);
	} else {
		s->stage = S_NORM1;
		if (s->resid_bytes == DT_FP32) /* fp32: the norm keeps its input itself */
			save(s, &tr->norm_saved, tr->hidden);
		yf = norm(s, &tr->norm_saved);
		if (s->resid_bytes == DT_BF16) /* the norm keeps its own fp32 copy */
			drop(s, tr->hidden);
	}
	if (!tr->t->grad_ckpt) { /* the model's forward returns: its masks go */
		drop(s, tr->mask[0]), drop(s, tr->mask[1]);
		tr->mask[0] = tr->mask[1] = 0;
	}
	/* bf16: the model's forward returns, and with it the embeddings go, which no layer
	 * keeps (a layer's norm keeps its fp32 copy, GPT-2's the dropout's output) unless
	 * they are the first checkpoint; the caller keeps its own hidden states */
	if (s->resid_bytes == DT_BF16 && tr->emb != tr->inputs && !(tr->ckpts.n && tr->ckpts.v[0] == tr->emb) &&
	    !(tr->no_grad_layers < s->layers && tlist_has(&tr->saved[tr->no_grad_layers], tr->emb)))
		drop(s, tr->emb);

	/* lm_head's weight and input cast to bf16 under autocast; the weight's kept (for the
	 * input's gradient, frozen or not), the input's while the weight trains; the fp32
	 * norm output lives on in the model's forward until the loss is computed */
	int y32 = 0;
	s->part = C_LOGITS;
	if (s->autocast) {
		tr->head_wcast = tensor(s, DT_BF16 * s->vocab * s->hidden);
		y32 = yf;
		yf = tensor(s, DT_BF16 * s->tokens * s->hidden);
	}
	tr->logits = 0;
	for (int64_t done = 0; done < s->tokens; done += chunk) {
		int64_t n = s->tokens - done < chunk ? s->tokens - done : chunk;
		int l1 = tensor(s, s->act_bytes * n * s->vocab);
		if (s->fam->logits_scale) /* logits / logits_scaling: a new tensor */
			l1 = remake(s, l1, s->act_bytes * n * s->vocab);
		if (s->softcap > 0) { /* logits / cap, tanh (kept), x cap */
			int d = tensor(s, s->act_bytes * n * s->vocab);
			drop(s, l1);
			push(&tr->capped, tensor(s, s->act_bytes * n * s->vocab));
			drop(s, d);
			l1 = tensor(s, s->act_bytes * n * s->vocab);
		}
		if (!tr->logits)
			tr->logits = l1;
		else
			push(&tr->tmp, l1);
		int lf = s->act_bytes != DT_FP32 ? tensor(s, DT_FP32 * n * s->vocab) : 0;
		push(&tr->lsm, tensor(s, DT_FP32 * n * s->vocab));
		drop(s, lf);
	}
	if (!tr->head_trains) /* a frozen lm_head keeps no input */
		drop(s, yf);
	free_all(s, &tr->ac_cache); /* the autocast region ends with the loss */
	if (tr->fsdp && !tr->t->keep_gathered) {
		/* resharding, the root's post-forward (the loss is in its forward) frees its
		 * weights too, and the last all-gather's buffer */
		free_all(s, &tr->root);
		fsdp_ag_free(tr);
	}
	drop(s, tr->prev_logits);
	drop(s, y32);
	free_all(s, &tr->prev_kv);
	if (!tr->t->keep_outputs) { /* HF Trainer: the output goes as the loss is taken */
		drop(s, tr->logits);
		tr->logits = 0;
	}
	tr->final_out = yf;
}

/* The backward thread's cuBLAS workspace (cublas_workspace), made once. */
static void backward_workspace(struct train *tr)
{
	if (!tr->backward_workspace) {
		tr->backward_workspace = 1;
		cublas_workspace(&tr->s);
	}
}

/* The loss's backward, chunk by chunk: the log-softmax's gradient, the logits'
 * gradient, and the bf16 cast of it. Then lm_head's: its weight's gradient (under
 * autocast a bf16 one, cast to fp32 once the logits' gradient has gone) and its
 * input's, through the final norm into the residual stream's gradient. */
static void loss_backward(struct train *tr)
{
	struct step *s = &tr->s;
	int64_t chunk = tr->chunk, gw = tr->head_trains ? tr->grad_bytes : 0;

	s->part = C_LOGITS, s->phase = "backward";
	/* FSDP2's root pre-backward: resharding, the root's weights gathered again (its
	 * buffer freed once copied out) and the last layer's all-gather issued ahead; kept,
	 * the forward's last all-gather buffer freed */
	if (tr->fsdp && !tr->t->keep_gathered) {
		fsdp_issue(tr, tr->root_bytes);
		fsdp_copy_out(tr, &tr->root, tr->root_param, tr->nroot_param);
		fsdp_ag_free(tr);
		fsdp_issue(tr, tr->layer_bytes);
		tr->issued[s->layers - 1] = 1;
	} else if (tr->fsdp) {
		fsdp_ag_free(tr);
	}

	for (size_t c = 0; c < tr->lsm.n; c++) {
		int64_t n = s->tokens - (int64_t)c * chunk < chunk ? s->tokens - (int64_t)c * chunk : chunk;
		int g1 = tensor(s, DT_FP32 * n * s->vocab), g2 = tensor(s, DT_FP32 * n * s->vocab);
		drop(s, g1), drop(s, tr->lsm.v[c]);
		if (s->act_bytes != DT_FP32) {
			int gb = tensor(s, s->act_bytes * n * s->vocab);
			drop(s, g2);
			g2 = gb;
		}
		if (s->fam->logits_scale) /* the division's backward: / logits_scaling */
			g2 = remake(s, g2, s->act_bytes * n * s->vocab);
		if (c < tr->capped.n) { /* the softcap's backward: x cap, tanh's, / cap */
			int64_t b = s->act_bytes * n * s->vocab;
			int gm = tensor(s, b);
			drop(s, g2);
			int gt = tensor(s, b);
			drop(s, gm), drop(s, tr->capped.v[c]);
			g2 = tensor(s, b);
			drop(s, gt);
		}
		push(&tr->tmp, g2);
	}
	tr->lsm.n = 0;
	tr->capped.n = 0;
	s->part = C_BWD_TEMP;
	int gwb = 0;
	tr->head_grad = 0;
	if (gw && s->autocast)
		gwb = tensor(s, DT_BF16 * s->vocab * s->hidden);
	else if (gw)
		push(&tr->grads, tr->head_grad = tensor_as(s, s->vocab * s->hidden * gw, C_GRADS));
	if (gw)
		backward_workspace(tr);
	int gh = tensor(s, s->act_bytes * s->tokens * s->hidden);
	backward_workspace(tr);
	free_all(s, &tr->tmp);
	/* lm_head's node lets go of what it saved (the weight's cast, its input) as it
	 * returns, before its gradients go on: the input's cast back under autocast, then
	 * the weight's */
	drop(s, tr->head_wcast);
	tr->head_wcast = 0;
	drop(s, tr->final_out);
	int gb = (int)s->act_bytes, ob = norm_out_bytes(s, s->resid_bytes);
	if (gb != ob) /* autocast's cast for lm_head, backward */
		gh = remake(s, gh, ob * s->tokens * s->hidden), gb = ob;
	if (gwb) {
		push(&tr->grads, tr->head_grad = tensor_as(s, s->vocab * s->hidden * gw, C_GRADS));
		drop(s, gwb);
	}
	free_all(s, &tr->head_saved);
	if (tr->grad_bytes) /* the final norm's weight (GPT-2's ln_f: and bias) */
		for (int i = 0; i < norm_tensors(s); i++)
			push(&tr->grads, tensor_as(s, s->hidden * tr->grad_bytes, C_GRADS));
	if (s->fam->norm != NORM_LAYER) { /* the final norm's backward node by node */
		tr->grad_res = norm_backward(s, gh, gb, &tr->norm_saved, S_NORM1_W, S_NORM1, 0);
		free_all(s, &tr->norm_saved);
		return;
	}
	tr->grad_res = tensor(s, s->resid_bytes * s->tokens * s->hidden);
	drop(s, gh);
}

/* The layers' backward, last first (a checkpointed layer runs its forward again,
 * keeping what its backward needs), then the embedding's: its own gradient, or (tied)
 * a dense one added into lm_head's. The step's output (logits, cache) stays with the
 * caller into the next step. */
/* Layer l's backward (low: the lowest trained layer using each rotary set): a
 * checkpointed layer runs its forward again first, keeping what its backward needs;
 * then what it saved goes, its checkpoint (the first's stays to the end), and FSDP2's
 * reduce-scatter and reshard. Returns the residual stream's gradient below it. */
static int layer_step_backward(struct train *tr, int64_t l, const int64_t *low, int gres)
{
	struct step *s = &tr->s;
	const struct train_settings *t = tr->t;
	struct tlist *sv = &tr->saved[l];
	int64_t first = tr->no_grad_layers;
	size_t from = tr->grads.n;

	layer_begin(s, l);
	fsdp_gather(tr, l, -1);
	if (t->grad_ckpt) {
		int in = tr->ckpts.v[l - first];
		s->nograd_in = input_nograd(tr, l);
		s->part = C_ACTIVATIONS, s->phase = "recompute";
		s->early_stop = 1;
		int out = layer_forward(s, in, sv, layer_frozen(t, l));
		s->early_stop = 0;
		s->part = C_BWD_TEMP, s->phase = "backward";
		s->nograd_in = 0;
		drop(s, out);
	}
	int k = rotary_set(s, l);
	struct tlist last = { 0 };
	if (low[k] == l && tr->rot.n >= 2 * (size_t)k + 2) /* its set's last user */
		last.v = &tr->rot.v[2 * k], last.n = 2;
	s->rot_last = last.n ? &last : NULL;
	s->recomputed = t->grad_ckpt;
	gres = layer_backward(s, gres, sv, &tr->grads, layer_frozen(t, l) ? 0 : tr->grad_bytes);
	s->recomputed = 0;
	s->rot_last = NULL;
	for (size_t i = 0; i < sv->n; i++)
		if (sv->v[i] != tr->emb)
			drop(s, sv->v[i]);
	sv->n = 0;
	if (t->grad_ckpt && l > first)
		drop(s, tr->ckpts.v[l - first]);
	fsdp_reduce_scatter(tr, from);
	fsdp_reshard(tr, l);
	return gres;
}

/* The embedding's backward from the residual stream's gradient gres (freed): its own
 * gradient, or (tied) a dense one added into lm_head's. */
static void embed_backward(struct train *tr, int gres)
{
	struct step *s = &tr->s;
	int64_t T = s->tokens;

	if (s->fam->embed_scale) /* the embeddings' scaling's backward */
		gres = remake(s, gres, s->resid_bytes * T * s->hidden);
	/* the dense gradient, then the kernel's partial sums per segment of sorted
	 * indices (as traced: a tenth more rows than tokens, fp32) */
	int ge = tensor_as(s, s->vocab * s->hidden * tr->grad_bytes, C_GRADS);
	int ps = tensor(s, (T + T / pytorch_constants()->embed_partial_per) * s->hidden * DT_FP32);
	drop(s, ps), drop(s, gres);
	if (tr->m->tied && tr->head_grad && !s->autocast) {
		/* autograd adds the two out of place (lm_head's gradient, an mm's
		 * transpose, is not one it may add into): the sum is a new tensor;
		 * under autocast that gradient is the weight cast's backward, a new
		 * tensor of its own, and the embedding's is added into it */
		for (size_t i = 0; i < tr->grads.n; i++)
			if (tr->grads.v[i] == tr->head_grad) {
				tr->grads.v[i] = tensor_as(s, s->vocab * s->hidden * tr->grad_bytes, C_GRADS);
				drop(s, tr->head_grad);
			}
		drop(s, ge);
	} else if (tr->m->tied) {
		drop(s, ge);
	} else {
		push(&tr->grads, ge);
	}
}

/* The layers' backward, last first, then the embedding's. The step's output (logits,
 * cache) stays with the caller into the next step. */
static void layers_backward(struct train *tr)
{
	struct step *s = &tr->s;
	const struct train_settings *t = tr->t;
	int gres = tr->grad_res;
	int64_t low[2] = { -1, -1 }; /* the lowest trained layer using each rotary set */

	for (int64_t l = tr->no_grad_layers; l < s->layers; l++) {
		int k = rotary_set(s, l);
		if (low[k] < 0 && (!s->nope_step || (l + 1) % s->nope_step)) /* (a layer without rotary: none) */
			low[k] = l;
	}
	for (int64_t l = s->layers - 1; l >= tr->no_grad_layers; l--)
		gres = layer_step_backward(tr, l, low, gres);
	if (t->grad_ckpt && tr->ckpts.n && tr->ckpts.v[0] != tr->emb)
		drop(s, tr->ckpts.v[0]);
	tr->ckpts.n = 0;
	free_all(s, &tr->rot);
	drop(s, tr->mask[0]), drop(s, tr->mask[1]);
	tr->mask[0] = tr->mask[1] = 0;
	if (s->fam->positions == POS_LEARNED && tr->grad_bytes) /* wpe's */
		push(&tr->grads, tensor_as(s, s->positions * s->hidden * tr->grad_bytes, C_GRADS));
	if (tr->grad_bytes && tr->embed_trains) {
		embed_backward(tr, gres);
		gres = 0;
	}
	drop(s, gres), drop(s, tr->hidden);
	if (tr->emb != tr->inputs)
		drop(s, tr->emb);
	if (tr->fsdp) { /* the root's gradients reduce-scattered, its weights resharded */
		fsdp_reduce_scatter(tr, 0);
		for (int64_t l = 0; l < s->layers; l++)
			fsdp_reshard(tr, l);
		free_all(s, &tr->root);
		fsdp_ag_free(tr);
		struct tlist whole = tr->grads;
		tr->grads = tr->shards;
		tr->shards = whole;
		tr->shards.n = 0;
	}
	tr->prev_logits = tr->logits;
	if (!tr->t->keep_outputs) { /* the cache, held by no output, goes with the backward */
		free_all(s, &tr->kv);
		return;
	}
	struct tlist held = tr->prev_kv;
	tr->prev_kv = tr->kv;
	tr->kv = held;
}

/* The optimizer step: states made at the first, per trained tensor (a ZeRO-1 rank keeps
 * its 1/dp share); foreach AdamW's sqrt copy of exp_avg_sq; then the gradients go. */
static void optimizer_step(struct train *tr)
{
	struct step *s = &tr->s;
	const struct train_settings *t = tr->t;
	int64_t zd = t->zero_stage >= 1 ? t->dp : 1, shard = tr->lora ? 1 : tr->shard;

	s->part = C_OPT_TEMP, s->phase = "optimizer step";
	if (t->opt == OPT_ADAMW || (t->opt == OPT_SGD && t->momentum > 0)) {
		if (!tr->states.n)
			for (size_t i = 0; i < tr->trained.n; i++) {
				int64_t b = tensor_bytes(s, tr->trained.v[i]) * shard / zd;
				push(&tr->states, tensor_as(s, b, C_OPT_STATES));
				if (t->opt == OPT_ADAMW)
					push(&tr->states, tensor_as(s, b, C_OPT_STATES));
			}
		if (t->opt == OPT_ADAMW && !t->fused) {
			for (size_t i = 0; i < tr->trained.n; i++)
				push(&tr->tmp, tensor_as(s, tensor_bytes(s, tr->trained.v[i]) * shard / zd, C_OPT_TEMP));
			free_all(s, &tr->tmp);
		}
	}
	free_all(s, &tr->grads);
}

/* The run's peaks and the breakdown at its allocated peak. */
static void step_result(struct step *s, struct sim_result *r)
{
	peak_take(s);
	r->max_allocated_bytes = s->a.max_allocated_bytes;
	r->max_reserved_bytes = s->a.max_reserved_bytes;
	memcpy(r->parts, s->peak_parts, sizeof(r->parts));
	r->peak_phase = s->peak_phase;
	r->oom = s->a.oom;
	r->min_reserved_bytes = s->a.max_occupied_bytes;
	r->live_peak_bytes = s->a.max_live_low_bytes;
	r->largest_transient_bytes = s->a.max_freed_bytes;
}

static void train_finish(struct train *tr, struct sim_result *r)
{
	struct step *s = &tr->s;

	step_result(s, r);
	for (int64_t l = 0; l < s->layers; l++)
		free(tr->saved[l].v), free(tr->saved[l].tag);
	free(tr->saved);
	free(tr->params.v), free(tr->trained.v), free(tr->states.v), free(tr->grads.v), free(tr->ckpts.v), free(tr->tmp.v);
	free(tr->head_saved.v), free(tr->head_saved.tag), free(tr->norm_saved.v), free(tr->norm_saved.tag);
	free(tr->rot.v), free(tr->rot.tag);
	free(tr->lsm.v), free(tr->capped.v);
	free(tr->kv.v), free(tr->prev_kv.v), free(tr->ac_cache.v), free(tr->shards.v), free(tr->buckets.v);
	for (int64_t l = 0; tr->gathered && l < s->layers; l++)
		free(tr->gathered[l].v);
	free(tr->gathered), free(tr->issued), free(tr->root.v);
	free(s->block_of), free(s->bytes_of), free(s->part_of);
	alloc_sim_free(&s->a);
}

/* The first step (counting from 0) that repeats the one before it when it starts where
 * that one did. */
#define STEADY_FROM 2

/* The caller is told once when the plain run's live segments pass t->past_bytes (a
 * jittered run's peak is a spread: it tells nothing). */
static void tell_past(struct train *tr, uint64_t jitter_seed)
{
	const struct alloc_sim *a = &tr->s.a;

	if (tr->t->past && !jitter_seed && !tr->past_told && a->max_occupied_bytes > tr->t->past_bytes) {
		tr->past_told = 1;
		tr->t->past(tr->t->past_ctx);
	}
}

int sim_train(const struct model_shape *m, const struct train_settings *t, int steps, uint64_t jitter_seed,
	      struct sim_result *r)
{
	struct train tr = { 0 };

	if (t->inference)
		return -EINVAL;
	if (steps < 1 || steps > SIM_MAX_STEPS)
		return -EINVAL;
	memset(r, 0, sizeof(*r));
	train_start(&tr, m, t);
	/* the seed mixed (splitmix64's constant), so that neighbouring seeds start apart */
	tr.s.jitter = jitter_seed ? 1 << ((jitter_seed - 1) % 4) : 0;
	tr.s.jitter_state = jitter_seed * 0x9E3779B97F4A7C15ULL;
	uint64_t ended[SIM_MAX_STEPS];
	for (int step = 0; step < steps; step++) {
		tell_past(&tr, jitter_seed);
		train_forward(&tr, step);
		tell_past(&tr, jitter_seed);
		loss_forward(&tr);
		loss_backward(&tr);
		tell_past(&tr, jitter_seed);
		layers_backward(&tr);
		optimizer_step(&tr);
		/* from the third step on every step asks for the same blocks (the first makes
		 * the states, DDP rebuilds its buckets in the second): once one ends where an
		 * earlier one from the second on did, the rest of the run goes round the steps
		 * between (often two: the last step's output in one hole, then in another), and
		 * its peaks are known */
		if (jitter_seed) /* a jittered run's steps differ: it runs them all */
			continue;
		ended[step] = alloc_sim_digest(&tr.s.a);
		int again = 0;
		for (int j = STEADY_FROM - 1; j < step; j++)
			again |= ended[j] == ended[step];
		if (again)
			break;
	}
	train_finish(&tr, r);
	return 0;
}

/* A cache tensor (id) grown to ctx tokens a sequence: keys' and values' as sdpa has them
 * (kv_bytes), latent attention's latents as they were made. */
static int64_t cache_grown(const struct step *s, int id, int64_t ctx)
{
	if (s->fam->attn == ATTN_MLA)
		return s->bytes_of[id] / s->seq * ctx;
	return kv_bytes(s) * s->batch * ctx * s->kv_dim;
}

/* An inference prefill's embeddings, held by the model's forward to its end (into *emb;
 * scaled: a new tensor, see embed_scale_kind), and GPT-2's learned positions'
 * embeddings (one sequence's, held too, into *pos; 0 for others) and their sum. Returns
 * the first layer's input. */
static int infer_embeddings(struct step *s, int step, int *emb, int *pos)
{
	int64_t bytes = s->weight_bytes * s->tokens * s->hidden;
	int x = *emb = tensor(s, bytes);

	*pos = 0;
	if (s->fam->embed_scale) {
		x = tensor(s, bytes);
		if (s->fam->embed_scale == EMBED_SCALED_REPLACES) {
			drop(s, *emb);
			*emb = x;
		}
	}
	if (s->fam->positions == POS_LEARNED) {
		if (!step)
			cublas_workspace(s);
		*pos = tensor(s, s->weight_bytes * s->seq * s->hidden);
		x = tensor(s, bytes);
	}
	return x;
}

int sim_infer(const struct model_shape *m, const struct train_settings *t, int steps, struct sim_result *r)
{
	struct step s = { 0 };
	struct tlist params = { 0 }, cache = { 0 }, rot = { 0 };
	int64_t ctx = t->context > t->seq ? t->context : t->seq;

	if (!t->inference)
		return -EINVAL;
	memset(r, 0, sizeof(*r));
	setup(&s, m, t);
	s.eval = 1;
	alloc_sim_init(&s.a);
	s.a.limit_bytes = t->limit_bytes;
	s.a.expandable = t->expandable;
	s.part = C_WEIGHTS, s.phase = "load";
	tensor(&s, 0);
	load(&s, m, t, &params, NULL, 1);
	for (int step = 0; step < steps; step++) {
		s.part = C_ACTIVATIONS, s.phase = "prefill";
		/* the prefill of batch x seq tokens: the embeddings, the masks, rotary cos
		 * and sin, the layers */
		int emb, pos, x = infer_embeddings(&s, step, &emb, &pos), em[2];
		model_masks(&s, 1, em);
		rotary(&s, &rot, step);
		for (int64_t l = 0; l < s.layers; l++) {
			layer_begin(&s, l);
			int out = plain_layer(&s, x, &cache);
			if (x != emb)
				drop(&s, x);
			x = out;
		}
		/* the final norm, lm_head over the last position only (generate()) or over
		 * every position (model(input_ids)) */
		int yf = s.fam->norm == NORM_LAYER ? layer_norm(&s, NULL, s.resid_bytes)
						   : plain_norm(&s, s.tokens, s.hidden, s.resid_bytes);
		drop(&s, x), drop(&s, pos), free_all(&s, &rot), drop(&s, emb), drop(&s, em[0]), drop(&s, em[1]);
		int64_t lb = s.act_bytes * (t->logits_all ? s.tokens : s.batch) * s.vocab;
		s.part = C_LOGITS;
		int logits = tensor(&s, lb);
		drop(&s, yf);
		if (s.fam->logits_scale) /* logits / logits_scaling */
			logits = remake(&s, logits, lb);
		/* gemma2's final softcapping: / cap, tanh, x cap, each a new tensor while the
		 * last one still lives */
		for (int i = 0; s.softcap > 0 && i < 3; i++) {
			int next = tensor(&s, lb);
			drop(&s, logits);
			logits = next;
		}
		/* generating up to the context: each layer's cache grows by concatenation;
		 * its last growth holds the old and the new tensor at once */
		s.phase = "generate";
		if (ctx > s.seq)
			for (size_t i = 0; i < cache.n; i++) {
				/* (a hybrid model's Gated DeltaNet states keep their size) */
				if (s.full_step && s.bytes_of[cache.v[i]] != kv_bytes(&s) * s.tokens * s.kv_dim)
					continue;
				int grown = tensor_as(&s, cache_grown(&s, cache.v[i], ctx), C_KV_CACHE);
				drop(&s, cache.v[i]);
				cache.v[i] = grown;
			}
		/* the caller drops the output (cache and logits) before the next batch */
		free_all(&s, &cache);
		drop(&s, logits);
	}
	step_result(&s, r);
	free(params.v), free(cache.v), free(rot.v), free(rot.tag);
	free(s.block_of), free(s.bytes_of), free(s.part_of);
	alloc_sim_free(&s.a);
	return 0;
}
