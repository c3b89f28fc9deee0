#include "plan/solve.h"

#include <errno.h>
#include <stddef.h>
#include <string.h>

/* The whole-number settings a plan can be solved for, in the order they are listed;
 * the buffers' counts follow as "buffer:NAME". */
static const struct knob {
	const char *name;
	size_t offset;   /* of its int64_t in struct train_settings */
} knobs[] = {
	{ "batch", offsetof(struct train_settings, batch) },
	{ "seq", offsetof(struct train_settings, seq) },
	{ "loss_chunk", offsetof(struct train_settings, loss_chunk) },
	{ "lora_rank", offsetof(struct train_settings, lora_rank) },
	{ "context", offsetof(struct train_settings, context) },
};

#define NKNOBS (sizeof(knobs) / sizeof(knobs[0]))
#define BUFFER_PREFIX "buffer:"

int fit_plan(const struct fit *f, const struct model_shape *m, const struct train_settings *t,
	     struct plan_result *r, const char **why)
{
	struct train_settings on_gpu = *t;

	if (f->gpu_bytes) {
		uint64_t ctx = t->context_bytes ? t->context_bytes : plan_default_context_bytes();
		uint64_t keep = f->margin_bytes + ctx;
		on_gpu.limit_bytes = f->gpu_bytes > keep ? f->gpu_bytes - keep : 1;
	}
	return plan_compute(m, &on_gpu, r, why);
}

int fit_ok(const struct fit *f, const struct plan_result *r)
{
	return r->device_peak_bytes + f->margin_bytes <= f->gpu_bytes;
}

const char *knob_name(size_t i)
{
	if (i < NKNOBS)
		return knobs[i].name;
	return i == NKNOBS ? BUFFER_PREFIX "NAME" : NULL;
}

int64_t *knob_of(struct train_settings *t, const char *name)
{
	size_t prefix = strlen(BUFFER_PREFIX);

	for (size_t i = 0; i < NKNOBS; i++)
		if (!strcmp(name, knobs[i].name))
			return (int64_t *)((char *)t + knobs[i].offset);
	if (!strncmp(name, BUFFER_PREFIX, prefix))
		for (size_t i = 0; i < t->nbuffers; i++)
			if (!strcmp(t->buffers[i].name, name + prefix))
				return &t->buffers[i].count;
	return NULL;
}

int knob_locks_check(struct train_settings *t, const char *const *locks, size_t nlocks, const char *solving,
		     const char **bad)
{
	for (size_t i = 0; i < nlocks; i++) {
		*bad = locks[i];
		if (!knob_of(t, locks[i]))
			return -ENOENT;
		if (solving && !strcmp(locks[i], solving))
			return -EPERM;
	}
	*bad = NULL;
	return 0;
}

/* Plan t with its knob k at v; 1 when it fits, 0 when not, or -EINVAL. */
static int fits_with(const struct fit *f, const struct model_shape *m, struct train_settings *t, int64_t *k,
		     int64_t v, struct plan_result *r, const char **why)
{
	int rc;

	*k = v;
	rc = fit_plan(f, m, t, r, why);
	return rc ? rc : fit_ok(f, r);
}

int solve_knob(const struct fit *f, const struct model_shape *m, const struct train_settings *t, const char *knob,
	       struct solve_result *r, const char **why)
{
	struct train_settings s = *t;
	struct plan_result p;
	int64_t *k = knob_of(&s, knob), lo = 0, hi = 1;
	const int64_t cap = (int64_t)1 << 30;
	int rc = 0;

	memset(r, 0, sizeof(*r));
	*why = NULL;
	if (!k)
		return -ENOENT;
	while (hi < cap && (rc = fits_with(f, m, &s, k, hi, &p, why)) > 0) {
		lo = hi;
		r->plan = p;
		hi *= 2;
	}
	if (rc < 0)
		return rc;
	while (hi - lo > 1) {
		int64_t mid = lo + (hi - lo) / 2;
		rc = fits_with(f, m, &s, k, mid, &p, why);
		if (rc < 0)
			return rc;
		if (rc) {
			lo = mid;
			r->plan = p;
		} else {
			hi = mid;
		}
	}
	rc = fits_with(f, m, &s, k, lo + 1, &r->next, why);
	if (rc < 0)
		return rc;
	r->value = lo;
	return 0;
}
