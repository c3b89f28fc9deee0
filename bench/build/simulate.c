/* bench/build/simulate: a build from a headroom-trace/1 file in virtual time, under fixed -jN
 * and under headroom's admission policy (src/govern/admit.c), fresh store and warm.
 *
 * Ninja with --slots slots starts the jobs in trace order whenever a slot is free. Under
 * a fixed -jN a job runs as soon as it has one of N slots; under headroom each started job
 * asks for admission, answered at once when it fits (and when a job ends) and tried again
 * on each 100 ms tick, as the governor does. A job's memory follows its recorded samples
 * and it runs its recorded length, or longer where the running jobs want more threads
 * than --cpus (an nvcc job its --threads, default 4: each job slows by CONTENTION of the
 * excess; without --cpus jobs do not slow each other down).
 * The governor's inputs are built as governor.c and learned.c build them: jobs sampled
 * each tick, provisional profiles from admit_passed_peak()/admit_provisional(), the ramp
 * from admit_unknown_need(), predictions as learned_predict() makes them (own, twins, class),
 * order by admit_order(), decisions by admit_decide(), learning
 * by curve_from_samples()/curve_learn() (signature 50 % with floor, class 80 %), the
 * safety net's verdict by net_decide() (only its hold is acted on; a freeze or kill it
 * would have ordered is counted, not carried out).
 *   make bench/build/simulate && bench/build/simulate TRACE [--limit SIZE] [--budget SIZE] [--slots N]
 *       [--mem-scale X] [--time-scale X] [--repeat K] [--jitter PCT] [--seed N] [--search N]
 *       [--cpus N [--threads T]] [--order trace|shortest|longest|start]
 * --order: the jobs between two links reordered, the longest last (shortest) or first, or
 * as the recorded build started them (start: a record lists its jobs as they ended).
 * SIM_POLICY: "stall,requeue" (default: the governor's policy: stalled frozen jobs thawed, and
 * requeued by net_requeue_frozen()), "stall" (no requeue), "none" (neither), "small"
 * (tried: the net freezes the job holding least first), "pre" (tried, with "stall":
 * pre_freeze()); the table's "before" rows run without the stall thaw.
 * --other: memory that processes other than the jobs hold all along (the build tool,
 * setup.py). --jitter: each run under headroom gives each job its own pace, its length (and its curve
 * with it) stretched by up to that share either way, so the warm run does not meet exactly
 * the lengths the fresh run learned; --seed picks another draw of those paces (one run is one
 * draw: compare policies over several). SIM_DEBUG=1 prints each admission and each kill,
 * SIM_DEBUG=2 also each refusal with the predicted total that refused it and when, 3 also
 * each running job's prediction at that moment, and
 * SIM_TIMELINE=1 the jobs and memory each second, on stderr. After fresh and warm, a third
 * run with a store that knows the classes but none of the files ("class only": another
 * project built with the same flags). The table ends with what a
 * schedule made knowing every curve in advance, free of the build tool's window, reaches
 * (jobs placed longest first, each at the earliest moment it fits; --search N: then N
 * random swaps of that order kept when no worse); for a build of at most --slots jobs, at
 * the trace's sample interval, the policy's admission with every curve known exactly and
 * none of its margins (each waiting job, longest first, started the moment it fits over its
 * whole life), and for at most 8 jobs the best packing over every order, each with the
 * exact curves and with the curves as the store keeps them (64 slices); and the lower
 * bound. */
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "govern/admit.h"
#include "govern/signature.h"
#include "profile/curve.h"
#include "util/units.h"
#include "util/xalloc.h"

#define TICK_MS 100
#define STEP_MS 10
#define MAXPROF 1024

struct tjob {
	char sig[512], cls[128];
	int64_t dur_ms, interval_ms;
	int barrier;               /* started after every earlier job had ended (a link) */
	double start_s;            /* when the recorded build started it (--order start) */
	uint64_t *rss;
	size_t nrss;
};

struct prof {
	char key[512], cls[128];
	struct curve c;
	int known, provisional;
};

struct store {
	struct prof p[MAXPROF];
	size_t n;
};

struct sjob {
	int state; /* 0 not started by ninja, 1 waiting, 2 running, 3 done */
	int64_t t_req, t_start;
	int64_t ran_ms;            /* time it ran, frozen time excluded: what the governor sees */
	int64_t frozen_ms;         /* time it has been frozen since it started */
	double prog;               /* progress along its recording, in recorded ms */
	int frozen, kills;
	int pre;                   /* tried: frozen on purpose before its peak (pre_freeze) */
	uint64_t prev;             /* memory at the tick before */
	uint64_t rate;             /* frozen: how fast it grew before, bytes a second */
	double pace;               /* this run's length over the recorded one (--jitter) */
	struct curve_sample *samples;
	size_t nsamples;
	uint64_t current;          /* as last sampled */
	const struct curve *pred;
	int passed;
	int own;                   /* pred is its signature's profile */
	struct curve twins;        /* the mean of its twins' profiles, when pred points here */
};

static uint64_t mem_at(const struct tjob *j, int64_t t)
{
	if (t < 0 || t >= j->dur_ms)
		return 0;
	size_t k = (size_t)(t / j->interval_ms);
	return j->rss[k < j->nrss ? k : j->nrss - 1];
}

static struct prof *prof_get(struct store *s, const char *key)
{
	for (size_t i = 0; i < s->n; i++)
		if (!strcmp(s->p[i].key, key))
			return &s->p[i];
	if (s->n == MAXPROF) {
		fprintf(stderr, "simulate: too many profiles\n");
		exit(1);
	}
	struct prof *p = &s->p[s->n++];
	memset(p, 0, sizeof(*p));
	snprintf(p->key, sizeof(p->key), "%s", key);
	return p;
}

/* learned_predict(): the signature, else the mean of its twins', else the class (learned
 * or provisional); twins is where the mean goes */
static const struct curve *predict(struct store *sig, struct store *cls, const struct tjob *j, int *own,
				   struct curve *twins)
{
	struct prof *p = prof_get(sig, j->sig);
	int n = 0;

	*own = p->known;
	if (p->known)
		return &p->c;
	for (size_t i = 0; i < sig->n; i++) {
		if (!sig->p[i].known || strcmp(sig->p[i].cls, j->cls) || !job_src_twins(sig->p[i].key, j->sig))
			continue;
		if (n)
			curve_merge(twins, n, &sig->p[i].c, 1, 0);
		else
			*twins = sig->p[i].c;
		n++;
	}
	if (n)
		return twins;
	p = prof_get(cls, j->cls);
	return p->known || p->provisional ? &p->c : NULL;
}

struct sim {
	const struct tjob *tj;
	struct sjob *j;
	size_t n;
	int slots;
	uint64_t limit, budget, reserve, seen_peak;
	uint64_t other;            /* held all along by processes that are not jobs (--other) */
	int64_t longest_done;      /* the longest run of a job that ended; -1: none yet */
	double jitter;             /* share by which a job's length varies between runs */
	int cpus, nvcc_threads;    /* --cpus (0: no contention), --threads of an nvcc job */
	uint64_t rng;
	struct store sig, cls;
	enum net_action act;
	int freezes, kills, stall_thaws;
	int stall;                 /* stalled frozen jobs are thawed (net_thaw_stalled()) */
	int smallest;              /* tried: the net freezes the job holding least first */
	int pre;                   /* tried: pre_freeze() */
	int requeue;               /* stalled frozen jobs killed and asked again (net_requeue_frozen()) */
	int64_t last_kill;
	uint64_t peak;
	double mem_ms;             /* memory × time, for the mean use of the budget */
	int64_t now;
};

static int debug_level(void)
{
	const char *d = getenv("SIM_DEBUG");

	return d ? atoi(d) : 0;
}

static double gib(uint64_t b)
{
	return (double)b / (1ULL << 30);
}

/* A job's memory now: its recording at its progress. */
static uint64_t job_mem(const struct sim *s, size_t i)
{
	return mem_at(&s->tj[i], (int64_t)s->j[i].prog);
}

/* CPU contention: jobs that want more threads than there are CPUs each run slower, by
 * this share of the excess. Calibrated on the H200 machine's flash-attn builds: seven nvcc
 * kernels with --threads 4 on 16 CPUs (28 threads, 75 % over) ran 10-25 % longer than four
 * (16 threads, none over): 0.23 x 0.75 = 17 %, the middle. nvcc's threads are busy only
 * part of a job (one cicc and one ptxas per pass), so the slowdown is far less than the
 * excess. */
#define CONTENTION 0.23

static int job_threads(const struct tjob *j, int nvcc_threads)
{
	return strcmp(j->cls, "nvcc") ? 1 : nvcc_threads;
}

/* How much slower every job runs with `threads` wanted on `cpus` CPUs (0: no contention). */
static double slowdown(int threads, int cpus)
{
	return cpus > 0 && threads > cpus ? 1.0 + CONTENTION * ((double)threads / cpus - 1.0) : 1.0;
}

static uint64_t true_used(struct sim *s)
{
	uint64_t u = 0;

	for (size_t i = 0; i < s->n; i++)
		if (s->j[i].state == 2)
			u += job_mem(s, i);
	return u;
}

/* The job's prediction is its class's provisional profile (admit_job's open), as
 * learned_pred_open() says. */
static int pred_open(struct sim *s, size_t i)
{
	struct prof *p = prof_get(&s->cls, s->tj[i].cls);

	return s->j[i].pred == &p->c && p->provisional;
}

/* admit_waiting() of governor.c */
static void admit_waiting(struct sim *s)
{
	struct admit_job *snap = xmalloc((s->n + 1) * sizeof(*snap));
	struct admit_wait *w = xmalloc((s->n + 1) * sizeof(*w));
	size_t nsnap = 0, nw = 0;
	int running = 0;
	uint64_t used = true_used(s) + s->other, avail = s->limit > used ? s->limit - used : 0;

	for (size_t i = 0; i < s->n; i++) {
		struct sjob *j = &s->j[i];
		if (j->state == 2) {
			if (!j->pred)
				j->pred = predict(&s->sig, &s->cls, &s->tj[i], &j->own, &j->twins);
			snap[nsnap++] = (struct admit_job){ j->ran_ms, j->pred, j->current, j->frozen, j->own, pred_open(s, i), !j->passed };
			running++;
		} else if (j->state == 1) {
			if (!j->pred)
				j->pred = predict(&s->sig, &s->cls, &s->tj[i], &j->own, &j->twins);
			w[nw++] = (struct admit_wait){ j->pred ? j->pred->duration_ms : -1, (int64_t)i, i };
		}
	}
	struct admit_snapshot as = {
		.budget_bytes = s->budget,
		.free_bytes = avail > s->reserve ? avail - s->reserve : 0,
		.unknown_bytes = admit_unknown_need(s->budget, avail > s->reserve ? avail - s->reserve : 0, 0, s->seen_peak,
						    snap, nsnap),
		.jobs = snap,
		.njobs = nsnap,
	};
	admit_order(w, nw, s->longest_done);
	for (size_t k = 0; k < nw && running < s->slots; k++) {
		struct sjob *j = &s->j[w[k].idx];
		struct admit_result r;

		int how = (j->own ? ADMIT_OWN : 0) | (pred_open(s, w[k].idx) ? ADMIT_OPEN : 0);
		admit_decide(&as, j->pred, how, &r);
		if (!r.admit && as.njobs > 0) {
			if (debug_level() >= 2)
				fprintf(stderr, "%8.1f refuse %zu %s pred %s worst %.2f in %.1f s free %.2f\n", s->now / 1000.0,
					w[k].idx, s->tj[w[k].idx].cls, j->pred ? (j->own ? "own" : "class") : "none",
					gib(r.worst_bytes), r.worst_at_ms / 1000.0, gib(as.free_bytes));
			if (debug_level() >= 3)
				for (size_t q = 0; q < as.njobs; q++)
					fprintf(stderr, "           job el %.1f cur %.2f fut %.2f pred %s peak %.2f dur %.1f%s%s\n",
						snap[q].elapsed_ms / 1000.0, gib(snap[q].current_bytes),
						gib(admit_job_future(&snap[q], as.unknown_bytes, r.worst_at_ms)),
						snap[q].pred ? "yes" : "no", snap[q].pred ? gib(snap[q].pred->peak_bytes) : 0.0,
						snap[q].pred ? snap[q].pred->duration_ms / 1000.0 : 0.0, snap[q].open ? " open" : "",
						snap[q].rising ? " rising" : "");
			continue;
		}
		j->state = 2;
		j->t_start = s->now;
		j->ran_ms = 0;
		j->frozen_ms = 0;
		j->prog = 0;
		if (debug_level() >= 1)
			fprintf(stderr, "%8.1f admit %zu %s pred %s dur %.1f peak %.2f unknown %.2f worst %.2f free %.2f\n",
				s->now / 1000.0, w[k].idx, s->tj[w[k].idx].cls, j->pred ? "yes" : "no",
				j->pred ? j->pred->duration_ms / 1000.0 : 0.0, j->pred ? gib(j->pred->peak_bytes) : 0.0,
				gib(as.unknown_bytes), gib(r.worst_bytes), gib(as.free_bytes));
		snap[as.njobs++] = (struct admit_job){ 0, j->pred, 0, 0, j->own, pred_open(s, w[k].idx), 1 };
		running++;
	}
	free(snap);
	free(w);
}

/* learned_provisional() of learned.c */
static void provisional(struct sim *s)
{
	struct admit_obs *obs = xmalloc((s->n + 1) * sizeof(*obs));
	int *passed = xmalloc((s->n + 1) * sizeof(*passed));

	for (size_t i = 0; i < s->n; i++) {
		struct sjob *j = &s->j[i];
		if (j->state != 2 || j->passed || !j->nsamples)
			continue;
		struct admit_obs o = { j->samples, j->nsamples, j->ran_ms, 1 };
		if (admit_passed_peak(&o)) {
			uint64_t peak = curve_samples_max(j->samples, j->nsamples);

			j->passed = 1;
			if (peak > s->seen_peak)
				s->seen_peak = peak;
		}
	}
	for (size_t i = 0; i < s->n; i++) {
		struct sjob *j = &s->j[i];
		int first = 1;
		size_t m = 0;

		if (j->state != 2 || !j->passed)
			continue;
		for (size_t k = 0; k < i && first; k++)
			first = !(s->j[k].state == 2 && s->j[k].passed && !strcmp(s->tj[k].cls, s->tj[i].cls));
		struct prof *p = prof_get(&s->cls, s->tj[i].cls);
		if (!first || p->known)
			continue;
		for (size_t k = 0; k < s->n; k++) {
			if (s->j[k].state != 2 || !s->j[k].nsamples || strcmp(s->tj[k].cls, s->tj[i].cls))
				continue;
			obs[m] = (struct admit_obs){ s->j[k].samples, s->j[k].nsamples, s->j[k].ran_ms, 1 };
			passed[m++] = s->j[k].passed;
		}
		struct curve c;
		if (admit_provisional(obs, passed, m, &c)) {
			p->c = c;
			p->provisional = 1;
		}
	}
	free(obs);
	free(passed);
}

/* learn() of learned.c, and learned_job_done()'s seen peak */
static void learn_done(struct sim *s, size_t i)
{
	struct sjob *j = &s->j[i];
	struct curve seen;

	if (!j->nsamples) {
		j->samples = xrealloc(j->samples, sizeof(*j->samples));
		j->samples[j->nsamples++] = (struct curve_sample){ 0, job_mem(s, i) };
	}
	if (curve_from_samples(j->samples, j->nsamples, j->ran_ms, &seen))
		return;
	/* the launcher's maxrss: a peak between two samples still shows */
	uint64_t maxrss = 0;
	for (size_t k = 0; k < s->tj[i].nrss; k++)
		if (s->tj[i].rss[k] > maxrss)
			maxrss = s->tj[i].rss[k];
	if (maxrss > seen.peak_bytes) {
		for (int k = 0; k < CURVE_POINTS; k++)
			if (seen.pts[k] == seen.peak_bytes)
				seen.pts[k] = maxrss;
		seen.peak_bytes = maxrss;
	}
	struct prof *ps = prof_get(&s->sig, s->tj[i].sig), *pc = prof_get(&s->cls, s->tj[i].cls);
	snprintf(ps->cls, sizeof(ps->cls), "%s", s->tj[i].cls);
	curve_learn(&ps->c, &seen, !ps->known, 50, 1);
	ps->known = 1;
	/* its twins waiting or running take it in */
	for (size_t k = 0; k < s->n; k++) {
		struct sjob *o = &s->j[k];
		if ((o->state == 1 || o->state == 2) && o->pred && !o->own && !strcmp(s->tj[k].cls, s->tj[i].cls) &&
		    job_src_twins(s->tj[k].sig, s->tj[i].sig))
			o->pred = predict(&s->sig, &s->cls, &s->tj[k], &o->own, &o->twins);
	}
	curve_learn(&pc->c, &seen, !pc->known, 80, 0);
	pc->known = 1;
	pc->provisional = 0;
	if (seen.peak_bytes > s->seen_peak)
		s->seen_peak = seen.peak_bytes;
}

/* Killed: its launcher asks again, from the start. */
static void requeue(struct sim *s, struct sjob *v)
{
	v->state = 1;
	v->frozen = 0;
	v->kills++;
	v->nsamples = 0;
	v->prog = 0;
	v->current = v->prev = 0;
	v->passed = 0;
	s->kills++;
	s->last_kill = s->now;
}

/* net_requeue_frozen(), as governor.c's requeue_stalled() */
static void requeue_stalled(struct sim *s)
{
	struct sjob *v = NULL;

	for (size_t i = 0; i < s->n; i++) {
		struct sjob *j = &s->j[i];
		if (j->state == 2 && j->frozen && net_requeue_frozen(j->frozen_ms, j->ran_ms, j->kills > 0, s->now - s->last_kill) &&
		    (!v || j->ran_ms < v->ran_ms))
			v = j;
	}
	if (!v)
		return;
	if (debug_level() >= 1)
		fprintf(stderr, "%8.1f requeue %zu: ran %.1f s, frozen %.1f s\n", s->now / 1000.0, (size_t)(v - s->j),
			v->ran_ms / 1000.0, v->frozen_ms / 1000.0);
	requeue(s, v);
}

/* The youngest running job (frozen or not as asked, or any), by admission time. */
static struct sjob *youngest(struct sim *s, int want_frozen, int any)
{
	struct sjob *best = NULL;

	for (size_t i = 0; i < s->n; i++) {
		struct sjob *j = &s->j[i];
		if (j->state != 2 || (!any && j->frozen != want_frozen))
			continue;
		if (!best || j->t_start >= best->t_start)
			best = j;
	}
	return best;
}

/* The running job holding the least memory, the youngest of those that hold as little. */
static struct sjob *smallest(struct sim *s)
{
	struct sjob *best = NULL;

	for (size_t i = 0; i < s->n; i++) {
		struct sjob *j = &s->j[i];
		if (j->state != 2 || j->frozen)
			continue;
		if (!best || j->current < best->current || (j->current == best->current && j->t_start >= best->t_start))
			best = j;
	}
	return best;
}

static struct sjob *oldest(struct sim *s, int want_frozen)
{
	struct sjob *best = NULL;

	for (size_t i = 0; i < s->n; i++) {
		struct sjob *j = &s->j[i];
		if (j->state == 2 && j->frozen == want_frozen && (!best || j->t_start < best->t_start))
			best = j;
	}
	return best;
}

/* The oldest job the net froze (not pre_freeze). */
static struct sjob *oldest_net(struct sim *s)
{
	struct sjob *best = NULL;

	for (size_t i = 0; i < s->n; i++) {
		struct sjob *j = &s->j[i];
		if (j->state == 2 && j->frozen && !j->pre && (!best || j->t_start < best->t_start))
			best = j;
	}
	return best;
}

/* What the running jobs grow by over the net's lookahead, at their last tick's rate. */
static uint64_t growth(struct sim *s)
{
	uint64_t g = 0;

	for (size_t i = 0; i < s->n; i++) {
		struct sjob *j = &s->j[i];
		if (j->state == 2 && !j->frozen && j->current > j->prev)
			g += net_lookahead_growth((j->current - j->prev) * 1000 / TICK_MS);
	}
	return g;
}

/* tried (SIM_POLICY "pre"): the running jobs' predictions together pass the budget by a
 * sixteenth ahead: freeze the youngest one still below its predicted peak now, while it
 * holds little, and thaw it once they fit with it running (pre_fits); the net's own thaws
 * leave it alone. */
static int pre_fits(struct sim *s, uint64_t avail, const struct sjob *thaw, uint64_t margin, struct admit_result *r)
{
	struct admit_job *snap = xmalloc((s->n + 1) * sizeof(*snap));
	size_t m = 0;

	for (size_t i = 0; i < s->n; i++) {
		struct sjob *j = &s->j[i];
		if (j->state != 2)
			continue;
		if (!j->pred)
			j->pred = predict(&s->sig, &s->cls, &s->tj[i], &j->own, &j->twins);
		snap[m++] = (struct admit_job){ j->ran_ms, j->pred, j->current, j->frozen && j != thaw, j->own,
						pred_open(s, i), !j->passed };
	}
	uint64_t room = avail > s->reserve ? avail - s->reserve : 0;
	struct admit_snapshot as = {
		.budget_bytes = s->budget + margin,
		.free_bytes = room + margin,
		.unknown_bytes = admit_unknown_need(s->budget, room, 0, s->seen_peak, snap, m),
		.jobs = snap,
		.njobs = m,
	};
	struct curve z;
	memset(&z, 0, sizeof(z));
	z.duration_ms = 60000;
	admit_decide(&as, &z, 0, r);
	if (debug_level() >= 3 && !r->admit)
		for (size_t q = 0; q < as.njobs; q++)
			fprintf(stderr, "           job el %.1f cur %.2f fut %.2f peak %.2f dur %.1f%s%s%s\n",
				snap[q].elapsed_ms / 1000.0, gib(snap[q].current_bytes),
				gib(admit_job_future(&snap[q], as.unknown_bytes, r->worst_at_ms)),
				snap[q].pred ? gib(snap[q].pred->peak_bytes) : 0.0,
				snap[q].pred ? snap[q].pred->duration_ms / 1000.0 : 0.0, snap[q].open ? " open" : "",
				snap[q].rising ? " rising" : "", snap[q].frozen ? " frozen" : "");
	free(snap);
	return r->admit;
}

static void pre_freeze(struct sim *s, uint64_t avail)
{
	struct sjob *v = NULL;
	struct admit_result r;
	int running = 0;
	uint64_t margin = s->budget / 16;

	for (size_t i = 0; i < s->n; i++) {
		struct sjob *j = &s->j[i];
		if (j->state == 2 && j->frozen && j->pre && pre_fits(s, avail, j, 0, &r)) {
			j->frozen = j->pre = 0;
			return;
		}
	}
	for (size_t i = 0; i < s->n; i++) {
		struct sjob *j = &s->j[i];
		if (j->state != 2 || j->frozen)
			continue;
		running++;
		if (j->pred && !j->passed && (!v || j->t_start >= v->t_start))
			v = j;
	}
	if (!v || running < 2 || v->current >= v->pred->peak_bytes || pre_fits(s, avail, NULL, margin, &r))
		return;
	v->frozen = v->pre = 1;
	v->rate = v->current > v->prev ? (v->current - v->prev) * 1000 / TICK_MS : 0;
	s->freezes++;
	if (debug_level() >= 1)
		fprintf(stderr, "%8.1f pre-freeze %zu at %.2f worst %.2f in %.1f s\n", s->now / 1000.0, (size_t)(v - s->j),
			gib(v->current), gib(r.worst_bytes), r.worst_at_ms / 1000.0);
}

static void tick(struct sim *s, int64_t *used_prev)
{
	uint64_t used = true_used(s);

	for (size_t i = 0; i < s->n; i++) {
		struct sjob *j = &s->j[i];
		if (j->state != 2)
			continue;
		j->prev = j->current;
		j->current = job_mem(s, i);
		j->samples = xrealloc(j->samples, (j->nsamples + 1) * sizeof(*j->samples));
		j->samples[j->nsamples++] = (struct curve_sample){ j->ran_ms, j->current };
	}
	provisional(s);
	struct net_state ns = {
		.limit_bytes = s->limit,
		.used_bytes = used + s->other,
		.reserve_bytes = s->reserve,
		.psi_full_avg10_pct = -1,
		.ms_since_last_kill = s->now - s->last_kill,
		.growth_bytes_per_s = (int64_t)used > *used_prev ? (used - (uint64_t)*used_prev) * 1000 / TICK_MS : 0,
	};
	*used_prev = (int64_t)used;
	s->act = net_apply_budget(net_decide(&ns), used, s->budget);
	uint64_t avail = s->limit > used + s->other ? s->limit - used - s->other : 0;
	int running = 0, frozen = 0;
	for (size_t i = 0; i < s->n; i++)
		if (s->j[i].state == 2) {
			running += !s->j[i].frozen;
			frozen += s->j[i].frozen;
		}
	struct sjob *f = s->pre ? oldest_net(s) : oldest(s, 1);
	if (s->act == NET_KILL) {
		struct sjob *v = youngest(s, 0, 1);
		if (debug_level() >= 1)
			fprintf(stderr, "%8.1f kill: used %.2f, free %.2f, %d running, %d frozen\n", s->now / 1000.0,
				gib(used + s->other), gib(avail), running, frozen);
		if (v && running + frozen > 1)
			requeue(s, v);
	} else if (running == 0 && oldest(s, 1)) {
		oldest(s, 1)->pre = 0;
		oldest(s, 1)->frozen = 0;
	} else if (s->act == NET_FREEZE) {
		frozen = 0;
		while (!net_freeze_done(frozen, running, growth(s), avail, s->reserve)) {
			struct sjob *v = s->smallest ? smallest(s) : youngest(s, 0, 0);
			if (!v)
				break;
			v->frozen = 1;
			v->rate = v->current > v->prev ? (v->current - v->prev) * 1000 / TICK_MS : 0;
			s->freezes++;
			running--;
			frozen++;
		}
	} else if (s->act == NET_OK && f) {
		struct admit_job aj = { f->ran_ms, f->pred, f->current, 1, f->own, pred_open(s, (size_t)(f - s->j)), !f->passed };
		struct admit_job *snap = xmalloc((s->n + 1) * sizeof(*snap));
		size_t m = 0;
		for (size_t i = 0; i < s->n; i++)
			if (s->j[i].state == 2)
				snap[m++] = (struct admit_job){ s->j[i].ran_ms, s->j[i].pred, s->j[i].current, s->j[i].frozen,
								 s->j[i].own, pred_open(s, i), !s->j[i].passed };
		uint64_t room = avail > s->reserve ? avail - s->reserve : 0;
		uint64_t need = admit_thaw_need(&aj, admit_unknown_need(s->budget, room, 0, s->seen_peak, snap, m));
		if (admit_thaw_fits(need, avail, s->reserve, used, s->budget))
			f->frozen = 0;
		free(snap);
	}
	f = s->pre ? oldest_net(s) : oldest(s, 1);
	if (f && s->stall && (s->act == NET_OK || s->act == NET_HOLD) &&
	    net_thaw_stalled(growth(s), net_lookahead_growth(f->rate), avail, s->reserve)) {
		f->frozen = 0;
		s->stall_thaws++;
	}
	/* after the thaws, as governor.c's net_carry_out() */
	if (s->requeue && s->act != NET_KILL)
		requeue_stalled(s);
	if (s->pre && s->act == NET_OK)
		pre_freeze(s, avail);
	if (s->act == NET_OK && !oldest(s, 1))
		admit_waiting(s);
}

/* The store as another project compiled with the same flags leaves it: its classes known,
 * none of these files. As learned.c's class_from_files() reads it, each class is its
 * file's profile at the ADMIT_CLASS_PCT peak. */
static void class_only(struct sim *s)
{
	uint64_t *peaks = xmalloc((s->sig.n + 1) * sizeof(*peaks));
	size_t *idx = xmalloc((s->sig.n + 1) * sizeof(*idx));

	for (size_t c = 0; c < s->cls.n; c++) {
		size_t m = 0;
		for (size_t k = 0; k < s->sig.n; k++)
			if (s->sig.p[k].known && !strcmp(s->sig.p[k].cls, s->cls.p[c].key)) {
				idx[m] = k;
				peaks[m++] = s->sig.p[k].c.peak_bytes;
			}
		if (m)
			s->cls.p[c].c = s->sig.p[idx[admit_class_pick(peaks, m)]].c;
	}
	for (size_t k = 0; k < s->sig.n; k++)
		s->sig.p[k].known = 0;
	free(peaks);
	free(idx);
}

/* One build under headroom; sig/cls carry the store in and out. Returns the makespan. */
static int64_t run_headroom(struct sim *s)
{
	int64_t used_prev = 0;
	size_t done = 0;

	s->act = NET_OK;
	s->freezes = s->kills = s->stall_thaws = 0;
	s->last_kill = -1000000;
	s->peak = 0;
	s->mem_ms = 0;
	s->seen_peak = 0;
	s->longest_done = -1;
	for (size_t i = 0; i < s->n; i++) {
		s->j[i] = (struct sjob){ 0 };
		/* a fixed pseudo-random pace per run and job, in [1 - jitter, 1 + jitter] */
		s->rng = s->rng * 6364136223846793005ULL + 1442695040888963407ULL;
		s->j[i].pace = 1.0 + s->jitter * ((double)(s->rng >> 11) / (double)(1ULL << 53) * 2.0 - 1.0);
	}
	for (size_t k = 0; k < s->cls.n; k++)
		s->cls.p[k].provisional = 0;
	for (s->now = 0; done < s->n; s->now += STEP_MS) {
		int ended = 0, inflight = 0, unfinished = 0, threads = 0;

		for (size_t i = 0; i < s->n; i++)
			if (s->j[i].state == 2 && !s->j[i].frozen)
				threads += job_threads(&s->tj[i], s->nvcc_threads);
		double slow = slowdown(threads, s->cpus);
		for (size_t i = 0; i < s->n; i++) {
			struct sjob *j = &s->j[i];
			if (j->state == 2 && j->frozen)
				j->frozen_ms += STEP_MS;
			if (j->state == 2 && !j->frozen && s->now > j->t_start) {
				j->ran_ms += STEP_MS;
				j->prog += STEP_MS / j->pace / slow;
			}
			if (j->state == 2 && j->prog >= (double)s->tj[i].dur_ms) {
				learn_done(s, i);
				if (j->ran_ms > s->longest_done)
					s->longest_done = j->ran_ms;
				j->state = 3;
				done++;
				ended = 1;
			}
			inflight += j->state == 1 || j->state == 2;
		}
		/* ninja starts jobs in order while it has slots (a barrier job, a link, once all
		 * before it ended): each one asks at once */
		int asked = 0;
		for (size_t i = 0; i < s->n && inflight < s->slots; i++) {
			if (s->j[i].state != 3 && s->j[i].state != 0)
				unfinished++;
			if (s->j[i].state != 0)
				continue;
			if (s->tj[i].barrier && unfinished)
				break;
			s->j[i].state = 1;
			s->j[i].t_req = s->now;
			inflight++;
			unfinished++;
			asked = 1;
			if (s->tj[i].barrier)
				break;
		}
		if (s->now % TICK_MS == 0)
			tick(s, &used_prev);
		else if ((asked || ended) && s->act == NET_OK && !oldest(s, 1))
			admit_waiting(s);
		uint64_t u = true_used(s);
		if (u > s->peak)
			s->peak = u;
		s->mem_ms += (double)u * STEP_MS;
		if (getenv("SIM_TIMELINE") && s->now % 1000 == 0) {
			int r = 0, w = 0, fz = 0;
			for (size_t i = 0; i < s->n; i++) {
				r += s->j[i].state == 2 && !s->j[i].frozen;
				fz += s->j[i].state == 2 && s->j[i].frozen;
				w += s->j[i].state == 1;
			}
			fprintf(stderr, "t %6.1f run %2d frozen %d wait %2d used %.2f", s->now / 1000.0, r, fz, w, gib(u));
			for (size_t i = 0; i < s->n && atoi(getenv("SIM_TIMELINE")) > 1; i++)
				if (s->j[i].state == 2)
					fprintf(stderr, " %zu%s:%.1f@%.0f%%", i, s->j[i].frozen ? "F" : "", gib(s->j[i].current),
						100 * s->j[i].prog / (double)s->tj[i].dur_ms);
			fprintf(stderr, "\n");
		}
	}
	for (size_t i = 0; i < s->n; i++)
		free(s->j[i].samples);
	return s->now - STEP_MS;
}

/* Fixed -jN: list scheduling in trace order; the peak from every sample boundary. */
static int64_t run_fixed(const struct tjob *tj, size_t n, int slots, uint64_t *peak)
{
	int64_t *free_at = xcalloc((size_t)slots, sizeof(*free_at)), *start = xmalloc(n * sizeof(*start)), end = 0;

	for (size_t k = 0; k < n; k++) {
		int m = 0;
		for (int i = 1; i < slots; i++)
			if (free_at[i] < free_at[m])
				m = i;
		start[k] = free_at[m];
		if (tj[k].barrier) {
			start[k] = end;
			for (int i = 0; i < slots; i++)
				free_at[i] = end;
		}
		free_at[m] = start[k] + tj[k].dur_ms;
		if (free_at[m] > end)
			end = free_at[m];
	}
	*peak = 0;
	for (size_t k = 0; k < n; k++)
		for (size_t b = 0; b < tj[k].nrss; b++) {
			int64_t t = start[k] + (int64_t)b * tj[k].interval_ms;
			uint64_t sum = 0;
			for (size_t i = 0; i < n; i++)
				sum += mem_at(&tj[i], t - start[i]);
			if (sum > *peak)
				*peak = sum;
		}
	free(free_at);
	free(start);
	return end;
}

/* Fixed -jN with CPU contention: stepped, since each job's pace depends on how many run. */
static int64_t run_fixed_cpu(const struct tjob *tj, size_t n, int slots, int cpus, int nvcc_threads, uint64_t *peak)
{
	double *prog = xcalloc(n, sizeof(*prog));
	int *state = xcalloc(n, sizeof(*state)); /* 0 waiting, 1 running, 2 done */
	size_t done = 0, next = 0;
	int64_t now = 0;

	*peak = 0;
	for (; done < n; now += STEP_MS) {
		int running = 0, threads = 0;
		uint64_t sum = 0;

		for (size_t i = 0; i < n; i++)
			running += state[i] == 1;
		/* a barrier job (a link) waits for every job before it */
		while (next < n && running < slots && (!tj[next].barrier || !running)) {
			state[next++] = 1;
			running++;
		}
		for (size_t i = 0; i < n; i++)
			if (state[i] == 1) {
				threads += job_threads(&tj[i], nvcc_threads);
				sum += mem_at(&tj[i], (int64_t)prog[i]);
			}
		if (sum > *peak)
			*peak = sum;
		double slow = slowdown(threads, cpus);
		for (size_t i = 0; i < n; i++)
			if (state[i] == 1 && (prog[i] += STEP_MS / slow) >= (double)tj[i].dur_ms) {
				state[i] = 2;
				done++;
			}
	}
	free(prog);
	free(state);
	return now;
}

/* Jobs placed one by one in `order`, each at the earliest STEP_MS at which it fits over its
 * whole length beside those placed before (at most `slots` at once, the sum within
 * budget), holes before later jobs included: a schedule made knowing every curve, with no
 * build tool's window. Returns the makespan; budget too small for a job: INT64_MAX. */
static int64_t pack(const struct tjob *tj, size_t n, const size_t *order, int slots, uint64_t budget)
{
	int64_t horizon = 0, end = 0;

	for (size_t k = 0; k < n; k++)
		horizon += tj[k].dur_ms / STEP_MS + 1;
	uint64_t *mem = xcalloc((size_t)horizon + 1, sizeof(*mem));
	int *cnt = xcalloc((size_t)horizon + 1, sizeof(*cnt));
	for (size_t q = 0; q < n && end < INT64_MAX; q++) {
		const struct tjob *j = &tj[order[q]];
		int64_t len = j->dur_ms / STEP_MS + 1, st = 0;

		for (; st + len <= horizon; st++) {
			int64_t i = 0;
			while (i < len && cnt[st + i] < slots && mem[st + i] + mem_at(j, i * STEP_MS) <= budget)
				i++;
			if (i == len)
				break;
		}
		if (st + len > horizon) {
			end = INT64_MAX;
			break;
		}
		for (int64_t i = 0; i < len; i++) {
			mem[st + i] += mem_at(j, i * STEP_MS);
			cnt[st + i]++;
		}
		if ((st + len) * STEP_MS > end)
			end = (st + len) * STEP_MS;
	}
	free(mem);
	free(cnt);
	return end;
}

/* The best of pack() over the longest-first order and `tries` random swaps of it that
 * kept or improved the makespan (a local search). */
static int64_t pack_best(const struct tjob *tj, size_t n, int slots, uint64_t budget, int tries, uint64_t seed)
{
	size_t *o = xmalloc(n * sizeof(*o));

	for (size_t i = 0; i < n; i++)
		o[i] = i;
	for (size_t i = 1; i < n; i++)
		for (size_t k = i; k > 0 && tj[o[k]].dur_ms > tj[o[k - 1]].dur_ms; k--) {
			size_t t = o[k];
			o[k] = o[k - 1];
			o[k - 1] = t;
		}
	int64_t best = pack(tj, n, o, slots, budget);
	for (int t = 0; t < tries && n > 1; t++) {
		seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
		size_t a = (size_t)(seed >> 33) % n;
		seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
		size_t b = (size_t)(seed >> 33) % n, x = o[a];
		o[a] = o[b];
		o[b] = x;
		int64_t m = pack(tj, n, o, slots, budget);
		if (m <= best) {
			best = m;
		} else {
			o[b] = o[a];
			o[a] = x;
		}
	}
	free(o);
	return best;
}

/* The searches below work at the trace's sample interval (every job's), on each job's
 * memory at each interval, with as many jobs at once as fit (a build of at most --slots
 * jobs). */
struct grid {
	size_t n, horizon;
	size_t *len;
	uint64_t **m, *sum;
	uint64_t budget;
};

/* env: each job's memory as the store keeps it, its curve's slice maximum (profile/curve.h),
 * not its samples. */
static void grid_init(struct grid *g, const struct tjob *tj, size_t n, uint64_t budget, int env)
{
	g->n = n;
	g->budget = budget;
	g->horizon = 0;
	g->len = xcalloc(n, sizeof(*g->len));
	g->m = xcalloc(n, sizeof(*g->m));
	for (size_t i = 0; i < n; i++) {
		g->len[i] = (size_t)(tj[i].dur_ms / tj[i].interval_ms) + 1;
		g->m[i] = xcalloc(g->len[i], sizeof(**g->m));
		struct curve c;
		struct curve_sample *sm = xmalloc(tj[i].nrss * sizeof(*sm));
		for (size_t k = 0; k < tj[i].nrss; k++)
			sm[k] = (struct curve_sample){ (int64_t)k * tj[i].interval_ms, tj[i].rss[k] };
		curve_from_samples(sm, tj[i].nrss, tj[i].dur_ms, &c);
		free(sm);
		for (size_t k = 0; k < g->len[i]; k++) {
			int64_t t = (int64_t)k * tj[i].interval_ms;
			g->m[i][k] = env && t < tj[i].dur_ms ? curve_max_between(&c, t, t) : mem_at(&tj[i], t);
		}
		g->horizon += g->len[i];
	}
	g->sum = xcalloc(g->horizon + 1, sizeof(*g->sum));
}

static void grid_free(struct grid *g)
{
	for (size_t i = 0; i < g->n; i++)
		free(g->m[i]);
	free(g->m);
	free(g->len);
	free(g->sum);
}

static int grid_fits(const struct grid *g, size_t i, size_t st)
{
	if (st + g->len[i] > g->horizon)
		return 0;
	for (size_t k = 0; k < g->len[i]; k++)
		if (g->sum[st + k] + g->m[i][k] > g->budget)
			return 0;
	return 1;
}

static size_t grid_put(struct grid *g, size_t i, size_t st)
{
	for (size_t k = 0; k < g->len[i]; k++)
		g->sum[st + k] += g->m[i][k];
	return st + g->len[i];
}

/* Placed in `order`, each at the earliest interval it fits; the end, in intervals
 * (SIZE_MAX: one never fits). */
static size_t grid_place(struct grid *g, const size_t *order)
{
	size_t end = 0;

	memset(g->sum, 0, (g->horizon + 1) * sizeof(*g->sum));
	for (size_t q = 0; q < g->n; q++) {
		size_t st = 0;
		while (st < g->horizon && !grid_fits(g, order[q], st))
			st++;
		if (st == g->horizon)
			return SIZE_MAX;
		size_t e = grid_put(g, order[q], st);
		if (e > end)
			end = e;
	}
	return end;
}

/* The best of grid_place() over every order (Heap's algorithm), for at most
 * EXHAUSTIVE_MAX jobs. */
#define EXHAUSTIVE_MAX 8
static size_t grid_best(struct grid *g)
{
	size_t o[EXHAUSTIVE_MAX], c[EXHAUSTIVE_MAX] = { 0 }, best, k = 1;

	for (size_t i = 0; i < g->n; i++)
		o[i] = i;
	best = grid_place(g, o);
	while (k < g->n) {
		if (c[k] < k) {
			size_t a = k % 2 ? c[k] : 0, t = o[a];
			o[a] = o[k];
			o[k] = t;
			size_t e = grid_place(g, o);
			if (e < best)
				best = e;
			c[k]++;
			k = 1;
		} else {
			c[k++] = 0;
		}
	}
	return best;
}

/* Admission as the policy does it with every curve known exactly: at each interval, the
 * waiting jobs, longest first (or in the build's order: what knowing every shape but not
 * which job is long allows), each started if it fits over its whole life beside those
 * started. */
static size_t grid_greedy(struct grid *g, const struct tjob *tj, int longest_first)
{
	size_t *order = xmalloc(g->n * sizeof(*order)), left = g->n, end = 0;
	int *started = xcalloc(g->n, sizeof(*started));

	memset(g->sum, 0, (g->horizon + 1) * sizeof(*g->sum));
	for (size_t i = 0; i < g->n; i++)
		order[i] = i;
	for (size_t i = 1; i < g->n && longest_first; i++)
		for (size_t k = i; k > 0 && tj[order[k]].dur_ms > tj[order[k - 1]].dur_ms; k--) {
			size_t t = order[k];
			order[k] = order[k - 1];
			order[k - 1] = t;
		}
	for (size_t now = 0; left && now < g->horizon; now++)
		for (size_t q = 0; q < g->n; q++) {
			size_t i = order[q];
			if (started[i] || !grid_fits(g, i, now))
				continue;
			started[i] = 1;
			left--;
			if (debug_level() >= 1)
				fprintf(stderr, "grid%s: %zu at %.1f s\n", longest_first ? " longest first" : "", i,
					(double)now * (double)tj[0].interval_ms / 1000.0);
			size_t e = grid_put(g, i, now);
			if (e > end)
				end = e;
		}
	free(order);
	free(started);
	return left ? SIZE_MAX : end;
}

static const char *class_of(const char *name)
{
	const char *dot = strrchr(name, '.');

	if (dot && !strcmp(dot, ".cu"))
		return "nvcc";
	if (dot && (!strcmp(dot, ".cpp") || !strcmp(dot, ".cc") || !strcmp(dot, ".c")))
		return "c++";
	return "probe";
}

/* --order: the build tool's order of the jobs between two barriers (links) replaced, to
 * see a policy that does not know durations meet its worst case: ninja starting the
 * longest jobs last (shortest), or first (longest). */
static int before(const struct tjob *a, const struct tjob *b, int dir)
{
	if (dir)
		return (a->dur_ms - b->dur_ms) * dir < 0;
	/* start: a record lists its jobs as they ended; ties (a burst admitted at once) by name,
	 * the order ninja asks in for torch's extensions */
	if (a->start_s != b->start_s)
		return a->start_s < b->start_s;
	const char *x = strrchr(a->sig, '/'), *y = strrchr(b->sig, '/');
	return strcmp(x ? x : a->sig, y ? y : b->sig) < 0;
}

static void reorder(struct tjob *tj, size_t n, const char *order)
{
	int dir = !strcmp(order, "shortest") ? 1 : !strcmp(order, "longest") ? -1 : 0;

	if (!dir && strcmp(order, "start"))
		return;
	for (size_t a = 0; a < n;) {
		size_t b = a + 1;
		while (b < n && !tj[b].barrier)
			b++;
		/* [a, b): a barrier job first stays first */
		for (size_t i = a + 1 + (tj[a].barrier ? 1 : 0); i < b; i++)
			for (size_t k = i; k > a + (tj[a].barrier ? 1 : 0) &&
					   before(&tj[k], &tj[k - 1], dir); k--) {
				struct tjob t = tj[k];
				tj[k] = tj[k - 1];
				tj[k - 1] = t;
			}
		a = b;
	}
}

/* Jobs a build tool started in one burst start within this of each other. */
#define BURST_S 0.05

/* The job i, started at st_s, waited for every job started before it to end (a link),
 * whatever the order the file lists them in (a record lists them as they ended); one of a
 * burst of jobs started together did not. */
static int is_barrier(json_t *jobs, size_t i, double st_s)
{
	int before = 0;

	for (size_t k = 0; k < json_array_size(jobs); k++) {
		json_t *j = json_array_get(jobs, k);
		double s = json_number_value(json_object_get(j, "start_s"));
		if (k == i || s > st_s + BURST_S)
			continue;
		if (s >= st_s - BURST_S)
			return 0;
		before = 1;
		if (s + json_number_value(json_object_get(j, "duration_s")) > st_s + BURST_S)
			return 0;
	}
	return before;
}

static size_t load(const char *path, double mem_scale, double time_scale, int repeat, struct tjob **out)
{
	json_error_t err;
	json_t *t = json_load_file(path, 0, &err);
	size_t n = 0;

	const char *fmt = t ? json_string_value(json_object_get(t, "format")) : NULL;

	if (!fmt || strcmp(fmt, "headroom-trace/1")) {
		fprintf(stderr, "simulate: %s: not a headroom-trace/1 file\n", path);
		exit(2);
	}
	json_t *jobs = json_object_get(t, "jobs");
	double dt = json_number_value(json_object_get(t, "sample_interval_s"));
	int64_t iv = (int64_t)(dt * 1000 * time_scale + 0.5);
	if (iv < 1)
		iv = 1;
	*out = xcalloc(json_array_size(jobs) * (size_t)repeat, sizeof(**out));
	for (int r = 0; r < repeat; r++) {
		for (size_t i = 0; i < json_array_size(jobs); i++) {
			json_t *j = json_array_get(jobs, i), *rss = json_object_get(j, "rss_bytes");
			struct tjob *o = &(*out)[n++];
			double st = json_number_value(json_object_get(j, "start_s"));
			o->barrier = is_barrier(jobs, i, st);
			o->start_s = st;
			const char *name = json_string_value(json_object_get(j, "name"));
			snprintf(o->sig, sizeof(o->sig), "rep%d/%zu/%s", r, i, name);
			snprintf(o->cls, sizeof(o->cls), "%s", class_of(name));
			o->nrss = json_array_size(rss) ? json_array_size(rss) : 1;
			o->rss = xcalloc(o->nrss, sizeof(*o->rss));
			for (size_t k = 0; k < json_array_size(rss); k++)
				o->rss[k] = (uint64_t)(json_number_value(json_array_get(rss, k)) * mem_scale);
			o->interval_ms = iv;
			/* as bench/build/replay runs it: one sample interval per sample; a job shorter
			 * than one interval (a probe) its own length */
			o->dur_ms = (int64_t)o->nrss * iv;
			double d = json_number_value(json_object_get(j, "duration_s")) * 1000 * time_scale;
			if (o->nrss == 1 && d < (double)iv)
				o->dur_ms = d < 1 ? 1 : (int64_t)d;
		}
	}
	json_decref(t);
	return n;
}

int main(int argc, char **argv)
{
	double mem_scale = 1, time_scale = 1, jitter = 0;
	int slots = 16, repeat = 1, search = 0, cpus = 0, nvcc_threads = 4;
	const char *order = "trace";
	unsigned long seed = 1;
	uint64_t limit = 0, budget = 0, other = 0;
	const char *path = NULL;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!strcmp(a, "--limit") && v && !size_parse(v, &limit))
			i++;
		else if (!strcmp(a, "--budget") && v && !size_parse(v, &budget))
			i++;
		else if (!strcmp(a, "--other") && v && !size_parse(v, &other))
			i++;
		else if (!strcmp(a, "--slots") && v && (slots = atoi(v)) >= 1 && slots <= 4096)
			i++;
		else if (!strcmp(a, "--repeat") && v && (repeat = atoi(v)) >= 1 && repeat <= 100)
			i++;
		else if (!strcmp(a, "--mem-scale") && v && (mem_scale = atof(v)) > 0 && mem_scale <= 1000)
			i++;
		else if (!strcmp(a, "--jitter") && v && (jitter = atof(v)) >= 0 && jitter <= 50)
			i++;
		else if (!strcmp(a, "--time-scale") && v && (time_scale = atof(v)) > 0 && time_scale <= 1000)
			i++;
		else if (!strcmp(a, "--seed") && v && (seed = strtoul(v, NULL, 10)) >= 1 && seed <= 1000000)
			i++;
		else if (!strcmp(a, "--search") && v && (search = atoi(v)) >= 1 && search <= 100000)
			i++;
		else if (!strcmp(a, "--cpus") && v && (cpus = atoi(v)) >= 1 && cpus <= 4096)
			i++;
		else if (!strcmp(a, "--threads") && v && (nvcc_threads = atoi(v)) >= 1 && nvcc_threads <= 64)
			i++;
		else if (!strcmp(a, "--order") && v &&
			 (!strcmp(v, "trace") || !strcmp(v, "shortest") || !strcmp(v, "longest") || !strcmp(v, "start")))
			order = argv[++i];
		else if (a[0] != '-' && !path)
			path = a;
		else {
			fprintf(stderr, "usage: simulate TRACE --limit SIZE [--budget SIZE] [--slots N] [--repeat K] "
					"[--other SIZE] [--mem-scale X] [--time-scale X] [--jitter PCT] [--seed N] [--search N] "
					"[--cpus N [--threads T]] [--order trace|shortest|longest|start]\n");
			return 2;
		}
	}
	if (!path || !limit) {
		fprintf(stderr, "simulate: a trace and --limit are needed\n");
		return 2;
	}
	if (limit <= net_default_reserve(limit) || (budget && budget > limit)) {
		fprintf(stderr, "simulate: --limit must exceed the reserve, --budget must not exceed --limit\n");
		return 2;
	}
	struct sim *s = xcalloc(1, sizeof(*s));
	struct tjob *tj;
	s->n = load(path, mem_scale, time_scale, repeat, &tj);
	if (!s->n) {
		fprintf(stderr, "simulate: %s has no jobs\n", path);
		return 2;
	}
	reorder(tj, s->n, order);
	s->tj = tj;
	s->cpus = cpus;
	s->nvcc_threads = nvcc_threads;
	s->j = xcalloc(s->n, sizeof(*s->j));
	s->slots = slots;
	s->jitter = jitter / 100;
	s->rng = seed;
	s->limit = limit;
	s->reserve = net_default_reserve(limit);
	s->other = other;
	s->budget = budget ? budget : limit - s->reserve;

	printf("# bench/build/simulate — %s, time x%g, memory x%g, repeat %d, %zu jobs\n", path, time_scale, mem_scale,
	       repeat, s->n);
	printf("# limit %.2f GiB, budget %.2f GiB (reserve %.2f), %d slots; virtual time, ", gib(limit), gib(s->budget),
	       gib(s->reserve), slots);
	if (cpus)
		printf("%d CPUs (nvcc --threads %d; over them each job slows by %.2f of the excess), ", cpus, nvcc_threads,
		       CONTENTION);
	else
		printf("no CPU contention, ");
	printf("order %s, job lengths under headroom varied by ±%g %% (seed %lu)\n", order, jitter, seed);
	int best = 0;
	int64_t best_ms = 0;
	printf("%-22s %9s %10s %s\n", "policy", "makespan", "peak GiB", "");
	for (int nj = 1; nj <= slots; nj++) {
		uint64_t pk;
		int64_t ms = cpus ? run_fixed_cpu(tj, s->n, nj, cpus, nvcc_threads, &pk) : run_fixed(tj, s->n, nj, &pk);
		const char *why = pk > limit ? "OOM (over the limit)" : pk > s->budget ? "over the budget" : "";
		printf("fixed -j%-14d %8.1fs %10.2f %s\n", nj, ms / 1000.0, gib(pk), why);
		if (pk <= limit && (!best || ms < best_ms)) {
			best = nj;
			best_ms = ms;
		}
	}
	/* lower bounds: the slots busy all along; the budget full all along; the longest job */
	double work_ms = 0, memtime = 0, longest = 0;
	for (size_t i = 0; i < s->n; i++) {
		work_ms += (double)tj[i].dur_ms;
		if ((double)tj[i].dur_ms > longest)
			longest = (double)tj[i].dur_ms;
		for (int64_t t = 0; t < tj[i].dur_ms; t += STEP_MS)
			memtime += (double)mem_at(&tj[i], t) * STEP_MS;
	}
	/* the jobs' room: the budget less what other processes hold */
	uint64_t room = s->budget > other ? s->budget - other : 1;
	double lb = work_ms / slots > memtime / (double)room ? work_ms / slots : memtime / (double)room;
	if (longest > lb)
		lb = longest;
	printf("\n| policy | makespan | peak GiB | vs budget | mean use of budget | freezes | stall thaws | kills | "
	       "x best fixed |\n");
	printf("| --- | --- | --- | --- | --- | --- | --- | --- | --- |\n");
	printf("| best fixed -j%d | %.1f s | | | | | | | 1.00 |\n", best, best_ms / 1000.0);
	/* the policy before stalled frozen jobs were thawed, fresh and warm; then as it is.
	 * SIM_POLICY (a list) changes the second: "none" as before, "stall,requeue" (the
	 * default), "small" (tried: freeze the job holding least first) */
	static const char *const runs[] = { "fresh, before", "warm, before", "fresh", "warm", "class only" };
	int recommended = 0;
	for (int r = 0; r < 5; r++) {
		const char *pol = getenv("SIM_POLICY") ? getenv("SIM_POLICY") : "stall,requeue";
		s->stall = r >= 2 && strstr(pol, "stall");
		s->smallest = r >= 2 && strstr(pol, "small");
		s->pre = r >= 2 && strstr(pol, "pre");
		s->requeue = r >= 2 && strstr(pol, "requeue");
		if (r == 2)
			s->sig.n = s->cls.n = 0;
		if (r == 4)
			class_only(s);
		int64_t ms = run_headroom(s);
		if (r == 3) {
			/* the report's recommendation: the curves learned, in the build's order */
			const struct curve **c = xmalloc(s->n * sizeof(*c));
			for (size_t i = 0; i < s->n; i++)
				c[i] = &prof_get(&s->sig, tj[i].sig)->c;
			recommended = admit_safe_fixed_jobs(c, s->n, s->limit - s->other);
			free(c);
		}
		printf("| headroom %s | %.1f s | %.2f | %s | %.0f %% | %d | %d | %d | %.2f |\n", runs[r], ms / 1000.0,
		       gib(s->peak), s->peak > limit ? "OOM" : s->peak > s->budget ? "over" : "within",
		       100.0 * s->mem_ms / ((double)ms * (double)s->budget), s->freezes, s->stall_thaws, s->kills,
		       (double)ms / (double)best_ms);
	}
	size_t *ord = xmalloc(s->n * sizeof(*ord));
	for (size_t i = 0; i < s->n; i++)
		ord[i] = i;
	int64_t bo = pack(tj, s->n, ord, slots, room);
	free(ord);
	printf("| offline packing, every curve known, in the build's order | %.1f s | | | | | | | %.2f |\n", bo / 1000.0,
	       (double)bo / (double)best_ms);
	int64_t lf = pack_best(tj, s->n, slots, room, 0, seed);
	printf("| offline packing, every curve known, no build tool's window: longest first | %.1f s | | | | | | | %.2f |\n",
	       lf / 1000.0, (double)lf / (double)best_ms);
	if (search) {
		int64_t ls = pack_best(tj, s->n, slots, room, search, seed);
		printf("| the same, after a local search of %d swaps | %.1f s | | | | | | | %.2f |\n", search,
		       ls / 1000.0, (double)ls / (double)best_ms);
	}
	for (int env = 0; env < 2 && s->n <= (size_t)slots; env++) {
		static const char *const known[] = { "every curve known exactly", "every curve as the store keeps it" };
		struct grid g;
		grid_init(&g, tj, s->n, room, env);
		double iv = (double)tj[0].interval_ms;
		for (int lf1 = 1; lf1 >= 0; lf1--) {
			size_t gg = grid_greedy(&g, tj, lf1);
			if (gg != SIZE_MAX)
				printf("| %s, each job started the moment it fits, %s (the policy's "
				       "admission without its margins), no contention | %.1f s | | | | | | | %.2f |\n",
				       known[env], lf1 ? "longest first" : "in the build's order", (double)gg * iv / 1000.0,
				       (double)gg * iv / (double)best_ms);
		}
		if (s->n <= EXHAUSTIVE_MAX) {
			size_t gb = grid_best(&g);
			if (gb != SIZE_MAX)
				printf("| offline packing, %s, the best of every order | %.1f s | | | | | | | %.2f |\n",
				       known[env], (double)gb * iv / 1000.0, (double)gb * iv / (double)best_ms);
		}
		grid_free(&g);
	}
	printf("| lower bound | %.1f s | | | | | | | %.2f |\n", lb / 1000.0, lb / (double)best_ms);
	/* what a build can reach with every job started at once: its longest job, after the
	 * jobs before the first barrier's... here the start is 0 */
	printf("| longest job + start | %.1f s | | | | | | | %.2f |\n", longest / 1000.0, longest / (double)best_ms);
	printf("\nrecommended fixed -j%d (the warm run's curves replayed in the build's order within the limit "
	       "less others' memory, as the report does); best fixed -j%d\n", recommended, best);
	for (size_t i = 0; i < s->n; i++)
		free(tj[i].rss);
	free(tj);
	free(s->j);
	free(s);
	return 0;
}
