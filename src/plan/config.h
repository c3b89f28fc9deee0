/* Reading a model's shape from a Hugging Face config.json, and training settings from
 * the JSON keys of the fixtures' "train" objects. */
#ifndef HEADROOM_PLAN_CONFIG_H
#define HEADROOM_PLAN_CONFIG_H

#include <jansson.h>

#include "plan/model.h"

/* 0, or -EINVAL with *err (caller frees) naming the missing or bad field. */
int model_shape_from_json(json_t *cfg, struct model_shape *m, char **err);
/* Apply the keys present in obj over t. 0 or -EINVAL with *err. */
int train_settings_from_json(json_t *obj, struct train_settings *t, char **err);
/* Bytes per weight of "fp32" (4), "bf16" or "fp16" (2); 0 for anything else. */
int param_dtype_bytes(const char *s);
/* "queue=50x100MB" into a buffer (SIZE as size_parse reads it: 100MB is 10^8 bytes).
 * 0, -EDOM (SIZE without its unit) or -EINVAL. */
int buffer_spec_parse(const char *s, struct buffer_spec *b);
/* One part to freeze, "embed", "lm_head" or "layers:A-B" (or "layers:A"), onto t
 * (layer ranges are checked against the model by plan_check). 0 or -EINVAL. */
int freeze_parse(const char *s, struct train_settings *t);
/* A comma-separated list of freeze_parse's parts. 0 or -EINVAL. */
int freeze_list_parse(const char *s, struct train_settings *t);
/* PYTORCH_CUDA_ALLOC_CONF's modelled option: "expandable_segments:True" (1) or
 * ":False" (0) into *expandable. 0 or -EINVAL for anything else. */
int alloc_conf_parse(const char *s, int *expandable);
/* "q,k,v,o,gate,up,down" (or "all") into LORA_* bits; 0 or -EINVAL. */
int lora_targets_parse(const char *s, unsigned *bits);
/* LORA_* bits as lora_targets_parse takes them, "q,k,v,o", into buf (n bytes). */
const char *lora_targets_text(unsigned bits, char *buf, size_t n);

#endif
