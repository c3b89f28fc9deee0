/* Settings from the files users already have: a Hugging Face TrainingArguments JSON (as
 * to_json_string / trainer.save_state write it) and an axolotl YAML config, each key
 * mapped through the settings table (plan/settings.h) onto the planner's settings. A key
 * that changes no memory is ignored when it is on the reader's list of such keys; a key
 * that changes memory but cannot be planned (DeepSpeed offload, an unknown optimizer) is
 * an error naming it and what to do, unless the command line gives the setting it is
 * (the flag wins); a key on neither list is ignored and named (a newer release's key),
 * or refused when strict. Pure but for reading the file. */
#ifndef HEADROOM_PLAN_TRAINARGS_H
#define HEADROOM_PLAN_TRAINARGS_H

#include <jansson.h>

#include "plan/settings.h"
#include "util/strbuf.h"

/* What a reader is told beside a file, and what it made of the file beyond the settings. */
struct file_read {
	setting_mask cli;      /* the settings the command line gives: the file's value for
				* one of them is not read (the flag wins over it), nor an error */
	const char *dtype;     /* the model config's dtype (struct model_shape's; NULL or "":
				* none): what transformers 5 loads the weights in */
	int strict;            /* a key the planner does not know is an error */
	int layers;            /* the model's decoder layers (0: not known), which a LoRA
				* target expression is matched over */
	const char *base;      /* the file's path (NULL: none): a DeepSpeed config's relative
				* path is tried beside it too */
	json_t *unknown;       /* out: an array of the keys it did not know and ignored (NULL:
				* none); the caller decrefs */
	char *said;            /* out: what it assumed of the run, for the "assumed:" lines
				* (NULL: nothing); the caller frees */
	int fsdp_amp;          /* out: FSDP's full_shard under bf16 (DT_BF16_AMP) or fp16
				* (DT_FP16_AMP), for trainargs_settle; 0: neither */
	int tool_file;         /* out: a file of HF Trainer's, TRL's or axolotl's was read */
	int ds_engine;         /* out: DeepSpeed's bf16 or fp16 engine, which casts the model */
};

/* A TrainingArguments JSON object over t (f: NULL, strict and no more said). 0, or
 * -EINVAL with *err (caller frees). */
int trainargs_from_json(json_t *obj, struct train_settings *t, setting_mask *given, struct file_read *f,
			char **err);
/* An axolotl config (YAML read as a JSON object of strings, lists and objects) over t. */
int axolotl_from_json(json_t *obj, struct train_settings *t, setting_mask *given, struct file_read *f, char **err);
/* The files at path, read and applied as above. 0, or -EINVAL / -errno with *err. */
int trainargs_read(const char *path, struct train_settings *t, setting_mask *given, struct file_read *f,
		   char **err);
int axolotl_read(const char *path, struct train_settings *t, setting_mask *given, struct file_read *f, char **err);

enum { DT_BF16_AMP = 1, DT_FP16_AMP = 2 };
/* What the tools do once the command line's settings are in over the files' (cli: the
 * settings it gave): a sharded QLoRA skips prepare_model_for_kbit_training, and FSDP
 * under bf16/fp16 upcasts the trained weights to fp32 shards with a MixedPrecisionPolicy
 * in the 16-bit dtype (unless the command line gives the dtype or the policy); what it
 * did said into said. */
void trainargs_settle(struct train_settings *t, setting_mask cli, const struct file_read *f, struct strbuf *said);

#endif
