#include "plan/config.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan/limits.h"
#include "plan/precision.h"
#include "util/parse.h"
#include "util/xalloc.h"

static const struct {
	const char *type;
	enum arch_family family;
	int tied_default, qkv_bias, qk_norm, norms, fused;
} families[] = {
	/* defaults of each model_type's Hugging Face config class and modeling code */
	{ "llama", ARCH_LLAMA, 0, 0, 0, 2, 0 },  { "mistral", ARCH_LLAMA, 0, 0, 0, 2, 0 },
	{ "qwen2", ARCH_LLAMA, 0, 1, 0, 2, 0 },  { "qwen3", ARCH_LLAMA, 0, 0, 1, 2, 0 },
	{ "phi3", ARCH_LLAMA, 0, 0, 0, 2, 1 },   { "gemma", ARCH_GEMMA, 1, 0, 0, 2, 0 },
	{ "gemma2", ARCH_GEMMA, 1, 0, 0, 4, 0 }, { "gpt2", ARCH_GPT2, 1, 1, 0, 2, 0 },
	{ "qwen3_moe", ARCH_LLAMA, 0, 0, 1, 2, 0 }, { "mixtral", ARCH_LLAMA, 0, 0, 0, 2, 0 },
	{ "gemma3_text", ARCH_GEMMA, 1, 0, 1, 4, 0 },
};
#define FAMILY_NAMES "llama, mistral, qwen2, qwen3, phi3, gemma, gemma2, gpt2, qwen3_moe, mixtral, gemma3_text"

/* The field under the first of its names present (NULL: none, or null). */
static json_t *field(json_t *cfg, const char *const *names, const char **name)
{
	for (; *names; names++) {
		json_t *v = json_object_get(cfg, *names);
		if (v && !json_is_null(v)) {
			*name = *names;
			return v;
		}
	}
	return NULL;
}

#define STR_(x) #x
#define STR(x) STR_(x)
#define NAMES(...) ((const char *const[]){ __VA_ARGS__, NULL })

/* An integer field from 1 to max under any of its names. 0 with *out; 1 when absent
 * (*out untouched) and not required; else -EINVAL with *err. */
static int int_field(json_t *cfg, const char *const *names, int64_t max, int required, const char *type,
		     int64_t *out, char **err)
{
	const char *name = names[0];
	json_t *v = field(cfg, names, &name);

	if (!v) {
		if (!required)
			return 1;
		*err = xasprintf("config.json: missing %s (needed for model_type %s)", names[0], type);
		return -EINVAL;
	}
	if (!json_is_integer(v) || json_integer_value(v) < 1 || json_integer_value(v) > max) {
		*err = xasprintf("config.json: %s must be a whole number from 1 to %lld (the planner's limit)", name,
				 (long long)max);
		return -EINVAL;
	}
	*out = json_integer_value(v);
	return 0;
}

static int need(json_t *cfg, const char *const *names, int64_t max, const char *type, int64_t *out, char **err)
{
	return int_field(cfg, names, max, 1, type, out, err);
}

/* An optional field: *out keeps its default when absent. 0 or -EINVAL. */
static int maybe(json_t *cfg, const char *const *names, int64_t max, int64_t *out, char **err)
{
	int rc = int_field(cfg, names, max, 0, NULL, out, err);
	return rc < 0 ? rc : 0;
}

/* Sliding-window layers, as the configs give them: a window (sliding_window; `window`
 * by default, 0 none) on all but one layer in `pattern` (gemma2's 2, gemma3_text's 6,
 * or its sliding_window_pattern; mistral's, mixtral's and phi3's every layer), or as
 * layer_types lists them. A layer_types list is taken when its full layers fall every
 * N-th, as the pattern makes them; any other list is refused. */
static int sliding_from_json(json_t *cfg, struct model_shape *m, int64_t window, int64_t pattern, char **err)
{
	json_t *v = json_object_get(cfg, "sliding_window"), *types = json_object_get(cfg, "layer_types"), *t;
	size_t i;

	m->sliding_window = window;
	m->sliding_pattern = pattern;
	if (json_is_null(v) || (!v && !window)) {
		m->sliding_window = 0;
		return 0;
	}
	if (maybe(cfg, NAMES("sliding_window"), PLAN_MAX_SEQ, &m->sliding_window, err) ||
	    maybe(cfg, NAMES("sliding_window_pattern"), PLAN_MAX_LAYERS, &m->sliding_pattern, err))
		return -EINVAL;
	if (!types || json_is_null(types))
		return 0;
	if (!json_is_array(types) || (int64_t)json_array_size(types) != m->layers)
		goto bad;
	m->sliding_pattern = 0;
	json_array_foreach(types, i, t) {
		const char *s = json_string_value(t);
		int full = s && !strcmp(s, "full_attention");

		if (!s || (!full && strcmp(s, "sliding_attention")))
			goto bad;
		if (full && !m->sliding_pattern)
			m->sliding_pattern = (int64_t)i + 1;
		if (full != (m->sliding_pattern && (int64_t)(i + 1) % m->sliding_pattern == 0))
			goto bad;
	}
	if (!m->sliding_pattern) /* every layer slides */
		m->sliding_pattern = PLAN_MAX_LAYERS + 1;
	return 0;
bad:
	*err = xasprintf("config.json: layer_types must list %lld layers of \"sliding_attention\" with "
			 "\"full_attention\" every N-th (the pattern gemma2 and gemma3_text use), or none", (long long)m->layers);
	return -EINVAL;
}


/* The experts of qwen3_moe and mixtral, with their config classes' defaults. Every layer
 * sparse: decoder_sparse_step other than 1 and mlp_only_layers are refused. */
static int moe_from_json(json_t *cfg, const char *type, struct model_shape *m, char **err)
{
	int qwen = !strcmp(type, "qwen3_moe");
	json_t *v;

	if (!qwen && strcmp(type, "mixtral"))
		return 0;
	m->experts = qwen ? 128 : 8;
	m->experts_per_tok = qwen ? 8 : 2;
	m->moe_inter = qwen ? 768 : m->intermediate;
	m->router_fp32 = !qwen;
	if (maybe(cfg, qwen ? NAMES("num_experts") : NAMES("num_local_experts"), PLAN_MAX_EXPERTS, &m->experts, err) ||
	    maybe(cfg, NAMES("num_experts_per_tok"), PLAN_MAX_EXPERTS, &m->experts_per_tok, err) ||
	    (qwen && maybe(cfg, NAMES("moe_intermediate_size"), PLAN_MAX_WIDTH, &m->moe_inter, err)))
		return -EINVAL;
	if (m->experts_per_tok > m->experts) {
		*err = xasprintf("config.json: num_experts_per_tok %lld is more than the %lld experts",
				 (long long)m->experts_per_tok, (long long)m->experts);
		return -EINVAL;
	}
	v = json_object_get(cfg, "decoder_sparse_step");
	if (v && !json_is_null(v) && !(json_is_integer(v) && json_integer_value(v) == 1)) {
		*err = xstrdup("config.json: decoder_sparse_step other than 1 (dense layers between sparse ones) is not "
			       "modelled");
		return -EINVAL;
	}
	v = json_object_get(cfg, "mlp_only_layers");
	if (v && !json_is_null(v) && !(json_is_array(v) && !json_array_size(v))) {
		*err = xstrdup("config.json: mlp_only_layers (dense layers among sparse ones) is not modelled");
		return -EINVAL;
	}
	return 0;
}

int model_shape_from_json(json_t *cfg, struct model_shape *m, char **err)
{
	const char *type = json_string_value(json_object_get(cfg, "model_type"));
	size_t f;
	json_t *v;

	memset(m, 0, sizeof(*m));
	*err = NULL;
	if (!json_is_object(cfg)) {
		*err = xstrdup("config.json: not a JSON object");
		return -EINVAL;
	}
	if (!type) {
		*err = xstrdup("config.json: missing model_type (one of " FAMILY_NAMES ")");
		return -EINVAL;
	}
	for (f = 0; f < sizeof(families) / sizeof(families[0]); f++)
		if (!strcmp(type, families[f].type))
			break;
	if (f == sizeof(families) / sizeof(families[0])) {
		*err = xasprintf("config.json: model_type '%s' is not supported (" FAMILY_NAMES ")", type);
		return -EINVAL;
	}
	snprintf(m->type, sizeof(m->type), "%s", type);
	m->family = families[f].family;
	m->qkv_bias = families[f].qkv_bias;
	m->qk_norm = families[f].qk_norm;
	m->norms_per_layer = families[f].norms;
	m->fused_proj = families[f].fused;
	m->tied = families[f].tied_default;
	v = json_object_get(cfg, "tie_word_embeddings");
	if (json_is_boolean(v))
		m->tied = json_is_true(v);
	if (!strcmp(type, "gemma2"))
		m->final_softcap = 30.0; /* Gemma2Config's default */
	v = json_object_get(cfg, "final_logit_softcapping");
	if (json_is_number(v))
		m->final_softcap = json_number_value(v);
	else if (json_is_null(v))
		m->final_softcap = 0;
	/* attention_bias: q, k, v and o_proj's biases where the modeling code reads it
	 * (qwen2's q, k, v always have one; mistral, mixtral, phi3 and GPT-2 fix theirs) */
	v = json_object_get(cfg, "attention_bias");
	if (json_is_boolean(v) && (!strcmp(type, "llama") || !strcmp(type, "qwen3") || !strcmp(type, "qwen3_moe") ||
				   m->family == ARCH_GEMMA))
		m->qkv_bias = m->o_bias = json_is_true(v);
	if (m->family == ARCH_GPT2) {
		if (need(cfg, NAMES("n_embd", "hidden_size"), PLAN_MAX_WIDTH, type, &m->hidden, err) ||
		    need(cfg, NAMES("n_layer", "num_hidden_layers"), PLAN_MAX_LAYERS, type, &m->layers, err) ||
		    need(cfg, NAMES("n_head", "num_attention_heads"), PLAN_MAX_HEADS, type, &m->heads, err) ||
		    need(cfg, NAMES("vocab_size"), PLAN_MAX_VOCAB, type, &m->vocab, err))
			return -EINVAL;
		m->intermediate = 4 * m->hidden;
		m->positions = 1024;
		if (maybe(cfg, NAMES("n_inner"), PLAN_MAX_WIDTH, &m->intermediate, err) ||
		    maybe(cfg, NAMES("n_positions", "max_position_embeddings"), PLAN_MAX_VOCAB, &m->positions, err))
			return -EINVAL;
		m->kv_heads = m->heads;
	} else {
		if (need(cfg, NAMES("hidden_size"), PLAN_MAX_WIDTH, type, &m->hidden, err) ||
		    need(cfg, NAMES("num_hidden_layers"), PLAN_MAX_LAYERS, type, &m->layers, err) ||
		    need(cfg, NAMES("num_attention_heads"), PLAN_MAX_HEADS, type, &m->heads, err) ||
		    int_field(cfg, NAMES("intermediate_size"), PLAN_MAX_WIDTH, strcmp(type, "qwen3_moe") != 0, type,
			      &m->intermediate, err) < 0 ||
		    need(cfg, NAMES("vocab_size"), PLAN_MAX_VOCAB, type, &m->vocab, err))
			return -EINVAL;
		if (moe_from_json(cfg, type, m, err))
			return -EINVAL;
		if (!m->intermediate) /* qwen3_moe's dense size serves no layer here */
			m->intermediate = m->moe_inter;
		m->kv_heads = m->heads;
		if (maybe(cfg, NAMES("num_key_value_heads"), PLAN_MAX_HEADS, &m->kv_heads, err))
			return -EINVAL;
	}
	if ((!strcmp(type, "gemma3_text") && sliding_from_json(cfg, m, 4096, 6, err)) ||
	    (!strcmp(type, "gemma2") && sliding_from_json(cfg, m, 4096, 2, err)) ||
	    (!strcmp(type, "mistral") && sliding_from_json(cfg, m, 4096, PLAN_MAX_LAYERS + 1, err)) ||
	    ((!strcmp(type, "mixtral") || !strcmp(type, "phi3")) &&
	     sliding_from_json(cfg, m, 0, PLAN_MAX_LAYERS + 1, err)))
		return -EINVAL;
	m->head_dim = 0;
	if (maybe(cfg, NAMES("head_dim"), PLAN_MAX_HEADS, &m->head_dim, err))
		return -EINVAL;
	if (!m->head_dim) {
		if (m->hidden % m->heads) {
			*err = xasprintf("config.json: hidden size %lld is not a multiple of %lld heads; give head_dim",
					 (long long)m->hidden, (long long)m->heads);
			return -EINVAL;
		}
		m->head_dim = m->hidden / m->heads;
	}
	if (m->heads % m->kv_heads) {
		*err = xasprintf("config.json: %lld attention heads are not a multiple of %lld key/value heads",
				 (long long)m->heads, (long long)m->kv_heads);
		return -EINVAL;
	}
	return 0;
}

int buffer_spec_parse(const char *s, struct buffer_spec *b)
{
	const char *eq = strchr(s, '='), *x;
	char count[24];
	struct buffer_spec v = { .count = 1 };

	if (!eq || eq == s || (size_t)(eq - s) >= sizeof(v.name))
		return -EINVAL;
	memcpy(v.name, s, (size_t)(eq - s));
	x = strchr(eq + 1, 'x');
	if (x) { /* COUNTx: else NAME=SIZE, one item */
		if ((size_t)(x - eq - 1) >= sizeof(count))
			return -EINVAL;
		memcpy(count, eq + 1, (size_t)(x - eq - 1));
		count[x - eq - 1] = '\0';
		if (parse_int64(count, 1, PLAN_MAX_BUFFER_COUNT, &v.count))
			return -EINVAL;
	}
	if (parse_size(x ? x + 1 : eq + 1, 1, PLAN_MAX_ITEM_BYTES, &v.item_bytes))
		return -EINVAL;
	*b = v;
	return 0;
}

int lora_targets_parse(const char *s, unsigned *bits)
{
	static const struct { const char *name; unsigned bit; } t[] = {
		{ "q", LORA_Q }, { "k", LORA_K }, { "v", LORA_V }, { "o", LORA_O },
		{ "gate", LORA_GATE }, { "up", LORA_UP }, { "down", LORA_DOWN },
	};
	char *copy = xstrdup(s), *save = NULL;
	int rc = 0;

	*bits = 0;
	for (char *w = strtok_r(copy, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
		size_t i;
		if (!strcmp(w, "all")) {
			*bits = LORA_Q | LORA_K | LORA_V | LORA_O | LORA_GATE | LORA_UP | LORA_DOWN;
			continue;
		}
		/* "q_proj" is "q" */
		char *p = strstr(w, "_proj");
		if (p && !p[5])
			*p = '\0';
		for (i = 0; i < sizeof(t) / sizeof(t[0]) && strcmp(w, t[i].name); i++)
			;
		if (i == sizeof(t) / sizeof(t[0]))
			rc = -EINVAL;
		else
			*bits |= t[i].bit;
	}
	free(copy);
	return rc || !*bits ? -EINVAL : 0;
}

int freeze_parse(const char *s, struct train_settings *t)
{
	int64_t a, b;
	const char *dash;
	char first[24];

	if (!strcmp(s, "embed")) {
		t->freeze_embed = 1;
		return 0;
	}
	if (!strcmp(s, "lm_head")) {
		t->freeze_head = 1;
		return 0;
	}
	if (strncmp(s, "layers:", 7))
		return -EINVAL;
	s += 7;
	dash = strchr(s, '-');
	if (!dash) {
		if (parse_int64(s, 0, PLAN_MAX_LAYERS - 1, &a))
			return -EINVAL;
		b = a;
	} else {
		if ((size_t)(dash - s) >= sizeof(first))
			return -EINVAL;
		memcpy(first, s, (size_t)(dash - s));
		first[dash - s] = '\0';
		if (parse_int64(first, 0, PLAN_MAX_LAYERS - 1, &a) || parse_int64(dash + 1, a, PLAN_MAX_LAYERS - 1, &b))
			return -EINVAL;
	}
	/* one range: a second widens it only where the two touch or overlap */
	if (t->freeze_last >= t->freeze_first && (a > t->freeze_last + 1 || b + 1 < t->freeze_first))
		return -EINVAL;
	if (t->freeze_last >= t->freeze_first) {
		a = a < t->freeze_first ? a : t->freeze_first;
		b = b > t->freeze_last ? b : t->freeze_last;
	}
	t->freeze_first = a;
	t->freeze_last = b;
	return 0;
}

int freeze_list_parse(const char *s, struct train_settings *t)
{
	char *copy = xstrdup(s), *save = NULL;
	int rc = 0, n = 0;

	for (char *w = strtok_r(copy, ",", &save); w && !rc; w = strtok_r(NULL, ",", &save), n++)
		rc = freeze_parse(w, t);
	free(copy);
	return rc || !n ? -EINVAL : 0;
}

int alloc_conf_parse(const char *s, int *expandable)
{
	if (!strcmp(s, "expandable_segments:True"))
		*expandable = 1;
	else if (!strcmp(s, "expandable_segments:False"))
		*expandable = 0;
	else
		return -EINVAL;
	return 0;
}

int param_dtype_bytes(const char *s)
{
	if (!strcmp(s, "fp32"))
		return 4;
	return !strcmp(s, "bf16") || !strcmp(s, "fp16") ? 2 : 0;
}

/* The boolean setting named key, or NULL. */
static int *flag_of(struct train_settings *t, const char *key)
{
	if (!strcmp(key, "autocast"))
		return &t->autocast;
	if (!strcmp(key, "fused"))
		return &t->fused;
	if (!strcmp(key, "grad_ckpt"))
		return &t->grad_ckpt;
	if (!strcmp(key, "use_cache"))
		return &t->use_cache;
	if (!strcmp(key, "inference"))
		return &t->inference;
	if (!strcmp(key, "inputs_embeds"))
		return &t->inputs_embeds;
	if (!strcmp(key, "ddp"))
		return &t->ddp;
	return NULL;
}

/* The whole-number setting named key and its range, or NULL (zero_stage, an int, is
 * read apart). */
static int64_t *count_of(struct train_settings *t, const char *key, int64_t *min, int64_t *max)
{
	static const struct {
		const char *key;
		size_t offset;
		int64_t min, max;
	} counts[] = {
		{ "batch", offsetof(struct train_settings, batch), 1, PLAN_MAX_BATCH },
		{ "seq", offsetof(struct train_settings, seq), 1, PLAN_MAX_SEQ },
		{ "loss_chunk", offsetof(struct train_settings, loss_chunk), 0, INT64_MAX }, /* 0: one chunk */
		{ "dp", offsetof(struct train_settings, dp), 1, PLAN_MAX_DP },
		{ "lora_rank", offsetof(struct train_settings, lora_rank), 0, PLAN_MAX_LORA_RANK },
		{ "context", offsetof(struct train_settings, context), 0, PLAN_MAX_SEQ },
		{ "steps", offsetof(struct train_settings, steps), 1, PLAN_MAX_STEPS },
	};

	for (size_t i = 0; i < sizeof(counts) / sizeof(counts[0]); i++)
		if (!strcmp(key, counts[i].key)) {
			*min = counts[i].min;
			*max = counts[i].max;
			return (int64_t *)((char *)t + counts[i].offset);
		}
	return NULL;
}

static int bad(char **err, const char *key, const char *want)
{
	*err = xasprintf("settings: '%s' wants %s", key, want);
	return -EINVAL;
}

int train_settings_from_json(json_t *obj, struct train_settings *t, char **err)
{
	const char *key;
	json_t *v;

	*err = NULL;
	if (!json_is_object(obj)) {
		*err = xstrdup("settings: not a JSON object");
		return -EINVAL;
	}
	/* a preset sets what these set: with them, which wins would hang on their order */
	if (json_object_get(obj, "precision") &&
	    (json_object_get(obj, "param_dtype") || json_object_get(obj, "autocast"))) {
		*err = xstrdup("settings: 'precision' sets param_dtype and autocast: give it or them, not both");
		return -EINVAL;
	}
	json_object_foreach(obj, key, v) {
		int *flag;
		int64_t *count, min, max;

		if (!strcmp(key, "param_dtype")) {
			const char *s = json_string_value(v);
			if (!s || !param_dtype_bytes(s))
				return bad(err, key, "fp32, bf16 or fp16");
			t->param_bytes = param_dtype_bytes(s);
			t->fp16 = !strcmp(s, "fp16");
		} else if (!strcmp(key, "precision")) {
			const char *s = json_string_value(v);
			if (!s || precision_apply(t, s))
				return bad(err, key, "bf16, amp-bf16 (fp32 weights, bf16 autocast), fp32 or fp16");
		} else if (!strcmp(key, "attn")) {
			/* what the measuring script passes as attn_implementation */
			if (!json_is_string(v) || strcmp(json_string_value(v), "sdpa"))
				return bad(err, key, "sdpa (the attention the planner models)");
		} else if ((flag = flag_of(t, key))) {
			if (!json_is_boolean(v))
				return bad(err, key, "true or false");
			*flag = json_is_true(v);
		} else if (!strcmp(key, "optimizer")) {
			const char *s = json_string_value(v);
			if (s && !strcmp(s, "adamw"))
				t->opt = OPT_ADAMW;
			else if (s && !strcmp(s, "sgd"))
				t->opt = OPT_SGD;
			else if (s && !strcmp(s, "none"))
				t->opt = OPT_NONE;
			else
				return bad(err, key, "adamw, sgd or none");
		} else if (!strcmp(key, "momentum")) {
			if (!json_is_number(v) || !(json_number_value(v) >= 0 && json_number_value(v) < 1))
				return bad(err, key, "a number from 0 to below 1");
			t->momentum = json_number_value(v);
		} else if ((count = count_of(t, key, &min, &max)) || !strcmp(key, "zero_stage")) {
			if (!count)
				min = 0, max = 3;
			if (!json_is_integer(v) || json_integer_value(v) < min || json_integer_value(v) > max) {
				char *want = max == INT64_MAX ? xasprintf("a whole number from %lld", (long long)min)
							      : xasprintf("a whole number from %lld to %lld", (long long)min,
									  (long long)max);
				bad(err, key, want);
				free(want);
				return -EINVAL;
			}
			if (count)
				*count = json_integer_value(v);
			else if (!strcmp(key, "zero_stage"))
				t->zero_stage = (int)json_integer_value(v);
		} else if (!strcmp(key, "freeze")) {
			size_t i;
			json_t *part;
			const char *want = "a list of \"embed\", \"lm_head\" and \"layers:A-B\" (one range of layers, "
					   "from 0)";
			if (!json_is_array(v) || !json_array_size(v))
				return bad(err, key, want);
			json_array_foreach(v, i, part)
				if (!json_is_string(part) || freeze_parse(json_string_value(part), t))
					return bad(err, key, want);
		} else if (!strcmp(key, "alloc_conf")) {
			if (!json_is_string(v) || alloc_conf_parse(json_string_value(v), &t->expandable))
				return bad(err, key, "\"expandable_segments:True\" or \"expandable_segments:False\" (the "
					   "PYTORCH_CUDA_ALLOC_CONF option modelled)");
		} else if (!strcmp(key, "logits")) {
			const char *s = json_string_value(v);
			if (!s || (strcmp(s, "all") && strcmp(s, "last")))
				return bad(err, key, "\"all\" (every position's, as model(input_ids)) or \"last\" (as "
					   "generate())");
			t->logits_all = !strcmp(s, "all");
		} else if (!strcmp(key, "reshard_after_forward")) {
			if (!json_is_boolean(v))
				return bad(err, key, "true or false");
			t->keep_gathered = json_is_false(v);
		} else if (!strcmp(key, "lora_targets")) {
			if (!json_is_string(v) || lora_targets_parse(json_string_value(v), &t->lora_targets))
				return bad(err, key, "a list such as \"q,k,v,o\" (q k v o gate up down, or all)");
		} else if (!strcmp(key, "buffers")) {
			const char *name;
			json_t *b;
			if (!json_is_object(v))
				return bad(err, key, "an object such as {\"queue\": \"50x100MB\"}");
			json_object_foreach(v, name, b) {
				char *spec;
				if (!json_is_string(b) || t->nbuffers == PLAN_MAX_BUFFERS)
					return bad(err, key, "up to 8 entries NAME: \"COUNTxSIZE\"");
				spec = xasprintf("%s=%s", name, json_string_value(b));
				int rc = buffer_spec_parse(spec, &t->buffers[t->nbuffers]);
				free(spec);
				if (rc)
					return bad(err, key, "entries NAME: \"COUNTxSIZE\" such as \"50x100MB\" (COUNT from 1 "
						   "to " STR(PLAN_MAX_BUFFER_COUNT) ", SIZE from 1 byte to 1 TiB)");
				t->nbuffers++;
			}
		} else if (!strcmp(key, "context_bytes")) {
			/* an environment's CUDA context and workspaces, as `headroom probe` measured */
			if (!json_is_integer(v) || json_integer_value(v) <= 0 ||
			    (uint64_t)json_integer_value(v) > PLAN_MAX_ITEM_BYTES)
				return bad(err, key, "a number of bytes from 1 to 1 TiB");
			t->context_bytes = (uint64_t)json_integer_value(v);
		} else {
			*err = xasprintf("settings: unknown key '%s'", key);
			return -EINVAL;
		}
	}
	return 0;
}
