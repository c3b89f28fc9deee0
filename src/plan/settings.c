#include "plan/settings.h"
#include "plan/dtype.h"
#include "plan/quant.h"
#include "plan/sim.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan/config.h"
#include "plan/limits.h"
#include "plan/lora_names.h"
#include "plan/optimizer.h"
#include "plan/precision.h"
#include "util/parse.h"
#include "util/strbuf.h"
#include "util/suggest.h"
#include "util/xalloc.h"

#define FIELD(name) offsetof(struct train_settings, name)
#define WORDS(...) ((const char *const[]){ __VA_ARGS__, NULL })
#define STR_(x) #x
#define STR(x) STR_(x)

static int64_t *int64_at(const struct setting *s, struct train_settings *t)
{
	return (int64_t *)((char *)t + s->offset);
}

static int *int_at(const struct setting *s, struct train_settings *t)
{
	return (int *)((char *)t + s->offset);
}

/* A boolean's text: "true" 1, "false" 0, else -1. */
static int truth(const char *text)
{
	return !strcmp(text, "true") ? 1 : !strcmp(text, "false") ? 0 : -1;
}

static int p_bool(const struct setting *s, struct train_settings *t, const char *text)
{
	int v = truth(text);

	if (v < 0)
		return -EINVAL;
	*int_at(s, t) = v;
	return 0;
}

static int p_inference(const struct setting *s, struct train_settings *t, const char *text)
{
	int rc = p_bool(s, t, text);

	if (!rc && t->inference)
		t->opt = OPT_NONE; /* no optimizer in inference */
	return rc;
}

/* reshard_after_forward=False keeps the gathered weights */
static int p_reshard(const struct setting *s, struct train_settings *t, const char *text)
{
	int v = truth(text);

	(void)s;
	if (v < 0)
		return -EINVAL;
	t->keep_gathered = !v;
	return 0;
}

static int p_int64(const struct setting *s, struct train_settings *t, const char *text)
{
	return parse_int64(text, s->min, s->max, int64_at(s, t));
}

static int p_zero(const struct setting *s, struct train_settings *t, const char *text)
{
	int64_t v;

	if (parse_int64(text, s->min, s->max, &v))
		return -EINVAL;
	t->zero_stage = (int)v;
	return 0;
}

static int p_precision(const struct setting *s, struct train_settings *t, const char *text)
{
	(void)s;
	return precision_apply(t, text);
}

static int p_dtype(const struct setting *s, struct train_settings *t, const char *text)
{
	(void)s;
	if (!param_dtype_bytes(text))
		return -EINVAL;
	t->param_bytes = param_dtype_bytes(text);
	t->fp16 = !strcmp(text, "fp16");
	return 0;
}

static int p_optimizer(const struct setting *s, struct train_settings *t, const char *text)
{
	const struct optimizer_row *o = optimizer_by_word(text);

	(void)s;
	if (!o)
		return -EINVAL;
	t->opt = o->opt;
	t->fused = o->fused;
	return 0;
}

static int p_momentum(const struct setting *s, struct train_settings *t, const char *text)
{
	(void)s;
	return parse_double(text, 0, nextafter(1.0, 0.0), &t->momentum) ? -EINVAL : 0;
}

static int p_buffer(const struct setting *s, struct train_settings *t, const char *text)
{
	int rc;

	(void)s;
	if (t->nbuffers == PLAN_MAX_BUFFERS)
		return -EINVAL;
	if ((rc = buffer_spec_parse(text, &t->buffers[t->nbuffers])))
		return rc;
	t->nbuffers++;
	return 0;
}

static int p_freeze(const struct setting *s, struct train_settings *t, const char *text)
{
	(void)s;
	return freeze_list_parse(text, t);
}

static int p_alloc_conf(const struct setting *s, struct train_settings *t, const char *text)
{
	(void)s;
	return alloc_conf_parse(text, &t->expandable);
}

static int p_lora_targets(const struct setting *s, struct train_settings *t, const char *text)
{
	(void)s;
	return lora_targets_parse(text, &t->lora_targets);
}

static int p_lora_save(const struct setting *s, struct train_settings *t, const char *text)
{
	(void)s;
	return lora_save_parse(text, &t->lora_save);
}

static int p_logits(const struct setting *s, struct train_settings *t, const char *text)
{
	(void)s;
	if (strcmp(text, "all") && strcmp(text, "last"))
		return -EINVAL;
	t->logits_all = !strcmp(text, "all");
	return 0;
}

static int p_context_bytes(const struct setting *s, struct train_settings *t, const char *text)
{
	int rc = parse_size(text, 1, PLAN_MAX_ITEM_BYTES, &t->context_bytes);

	(void)s;
	return rc == -EDOM ? rc : rc ? -EINVAL : 0;
}

/* attn_implementation's names: those planned as the attention each family's row
 * models (sdpa; gpt_oss's eager), and what the plan says of each (NULL: nothing). */
#define FLASH_SAID(name) \
	name " planned as sdpa's flash kernel: it keeps what flash-attn keeps (the output and a log-sum-exp " \
	     "a head and token); modelled, not measured"
static const struct {
	const char *name, *said;
} attn_names[] = {
	[ATTN_NAME_DEFAULT] = { "default", NULL }, /* what transformers picks: the family's row */
	[ATTN_NAME_SDPA] = { "sdpa", NULL },
	[ATTN_NAME_FA2] = { "flash_attention_2", FLASH_SAID("flash_attention_2") },
	[ATTN_NAME_FA3] = { "flash_attention_3", FLASH_SAID("flash_attention_3") },
	[ATTN_NAME_FLEX] = { "flex_attention", "flex_attention planned as sdpa's flash kernel, the mask taken to be causal (its block "
			    "mask's few bytes not counted); measured on an H100" },
	[ATTN_NAME_XFORMERS] = { "xformers", "xformers planned as sdpa's flash kernel: its memory-efficient attention "
					     "keeps the output and a log-sum-exp a head and token; modelled, not measured" },
};

static int p_attn(const struct setting *s, struct train_settings *t, const char *text)
{
	(void)s;
	for (size_t i = 0; i < sizeof(attn_names) / sizeof(attn_names[0]); i++)
		if (!strcmp(text, attn_names[i].name)) {
			t->attn_name = (int)i;
			return 0;
		}
	return -EINVAL;
}

static int p_quant(const struct setting *s, struct train_settings *t, const char *text)
{
	int k = quant_find(text);

	(void)s;
	if (k < 0)
		return -EINVAL;
	t->quant = k;
	return 0;
}

/* FSDP2's MixedPrecisionPolicy dtypes: none (the weights' own), or one to gather and
 * compute in (param_dtype) or reduce in (reduce_dtype) */
static int p_mp_param(const struct setting *s, struct train_settings *t, const char *text)
{
	(void)s;
	if (!strcmp(text, "none"))
		t->mp_param_bytes = t->mp_fp16 = 0;
	else if (!strcmp(text, "bf16") || !strcmp(text, "fp16"))
		t->mp_param_bytes = DT_BF16, t->mp_fp16 = !strcmp(text, "fp16");
	else
		return -EINVAL;
	return 0;
}

static int p_mp_reduce(const struct setting *s, struct train_settings *t, const char *text)
{
	(void)s;
	if (!strcmp(text, "none"))
		t->mp_reduce_bytes = 0;
	else if (!strcmp(text, "bf16") || !strcmp(text, "fp16"))
		t->mp_reduce_bytes = DT_BF16, t->mp_reduce_fp16 = !strcmp(text, "fp16");
	else if (!strcmp(text, "fp32"))
		t->mp_reduce_bytes = DT_FP32;
	else
		return -EINVAL;
	return 0;
}

/* DeepSpeed's reduce_bucket_size: elements, or auto (-1: hidden x hidden) */
static int p_bucket(const struct setting *s, struct train_settings *t, const char *text)
{
	if (!strcmp(text, "auto")) {
		t->reduce_bucket = -1;
		return 0;
	}
	return parse_int64(text, s->min, s->max, &t->reduce_bucket);
}

/* What lives in host memory: none, or a list of optimizer and params (commas). */
static int p_offload(const struct setting *s, struct train_settings *t, const char *text)
{
	char *copy = xstrdup(text), *save = NULL;
	int rc = 0;

	(void)s;
	t->offload_optimizer = t->offload_params = 0; /* the list given, as a whole */
	for (char *w = strtok_r(copy, ",", &save); w && !rc; w = strtok_r(NULL, ",", &save)) {
		if (!strcmp(w, "none"))
			t->offload_optimizer = t->offload_params = 0;
		else if (!strcmp(w, "optimizer"))
			t->offload_optimizer = 1;
		else if (!strcmp(w, "params"))
			t->offload_params = 1;
		else
			rc = -EINVAL;
	}
	free(copy);
	return rc;
}

static int p_loss(const struct setting *s, struct train_settings *t, const char *text)
{
	int k = sim_loss_find(text);

	(void)s;
	if (k < 0)
		return -EINVAL;
	t->loss = (enum loss_kind)k;
	return 0;
}

int settings_attn_flash(const struct train_settings *t)
{
	return attn_name_flash(t->attn_name);
}

const char *settings_optimizer_name(const struct train_settings *t)
{
	return t->inference ? "none" : optimizer_row(t)->word;
}

int settings_cache_on(const struct train_settings *t)
{
	return t->inference || (t->use_cache && !t->grad_ckpt);
}

/* What each row says in a plan's "assumed" object: NULL leaves the key out; a setting
 * that does not apply to the run (training's in inference, a count of 0) is null. */
static json_t *a_flag(const struct setting *s, const struct train_settings *t)
{
	return json_boolean(*int_at(s, (struct train_settings *)t));
}

static json_t *a_train_flag(const struct setting *s, const struct train_settings *t)
{
	return json_boolean(*int_at(s, (struct train_settings *)t) && !t->inference);
}

static json_t *a_count(const struct setting *s, const struct train_settings *t)
{
	return json_integer(*int64_at(s, (struct train_settings *)t));
}

static json_t *a_train_count(const struct setting *s, const struct train_settings *t)
{
	int64_t v = *int64_at(s, (struct train_settings *)t);

	return v && !t->inference ? json_integer(v) : json_null();
}

static json_t *a_precision(const struct setting *s, const struct train_settings *t)
{
	const char *name = precision_name(t);

	(void)s;
	return name ? json_string(name) : json_null();
}

static json_t *a_optimizer(const struct setting *s, const struct train_settings *t)
{
	(void)s;
	return json_string(settings_optimizer_name(t));
}

static json_t *a_momentum(const struct setting *s, const struct train_settings *t)
{
	(void)s;
	return !t->inference && t->opt == OPT_SGD ? json_real(t->momentum) : NULL;
}

static json_t *a_use_cache(const struct setting *s, const struct train_settings *t)
{
	(void)s;
	return json_boolean(settings_cache_on(t));
}

static json_t *a_zero(const struct setting *s, const struct train_settings *t)
{
	(void)s;
	return json_integer(t->zero_stage);
}

static json_t *a_reshard(const struct setting *s, const struct train_settings *t)
{
	(void)s;
	return t->zero_stage == 3 ? json_boolean(!t->keep_gathered) : json_null();
}

static json_t *a_freeze(const struct setting *s, const struct train_settings *t)
{
	json_t *fz = json_array();

	(void)s;
	if (t->freeze_embed)
		json_array_append_new(fz, json_string("embed"));
	if (t->freeze_head)
		json_array_append_new(fz, json_string("lm_head"));
	if (t->freeze_last >= t->freeze_first)
		json_array_append_new(fz, json_sprintf("layers:%lld-%lld", (long long)t->freeze_first,
						       (long long)t->freeze_last));
	return fz;
}

static json_t *a_alloc_conf(const struct setting *s, const struct train_settings *t)
{
	(void)s;
	return json_string(t->expandable ? "expandable_segments:True" : "expandable_segments:False");
}

static json_t *a_context(const struct setting *s, const struct train_settings *t)
{
	(void)s;
	return t->inference ? json_integer(t->context > t->seq ? t->context : t->seq) : NULL;
}

static json_t *a_logits(const struct setting *s, const struct train_settings *t)
{
	(void)s;
	return t->inference ? json_string(t->logits_all ? "all" : "last") : NULL;
}

/* a quantized base only: older plans unchanged */
static json_t *a_quant(const struct setting *s, const struct train_settings *t)
{
	(void)s;
	return t->quant ? json_string(quant_format((enum quant_kind)t->quant)->word) : NULL;
}

static json_t *a_quant_flag(const struct setting *s, const struct train_settings *t)
{
	return t->quant ? json_boolean(*int_at(s, (struct train_settings *)t)) : NULL;
}

/* FSDP2's policy, ZeRO's master weights and offload: said where set, older plans unchanged */
static json_t *a_mp(const struct setting *s, const struct train_settings *t)
{
	int b = *int_at(s, (struct train_settings *)t);

	if (t->zero_stage != 3 || !t->mp_param_bytes || t->inference)
		return NULL;
	if (!b)
		return json_null();
	int fp16 = s->parse == p_mp_param ? t->mp_fp16 : t->mp_reduce_fp16;

	return json_string(b == DT_FP32 ? "fp32" : fp16 ? "fp16" : "bf16");
}

static json_t *a_train_on(const struct setting *s, const struct train_settings *t)
{
	return *int_at(s, (struct train_settings *)t) && !t->inference ? json_true() : NULL;
}

static json_t *a_offload(const struct setting *s, const struct train_settings *t)
{
	json_t *a;

	(void)s;
	if (t->inference || (!t->offload_optimizer && !t->offload_params))
		return NULL;
	a = json_array();
	if (a && t->offload_optimizer)
		json_array_append_new(a, json_string("optimizer"));
	if (a && t->offload_params)
		json_array_append_new(a, json_string("params"));
	return a;
}

/* the fused losses and the flash kernels' names only: older plans unchanged */
static json_t *a_loss(const struct setting *s, const struct train_settings *t)
{
	(void)s;
	return t->loss != LOSS_PLAIN && !t->inference ? json_string(sim_loss(t->loss)->name) : NULL;
}

static json_t *a_attn(const struct setting *s, const struct train_settings *t)
{
	(void)s;
	return attn_names[t->attn_name].said ? json_string(attn_names[t->attn_name].name) : NULL;
}

/* What each row says in the plan's "assumed:" lines (struct setting's said): a setting
 * that does not apply to the run (training's in inference, a count of 0) says nothing. */

/* A whole number as said: "?" when it is the setting solved for. */
static void said_count(struct strbuf *sb, const struct setting *s, const struct said_ctx *c, int64_t v)
{
	if (c->solving && !strcmp(c->solving, s->key))
		strbuf_add(sb, "?");
	else
		strbuf_addf(sb, "%lld", (long long)v);
}

static void s_precision(const struct setting *s, const struct train_settings *t, const struct said_ctx *c,
			struct strbuf *sb)
{
	const char *name = precision_name(t);

	(void)s;
	(void)c;
	strbuf_addf(sb, "precision %s", name ? name : "(no preset)");
	if (name && !strcmp(name, "bf16") && !t->inference && !t->lora_rank)
		strbuf_add(sb, " (HF Trainer's bf16=True is amp-bf16: fp32 weights)");
}

/* the weights' dtype as the settings make it (LoRA's base frozen) */
static void s_dtype(const struct setting *s, const struct train_settings *t, const struct said_ctx *c,
		    struct strbuf *sb)
{
	struct precision_dtypes d;

	(void)s;
	(void)c;
	precision_dtypes(t, &d);
	strbuf_addf(sb, "weights %s%s%s", d.weights,
		    strcmp(d.compute, d.weights) && !t->autocast && !t->inference ? " (computed in the policy's dtype)" : "",
		    t->quant ? " (frozen; the projections quantized)" : t->lora_rank && !t->inference ? " (frozen)" : "");
}

static void s_autocast(const struct setting *s, const struct train_settings *t, const struct said_ctx *c,
		       struct strbuf *sb)
{
	(void)s;
	(void)c;
	if (t->autocast && precision_weight_bytes(t) == DT_FP32)
		strbuf_add(sb, " (bf16 autocast)");
	else if (t->autocast)
		strbuf_add(sb, " (bf16 autocast: it casts nothing of these weights, planned as without)");
}

/* what the run keeps beside the weights: in training, its other tensors' dtypes */
static void s_inference(const struct setting *s, const struct train_settings *t, const struct said_ctx *c,
			struct strbuf *sb)
{
	struct precision_dtypes d;

	(void)s;
	(void)c;
	if (t->inference) {
		strbuf_add(sb, "inference: no gradients or optimizer states");
		return;
	}
	precision_dtypes(t, &d);
	strbuf_addf(sb, "master weights %s%s, gradients %s, optimizer states %s", d.master_weights,
		    strcmp(d.master_weights, "fp32") ? ""
		    : t->lora_rank		      ? " (the adapters)"
		    : precision_masters(t)	      ? " (a copy the optimizer steps)"
						      : " (the weights)",
		    d.gradients, d.optimizer_states);
}

static void s_optimizer(const struct setting *s, const struct train_settings *t, const struct said_ctx *c,
			struct strbuf *sb)
{
	(void)s;
	(void)c;
	if (t->inference)
		return;
	const struct optimizer_row *o = optimizer_row(t);

	strbuf_addf(sb, "optimizer %s", settings_optimizer_name(t));
	if (o->temps == OT_FOREACH)
		strbuf_add(sb, " (foreach)");
	if (o->said)
		strbuf_addf(sb, " (%s)", o->said);
}

static void s_momentum(const struct setting *s, const struct train_settings *t, const struct said_ctx *c,
		       struct strbuf *sb)
{
	(void)s;
	(void)c;
	if (!t->inference && t->opt == OPT_SGD)
		strbuf_addf(sb, " (momentum %g)", t->momentum);
}

static void s_lora_rank(const struct setting *s, const struct train_settings *t, const struct said_ctx *c,
			struct strbuf *sb)
{
	if (!t->lora_rank || t->inference)
		return;
	strbuf_add(sb, " on LoRA r");
	said_count(sb, s, c, t->lora_rank);
	strbuf_add(sb, " adapters");
}

static void s_lora_targets(const struct setting *s, const struct train_settings *t, const struct said_ctx *c,
			   struct strbuf *sb)
{
	char buf[64];

	(void)s;
	(void)c;
	if (t->lora_rank && !t->inference)
		strbuf_addf(sb, " (%s)", lora_targets_text(t->lora_targets, buf, sizeof(buf)));
}

static void s_lora_save(const struct setting *s, const struct train_settings *t, const struct said_ctx *c,
			struct strbuf *sb)
{
	char buf[64];

	(void)s;
	(void)c;
	if (t->lora_rank && !t->inference && t->lora_save)
		strbuf_addf(sb, " and trained copies of %s (modules_to_save; modelled, not measured)",
			    lora_save_text(t->lora_save, buf, sizeof(buf)));
}

static void s_batch(const struct setting *s, const struct train_settings *t, const struct said_ctx *c,
		    struct strbuf *sb)
{
	strbuf_add(sb, "batch ");
	said_count(sb, s, c, t->batch);
}

/* in inference the prompt's length, and where it came from */
static void s_seq(const struct setting *s, const struct train_settings *t, const struct said_ctx *c,
		  struct strbuf *sb)
{
	static const char *const prompt_text[] = {
		[PROMPT_GIVEN] = " (the prompt)",
		[PROMPT_CONTEXT] = " (the prompt: the whole context, as no --seq gave its length)",
		[PROMPT_DEFAULT] = " (the prompt: the default length; --seq N gives it)",
	};

	strbuf_add(sb, " x seq ");
	said_count(sb, s, c, t->seq);
	if (t->inference)
		strbuf_add(sb, prompt_text[c->prompt]);
}

static void s_context(const struct setting *s, const struct train_settings *t, const struct said_ctx *c,
		      struct strbuf *sb)
{
	if (!t->inference)
		return;
	strbuf_add(sb, "KV cache of ");
	said_count(sb, s, c, t->context > t->seq ? t->context : t->seq);
	strbuf_add(sb, " tokens");
}

static void s_logits(const struct setting *s, const struct train_settings *t, const struct said_ctx *c,
		     struct strbuf *sb)
{
	(void)s;
	(void)c;
	if (t->inference)
		strbuf_add(sb, t->logits_all ? "logits of every position (model(input_ids))"
					     : "logits of the last position (generate)");
}

static void s_grad_ckpt(const struct setting *s, const struct train_settings *t, const struct said_ctx *c,
			struct strbuf *sb)
{
	(void)s;
	(void)c;
	if (!t->inference)
		strbuf_add(sb, t->grad_ckpt ? "gradient checkpointing" : "no gradient checkpointing");
}

static void s_keep_outputs(const struct setting *s, const struct train_settings *t, const struct said_ctx *c,
			   struct strbuf *sb)
{
	(void)s;
	(void)c;
	/* said only when on: HF Trainer's way, the output let go as the loss is taken, is
	 * the default (and in the JSON's assumed object) */
	if (!t->inference && t->keep_outputs)
		strbuf_add(sb, "the step's output (logits, cache) kept into the next step");
}

static void s_use_cache(const struct setting *s, const struct train_settings *t, const struct said_ctx *c,
			struct strbuf *sb)
{
	(void)s;
	(void)c;
	strbuf_addf(sb, "use_cache %s",
		    t->inference ? "on (the KV cache)"
		    : settings_cache_on(t) ? "on (keys and values held to the next step; --no-use-cache if off)"
		    : t->grad_ckpt ? "off (checkpointing turns it off)" : "off");
}

static void s_grad_accum(const struct setting *s, const struct train_settings *t, const struct said_ctx *c,
			 struct strbuf *sb)
{
	if (t->grad_accum <= 1 || t->inference)
		return;
	strbuf_add(sb, "gradients accumulated over ");
	said_count(sb, s, c, t->grad_accum);
	strbuf_add(sb, sim_accumulates(t) ? " micro-batches (from the second, every gradient resident through the forward)"
					  : " micro-batches (with ZeRO-2/3 not simulated: planned as one)");
}

static void s_loss_chunk(const struct setting *s, const struct train_settings *t, const struct said_ctx *c,
			 struct strbuf *sb)
{
	if (!t->loss_chunk || t->inference)
		return;
	strbuf_add(sb, "loss in chunks of ");
	said_count(sb, s, c, t->loss_chunk);
	strbuf_add(sb, " tokens");
}

static void s_loss(const struct setting *s, const struct train_settings *t, const struct said_ctx *c,
		   struct strbuf *sb)
{
	(void)s;
	(void)c;
	if (!t->inference && sim_loss(t->loss)->said)
		strbuf_add(sb, sim_loss(t->loss)->said);
}

static void s_quant(const struct setting *s, const struct train_settings *t, const struct said_ctx *c,
		    struct strbuf *sb)
{
	(void)s;
	(void)c;
	if (!t->quant)
		return;
	strbuf_addf(sb, "base projections %s%s, dequantized to bf16 for each product (a transient)",
		    quant_format((enum quant_kind)t->quant)->said,
		    t->double_quant && t->quant != QUANT_INT8 ? ", its scales double-quantized" : "");
	if (t->kbit_prepare && !t->inference)
		strbuf_add(sb, "; the other weights fp32 (PEFT's prepare_model_for_kbit_training)");
	strbuf_add(sb, "; modelled, not measured");
}

static void s_attn(const struct setting *s, const struct train_settings *t, const struct said_ctx *c,
		   struct strbuf *sb)
{
	(void)s;
	(void)c;
	if (attn_names[t->attn_name].said)
		strbuf_add(sb, attn_names[t->attn_name].said);
}

static void s_zero(const struct setting *s, const struct train_settings *t, const struct said_ctx *c,
		   struct strbuf *sb)
{
	(void)s;
	(void)c;
	if (t->zero_stage == 3)
		strbuf_addf(sb, "ZeRO-3/FSDP over %lld rank%s", (long long)t->dp, t->dp == 1 ? "" : "s");
	else if (t->zero_stage == 2 && !t->inference)
		strbuf_addf(sb, "ZeRO-2 over %lld rank%s (each layer's gradients reduced into this rank's partition as "
				"the backward makes them: modelled, not measured)",
			    (long long)t->dp, t->dp == 1 ? "" : "s");
	else if (t->zero_stage)
		strbuf_addf(sb, "ZeRO-%d over %lld rank%s", t->zero_stage, (long long)t->dp, t->dp == 1 ? "" : "s");
}

static void s_mp(const struct setting *s, const struct train_settings *t, const struct said_ctx *c,
		 struct strbuf *sb)
{
	(void)s;
	(void)c;
	if (t->zero_stage != 3 || !t->mp_param_bytes || t->inference)
		return;
	strbuf_addf(sb, " (MixedPrecisionPolicy: each layer gathered and computed in %s, its gradients reduced in %s "
			"into %s shards; measured on one rank)",
		    t->mp_fp16 ? "fp16" : "bf16",
		    t->mp_reduce_bytes == DT_FP32		   ? "fp32"
		    : t->mp_reduce_bytes ? (t->mp_reduce_fp16 ? "fp16" : "bf16")
		    : t->mp_fp16	   ? "fp16"
					   : "bf16",
		    precision_weight_bytes(t) == DT_FP32 ? "fp32" : "16-bit");
}

static void s_bucket(const struct setting *s, const struct train_settings *t, const struct said_ctx *c,
		     struct strbuf *sb)
{
	(void)s;
	(void)c;
	if (!t->reduce_bucket || !t->zero_stage || t->inference)
		return;
	strbuf_add(sb, "DeepSpeed's reduce bucket of ");
	if (t->reduce_bucket < 0)
		strbuf_add(sb, "hidden x hidden");
	else
		strbuf_addf(sb, "%lld", (long long)t->reduce_bucket);
	strbuf_addf(sb, " elements%s (its prefetch and live-parameter limits not modelled)",
		    t->zero_stage == 3 ? ", kept with the gradients' partitions from the start"
		    : t->overlap_comm  ? ", two of them through each backward"
				       : " through each backward");
}

static json_t *a_bucket(const struct setting *s, const struct train_settings *t)
{
	(void)s;
	if (!t->reduce_bucket || !t->zero_stage || t->inference)
		return NULL;
	return t->reduce_bucket < 0 ? json_string("auto") : json_integer(t->reduce_bucket);
}

static void s_master(const struct setting *s, const struct train_settings *t, const struct said_ctx *c,
		     struct strbuf *sb)
{
	(void)s;
	(void)c;
	if (t->master_weights && !t->inference && !t->lora_rank && t->param_bytes == DT_FP32)
		strbuf_add(sb, "master weights: the fp32 weights are their own (no copy)");
	else if (precision_masters(t))
		strbuf_add(sb, "fp32 master weights beside the 16-bit ones (DeepSpeed's bf16/fp16 engine: the "
			       "optimizer steps the fp32 copy, each gradient cast to fp32 at the step)");
}

static void s_offload(const struct setting *s, const struct train_settings *t, const struct said_ctx *c,
		      struct strbuf *sb)
{
	(void)s;
	(void)c;
	if (t->inference || (!t->offload_optimizer && !t->offload_params))
		return;
	strbuf_addf(sb, "offloaded to host memory, not counted: %s%s%s; %s",
		    t->offload_optimizer ? "the optimizer's states and master weights, its step on the CPU, the "
					   "gradients' partitions copied out as reduced" : "",
		    t->offload_optimizer && t->offload_params ? "; " : "",
		    t->offload_params ? "the weights' shards (loaded on the host, as accelerate does: a model built on "
					"the GPU first leaves its weights' blocks cached; each layer's copied in to be "
					"gathered)"
				      : "",
		    t->offload_params && t->zero_stage == 3 && !t->master_weights
			    ? "as FSDP2's CPUOffloadPolicy measured on one rank"
			    : "modelled, not measured");
}

static void s_ddp(const struct setting *s, const struct train_settings *t, const struct said_ctx *c,
		  struct strbuf *sb)
{
	(void)s;
	(void)c;
	if (t->ddp && !t->zero_stage)
		strbuf_addf(sb, "DDP over %lld ranks (per rank)", (long long)t->dp);
}

static void s_reshard(const struct setting *s, const struct train_settings *t, const struct said_ctx *c,
		      struct strbuf *sb)
{
	(void)s;
	(void)c;
	if (t->zero_stage == 3 && t->keep_gathered)
		strbuf_add(sb, " (no reshard after forward)");
}

static void s_freeze(const struct setting *s, const struct train_settings *t, const struct said_ctx *c,
		     struct strbuf *sb)
{
	(void)s;
	(void)c;
	if (!t->freeze_embed && !t->freeze_head && t->freeze_last < t->freeze_first)
		return;
	strbuf_addf(sb, "frozen (no gradient or optimizer state):%s%s", t->freeze_embed ? " embed" : "",
		    t->freeze_head ? " lm_head" : "");
	if (t->freeze_last >= t->freeze_first)
		strbuf_addf(sb, " layers %lld-%lld", (long long)t->freeze_first, (long long)t->freeze_last);
}

static void s_inputs_embeds(const struct setting *s, const struct train_settings *t, const struct said_ctx *c,
			    struct strbuf *sb)
{
	(void)s;
	(void)c;
	if (t->inputs_embeds)
		strbuf_add(sb, "fed hidden states (inputs_embeds), no embedding lookup");
}

/* said only when on: the native allocator is PyTorch's default */
static void s_alloc_conf(const struct setting *s, const struct train_settings *t, const struct said_ctx *c,
			 struct strbuf *sb)
{
	(void)s;
	(void)c;
	if (t->expandable)
		strbuf_add(sb, "allocator: expandable segments (expandable_segments:True)");
}

#define BOOL_ROW(k, fn, field, h, as, on, said) \
	{ k, NULL, "true or false", h, fn, SJ_BOOL, FIELD(field), 0, 1, NULL, 0, as, on, said }
#define INT_ROW(k, arg, field, lo, hi, h, as, on, said) \
	{ k, arg, NULL, h, p_int64, SJ_INT, FIELD(field), lo, hi, NULL, 0, as, on, said }

/* The rows in the order the usage lists them, and the order each line of a plan's
 * "assumed:" text says them in. */
static const struct setting settings[] = {
	{ "precision", "P", "bf16, amp-bf16 (fp32 weights, bf16 autocast), fp32 or fp16",
	  "bf16 (the default: bf16 weights, gradients and AdamW states, no fp32 master copy), amp-bf16 (fp32 "
	  "weights and states, bf16 autocast: HF Trainer's bf16=True), fp32, fp16",
	  p_precision, SJ_TEXT, 0, 0, 0, WORDS("bf16", "amp-bf16", "fp32", "fp16"), 0, a_precision, SAID_PRECISION,
	  s_precision },
	{ "dtype", "D", "fp32, bf16 or fp16", "the weights' dtype: fp32, bf16 (the default) or fp16", p_dtype, SJ_TEXT, 0,
	  0, 0, WORDS("fp32", "bf16", "fp16"), 0, NULL, SAID_TENSORS, s_dtype },
	BOOL_ROW("autocast", p_bool, autocast, "bf16 autocast around the forward pass (with --dtype fp32)", NULL,
		 SAID_TENSORS, s_autocast),
	{ "optimizer", "O",
	  "adamw, adamw-fused, sgd, none, adamw-8bit, paged-adamw-8bit, paged-adamw, adamw-ao-8bit, adamw-ao-4bit, "
	  "adafactor or lion",
	  "adamw (the default: foreach), adamw-fused, sgd, adafactor (transformers'), none; modelled, not "
	  "measured: adamw-8bit, paged-adamw-8bit, paged-adamw (bitsandbytes), adamw-ao-8bit, "
	  "adamw-ao-4bit (torchao), lion",
	  p_optimizer, SJ_TEXT, 0, 0, 0,
	  WORDS("adamw", "adamw-fused", "sgd", "none", "adamw-8bit", "paged-adamw-8bit", "paged-adamw",
		"adamw-ao-8bit", "adamw-ao-4bit", "adafactor", "lion"),
	  0, a_optimizer, SAID_RUN,
	  s_optimizer },
	{ "momentum", "F", "a number from 0 to below 1", "SGD momentum, 0 to below 1 (keeps a buffer per parameter)",
	  p_momentum, SJ_NUM, 0, 0, 0, NULL, 0, a_momentum, SAID_RUN, s_momentum },
	INT_ROW("lora_rank", "R", lora_rank, 0, PLAN_MAX_LORA_RANK, "LoRA of rank R (default 0: full fine-tuning)",
		a_train_count, SAID_RUN, s_lora_rank),
	{ "lora_targets", "LIST", "a list of q k v o gate up down (or all), or of module names such as q_proj,v_proj",
	  "LoRA's targets: q,k,v,o,gate,up,down or all (default q,k,v,o), or PEFT's module names (q_proj, "
	  "query_key_value, c_attn, w1...)", p_lora_targets, SJ_LIST, 0, 0, 0, NULL, 0,
	  NULL, SAID_RUN, s_lora_targets },
	{ "lora_save", "LIST", "a list of embed_tokens and lm_head (or the family's names for them), or none",
	  "with LoRA, PEFT's modules_to_save: the embedding and lm_head (embed_tokens, lm_head, wte...) "
	  "trained as copies beside the frozen originals",
	  p_lora_save, SJ_LIST, 0, 0, 0, NULL, 0, NULL, SAID_RUN, s_lora_save },
	{ "quant", "nf4|fp4|int8", "none, nf4, fp4 or int8",
	  "the base's linear projections quantized by bitsandbytes (QLoRA: with --lora-rank): 4-bit nf4 or fp4, "
	  "or int8; modelled, not measured",
	  p_quant, SJ_TEXT, 0, 0, 0, WORDS("none", "nf4", "fp4", "int8"), 0, a_quant, SAID_PARTS, s_quant },
	BOOL_ROW("double_quant", p_bool, double_quant, "4-bit: the scales quantized too (bnb_4bit_use_double_quant)",
		 a_quant_flag, SAID_NONE, NULL),
	BOOL_ROW("kbit_prepare", p_bool, kbit_prepare, "with --quant in training: PEFT's prepare_model_for_kbit_training "
						       "casts the weights it leaves unquantized to fp32 (the default: on)",
		 a_quant_flag, SAID_NONE, NULL),
	INT_ROW("batch", "N", batch, 1, PLAN_MAX_BATCH, "the micro-batch (default 1)", a_count, SAID_RUN, s_batch),
	INT_ROW("seq", "N", seq, 1, PLAN_MAX_SEQ, "the sequence length (default 2048); in inference the prompt's "
						 "(prefill) length", a_count, SAID_RUN, s_seq),
	BOOL_ROW("inference", p_inference, inference, "inference: a prefill of batch x seq, then generation with a KV "
						      "cache of batch x --context tokens", a_flag, SAID_TENSORS,
		 s_inference),
	INT_ROW("context", "N", context, 0, PLAN_MAX_SEQ, "inference: tokens in the KV cache (with no --seq given, the "
							   "prompt is taken to be all of them, and said)", a_context,
		SAID_RUN, s_context),
	{ "logits", "all|last", "all (every position's, as model(input_ids)) or last (as generate())",
	  "inference: every position's logits (model(input_ids)) or the last one's (generate(), the default)", p_logits,
	  SJ_TEXT, 0, 0, 0, WORDS("all", "last"), 0, a_logits, SAID_RUN, s_logits },
	BOOL_ROW("grad_ckpt", p_bool, grad_ckpt, "gradient checkpointing", a_train_flag, SAID_RUN, s_grad_ckpt),
	BOOL_ROW("use_cache", p_bool, use_cache, "the model's use_cache in training (the default: on, its keys and "
						  "values held to the next step; checkpointing turns it off)", a_use_cache,
		 SAID_ATTENTION, s_use_cache),
	BOOL_ROW("keep_outputs", p_bool, keep_outputs, "the step's output (logits, KV cache) kept into the next step, "
						       "as a loop holding out = model(...) does (the default: let go as "
						       "the loss is taken, as HF Trainer's training_step does)",
		 a_train_flag, SAID_RUN, s_keep_outputs),
	INT_ROW("grad_accum", "N", grad_accum, 1, PLAN_MAX_GRAD_ACCUM,
		"micro-batches a step, gradients accumulated (default 1; HF Trainer's "
		"gradient_accumulation_steps): from the second every gradient is resident through the "
		"forward and backward",
		a_train_count, SAID_RUN, s_grad_accum),
	INT_ROW("loss_chunk", "N", loss_chunk, 0, INT64_MAX, "tokens per lm_head + loss chunk (default 0: all at once)",
		a_train_count, SAID_RUN, s_loss_chunk),
	{ "loss", "plain|liger|cce", "plain, liger or cce",
	  "the loss's kernel: plain (the default: logits, chunked with --loss-chunk), liger (Liger's fused linear "
	  "cross-entropy) or cce (Cut Cross-Entropy); the fused ones modelled, not measured",
	  p_loss, SJ_TEXT, 0, 0, 0, WORDS("plain", "liger", "cce"), 0, a_loss, SAID_RUN, s_loss },
	INT_ROW("steps", "N", steps, 1, PLAN_MAX_STEPS, "the run's training steps (default: a long run; the first 8 are "
							  "simulated, past which PyTorch's allocator was not seen to grow)",
		a_train_count, SAID_NONE, NULL),
	{ "buffer", "NAME=COUNTxSIZE",
	  "NAME=COUNTxSIZE such as queue=50x100MB (at most " STR(PLAN_MAX_BUFFERS) " of them; COUNT from 1 to " STR(
		  PLAN_MAX_BUFFER_COUNT) ", SIZE with its unit from 1B to 1 TiB: 100MB is 10^8 bytes, 100M 100 MiB)",
	  "extra device buffers, e.g. queue=50x100MB (repeatable)", p_buffer, SJ_MAP, 0, 0, 0, NULL, 1, NULL, SAID_NONE,
	  NULL },
	{ "zero_stage", "STAGE", NULL, "ZeRO-1/2/3 (3 = FSDP2 fully_shard) over --dp N > 1 data-parallel ranks, per rank",
	  p_zero, SJ_INT, 0, 0, 3, NULL, 0, a_zero, SAID_RUN, s_zero },
	INT_ROW("dp", "N", dp, 1, PLAN_MAX_DP, "data-parallel ranks (with --zero-stage or --ddp)", a_count, SAID_NONE,
		NULL),
	BOOL_ROW("ddp", p_bool, ddp, "DDP over --dp N > 1 ranks (a replica and gradient buckets a rank)", a_flag,
		 SAID_RUN, s_ddp),
	/* (after ddp, which says nothing with ZeRO: its phrase continues ZeRO-3's) */
	BOOL_ROW("reshard_after_forward", p_reshard, keep_gathered,
		 "ZeRO-3/FSDP2's reshard_after_forward (the default: on; --no-reshard-after-forward keeps the "
		 "gathered weights)", a_reshard, SAID_RUN, s_reshard),
	/* (after reshard_after_forward: its phrases continue ZeRO-3's) */
	{ "fsdp_param_dtype", "D", "none, bf16 or fp16 (none: the weights' own)",
	  "ZeRO-3/FSDP2's MixedPrecisionPolicy param_dtype: each layer gathered and computed in bf16 or fp16, the "
	  "shards kept in the weights' dtype (--dtype fp32: fp32 shards, gradients and states)",
	  p_mp_param, SJ_TEXT, FIELD(mp_param_bytes), 0, 0, WORDS("none", "bf16", "fp16"), 0, a_mp, SAID_RUN, s_mp },
	{ "fsdp_reduce_dtype", "D", "none, bf16, fp16 or fp32 (none: the param_dtype)",
	  "its reduce_dtype: the gradients reduced in it (default none: the param_dtype)", p_mp_reduce, SJ_TEXT,
	  FIELD(mp_reduce_bytes), 0, 0, WORDS("none", "bf16", "fp16", "fp32"), 0, a_mp, SAID_NONE, NULL },
	{ "reduce_bucket_size", "N|auto", "a whole number of elements from 1 to " STR(PLAN_MAX_BUCKET) ", or auto",
	  "DeepSpeed ZeRO's reduce_bucket_size in elements (auto: hidden x hidden, as HF's integration fills it): "
	  "its bucket through each backward, or at stage 3 kept with the gradients' flat partitions (default: "
	  "none, a layer's gradients reduced at a time)",
	  p_bucket, SJ_INT_OR_WORD, FIELD(reduce_bucket), 1, PLAN_MAX_BUCKET, NULL, 0, a_bucket, SAID_RUN, s_bucket },
	BOOL_ROW("overlap_comm", p_bool, overlap_comm, "DeepSpeed's overlap_comm: a second reduce bucket (stages 1 and 2)",
		 a_train_on, SAID_NONE, NULL),
	BOOL_ROW("master_weights", p_bool, master_weights,
		 "an fp32 copy of the trained 16-bit weights that the optimizer steps, its states fp32 (DeepSpeed's "
		 "bf16/fp16 engine; ZeRO-1 and up shard it over --dp)",
		 a_train_on, SAID_RUN, s_master),
	{ "offload", "LIST", "none, or a list of optimizer and params",
	  "what lives in host memory: optimizer (its states, master weights and step; the gradients' partitions "
	  "copied out as reduced), params (ZeRO-3/FSDP2: the weights' shards); FSDP2's measured on one rank, "
	  "DeepSpeed's modelled, not measured",
	  p_offload, SJ_LIST, 0, 0, 0, WORDS("none", "optimizer", "params"), 0, a_offload, SAID_PARTS, s_offload },
	{ "freeze", "LIST", "a list of embed, lm_head and layers:A-B (one range of layers, from 0), such as embed,lm_head",
	  "frozen parts, no gradient or optimizer state: embed, lm_head, layers:A-B (e.g. embed,lm_head)", p_freeze,
	  SJ_LIST, 0, 0, 0, NULL, 1, a_freeze, SAID_PARTS, s_freeze },
	BOOL_ROW("inputs_embeds", p_bool, inputs_embeds, "fed hidden states (batch x seq x hidden), no embedding lookup",
		 a_flag, SAID_PARTS, s_inputs_embeds),
	{ "alloc_conf", "CONF",
	  "expandable_segments:True or expandable_segments:False (the PYTORCH_CUDA_ALLOC_CONF option modelled)",
	  "expandable_segments:True: PyTorch's expandable segments (5 simulated placements, the plan 2/5 of the way "
	  "from the plain run's peak to the highest; their range printed)",
	  p_alloc_conf, SJ_TEXT, 0, 0, 0, WORDS("expandable_segments:True", "expandable_segments:False"), 0, a_alloc_conf,
	  SAID_ALLOCATOR, s_alloc_conf },
	{ "context_bytes", "SIZE", "a size with its unit from 1B to 1 TiB such as 740M (in JSON: a number of bytes, or "
				   "such a string)",
	  "CUDA context and workspaces (default 740M, H200/torch 2.11)", p_context_bytes, SJ_BYTES, 0, 0, 0, NULL, 0, NULL,
	  SAID_NONE, NULL },
	{ "attn", "NAME",
	  "sdpa, default (what transformers picks: sdpa; gpt_oss's eager attention), flash_attention_2, "
	  "flash_attention_3, flex_attention or xformers (planned as sdpa's flash kernel)",
	  "the attention implementation: sdpa, default (what transformers picks: sdpa, gpt_oss eager), "
	  "flash_attention_2, flash_attention_3, flex_attention (a causal mask) or xformers, planned as sdpa's flash "
	  "kernel",
	  p_attn, SJ_TEXT, 0, 0, 0,
	  WORDS("sdpa", "default", "flash_attention_2", "flash_attention_3", "flex_attention", "xformers"), 0, a_attn,
	  SAID_ATTENTION, s_attn },
};

#define NSETTINGS (sizeof(settings) / sizeof(settings[0]))
_Static_assert(NSETTINGS <= 64, "setting_mask has a bit a row");

/* Old spellings, kept working and documented (docs/plan.md). */
static const struct setting_alias aliases[] = {
	{ "param_dtype", "dtype", NULL, NULL, 0 },
	{ "fused", "optimizer", "adamw-fused", "adamw", 0 },
	{ "buffers", "buffer", NULL, NULL, 0 },
	{ "no_cache", "use_cache", "false", "true", 1 },
	{ "zero", "zero_stage", NULL, NULL, 1 },
	{ "no_reshard", "reshard_after_forward", "false", "true", 1 },
};

#define NALIASES (sizeof(aliases) / sizeof(aliases[0]))

const struct setting *setting_at(size_t i)
{
	return i < NSETTINGS ? &settings[i] : NULL;
}

/* names compare with '-' as '_': flags and keys are one spelling */
static int same_name(const char *a, const char *b)
{
	for (; *a && *b; a++, b++)
		if (*a != *b && !((*a == '-' || *a == '_') && (*b == '-' || *b == '_')))
			return 0;
	return *a == *b;
}

const struct setting *setting_find(const char *key)
{
	for (size_t i = 0; i < NSETTINGS; i++)
		if (same_name(key, settings[i].key))
			return &settings[i];
	return NULL;
}

size_t setting_index(const struct setting *s)
{
	return (size_t)(s - settings);
}

const struct setting_alias *setting_alias_at(size_t i)
{
	return i < NALIASES ? &aliases[i] : NULL;
}

const struct setting_alias *setting_alias_find(const char *name)
{
	for (size_t i = 0; i < NALIASES; i++)
		if (same_name(name, aliases[i].name))
			return &aliases[i];
	return NULL;
}

int setting_apply(const struct setting *s, struct train_settings *t, const char *text)
{
	int rc = s->parse(s, t, text);

	return rc == -EDOM ? rc : rc ? -EINVAL : 0;
}

const char *setting_want(const struct setting *s, char *buf, size_t n)
{
	if (s->want)
		snprintf(buf, n, "%s", s->want);
	else if (s->max == INT64_MAX)
		snprintf(buf, n, "a whole number from %lld", (long long)s->min);
	else
		snprintf(buf, n, "a whole number from %lld to %lld", (long long)s->min, (long long)s->max);
	return buf;
}

const char *setting_suggest(const struct setting *s, const char *bad)
{
	size_t n = 0;

	if (!s->values)
		return NULL;
	while (s->values[n])
		n++;
	return suggest_closest(bad, s->values, n);
}

const char *setting_flag_text(const struct setting *s, const char *value, char *buf, size_t n)
{
	char flag[64];
	size_t i;

	for (i = 0; s->key[i] && i + 1 < sizeof(flag); i++)
		flag[i] = s->key[i] == '_' ? '-' : s->key[i];
	flag[i] = '\0';
	if (!s->arg)
		snprintf(buf, n, "--%s%s", truth(value) == 0 ? "no-" : "", flag);
	else
		snprintf(buf, n, "--%s %s", flag, value);
	return buf;
}

static int json_bad(char **err, const char *key, const struct setting *s, const char *text)
{
	char want[256];
	const char *near = text ? setting_suggest(s, text) : NULL;

	setting_want(s, want, sizeof(want));
	if (near)
		*err = xasprintf("settings: '%s' wants %s, not '%s'; did you mean %s?", key, want, text, near);
	else
		*err = xasprintf("settings: '%s' wants %s", key, want);
	return -EINVAL;
}

/* One JSON value as the flag's text into buf (n bytes): 0, or -EINVAL when its type is
 * not the row's. */
static int json_text(const struct setting *s, json_t *v, char *buf, size_t n)
{
	switch (s->json) {
	case SJ_BOOL:
		if (!json_is_boolean(v))
			return -EINVAL;
		snprintf(buf, n, "%s", json_is_true(v) ? "true" : "false");
		return 0;
	case SJ_INT:
		if (!json_is_integer(v))
			return -EINVAL;
		snprintf(buf, n, "%lld", (long long)json_integer_value(v));
		return 0;
	case SJ_BYTES: /* a number is bytes by the key's name; a string is a size as the flag's */
	case SJ_INT_OR_WORD:
		if (json_is_integer(v)) {
			snprintf(buf, n, "%lld%s", (long long)json_integer_value(v), s->json == SJ_BYTES ? "B" : "");
			return 0;
		}
		if (!json_is_string(v) || strlen(json_string_value(v)) >= n)
			return -EINVAL;
		snprintf(buf, n, "%s", json_string_value(v));
		return 0;
	case SJ_NUM:
		if (!json_is_number(v))
			return -EINVAL;
		snprintf(buf, n, "%.17g", json_number_value(v));
		return 0;
	default:
		if (!json_is_string(v) || strlen(json_string_value(v)) >= n)
			return -EINVAL;
		snprintf(buf, n, "%s", json_string_value(v));
		return 0;
	}
}

/* A list's items as one comma-separated value into text: 0 or -EINVAL. */
static int json_list_text(const struct setting *s, json_t *v, char *text, size_t n)
{
	char item_text[256];
	json_t *item;
	size_t i, len = 0;

	text[0] = '\0';
	json_array_foreach(v, i, item) {
		if (json_text(s, item, item_text, sizeof(item_text)) || len + strlen(item_text) + 2 > n)
			return -EINVAL;
		len += (size_t)snprintf(text + len, n - len, "%s%s", i ? "," : "", item_text);
	}
	return i ? 0 : -EINVAL;
}

int setting_apply_json(const char *key, const struct setting *s, json_t *v, struct train_settings *t, char **err)
{
	char text[512];
	const char *name;
	json_t *item;
	size_t i;

	if (s->json == SJ_LIST && json_is_array(v)) {
		if (json_list_text(s, v, text, sizeof(text)) || setting_apply(s, t, text))
			return json_bad(err, key, s, NULL);
		return 0;
	}
	if (s->json == SJ_MAP && json_is_array(v)) { /* a repeated flag's values, each in turn */
		if (!json_array_size(v))
			return json_bad(err, key, s, NULL);
		json_array_foreach(v, i, item)
			if (json_text(s, item, text, sizeof(text)) || setting_apply(s, t, text))
				return json_bad(err, key, s, json_string_value(item));
		return 0;
	}
	if (s->json == SJ_MAP && json_is_object(v)) {
		json_object_foreach(v, name, item) {
			if (!json_is_string(item))
				return json_bad(err, key, s, NULL);
			snprintf(text, sizeof(text), "%s=%s", name, json_string_value(item));
			if (setting_apply(s, t, text))
				return json_bad(err, key, s, text);
		}
		return 0;
	}
	if (json_text(s, v, text, sizeof(text)) || setting_apply(s, t, text))
		return json_bad(err, key, s, json_string_value(v));
	return 0;
}

/* An alias's value onto its row: a boolean alias of a valued row takes the value it
 * stands for. */
static int json_apply_alias(const char *key, const struct setting_alias *al, json_t *v, struct train_settings *t,
			    char **err)
{
	const struct setting *s = setting_find(al->key);

	if (!al->if_true)
		return setting_apply_json(key, s, v, t, err);
	if (!json_is_boolean(v)) {
		*err = xasprintf("settings: '%s' wants true or false (it is '%s': %s for true)", key, al->key,
				 al->if_true);
		return -EINVAL;
	}
	if (setting_apply(s, t, json_is_true(v) ? al->if_true : al->if_false))
		return json_bad(err, key, s, NULL);
	return 0;
}

static int json_unknown(const char *key, char **err)
{
	const char *known[NSETTINGS + NALIASES], *near;
	size_t n = 0;

	for (size_t i = 0; i < NSETTINGS; i++)
		known[n++] = settings[i].key;
	for (size_t i = 0; i < NALIASES; i++)
		if (!aliases[i].flag_only)
			known[n++] = aliases[i].name;
	near = suggest_closest(key, known, n);
	if (near)
		*err = xasprintf("settings: unknown key '%s'; did you mean '%s'?", key, near);
	else
		*err = xasprintf("settings: unknown key '%s' (docs/plan.md lists the keys)", key);
	return -EINVAL;
}

int settings_from_json(json_t *obj, struct train_settings *t, setting_mask *given, char **err)
{
	const char *key;
	json_t *v;

	*err = NULL;
	if (!json_is_object(obj)) {
		*err = xstrdup("settings: not a JSON object");
		return -EINVAL;
	}
	/* a preset sets what these set: with them, which wins would hang on their order */
	if (json_object_get(obj, "precision") && (json_object_get(obj, "dtype") || json_object_get(obj, "param_dtype") ||
						  json_object_get(obj, "autocast"))) {
		*err = xstrdup("settings: 'precision' sets dtype and autocast: give it or them, not both");
		return -EINVAL;
	}
	for (int pass = 0; pass < 2; pass++)
		json_object_foreach(obj, key, v) {
			const struct setting *s = strchr(key, '-') ? NULL : setting_find(key);
			const struct setting_alias *al = strchr(key, '-') ? NULL : setting_alias_find(key);

			if (al && al->flag_only)
				al = NULL;
			if (!s && !al)
				return json_unknown(key, err);
			if ((pass == 0) != (s != NULL))
				continue;
			if (s ? setting_apply_json(key, s, v, t, err) : json_apply_alias(key, al, v, t, err))
				return -EINVAL;
			if (given)
				*given |= SETTING_BIT(s ? s : setting_find(al->key));
		}
	return 0;
}

int train_settings_from_json(json_t *obj, struct train_settings *t, char **err)
{
	return settings_from_json(obj, t, NULL, err);
}

json_t *settings_assumed_json(const struct train_settings *t)
{
	json_t *o = json_object(), *v;

	for (size_t i = 0; i < NSETTINGS; i++)
		if (settings[i].assumed && (v = settings[i].assumed(&settings[i], t)))
			json_object_set_new(o, settings[i].key, v);
	return o;
}

void settings_said(struct strbuf *sb, enum said_line line, const struct train_settings *t, const struct said_ctx *c)
{
	const char *sep = line == SAID_PARTS ? "; " : ", ";
	int begun = 0;

	for (size_t i = 0; i < NSETTINGS; i++) {
		struct strbuf phrase = STRBUF_INIT;

		if (settings[i].said_on != line || !settings[i].said)
			continue;
		settings[i].said(&settings[i], t, c, &phrase);
		if (phrase.len && begun && phrase.s[0] != ' ')
			strbuf_add(sb, sep);
		strbuf_add(sb, strbuf_str(&phrase));
		begun |= phrase.len > 0;
		strbuf_release(&phrase);
	}
}
