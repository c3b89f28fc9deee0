#include "plan/precision.h"

#include <errno.h>
#include <string.h>

#include "plan/dtype.h"
#include "plan/optimizer.h"

static const struct preset {
	const char *name;
	int param_bytes, fp16, autocast;
} presets[] = {
	{ "bf16", 2, 0, 0 },
	{ "amp-bf16", 4, 0, 1 },
	{ "fp32", 4, 0, 0 },
	{ "fp16", 2, 1, 0 },
};

#define NPRESETS (sizeof(presets) / sizeof(presets[0]))

int precision_apply(struct train_settings *t, const char *name)
{
	for (size_t i = 0; i < NPRESETS; i++)
		if (!strcmp(name, presets[i].name)) {
			t->param_bytes = presets[i].param_bytes;
			t->fp16 = presets[i].fp16;
			t->autocast = presets[i].autocast;
			return 0;
		}
	return -EINVAL;
}

const char *precision_name(const struct train_settings *t)
{
	if (precision_compute_bytes(t) != precision_weight_bytes(t) || precision_masters(t))
		return NULL; /* (FSDP2's policy, DeepSpeed's masters: said on their lines) */
	for (size_t i = 0; i < NPRESETS; i++)
		if (t->param_bytes == presets[i].param_bytes && !t->autocast == !presets[i].autocast &&
		    (t->param_bytes == 4 || !t->fp16 == !presets[i].fp16))
			return presets[i].name;
	return NULL;
}

static const char *dtype_of(int bytes, int fp16)
{
	return bytes == 4 ? "fp32" : fp16 ? "fp16" : "bf16";
}

int precision_weight_bytes(const struct train_settings *t)
{
	return t->quant && t->kbit_prepare && !t->inference ? DT_FP32 : t->param_bytes;
}

int precision_masters(const struct train_settings *t)
{
	return t->master_weights && !t->inference && !t->lora_rank && t->param_bytes == DT_BF16 && !t->quant;
}

int precision_compute_bytes(const struct train_settings *t)
{
	return t->zero_stage == 3 && t->mp_param_bytes && !t->inference ? t->mp_param_bytes : precision_weight_bytes(t);
}

void precision_dtypes(const struct train_settings *t, struct precision_dtypes *d)
{
	/* LoRA's adapters, their gradients and states are fp32 (PEFT's default) */
	int trained = t->lora_rank ? 4 : t->param_bytes;
	const struct optimizer_row *o = optimizer_row(t);

	d->weights = dtype_of(precision_weight_bytes(t), t->fp16);
	d->compute = precision_compute_bytes(t) != precision_weight_bytes(t)
			     ? dtype_of(precision_compute_bytes(t), t->mp_fp16)
		     : t->autocast ? "bf16" : d->weights;
	if (t->inference) {
		d->master_weights = d->gradients = d->optimizer_states = "none";
		return;
	}
	d->master_weights = trained == 4 || precision_masters(t) ? "fp32" : "none";
	d->gradients = dtype_of(trained, t->fp16);
	d->optimizer_states = !optimizer_states(t)  ? "none"
			      : o->states_dtype     ? o->states_dtype
			      : precision_masters(t) ? "fp32"
						     : d->gradients;
}
