#include "plan/assumed.h"

#include <stdio.h>
#include <string.h>

#include "plan/optimizer.h"
#include "plan/precision.h"
#include "plan/sim.h"
#include "util/strbuf.h"
#include "util/units.h"

/* Layers of m with a sliding window (0: none). */
static int64_t sliding_layers(const struct model_shape *m)
{
	int64_t n = 0;

	for (int64_t l = 0; m->sliding_window && l < m->layers; l++)
		n += (l + 1) % m->sliding_pattern != 0;
	return n;
}

/* The "assumed" object's keys in the order headroom-plan/2 has always written them (the
 * format's readers compare them as text too); a key not listed, a new setting's, after
 * them. Takes o's reference. */
static json_t *assumed_ordered(json_t *o)
{
	static const char *const order[] = {
		"precision", "weights_dtype", "compute_dtype", "master_weights_dtype", "gradients_dtype",
		"optimizer_states_dtype", "optimizer", "momentum", "inference", "batch", "seq", "steps", "context",
		"prompt", "prompt_from", "grad_ckpt", "attention", "sliding_window", "sliding_layers", "use_cache",
		"loss_chunk", "lora_rank", "zero_stage", "dp", "ddp", "reshard_after_forward", "freeze",
		"inputs_embeds", "alloc_conf", "logits",
	};
	json_t *out = json_object(), *v;
	const char *key;

	for (size_t i = 0; i < sizeof(order) / sizeof(order[0]); i++)
		if ((v = json_object_get(o, order[i])))
			json_object_set(out, order[i], v);
	json_object_foreach(o, key, v)
		if (!json_object_get(out, key))
			json_object_set(out, key, v);
	json_decref(o);
	return out;
}

/* A multimodal config: what of it was planned. */
static json_t *multimodal_json(const struct model_shape *m)
{
	json_t *mm = json_object();

	json_object_set_new(mm, "config", json_string(m->wrapper->type));
	json_object_set_new(mm, "text_tower", json_string(m->type));
	json_object_set_new(mm, "vision_params", m->vision.kind ? json_integer(vision_params(&m->vision)) : json_null());
	json_object_set_new(mm, "vision_not_counted", m->vision_why ? json_string(m->vision_why) : json_null());
	return mm;
}

json_t *plan_assumed_json(const struct model_shape *m, const struct train_settings *t, const struct said_ctx *c)
{
	/* where the prompt's length came from, as JSON says it */
	static const char *const prompt_from[] = { [PROMPT_GIVEN] = "seq", [PROMPT_CONTEXT] = "context",
						   [PROMPT_DEFAULT] = "default" };
	struct precision_dtypes d;
	json_t *o = settings_assumed_json(t);
	int64_t sliding = sliding_layers(m);

	/* what the settings make of the run: each kind of tensor's dtype, the attention */
	precision_dtypes(t, &d);
	json_object_set_new(o, "weights_dtype", json_string(d.weights));
	json_object_set_new(o, "compute_dtype", json_string(d.compute));
	json_object_set_new(o, "master_weights_dtype", json_string(d.master_weights));
	json_object_set_new(o, "gradients_dtype", json_string(d.gradients));
	json_object_set_new(o, "optimizer_states_dtype", json_string(d.optimizer_states));
	json_object_set_new(o, "attention", json_string("sdpa"));
	json_object_set_new(o, "sliding_window", sliding ? json_integer(m->sliding_window) : json_null());
	json_object_set_new(o, "sliding_layers", json_integer(sliding));
	if (model_family(m)->assumes) /* (only where a family says something: older plans unchanged) */
		json_object_set_new(o, "family", json_string(model_family(m)->assumes));
	if (m->wrapper)
		json_object_set_new(o, "multimodal", multimodal_json(m));
	if (!t->inference && optimizer_row(t)->paged_min) /* (only a paged optimizer's) */
		json_object_set_new(o, "paged_states_bytes", json_integer((json_int_t)sim_paged_bytes(m, t)));
	if (t->inference) {
		json_object_set_new(o, "prompt", json_integer(t->seq));
		json_object_set_new(o, "prompt_from", json_string(prompt_from[c->prompt]));
	}
	if (c->solving && json_object_get(o, c->solving))
		json_object_set_new(o, c->solving, json_null());
	if (c->solving && !strcmp(c->solving, "seq") && json_object_get(o, "prompt"))
		json_object_set_new(o, "prompt", json_null());
	return assumed_ordered(o);
}

/* What the plan assumes of a multimodal config's towers (the family's own note, its
 * row's assumes, comes after the attention's line). */
static void towers_said(struct strbuf *sb, const struct model_shape *m, const struct train_settings *t)
{
	if (m->wrapper && m->vision.kind && t->offload_params && t->zero_stage == 3 && !t->inference)
		strbuf_addf(sb, "%s: its text tower (%s) planned; its vision tower's weights (%.1fM parameters) offloaded "
			    "with the rest, not counted, no gradients or states (a text-only step); images' "
			    "activations not planned",
			    m->wrapper->type, m->type, vision_params(&m->vision) / 1e6);
	else if (m->wrapper && m->vision.kind)
		strbuf_addf(sb, "%s: its text tower (%s) planned; its vision tower's weights counted (%.1fM parameters), "
			    "no gradients or states (a text-only step); images' activations not planned",
			    m->wrapper->type, m->type, vision_params(&m->vision) / 1e6);
	else if (m->wrapper)
		strbuf_addf(sb, "%s: its text tower (%s) planned; its vision tower not counted (%s)", m->wrapper->type,
			    m->type, m->vision_why);
	if (m->wrapper && m->wrapper->mm_masks)
		strbuf_add(sb, "; token_type_ids given: its masks are batch x seq x seq booleans, every layer's "
			   "sdpa takes one");
}

/* A mixture of experts with a shared expert, dense layers or a sigmoid router: what its
 * MLPs are, as the family's row and the config make them. */
static void experts_said(struct strbuf *sb, const struct model_shape *m, const struct train_settings *t)
{
	const struct family *f = model_family(m);
	int64_t dense = 0;

	(void)t;
	for (int64_t l = 0; l < m->layers; l++)
		dense += model_dense_layer(m, l);
	if (f->mlp != MLP_MOE || (!m->shared_inter && f->router == ROUTER_SOFTMAX && !dense))
		return; /* (the other kinds' rows say what they assume) */
	strbuf_addf(sb, "experts: %lld routed of %lld units, top %lld by a %s router, grouped_mm", (long long)m->experts,
		    (long long)m->moe_inter, (long long)m->experts_per_tok,
		    f->router == ROUTER_SIGMOID_GROUP ? "sigmoid group (fp32)" : "softmax");
	if (m->shared_inter)
		strbuf_addf(sb, "; a shared expert of %lld units%s", (long long)m->shared_inter,
			    f->shared == SHARED_GATED_FIRST ? " (sigmoid-gated)" : "");
	strbuf_addf(sb, "; %lld of %lld layers dense (%lld units)", (long long)dense, (long long)m->layers,
		    (long long)m->dense_inter);
}

/* The attention: its kind and kernel's dtype, latent attention's sizes, a partial
 * rotation, a sliding window, layers without rope. */
static void attention_said(struct strbuf *sb, const struct model_shape *m, const struct train_settings *t)
{
	const struct family *f = model_family(m);
	struct precision_dtypes d;
	int64_t sliding = sliding_layers(m);

	precision_dtypes(t, &d);
	strbuf_addf(sb, "attention %s%s", f->attn_name ? f->attn_name : "sdpa",
		    strcmp(d.compute, "fp32") ? "" : " (its math kernel in fp32: it keeps the probabilities)");
	if (f->attn == ATTN_MLA) {
		strbuf_addf(sb, " over multi-head latent attention (q low rank ");
		strbuf_addf(sb, m->q_lora_rank ? "%lld" : "none: q_proj", (long long)m->q_lora_rank);
		strbuf_addf(sb, ", a latent of %lld + %lld rope units a token: what the cache keeps)",
			    (long long)m->kv_lora_rank, (long long)m->qk_rope_dim);
	}
	if (m->rotary_dim)
		strbuf_addf(sb, ", rotary over %lld of a head's %lld units", (long long)m->rotary_dim,
			    (long long)m->head_dim);
	if (sliding)
		strbuf_addf(sb, ", a sliding window of %lld on %lld of %lld layers (%s)", (long long)m->sliding_window,
			    (long long)sliding, (long long)m->layers,
			    t->seq >= m->sliding_window ? "seq reaches it: a batch x seq x seq mask a layer"
							: "seq within it: no masks");
	if (m->nope_step)
		strbuf_addf(sb, ", rotary on %lld of %lld layers (no_rope_layers)",
			    (long long)(m->layers - m->layers / m->nope_step), (long long)m->layers);
}

/* A paged optimizer's states in managed memory: what the plan leaves out of the card's
 * figures, and why. */
static void paged_said(struct strbuf *sb, const struct model_shape *m, const struct train_settings *t)
{
	char size[32];

	if (t->inference || !optimizer_row(t)->paged_min)
		return;
	strbuf_addf(sb, "paged: %s of states in managed memory, paged out under pressure, not counted against the card",
		    size_format(sim_paged_bytes(m, t), size, sizeof(size)));
}

typedef void (*model_said_fn)(struct strbuf *sb, const struct model_shape *m, const struct train_settings *t);

/* One line after ind: the model's part (head; NULL: none), then the rows said on line
 * (SAID_NONE: none); a line with nothing to say is left out. */
static void line_said(struct strbuf *sb, const char *ind, model_said_fn head, enum said_line line,
		      const struct model_shape *m, const struct train_settings *t, const struct said_ctx *c)
{
	struct strbuf text = STRBUF_INIT, rows = STRBUF_INIT;

	if (head)
		head(&text, m, t);
	if (line != SAID_NONE)
		settings_said(&rows, line, t, c);
	if (text.len && rows.len)
		strbuf_add(&text, ", ");
	strbuf_add(&text, strbuf_str(&rows));
	if (text.len)
		strbuf_addf(sb, "%s%s\n", ind, strbuf_str(&text));
	strbuf_release(&text);
	strbuf_release(&rows);
}

void plan_assumed_text(struct strbuf *sb, const char *label, const struct model_shape *m,
		       const struct train_settings *t, const struct said_ctx *c)
{
	char first[64], ind[64];

	snprintf(first, sizeof(first), "%s: ", label);
	snprintf(ind, sizeof(ind), "%*s", (int)strlen(label) + 2, "");
	line_said(sb, first, NULL, SAID_PRECISION, m, t, c);
	line_said(sb, ind, NULL, SAID_TENSORS, m, t, c);
	line_said(sb, ind, NULL, SAID_RUN, m, t, c);
	line_said(sb, ind, paged_said, SAID_NONE, m, t, c);
	line_said(sb, ind, NULL, SAID_PARTS, m, t, c);
	line_said(sb, ind, NULL, SAID_ALLOCATOR, m, t, c);
	line_said(sb, ind, towers_said, SAID_NONE, m, t, c);
	line_said(sb, ind, experts_said, SAID_NONE, m, t, c);
	line_said(sb, ind, attention_said, SAID_ATTENTION, m, t, c);
	if (model_family(m)->assumes) /* what the family's plan assumes of transformers' code */
		strbuf_addf(sb, "%s%s: %s\n", ind, m->type, model_family(m)->assumes);
}
