/* GPT-2's block parts (ATTN_GPT2, MLP_GELU): Conv1D projections as addmm, its
 * attention with dropout, gelu_new's MLP, with autograd, without, and their backward. */

#include "plan/dtype.h"
#include "plan/sim_internal.h"

/* Dropout (GPT-2 trains with p 0.1): its mask (one byte a unit, kept) and output; x goes. */
int dropout(struct step *s, struct tlist *sv, int x, int64_t units, int64_t bytes)
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

/* GPT-2's attention (ATTN_GPT2) with autograd over ln_1's output y (0 when kept): c_attn
 * (q, k, v fused, kept by sdpa as views), sdpa (its output and log-sum-exp kept; no
 * rotary, no grouping), c_proj, the residual dropout. Linears keep their input (their
 * bf16 cast under autocast) while the weights train. Returns the dropout's output; y
 * stays with the caller to the residual add. */
int gpt2_attn_forward(struct step *s, struct layer_fwd *c, struct tlist *sv, int y)
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
int gpt2_attn_plain(struct step *s, int y, struct tlist *cache)
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
int gpt2_attn_backward(struct step *s, int gp, struct tlist *sv, struct tlist *grads, int64_t gw, int *bytes)
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
int gelu_mlp_forward(struct step *s, struct layer_fwd *c, struct tlist *sv, int y)
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

int gelu_mlp_plain(struct step *s, int y, struct tlist *cache)
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
int gelu_mlp_backward(struct step *s, int gp, struct tlist *sv, struct tlist *grads, int64_t gw, int *bytes)
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
