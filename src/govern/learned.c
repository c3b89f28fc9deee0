/* Learned profiles: a cache over the store of what each job signature and class is
 * known to need, what this build's jobs teach it, and writing that back. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "govern/admit.h"
#include "govern/gov.h"
#include "govern/governor.h"
#include "govern/signature.h"
#include "profile/curve.h"
#include "util/grow.h"
#include "util/path.h"
#include "util/log.h"
#include "util/xalloc.h"

static int add_file(const char *key, uint64_t peak_bytes, void *arg)
{
	struct learned *l = arg;
	char *k = xstrdup(key);

	ARRAY_GROW(l->files, l->nfiles + 1, l->capfiles);
	l->files[l->nfiles++] = (struct class_file){ k, path_base(k + strlen(l->key) + 4), peak_bytes };
	return 0;
}

static int by_file_name(const void *a, const void *b)
{
	const struct class_file *x = a, *y = b;
	int c = strcmp(x->name, y->name);

	return c ? c : strcmp(x->key, y->key);
}

/* Read the class's files from the store, once. */
static void class_files(struct gov *g, struct learned *l)
{
	int rc;

	if (l->files_read || !g->o->store)
		return;
	l->files_read = 1;
	rc = store_each_file(g->o->store, l->key, add_file, l);
	if (rc)
		log_debug("class %s: the store's files could not be read (%s)", l->key, strerror(-rc));
	if (l->nfiles > 1)
		qsort(l->files, l->nfiles, sizeof(*l->files), by_file_name);
}

/* A class the store knows, as its files predict it (ADMIT_CLASS_PCT). Not in tree mode,
 * whose classes keep an envelope of their jobs: a job killed there fails the build. */
static void class_from_files(struct gov *g, struct learned *l)
{
	uint64_t *peaks;
	struct learned *f;

	if (gov_tree_jobs(g))
		return;
	class_files(g, l);
	if (!l->nfiles)
		return;
	peaks = xmalloc(l->nfiles * sizeof(*peaks));
	for (size_t i = 0; i < l->nfiles; i++)
		peaks[i] = l->files[i].peak_bytes;
	f = learned_get(g, PROFILE_SIG, l->files[admit_class_pick(peaks, l->nfiles)].key);
	free(peaks);
	if (!f->known)
		return;
	l->p.curve = f->p.curve;
	log_debug("class %s: predicted from its file at the %d%% peak of %zu (%llu MiB)", l->key, ADMIT_CLASS_PCT,
		  l->nfiles, (unsigned long long)(l->p.curve.peak_bytes >> 20));
}

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
	if (g->o->store && store_get(g->o->store, kind, key, &l->p) == 0) {
		l->known = 1;
		if (kind == PROFILE_CLASS)
			class_from_files(g, l);
	}
	return l;
}

/* The known signature l is of j's class, and its source is j's twin. */
static int is_twin(const struct learned *l, const struct job *j)
{
	size_t n = strlen(j->class_key);

	return l->kind == PROFILE_SIG && l->known && !strncmp(l->key, j->class_key, n) &&
	       !strncmp(l->key + n, " :: ", 4) && job_src_twins(l->key + n + 4, j->src);
}

/* Bring j's twins that the store knows into the cache (learned_get). */
static void twins_from_store(struct gov *g, struct job *j)
{
	struct learned *cl = learned_get(g, PROFILE_CLASS, j->class_key);
	size_t len = strlen(cl->key), lo = 0, hi;
	const char *name = path_base(j->src);

	class_files(g, cl);
	hi = cl->nfiles;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (strcmp(cl->files[mid].name, name) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (; lo < cl->nfiles && !strcmp(cl->files[lo].name, name); lo++)
		if (strcmp(cl->files[lo].key + len + 4, j->src))
			learned_get(g, PROFILE_SIG, cl->files[lo].key);
}

/* j->twins: the mean of its twins' curves, learned in this build or known to the store.
 * How many twins it has. */
static int twins_mean(struct gov *g, struct job *j)
{
	int n = 0;

	twins_from_store(g, j);
	for (size_t i = 0; i < g->ncache; i++) {
		const struct curve *c = &g->cache[i]->p.curve;
		if (!is_twin(g->cache[i], j))
			continue;
		/* a running mean: n twins so far, this one more */
		if (n)
			curve_merge(&j->twins, n, c, 1, 0);
		else
			j->twins = *c;
		n++;
	}
	if (!n)
		return 0;
	log_debug("job %d (%s) predicted from %d twin%s: peak %llu MiB", j->id, j->src, n, n == 1 ? "" : "s",
		  (unsigned long long)(j->twins.peak_bytes >> 20));
	return n;
}

void learned_predict(struct gov *g, struct job *j)
{
	struct learned *l = learned_get(g, PROFILE_SIG, j->sig_key);

	j->pred_own = l->known;
	if (l->known) {
		j->pred = &l->p.curve;
		return;
	}
	if (*j->src && twins_mean(g, j)) {
		j->pred = &j->twins;
		return;
	}
	l = learned_get(g, PROFILE_CLASS, j->class_key);
	j->pred = l->known || l->provisional ? &l->p.curve : NULL;
}

int learned_pred_open(struct gov *g, const struct job *j)
{
	struct learned *l;

	if (!j->pred || j->pred_own || j->pred == &j->twins)
		return 0;
	l = learned_get(g, PROFILE_CLASS, j->class_key);
	return l->provisional && j->pred == &l->p.curve;
}

/* A signature learned: the waiting and running jobs that are its twins, predicted from
 * their class or fewer twins, take it in. */
static void twins_learned(struct gov *g, const struct learned *l)
{
	for (size_t i = 0; i < g->njobs; i++) {
		struct job *o = g->jobs[i];
		if ((o->state == JOB_WAITING || o->state == JOB_RUNNING) && o->pred && !o->pred_own &&
		    is_twin(l, o))
			learned_predict(g, o);
	}
}

static struct admit_obs obs_of(const struct job *j, int64_t now)
{
	return (struct admit_obs){ j->samples, j->nsamples, job_elapsed(j, now), job_sig_peaks(j->class_key) };
}

void learned_provisional(struct gov *g, int64_t now)
{
	struct admit_obs *obs = xmalloc((g->njobs ? g->njobs : 1) * sizeof(*obs));
	int *passed = xmalloc((g->njobs ? g->njobs : 1) * sizeof(*passed));

	for (size_t i = 0; i < g->njobs; i++) {
		struct job *j = g->jobs[i];
		if (j->state != JOB_RUNNING || j->passed_peak || !j->nsamples)
			continue;
		struct admit_obs o = obs_of(j, now);
		if (admit_passed_peak(&o)) {
			uint64_t peak = curve_samples_max(j->samples, j->nsamples);

			j->passed_peak = 1;
			if (peak > g->seen_peak_bytes)
				g->seen_peak_bytes = peak;
		}
	}
	for (size_t i = 0; i < g->njobs; i++) {
		struct job *j = g->jobs[i];
		size_t n = 0;
		int first = 1;

		if (j->state != JOB_RUNNING || !j->passed_peak)
			continue;
		/* each class once: at its first running job that passed its peak */
		for (size_t k = 0; k < i && first; k++)
			first = !(g->jobs[k]->state == JOB_RUNNING && g->jobs[k]->passed_peak &&
				  !strcmp(g->jobs[k]->class_key, j->class_key));
		struct learned *l = learned_get(g, PROFILE_CLASS, j->class_key);
		if (!first || l->known)
			continue;
		for (size_t k = 0; k < g->njobs; k++) {
			struct job *o = g->jobs[k];
			if (o->state != JOB_RUNNING || !o->nsamples || strcmp(o->class_key, j->class_key))
				continue;
			obs[n] = obs_of(o, now);
			passed[n++] = o->passed_peak;
		}
		struct curve c;
		if (admit_provisional(obs, passed, n, &c)) {
			l->p.curve = c;
			l->provisional = 1;
		}
	}
	free(obs);
	free(passed);
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
		l->provisional = 0;
		l->p.runs++;
		l->p.updated_s = (int64_t)time(NULL);
		l->known = 1;
		/* The store folds the observation itself, into its row as it is when saved. */
		if (g->o->store)
			store_learn(g->o->store, l->kind, l->key, seen, how[i].keep_pct, how[i].floor || j->tree);
		if (l->kind == PROFILE_SIG)
			twins_learned(g, l);
	}
}

void learned_save(struct gov *g)
{
	int rc;

	if (!g->o->store)
		return;
	rc = store_flush(g->o->store);
	if (rc == -EBUSY)
		log_warn("the profile store is locked by another process; what this build learned is not saved");
	else if (rc)
		log_warn("could not write the profile store (%s); what this build learned is lost", strerror(-rc));
}

/* A store another process holds is tried again after this many saves' time: its holder
 * (another build folding its jobs) takes a while, and each try costs a lookup's wait. */
#define LEARNED_SAVE_BUSY_WAITS 9

void learned_save_soon(struct gov *g, int64_t now)
{
	int rc;

	if (!g->o->store || g->saves_off || now - g->last_save_ms < LEARNED_SAVE_EVERY_MS)
		return;
	g->last_save_ms = now;
	rc = store_flush_within(g->o->store, STORE_LOOKUP_WAIT_MS);
	if (rc == -EBUSY) /* held by another process: try again much later */
		g->last_save_ms = now + LEARNED_SAVE_BUSY_WAITS * LEARNED_SAVE_EVERY_MS;
	else if (rc) {
		g->saves_off = 1; /* read-only, full...: the end's save says so */
		log_debug("saving what was learned so far: %s", strerror(-rc));
	}
}

/* A peak between two samples still shows in maxrss_bytes. */
void learned_job_done(struct gov *g, struct job *j, int64_t ran_ms, uint64_t maxrss_bytes)
{
	struct curve seen;

	if (ran_ms > g->longest_done_ms)
		g->longest_done_ms = ran_ms;
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
	if (j->not_learned) {
		log_info("job %d (%s) not learned: %s", j->id, *j->src ? j->src : j->tool, j->not_learned);
		/* a link or an archive step is no compile to learn: not worth a line */
		if (j->not_learned != job_not_compile_why)
			report_not_learned(&g->rep, j->not_learned);
	} else {
		learn(g, j, &seen);
		if (seen.peak_bytes > g->seen_peak_bytes)
			g->seen_peak_bytes = seen.peak_bytes;
	}
	struct report_job rj = {
		.class_key = j->class_key,
		.peak_bytes = seen.peak_bytes,
		.duration_ms = ran_ms,
		.start_ms = j->t_admit_ms - g->t0_ms,
		.seq = j->id,
		.compile = admit_is_compile_job(j->tool, *j->src != 0, ran_ms, seen.peak_bytes),
		.curve = seen,
	};
	report_add_job(&g->rep, &rj);
}

void learned_free(struct gov *g)
{
	for (size_t i = 0; i < g->ncache; i++) {
		for (size_t k = 0; k < g->cache[i]->nfiles; k++)
			free(g->cache[i]->files[k].key);
		free(g->cache[i]->files);
		free(g->cache[i]->key);
		free(g->cache[i]);
	}
	free(g->cache);
}
