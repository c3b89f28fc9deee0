#include <stdio.h>

#include "govern/report.h"

#include "govern/admit.h"

#include <stdlib.h>
#include <string.h>

#include "util/escape.h"
#include "util/grow.h"
#include "util/units.h"
#include "util/xalloc.h"

void report_add_job(struct report *r, const struct report_job *j)
{
	ARRAY_GROW(r->jobs, r->njobs + 1, r->cap);
	r->jobs[r->njobs] = *j;
	/* file names and flags are bytes: the report, trace and record are JSON */
	r->jobs[r->njobs++].class_key = esc_dup(esc_utf8, j->class_key);
}

void report_add_point(struct report *r, const struct report_point *p)
{
	ARRAY_GROW(r->timeline, r->npoints + 1, r->cappoints);
	r->timeline[r->npoints++] = *p;
}

const char *const report_held_key[REPORT_HELD_N] = {
	[REPORT_HELD_PACE] = NULL,
	[REPORT_HELD_BUDGET] = "budget",
	[REPORT_HELD_FREE] = "others",
	[REPORT_HELD_NET] = "safety_net",
};

/* The text for each reason, as the summary names it. */
static const char *const held_text[REPORT_HELD_N] = {
	[REPORT_HELD_BUDGET] = "the budget",
	[REPORT_HELD_FREE] = "memory others hold",
	[REPORT_HELD_NET] = "the safety net",
};

void report_add_wait_held(struct report_waits *w, int64_t waited_ms, const int64_t *held_ms)
{
	if (waited_ms <= 0)
		return;
	report_add_wait(w, waited_ms);
	for (int k = 0; k < REPORT_HELD_N; k++)
		w->held_ms[k] += held_ms[k];
}

void report_add_wait(struct report_waits *w, int64_t waited_ms)
{
	if (waited_ms <= 0)
		return;
	w->jobs++;
	w->total_ms += waited_ms;
	if (waited_ms > w->longest_ms)
		w->longest_ms = waited_ms;
}

void report_note_tick(struct report *r, const struct report_tick *t)
{
	struct report_over *o = &r->over;
	int was = o->in_spell;

	r->frozen_ms += t->frozen * t->dt_ms;
	/* what the net did since the last tick, while the spell lasted */
	if (was) {
		o->freezes += r->freezes - o->seen_freezes;
		o->kills += r->kills - o->seen_kills;
	}
	o->seen_freezes = r->freezes;
	o->seen_kills = r->kills;
	o->in_spell = r->budget_bytes && t->jobs_bytes > r->budget_bytes;
	if (!o->in_spell)
		return;
	o->times += !was;
	if (t->jobs_bytes - r->budget_bytes > o->most_bytes) {
		o->most_bytes = t->jobs_bytes - r->budget_bytes;
		if (t->grew_job) {
			free(o->grew_job);
			o->grew_job = esc_dup(esc_utf8, t->grew_job);
			o->grew_bytes = t->grew_bytes;
			o->grew_unknown = t->grew_unknown;
		}
	}
	o->total_ms += t->dt_ms;
	if (t->running <= 1)
		o->alone_ms += t->dt_ms;
}

void report_add_span(struct report *r, const struct report_span *s)
{
	struct report_span *d;

	ARRAY_GROW(r->spans, r->nspans + 1, r->capspans);
	d = &r->spans[r->nspans++];
	*d = *s;
	d->name = esc_dup(esc_utf8, s->name);
	d->class_key = esc_dup(esc_utf8, s->class_key);
	d->samples = xmalloc((s->nsamples ? s->nsamples : 1) * sizeof(*s->samples));
	if (s->nsamples)
		memcpy(d->samples, s->samples, s->nsamples * sizeof(*s->samples));
}

static int cmp_desc(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return (x < y) - (x > y);
}

/* The build tool's order: a fixed -jN build starts its jobs in the order it asks for them,
 * not in the order the governor let them run (longest first). */
static int by_request(const void *a, const void *b)
{
	const struct report_job *x = *(const struct report_job *const *)a, *y = *(const struct report_job *const *)b;
	if (x->seq != y->seq)
		return (x->seq > y->seq) - (x->seq < y->seq);
	return (x->start_ms > y->start_ms) - (x->start_ms < y->start_ms);
}

static size_t compile_jobs(const struct report *r)
{
	size_t n = 0;

	for (size_t i = 0; i < r->njobs; i++)
		n += r->jobs[i].compile != 0;
	return n;
}

/* The compile jobs' curves in the order the build tool asked for them; *n how many.
 * Caller frees. */
static const struct curve **compile_curves(const struct report *r, size_t *n)
{
	const struct report_job **v = xmalloc((r->njobs ? r->njobs : 1) * sizeof(*v));
	const struct curve **c = xmalloc((r->njobs ? r->njobs : 1) * sizeof(*c));

	*n = 0;
	for (size_t i = 0; i < r->njobs; i++)
		if (r->jobs[i].compile)
			v[(*n)++] = &r->jobs[i];
	qsort(v, *n, sizeof(*v), by_request);
	for (size_t i = 0; i < *n; i++)
		c[i] = &v[i]->curve;
	free(v);
	return c;
}

int report_completed(const struct report *r)
{
	return r->exit_status == 0;
}

int report_fixed_cap(const struct report *r)
{
	if (r->jobs_cap > 0 && r->cpus > 0)
		return r->jobs_cap < r->cpus ? r->jobs_cap : r->cpus;
	return r->jobs_cap > 0 ? r->jobs_cap : r->cpus;
}

int report_safe_max_jobs(const struct report *r)
{
	const struct curve **c;
	size_t n = compile_jobs(r);
	int safe, cap = report_fixed_cap(r);
	uint64_t budget = r->fixed_budget_bytes ? r->fixed_budget_bytes : r->budget_bytes;

	if (!report_completed(r) || n < 2 || !budget || (cap && cap < 2))
		return 0;
	c = compile_curves(r, &n);
	safe = admit_safe_fixed_jobs(c, n, budget);
	free(c);
	return cap && safe > cap ? cap : safe;
}

int report_oom_avoided(const struct report *r)
{
	if (!report_completed(r) || !compile_jobs(r) || r->jobs_cap < 1 || !r->limit_bytes)
		return -1;
	return report_fixed_peak_bytes(r, r->jobs_cap) > r->limit_bytes && !r->oom_kills;
}

uint64_t report_fixed_peak_bytes(const struct report *r, int slots)
{
	size_t n;
	const struct curve **c = compile_curves(r, &n);
	uint64_t peak = admit_replay_peak(c, n, slots);

	free(c);
	return peak;
}

int64_t report_fixed_wall_ms(const struct report *r, int slots)
{
	size_t n;
	const struct curve **c = compile_curves(r, &n);
	int64_t wall = admit_replay_wall_ms(c, n, slots);

	free(c);
	return wall;
}

int report_fixed_wall_fair(const struct report *r)
{
	return !r->cpus || r->jobs_cap <= r->cpus;
}

int64_t report_compile_wall_ms(const struct report *r)
{
	int64_t first = INT64_MAX, last = 0;

	for (size_t i = 0; i < r->njobs; i++) {
		const struct report_job *j = &r->jobs[i];
		if (!j->compile)
			continue;
		if (j->start_ms < first)
			first = j->start_ms;
		if (j->start_ms + j->duration_ms > last)
			last = j->start_ms + j->duration_ms;
	}
	return first == INT64_MAX ? 0 : last - first;
}

const char *report_knob_for(char *const *argv)
{
	for (char *const *a = argv; a && *a; a++) {
		const char *base = strrchr(*a, '/');
		base = base ? base + 1 : *a;
		if (!strcmp(base, "setup.py") || !strncmp(base, "pip", 3) ||
		    (!strcmp(*a, "-m") && a[1] && !strcmp(a[1], "build")))
			return "MAX_JOBS";
	}
	return "-j";
}

uint64_t report_class_percentile(const struct report *r, const char *class_key, int pct)
{
	uint64_t *p = xmalloc((r->njobs ? r->njobs : 1) * sizeof(*p)), v;
	size_t n = 0;

	for (size_t i = 0; i < r->njobs; i++)
		if (!strcmp(r->jobs[i].class_key, class_key))
			p[n++] = r->jobs[i].peak_bytes;
	if (!n) {
		free(p);
		return 0;
	}
	qsort(p, n, sizeof(*p), cmp_desc);
	/* nearest rank on the descending list */
	size_t rank = (size_t)((100 - pct) * (double)n / 100.0);
	if (rank >= n)
		rank = n - 1;
	v = p[rank];
	free(p);
	return v;
}

/* Distinct classes in first-seen order; returns how many, *out owned (strings borrowed). */
static size_t classes(const struct report *r, const char ***out)
{
	const char **v = xmalloc((r->njobs ? r->njobs : 1) * sizeof(*v));
	size_t n = 0;

	for (size_t i = 0; i < r->njobs; i++) {
		size_t k;
		for (k = 0; k < n && strcmp(v[k], r->jobs[i].class_key); k++)
			;
		if (k == n)
			v[n++] = r->jobs[i].class_key;
	}
	*out = v;
	return n;
}

static json_t *waits_json(const struct report_waits *w, int held)
{
	json_t *o = json_pack("{s:i, s:I, s:I}", "jobs", w->jobs, "total_ms", (json_int_t)w->total_ms, "longest_ms",
			      (json_int_t)w->longest_ms);

	if (held) {
		json_t *h = json_object();
		for (int k = 0; k < REPORT_HELD_N; k++)
			if (report_held_key[k])
				json_object_set_new(h, report_held_key[k], json_integer((json_int_t)w->held_ms[k]));
		json_object_set_new(o, "held_ms", h);
	}
	return o;
}

static json_t *over_json(const struct report_over *o)
{
	json_t *j = json_pack("{s:i, s:I, s:I, s:i, s:i, s:I}", "times", o->times, "total_ms", (json_int_t)o->total_ms,
			      "most_bytes", (json_int_t)o->most_bytes, "freezes", o->freezes, "kills", o->kills,
			      "alone_ms", (json_int_t)o->alone_ms);

	json_object_set_new(j, "grew_job", o->grew_job ? json_string(o->grew_job) : json_null());
	json_object_set_new(j, "grew_bytes", o->grew_job ? json_integer((json_int_t)o->grew_bytes) : json_null());
	json_object_set_new(j, "grew_unpredicted", json_boolean(o->grew_unknown));
	return j;
}

json_t *report_to_json(const struct report *r)
{
	json_t *o = json_object(), *cl = json_array();
	const char **cls;
	size_t n = classes(r, &cls);

	json_object_set_new(o, "format", json_string("headroom-report/1"));
	json_object_set_new(o, "exit_status", json_integer(r->exit_status));
	json_object_set_new(o, "jobs", json_integer((json_int_t)r->njobs));
	json_object_set_new(o, "failed_jobs", json_integer(r->failed_jobs));
	json_object_set_new(o, "wall_ms", json_integer(r->wall_ms));
	json_object_set_new(o, "limit_bytes", r->limit_bytes ? json_integer((json_int_t)r->limit_bytes) : json_null());
	json_object_set_new(o, "limit_source", json_string(r->limit_source ? r->limit_source : "unknown"));
	json_object_set_new(o, "budget_bytes", json_integer((json_int_t)r->budget_bytes));
	json_object_set_new(o, "jobs_cap", json_integer(r->jobs_cap));
	json_object_set_new(o, "cap", json_pack("{s:i, s:o}", "jobs", r->jobs_cap, "from",
						 r->jobs_cap_from ? json_string(r->jobs_cap_from) : json_null()));
	json_object_set_new(o, "not_learned", json_integer(r->not_learned));
	json_t *why = json_object();
	for (size_t i = 0; i < REPORT_WHY_MAX && r->not_learned_why[i].why; i++)
		json_object_set_new(why, r->not_learned_why[i].why, json_integer(r->not_learned_why[i].n));
	json_object_set_new(o, "not_learned_why", why);
	json_object_set_new(o, "mode", r->mode ? json_string(r->mode) : json_null());
	json_object_set_new(o, "tree_fallback", json_boolean(r->tree_fallback));
	json_object_set_new(o, "peak_jobs_bytes", json_integer((json_int_t)r->peak_jobs_bytes));
	json_object_set_new(o, "peak_single_job_bytes", json_integer((json_int_t)report_single_peak_bytes(r)));
	json_object_set_new(o, "peak_unowned_bytes", json_integer((json_int_t)r->peak_unowned_bytes));
	json_object_set_new(o, "peak_group_bytes",
			    r->has_peak_group ? json_integer((json_int_t)r->peak_group_bytes) : json_null());
	json_object_set_new(o, "freezes", json_integer(r->freezes));
	json_object_set_new(o, "thaws", json_integer(r->thaws));
	json_object_set_new(o, "kills", json_integer(r->kills));
	json_object_set_new(o, "requeues", json_integer(r->requeues));
	json_object_set_new(o, "retries", json_integer(r->retries));
	json_object_set_new(o, "oom_kills", json_integer(r->oom_kills));
	json_object_set_new(o, "frozen_ms", json_integer(r->frozen_ms));
	json_object_set_new(o, "waited", json_pack("{s:o, s:o}", "memory", waits_json(&r->wait_memory, 1),
						   "cpu_slot", waits_json(&r->wait_slot, 0)));
	json_object_set_new(o, "over_budget", over_json(&r->over));
	int safe = report_safe_max_jobs(r);
	size_t ncompile = compile_jobs(r);
	json_object_set_new(o, "compile_jobs", json_integer((json_int_t)ncompile));
	json_object_set_new(o, "other_jobs", json_integer((json_int_t)(r->njobs - ncompile)));
	json_object_set_new(o, "safe_fixed_max_jobs", safe ? json_integer(safe) : json_null());
	json_object_set_new(o, "safe_fixed_knob", json_string(r->knob ? r->knob : "-j"));
	json_object_set_new(o, "completed", json_boolean(report_completed(r)));
	json_object_set_new(o, "cpus", r->cpus ? json_integer(r->cpus) : json_null());
	json_object_set_new(o, "safe_fixed_cap", report_fixed_cap(r) ? json_integer(report_fixed_cap(r)) : json_null());
	int avoided = report_oom_avoided(r);
	json_object_set_new(o, "oom_avoided", avoided < 0 ? json_null() : json_boolean(avoided));
	/* the side-by-side: the build as it asked (jobs_cap at once) and at the safe fixed count */
	json_object_set_new(o, "plain_peak_bytes",
			    ncompile && r->jobs_cap > 0 ? json_integer((json_int_t)report_fixed_peak_bytes(r, r->jobs_cap))
							 : json_null());
	json_object_set_new(o, "safe_fixed_budget_bytes",
			    json_integer((json_int_t)(r->fixed_budget_bytes ? r->fixed_budget_bytes : r->budget_bytes)));
	json_object_set_new(o, "safe_fixed_peak_bytes",
			    safe ? json_integer((json_int_t)report_fixed_peak_bytes(r, safe)) : json_null());
	json_object_set_new(o, "safe_fixed_wall_ms", safe && report_fixed_wall_fair(r)
			    ? json_integer((json_int_t)report_fixed_wall_ms(r, safe)) : json_null());
	json_object_set_new(o, "compile_wall_ms",
			    ncompile ? json_integer((json_int_t)report_compile_wall_ms(r)) : json_null());
	for (size_t i = 0; i < n; i++) {
		size_t cnt = 0;
		for (size_t k = 0; k < r->njobs; k++)
			cnt += !strcmp(r->jobs[k].class_key, cls[i]);
		json_array_append_new(cl, json_pack("{s:s, s:I, s:I, s:I, s:I}", "class", cls[i],
						    "jobs", (json_int_t)cnt,
						    "peak_p50_bytes", (json_int_t)report_class_percentile(r, cls[i], 50),
						    "peak_p95_bytes", (json_int_t)report_class_percentile(r, cls[i], 95),
						    "peak_max_bytes", (json_int_t)report_class_percentile(r, cls[i], 100)));
	}
	json_object_set_new(o, "classes", cl);
	json_t *tl = json_array();
	for (size_t i = 0; i < r->npoints; i++) {
		const struct report_point *p = &r->timeline[i];
		json_array_append_new(tl, json_pack("{s:I, s:i, s:i, s:i, s:I, s:I}", "t_ms", (json_int_t)p->t_ms,
						    "running", p->running, "frozen", p->frozen, "waiting", p->waiting,
						    "jobs_bytes", (json_int_t)p->jobs_bytes,
						    "used_bytes", (json_int_t)p->used_bytes));
	}
	json_object_set_new(o, "timeline", tl);
	free(cls);
	return o;
}

void report_not_learned(struct report *r, const char *why)
{
	size_t i = 0;

	r->not_learned++;
	while (i < REPORT_WHY_MAX - 1 && r->not_learned_why[i].why && strcmp(r->not_learned_why[i].why, why))
		i++;
	/* the last entry takes every reason past the table's size (there are fewer) */
	if (!r->not_learned_why[i].why)
		r->not_learned_why[i].why = why;
	r->not_learned_why[i].n++;
}

/* "s" after a count that is not 1: "1 job", "2 jobs". */
static const char *plural(long long n)
{
	return n == 1 ? "" : "s";
}

/* The fixed count a user can follow, and whether the build's own count would have fit the
 * memory limit: only for a build that completed, each saying what it compared against. */
static void print_advice(const struct report *r, int safe, FILE *f)
{
	size_t ncompile = compile_jobs(r), other = r->njobs - ncompile;
	int mj = r->knob && !strcmp(r->knob, "MAX_JOBS"), avoided = report_oom_avoided(r);
	char a[32], b[32];

	if (!report_completed(r)) {
		if (r->njobs)
			fprintf(f, "  no advice: the build did not complete (exit status %d), so its jobs are not "
				   "the whole build\n", r->exit_status);
		return;
	}
	if (safe) {
		fprintf(f, "  a fixed %s%s%d would have been safe here: the %zu compile jobs' curves replayed %d at a "
			   "time in their order fit the budget", mj ? "MAX_JOBS" : "-j", mj ? "=" : "", safe, ncompile, safe);
		if (safe == report_fixed_cap(r) && r->cpus && r->cpus < r->jobs_cap)
			fprintf(f, ", and no more: %d CPU%s here", r->cpus, plural(r->cpus));
		else if (safe == report_fixed_cap(r))
			fprintf(f, ", and no more: the cap in force (%s)", r->jobs_cap_from ? r->jobs_cap_from : "unknown");
		if (other)
			fprintf(f, " (%zu probe%s, link%s and trivial job%s not counted)", other, plural((long long)other),
				plural((long long)other), plural((long long)other));
		fputc('\n', f);
	}
	if (avoided < 0)
		return;
	uint64_t plain = report_fixed_peak_bytes(r, r->jobs_cap);
	fprintf(f, "  replayed %d at a time (%s), the compile jobs would have peaked at %s, %s the memory limit "
		   "%s (%s): %s\n", r->jobs_cap, r->jobs_cap_from ? r->jobs_cap_from : "the cap",
		size_format(plain, a, sizeof(a)), plain > r->limit_bytes ? "above" : "within",
		size_format(r->limit_bytes, b, sizeof(b)), r->limit_source ? r->limit_source : "unknown",
		avoided ? "an OOM avoided" : plain > r->limit_bytes ? "OOM kills were seen" : "no OOM avoided");
}

/* A reason held the jobs for less than prints as a tenth of a second: not named. */
#define HELD_SHOWN_MIN_MS 100

/* "3 jobs, 4.2 s in all, longest 2.1 s (held by: the budget 3.0 s, the safety net 1.2 s)" */
static void print_waits(const struct report_waits *w, FILE *f)
{
	const char *sep = " (held by: ";

	fprintf(f, "%d job%s, %.1f s in all, longest %.1f s", w->jobs, plural(w->jobs), w->total_ms / 1000.0,
		w->longest_ms / 1000.0);
	for (int k = 0; k < REPORT_HELD_N; k++) {
		if (!held_text[k] || w->held_ms[k] < HELD_SHOWN_MIN_MS)
			continue;
		fprintf(f, "%s%s %.1f s", sep, held_text[k], w->held_ms[k] / 1000.0);
		sep = ", ";
	}
	if (*sep == ',')
		fputc(')', f);
}

/* The jobs' memory above the budget: how often, why, and what the net did. */
static void print_over(const struct report *r, FILE *f)
{
	const struct report_over *o = &r->over;
	char a[32], b[32];

	if (!o->times)
		return;
	fprintf(f, "  over the budget: %d time%s, %.1f s in all, by at most %s", o->times, plural(o->times),
		o->total_ms / 1000.0, size_format(o->most_bytes, a, sizeof(a)));
	if (o->grew_job && o->grew_unknown)
		fprintf(f, ": %s, admitted with no prediction, grew to %s after admission", o->grew_job,
			size_format(o->grew_bytes, b, sizeof(b)));
	else if (o->grew_job)
		fprintf(f, ": %s grew %s past its prediction after admission", o->grew_job,
			size_format(o->grew_bytes, b, sizeof(b)));
	if (o->kills)
		fprintf(f, "; the net froze jobs %d time%s and killed %d to run again\n", o->freezes, plural(o->freezes),
			o->kills);
	else if (o->freezes)
		fprintf(f, "; the net froze jobs %d time%s until it fit\n", o->freezes, plural(o->freezes));
	else if (o->alone_ms)
		fprintf(f, "; the net froze none: one job ran alone (the last one running is never frozen)\n");
	else
		fprintf(f, "; the net froze none: the jobs came back under it before it acted\n");
}

/* A class name is never cut: one longer than the column is printed whole on a line of
 * its own, its figures on the next. */
static void print_class(const struct report *r, const char *cls, FILE *f)
{
	enum { COLUMN = 40 };
	char a[32], b[32], c[32];
	size_t cnt = 0;

	for (size_t k = 0; k < r->njobs; k++)
		cnt += !strcmp(r->jobs[k].class_key, cls);
	if (strlen(cls) > COLUMN)
		fprintf(f, "  %s\n", cls);
	fprintf(f, "  %-*s %4zu job%s peak p50 %s  p95 %s  max %s\n", COLUMN, strlen(cls) > COLUMN ? "" : cls, cnt,
		cnt == 1 ? " " : "s ", size_format(report_class_percentile(r, cls, 50), a, sizeof(a)),
		size_format(report_class_percentile(r, cls, 95), b, sizeof(b)),
		size_format(report_class_percentile(r, cls, 100), c, sizeof(c)));
}

uint64_t report_single_peak_bytes(const struct report *r)
{
	uint64_t most = 0;

	for (size_t i = 0; i < r->njobs; i++)
		if (r->jobs[i].peak_bytes > most)
			most = r->jobs[i].peak_bytes;
	return most;
}

void report_print(const struct report *r, FILE *f)
{
	char a[32], b[32];
	const char **cls;
	size_t n = classes(r, &cls);
	int safe = report_safe_max_jobs(r);

	/* a build that failed before any job (no Makefile, a bad target): its own error above
	 * says why; a report of nothing would bury it */
	if (!r->njobs && r->exit_status) {
		fprintf(f, "headroom: the build ended with exit status %d before any job ran (its own output above "
			   "says why)\n", r->exit_status);
		free(cls);
		return;
	}
	fprintf(f, "headroom: %zu job%s%s in %.1f s, exit status %d\n", r->njobs, plural((long long)r->njobs),
		r->failed_jobs ? " (some failed)" : "", r->wall_ms / 1000.0, r->exit_status);
	fprintf(f, "  memory: limit %s (%s), budget %s\n",
		r->limit_bytes ? size_format(r->limit_bytes, a, sizeof(a)) : "unknown",
		r->limit_source ? r->limit_source : "unknown", size_format(r->budget_bytes, b, sizeof(b)));
	/* the three peaks, each as docs/governor.md defines it */
	fprintf(f, "  peaks: jobs together %s, single job %s", size_format(r->peak_jobs_bytes, a, sizeof(a)),
		size_format(report_single_peak_bytes(r), b, sizeof(b)));
	if (r->has_peak_group)
		fprintf(f, ", group %s", size_format(r->peak_group_bytes, a, sizeof(a)));
	if (r->peak_unowned_bytes)
		fprintf(f, ", left running by jobs (no job's, counted against the budget) %s",
			size_format(r->peak_unowned_bytes, a, sizeof(a)));
	if (r->mode)
		fprintf(f, "\n  jobs found: %s%s", r->mode,
			r->tree_fallback ? " (compilers ran outside the launcher: the process tree was governed too)" : "");
	fprintf(f, "\n  at most %d job%s at once (%s)", r->jobs_cap, plural(r->jobs_cap), r->jobs_cap_from ? r->jobs_cap_from : "cap of unknown origin");
	if (r->not_learned) {
		fprintf(f, "; %d job%s not learned (", r->not_learned, plural(r->not_learned));
		for (size_t i = 0; i < REPORT_WHY_MAX && r->not_learned_why[i].why; i++)
			fprintf(f, "%s%d %s", i ? ", " : "", r->not_learned_why[i].n, r->not_learned_why[i].why);
		fputc(')', f);
	}
	if (r->wait_memory.jobs) {
		fprintf(f, "\n  waited for memory (a CPU slot free): ");
		print_waits(&r->wait_memory, f);
	}
	if (r->wait_slot.jobs) {
		fprintf(f, "\n  waited for a CPU slot: ");
		print_waits(&r->wait_slot, f);
	}
	fprintf(f, "\n  actions: %d freeze%s", r->freezes, plural(r->freezes));
	if (r->freezes)
		fprintf(f, " (frozen %.1f s in all)", r->frozen_ms / 1000.0);
	fprintf(f, ", %d thaw%s, %d kill%s", r->thaws, plural(r->thaws), r->kills, plural(r->kills));
	if (r->requeues)
		fprintf(f, " (%d of a job frozen longer than it ran)", r->requeues);
	fprintf(f, ", %d %s, %d OOM kill%s seen\n", r->retries, r->retries == 1 ? "retry" : "retries", r->oom_kills,
		plural(r->oom_kills));
	print_over(r, f);
	for (size_t i = 0; i < n; i++)
		print_class(r, cls[i], f);
	print_advice(r, safe, f);
	free(cls);
}

void report_free(struct report *r)
{
	for (size_t i = 0; i < r->njobs; i++)
		free(r->jobs[i].class_key);
	for (size_t i = 0; i < r->nspans; i++) {
		free(r->spans[i].name);
		free(r->spans[i].class_key);
		free(r->spans[i].samples);
	}
	free(r->spans);
	r->spans = NULL;
	free(r->over.grew_job);
	r->over.grew_job = NULL;
	r->nspans = r->capspans = 0;
	free(r->jobs);
	free(r->timeline);
	r->timeline = NULL;
	r->npoints = r->cappoints = 0;
	r->jobs = NULL;
	r->njobs = r->cap = 0;
}
