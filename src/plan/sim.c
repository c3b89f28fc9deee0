#include "plan/sim.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "plan/alloc.h"
#include "plan/lora.h"
#include "util/xalloc.h"

/* A list of live tensors (ids into the step's table); a layer's saved tensors carry the
 * stage of its backward pass that lets them go (enum stage). */
struct tlist {
	int *v;
	unsigned char *tag;
	size_t n, cap;
};

/* Where in a layer's backward pass autograd frees what the forward saved: each node
 * drops its saved tensors once it has run. In backward order. */
enum stage {
	S_DOWN,    /* down_proj: its input (the product) */
	S_MUL,     /* act x up: act and up */
	S_GATE,    /* silu: gate (phi3: gate_up) */
	S_MLP_IN,  /* gate/up projections: their input or autocast's casts */
	S_NORM2,   /* the post-attention norm */
	S_O_IN,    /* o_proj's adapter; gemma2's post-attention norm */
	S_SDPA,    /* attention: q, k, v, output, log-sum-exp */
	S_ROPE,    /* qwen3's q/k norms */
	S_QKV_IN,  /* q/k/v projections: their input or autocast's casts */
	S_NORM1,   /* the input norm */
};

struct step {
	struct alloc_sim a;
	int *blk;                 /* tensor id -> block, -1 when freed; id 0 unused */
	size_t n, cap;
	/* the shape, in bytes and elements */
	int64_t T, B, S, h, L, heads, qd, k, I, V;
	int w;                    /* weights' bytes */
	int ab;                   /* linear outputs' bytes: 2, or 4 for fp32 without autocast */
	int rs;                   /* the residual stream's bytes: 4 with fp32 weights */
	int ac, fp32;
	int gemma, qk_norm, norms;  /* gemma's norm, qwen3's q/k norms, norms a layer */
	int64_t kv_heads;
	double softcap;           /* gemma2's final logit softcapping; 0 none */
	int fq;                   /* phi3: fused qkv_proj and gate_up_proj */
	int full;                 /* the base weights train (not LoRA): linears keep their inputs */
	unsigned lt;              /* LoRA: the LORA_* targets */
	int64_t ad[14];           /* LoRA: a layer's adapter tensors (A, B per target), elements */
	int ad_mlp[14], nad;      /* ... which are the MLP's, and how many */
	int64_t r;                /* LoRA: rank */
	int stage;                /* what layer_forward saves now is freed at this stage */
	int64_t lp[12];           /* one layer's parameter tensors, elements: the attention's */
	int nlp, na, nm;          /* (na), the MLP's (nm), then norms and biases */
	int io;                   /* o_proj's place among them */
	struct tlist *kv;         /* training with use_cache: the cache's tensors, else NULL */
};

static int ta(struct step *s, int64_t bytes)
{
	if (s->n == s->cap) {
		s->cap = s->cap ? s->cap * 2 : 4096;
		s->blk = xrealloc(s->blk, s->cap * sizeof(*s->blk));
	}
	s->blk[s->n] = alloc_sim_malloc(&s->a, bytes > 0 ? (uint64_t)bytes : 1);
	return (int)s->n++;
}

static void tf(struct step *s, int id)
{
	if (id > 0 && s->blk[id] >= 0) {
		alloc_sim_release(&s->a, s->blk[id]);
		s->blk[id] = -1;
	}
}

static void push(struct tlist *l, int id)
{
	if (l->n == l->cap) {
		l->cap = l->cap ? l->cap * 2 : 64;
		l->v = xrealloc(l->v, l->cap * sizeof(*l->v));
	}
	l->v[l->n++] = id;
}

/* Keep a tensor for the backward pass, freed at the current stage. */
static void save(struct step *s, struct tlist *l, int id)
{
	if (l->n == l->cap)
		l->tag = xrealloc(l->tag, (l->cap ? l->cap * 2 : 64) * sizeof(*l->tag));
	l->tag[l->n] = (unsigned char)s->stage;
	push(l, id);
}

/* Free what a layer saved for one stage of its backward. */
static void release(struct step *s, struct tlist *l, enum stage st)
{
	for (size_t i = 0; i < l->n; i++)
		if (l->tag[i] == st)
			tf(s, l->v[i]);
}

static void free_all(struct step *s, struct tlist *l)
{
	for (size_t i = 0; i < l->n; i++)
		tf(s, l->v[i]);
	l->n = 0;
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

	if (in_bytes == 2)
		save(s, sv, ta(s, 4 * u));
	int tmp = ta(s, 4 * u);
	int r = ta(s, 4 * rows);
	tf(s, tmp);
	save(s, sv, r);
	int n32 = ta(s, 4 * u);
	if (s->gemma) {
		int out;
		if (in_bytes == 4) {
			out = ta(s, 4 * u);
		} else {
			int p32 = ta(s, 4 * u);
			out = ta(s, 2 * u);
			tf(s, p32);
		}
		if (s->full)
			save(s, sv, n32);
		else
			tf(s, n32);
		return out;
	}
	kept = in_bytes == 2 ? ta(s, 2 * u) : n32;
	int out = ta(s, in_bytes * u);
	if (kept != n32) /* the fp32 tensor lives to the norm's return */
		tf(s, n32);
	if (s->full)
		save(s, sv, kept);
	else
		tf(s, kept);
	return out;
}

/* The same norm without autograd: the fp32 copy goes once the normalized tensor exists,
 * the normalized tensor at the norm's return, the cast once multiplied. */
static int plain_norm(struct step *s, int64_t rows, int64_t dim, int in_bytes)
{
	int64_t u = rows * dim;
	int x32 = in_bytes == 2 ? ta(s, 4 * u) : 0;
	int tmp = ta(s, 4 * u);
	tf(s, tmp);
	int n32 = ta(s, 4 * u);
	tf(s, x32);
	int cast = s->gemma ? ta(s, 4 * u) : in_bytes == 2 ? ta(s, 2 * u) : 0;
	if (s->gemma)
		tf(s, n32);
	int out = ta(s, in_bytes * u);
	tf(s, cast), tf(s, n32);
	return out;
}

/* gemma2 normalizes a sublayer's output (attention's, the MLP's) before the residual
 * add: x goes, the norm's output comes back; with sv NULL, without autograd. Other
 * models return x as it is. */
static int post_norm(struct step *s, struct tlist *sv, int x)
{
	if (s->norms != 4)
		return x;
	int n = sv ? norm_of(s, sv, s->T, s->h, (int)s->ab) : plain_norm(s, s->T, s->h, (int)s->ab);
	tf(s, x);
	return n;
}

/* The rotary embedding of one of q, k (bytes; in_bytes before: under autocast the
 * products with fp32 cos and sin are fp32): x cos, rotate_half(x) (the negated half,
 * then both halves concatenated) times sin, then their sum; phi3 concatenates the rotated part with the (empty) pass-through part, one copy
 * more. */
static int rope(struct step *s, int64_t bytes, int64_t in_bytes)
{
	int t1 = ta(s, bytes), neg = ta(s, in_bytes / 2), rh = ta(s, in_bytes);
	tf(s, neg);
	int t2 = ta(s, bytes);
	tf(s, rh);
	int e = ta(s, bytes);

	tf(s, t1), tf(s, t2);
	if (!s->fq)
		return e;
	int out = ta(s, bytes);
	tf(s, e);
	return out;
}

/* A linear layer's output over the step's tokens, in_u units in, out_u out, w_elems
 * weights; cast_in: its input is fp32 under autocast. With full fine-tuning the caller
 * keeps its input (for the weight's gradient); a frozen base keeps nothing, and a LoRA
 * adapter on it (PEFT's: base(x) + B(A(x.to(fp32))) x scale,
 * cast back) keeps its fp32 copy of the input and A's output. */
static int linear(struct step *s, struct tlist *sv, int64_t in_u, int64_t out_u, unsigned target, int64_t w_elems,
		  int cast_in)
{
	int64_t T = s->T;
	int cast = 0;

	/* under autocast: the weight's bf16 cast (autocast's cache; a trained weight's is
	 * kept for the backward pass), and a bf16 cast of an fp32 input, kept by the
	 * product when the weight trains */
	if (s->ac && s->full)
		save(s, sv, ta(s, 2 * w_elems));
	if (cast_in) {
		cast = ta(s, 2 * T * in_u);
		if (s->full)
			save(s, sv, cast), cast = 0;
	}
	int out = ta(s, s->ab * T * out_u);
	tf(s, cast);
	if (s->full || !(s->lt & target))
		return out;
	save(s, sv, ta(s, 4 * T * in_u));
	save(s, sv, ta(s, 4 * T * s->r));
	int b = ta(s, 4 * T * out_u), sc = ta(s, 4 * T * out_u);
	tf(s, b);
	int c = ta(s, s->ab * T * out_u);
	tf(s, sc);
	int sum = ta(s, s->ab * T * out_u);
	tf(s, out), tf(s, c);
	return sum;
}

static int norm(struct step *s, struct tlist *sv)
{
	return norm_of(s, sv, s->T, s->h, s->rs);
}

/* One decoder layer's forward for training: what the backward pass needs goes into sv.
 * A frozen input (LoRA's first layer: the embedding does not train) makes the first
 * norm keep nothing. Returns the layer's output. */
static int layer_forward(struct step *s, int in, struct tlist *sv, int frozen_in)
{
	int64_t T = s->T, h = s->h, I = s->I, qd = s->qd, k = s->k, ab = s->ab;
	struct tlist none = { 0 };
	int out;

	s->stage = S_NORM1;
	int y = norm(s, frozen_in ? &none : sv);
	free_all(s, &none);
	s->stage = S_QKV_IN;
	free(none.v), free(none.tag);
	if (s->full && !s->ac) { /* q, k, v keep their input (under autocast, their casts) */
		save(s, sv, y);
		y = 0;
	}
	int q = 0, kk = 0, v;
	if (s->fq) { /* q, k and v are views of one output */
		v = linear(s, sv, h, qd + 2 * k, LORA_Q | LORA_K | LORA_V, s->lp[1], s->ac);
	} else {
		q = linear(s, sv, h, qd, LORA_Q, s->lp[0], s->ac);
		kk = linear(s, sv, h, k, LORA_K, s->lp[1], s->ac);
		v = linear(s, sv, h, k, LORA_V, s->lp[2], s->ac);
	}
	/* under autocast, one bf16 hidden-sized tensor a layer more than is written out
	 * above: fitted on the fixtures' autocast cases (it was 4h + 7k bytes a token
	 * before the cache and the casts' order were) */
	if (s->ac && s->full)
		save(s, sv, ta(s, 2 * h * T));
	s->stage = S_SDPA;
	if (!s->kv) /* sdpa keeps v (with phi3 a slice: all of qkv) */
		save(s, sv, v);
	if (!s->ac) /* (under autocast the fp32 norm output lives to the attention's end) */
		tf(s, y);
	s->stage = S_ROPE;
	if (s->qk_norm) { /* qwen3 normalizes q and k per head before the rotation */
		int qn = norm_of(s, sv, T * s->heads, qd / s->heads, (int)ab);
		tf(s, q);
		q = qn;
		int kn = norm_of(s, sv, T * s->kv_heads, k / s->kv_heads, (int)ab);
		tf(s, kk);
		kk = kn;
	}
	/* rotary embedding: two temporaries each; with fp32 cos/sin (autocast) the rotated
	 * q and k are fp32 and sdpa casts them back */
	int rq = s->ac ? 4 : (int)ab;
	s->stage = S_SDPA;
	int qe = rope(s, rq * T * qd, ab * T * qd), ke;
	ke = rope(s, rq * T * k, ab * T * k);
	tf(s, q), tf(s, kk); /* apply_rotary_pos_emb returns both */
	if (s->kv) {
		/* use_cache (the model's default; off with checkpointing): the keys and
		 * values are copied into the DynamicCache, and sdpa works on (and keeps)
		 * the copies; the model's output holds the cache until the caller drops it */
		push(s->kv, ta(s, rq * T * k));
		push(s->kv, ta(s, rq * T * k)); /* concatenated onto an empty tensor of k's dtype */
		tf(s, ke);
		ke = 0;
		if (!s->fq)
			tf(s, v);
	}
	if (s->ac) { /* sdpa's bf16 casts (of the cache's fp32 v too) */
		if (s->kv)
			save(s, sv, ta(s, 2 * T * k));
		save(s, sv, ta(s, 2 * T * k));
		save(s, sv, ta(s, 2 * T * qd));
		tf(s, ke);
	} else {
		save(s, sv, qe);
		if (ke)
			save(s, sv, ke);
	}
	save(s, sv, ta(s, ab * T * qd));                 /* attention output, kept by sdpa */
	save(s, sv, ta(s, 4 * s->B * s->heads * s->S)); /* log-sum-exp */
	if (s->fp32) /* fp32 sdpa runs the math kernel, which keeps the probabilities */
		save(s, sv, ta(s, 4 * s->B * s->heads * s->S * s->S));
	if (s->fq) /* phi3's output comes in q's layout: transpose().contiguous() copies it */
		save(s, sv, ta(s, ab * T * qd));
	s->stage = S_O_IN;
	int ao = linear(s, sv, qd, h, LORA_O, s->lp[s->io], 0);
	if (s->fq && s->kv) /* qkv goes at the attention's return */
		tf(s, v);
	if (s->ac) /* the fp32 rotated q and norm output, there too */
		tf(s, qe), tf(s, y);
	ao = post_norm(s, sv, ao);
	int h1 = ta(s, s->rs * T * h);
	tf(s, ao);
	if (s->rs == 4) { /* fp32 residual: the norm keeps its input itself */
		s->stage = S_NORM1;
		save(s, sv, in);
	}
	s->stage = S_NORM2;
	int y2 = norm(s, sv);
	s->stage = S_MLP_IN;
	if (s->full && !s->ac) {
		save(s, sv, y2);
		y2 = 0;
	}
	/* gate and up (phi3: one tensor of both), act(gate) and act x up: silu keeps gate,
	 * the product keeps act and up, down_proj keeps the product if its weight trains */
	int prod, g;
	if (s->fq) {
		g = linear(s, sv, h, 2 * I, LORA_GATE | LORA_UP, s->lp[s->na], s->ac);
		s->stage = S_GATE;
		save(s, sv, g);
	} else {
		g = linear(s, sv, h, I, LORA_GATE, s->lp[s->na], s->ac);
		s->stage = S_GATE;
		save(s, sv, g);
		s->stage = S_MUL;
		save(s, sv, ta(s, ab * T * I)); /* act(gate) */
		s->stage = S_MLP_IN;
		int u = linear(s, sv, h, I, LORA_UP, s->lp[s->na + 1], s->ac);
		s->stage = S_MUL;
		save(s, sv, u);
	}
	if (s->fq) {
		s->stage = S_MUL;
		save(s, sv, ta(s, ab * T * I)); /* act(gate) */
	}
	if (!s->ac)
		tf(s, y2);
	prod = ta(s, ab * T * I);
	s->stage = S_DOWN;
	int dn = linear(s, sv, I, h, LORA_DOWN, s->lp[s->na + s->nm - 1], 0);
	tf(s, y2);
	if (s->full)
		save(s, sv, prod);
	else
		tf(s, prod);
	dn = post_norm(s, sv, dn);
	out = ta(s, s->rs * T * h);
	tf(s, dn);
	s->stage = S_NORM2;
	if (s->rs == 4)
		save(s, sv, h1);
	else
		tf(s, h1);
	return out;
}

/* The gradients of a layer's LoRA adapters of one half (1: the MLP), last first. */
static void adapter_grads(struct step *s, struct tlist *grads, int mlp_half)
{
	for (int i = s->nad - 1; i >= 0; i--)
		if (s->ad_mlp[i] == mlp_half)
			push(grads, ta(s, s->ad[i] * 4));
}

/* Flash attention's backward workspace, one block: dq accumulated in fp32, with grouped
 * query attention dk and dv for every query head (bf16) before they are summed per kv
 * head, and the softmax's row sums; sizes as the H200's allocator histories show them
 * (32.5 MiB for 8 x 1024 tokens of 16 heads of 64; 64.5 MiB with 4 kv heads). The math
 * kernel (fp32) works otherwise: its dq-sized fp32 temporary stands for it. */
static int64_t flash_workspace(const struct step *s)
{
	int64_t b = 4 * s->T * s->qd;

	if (s->fp32)
		return b;
	if (s->kv_heads < s->heads)
		b += 2 * 2 * s->T * s->qd;
	return b + 4 * s->B * s->heads * s->S + 512;
}

/* One layer's backward, node by node as autograd runs it: gradient temporaries, the
 * weight gradients (into grads, which live to the optimizer step) when each projection's
 * node runs, the input's gradient; what the layer saved (sv) goes stage by stage. A
 * fused projection's input gradient is assembled from its parts' (a concatenation for
 * gate_up's chunks, a sum of zero-padded slices for qkv's). */
static int layer_backward(struct step *s, int gres, struct tlist *sv, struct tlist *grads, int64_t gw_bytes)
{
	int64_t T = s->T, h = s->h, I = s->I, qd = s->qd, k = s->k, ab = s->ab;
	int a = s->na, m = s->nm, t1, t2, t3, t4, gy, n1, n2, gx, cat = 0;

	/* the MLP: down_proj, act x up, silu, then gate and up (phi3: gate_up) */
	if (gw_bytes)
		push(grads, ta(s, s->lp[a + m - 1] * gw_bytes));
	adapter_grads(s, grads, 1);
	t1 = ta(s, ab * T * I);
	release(s, sv, S_DOWN);
	t2 = ta(s, ab * T * I), t3 = ta(s, ab * T * I);
	tf(s, t1);
	release(s, sv, S_MUL);
	t4 = ta(s, ab * T * I);
	tf(s, t3);
	release(s, sv, S_GATE);
	if (s->fq)
		cat = ta(s, 2 * ab * T * I);
	for (int i = a + m - 2; gw_bytes && i >= a; i--)
		push(grads, ta(s, s->lp[i] * gw_bytes));
	gy = ta(s, ab * T * h);
	tf(s, t2), tf(s, t4), tf(s, cat);
	release(s, sv, S_MLP_IN);
	n1 = ta(s, 4 * T * h), n2 = ta(s, 4 * T * h);
	tf(s, gy);
	gx = ta(s, s->rs * T * h);
	tf(s, n1), tf(s, n2), tf(s, gres);
	release(s, sv, S_NORM2);
	gres = gx;
	/* attention: o_proj, sdpa, the rotations, then the q, k, v projections; norms and
	 * biases last */
	if (gw_bytes)
		push(grads, ta(s, s->lp[s->io] * gw_bytes));
	adapter_grads(s, grads, 0);
	t1 = ta(s, ab * T * qd);
	release(s, sv, S_O_IN);
	t2 = ta(s, flash_workspace(s));
	int gq = ta(s, ab * T * qd), gk = ta(s, ab * T * k), gv = ta(s, ab * T * k);
	tf(s, t2), tf(s, t1);
	release(s, sv, S_SDPA);
	release(s, sv, S_ROPE);
	if (s->fq) {
		/* q, k, v were slices of one output: each slice's gradient is a zero-filled
		 * tensor of its size, added into the first */
		int64_t full = ab * T * (qd + 2 * k);
		cat = ta(s, full);
		tf(s, gv);
		int z = ta(s, full);
		tf(s, gk), tf(s, z);
		z = ta(s, full);
		tf(s, gq), tf(s, z);
	}
	for (int i = a - 1; gw_bytes && i >= 0; i--)
		if (i != s->io)
			push(grads, ta(s, s->lp[i] * gw_bytes));
	gy = ta(s, ab * T * h);
	tf(s, gq), tf(s, gk), tf(s, gv), tf(s, cat);
	release(s, sv, S_QKV_IN);
	n1 = ta(s, 4 * T * h), n2 = ta(s, 4 * T * h);
	tf(s, gy);
	gx = ta(s, s->rs * T * h);
	tf(s, n1), tf(s, n2), tf(s, gres);
	release(s, sv, S_NORM1);
	for (int i = s->nlp - 1; gw_bytes && i >= a + m; i--)
		push(grads, ta(s, s->lp[i] * gw_bytes));
	return gx;
}

static void setup(struct step *s, const struct model_shape *m, const struct train_settings *t)
{
	int64_t h = m->hidden, qd = m->heads * m->head_dim, k = m->kv_heads * m->head_dim, I = m->intermediate;

	s->T = t->batch * t->seq, s->B = t->batch, s->S = t->seq;
	s->h = h, s->L = m->layers, s->heads = m->heads, s->qd = qd, s->k = k, s->I = I, s->V = m->vocab;
	s->w = t->param_bytes;
	s->ac = t->autocast;
	s->fp32 = t->param_bytes == 4 && !t->autocast;
	s->ab = s->fp32 ? 4 : 2;
	s->rs = t->param_bytes == 4 ? 4 : 2;
	s->gemma = m->family == ARCH_GEMMA;
	s->qk_norm = m->qk_norm;
	s->norms = m->norms_per_layer;
	s->kv_heads = m->kv_heads;
	s->softcap = m->final_softcap;
	s->fq = m->fused_proj;
	s->full = t->lora_rank <= 0 || t->inference;
	s->lt = t->lora_targets;
	s->r = t->lora_rank;
	if (!s->full) { /* A (in x r) and B (r x out), fp32, per adapted projection */
		struct lora_proj p[LORA_MAX_PROJS];
		int n = lora_projs(m, t->lora_targets, p);
		for (int i = 0; i < n; i++) {
			s->ad[s->nad] = p[i].in * s->r, s->ad_mlp[s->nad++] = p[i].mlp;
			s->ad[s->nad] = s->r * p[i].out, s->ad_mlp[s->nad++] = p[i].mlp;
		}
	}
	/* the layer's weights in construction order: attention (phi3 makes o_proj before
	 * qkv_proj), MLP, the two norms */
	if (s->fq) {
		int64_t lp[] = { qd * h, h * (qd + 2 * k), h * 2 * I, I * h, h, h };
		memcpy(s->lp, lp, sizeof(lp));
		s->nlp = 6, s->na = 2, s->nm = 2, s->io = 0;
	} else {
		int64_t lp[] = { h * qd, h * k, h * k, qd * h, h * I, h * I, I * h, h, h };
		memcpy(s->lp, lp, sizeof(lp));
		s->nlp = 9, s->na = 4, s->nm = 3, s->io = 3;
	}
	if (m->qkv_bias) {
		s->lp[s->nlp++] = qd;
		s->lp[s->nlp++] = k;
		s->lp[s->nlp++] = k;
	}
}

/* One decoder layer's forward keeping nothing for a backward pass (inference, or the
 * first forward of a checkpointed layer): every temporary is freed as soon as Python
 * drops it; with a cache, the layer's keys and values go into it (copies: the cache
 * concatenates onto its empty start). Returns the output; the caller frees the input. */
static int plain_layer(struct step *s, struct tlist *cache)
{
	int64_t T = s->T, h = s->h, I = s->I, qd = s->qd, k = s->k, ab = s->ab;
	struct tlist tmp = { 0 };
	int q = 0, kk = 0, v = 0, qkv = 0;

	int y = plain_norm(s, T, h, s->rs);
	if (s->fq) {
		qkv = ta(s, ab * T * (qd + 2 * k));
	} else {
		q = ta(s, ab * T * qd), kk = ta(s, ab * T * k), v = ta(s, ab * T * k);
	}
	if (s->qk_norm) {
		int qn = plain_norm(s, T * s->heads, qd / s->heads, (int)ab);
		tf(s, q);
		q = qn;
		int kn = plain_norm(s, T * s->kv_heads, k / s->kv_heads, (int)ab);
		tf(s, kk);
		kk = kn;
	}
	int qe = rope(s, ab * T * qd, ab * T * qd);
	int ke = rope(s, ab * T * k, ab * T * k);
	tf(s, q), tf(s, kk);
	if (cache) {
		push(cache, ta(s, ab * T * k));
		push(cache, ta(s, ab * T * k));
	}
	tf(s, ke), tf(s, v);
	if (s->fp32) { /* the math kernel's probabilities */
		int pr = ta(s, 4 * s->B * s->heads * s->S * s->S);
		int o = ta(s, ab * T * qd);
		tf(s, pr);
		push(&tmp, o);
	} else {
		push(&tmp, ta(s, ab * T * qd));
	}
	int ao = ta(s, ab * T * h);
	tf(s, qe); /* the rotated q lives to the attention's return */
	free_all(s, &tmp);
	tf(s, qkv);
	ao = post_norm(s, NULL, ao);
	tf(s, y);
	int h1 = ta(s, s->rs * T * h);
	tf(s, ao);
	int y2 = plain_norm(s, T, h, s->rs);
	/* down(act(gate(x)) * up(x)): phi3's gate_up output lives until its product */
	int gu = 0, a, u = 0;
	if (s->fq) {
		gu = ta(s, ab * T * 2 * I);
		a = ta(s, ab * T * I);
	} else {
		int g = ta(s, ab * T * I);
		a = ta(s, ab * T * I);
		tf(s, g);
		u = ta(s, ab * T * I);
	}
	int p = ta(s, ab * T * I);
	tf(s, a), tf(s, u), tf(s, gu);
	int dn = ta(s, ab * T * h);
	tf(s, p);
	dn = post_norm(s, NULL, dn);
	tf(s, y2);
	int out = ta(s, s->rs * T * h);
	tf(s, dn), tf(s, h1);
	free(tmp.v), free(tmp.tag);
	return out;
}

/* cuBLAS's workspace: PyTorch allocates it through the caching allocator at the first
 * matrix product (the rotary embedding's) and keeps it; 32 MiB on Hopper (seen in the
 * H200's allocator histories; CUBLAS_WORKSPACE_CONFIG changes it). */
static void cublas_workspace(struct step *s)
{
	ta(s, 32LL << 20);
}

/* The weights, in construction order: embedding, layers, final norm, lm_head (when
 * tied, freed again) (a ZeRO-3 shard keeps a 1/dp share); then the named buffers. */
static void load(struct step *s, const struct model_shape *m, const struct train_settings *t,
		 struct tlist *params, int64_t shard)
{
	push(params, ta(s, s->V * s->h * s->w / shard));
	for (int64_t l = 0; l < s->L; l++)
		for (int i = 0; i < s->nlp; i++)
			push(params, ta(s, s->lp[i] * s->w / shard));
	push(params, ta(s, s->h * s->w));
	if (!m->tied)
		push(params, ta(s, s->V * s->h * s->w / shard));
	else /* lm_head is made with its own weight, then tied to the embedding's */
		tf(s, ta(s, s->V * s->h * s->w / shard));
	for (size_t i = 0; i < t->nbuffers; i++)
		for (int64_t c = 0; c < t->buffers[i].count; c++)
			ta(s, (int64_t)t->buffers[i].item_bytes);
}

int sim_train(const struct model_shape *m, const struct train_settings *t, int steps, struct sim_result *r)
{
	struct step s = { 0 };
	struct tlist params = { 0 }, states = { 0 }, grads = { 0 }, ckpts = { 0 }, tmp = { 0 }, nf = { 0 };
	struct tlist *saved;
	int64_t chunk;
	int prev_logits = 0;
	struct tlist kv = { 0 }, prev_kv = { 0 };
	/* what trains: every weight, or only LoRA's adapters (fp32) */
	int lora = t->lora_rank > 0;
	int64_t gw = lora ? 0 : t->param_bytes;

	/* Simulated: the llama family (llama, mistral, qwen2, qwen3, phi3), gemma and
	 * gemma2. Not yet: GPT-2 (its GELU-tanh and dropout as Python ops leave many
	 * temporaries that a first attempt got 5-13 % low): the analytic model answers. */
	if (t->inference || m->family == ARCH_GPT2)
		return -EINVAL;
	memset(r, 0, sizeof(*r));
	setup(&s, m, t);
	alloc_sim_init(&s.a);
	s.a.limit_bytes = t->limit_bytes;
	s.blk = NULL;
	ta(&s, 0); /* id 0 means none */
	saved = xcalloc((size_t)s.L, sizeof(*saved));
	/* a model called for training keeps use_cache unless checkpointing turns it off */
	s.kv = t->grad_ckpt || !t->use_cache ? NULL : &kv;
	chunk = t->loss_chunk > 0 && t->loss_chunk < s.T ? t->loss_chunk : s.T;

	int64_t shard = t->zero_stage >= 3 ? t->dp : 1;
	load(&s, m, t, &params, shard);
	/* LoRA's adapters, fp32, tensor by tensor after the model (their gradients and
	 * states are small-pool blocks, apart from the activations' segments) */
	size_t first = 0;
	if (lora) {
		first = params.n;
		for (int64_t l = 0; l < s.L; l++)
			for (int i = 0; i < s.nad; i++)
				push(&params, ta(&s, s.ad[i] * 4));
	}
	for (int step = 0; step < steps; step++) {
		int x = ta(&s, s.rs * s.T * s.h), hs = x, gres, gh;
		if (!step)
			cublas_workspace(&s);

		if (s.gemma) { /* the embeddings scaled by sqrt(hidden): a new tensor */
			int scaled = ta(&s, s.rs * s.T * s.h);
			tf(&s, x);
			x = hs = scaled;
		}

		for (int64_t l = 0; l < s.L; l++) {
			int out;
			if (t->grad_ckpt) {
				/* a checkpointed layer runs without keeping anything: its
				 * temporaries go as they would without autograd */
				push(&ckpts, hs);
				out = plain_layer(&s, NULL);
			} else {
				out = layer_forward(&s, hs, &saved[l], lora && l == 0);
				/* a bf16 layer keeps no input of its own (its norm keeps an fp32 copy) */
				if (s.rs == 2 && hs != x)
					tf(&s, hs);
			}
			hs = out;
		}
		int yf = norm(&s, &nf);
		if (s.ac && !lora) { /* lm_head's input and weight cast to bf16, kept */
			int c = ta(&s, 2 * s.T * s.h);
			tf(&s, yf);
			yf = c;
			push(&nf, ta(&s, 2 * s.V * s.h));
		}
		/* the loss over chunks, in the forward: logits as returned, their fp32 copy,
		 * the log-softmax (kept); only then does the caller drop the last step's
		 * output (its logits). In the backward: the log-softmax's gradient, the
		 * logits' gradient, and the bf16 cast of it. */
		int lb = 0;
		struct tlist lsm = { 0 };
		for (int64_t done = 0; done < s.T; done += chunk) {
			int64_t n = s.T - done < chunk ? s.T - done : chunk;
			int l1 = ta(&s, s.ab * n * s.V);
			if (s.softcap > 0) { /* logits / cap, tanh (kept), x cap */
				int d = ta(&s, s.ab * n * s.V);
				tf(&s, l1);
				push(&tmp, ta(&s, s.ab * n * s.V));
				tf(&s, d);
				l1 = ta(&s, s.ab * n * s.V);
			}
			if (!lb)
				lb = l1;
			else
				push(&tmp, l1);
			int lf = s.ab != 4 ? ta(&s, 4 * n * s.V) : 0;
			push(&lsm, ta(&s, 4 * n * s.V));
			tf(&s, lf);
		}
		if (lora) /* a frozen lm_head keeps no input */
			tf(&s, yf);
		tf(&s, prev_logits);
		free_all(&s, &prev_kv);
		for (size_t c = 0; c < lsm.n; c++) {
			int64_t n = s.T - (int64_t)c * chunk < chunk ? s.T - (int64_t)c * chunk : chunk;
			int g1 = ta(&s, 4 * n * s.V), g2 = ta(&s, 4 * n * s.V);
			tf(&s, g1), tf(&s, lsm.v[c]);
			if (s.ab != 4) {
				int gb = ta(&s, s.ab * n * s.V);
				tf(&s, g2);
				g2 = gb;
			}
			push(&tmp, g2);
		}
		free(lsm.v);
		/* lm_head's backward: its weight's gradient (under autocast a bf16 one, cast
		 * to fp32 once the logits' gradient has gone) and its input's */
		int gwb = 0;
		if (gw && s.ac)
			gwb = ta(&s, 2 * s.V * s.h);
		else if (gw)
			push(&grads, ta(&s, s.V * s.h * gw));
		gh = ta(&s, s.ab * s.T * s.h);
		free_all(&s, &tmp);
		if (gwb) {
			push(&grads, ta(&s, s.V * s.h * gw));
			tf(&s, gwb);
		}
		free_all(&s, &nf);
		tf(&s, yf);
		gres = ta(&s, s.rs * s.T * s.h);
		tf(&s, gh);
		for (int64_t l = s.L - 1; l >= 0; l--) {
			if (t->grad_ckpt) {
				int out = layer_forward(&s, ckpts.v[l], &saved[l], lora && l == 0);
				tf(&s, out);
			}
			gres = layer_backward(&s, gres, &saved[l], &grads, gw);
			for (size_t i = 0; i < saved[l].n; i++)
				if (saved[l].v[i] != x)
					tf(&s, saved[l].v[i]);
			saved[l].n = 0;
			if (t->grad_ckpt && l > 0)
				tf(&s, ckpts.v[l]);
		}
		ckpts.n = 0;
		/* the embedding's backward: its own gradient, or (tied) a dense one added
		 * into lm_head's */
		if (gw) {
			int ge = ta(&s, s.V * s.h * gw);
			if (m->tied)
				tf(&s, ge);
			else
				push(&grads, ge);
		}
		tf(&s, gres), tf(&s, x), tf(&s, hs);
		prev_logits = lb;
		struct tlist held = prev_kv;
		prev_kv = kv;
		kv = held;

		/* the optimizer step: states created at the first, per trained tensor;
		 * foreach AdamW's sqrt copy of exp_avg_sq */
		int64_t zd = t->zero_stage >= 1 ? t->dp : 1;
		if (t->opt == OPT_ADAMW || (t->opt == OPT_SGD && t->momentum > 0)) {
			if (!states.n)
				for (size_t i = first; i < params.n; i++) {
					int64_t b = (int64_t)s.a.b[s.blk[params.v[i]]].size * (lora ? 1 : shard) / zd;
					push(&states, ta(&s, b));
					if (t->opt == OPT_ADAMW)
						push(&states, ta(&s, b));
				}
			if (t->opt == OPT_ADAMW && !t->fused) {
				for (size_t i = first; i < params.n; i++)
					push(&tmp, ta(&s, (int64_t)s.a.b[s.blk[params.v[i]]].size * (lora ? 1 : shard) / zd));
				free_all(&s, &tmp);
			}
		}
		free_all(&s, &grads);
	}
	r->max_allocated_bytes = s.a.max_allocated_bytes;
	r->max_reserved_bytes = s.a.max_reserved_bytes;
	for (int64_t l = 0; l < s.L; l++)
		free(saved[l].v), free(saved[l].tag);
	free(saved);
	free(params.v), free(states.v), free(grads.v), free(ckpts.v), free(tmp.v), free(nf.v), free(nf.tag);
	free(kv.v), free(prev_kv.v);
	free(s.blk);
	alloc_sim_free(&s.a);
	return 0;
}

int sim_infer(const struct model_shape *m, const struct train_settings *t, int steps, struct sim_result *r)
{
	struct step s = { 0 };
	struct tlist params = { 0 }, cache = { 0 }, tmp = { 0 };
	int64_t ctx = t->context > t->seq ? t->context : t->seq;

	if (!t->inference || m->family == ARCH_GPT2)
		return -EINVAL;
	memset(r, 0, sizeof(*r));
	setup(&s, m, t);
	alloc_sim_init(&s.a);
	s.a.limit_bytes = t->limit_bytes;
	ta(&s, 0);
	load(&s, m, t, &params, 1);
	for (int step = 0; step < steps; step++) {
		/* the prefill of batch x seq tokens: the embeddings (held by the model's
		 * forward to its end; gemma scales them: a new tensor), rotary cos and sin,
		 * the layers */
		int emb = ta(&s, s.w * s.T * s.h), x = emb;
		if (!step)
			cublas_workspace(&s);
		if (s.gemma)
			x = ta(&s, s.w * s.T * s.h);
		int cs = ta(&s, 2 * s.ab * s.T * (s.qd / s.heads));
		for (int64_t l = 0; l < s.L; l++) {
			int out = plain_layer(&s, &cache);
			if (x != emb)
				tf(&s, x);
			x = out;
		}
		/* the final norm, lm_head over the last position only (generate()) */
		int yf = plain_norm(&s, s.T, s.h, s.rs);
		tf(&s, x), tf(&s, cs), tf(&s, emb);
		int logits = ta(&s, s.ab * s.B * s.V);
		tf(&s, yf);
		/* generating up to the context: each layer's cache grows by concatenation;
		 * its last growth holds the old and the new tensor at once */
		if (ctx > s.S)
			for (size_t i = 0; i < cache.n; i++) {
				int grown = ta(&s, s.ab * s.B * ctx * s.k);
				tf(&s, cache.v[i]);
				cache.v[i] = grown;
			}
		/* the caller drops the output (cache and logits) before the next batch */
		free_all(&s, &cache);
		tf(&s, logits);
	}
	r->max_allocated_bytes = s.a.max_allocated_bytes;
	r->max_reserved_bytes = s.a.max_reserved_bytes;
	free(params.v), free(cache.v), free(tmp.v), free(tmp.tag);
	free(s.blk);
	alloc_sim_free(&s.a);
	return 0;
}
