/* The rotary embedding: the model's cos and sin, q and k rotated (whole, partly, or
 * with a pass-through copy), and the rotation's backward. Other positions (llama4_text's
 * complex rotation, its L2 norm and temperature) are op_position.c's. */

#include "plan/dtype.h"
#include "plan/sim_internal.h"

/* Bytes an element of the rotation's products: fp32 with fp32 cos and sin (autocast's,
 * or a family's rope_fp32, which casts the rotated q and k back). */
static int64_t rope_bytes(const struct step *s)
{
	return s->fam->rope_fp32 ? DT_FP32 : kv_bytes(s);
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

/* The rotary embedding's sets of cos and sin: gemma3's (gemma's norms with q/k norms)
 * local and global layers have one each; GPT-2 has none. */
static int rotary_sets(const struct step *s)
{
	return s->fam->positions == POS_ROPE ? s->fam->rotary_sets : 0;
}

/* The rotary set layer l uses (rotary's): gemma3's global layers, every
 * sliding_pattern-th, the second. */
int rotary_set(const struct step *s, int64_t l)
{
	return rotary_sets(s) == 2 && s->sliding_window && (l + 1) % s->sliding_pattern == 0;
}

/* The rotary embedding's cos and sin for the step (the model's, once a forward: one
 * sequence's positions, head_dim wide, the model called without position_ids; gemma3's
 * local and global layers each have a set): the frequencies' product (at step 0 the
 * first product: cuBLAS's workspace after it) and their concatenation (fp32), cos and
 * sin scaled, cast to the residual stream's dtype when it is narrower. Held in rot. */
void rotary(struct step *s, struct tlist *rot, int step)
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
