#include "govern/admit.h"

/* A job's progress is judged by its elapsed time, but compile jobs slow down or speed up
 * with the load, so each prediction is widened by this share of its duration either way. */
#define SMEAR_PCT 5
/* A job above its prediction is assumed to stay above by the same ratio, up to this. */
#define MAX_SCALE 4.0
/* Below this, a ratio between seen and predicted memory is noise (start-up). */
#define SCALE_MIN_BYTES (32ULL << 20)

static uint64_t smeared(const struct curve *c, int64_t t_ms)
{
	int64_t w = c->duration_ms * SMEAR_PCT / 100;
	return curve_max_between(c, t_ms - w, t_ms + w);
}

uint64_t admit_job_future(const struct admit_job *j, uint64_t unknown_bytes, int64_t tau_ms)
{
	uint64_t v;

	if (!j->pred || j->pred->duration_ms <= 0) {
		/* Nothing known: it keeps what it has and may grow to the assumed need. */
		v = unknown_bytes;
		return j->current_bytes > v ? j->current_bytes : v;
	}
	if (j->frozen)
		return j->current_bytes; /* held, not growing, until thawed */

	struct curve c = *j->pred;
	/* Running late: stretch the prediction so that the job is never assumed to have
	 * ended while it still runs. */
	if (j->elapsed_ms * 10 > c.duration_ms * 9)
		c.duration_ms = j->elapsed_ms * 10 / 9 + 1;
	uint64_t now_pred = smeared(&c, j->elapsed_ms);
	double scale = 1.0;
	if (j->current_bytes > SCALE_MIN_BYTES && now_pred && j->current_bytes > now_pred) {
		scale = (double)j->current_bytes / (double)now_pred;
		if (scale > MAX_SCALE)
			scale = MAX_SCALE;
	}
	v = (uint64_t)((double)smeared(&c, j->elapsed_ms + tau_ms) * scale);
	if (tau_ms == 0 && j->current_bytes > v)
		v = j->current_bytes;
	return v;
}

void admit_decide(const struct admit_snapshot *s, const struct curve *cand, struct admit_result *r)
{
	/* Look as far ahead as the candidate lives; an unknown one as far as a minute. */
	int64_t horizon = cand && cand->duration_ms > 0 ? cand->duration_ms : 60000;
	int64_t step = horizon / 128;
	uint64_t cur = 0;

	if (step < 50)
		step = 50;
	for (size_t i = 0; i < s->njobs; i++)
		cur += s->jobs[i].current_bytes;

	r->admit = 1;
	r->worst_bytes = 0;
	r->worst_at_ms = 0;
	for (int64_t tau = 0; tau <= horizon; tau += step) {
		uint64_t total = 0, c;

		for (size_t i = 0; i < s->njobs; i++)
			total += admit_job_future(&s->jobs[i], s->unknown_bytes, tau);
		if (cand && cand->duration_ms > 0) {
			int64_t w = cand->duration_ms * SMEAR_PCT / 100;
			c = curve_max_between(cand, tau - w, tau + w);
		} else {
			c = s->unknown_bytes;
		}
		total += c;
		if (total > r->worst_bytes) {
			r->worst_bytes = total;
			r->worst_at_ms = tau;
		}
		/* The budget caps the jobs together; free memory caps what they may still add
		 * now, since others on the machine may have taken part of the budget. */
		uint64_t growth = total > cur ? total - cur : 0;
		if (total > s->budget_bytes || growth > s->free_bytes)
			r->admit = 0;
	}
}

uint64_t net_default_reserve(uint64_t limit_bytes)
{
	uint64_t r = limit_bytes / 100 * 6;

	if (r < (64ULL << 20))
		r = 64ULL << 20;
	if (r > (2ULL << 30))
		r = 2ULL << 30;
	return r;
}

enum net_action net_decide(const struct net_state *s)
{
	uint64_t avail = s->limit_bytes > s->used_bytes ? s->limit_bytes - s->used_bytes : 0;
	uint64_t rise = s->growth_bytes_per_s / 1000 * NET_LOOKAHEAD_MS;
	uint64_t soon = avail > rise ? avail - rise : 0;

	/* Critical: a third of the reserve left, or the limit reached within the lookahead
	 * while already inside the reserve, or the kernel stalling everything on reclaim.
	 * One kill at a time: give the memory a moment to come back. */
	if (avail < s->reserve_bytes / 3 || (soon == 0 && avail < s->reserve_bytes) ||
	    (s->psi_full_avg10_pct >= 0 && s->psi_full_avg10_pct > 20.0))
		return s->ms_since_last_kill >= 1000 ? NET_KILL : NET_FREEZE;
	if (soon < s->reserve_bytes)
		return NET_FREEZE;
	if (soon < s->reserve_bytes * 2)
		return NET_HOLD;
	return NET_OK;
}

enum net_action net_apply_budget(enum net_action act, uint64_t jobs_bytes, uint64_t budget_bytes)
{
	return act == NET_OK && jobs_bytes > budget_bytes ? NET_FREEZE : act;
}

uint64_t net_lookahead_growth(uint64_t bytes_per_s)
{
	return bytes_per_s / 1000 * NET_LOOKAHEAD_MS;
}

int net_freeze_done(int frozen, int running, uint64_t growth_bytes, uint64_t avail_bytes, uint64_t reserve_bytes)
{
	uint64_t room = avail_bytes > reserve_bytes / 2 ? avail_bytes - reserve_bytes / 2 : 0;

	return running <= 1 || (frozen && growth_bytes <= room);
}

uint64_t admit_unknown_need(uint64_t budget_bytes, int tree, const struct admit_job *jobs, size_t njobs)
{
	uint64_t u = budget_bytes / (tree ? 2 : 4);

	for (size_t i = 0; i < njobs; i++) {
		uint64_t cur = jobs[i].current_bytes;
		if (!jobs[i].pred && cur + cur / 2 > u)
			u = cur + cur / 2;
	}
	return u;
}

uint64_t admit_thaw_need(const struct admit_job *j, uint64_t unknown_bytes)
{
	struct admit_job running = *j;
	int64_t h = j->pred ? j->pred->duration_ms : 10000;
	uint64_t need = 0;

	running.frozen = 0;
	for (int64_t t = 0; t <= h; t += h / 32 + 1) {
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
	int64_t horizon = known ? next->duration_ms : 60000;
	int64_t step = horizon / 128;
	uint64_t cur = 0, most = UINT64_MAX;
	int want;

	if (waiting || running >= jobs_cap)
		return 0;
	if (step < 50)
		step = 50;
	for (size_t i = 0; i < s->njobs; i++)
		cur += s->jobs[i].current_bytes;
	uint64_t cap = s->budget_bytes;
	if (s->free_bytes < cap && cur + s->free_bytes < cap)
		cap = cur + s->free_bytes;
	for (int64_t tau = 0; tau <= horizon && most; tau += step) {
		uint64_t base = 0, c = known ? smeared(next, tau) : s->unknown_bytes, fit;

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
