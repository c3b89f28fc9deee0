#include "plan/lora_names.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "plan/limits.h"
#include "util/pyre.h"
#include "util/xalloc.h"

#define QKV (LORA_Q | LORA_K | LORA_V)
enum { IN_ATTN = 1, IN_MLP = 2 };
/* the layers a pattern is tried on when the decoder's are not known */
#define LORA_REGEX_LAYERS 64

/* A module's name in the families' code, its bits, and the block it sits in (0: none). */
struct name_row {
	const char *name;
	unsigned bits;
	int in;
};

/* The projections' names: LORA_* bits. */
static const struct name_row names[] = {
	{ "q_proj", LORA_Q, IN_ATTN },
	{ "k_proj", LORA_K, IN_ATTN },
	{ "v_proj", LORA_V, IN_ATTN },
	{ "o_proj", LORA_O, IN_ATTN },
	{ "qkv_proj", QKV, IN_ATTN },           /* phi3 */
	{ "query_key_value", QKV, IN_ATTN },    /* falcon, gpt-neox, bloom */
	{ "c_attn", QKV, IN_ATTN },             /* gpt2, starcoder */
	{ "Wqkv", QKV, IN_ATTN },               /* mpt, modernbert */
	{ "W_pack", QKV, IN_ATTN },             /* baichuan */
	{ "wqkv", QKV, IN_ATTN },               /* internlm2 */
	{ "query", LORA_Q, IN_ATTN },
	{ "key", LORA_K, IN_ATTN },
	{ "value", LORA_V, IN_ATTN },
	{ "wq", LORA_Q, IN_ATTN },
	{ "wk", LORA_K, IN_ATTN },
	{ "wv", LORA_V, IN_ATTN },
	{ "wo", LORA_O, IN_ATTN },
	{ "out_proj", LORA_O, IN_ATTN },
	{ "dense", LORA_O, IN_ATTN },           /* phi, falcon, gpt-neox */
	{ "c_proj", LORA_O | LORA_DOWN, IN_ATTN | IN_MLP }, /* gpt2: both blocks' output */
	{ "gate_proj", LORA_GATE, IN_MLP },
	{ "up_proj", LORA_UP, IN_MLP },
	{ "down_proj", LORA_DOWN, IN_MLP },
	{ "gate_up_proj", LORA_GATE | LORA_UP, IN_MLP },
	{ "w1", LORA_GATE, IN_MLP },            /* mixtral's experts */
	{ "w3", LORA_UP, IN_MLP },
	{ "w2", LORA_DOWN, IN_MLP },
	{ "c_fc", LORA_UP, IN_MLP },
	{ "fc1", LORA_UP, IN_MLP },
	{ "fc2", LORA_DOWN, IN_MLP },
	{ "fc_in", LORA_UP, IN_MLP },           /* gpt-j */
	{ "fc_out", LORA_DOWN, IN_MLP },
	{ "dense_h_to_4h", LORA_UP, IN_MLP },
	{ "dense_4h_to_h", LORA_DOWN, IN_MLP },
	{ "mlp_up", LORA_UP, IN_MLP },
	{ "mlp_down", LORA_DOWN, IN_MLP },
};

/* Where a decoder's layers are, and the blocks' names in a layer. */
static const char *const layer_paths[] = {
	"model.layers", "model.language_model.layers", "language_model.model.layers", "model.text_model.layers",
	"model.model.layers", "transformer.h", "gpt_neox.layers", "model.decoder.layers", "transformer.blocks",
	"backbone.layers",
};
static const struct {
	const char *name;
	int in;
} blocks[] = {
	{ "self_attn", IN_ATTN }, { "attn", IN_ATTN },      { "attention", IN_ATTN },
	{ "self_attention", IN_ATTN }, { "mlp", IN_MLP },   { "feed_forward", IN_MLP },
	{ "block_sparse_moe", IN_MLP }, { "mlp.shared_expert", IN_MLP }, { "mlp.experts", IN_MLP },
};

#define N(a) (sizeof(a) / sizeof((a)[0]))

/* The bits of the row of table (n rows) named as name's last dotted part (PEFT matches a
 * suffix: "self_attn.q_proj"), or 0. */
static unsigned row_bits(const struct name_row *table, size_t n, const char *name)
{
	const char *dot = strrchr(name, '.');
	const char *last = dot ? dot + 1 : name;

	for (size_t i = 0; i < n; i++)
		if (!strcmp(table[i].name, last))
			return table[i].bits;
	return 0;
}

unsigned lora_name_bits(const char *name)
{
	return row_bits(names, N(names), name);
}

/* In how many of layers layers re matches the name path.I.block.proj: n, or -E2BIG
 * (pyre_match's). */
static int layers_matched(struct pyre *re, const char *path, const char *block, const char *proj, int layers)
{
	char s[160];
	int n = 0;

	for (int i = 0; i < layers; i++) {
		snprintf(s, sizeof(s), "%s.%d.%s.%s", path, i, block, proj);
		int m = pyre_match(re, s);
		if (m < 0)
			return m;
		n += m;
	}
	return n;
}

int lora_regex_bits(const char *pattern, int layers, unsigned *bits, unsigned *partial, char **err)
{
	struct pyre *re;
	unsigned full = 0;
	int rc = pyre_compile(&re, pattern, err);

	*bits = *partial = 0;
	if (rc)
		return rc;
	if (layers <= 0)
		layers = LORA_REGEX_LAYERS;
	if (layers > PLAN_MAX_LAYERS)
		layers = PLAN_MAX_LAYERS;
	for (size_t i = 0; i < N(names) && !rc; i++) {
		int most = 0;
		for (size_t b = 0; b < N(blocks); b++)
			for (size_t p = 0; (names[i].in & blocks[b].in) && p < N(layer_paths) && most < layers && !rc;
			     p++) {
				int n = layers_matched(re, layer_paths[p], blocks[b].name, names[i].name, layers);
				rc = n < 0 ? n : 0;
				most = n > most ? n : most;
			}
		if (most)
			*bits |= names[i].bits;
		if (most == layers)
			full |= names[i].bits;
	}
	pyre_free(re);
	if (rc) {
		*bits = 0;
		*err = xasprintf("a regular expression that backtracks without end on a module name (nested "
				 "quantifiers such as (a+)+)");
		return -EINVAL;
	}
	/* a projection matched on every layer under one name is not partial under another */
	*partial = *bits & ~full;
	return 0;
}

/* The embedding's and lm_head's module names in the families' code: LORA_SAVE_* bits. */
static const struct name_row save_names[] = {
	{ "embed_tokens", LORA_SAVE_EMBED, 0 },    { "wte", LORA_SAVE_EMBED, 0 },
	{ "word_embeddings", LORA_SAVE_EMBED, 0 }, { "tok_embeddings", LORA_SAVE_EMBED, 0 },
	{ "embed_in", LORA_SAVE_EMBED, 0 },        { "lm_head", LORA_SAVE_HEAD, 0 },
	{ "embed_out", LORA_SAVE_HEAD, 0 },        { "output", LORA_SAVE_HEAD, 0 },
};

unsigned lora_save_bits(const char *name)
{
	return row_bits(save_names, N(save_names), name);
}

int lora_save_parse(const char *text, unsigned *bits)
{
	char name[128];

	*bits = 0;
	if (!strcmp(text, "none"))
		return 0;
	for (const char *p = text; *p;) {
		size_t n = strcspn(p, ",");
		unsigned b;

		if (n >= sizeof(name))
			return -EINVAL;
		memcpy(name, p, n);
		name[n] = '\0';
		if (!(b = lora_save_bits(name)))
			return -EINVAL;
		*bits |= b;
		p += n + (p[n] == ',');
	}
	return 0;
}

const char *lora_save_text(unsigned bits, char *buf, size_t n)
{
	snprintf(buf, n, "%s%s%s", bits & LORA_SAVE_EMBED ? "embed_tokens" : "",
		 (bits & LORA_SAVE_EMBED) && (bits & LORA_SAVE_HEAD) ? "," : "", bits & LORA_SAVE_HEAD ? "lm_head" : "");
	return buf;
}
