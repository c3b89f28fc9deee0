#include "govern/admit.h"

#include <stdlib.h>
#include <string.h>

#include "util/xalloc.h"

/* A job's progress is judged by its elapsed time, but compile jobs slow down or speed up
 * with the load, so each prediction is widened by this share of its duration either way:
 * less for a job's own profile (the same job run before: only its pace differs) than for
 * its class's (other jobs: their shapes differ too). */
#define SMEAR_PCT 5
#define SMEAR_OWN_PCT 2
/* A job above its prediction is assumed to stay above by the same ratio, up to this. */
#define MAX_SCALE 4.0
/* A job past this share of its predicted duration runs late: its prediction is stretched
 * so that it ends after this share, never before the job. */
#define LATE_PCT 90
/* Below this, a ratio between seen and predicted memory is noise (start-up). */
#define SCALE_MIN_BYTES (32ULL << 20)
/* A job past its peak under its class's provisional curve is predicted at the curve scaled
 * down to what it holds, to no less than this share of the curve (1/PASSED_DOWN_MIN_DIV):
 * the curve is the envelope of the class's first jobs, and a kernel's tail after its peak
 * differs from another's by up to a few times (a forward kernel's beside a backward one's). */
#define PASSED_DOWN_MIN_DIV 4

static uint64_t smeared(const struct curve *c, int own, int64_t t_ms)
{
	int64_t w = c->duration_ms * (own ? SMEAR_OWN_PCT : SMEAR_PCT) / 100;
	return curve_max_between(c, t_ms - w, t_ms + w);
}

/* What admit_job_future() needs of a job whatever tau: computed once per job, not once
 * per job and step (admission looks AHEAD_STEPS steps ahead for every running job). */
struct future {
	const struct admit_job *j;
	struct curve c;             /* the prediction, stretched when the job runs late */
	int known;
	double scale;               /* above the prediction: the job's ratio to it */
	double down;                /* past its peak, under an open curve: its ratio to it */
	int64_t peak_end_ms;        /* when the curve last holds half its peak or more */
};

/* A candidate's memory at t_ms of its curve, which may be open: past an open curve's end,
 * its last level. (A running job's open curve is stretched as any other when it runs late:
 * holding its last level instead kept room from the next jobs for no gain.) */
static uint64_t smeared_open(const struct curve *c, int own, int open, int64_t t_ms)
{
	if (open && t_ms >= c->duration_ms)
		return c->pts[CURVE_POINTS - 1];
	return smeared(c, own, t_ms);
}

static void future_prepare(const struct admit_job *j, struct future *f)
{
	f->j = j;
	f->known = j->pred && j->pred->duration_ms > 0;
	f->scale = f->down = 1.0;
	if (!f->known || j->frozen)
		return;
	f->c = *j->pred;
	f->peak_end_ms = 0;
	for (int k = 0; k < CURVE_POINTS; k++)
		if (f->c.pts[k] >= f->c.peak_bytes / 2)
			f->peak_end_ms = f->c.duration_ms * (k + 1) / CURVE_POINTS;
	/* Running late: stretch the prediction so that the job is never assumed to have
	 * ended while it still runs. */
	if (j->elapsed_ms * 100 > f->c.duration_ms * LATE_PCT)
		f->c.duration_ms = j->elapsed_ms * 100 / LATE_PCT + 1;
	uint64_t now_pred = smeared(&f->c, j->own, j->elapsed_ms);
	if (j->current_bytes > SCALE_MIN_BYTES && now_pred && j->current_bytes > now_pred) {
		f->scale = (double)j->current_bytes / (double)now_pred;
		if (f->scale > MAX_SCALE)
			f->scale = MAX_SCALE;
	}
	/* Its share of the curve where the curve has passed its peak too (the curve itself
	 * at its age, not widened: on a falling edge the widened curve still holds the peak). */
	uint64_t at_age = curve_max_between(&f->c, j->elapsed_ms, j->elapsed_ms);
	if (j->open && !j->rising && j->elapsed_ms >= f->peak_end_ms && at_age && j->current_bytes < at_age) {
		f->down = (double)j->current_bytes / (double)at_age;
		if (f->down < 1.0 / PASSED_DOWN_MIN_DIV)
			f->down = 1.0 / PASSED_DOWN_MIN_DIV;
	}
}

static uint64_t future_at(const struct future *f, uint64_t unknown_bytes, int64_t tau_ms)
{
	const struct admit_job *j = f->j;
	uint64_t v;

	if (!f->known) {
		/* Nothing known: it keeps what it has and may grow to the assumed need. */
		v = unknown_bytes;
		return j->current_bytes > v ? j->current_bytes : v;
	}
	if (j->frozen)
		return j->current_bytes; /* held, not growing, until thawed */
	v = (uint64_t)((double)smeared(&f->c, j->own, j->elapsed_ms + tau_ms) * f->scale * f->down);
	/* Behind its class's provisional curve: still rising where the class's first jobs had
	 * already passed their peaks. It is slower than they were, and a compile job that rises
	 * for longer is the larger one (a backward kernel beside forward ones): it is taken to
	 * reach at least the curve's peak until it has passed its own. */
	if (j->open && j->rising && j->elapsed_ms >= f->peak_end_ms) {
		uint64_t floor = f->c.peak_bytes > j->current_bytes ? f->c.peak_bytes : j->current_bytes;
		if (v < floor)
			v = floor;
	}
	if (tau_ms == 0 && j->current_bytes > v)
		v = j->current_bytes;
	return v;
}

uint64_t admit_job_future(const struct admit_job *j, uint64_t unknown_bytes, int64_t tau_ms)
{
	struct future f;

	future_prepare(j, &f);
	return future_at(&f, unknown_bytes, tau_ms);
}

/* How far ahead a job of unknown length is looked at. */
#define UNKNOWN_HORIZON_MS 60000
/* Steps of the look ahead over a horizon, none shorter than the minimum: the predictions
 * are 64 slices of a job's life, so twice that many steps see every slice. */
#define AHEAD_STEPS 128
#define AHEAD_STEP_MIN_MS 50

void admit_decide(const struct admit_snapshot *s, const struct curve *cand, int cand_how, struct admit_result *r)
{
	int cand_own = cand_how & ADMIT_OWN, cand_open = cand_how & ADMIT_OPEN;
	/* Look as far ahead as the candidate lives (an open one: at least as far as an
	 * unknown one). */
	int64_t horizon = cand && cand->duration_ms > 0 ? cand->duration_ms : UNKNOWN_HORIZON_MS;

	if (cand_open && horizon < UNKNOWN_HORIZON_MS)
		horizon = UNKNOWN_HORIZON_MS;
	int64_t step = horizon / AHEAD_STEPS;
	uint64_t cur = 0;

	if (step < AHEAD_STEP_MIN_MS)
		step = AHEAD_STEP_MIN_MS;
	struct future *f = xmalloc((s->njobs ? s->njobs : 1) * sizeof(*f));
	for (size_t i = 0; i < s->njobs; i++) {
		cur += s->jobs[i].current_bytes;
		future_prepare(&s->jobs[i], &f[i]);
	}

	r->admit = 1;
	r->worst_bytes = 0;
	r->worst_at_ms = 0;
	r->short_of_free = 0;
	int over_budget = 0;
	for (int64_t tau = 0; tau <= horizon; tau += step) {
		uint64_t total = 0, c;

		for (size_t i = 0; i < s->njobs; i++)
			total += future_at(&f[i], s->unknown_bytes, tau);
		if (cand && cand->duration_ms > 0)
			c = smeared_open(cand, cand_own, cand_open, tau);
		else
			c = s->unknown_bytes;
		total += c;
		if (total > r->worst_bytes) {
			r->worst_bytes = total;
			r->worst_at_ms = tau;
		}
		/* The budget caps the jobs together; free memory caps what they may still add
		 * now, since others on the machine may have taken part of the budget. */
		uint64_t growth = total > cur ? total - cur : 0;
		over_budget |= total > s->budget_bytes;
		if (total > s->budget_bytes || growth > s->free_bytes)
			r->admit = 0;
	}
	r->short_of_free = !r->admit && !over_budget;
	free(f);
}

/* A job predicted to run longer than this waits for the tick, which costs it a tenth of
 * its time at most, so that a burst is sorted before any of its long jobs starts. */
#define AT_ONCE_MAX_MS 1000

int admit_at_once(const struct admit_snapshot *s, const struct curve *cand)
{
	uint64_t sum = cand ? cand->peak_bytes : s->unknown_bytes;

	if (cand && cand->duration_ms > AT_ONCE_MAX_MS)
		return 0;
	for (size_t i = 0; i < s->njobs; i++) {
		const struct admit_job *j = &s->jobs[i];
		uint64_t need = j->pred ? j->pred->peak_bytes : s->unknown_bytes;
		sum += need > j->current_bytes ? need : j->current_bytes;
	}
	return sum <= s->budget_bytes / 2;
}

/* The ramp: an unknown job is priced at this share of the room (1/RAMP_DIV), or a seen
 * peak and that share more; with --tree, where a job killed for memory cannot run again,
 * twice as cautious. */
#define RAMP_DIV 4
#define RAMP_TREE_DIV 2

uint64_t admit_unknown_need(uint64_t budget_bytes, uint64_t free_bytes, int tree, uint64_t seen_peak_bytes,
			    const struct admit_job *jobs, size_t njobs)
{
	uint64_t u, room = free_bytes;

	int div = tree ? RAMP_TREE_DIV : RAMP_DIV;
	uint64_t seen = seen_peak_bytes + seen_peak_bytes / (uint64_t)div;

	for (size_t i = 0; i < njobs; i++)
		room += jobs[i].current_bytes;
	if (room > budget_bytes)
		room = budget_bytes;
	u = room / (uint64_t)div;
	if (seen > u)
		u = seen;
	for (size_t i = 0; i < njobs; i++) {
		uint64_t cur = jobs[i].current_bytes;
		if (!jobs[i].pred && 2 * cur > u)
			u = 2 * cur;
	}
	return u;
}

struct peak_at {
	uint64_t peak;
	size_t i;
};

static int peak_cmp(const void *a, const void *b)
{
	const struct peak_at *x = a, *y = b;

	if (x->peak != y->peak)
		return x->peak < y->peak ? -1 : 1;
	return (x->i > y->i) - (x->i < y->i);
}

size_t admit_class_pick(const uint64_t *peaks, size_t n)
{
	struct peak_at *v;
	size_t best;

	if (!n)
		return 0;
	v = xmalloc(n * sizeof(*v));
	for (size_t i = 0; i < n; i++)
		v[i] = (struct peak_at){ peaks[i], i };
	qsort(v, n, sizeof(*v), peak_cmp);
	best = v[(n - 1) * ADMIT_CLASS_PCT / 100].i;
	free(v);
	return best;
}

/* Under this a maximum is start-up noise, not a peak. */
#define PEAK_MIN_BYTES (32ULL << 20)

/* The valley after a peak is confirmed after a quarter (1/PASSED_CONFIRM_RISE_DIV) of the
 * rise to it, at least PASSED_CONFIRM_MIN_MS and at most the rise itself: compile jobs fall sharply when their big process
 * (cicc, cc1plus) ends, and the wait is time lost to the jobs still waiting. */
#define PASSED_CONFIRM_MIN_MS 5000
#define PASSED_CONFIRM_RISE_DIV 4

/* How many times the job rose to half its maximum or more and fell to under half of that
 * rise's own top: its peaks so far, small start-up bumps not counted. */
static int peaks_seen(const struct admit_obs *o, uint64_t max)
{
	uint64_t top = 0;
	int n = 0;

	for (size_t i = 0; i < o->nsamples; i++) {
		uint64_t v = o->samples[i].rss_bytes;
		if (v > top)
			top = v;
		if (top >= max / 2 && v < top / 2) {
			n++;
			top = v;
		}
	}
	return n;
}

int admit_passed_peak(const struct admit_obs *o)
{
	uint64_t max = 0;
	int64_t t_max = 0, t_high = 0;

	for (size_t i = 0; i < o->nsamples; i++)
		if (o->samples[i].rss_bytes > max) {
			max = o->samples[i].rss_bytes;
			t_max = o->samples[i].t_ms;
		}
	if (max < PEAK_MIN_BYTES)
		return 0;
	/* the last moment it held half its maximum or more */
	for (size_t i = 0; i < o->nsamples; i++)
		if (o->samples[i].rss_bytes >= max / 2)
			t_high = o->samples[i].t_ms;
	if (o->samples[o->nsamples - 1].rss_bytes >= max / 2)
		return 0;
	if (peaks_seen(o, max) < (o->peaks > 1 ? o->peaks : 1))
		return 0;
	int64_t confirm = t_max / PASSED_CONFIRM_RISE_DIV > PASSED_CONFIRM_MIN_MS ? t_max / PASSED_CONFIRM_RISE_DIV
										   : PASSED_CONFIRM_MIN_MS;
	/* at most the rise, but never under the minimum: a rise of a second or two is a
	 * start-up bump (nvcc's preprocessing before cicc), not the job's peak */
	if (confirm > t_max && t_max >= PASSED_CONFIRM_MIN_MS)
		confirm = t_max;
	return o->elapsed_ms - t_high >= confirm && o->elapsed_ms > t_high;
}

int admit_provisional(const struct admit_obs *obs, const int *passed, size_t n, struct curve *out)
{
	int64_t dur = 0;
	uint64_t seen = 0;
	int any = 0;

	for (size_t i = 0; i < n; i++) {
		uint64_t m = curve_samples_max(obs[i].samples, obs[i].nsamples);
		if (m > seen)
			seen = m;
		if (passed[i] && obs[i].nsamples && obs[i].elapsed_ms > dur)
			dur = obs[i].elapsed_ms;
	}
	memset(out, 0, sizeof(*out));
	out->duration_ms = dur > 0 ? dur : 1;
	for (size_t i = 0; i < n; i++) {
		struct curve c;
		if (!passed[i] || curve_from_samples(obs[i].samples, obs[i].nsamples, dur, &c))
			continue;
		/* a job that has run less than the longest holds its last level to the end */
		for (int k = 0; k < CURVE_POINTS; k++)
			if (c.pts[k] > out->pts[k])
				out->pts[k] = c.pts[k];
		any = 1;
	}
	if (!any)
		return 0;
	curve_update_peak(out);
	if (seen > out->peak_bytes && out->peak_bytes) {
		double f = (double)seen / (double)out->peak_bytes;
		for (int k = 0; k < CURVE_POINTS; k++)
			out->pts[k] = (uint64_t)((double)out->pts[k] * f);
		curve_update_peak(out);
	}
	return 1;
}

static int wait_cmp(const void *a, const void *b)
{
	const struct admit_wait *x = a, *y = b;
	int64_t dx = x->duration_ms, dy = y->duration_ms;

	if (dx != dy)
		return dx > dy ? -1 : 1;
	return (x->seq > y->seq) - (x->seq < y->seq);
}

void admit_order(struct admit_wait *w, size_t n, int64_t unknown_ms)
{
	for (size_t i = 0; i < n; i++)
		if (w[i].duration_ms < 0)
			w[i].duration_ms = unknown_ms < 0 ? INT64_MAX : unknown_ms;
	if (n > 1)
		qsort(w, n, sizeof(*w), wait_cmp);
}

/* A frozen job of unknown shape is looked at over this much of its future; its future is
 * looked at in this many steps (half the curve's slices: a thaw is tried each tick). */
#define THAW_UNKNOWN_MS 10000
#define THAW_STEPS 32

uint64_t admit_thaw_need(const struct admit_job *j, uint64_t unknown_bytes)
{
	struct admit_job running = *j;
	int64_t h = j->pred ? j->pred->duration_ms : THAW_UNKNOWN_MS;
	uint64_t need = 0;

	running.frozen = 0;
	for (int64_t t = 0; t <= h; t += h / THAW_STEPS + 1) {
		uint64_t v = admit_job_future(&running, unknown_bytes, t);
		if (v > need)
			need = v;
	}
	return need > j->current_bytes ? need - j->current_bytes : 0;
}

int admit_thaw_fits(uint64_t need_bytes, uint64_t avail_bytes, uint64_t reserve_bytes, uint64_t jobs_bytes,
		    uint64_t budget_bytes)
{
	return avail_bytes > reserve_bytes && need_bytes <= avail_bytes - reserve_bytes &&
	       jobs_bytes + need_bytes <= budget_bytes;
}

int admit_tokens(const struct admit_snapshot *s, const struct curve *next, int running, int jobs_cap,
		 int waiting)
{
	/* k jobs like next, all starting now, add k times next's curve at each moment: the
	 * most that pass admit_decide()'s two bounds is the least room / need over its steps,
	 * one pass over the running jobs, however large jobs_cap is. */
	int known = next && next->duration_ms > 0;
	int64_t horizon = known ? next->duration_ms : UNKNOWN_HORIZON_MS;
	int64_t step = horizon / AHEAD_STEPS;
	uint64_t cur = 0, most = UINT64_MAX;
	int want;

	if (waiting || running >= jobs_cap)
		return 0;
	if (step < AHEAD_STEP_MIN_MS)
		step = AHEAD_STEP_MIN_MS;
	for (size_t i = 0; i < s->njobs; i++)
		cur += s->jobs[i].current_bytes;
	uint64_t cap = s->budget_bytes;
	if (s->free_bytes < cap && cur + s->free_bytes < cap)
		cap = cur + s->free_bytes;
	for (int64_t tau = 0; tau <= horizon && most; tau += step) {
		uint64_t base = 0, c = known ? smeared(next, 0, tau) : s->unknown_bytes, fit;

		for (size_t i = 0; i < s->njobs; i++)
			base += admit_job_future(&s->jobs[i], s->unknown_bytes, tau);
		fit = base > cap ? 0 : c ? (cap - base) / c : UINT64_MAX;
		if (fit < most)
			most = fit;
	}
	/* With nothing at all running, one job runs whatever its prediction. */
	if (!most && !s->njobs)
		most = 1;
	want = most < (uint64_t)(jobs_cap - running) ? (int)most : jobs_cap - running;
	return running == 0 && want > 0 ? want - 1 : want;
}
