/* What a plan assumed, said before its numbers: the text's "assumed:" lines and the JSON
 * "assumed" object. The settings' rows say theirs (plan/settings.h: struct setting's
 * assumed and said); this module adds what the model makes of them (each kind of
 * tensor's dtype, the attention, a multimodal config's towers, the experts, what a
 * family's plan assumes of its code) and puts the lines in their order. Pure. */
#ifndef HEADROOM_PLAN_ASSUMED_H
#define HEADROOM_PLAN_ASSUMED_H

#include <jansson.h>

#include "plan/settings.h"
#include "plan/shape.h"

struct strbuf;

/* The "assumed:" lines of m under t into sb, the first begun with label ("assumed"),
 * the others indented under its text, each ended by a newline. */
void plan_assumed_text(struct strbuf *sb, const char *label, const struct model_shape *m,
		       const struct train_settings *t, const struct said_ctx *c);
/* The "assumed" object (the setting solved for, c->solving, null); the caller decrefs. */
json_t *plan_assumed_json(const struct model_shape *m, const struct train_settings *t, const struct said_ctx *c);

#endif
