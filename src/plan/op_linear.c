/* The projections: a linear layer's forward (with autocast's casts and a LoRA adapter's
 * tensors), without autograd, and its backward (the weight's gradient, then the
 * input's); the sum of an input's gradients; cuBLAS's workspace. */

#include "plan/dtype.h"
#include "plan/pytorch.h"
#include "plan/sim_internal.h"

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
	int wc = s->autocast || s->quant ? tensor(s, DT_BF16 * w_elems) : 0;
	/* (bitsandbytes keeps the quantized weight, not its dequantized copy: the backward
	 * dequantizes it again) */
	if (wc && !s->quant && (s->base_trains || !s->in_nograd))
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

/* A linear keeping nothing for a backward pass: under autocast the weight's bf16 cast
 * and (cast_in) the input's are made for it and go after it, but a checkpointed
 * forward runs with autograd on, so autocast caches a trained weight's cast (ac_cache).
 * Returns the output. */
int plain_linear(struct step *s, int64_t in_u, int64_t out_u, int64_t w_elems, int cast_in, unsigned target)
{
	int64_t T = s->tokens;
	/* (a quantized base's weight: bitsandbytes dequantizes it to bf16 for the product) */
	int w = s->autocast || s->quant ? tensor(s, DT_BF16 * w_elems) : 0;
	int c = s->autocast && cast_in ? tensor(s, DT_BF16 * T * in_u) : 0;
	int out = tensor(s, s->act_bytes * T * out_u);

	drop(s, c);
	if (w && s->ac_cache && s->base_trains && !s->quant)
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

/* The gradients of a layer's LoRA adapters of one half (1: the MLP), last first. */
void adapter_grads(struct step *s, struct tlist *grads, int mlp_half)
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
	int wb = s->autocast || s->quant ? tensor(s, DT_BF16 * w_elems) : 0;

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
int addmm_backward(struct step *s, int g, int64_t in_u, int64_t w_elems, int64_t bias, struct tlist *sv, enum stage st,
		   struct tlist *grads, int64_t gw_bytes)
{
	int64_t T = s->tokens;
	int gi = tensor(s, s->act_bytes * T * in_u);
	weight_grad(s, grads, w_elems, gw_bytes);
	drop(s, tensor(s, sum_staging(T * bias, bias)));
	node_done(s, sv, st, g);
	return gi;
}

/* a + b, a new tensor of the tokens' hidden units (autograd's sum of an input's
 * gradients); both go. */
int grad_sum(struct step *s, int a, int b)
{
	int sum = tensor(s, s->act_bytes * s->tokens * s->hidden);

	drop(s, a), drop(s, b);
	return sum;
}

/* cuBLAS's workspace: PyTorch allocates it through the caching allocator at the first
 * matrix product (the rotary embedding's) and keeps it (its size: plan/pytorch.h). A workspace is a
 * cuBLAS handle's, and handles are a thread's: autograd's backward thread makes a second
 * one at its first product, lm_head's, after that product's first output (every
 * training history recorded on the H200 has both). */
void cublas_workspace(struct step *s)
{
	tensor_as(s, pytorch_constants()->cublas_workspace, C_WORKSPACE);
}
