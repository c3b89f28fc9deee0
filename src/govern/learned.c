/* Learned profiles: a cache over the store of what each job signature and class is
 * known to need, what this build's jobs teach it, and writing that back. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "govern/gov.h"
#include "govern/governor.h"
#include "util/grow.h"
#include "util/log.h"
#include "util/xalloc.h"

struct learned *learned_get(struct gov *g, enum profile_kind kind, const char *key)
{
	struct learned *l;

	for (size_t i = 0; i < g->ncache; i++)
		if (g->cache[i]->kind == kind && !strcmp(g->cache[i]->key, key))
			return g->cache[i];
	ARRAY_GROW(g->cache, g->ncache + 1, g->capcache);
	/* One allocation each: jobs keep pointers to the curves. */
	l = xcalloc(1, sizeof(*l));
	g->cache[g->ncache++] = l;
	l->kind = kind;
	l->key = xstrdup(key);
	if (g->o->store && store_get(g->o->store, kind, key, &l->p) == 0)
		l->known = 1;
	return l;
}

void learned_predict(struct gov *g, struct job *j)
{
	struct learned *l = learned_get(g, PROFILE_SIG, j->sig_key);

	if (!l->known)
		l = learned_get(g, PROFILE_CLASS, j->class_key);
	j->pred = l->known ? &l->p.curve : NULL;
}

static void learn(struct gov *g, struct job *j, const struct curve *seen)
{
	static const struct { enum profile_kind kind; int keep_pct, floor; } how[] = {
		{ PROFILE_SIG, 50, 1 }, { PROFILE_CLASS, 80, 0 },
	};

	for (size_t i = 0; i < 2; i++) {
		struct learned *l = learned_get(g, how[i].kind, how[i].kind == PROFILE_SIG ? j->sig_key : j->class_key);
		/* Without launchers a job killed for memory fails the build: classes then keep
		 * an envelope of their jobs rather than their mean. */
		curve_learn(&l->p.curve, seen, !l->known, how[i].keep_pct, how[i].floor || j->tree);
		l->p.runs++;
		l->p.updated_s = (int64_t)time(NULL);
		l->known = l->dirty = 1;
	}
}

void learned_save(struct gov *g)
{
	struct store *st = g->o->store;
	int n = 0;

	if (!st)
		return;
	if (store_begin(st)) {
		log_warn("could not write the profile store; what this build learned is lost");
		return;
	}
	for (size_t i = 0; i < g->ncache; i++) {
		struct learned *l = g->cache[i];
		if (l->dirty && !store_put(st, l->kind, l->key, &l->p))
			n++;
	}
	if (store_commit(st))
		log_warn("could not write the profile store; what this build learned is lost");
	else
		log_debug("saved %d profiles", n);
}

/* A peak between two samples still shows in maxrss_bytes. */
void learned_job_done(struct gov *g, struct job *j, int64_t ran_ms, uint64_t maxrss_bytes)
{
	struct curve seen;

	if (!j->nsamples) /* over before its first sample */
		job_add_sample(j, 0, j->peak_bytes);
	if (curve_from_samples(j->samples, j->nsamples, ran_ms, &seen))
		return;
	if (maxrss_bytes > seen.peak_bytes) {
		for (int i = 0; i < CURVE_POINTS; i++)
			if (seen.pts[i] == seen.peak_bytes)
				seen.pts[i] = maxrss_bytes;
		seen.peak_bytes = maxrss_bytes;
	}
	g->rep.not_learned += j->not_learned != NULL;
	if (j->not_learned)
		log_info("job %d (%s) not learned: %s", j->id, *j->src ? j->src : j->tool, j->not_learned);
	else
		learn(g, j, &seen);
	report_add_job(&g->rep, j->class_key, seen.peak_bytes, ran_ms);
}

void learned_free(struct gov *g)
{
	for (size_t i = 0; i < g->ncache; i++) {
		free(g->cache[i]->key);
		free(g->cache[i]);
	}
	free(g->cache);
}
