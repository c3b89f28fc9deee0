/* Settings from the files users already have: a Hugging Face TrainingArguments JSON (as
 * to_json_string / trainer.save_state write it) and an axolotl YAML config, each key
 * mapped through the settings table (plan/settings.h) onto the planner's settings. A key
 * that changes no memory is ignored only when it is on the reader's list of such keys;
 * a key that changes memory but cannot be planned (DeepSpeed offload, an unknown
 * optimizer) is an error naming it and what to do; any other unknown key is refused
 * too, so that nothing is silently left out. Pure but for reading the file. */
#ifndef HEADROOM_PLAN_TRAINARGS_H
#define HEADROOM_PLAN_TRAINARGS_H

#include <jansson.h>

#include "plan/settings.h"

/* A TrainingArguments JSON object over t. 0, or -EINVAL with *err (caller frees). */
int trainargs_from_json(json_t *obj, struct train_settings *t, setting_mask *given, char **err);
/* An axolotl config (YAML read as a JSON object of strings, lists and objects) over t. */
int axolotl_from_json(json_t *obj, struct train_settings *t, setting_mask *given, char **err);
/* The files at path, read and applied as above. 0, or -EINVAL / -errno with *err. */
int trainargs_read(const char *path, struct train_settings *t, setting_mask *given, char **err);
int axolotl_read(const char *path, struct train_settings *t, setting_mask *given, char **err);

#endif
