#include "plan/optimizer.h"

#include <string.h>

#include "plan/dtype.h"

/* bitsandbytes' Optimizer8bit (bitsandbytes/optim/optimizer.py, init_state and
 * get_state_buffer): a tensor of fewer than min_8bit_size elements keeps fp32 states;
 * an 8-bit state has an fp32 absmax for each block of 256 elements (blocks = n // 256,
 * one more for a remainder); the signed and unsigned dynamic maps (256 fp32 each) are
 * moved to the GPU once; a paged optimizer's state buffers of at least 1e5 elements are
 * made by F.get_paged (cudaMallocManaged), the rest, and every absmax, by torch. */
#define BNB_MIN_8BIT_SIZE 4096
#define BNB_BLOCK 256
#define BNB_QMAP_BYTES (2 * 256 * DT_FP32)
#define BNB_PAGED_MIN 100000

/* torchao's low-bit AdamW: its quantile maps are 256 and 16 fp32 values */
#define AO_MIN_QUANT 4096
#define AO_BLOCK_8BIT 256
#define AO_BLOCK_4BIT 128
#define AO_QMAP_8BIT (256 * DT_FP32)
#define AO_QMAP_4BIT (16 * DT_FP32)

#define BNB_8BIT .kind = OS_8BIT, .min_8bit = BNB_MIN_8BIT_SIZE, .block = BNB_BLOCK, .qmap_bytes = BNB_QMAP_BYTES

static const struct optimizer_row rows[] = {
	/* torch.optim.AdamW: foreach's sqrt copy of exp_avg_sq a tensor, all at once;
	 * fused=True none (measured: docs/plan.md) */
	{ .word = "adamw", .opt = OPT_ADAMW, .hf = { "adamw_torch", "adamw_hf" }, .states = 2, .kind = OS_TRAINED,
	  .temps = OT_FOREACH, .ntemps = 1 },
	{ .word = "adamw-fused", .opt = OPT_ADAMW, .fused = 1, .hf = { "adamw_torch_fused" }, .states = 2,
	  .kind = OS_TRAINED },
	/* torch.optim.SGD: a momentum buffer when momentum > 0 (optimizer_states) */
	{ .word = "sgd", .opt = OPT_SGD, .hf = { "sgd" }, .states = 1, .kind = OS_TRAINED },
	{ .word = "none", .opt = OPT_NONE },
	/* bitsandbytes' AdamW8bit: its fused kernel makes no temporaries */
	{ .word = "adamw-8bit", .opt = OPT_ADAMW_8BIT, .hf = { "adamw_bnb_8bit", "adamw_8bit" }, .states = 2,
	  BNB_8BIT, .states_dtype = "8-bit",
	  .said = "bitsandbytes' AdamW8bit: 8-bit blockwise states, modelled, not measured" },
	{ .word = "paged-adamw-8bit", .opt = OPT_PAGED_ADAMW_8BIT, .hf = { "paged_adamw_8bit" }, .states = 2,
	  BNB_8BIT, .paged_min = BNB_PAGED_MIN, .states_dtype = "8-bit",
	  .said = "bitsandbytes' PagedAdamW8bit: 8-bit blockwise states, paged, modelled, not measured" },
	{ .word = "paged-adamw", .opt = OPT_PAGED_ADAMW, .hf = { "paged_adamw_32bit" }, .states = 2, .kind = OS_FP32,
	  .paged_min = BNB_PAGED_MIN, .states_dtype = "fp32",
	  .said = "bitsandbytes' PagedAdamW32bit: fp32 states, paged, modelled, not measured" },
	/* torchao's AdamW8bit and AdamW4bit (torchao/optim/adam.py, subclass_*bit.py): a
	 * tensor of at least 4096 elements that its block divides keeps uint8 codes (two 4-bit
	 * codes a byte), an fp32 scale a block and its own fp32 quantile map; the others
	 * zeros_like states. The step is single_param_adam compiled a tensor at a time: its
	 * fp32 exp_avg, exp_avg_sq and weight taken as materialized, a bound from above */
	{ .word = "adamw-ao-8bit", .opt = OPT_ADAMW_AO_8BIT, .hf = { "adamw_torch_8bit" }, .states = 2,
	  .kind = OS_8BIT, .min_8bit = AO_MIN_QUANT, .block = AO_BLOCK_8BIT, .block_divides = 1, .small_trained = 1,
	  .qmap_each = AO_QMAP_8BIT, .temps = OT_PER_TENSOR, .ntemps = 3, .temps_fp32 = 1, .states_dtype = "8-bit",
	  .said = "torchao's AdamW8bit: 8-bit blockwise states, its step compiled, modelled, not measured" },
	{ .word = "adamw-ao-4bit", .opt = OPT_ADAMW_AO_4BIT, .hf = { "adamw_torch_4bit" }, .states = 2,
	  .kind = OS_8BIT, .code_bits = 4, .min_8bit = AO_MIN_QUANT, .block = AO_BLOCK_4BIT, .block_divides = 1,
	  .small_trained = 1, .qmap_each = AO_QMAP_4BIT, .temps = OT_PER_TENSOR, .ntemps = 3, .temps_fp32 = 1,
	  .states_dtype = "4-bit",
	  .said = "torchao's AdamW4bit: 4-bit blockwise states, its step compiled, modelled, not measured" },
	/* transformers' Adafactor with its defaults (beta1 None: no first moment): the
	 * factored second moment of a matrix, the whole one of others; a tensor's step
	 * makes update = grad^2 + eps and the approximation beside it (fp32), and upcasts a
	 * 16-bit tensor's gradient and weight */
	{ .word = "adafactor", .opt = OPT_ADAFACTOR, .hf = { "adafactor" }, .states = 1, .kind = OS_FACTORED,
	  .temps = OT_PER_TENSOR, .ntemps = 2, .temps_fp32 = 1, .upcast_temps = 2, .states_dtype = "fp32",
	  .said = "transformers' Adafactor: factored fp32 second moment, no first, measured on an H100" },
	/* Lion: bitsandbytes' 32-bit Lion (TrainingArguments' lion_32bit) keeps exp_avg in
	 * fp32; lion-pytorch in the tensor's dtype with an update the tensor's size: fp32
	 * and that temporary, a bound from above for both */
	{ .word = "lion", .opt = OPT_LION, .hf = { "lion_32bit" }, .states = 1, .kind = OS_FP32,
	  .temps = OT_PER_TENSOR, .ntemps = 1, .states_dtype = "fp32",
	  .said = "Lion: one fp32 state, a tensor-sized update a tensor at a time, modelled, not measured" },
};

#define NROWS (sizeof(rows) / sizeof(rows[0]))

const struct optimizer_row *optimizer_at(size_t i)
{
	return i < NROWS ? &rows[i] : NULL;
}

const struct optimizer_row *optimizer_row(const struct train_settings *t)
{
	for (size_t i = 0; i < NROWS; i++)
		if (rows[i].opt == t->opt && !rows[i].fused == !t->fused)
			return &rows[i];
	return &rows[0];
}

const struct optimizer_row *optimizer_by_word(const char *word)
{
	for (size_t i = 0; i < NROWS; i++)
		if (!strcmp(rows[i].word, word))
			return &rows[i];
	return NULL;
}

const struct optimizer_row *optimizer_by_hf(const char *name)
{
	for (size_t i = 0; i < NROWS; i++)
		for (int j = 0; j < OPT_MAX_NAMES && rows[i].hf[j]; j++)
			if (!strcmp(rows[i].hf[j], name))
				return &rows[i];
	return NULL;
}

int optimizer_states(const struct train_settings *t)
{
	if (t->inference || (t->opt == OPT_SGD && !(t->momentum > 0)))
		return 0;
	return optimizer_row(t)->states;
}

/* A state of n elements, bytes of them (its tensor's dtype), into st: on the GPU, or
 * paged when o pages a tensor's of this size. */
static void state_put(const struct optimizer_row *o, int64_t n, int64_t bytes, struct opt_states *st)
{
	if (o->paged_min && n >= o->paged_min)
		st->paged_bytes += bytes;
	else if (st->n < OPT_MAX_STATE_TENSORS)
		st->bytes[st->n++] = bytes;
}

void optimizer_tensor_states(const struct optimizer_row *o, const struct train_settings *t, int64_t elems,
			     int64_t bytes, int64_t side, struct opt_states *st)
{
	int k = optimizer_states(t);

	memset(st, 0, sizeof(*st));
	if (!k)
		return;
	if (o->kind == OS_FACTORED) {
		if (side > 0 && elems > side && elems % side == 0) { /* a row and a column vector */
			st->bytes[st->n++] = elems / side * DT_FP32;
			st->bytes[st->n++] = side * DT_FP32;
		} else {
			st->bytes[st->n++] = elems * DT_FP32;
		}
		return;
	}
	int quantized = o->kind == OS_8BIT && elems >= o->min_8bit && (!o->block_divides || elems % o->block == 0);
	for (int i = 0; i < k; i++)
		if (o->kind == OS_TRAINED || (o->kind == OS_8BIT && !quantized && o->small_trained))
			state_put(o, elems, bytes, st);
		else if (!quantized)
			state_put(o, elems, elems * DT_FP32, st);
		else
			state_put(o, elems, (elems * (o->code_bits ? o->code_bits : 8) + 7) / 8, st);
	/* the absmax (and the quantile map, where each has one) of each quantized state: on
	 * the GPU, paged or not */
	for (int i = 0; quantized && i < k; i++) {
		st->bytes[st->n++] = (elems + o->block - 1) / o->block * DT_FP32;
		if (o->qmap_each)
			st->bytes[st->n++] = o->qmap_each;
	}
}

int optimizer_temps(const struct optimizer_row *o, int64_t elems, int64_t bytes, int64_t *each)
{
	if (o->temps == OT_NONE)
		return 0;
	*each = o->temps_fp32 ? elems * DT_FP32 : bytes;
	return o->ntemps + (elems * DT_FP32 > bytes ? o->upcast_temps : 0);
}
