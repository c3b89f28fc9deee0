/* A plan and, when it does not fit with the margin, its hint (plan/hint.h): what
 * `headroom plan` prints. Where the plan's plain run shows early that it will not fit
 * (its live segments pass the card, or leave less than the margin), the hint's plans
 * start then, on another thread, while the plan runs on to its whole figures: a plan
 * that does not fit costs little more than one that does. The same answer as fit_plan
 * then hint_find. */
#ifndef HEADROOM_PLAN_ADVISE_H
#define HEADROOM_PLAN_ADVISE_H

#include <stddef.h>

#include "plan/hint.h"

/* fit_plan into *r (0, or its error with *why), and hint_find into *h where r does not
 * fit_ok (else h is zeroed). */
int plan_advise(const struct fit *f, const struct model_shape *m, const struct train_settings *t,
		const char *const *locks, size_t nlocks, struct plan_result *r, struct hint *h, const char **why);

#endif
