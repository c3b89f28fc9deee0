/* The planner's settings as one table: each row a setting's one spelling (the JSON key;
 * its flag is the key with '-' for '_', a boolean's off flag --no-KEY), what its value
 * may be, its help, and its parser. The table drives `headroom plan`'s options, the
 * JSON "train" keys (train_settings_from_json), the usage, the readers of other tools'
 * files (plan/trainargs.h), and what a plan says it assumed (the JSON "assumed" object and
 * the text's "assumed:" lines); old spellings are aliases of a row, listed with it.
 * Pure: text in, struct train_settings out; settings in, what they assume out. */
#ifndef HEADROOM_PLAN_SETTINGS_H
#define HEADROOM_PLAN_SETTINGS_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "plan/shape.h"

struct setting;
struct strbuf;
typedef int (*setting_parse_fn)(const struct setting *s, struct train_settings *t, const char *text);

/* Where an inference plan's prompt (prefill) length came from. */
enum prompt_source { PROMPT_GIVEN, PROMPT_CONTEXT, PROMPT_DEFAULT };

/* What a plan's "assumed:" lines need beyond the settings: the setting solved for (its
 * value said "?"; NULL: none) and where an inference prompt's length came from. */
struct said_ctx {
	const char *solving;
	enum prompt_source prompt;
};

/* The "assumed:" lines a row's phrase goes on, in their order (the model's lines,
 * plan/assumed.c's, come between SAID_ALLOCATOR and SAID_ATTENTION). */
enum said_line {
	SAID_NONE,      /* the row says nothing: what it sets shows in another row's phrase */
	SAID_PRECISION, /* "precision bf16" */
	SAID_TENSORS,   /* each kind of tensor's dtype: "weights bf16, master weights ..." */
	SAID_RUN,       /* optimizer, LoRA, batch x seq, checkpointing, ZeRO or DDP */
	SAID_PARTS,     /* frozen parts, fed hidden states */
	SAID_ALLOCATOR, /* the allocator, when not PyTorch's default */
	SAID_ATTENTION, /* after the model's attention: use_cache */
	SAID_NLINES
};

/* A row's phrase in the "assumed:" text, appended to sb (nothing: it says nothing this
 * time). A phrase begun with a space continues the one before it ("batch 4", " x seq
 * 2048"); another is its line's next, after the line's separator. */
typedef void (*setting_said_fn)(const struct setting *s, const struct train_settings *t, const struct said_ctx *c,
				struct strbuf *sb);

enum setting_json {
	SJ_BOOL,   /* true or false */
	SJ_INT,    /* a whole number */
	SJ_BYTES,  /* a whole number of bytes (the key says _bytes), or a size's string with its unit */
	SJ_NUM,    /* a number */
	SJ_INT_OR_WORD, /* a whole number, or a word the flag takes (such as auto) */
	SJ_TEXT,   /* a string as the flag takes it */
	SJ_LIST,   /* a string, or a list of them (each applied in turn) */
	SJ_MAP,    /* as SJ_LIST, or an object {NAME: VALUE}, each as "NAME=VALUE" */
};

struct setting {
	const char *key;          /* the one spelling: JSON key, and --key with '-' for '_' */
	const char *arg;          /* the flag's value as the usage names it; NULL: a boolean */
	const char *want;         /* what the value may be, as errors say (NULL: from min..max) */
	const char *help;         /* the usage's text */
	setting_parse_fn parse;
	enum setting_json json;
	size_t offset;            /* the field the generic parsers set */
	int64_t min, max;         /* a whole number's range */
	const char *const *values; /* the words the value may be (for "did you mean"), or NULL */
	int repeat;               /* the flag may be given again (adds) */
	/* its value as a plan's "assumed" object says it (NULL: left out); NULL: a row the
	 * object does not show (the derived dtypes stand for dtype and autocast) */
	json_t *(*assumed)(const struct setting *s, const struct train_settings *t);
	/* the line its phrase goes on and the phrase (SAID_NONE, NULL: it says nothing) */
	enum said_line said_on;
	setting_said_fn said;
};

/* An old spelling: the key (or flag) name as it was, the row it is, and for a boolean
 * alias of a valued setting, the values it stands for when true and when false. */
struct setting_alias {
	const char *name;
	const char *key;
	const char *if_true, *if_false; /* NULL: the alias takes the row's own value */
	int flag_only;                  /* only on the command line (its JSON key is the row's) */
};

/* The i-th row (NULL past the end), the row called key (NULL: none), its index. */
const struct setting *setting_at(size_t i);
const struct setting *setting_find(const char *key);
size_t setting_index(const struct setting *s);
/* The i-th alias, NULL past the end; the alias called name (flags as keys: '-' is '_'). */
const struct setting_alias *setting_alias_at(size_t i);
const struct setting_alias *setting_alias_find(const char *name);

/* Settings given, one bit a row (setting_index): which ones a plan did not take from
 * the defaults. */
typedef uint64_t setting_mask;
#define SETTING_BIT(s) ((setting_mask)1 << setting_index(s))

/* Apply text as s's value over t: 0, -EDOM (a size in it has no unit) or -EINVAL (t may
 * be partly changed: a caller dies). A boolean takes "true" or "false". */
int setting_apply(const struct setting *s, struct train_settings *t, const char *text);
/* What s's value may be, into buf: its want, or "a whole number from MIN to MAX". */
const char *setting_want(const struct setting *s, char *buf, size_t n);
/* The value nearest a bad one among s's words, or NULL. */
const char *setting_suggest(const struct setting *s, const char *bad);
/* A setting as a flag: "--grad-ckpt", "--no-use-cache", "--batch 4", into buf. */
const char *setting_flag_text(const struct setting *s, const char *value, char *buf, size_t n);

/* Apply v, the JSON value of key, as s's value over t (a list joined with commas; a
 * repeated setting's list or object entries one by one): 0, or -EINVAL with *err naming
 * key and what it wants. */
int setting_apply_json(const char *key, const struct setting *s, json_t *v, struct train_settings *t, char **err);
/* Apply the keys of obj (canonical keys first, then the old spellings, so that an old
 * key refines the row it belongs to) over t, each given setting's bit into *given
 * (NULL: not kept). 0, or -EINVAL with *err (caller frees) naming the key and what it
 * wants, and the nearest known key for an unknown one. */
int settings_from_json(json_t *obj, struct train_settings *t, setting_mask *given, char **err);

/* What t assumes, one key a row that shows itself (struct setting's assumed), in the
 * table's order; the caller decrefs. */
json_t *settings_assumed_json(const struct train_settings *t);
/* The phrases of the rows said on line, in the table's order, appended to sb (empty
 * when none says anything): the first as it is, each next one after the line's
 * separator (", "; "; " between frozen parts and fed hidden states) unless it continues
 * the one before (setting_said_fn). */
/* Whether t's attention is asked for by a flash kernel's name (flash_attention_2/3,
 * flex_attention), planned as sdpa's flash kernel. */
int settings_attn_flash(const struct train_settings *t);
void settings_said(struct strbuf *sb, enum said_line line, const struct train_settings *t, const struct said_ctx *c);
/* The optimizer as the plan names it ("none" in inference), and whether the model's
 * use_cache holds keys and values (in inference, or on in training without
 * checkpointing, which turns it off). */
const char *settings_optimizer_name(const struct train_settings *t);
int settings_cache_on(const struct train_settings *t);


#endif
