#include "plan/config.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan/family.h"
#include "plan/limits.h"
#include "plan/lora_names.h"
#include "plan/precision.h"
#include "util/parse.h"
#include "util/xalloc.h"

_Static_assert(PLAN_SHAPE_MAX_LAYERS == PLAN_MAX_LAYERS, "a shape's per-layer bits cover the planner's layers");

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
/* a generic decoder's MLP width where its config names none (falcon's default) */
#define GENERIC_INNER_PER_HIDDEN 4
/* the model's longest sequence (GPT2Config maps max_position_embeddings to n_positions) */
#define POSITION_NAMES NAMES("max_position_embeddings", "n_positions")

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

/* Layers without rope (a family with a nope_interval and one kind of layer: smollm3;
 * an interleaved family's layers_from_json reads its own): no_rope_layers lists 1 for a
 * layer with rope, 0 for one without; absent, every no_rope_layer_interval-th layer (the
 * family's default interval) has none, as the config class fills the list in. A list is
 * taken when its 0s fall every N-th; any other is refused. */
static int nope_from_json(json_t *cfg, const struct family *f, struct model_shape *m, char **err)
{
	json_t *v = json_object_get(cfg, "no_rope_layers"), *t;
	size_t i;

	if (!f->nope_interval || f->interleaved)
		return 0;
	m->nope_step = f->nope_interval;
	if (maybe(cfg, NAMES("no_rope_layer_interval"), PLAN_MAX_LAYERS, &m->nope_step, err))
		return -EINVAL;
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_array(v) || (int64_t)json_array_size(v) != m->layers)
		goto bad;
	m->nope_step = 0;
	json_array_foreach(v, i, t) {
		if (!json_is_integer(t) || json_integer_value(t) < 0 || json_integer_value(t) > 1)
			goto bad;
		int rope = json_integer_value(t) == 1;
		if (!rope && !m->nope_step)
			m->nope_step = (int64_t)i + 1;
		if (rope == (m->nope_step && (int64_t)(i + 1) % m->nope_step == 0))
			goto bad;
	}
	return 0;
bad:
	*err = xasprintf("config.json: no_rope_layers must list %lld layers of 1 (rope) and 0 (none), the 0s every "
			 "N-th as no_rope_layer_interval makes them, or be absent", (long long)m->layers);
	return -EINVAL;
}

/* A whole number from 0 to max under key; absent or null: *out untouched. 0 or -EINVAL. */
static int count_field(json_t *cfg, const char *key, int64_t max, int64_t *out, char **err)
{
	json_t *v = json_object_get(cfg, key);

	if (!v || json_is_null(v))
		return 0;
	if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > max) {
		*err = xasprintf("config.json: %s must be a whole number from 0 to %lld", key, (long long)max);
		return -EINVAL;
	}
	*out = json_integer_value(v);
	return 0;
}

/* Which layers of a MoE model are dense: the first first_k_dense_replace, those off
 * every decoder_sparse_step-th, those mlp_only_layers lists (the family's row says which
 * keys its config class has). */
static int dense_from_json(json_t *cfg, const struct family *f, struct model_shape *m, char **err)
{
	json_t *v, *e;
	size_t i;

	if (f->dense_first) {
		m->dense_first = f->dense_first;
		if (count_field(cfg, "first_k_dense_replace", m->layers, &m->dense_first, err))
			return -EINVAL;
	}
	if (!f->sparse_step) {
		v = json_object_get(cfg, "decoder_sparse_step");
		if (v && !json_is_null(v) && !(json_is_integer(v) && json_integer_value(v) == 1)) {
			*err = xasprintf("config.json: decoder_sparse_step other than 1 is not read for model_type %s",
					 f->type);
			return -EINVAL;
		}
		v = json_object_get(cfg, "mlp_only_layers");
		if (v && !json_is_null(v) && !(json_is_array(v) && !json_array_size(v))) {
			*err = xasprintf("config.json: mlp_only_layers is not read for model_type %s", f->type);
			return -EINVAL;
		}
		return 0;
	}
	m->sparse_step = 1;
	if (maybe(cfg, NAMES("decoder_sparse_step"), m->layers, &m->sparse_step, err))
		return -EINVAL;
	v = json_object_get(cfg, "mlp_only_layers");
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_array(v))
		goto bad;
	json_array_foreach(v, i, e) {
		if (!json_is_integer(e) || json_integer_value(e) < 0 || json_integer_value(e) >= m->layers)
			goto bad;
		int64_t l = json_integer_value(e);
		m->dense_layers[l / 64] |= UINT64_C(1) << (l % 64);
	}
	return 0;
bad:
	*err = xasprintf("config.json: mlp_only_layers must list layer numbers from 0 to %lld", (long long)m->layers - 1);
	return -EINVAL;
}

/* The shared expert's width: its own key, or n_shared_experts x the experts' width. */
static int shared_from_json(json_t *cfg, const struct family *f, struct model_shape *m, char **err)
{
	int64_t n = f->shared_default;

	if (f->shared == SHARED_NONE)
		return 0;
	if (f->shared_key) {
		m->shared_inter = n;
		return count_field(cfg, f->shared_key, PLAN_MAX_WIDTH, &m->shared_inter, err);
	}
	if (count_field(cfg, "n_shared_experts", PLAN_MAX_EXPERTS, &n, err))
		return -EINVAL;
	m->shared_inter = n * m->moe_inter;
	return 0;
}

/* The experts of an MLP_MOE family, with its config class's defaults (its row): their
 * number (under the family's key), width, top-k, the shared expert, the dense layers. */
static int moe_from_json(json_t *cfg, const struct family *f, struct model_shape *m, char **err)
{
	if (f->mlp != MLP_MOE && f->mlp != MLP_DENSE_MOE && f->mlp != MLP_MOE_CLAMPED)
		return 0;
	m->experts = f->experts;
	m->experts_per_tok = f->experts_per_tok;
	m->moe_inter = f->moe_inter ? f->moe_inter : m->intermediate;
	if (maybe(cfg, NAMES(f->experts_key), PLAN_MAX_EXPERTS, &m->experts, err) ||
	    maybe(cfg, NAMES("num_experts_per_tok"), PLAN_MAX_EXPERTS, &m->experts_per_tok, err) ||
	    (f->moe_inter && maybe(cfg, NAMES("moe_intermediate_size"), PLAN_MAX_WIDTH, &m->moe_inter, err)))
		return -EINVAL;
	if (m->experts_per_tok > m->experts) {
		*err = xasprintf("config.json: num_experts_per_tok %lld is more than the %lld experts",
				 (long long)m->experts_per_tok, (long long)m->experts);
		return -EINVAL;
	}
	m->dense_inter = m->intermediate; /* (an interleaved family's: layers_from_json) */
	return shared_from_json(cfg, f, m, err) || dense_from_json(cfg, f, m, err) ? -EINVAL : 0;
}

/* A per-layer list (key) that must be what every step-th layer's pattern makes it: entry
 * i is on_value where (i + 1) % step == 0 (step 0: never), the other value elsewhere.
 * Absent or null: 0. Else -EINVAL naming the key. */
static int pattern_list(json_t *cfg, const char *key, int64_t layers, int64_t step, const char *on_value,
			const char *off_value, char **err)
{
	json_t *v = json_object_get(cfg, key), *e;
	size_t i;

	if (!v || json_is_null(v) || (json_is_array(v) && !json_array_size(v))) /* empty: the default */
		return 0;
	if (!json_is_array(v) || (int64_t)json_array_size(v) != layers)
		goto bad;
	json_array_foreach(v, i, e) {
		int on = step && (int64_t)(i + 1) % step == 0;
		const char *want = on ? on_value : off_value;
		char num[8];
		if (json_is_integer(e))
			snprintf(num, sizeof(num), "%lld", (long long)json_integer_value(e));
		const char *got = json_is_string(e) ? json_string_value(e) : json_is_integer(e) ? num : "";
		if (strcmp(got, want))
			goto bad;
	}
	return 0;
bad:
	*err = xasprintf("config.json: %s must list %lld layers with %s every %lld-th and %s elsewhere (the pattern "
			 "its interval makes); other lists are not modelled", key, (long long)layers, on_value,
			 (long long)step, off_value);
	return -EINVAL;
}

/* moe_layers: the MoE layers' indices, range(step - 1, layers, step). Returns the step,
 * or 0 (absent) or -EINVAL. */
static int64_t moe_layers_step(json_t *cfg, int64_t layers, char **err)
{
	json_t *v = json_object_get(cfg, "moe_layers"), *e;
	size_t i;
	int64_t step = 0;

	if (!v || json_is_null(v) || (json_is_array(v) && !json_array_size(v))) /* empty: the default */
		return 0;
	if (!json_is_array(v) || !json_array_size(v) || !json_is_integer(json_array_get(v, 0)))
		goto bad;
	step = json_integer_value(json_array_get(v, 0)) + 1;
	if (step < 1 || step > layers || (int64_t)json_array_size(v) != layers / step)
		goto bad;
	json_array_foreach(v, i, e)
		if (!json_is_integer(e) || json_integer_value(e) != (int64_t)(i + 1) * step - 1)
			goto bad;
	return step;
bad:
	*err = xstrdup("config.json: moe_layers must list every N-th layer from layer N - 1 (as "
		       "interleave_moe_layer_step makes it); other lists are not modelled");
	return -EINVAL;
}

/* A boolean field, def when absent or null. */
static int bool_field(json_t *cfg, const char *key, int def)
{
	json_t *v = json_object_get(cfg, key);

	return json_is_boolean(v) ? json_is_true(v) : def;
}

/* llama4_text's layers (an interleaved family's): MoE on every interleave_moe_layer_step-th
 * (or as moe_layers lists them), gated MLPs of intermediate_size_mlp between, the shared
 * expert as wide as the experts; every no_rope_layer_interval-th layer (or as
 * no_rope_layers lists them, 1 meaning rotary) without rotary embedding and with full
 * attention, the others chunked by attention_chunk_size (as layer_types lists them) */
static int layers_from_json(json_t *cfg, const struct family *f, struct model_shape *m, char **err)
{
	int64_t step;

	if (!f->interleaved)
		return 0;
	m->sparse_step = 1, m->dense_inter = f->dense_inter, m->nope_step = f->nope_interval;
	m->sliding_window = f->chunk;
	m->shared_inter = m->intermediate;
	if (maybe(cfg, NAMES("interleave_moe_layer_step"), PLAN_MAX_LAYERS, &m->sparse_step, err) ||
	    maybe(cfg, NAMES("intermediate_size_mlp"), PLAN_MAX_WIDTH, &m->dense_inter, err) ||
	    maybe(cfg, NAMES("no_rope_layer_interval"), PLAN_MAX_LAYERS, &m->nope_step, err) ||
	    maybe(cfg, NAMES("attention_chunk_size"), PLAN_MAX_SEQ, &m->sliding_window, err))
		return -EINVAL;
	if ((step = moe_layers_step(cfg, m->layers, err)) < 0)
		return -EINVAL;
	if (step)
		m->sparse_step = step;
	if (pattern_list(cfg, "no_rope_layers", m->layers, m->nope_step, "0", "1", err) ||
	    pattern_list(cfg, "layer_types", m->layers, m->nope_step, "full_attention", "chunked_attention", err))
		return -EINVAL;
	m->sliding_pattern = m->nope_step ? m->nope_step : PLAN_MAX_LAYERS + 1;
	m->qk_l2 = f->qk_norm == QK_NORM_L2 && bool_field(cfg, "use_qk_norm", 1);
	m->nope_temperature = f->nope_temperature && bool_field(cfg, "attn_temperature_tuning", 1);
	return 0;
}

/* qwen3_next's hybrid layers (a family with full_step): full attention on every
 * full_attention_interval-th layer (or as layer_types lists them), Gated DeltaNet on the
 * others, its heads, head widths and conv kernel (linear_*). */
static int hybrid_from_json(json_t *cfg, const struct family *f, struct model_shape *m, char **err)
{
	if (!f->full_step)
		return 0;
	m->full_step = f->full_step, m->lin_k_heads = f->lin_k_heads, m->lin_v_heads = f->lin_v_heads;
	m->lin_k_dim = f->lin_k_dim, m->lin_v_dim = f->lin_v_dim, m->lin_conv = f->lin_conv;
	if (maybe(cfg, NAMES("full_attention_interval"), PLAN_MAX_LAYERS, &m->full_step, err) ||
	    maybe(cfg, NAMES("linear_num_key_heads"), PLAN_MAX_HEADS, &m->lin_k_heads, err) ||
	    maybe(cfg, NAMES("linear_num_value_heads"), PLAN_MAX_HEADS, &m->lin_v_heads, err) ||
	    maybe(cfg, NAMES("linear_key_head_dim"), PLAN_MAX_HEADS, &m->lin_k_dim, err) ||
	    maybe(cfg, NAMES("linear_value_head_dim"), PLAN_MAX_HEADS, &m->lin_v_dim, err) ||
	    maybe(cfg, NAMES("linear_conv_kernel_dim"), PLAN_MAX_HEADS, &m->lin_conv, err) ||
	    pattern_list(cfg, "layer_types", m->layers, m->full_step, "full_attention", "linear_attention", err))
		return -EINVAL;
	if (m->lin_v_heads % m->lin_k_heads) {
		*err = xasprintf("config.json: linear_num_value_heads %lld is not a multiple of linear_num_key_heads %lld",
				 (long long)m->lin_v_heads, (long long)m->lin_k_heads);
		return -EINVAL;
	}
	return 0;
}

/* A generic decoder's MLP is two matrices, not a GLU's three, where its hidden_act (or
 * activation, or its config class's default) names a plain activation: gelu, relu and
 * the like, not silu, swiglu or a *glu (none known: gated, the larger). */
static int generic_two_matrix_mlp(json_t *cfg)
{
	const char *act = json_string_value(json_object_get(cfg, "hidden_act"));

	if (!act)
		act = json_string_value(json_object_get(cfg, "activation"));
	if (!act)
		act = family_generic_act(json_string_value(json_object_get(cfg, "model_type")));
	return act && !strstr(act, "silu") && !strstr(act, "swish") && !strstr(act, "glu") &&
	       (strstr(act, "gelu") || strstr(act, "relu"));
}

/* The sizes: GPT-2's under its own keys (n_embd...; its MLP's width and its learned
 * positions by default as its row has them, as many key/value heads as heads), others'
 * under the common ones. */
static int sizes_from_json(json_t *cfg, const struct family *f, struct model_shape *m, char **err)
{
	const char *type = f->type;

	m->heads = f->heads_default, m->vocab = f->vocab_default; /* (config.json's replace them) */
	if (f->gpt2_keys) {
		if (need(cfg, NAMES("n_embd", "hidden_size"), PLAN_MAX_WIDTH, type, &m->hidden, err) ||
		    need(cfg, NAMES("n_layer", "num_hidden_layers"), PLAN_MAX_LAYERS, type, &m->layers, err) ||
		    need(cfg, NAMES("n_head", "num_attention_heads"), PLAN_MAX_HEADS, type, &m->heads, err) ||
		    need(cfg, NAMES("vocab_size"), PLAN_MAX_VOCAB, type, &m->vocab, err))
			return -EINVAL;
		m->intermediate = f->inner_per_hidden * m->hidden;
		m->positions = f->positions_default;
		if (maybe(cfg, NAMES("n_inner"), PLAN_MAX_WIDTH, &m->intermediate, err) ||
		    maybe(cfg, NAMES("n_positions", "max_position_embeddings"), PLAN_MAX_VOCAB, &m->positions, err))
			return -EINVAL;
		m->kv_heads = m->heads;
		m->max_length = m->positions;
		return 0;
	}
	/* a MoE family with its own expert width needs no dense intermediate_size (its
	 * dense layers' default when it has them); a generic decoder's may be under falcon's
	 * key, or 4 x hidden */
	m->intermediate = f->inter_default;
	if (need(cfg, NAMES("hidden_size"), PLAN_MAX_WIDTH, type, &m->hidden, err) ||
	    need(cfg, NAMES("num_hidden_layers"), PLAN_MAX_LAYERS, type, &m->layers, err) ||
	    int_field(cfg, NAMES("num_attention_heads"), PLAN_MAX_HEADS, !f->heads_default, type, &m->heads, err) < 0 ||
	    int_field(cfg, NAMES("intermediate_size"), PLAN_MAX_WIDTH, !(f->mlp == MLP_MOE && f->moe_inter) && !f->generic,
		      type,
		      &m->intermediate, err) < 0 ||
	    int_field(cfg, NAMES("vocab_size"), PLAN_MAX_VOCAB, !f->vocab_default, type, &m->vocab, err) < 0)
		return -EINVAL;
	if (f->generic && maybe(cfg, NAMES("intermediate_size", "ffn_hidden_size", "n_inner"), PLAN_MAX_WIDTH,
				&m->intermediate, err))
		return -EINVAL;
	if (f->generic && !m->intermediate)
		m->intermediate = GENERIC_INNER_PER_HIDDEN * m->hidden;
	if (f->generic && generic_two_matrix_mlp(cfg)) /* the same weights and activations */
		m->intermediate = (2 * m->intermediate + 2) / 3;
	if (moe_from_json(cfg, f, m, err))
		return -EINVAL;
	if (!m->intermediate) /* the MoE's dense size serves no layer here */
		m->intermediate = m->moe_inter;
	/* the family's key/value heads go with its heads (a config giving its own heads and
	 * no key/value heads has as many, as the planner has always read it) */
	m->kv_heads = f->kv_heads_default && !json_object_get(cfg, "num_attention_heads") ? f->kv_heads_default
											     : m->heads;
	/* range-checked as every field is: -5, "4096" or 4096.0 (transformers writes an int)
	 * is refused, not taken for a model of no length */
	/* (falcon's: num_kv_heads, or one with multi_query) */
	if (f->generic && json_is_true(json_object_get(cfg, "multi_query")))
		m->kv_heads = 1;
	if (maybe(cfg, NAMES("num_key_value_heads", "num_kv_heads"), PLAN_MAX_HEADS, &m->kv_heads, err) ||
	    maybe(cfg, POSITION_NAMES, PLAN_MAX_POSITIONS, &m->max_length, err))
		return -EINVAL;
	return 0;
}

/* head_dim (hidden / heads by default), and heads a multiple of the key/value heads. */
static int heads_from_json(json_t *cfg, struct model_shape *m, char **err)
{
	m->head_dim = model_family(m)->head_dim_default;
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

/* The rotated part of a head where the family reads partial_rotary_factor (at the top
 * or in rope_parameters; the family's default): that part of head_dim, 0 when all. */
static int rotary_from_json(json_t *cfg, const struct family *f, struct model_shape *m, char **err)
{
	double r = f->rotary_factor;
	json_t *v;

	if (r <= 0) /* the family rotates the whole head */
		return 0;
	v = json_object_get(cfg, "partial_rotary_factor");
	json_t *rp = json_object_get(cfg, "rope_parameters");

	if ((!v || json_is_null(v)) && json_is_object(rp))
		v = json_object_get(rp, "partial_rotary_factor");
	if (v && !json_is_null(v)) {
		if (!json_is_number(v) || json_number_value(v) <= 0 || json_number_value(v) > 1) {
			*err = xstrdup("config.json: partial_rotary_factor must be a number above 0, at most 1");
			return -EINVAL;
		}
		r = json_number_value(v);
	}
	m->rotary_dim = r > 0 && r < 1 ? (int64_t)(m->head_dim * r) : 0;
	return 0;
}

/* Multi-head latent attention's sizes (ATTN_MLA), the family's by default; q_lora_rank
 * null: one q_proj. A head's q and k are then nope + rope units (head_dim), the rope
 * part rotated; as many key/value heads as heads. */
static int mla_from_json(json_t *cfg, const struct family *f, struct model_shape *m, char **err)
{
	json_t *v = json_object_get(cfg, "q_lora_rank");

	if (f->attn != ATTN_MLA)
		return 0;
	m->q_lora_rank = f->q_lora, m->kv_lora_rank = f->kv_lora;
	m->qk_rope_dim = f->qk_rope, m->qk_nope_dim = f->qk_nope, m->v_head_dim = f->v_head;
	if (json_is_null(v))
		m->q_lora_rank = 0;
	else if (maybe(cfg, NAMES("q_lora_rank"), PLAN_MAX_WIDTH, &m->q_lora_rank, err))
		return -EINVAL;
	if (maybe(cfg, NAMES("kv_lora_rank"), PLAN_MAX_WIDTH, &m->kv_lora_rank, err) ||
	    maybe(cfg, NAMES("qk_rope_head_dim"), PLAN_MAX_HEADS, &m->qk_rope_dim, err) ||
	    maybe(cfg, NAMES("qk_nope_head_dim"), PLAN_MAX_HEADS, &m->qk_nope_dim, err) ||
	    maybe(cfg, NAMES("v_head_dim"), PLAN_MAX_HEADS, &m->v_head_dim, err))
		return -EINVAL;
	m->head_dim = m->qk_nope_dim + m->qk_rope_dim;
	m->rotary_dim = m->qk_rope_dim;
	m->kv_heads = m->heads;
	return 0;
}

/* The key's whole number from 1 to max into *out: 0, or -EINVAL (missing or out of range). */
static int vkey(json_t *vc, const char *key, int64_t max, int64_t *out)
{
	json_t *x = json_object_get(vc, key);

	if (!json_is_integer(x) || json_integer_value(x) < 1 || json_integer_value(x) > max)
		return -EINVAL;
	*out = json_integer_value(x);
	return 0;
}

/* SigLIP (transformers' SiglipVisionConfig keys): an RGB patch convolution with its bias,
 * a learned embedding per patch of the image. */
static int siglip_from_json(json_t *vc, struct vision_shape *v, const char **why)
{
	int64_t image, patch;

	if (vkey(vc, "hidden_size", PLAN_MAX_WIDTH, &v->hidden) || vkey(vc, "intermediate_size", PLAN_MAX_WIDTH, &v->inter) ||
	    vkey(vc, "num_hidden_layers", PLAN_MAX_LAYERS, &v->layers) || vkey(vc, "image_size", PLAN_MAX_IMAGE, &image) ||
	    vkey(vc, "patch_size", PLAN_MAX_PATCH, &patch)) {
		*why = "vision_config lacks hidden_size, intermediate_size, num_hidden_layers, image_size or patch_size "
		       "(or one is out of range)";
		return -EINVAL;
	}
	if (json_is_true(json_object_get(vc, "vision_use_head"))) {
		*why = "vision_config's vision_use_head (a pooling head) is not modelled";
		return -EINVAL;
	}
	v->patch_elems = 3 * patch * patch * v->hidden;
	v->positions = (image / patch) * (image / patch);
	return 0;
}

/* Qwen2.5-VL's ViT (Qwen2_5_VLVisionConfig keys): a bias-free 3-D patch convolution over
 * temporal_patch_size frames, the merger over spatial_merge_size^2 patches. */
static int qwen2_5_from_json(json_t *vc, struct vision_shape *v, const char **why)
{
	int64_t patch, temporal, merge;

	if (vkey(vc, "hidden_size", PLAN_MAX_WIDTH, &v->hidden) || vkey(vc, "intermediate_size", PLAN_MAX_WIDTH, &v->inter) ||
	    vkey(vc, "depth", PLAN_MAX_LAYERS, &v->layers) || vkey(vc, "patch_size", PLAN_MAX_PATCH, &patch) ||
	    vkey(vc, "temporal_patch_size", PLAN_MAX_TEMPORAL, &temporal) ||
	    vkey(vc, "spatial_merge_size", PLAN_MAX_MERGE, &merge)) {
		*why = "vision_config lacks hidden_size, intermediate_size, depth, patch_size, temporal_patch_size or "
		       "spatial_merge_size (or one is out of range)";
		return -EINVAL;
	}
	v->patch_elems = 3 * temporal * patch * patch * v->hidden;
	v->merge = merge * merge;
	return vkey(vc, "out_hidden_size", PLAN_MAX_WIDTH, &v->out) ? (*why = "vision_config lacks out_hidden_size", -EINVAL)
								     : 0;
}

/* The tower of kind (a multimodal row's: VISION_NONE plans none) from vision_config vc,
 * its projector ending in text_hidden units: 0, or -EINVAL with *why (a static string
 * naming what is missing or out of range: the tower is then not counted). */
static int vision_from_json(enum vision_kind kind, json_t *vc, int64_t text_hidden, struct vision_shape *v,
		     const char **why)
{
	struct vision_shape s = { .kind = kind, .out = text_hidden };
	int rc = 0;

	memset(v, 0, sizeof(*v));
	*why = NULL;
	if (kind == VISION_NONE)
		return 0;
	if (!json_is_object(vc)) {
		*why = "no vision_config";
		return -EINVAL;
	}
	rc = kind == VISION_SIGLIP ? siglip_from_json(vc, &s, why) : qwen2_5_from_json(vc, &s, why);
	if (rc)
		return rc;
	*v = s;
	return 0;
}

/* What text_config copy leaves out and the top level of cfg gives: tie_word_embeddings
 * (a boolean), the longest sequence. 0, or -ENOMEM. */
static int text_from_top(json_t *cfg, json_t *copy)
{
	json_t *tie = json_object_get(cfg, "tie_word_embeddings");
	const char *name;

	if (json_is_boolean(tie) && !json_object_get(copy, "tie_word_embeddings") &&
	    json_object_set(copy, "tie_word_embeddings", tie))
		return -ENOMEM;
	if (field(copy, POSITION_NAMES, &name))
		return 0;
	for (const char *const *n = POSITION_NAMES; *n; n++)
		if (json_object_get(cfg, *n) && json_object_set(copy, *n, json_object_get(cfg, *n)))
			return -ENOMEM;
	return 0;
}

/* A multimodal config (a row with a text_family): its text tower from text_config (its
 * model_type the row's text family when it gives none; tie_word_embeddings and the
 * longest sequence from the top level when it leaves them out), or from the top level
 * itself in an older flat config (qwen2_5_vl's, as its config class moves the keys); its
 * vision tower's weights from vision_config where they can be counted (vision_why says
 * why not). */
static int multimodal_from_json(json_t *cfg, const struct family *f, struct model_shape *m, char **err)
{
	json_t *text = json_object_get(cfg, "text_config");
	json_t *copy = json_deep_copy(json_is_object(text) ? text : cfg);
	const struct family *tf;
	int rc;

	if (!copy) {
		*err = xstrdup("config.json: out of memory");
		return -ENOMEM;
	}
	if (!json_is_object(text)) /* flat: the text keys at the top */
		json_object_del(copy, "model_type");
	if (!json_string_value(json_object_get(copy, "model_type")))
		json_object_set_new(copy, "model_type", json_string(f->text_family));
	tf = family_find(json_string_value(json_object_get(copy, "model_type")));
	if (tf && tf->text_family) {
		json_decref(copy);
		*err = xasprintf("config.json: text_config's model_type '%s' is not a text model", tf->type);
		return -EINVAL;
	}
	if (text_from_top(cfg, copy)) {
		json_decref(copy);
		*err = xstrdup("config.json: out of memory");
		return -ENOMEM;
	}
	rc = model_shape_from_json(copy, m, err);
	json_decref(copy);
	if (rc)
		return rc;
	m->wrapper = f;
	vision_from_json(f->vision, json_object_get(cfg, "vision_config"), m->hidden, &m->vision, &m->vision_why);
	return 0;
}

/* The checkpoint's dtype: "dtype" (transformers 5), or "torch_dtype" (before); a config
 * that names neither leaves m's as it was. */
static void dtype_from_json(json_t *cfg, struct model_shape *m)
{
	const char *s = json_string_value(json_object_get(cfg, "dtype"));

	if (!s)
		s = json_string_value(json_object_get(cfg, "torch_dtype"));
	if (s)
		snprintf(m->dtype, sizeof(m->dtype), "%s", s);
}

int model_shape_from_json(json_t *cfg, struct model_shape *m, char **err)
{
	const char *type = json_string_value(json_object_get(cfg, "model_type"));
	const struct family *f;
	char names[256];
	json_t *v;

	memset(m, 0, sizeof(*m));
	*err = NULL;
	if (!json_is_object(cfg)) {
		*err = xstrdup("config.json: not a JSON object");
		return -EINVAL;
	}
	family_names(names, sizeof(names));
	if (!type) {
		*err = xasprintf("config.json: missing model_type (one of %s)", names);
		return -EINVAL;
	}
	f = family_find(type);
	if (!f && json_object_get(cfg, "hidden_size") && json_object_get(cfg, "num_hidden_layers") &&
	    json_object_get(cfg, "num_attention_heads") && json_object_get(cfg, "vocab_size") &&
	    !json_object_get(cfg, "text_config"))
		f = family_generic();
	if (!f) {
		*err = xasprintf("config.json: model_type '%s' is not supported (%s; or any config with hidden_size, "
				 "num_hidden_layers, num_attention_heads and vocab_size, as a generic decoder)",
				 type, names);
		return -EINVAL;
	}
	if (f->text_family) {
		int rc = multimodal_from_json(cfg, f, m, err);
		if (!rc) /* (the top level's dtype is the whole model's; else text_config's) */
			dtype_from_json(cfg, m);
		return rc;
	}
	dtype_from_json(cfg, m);
	snprintf(m->type, sizeof(m->type), "%s", type);
	m->family = f;
	m->qkv_bias = f->qkv_bias;
	m->o_bias = f->o_bias;
	m->tied = f->tied;
	v = json_object_get(cfg, "tie_word_embeddings");
	if (json_is_boolean(v))
		m->tied = json_is_true(v);
	m->final_softcap = f->final_softcap;
	v = json_object_get(cfg, "final_logit_softcapping");
	if (json_is_number(v))
		m->final_softcap = json_number_value(v);
	else if (json_is_null(v))
		m->final_softcap = 0;
	/* attention_bias: q, k, v and o_proj's biases where the modeling code reads it
	 * (qwen2's q, k, v always have one; mistral, mixtral, phi3 and GPT-2 fix theirs) */
	v = json_object_get(cfg, "attention_bias");
	if (json_is_boolean(v) && f->reads_attention_bias)
		m->qkv_bias = m->o_bias = json_is_true(v);
	if (json_is_boolean(v) && f->attention_bias_no_o)
		m->qkv_bias = json_is_true(v);
	v = f->qkv_bias_key ? json_object_get(cfg, f->qkv_bias_key) : NULL;
	if (json_is_boolean(v))
		m->qkv_bias = json_is_true(v);
	v = f->qk_norm_key ? json_object_get(cfg, f->qk_norm_key) : NULL;
	if (v && !json_is_null(v) && !json_is_boolean(v)) {
		*err = xasprintf("config.json: %s must be true or false", f->qk_norm_key);
		return -EINVAL;
	}
	m->qk_norm_each = json_is_true(v);
	if (sizes_from_json(cfg, f, m, err) || nope_from_json(cfg, f, m, err))
		return -EINVAL;
	if (layers_from_json(cfg, f, m, err) || hybrid_from_json(cfg, f, m, err))
		return -EINVAL;
	if (f->sliding && sliding_from_json(cfg, m, f->sliding_window,
					    f->sliding_pattern == SLIDE_EVERY_LAYER ? PLAN_MAX_LAYERS + 1
										     : f->sliding_pattern, err))
		return -EINVAL;
	if (heads_from_json(cfg, m, err) || rotary_from_json(cfg, f, m, err))
		return -EINVAL;
	return mla_from_json(cfg, f, m, err);
}

int buffer_spec_parse(const char *s, struct buffer_spec *b)
{
	const char *eq = strchr(s, '='), *x;
	char count[24];
	struct buffer_spec v = { .count = 1 };
	int rc;

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
	rc = parse_size(x ? x + 1 : eq + 1, 1, PLAN_MAX_ITEM_BYTES, &v.item_bytes);
	if (rc)
		return rc == -EDOM ? rc : -EINVAL;
	*b = v;
	return 0;
}

/* LoRA's targets by name, in the order they are said */
static const struct { const char *name; unsigned bit; } lora_target_names[] = {
	{ "q", LORA_Q }, { "k", LORA_K }, { "v", LORA_V }, { "o", LORA_O },
	{ "gate", LORA_GATE }, { "up", LORA_UP }, { "down", LORA_DOWN },
};
#define NLORA_TARGETS (sizeof(lora_target_names) / sizeof(lora_target_names[0]))

int lora_targets_parse(const char *s, unsigned *bits)
{
	char *copy = xstrdup(s), *save = NULL;
	int rc = 0;

	*bits = 0;
	for (char *w = strtok_r(copy, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
		size_t i;
		if (!strcmp(w, "all") || !strcmp(w, "all-linear")) {
			*bits = LORA_ALL;
			continue;
		}
		for (i = 0; i < NLORA_TARGETS && strcmp(w, lora_target_names[i].name); i++)
			;
		/* else a module name, as PEFT's list gives it: "q_proj", "self_attn.q_proj" */
		unsigned b = i < NLORA_TARGETS ? lora_target_names[i].bit : lora_name_bits(w);
		if (!b)
			rc = -EINVAL;
		*bits |= b;
	}
	free(copy);
	return rc || !*bits ? -EINVAL : 0;
}

const char *lora_targets_text(unsigned bits, char *buf, size_t n)
{
	size_t len = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < NLORA_TARGETS; i++)
		if (bits & lora_target_names[i].bit && len < n)
			len += (size_t)snprintf(buf + len, n - len, "%s%s", len ? "," : "", lora_target_names[i].name);
	return buf;
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
