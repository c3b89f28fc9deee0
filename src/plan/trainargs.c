#include "plan/trainargs.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "plan/config.h"
#include "plan/dtype.h"
#include "plan/limits.h"
#include "plan/lora_names.h"
#include "plan/optimizer.h"
#include "plan/sim.h"
#include "sys/fsutil.h"
#include "util/strbuf.h"
#include "util/xalloc.h"
#include "util/yaml.h"

struct reader {
	const char *tool;            /* "TrainingArguments", "axolotl" */
	struct train_settings *t;
	setting_mask *given;
	char **err;
	json_t *file;                /* the whole file (a key may read another) */
	struct file_read *f;         /* what the caller tells, and what is said back */
	struct strbuf said;
	int precision_done;          /* a DeepSpeed config set the weights' dtype */
	int fsdp;                    /* FSDP's full_shard read */
	const char *init_dtype;      /* TRL's model_init_kwargs' dtype: from_pretrained's */
	int liger_said;              /* Liger's other kernels said */
	int ds_fused;                /* a DeepSpeed config's own Adam */
	const char *act_offload;     /* activation_offloading's mode (TRL's, axolotl's), or NULL */
};

/* A key of a tool's file: the setting it is (its value as the setting's), or a
 * function that maps it; neither: it changes no memory and is ignored. */
struct file_key {
	const char *key;
	const char *setting;
	int (*map)(struct reader *r, const char *key, json_t *v);
};

/* Whether v is a value that turns a feature off (false, null, 0, "", [], {}, "no"). */
static int off(json_t *v)
{
	return !v || json_is_null(v) || json_is_false(v) || (json_is_integer(v) && !json_integer_value(v)) ||
	       (json_is_string(v) && (!*json_string_value(v) || !strcmp(json_string_value(v), "no"))) ||
	       (json_is_array(v) && !json_array_size(v)) || (json_is_object(v) && !json_object_size(v));
}

/* Whether the command line gives setting: its flag wins over the file, whose value for
 * it is then neither read nor an error. */
static int flag_wins(const struct reader *r, const char *setting)
{
	return (r->f->cli & SETTING_BIT(setting_find(setting))) != 0;
}

static int set(struct reader *r, const char *key, const char *setting, const char *text)
{
	const struct setting *s = setting_find(setting);

	if (flag_wins(r, setting))
		return 0;
	if (setting_apply(s, r->t, text)) {
		*r->err = xasprintf("%s: '%s' gives %s '%s', which the planner does not take", r->tool, key, setting, text);
		return -EINVAL;
	}
	if (r->given)
		*r->given |= SETTING_BIT(s);
	return 0;
}

static int set_json(struct reader *r, const char *key, const char *setting, json_t *v)
{
	const struct setting *s = setting_find(setting);
	char *err = NULL;

	if (flag_wins(r, setting))
		return 0;
	if (setting_apply_json(key, s, v, r->t, &err)) {
		*r->err = xasprintf("%s: %s", r->tool, err + strlen("settings: "));
		free(err);
		return -EINVAL;
	}
	if (r->given)
		*r->given |= SETTING_BIT(s);
	return 0;
}

/* A key that changes memory in a way the planner cannot plan: named, with what to do. */
static int unmappable(struct reader *r, const char *key, const char *why)
{
	*r->err = xasprintf("%s: '%s' %s", r->tool, key, why);
	return -EINVAL;
}

/* A feature the planner does not model: planned only when it is off. */
static int must_be_off(struct reader *r, const char *key, json_t *v)
{
	if (off(v))
		return 0;
	return unmappable(r, key, "is not modelled by the planner (its memory differs): plan without it (remove the "
				  "key), and take the plan as a guide only");
}

/* Optimizers by their Hugging Face names (TrainingArguments' optim, axolotl's
 * optimizer), as plan/optimizer.h's rows name them; Lion's 8-bit and paged variants,
 * whose states are smaller than the 32-bit one's, are refused naming it. */
static int map_optim(struct reader *r, const char *key, json_t *v)
{
	const char *s = json_string_value(v);
	const struct optimizer_row *o;
	struct strbuf names = STRBUF_INIT;

	if (flag_wins(r, "optimizer") || json_is_null(v)) /* null: the tool's default */
		return 0;
	if (!s)
		return unmappable(r, key, "wants an optimizer's name such as adamw_torch");
	if ((o = optimizer_by_hf(s)))
		return set(r, key, "optimizer", o->word);
	if (strstr(s, "lion")) {
		*r->err = xasprintf("%s: '%s' is %s, whose states the planner does not model: plan with --optimizer "
				    "lion for an upper bound (lion_32bit's fp32 state on the GPU)", r->tool, key, s);
		return -EINVAL;
	}
	for (size_t i = 0; (o = optimizer_at(i)); i++)
		for (int j = 0; j < OPT_MAX_NAMES && o->hf[j]; j++)
			strbuf_addf(&names, "%s%s", names.len ? ", " : "", o->hf[j]);
	*r->err = xasprintf("%s: '%s' is %s, an optimizer the planner does not model (it plans %s): plan with "
			    "--optimizer adamw for an upper bound of AdamW-like states", r->tool, key, s,
			    strbuf_str(&names));
	strbuf_release(&names);
	return -EINVAL;
}

static int map_positive_steps(struct reader *r, const char *key, json_t *v)
{
	if (json_is_integer(v) && json_integer_value(v) <= 0)
		return 0; /* -1: the epochs decide */
	return set_json(r, key, "steps", v);
}

/* TRL's max_length (max_seq_length before): the sequence; null leaves it to the data */
static int map_length(struct reader *r, const char *key, json_t *v)
{
	return json_is_null(v) ? 0 : set_json(r, key, "seq", v);
}

/* Whether the command line gives the weights' dtype (a preset or the dtype itself). */
static int dtype_flag_wins(const struct reader *r)
{
	return flag_wins(r, "precision") || flag_wins(r, "dtype");
}

/* TrainingArguments' bf16 and fp16, read together once every key is (hf_precision). */
static int map_hf_amp(struct reader *r, const char *key, json_t *v)
{
	if (!json_is_boolean(v) && !dtype_flag_wins(r))
		return unmappable(r, key, "wants true or false");
	return 0;
}

/* transformers 5 loads from_pretrained in the checkpoint's dtype (dtype="auto"): the
 * weights are the config's dtype (fp32 where it names none, as torch's default, or one
 * the planner holds no weights in), and bf16=true or fp16=true put the forward under
 * autocast over them (fp16's holds the same bytes). Neither key: the planner's default. */
static int hf_precision(struct reader *r)
{
	static const struct { const char *config, *dtype; } dtypes[] = {
		{ "bfloat16", "bf16" }, { "float16", "fp16" }, { "float32", "fp32" },
	};
	json_t *bf16 = json_object_get(r->file, "bf16"), *fp16 = json_object_get(r->file, "fp16");
	const char *cfg = r->f->dtype && *r->f->dtype ? r->f->dtype : NULL, *w = NULL;

	const char *whose = "the config's dtype";

	if (r->init_dtype && strcmp(r->init_dtype, "auto")) {
		cfg = strncmp(r->init_dtype, "torch.", 6) ? r->init_dtype : r->init_dtype + 6;
		whose = "model_init_kwargs' dtype";
	}
	const char *amp = json_is_true(fp16) ? "fp16" : json_is_true(bf16) ? "bf16" : NULL;

	if ((!bf16 && !fp16) || dtype_flag_wins(r) || r->precision_done)
		return 0;
	for (size_t i = 0; cfg && i < sizeof(dtypes) / sizeof(dtypes[0]); i++)
		if (!strcmp(cfg, dtypes[i].config))
			w = dtypes[i].dtype;
	if (set(r, amp ? amp : "bf16", "dtype", w ? w : "fp32") ||
	    set(r, amp ? amp : "bf16", "autocast", amp ? "true" : "false"))
		return -EINVAL;
	strbuf_addf(&r->said, "%s%s=%s, ", r->said.len ? "; " : "", amp ? amp : "bf16", amp ? "true" : "false");
	if (!cfg)
		strbuf_add(&r->said, "the config naming no dtype: fp32 weights");
	else if (!w)
		strbuf_addf(&r->said, "%s %s, which the planner holds no weights in: fp32 weights", whose, cfg);
	else
		strbuf_addf(&r->said, "%s %s: %s weights", whose, cfg, w);
	strbuf_addf(&r->said, "%s (transformers 5 loads the checkpoint's dtype%s)", amp ? " under autocast" : ", no autocast",
		    cfg ? "" : ", torch's default without one");
	return 0;
}

/* FSDP's options or sharding strategy (either case), a list or a string of them
 * separated by spaces or commas. */
static int fsdp_words(struct reader *r, const char *key, json_t *v)
{
	char *text = json_is_string(v) ? xstrdup(json_string_value(v)) : NULL, *save = NULL;
	struct strbuf sb = STRBUF_INIT;
	json_t *item;
	size_t i;
	int rc = 0;

	if (!text) {
		if (!json_is_array(v))
			return unmappable(r, key, "wants FSDP's options, such as \"full_shard auto_wrap\"");
		json_array_foreach(v, i, item)
			strbuf_addf(&sb, "%s ", json_is_string(item) ? json_string_value(item) : "?");
		text = strbuf_detach(&sb);
	}
	for (char *w = strtok_r(text, " ,", &save); w && !rc; w = strtok_r(NULL, " ,", &save)) {
		if (!strcasecmp(w, "full_shard"))
			rc = set(r, key, "zero_stage", "3"), r->fsdp = 1;
		else if (!strcasecmp(w, "shard_grad_op"))
			rc = set(r, key, "zero_stage", "2");
		else if (!strcasecmp(w, "no_shard"))
			rc = set(r, key, "ddp", "true");
		else if (!strcasecmp(w, "offload"))
			rc = set(r, key, "offload", "optimizer,params");
		else if (strcasecmp(w, "auto_wrap"))
			rc = unmappable(r, key, "has an FSDP option the planner does not model (hybrid_shard): plan with "
						"--zero-stage 3 --dp N for full_shard on the GPU, without it");
	}
	free(text);
	return rc;
}

static int map_fsdp(struct reader *r, const char *key, json_t *v)
{
	return off(v) ? 0 : fsdp_words(r, key, v);
}

/* DeepSpeed's reduce_bucket_size where a config gives none (its ZeRO config's default) */
#define DS_REDUCE_BUCKET 500000000LL

/* axolotl's bundled DeepSpeed configs (its repository's deepspeed_configs/, which
 * `axolotl fetch deepspeed_configs` copies to the launch directory), by name: what of
 * each the planner reads. Those that compile the model are not here: it is not modelled. */
static const struct {
	const char *name, *json;
} axolotl_ds[] = {
	{ "zero1.json", "{\"zero_optimization\": {\"stage\": 1, \"overlap_comm\": true}, "
			"\"bf16\": {\"enabled\": \"auto\"}, \"fp16\": {\"enabled\": \"auto\"}}" },
	{ "zero2.json", "{\"zero_optimization\": {\"stage\": 2, \"offload_optimizer\": {\"device\": \"cpu\"}, "
			"\"overlap_comm\": true}, \"bf16\": {\"enabled\": \"auto\"}, \"fp16\": {\"enabled\": \"auto\"}}" },
	{ "zero3.json", "{\"zero_optimization\": {\"stage\": 3, \"overlap_comm\": true, \"reduce_bucket_size\": "
			"\"auto\"}, \"bf16\": {\"enabled\": \"auto\"}, \"fp16\": {\"enabled\": \"auto\"}}" },
	{ "zero3_bf16.json", "{\"zero_optimization\": {\"stage\": 3, \"overlap_comm\": true, "
			     "\"reduce_bucket_size\": \"auto\"}, \"bf16\": {\"enabled\": true}}" },
	{ "zero3_bf16_cpuoffload_params.json",
	  "{\"zero_optimization\": {\"stage\": 3, \"offload_param\": {\"device\": \"cpu\"}, \"overlap_comm\": true, "
	  "\"reduce_bucket_size\": \"auto\"}, \"bf16\": {\"enabled\": true}}" },
	{ "zero3_bf16_cpuoffload_all.json",
	  "{\"zero_optimization\": {\"stage\": 3, \"offload_optimizer\": {\"device\": \"cpu\"}, \"offload_param\": "
	  "{\"device\": \"cpu\"}, \"overlap_comm\": true, \"reduce_bucket_size\": \"auto\"}, "
	  "\"bf16\": {\"enabled\": true}}" },
};

#define AXOLOTL_DS_DIR "deepspeed_configs/"

/* An axolotl file's DeepSpeed path that is nowhere to be read but names one of axolotl's
 * bundled configs (deepspeed_configs/NAME): that config, said; else NULL. */
static json_t *axolotl_bundled_ds(struct reader *r, const char *path)
{
	size_t n = strlen(path), d = strlen(AXOLOTL_DS_DIR);

	if (strcmp(r->tool, "axolotl"))
		return NULL;
	for (size_t i = 0; i < sizeof(axolotl_ds) / sizeof(axolotl_ds[0]); i++) {
		size_t k = strlen(axolotl_ds[i].name);
		if (n < k + d || strcmp(path + n - k, axolotl_ds[i].name) || strncmp(path + n - k - d, AXOLOTL_DS_DIR, d) ||
		    (n > k + d && path[n - k - d - 1] != '/'))
			continue;
		strbuf_addf(&r->said, "%s%s not found here: axolotl's bundled %s", r->said.len ? "; " : "", path,
			    axolotl_ds[i].name);
		return json_loads(axolotl_ds[i].json, 0, NULL);
	}
	return NULL;
}

/* A DeepSpeed config's path: as given (the launch directory), else beside the file read,
 * else one of axolotl's bundled ones. The object, or NULL with *r->err. */
static json_t *deepspeed_load(struct reader *r, const char *key, const char *path)
{
	json_error_t je;
	char *beside = NULL;
	const char *slash = r->f->base ? strrchr(r->f->base, '/') : NULL, *kind = NULL;
	struct stat st;
	json_t *j;
	FILE *in = NULL;
	int rc = fs_open_input(path, &in, &st, &kind);

	if (rc == -ENOENT && path[0] != '/' && slash) {
		beside = xasprintf("%.*s/%s", (int)(slash - r->f->base), r->f->base, path);
		rc = fs_open_input(beside, &in, &st, &kind);
	}
	if (rc == -ENOENT && (j = axolotl_bundled_ds(r, path))) {
		free(beside);
		return j;
	}
	if (rc) {
		*r->err = xasprintf("%s: '%s' names the DeepSpeed config %s, which cannot be read (%s): give its path "
				    "from here, or plan with --zero-stage N --dp N", r->tool, key, path,
				    rc == -EINVAL && kind ? kind : strerror(-rc));
		free(beside);
		return NULL;
	}
	j = json_loadf(in, 0, &je);
	fclose(in);
	if (!j || !json_is_object(j))
		*r->err = xasprintf("%s: '%s': %s is not a DeepSpeed JSON config: %s (line %d)", r->tool, key,
				    beside ? beside : path, j ? "not an object" : je.text, j ? 1 : je.line);
	if (j && !json_is_object(j)) {
		json_decref(j);
		j = NULL;
	}
	free(beside);
	return j;
}

/* Whether a DeepSpeed section (bf16, fp16) is on: true, or "auto" where the training
 * file's own key of that name is true or auto (HF's integration fills "auto" from it). */
static int ds_enabled(struct reader *r, json_t *ds, const char *section)
{
	json_t *e = json_object_get(json_object_get(ds, section), "enabled");
	const char *s = json_string_value(e);

	json_t *own = json_object_get(r->file, section);
	const char *o = json_string_value(own);

	/* (axolotl's own bf16 may be "auto" too: bf16 where the GPU has it, as the planner's do) */
	return json_is_true(e) || (s && !strcmp(s, "auto") && (json_is_true(own) || (o && !strcmp(o, "auto"))));
}

/* DeepSpeed's bf16/fp16 engine: the model cast to 16 bits, an fp32 master copy that the
 * optimizer steps (no autocast). */
static int ds_precision(struct reader *r, const char *key, json_t *ds)
{
	int bf16 = ds_enabled(r, ds, "bf16"), fp16 = ds_enabled(r, ds, "fp16");

	if (!bf16 && !fp16)
		return 0;
	r->precision_done = 1;
	r->f->ds_engine = 1;
	if (!dtype_flag_wins(r) && (set(r, key, "dtype", bf16 ? "bf16" : "fp16") || set(r, key, "autocast", "false")))
		return -EINVAL;
	if (set(r, key, "master_weights", "true"))
		return -EINVAL;
	strbuf_addf(&r->said, "%sDeepSpeed's %s engine: %s weights, fp32 master weights and states", r->said.len ? "; " : "",
		    bf16 ? "bf16" : "fp16", bf16 ? "bf16" : "fp16");
	return 0;
}

/* DeepSpeed's reduce bucket (its default where the file gives none; "auto" as HF's
 * integration fills it) and overlap_comm where the file gives it. */
static int ds_buckets(struct reader *r, const char *key, json_t *zero, int stage)
{
	json_t *b = json_object_get(zero, "reduce_bucket_size"), *o = json_object_get(zero, "overlap_comm");
	const char *word = json_string_value(b);
	char text[32];

	/* (a stage given on the command line: the file's buckets are its) */
	if (!stage && !flag_wins(r, "zero_stage"))
		return 0;
	if (word && strcmp(word, "auto"))
		return unmappable(r, key, "has a reduce_bucket_size that is neither a number nor auto");
	if (b && !word && (!json_is_number(b) || json_number_value(b) < 1 || json_number_value(b) > PLAN_MAX_BUCKET ||
			   json_number_value(b) != (double)(int64_t)json_number_value(b)))
		return unmappable(r, key, "has a reduce_bucket_size that is not a whole number of elements from 1 to "
					  "2^34");
	if (word)
		snprintf(text, sizeof(text), "auto");
	else
		snprintf(text, sizeof(text), "%lld", b ? (long long)json_number_value(b) : DS_REDUCE_BUCKET);
	if (set(r, key, "reduce_bucket_size", text))
		return -EINVAL;
	if (o && !json_is_boolean(o))
		return unmappable(r, key, "has an overlap_comm that is neither true nor false");
	/* (absent: DeepSpeed's default, on only at stage 3, whose one bucket it does not double) */
	return o ? set_json(r, key, "overlap_comm", o) : 0;
}

/* A DeepSpeed config (inline, or a file's path): its ZeRO stage, offload, precision and
 * micro-batch; its bucket sizes said, not modelled. */
static int map_deepspeed(struct reader *r, const char *key, json_t *v)
{
	json_t *ds = v, *loaded = NULL, *zero, *stage, *mb;
	int rc = -EINVAL;

	if (off(v))
		return 0;
	if (json_is_string(v) && !(ds = loaded = deepspeed_load(r, key, json_string_value(v)))) {
		if (!flag_wins(r, "zero_stage"))
			return -EINVAL;
		free(*r->err); /* --zero-stage stands for the file it cannot read */
		*r->err = NULL;
		return 0;
	}
	if (!json_is_object(ds))
		return unmappable(r, key, "wants a DeepSpeed config: its path, or the object");
	zero = json_object_get(ds, "zero_optimization");
	stage = json_object_get(zero, "stage");
	if (stage && (!json_is_integer(stage) || json_integer_value(stage) < 0 || json_integer_value(stage) > 3)) {
		rc = unmappable(r, key, "has a zero_optimization.stage other than 0 to 3");
		goto out;
	}
	if (stage && set_json(r, key, "zero_stage", stage))
		goto out;
	const char *od = json_string_value(json_object_get(json_object_get(zero, "offload_optimizer"), "device"));
	const char *pd = json_string_value(json_object_get(json_object_get(zero, "offload_param"), "device"));
	int oo = od && strcmp(od, "none"), op = pd && strcmp(pd, "none");
	if ((oo || op) && set(r, key, "offload", oo && op ? "optimizer,params" : oo ? "optimizer" : "params"))
		goto out;
	/* its own optimizer, which DeepSpeed runs whatever the file's optim says: its fused
	 * Adam (no step temporaries), set once every key is read (read_file) */
	const char *opt = json_string_value(json_object_get(json_object_get(ds, "optimizer"), "type"));
	r->ds_fused = opt && (!strcasecmp(opt, "adam") || !strcasecmp(opt, "adamw"));
	mb = json_object_get(ds, "train_micro_batch_size_per_gpu");
	if (json_is_integer(mb) && set_json(r, key, "batch", mb))
		goto out;
	if (ds_precision(r, key, ds))
		goto out;
	if (ds_buckets(r, key, zero, json_is_integer(stage) ? (int)json_integer_value(stage) : 0))
		goto out;
	rc = 0;
out:
	json_decref(loaded);
	return rc;
}

/* axolotl's bf16 and fp16 load the model in that dtype and train it so: the planner's
 * bf16 and fp16 ("auto" is bf16 where the GPU has it: the planner's GPUs do). */
static int map_axolotl_dtype(struct reader *r, const char *key, json_t *v)
{
	const char *s = json_string_value(v);

	if (off(v) || dtype_flag_wins(r))
		return 0;
	if (!json_is_true(v) && !(s && !strcmp(s, "auto")))
		return unmappable(r, key, "wants true, false or auto");
	if (set(r, key, "precision", !strcmp(key, "fp16") ? "fp16" : "bf16"))
		return -EINVAL;
	/* it is also the Trainer's bf16=True: autocast, a no-op over the bf16 weights
	 * axolotl loads, not over the fp32 ones prepare_model_for_kbit_training leaves of
	 * a quantized base */
	if (!off(json_object_get(r->file, "load_in_4bit")) || !off(json_object_get(r->file, "load_in_8bit")))
		return set(r, key, "autocast", "true");
	return 0;
}

/* axolotl's adapter: lora or qlora (whose 4-bit base load_in_4bit says) with its lora_r. */
static int map_adapter(struct reader *r, const char *key, json_t *v)
{
	const char *s = json_string_value(v);
	json_t *rank = json_object_get(r->file, "lora_r");

	if (off(v) || flag_wins(r, "lora_rank"))
		return 0;
	if (!s || (strcmp(s, "lora") && strcmp(s, "qlora")))
		return unmappable(r, key, "is neither lora nor qlora (the adapters planned)");
	if (!strcmp(s, "qlora") && off(json_object_get(r->file, "load_in_4bit")))
		return unmappable(r, key, "is qlora without load_in_4bit: true (axolotl wants both)");
	if (!rank)
		return unmappable(r, key, "is lora without lora_r: give lora_r (or --lora-rank R)");
	return set_json(r, "lora_r", "lora_rank", rank);
}

/* axolotl's load_in_4bit (its BitsAndBytesConfig: NF4, double-quantized) and
 * load_in_8bit (LLM.int8); PEFT's prepare_model_for_kbit_training follows, as axolotl
 * runs it by default. */
static int map_load_in(struct reader *r, const char *key, json_t *v)
{
	int four = !strcmp(key, "load_in_4bit");
	json_t *kw = json_object_get(r->file, "bnb_config_kwargs");
	const char *type = json_string_value(json_object_get(kw, "bnb_4bit_quant_type"));
	json_t *dq = json_object_get(kw, "bnb_4bit_use_double_quant");

	if (off(v) || flag_wins(r, "quant"))
		return 0;
	if (!json_is_true(v))
		return unmappable(r, key, "wants true or false");
	if (four && (dq ? !json_is_boolean(dq) : 0))
		return unmappable(r, "bnb_config_kwargs", "has a bnb_4bit_use_double_quant that is neither true nor false");
	if (four && !flag_wins(r, "double_quant") && set(r, key, "double_quant", !dq || json_is_true(dq) ? "true" : "false"))
		return -EINVAL;
	/* axolotl's BitsAndBytesConfig: nf4 unless its kwargs say otherwise */
	return set(r, type && four ? "bnb_config_kwargs" : key, "quant", !four ? "int8" : type ? type : "nf4");
}

/* axolotl's attn_implementation: the attention's name, as the setting takes it; a
 * flash-attn kernel from the Hub (kernels-community/vllm-flash-attn3) as the
 * flash-attn it builds, said. */
static int map_attn_name(struct reader *r, const char *key, json_t *v)
{
	const char *s = json_string_value(v);

	if (off(v))
		return 0;
	if (s && !strncmp(s, "kernels-community/", strlen("kernels-community/")) &&
	    (strstr(s, "flash-attn") || strstr(s, "flash_attn"))) {
		const char *fa = s[strlen(s) - 1] == '3' ? "flash_attention_3" : "flash_attention_2";
		strbuf_addf(&r->said, "%s%s planned as %s", r->said.len ? "; " : "", s, fa);
		return set(r, key, "attn", fa);
	}
	return set_json(r, key, "attn", v);
}

/* axolotl's older xformers_attention switch: xformers' memory-efficient attention */
static int map_xformers(struct reader *r, const char *key, json_t *v)
{
	return off(v) ? 0 : set(r, key, "attn", "xformers");
}

/* Liger's RoPE, RMSNorm and SwiGLU kernels keep less than PyTorch's ops; planned as
 * PyTorch's (an upper bound), said. */
static int map_liger_ops(struct reader *r, const char *key, json_t *v)
{
	(void)key;
	if (!off(v) && !r->liger_said++)
		strbuf_addf(&r->said, "%sLiger's RoPE, RMSNorm, LayerNorm and SwiGLU kernels planned as PyTorch's ops "
				      "(they keep no more)", r->said.len ? "; " : "");
	return 0;
}

/* axolotl's bnb_config_kwargs: read with load_in_4bit (map_load_in); its other keys
 * (llm_int8_has_fp16_weight, the compute dtype) change no memory the plan counts. */
static int map_bnb_kwargs(struct reader *r, const char *key, json_t *v)
{
	if (!off(v) && !json_is_object(v))
		return unmappable(r, key, "wants an object of BitsAndBytesConfig's arguments");
	return 0;
}

/* TRL's model_init_kwargs, from_pretrained's arguments: the dtype the weights load in
 * (read with bf16/fp16, hf_precision), the attention, use_cache and a
 * quantization_config's bitsandbytes format (BitsAndBytesConfig's defaults: fp4, no
 * double quantization); the others (device_map, revision...) change no memory. */
static int map_model_init(struct reader *r, const char *key, json_t *v)
{
	json_t *q = json_object_get(v, "quantization_config"), *a = json_object_get(v, "attn_implementation");
	json_t *d = json_object_get(v, "dtype");

	if (off(v))
		return 0;
	if (!json_is_object(v))
		return unmappable(r, key, "wants an object of from_pretrained's arguments");
	if (!d)
		d = json_object_get(v, "torch_dtype");
	if (d && !json_is_string(d))
		return unmappable(r, key, "has a dtype that is not a name such as bfloat16");
	r->init_dtype = json_string_value(d);
	if (a && map_attn_name(r, key, a))
		return -EINVAL;
	if (json_object_get(v, "use_cache") && set_json(r, key, "use_cache", json_object_get(v, "use_cache")))
		return -EINVAL;
	if (!off(q) && !json_is_object(q))
		return unmappable(r, key, "has a quantization_config that is not BitsAndBytesConfig's arguments");
	if (json_is_true(json_object_get(q, "load_in_8bit")))
		return set(r, key, "quant", "int8");
	if (!json_is_true(json_object_get(q, "load_in_4bit")))
		return 0;
	json_t *type = json_object_get(q, "bnb_4bit_quant_type"), *dq = json_object_get(q, "bnb_4bit_use_double_quant");
	if ((type && !json_is_string(type)) || (dq && !json_is_boolean(dq)))
		return unmappable(r, key, "has a quantization_config whose bnb_4bit_quant_type or "
					  "bnb_4bit_use_double_quant is not as BitsAndBytesConfig takes it");
	if (set(r, key, "quant", type ? json_string_value(type) : "fp4"))
		return -EINVAL;
	return set(r, key, "double_quant", json_is_true(dq) ? "true" : "false");
}

/* lora_r is read with adapter (without one axolotl trains the whole model) */
static int map_with_adapter(struct reader *r, const char *key, json_t *v)
{
	(void)r;
	(void)key;
	(void)v;
	return 0;
}

/* PEFT's target_modules as a list of module names: the projections they name; a name
 * the planner models no projection by (a mixer's in_proj) said and left out. */
static int lora_list(struct reader *r, const char *key, json_t *v, unsigned *bits)
{
	struct strbuf unknown = STRBUF_INIT;
	size_t i;
	json_t *e;
	int n = 0;

	json_array_foreach(v, i, e) {
		unsigned b;
		if (!json_is_string(e)) {
			strbuf_release(&unknown);
			return unmappable(r, key, "wants module names (such as q_proj, v_proj) or one regular expression");
		}
		if (lora_targets_parse(json_string_value(e), &b))
			strbuf_addf(&unknown, "%s'%s'", n++ ? ", " : "", json_string_value(e));
		else
			*bits |= b;
	}
	if (!*bits) {
		*r->err = xasprintf("%s: '%s' names no projection the planner models (%s): name q_proj, k_proj, v_proj, "
				    "o_proj, gate_proj, up_proj or down_proj (or their families' names)",
				    r->tool, key, strbuf_str(&unknown));
		strbuf_release(&unknown);
		return -EINVAL;
	}
	if (n)
		strbuf_addf(&r->said, "%sLoRA on %s not counted: no projection the planner models", r->said.len ? "; " : "",
			    strbuf_str(&unknown));
	strbuf_release(&unknown);
	return 0;
}

/* PEFT's target_modules as one regular expression (matched whole against the module
 * names): the projections whose names it matches; on some layers only, planned on all. */
static int lora_regex(struct reader *r, const char *key, const char *re, unsigned *bits)
{
	char *err = NULL, list[64];
	unsigned partial;

	if (lora_regex_bits(re, r->f->layers, bits, &partial, &err)) {
		*r->err = xasprintf("%s: '%s' is %s: fix it, or give a list of module names", r->tool, key, err);
		free(err);
		return -EINVAL;
	}
	if (!*bits)
		return unmappable(r, key, "matches none of the decoder layers' projections the planner models (such as "
					  "model.layers.0.self_attn.q_proj): give a list of module names");
	if (partial)
		strbuf_addf(&r->said, "%sLoRA on %s of some layers only (lora_target_modules' expression): planned on "
				      "every layer, a bound from above", r->said.len ? "; " : "",
			    lora_targets_text(partial, list, sizeof(list)));
	return 0;
}

/* axolotl's lora_target_modules, as PEFT takes target_modules: a list of names or a
 * regular expression (a word of names and commas alone is a list). */
static int map_lora_targets(struct reader *r, const char *key, json_t *v)
{
	const char *s = json_string_value(v);
	unsigned bits = 0;
	char list[64];
	int rc;

	/* lora_target_linear adds every linear layer to the list: all of them */
	if (off(v) || off(json_object_get(r->file, "adapter")) || flag_wins(r, "lora_targets") ||
	    !off(json_object_get(r->file, "lora_target_linear")))
		return 0;
	if (s && strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-,") == strlen(s))
		return set_json(r, key, "lora_targets", v);
	if (s)
		rc = lora_regex(r, key, s, &bits);
	else if (json_is_array(v))
		rc = lora_list(r, key, v, &bits);
	else
		return unmappable(r, key, "wants module names (such as q_proj, v_proj) or one regular expression");
	return rc ? rc : set(r, key, "lora_targets", lora_targets_text(bits, list, sizeof(list)));
}

static int map_target_linear(struct reader *r, const char *key, json_t *v)
{
	if (off(v) || off(json_object_get(r->file, "adapter")))
		return 0;
	return set(r, key, "lora_targets", "all");
}

/* axolotl's rl: preference and reinforcement training (TRL's DPO, ORPO, KTO, GRPO...)
 * runs more than one sequence an example, and DPO a reference forward while the policy's
 * graph is alive: not modelled, and not to be planned as plain fine-tuning. */
static int map_rl(struct reader *r, const char *key, json_t *v)
{
	const char *s = json_string_value(v);

	if (off(v))
		return 0;
	*r->err = xasprintf("%s: '%s' is %s, preference or reinforcement training, which the planner does not "
			    "model (DPO runs each example's chosen and rejected sequences as one batch, and a "
			    "reference forward beside the policy's graph): plan without the key at twice the "
			    "micro_batch_size for the policy's part, not a bound", r->tool, key, s ? s : "set");
	return -EINVAL;
}

/* A key only TRL's preference and RL trainers' configs write (DPOConfig's, KTOConfig's
 * precompute_ref_log_probs, GRPOConfig's num_generations...): the file is one of them,
 * whatever the value; not modelled, as axolotl's rl. */
static int map_trl_rl(struct reader *r, const char *key, json_t *v)
{
	(void)v;
	*r->err = xasprintf("%s: '%s' is a key of TRL's preference or reinforcement trainers' configs (DPO, KTO, "
			    "GRPO...), which the planner does not model (more than one sequence an example, a "
			    "reference or generation beside the policy): plan the policy's part as an SFT file, "
			    "not a bound", r->tool, key);
	return -EINVAL;
}

/* axolotl's lora_modules_to_save, PEFT's modules_to_save: the embedding and lm_head by
 * any family's name, trained as copies (lora_save); another module is refused by name. */
static int map_lora_save(struct reader *r, const char *key, json_t *v)
{
	struct strbuf list = STRBUF_INIT;
	size_t i;
	json_t *e;
	int rc;

	if (off(v) || flag_wins(r, "lora_save"))
		return 0;
	if (json_is_string(v))
		strbuf_add(&list, json_string_value(v));
	json_array_foreach(v, i, e) {
		const char *name = json_string_value(e);
		if (!name || !lora_save_bits(name)) {
			strbuf_release(&list);
			if (!name)
				return unmappable(r, key, "wants a list of module names");
			*r->err = xasprintf("%s: '%s' names '%s', a module whose trained copy the planner does not model "
					    "(it models the embedding's and lm_head's: embed_tokens, lm_head and their "
					    "families' names): plan without it for the rest", r->tool, key, name);
			return -EINVAL;
		}
		strbuf_addf(&list, "%s%s", i ? "," : "", name);
	}
	if (!list.len) {
		strbuf_release(&list);
		return unmappable(r, key, "wants a list of module names");
	}
	rc = set(r, key, "lora_save", strbuf_str(&list));
	strbuf_release(&list);
	return rc;
}

/* axolotl's gradient_checkpointing: true (or "unsloth", the same tensors kept), or
 * "offload" (to the CPU: not modelled). */
static int map_axolotl_ckpt(struct reader *r, const char *key, json_t *v)
{
	const char *s = json_string_value(v);

	if (flag_wins(r, "grad_ckpt"))
		return 0;
	/* null (a key with no value): axolotl passes none on, the Trainer's default is off */
	if (json_is_boolean(v) || json_is_null(v))
		return set(r, key, "grad_ckpt", json_is_true(v) ? "true" : "false");
	if (s && !strcmp(s, "unsloth"))
		return set(r, key, "grad_ckpt", "true");
	/* axolotl's deprecated spellings of activation_offloading: true and disk */
	if (s && (!strcmp(s, "offload") || !strcmp(s, "offload_disk"))) {
		if (!r->act_offload)
			r->act_offload = !strcmp(s, "offload") ? "true" : "disk";
		return set(r, key, "grad_ckpt", "true");
	}
	return unmappable(r, key, "wants true, false, offload or offload_disk");
}

/* TRL's and axolotl's activation_offloading: the saved activations copied to the host
 * as the forward makes them (TRL's OffloadActivations, a few in flight) and brought
 * back for the backward. Not modelled: read in act_offload_settle. */
static int map_act_offload(struct reader *r, const char *key, json_t *v)
{
	static const char *const modes[] = { "legacy", "disk", "offload_disk", "hidden_states" };
	const char *s = json_string_value(v);

	if (off(v))
		return 0;
	if (json_is_true(v)) {
		r->act_offload = "true";
		return 0;
	}
	for (size_t i = 0; s && i < sizeof(modes) / sizeof(modes[0]); i++)
		if (!strcmp(s, modes[i])) {
			r->act_offload = modes[i];
			return 0;
		}
	return unmappable(r, key, "wants true, false, legacy, disk or hidden_states");
}

/* Activation offloading planned as the activations kept on the GPU, a bound from above:
 * with axolotl's LoRA it replaces checkpointing (axolotl turns it off, and offloads
 * every saved activation: planned without checkpointing); with its full fine-tune, or
 * hidden_states, or TRL's, the checkpoints it keeps are offloaded (planned kept). */
static int act_offload_settle(struct reader *r)
{
	int axolotl = !strcmp(r->tool, "axolotl");
	int replaces = axolotl && strcmp(r->act_offload, "hidden_states") &&
		       !off(json_object_get(r->file, "adapter")) && !flag_wins(r, "grad_ckpt");

	if (axolotl && set(r, "activation_offloading", "grad_ckpt", replaces ? "false" : "true"))
		return -EINVAL;
	strbuf_addf(&r->said, "%sactivation offloading (%s) not modelled: the saved activations planned kept on the "
			      "GPU%s, a bound from above", r->said.len ? "; " : "", r->act_offload,
		    replaces ? " with no checkpointing, which it replaces for LoRA" : "");
	return 0;
}

/* flash_attention and sdp_attention: sdpa's flash kernel keeps what flash-attn keeps
 * (the output and its log-sum-exp), the attention the planner models. */
static int map_attn_sdpa(struct reader *r, const char *key, json_t *v)
{
	return off(v) ? 0 : set(r, key, "attn", "sdpa");
}

/* A fused loss's switch (TrainingArguments' use_liger_kernel, axolotl's
 * liger_fused_linear_cross_entropy and cut_cross_entropy): on, that loss; two fused
 * losses on in one file cannot both be the loss. */
static int map_loss(struct reader *r, const char *key, json_t *v, const char *loss)
{
	const struct setting *s = setting_find("loss");

	if (off(v))
		return 0;
	if (!json_is_true(v))
		return unmappable(r, key, "wants true or false");
	if (r->given && (*r->given & SETTING_BIT(s)) && !flag_wins(r, "loss") &&
	    strcmp(sim_loss(r->t->loss)->name, loss))
		return unmappable(r, key, "is a second fused loss in the file: keep one of them on");
	return set(r, key, "loss", loss);
}

static int map_liger(struct reader *r, const char *key, json_t *v)
{
	return map_loss(r, key, v, "liger");
}

static int map_cce(struct reader *r, const char *key, json_t *v)
{
	return map_loss(r, key, v, "cce");
}

/* axolotl's flex_attention: planned as sdpa's flash kernel, the mask causal. */
static int map_attn_flex(struct reader *r, const char *key, json_t *v)
{
	return off(v) ? 0 : set(r, key, "attn", "flex_attention");
}

/* A degree of parallelism: 1 (or none) is none. */
static int must_be_one(struct reader *r, const char *key, json_t *v)
{
	if (off(v) || (json_is_integer(v) && json_integer_value(v) == 1))
		return 0;
	return unmappable(r, key, "splits the sequence over GPUs, which the planner does not model: plan one GPU's "
				  "share with --seq");
}

/* FSDP's config: offload_params (FSDP's CPU offload: the shards, their gradients and
 * the optimizer's step in host memory) and reshard_after_forward. */
static int map_fsdp_config(struct reader *r, const char *key, json_t *v)
{
	static const char *const offload[] = { "offload_params", "fsdp_offload_params", "cpu_offload" };
	json_t *reshard = json_object_get(v, "reshard_after_forward");

	if (!reshard)
		reshard = json_object_get(v, "fsdp_reshard_after_forward");
	json_t *strategy = json_object_get(v, "sharding_strategy");

	if (off(v))
		return 0;
	if (!json_is_object(v))
		return unmappable(r, key, "wants an object of FSDP's options");
	if (!strategy)
		strategy = json_object_get(v, "fsdp_sharding_strategy");
	if (strategy && fsdp_words(r, key, strategy))
		return -EINVAL;
	for (size_t i = 0; i < sizeof(offload) / sizeof(offload[0]); i++)
		if (!off(json_object_get(v, offload[i])) && set(r, key, "offload", "optimizer,params"))
			return -EINVAL;
	return json_is_boolean(reshard) ? set_json(r, key, "reshard_after_forward", reshard) : 0;
}

/* axolotl's fsdp_version: with an fsdp_config and no fsdp list, FSDP shards fully (its
 * FSDP2 examples give no list); 1 or 2 (the planner's ZeRO-3 is FSDP2's). */
static int map_fsdp_version(struct reader *r, const char *key, json_t *v)
{
	if (off(v))
		return 0;
	if (!json_is_integer(v) || json_integer_value(v) < 1 || json_integer_value(v) > 2)
		return unmappable(r, key, "wants 1 or 2");
	if (off(json_object_get(r->file, "fsdp_config")) || !off(json_object_get(r->file, "fsdp")) ||
	    json_object_get(json_object_get(r->file, "fsdp_config"), "sharding_strategy") ||
	    json_object_get(json_object_get(r->file, "fsdp_config"), "fsdp_sharding_strategy"))
		return 0;
	r->fsdp = 1;
	return set(r, key, "zero_stage", "3");
}

/* FSDP (full_shard) under bf16 or fp16 through accelerate: recorded for
 * trainargs_settle, which decides once the command line's settings are in. */
static void fsdp_policy(struct reader *r)
{
	json_t *bf16 = json_object_get(r->file, "bf16"), *fp16 = json_object_get(r->file, "fp16");

	r->f->fsdp_amp = !r->fsdp || r->precision_done ? 0 : !off(fp16) ? DT_FP16_AMP : !off(bf16) ? DT_BF16_AMP : 0;
	r->f->tool_file = 1;
}

void trainargs_settle(struct train_settings *t, setting_mask cli, const struct file_read *f, struct strbuf *said)
{
	static const char *const dtype_keys[] = { "dtype", "precision", "fsdp_param_dtype" };
	int flagged = 0;

	for (size_t i = 0; i < sizeof(dtype_keys) / sizeof(dtype_keys[0]); i++)
		flagged |= (cli & SETTING_BIT(setting_find(dtype_keys[i]))) != 0;
	/* QLoRA sharded (FSDP, ZeRO-3): axolotl and TRL skip prepare_model_for_kbit_training,
	 * keeping one dtype for the shards; DeepSpeed's 16-bit engine at any stage casts the
	 * weights it left in fp32 back (module.bfloat16(): the 4-bit codes are no floats) */
	if (f->tool_file && t->quant && (t->zero_stage == 3 || f->ds_engine) && !t->inference && t->kbit_prepare &&
	    !(cli & SETTING_BIT(setting_find("kbit_prepare")))) {
		t->kbit_prepare = 0;
		strbuf_addf(said, "%s%s QLoRA: %s", said->len ? "; " : "", f->ds_engine ? "DeepSpeed's" : "sharded",
			    f->ds_engine ? "its engine casts the other weights to its 16-bit dtype, not fp32"
					 : "no prepare_model_for_kbit_training (one dtype for the shards)");
	}
	if (!f->fsdp_amp || flagged || t->zero_stage != 3 || t->quant || t->inference)
		return;
	/* accelerate upcasts the weights that train to fp32 (LoRA's frozen base stays as
	 * loaded, its adapters are fp32 already) and sets the policy in the 16-bit dtype */
	if (!t->lora_rank)
		t->param_bytes = DT_FP32;
	t->mp_param_bytes = DT_BF16;
	t->mp_fp16 = f->fsdp_amp == DT_FP16_AMP;
	strbuf_addf(said, "%sFSDP under %s: accelerate upcasts the trained weights to fp32 shards, gathered and "
			  "reduced in %s", said->len ? "; " : "", t->mp_fp16 ? "fp16" : "bf16", t->mp_fp16 ? "fp16" : "bf16");
}

/* The keys and their meaning, and the documented list of keys that change no memory. */
#include "plan/trainargs-keys.h"

/* The row of table (n rows) for key, or NULL. */
static const struct file_key *row(const struct file_key *table, size_t n, const char *key)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(table[i].key, key))
			return &table[i];
	return NULL;
}

/* The keys known to neither list: ignored and said back, or refused when strict. */
static int unknown_keys(struct reader *r, json_t *unknown)
{
	struct strbuf names = STRBUF_INIT;
	size_t i, n = json_array_size(unknown);
	json_t *k;

	if (!n) {
		json_decref(unknown);
		return 0;
	}
	if (!r->f->strict) {
		r->f->unknown = unknown;
		return 0;
	}
	json_array_foreach(unknown, i, k)
		strbuf_addf(&names, "%s'%s'", i ? ", " : "", json_string_value(k));
	*r->err = xasprintf("%s: %s %s not known to the planner, which reads the keys docs/plan.md lists and "
			    "ignores only those it lists as changing no memory (--strict refuses the others): remove "
			    "%s, or plan without --strict to ignore %s", r->tool, strbuf_str(&names),
			    n > 1 ? "are" : "is", n > 1 ? "them" : "it", n > 1 ? "them" : "it");
	strbuf_release(&names);
	json_decref(unknown);
	return -EINVAL;
}

/* Apply obj's keys over r: each mapped, ignored when listed as changing no memory; the
 * keys known to neither are named together. The tools run HF Trainer's loop, which lets
 * the step's output go as the loss is taken: keep_outputs is off. */
static int apply_file(struct reader *r, json_t *obj, const struct file_key *table, size_t n)
{
	json_t *unknown, *v;
	const char *key;

	if (!json_is_object(obj)) {
		*r->err = xasprintf("%s: not an object of keys and values", r->tool);
		return -EINVAL;
	}
	r->file = obj;
	if (set(r, "keep_outputs", "keep_outputs", "false"))
		return -EINVAL;
	if (!flag_wins(r, "keep_outputs"))
		strbuf_add(&r->said, "HF Trainer's loop: the step's output let go as the loss is taken");
	unknown = json_array();
	json_object_foreach(obj, key, v) {
		const struct file_key *k = row(table, n, key);
		if (!k) {
			json_array_append_new(unknown, json_string(key));
			continue;
		}
		if ((k->map && k->map(r, key, v)) || (!k->map && k->setting && set_json(r, key, k->setting, v))) {
			json_decref(unknown);
			return -EINVAL;
		}
	}
	return unknown_keys(r, unknown);
}

/* axolotl's optimizer where its file names none (absent or null): its schema's
 * default, adamw_torch_fused (no step temporaries), said. */
static int axolotl_optimizer(struct reader *r)
{
	if (!off(json_object_get(r->file, "optimizer")) || flag_wins(r, "optimizer") || r->ds_fused)
		return 0;
	strbuf_addf(&r->said, "%saxolotl's default optimizer, adamw_torch_fused", r->said.len ? "; " : "");
	return set(r, "optimizer", "optimizer", "adamw-fused");
}

/* Read obj with table over t, as tool; what was said back into f (NULL: strict). */
static int read_file(const char *tool, json_t *obj, const struct file_key *table, size_t n, struct train_settings *t,
		     setting_mask *given, struct file_read *f, char **err)
{
	struct file_read strict = { .strict = 1 };
	struct reader r = { .tool = tool, .t = t, .given = given, .err = err, .f = f ? f : &strict, .said = STRBUF_INIT };
	int rc;

	*err = NULL;
	r.f->unknown = NULL;
	r.f->said = NULL;
	rc = apply_file(&r, obj, table, n);
	if (!rc && table == hf_keys)
		rc = hf_precision(&r);
	if (!rc && table == axolotl_keys)
		rc = axolotl_optimizer(&r);
	if (!rc && r.act_offload)
		rc = act_offload_settle(&r);
	if (!rc) {
		fsdp_policy(&r);
		if (r.ds_fused && set(&r, "deepspeed", "optimizer", "adamw-fused"))
			rc = -EINVAL;
	}
	if (!rc && f && r.said.len)
		f->said = strbuf_detach(&r.said);
	if (rc || !f) {
		json_decref(r.f->unknown);
		r.f->unknown = NULL;
	}
	strbuf_release(&r.said);
	return rc;
}

int trainargs_from_json(json_t *obj, struct train_settings *t, setting_mask *given, struct file_read *f,
			char **err)
{
	return read_file("TrainingArguments", obj, hf_keys, sizeof(hf_keys) / sizeof(hf_keys[0]), t, given, f, err);
}

int axolotl_from_json(json_t *obj, struct train_settings *t, setting_mask *given, struct file_read *f, char **err)
{
	return read_file("axolotl", obj, axolotl_keys, sizeof(axolotl_keys) / sizeof(axolotl_keys[0]), t, given, f,
			 err);
}

/* The file at path opened for reading (a regular file or a pipe; what, of), or -errno
 * with *err. */
static int open_input(const char *path, const char *what, FILE **f, char **err)
{
	const char *kind;
	struct stat st;
	int rc = fs_open_input(path, f, &st, &kind);

	if (rc == -EINVAL)
		*err = xasprintf("%s, not a file: give %s", kind, what);
	else if (rc)
		*err = xasprintf("cannot read it (%s)", strerror(-rc));
	return rc;
}

/* The file at path as text (the caller frees): 0, or -errno with *err. */
static int read_text(const char *path, char **text, size_t *len, char **err)
{
	struct strbuf sb = STRBUF_INIT;
	char buf[4096];
	size_t n;
	FILE *f;
	int rc = open_input(path, "axolotl's YAML file", &f, err);

	if (rc)
		return rc;
	while ((n = fread(buf, 1, sizeof(buf) - 1, f)) > 0) {
		buf[n] = '\0';
		if (strlen(buf) != n) {
			fclose(f);
			strbuf_release(&sb);
			*err = xstrdup("not text (a NUL byte)");
			return -EINVAL;
		}
		strbuf_add(&sb, buf);
	}
	fclose(f);
	*len = sb.len;
	*text = sb.s ? strbuf_detach(&sb) : xstrdup("");
	return 0;
}

int trainargs_read(const char *path, struct train_settings *t, setting_mask *given, struct file_read *f,
		   char **err)
{
	json_error_t je;
	json_t *j;
	FILE *in;
	int rc = open_input(path, "a TrainingArguments JSON file", &in, err);

	if (rc)
		return rc;
	j = json_loadf(in, 0, &je);
	fclose(in);
	if (!j) {
		*err = xasprintf("not a TrainingArguments JSON: %s (line %d)", je.text, je.line);
		return -EINVAL;
	}
	if (f)
		f->base = path;
	rc = trainargs_from_json(j, t, given, f, err);
	json_decref(j);
	return rc;
}

int axolotl_read(const char *path, struct train_settings *t, setting_mask *given, struct file_read *f, char **err)
{
	char *text;
	size_t len;
	json_t *j;
	int rc = read_text(path, &text, &len, err);

	if (rc)
		return rc;
	rc = yaml_to_json(text, len, &j, err);
	free(text);
	if (rc)
		return rc;
	if (f)
		f->base = path;
	rc = axolotl_from_json(j, t, given, f, err);
	json_decref(j);
	return rc;
}
