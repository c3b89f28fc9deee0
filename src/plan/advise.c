#include "plan/advise.h"

#include <pthread.h>
#include <string.h>

#include "plan/model.h"
#include "util/thread.h"

struct advise {
	const struct fit *f;
	const struct model_shape *m;
	struct train_settings t;   /* the plan's, with the notifier */
	struct plan_result *r;
	const char *why;
	int rc;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int past, done;
};

static void tell(struct advise *a, int *flag)
{
	pthread_mutex_lock(&a->mu);
	*flag = 1;
	pthread_cond_signal(&a->cv);
	pthread_mutex_unlock(&a->mu);
}

static void on_past(void *ctx)
{
	struct advise *a = ctx;

	tell(a, &a->past);
}

static void *plan_thread(void *arg)
{
	struct advise *a = arg;

	a->rc = fit_plan(a->f, a->m, &a->t, a->r, &a->why);
	tell(a, &a->done);
	return NULL;
}

/* The plan on a thread of its own; 1 when the hint was found beside it, 0 when it is
 * still to find, -1 when no thread could be had (nothing done). */
static int beside(struct advise *a, const struct train_settings *t, const char *const *locks, size_t nlocks,
		  struct hint *h)
{
	pthread_t th;
	int past;

	if (thread_start(&th, plan_thread, a))
		return -1;
	pthread_mutex_lock(&a->mu);
	while (!a->past && !a->done)
		pthread_cond_wait(&a->cv, &a->mu);
	past = a->past;
	pthread_mutex_unlock(&a->mu);
	if (past) /* (the hint is only asked for when the plan does not fit: see below) */
		hint_find(a->f, a->m, t, NULL, locks, nlocks, h);
	pthread_join(th, NULL);
	return past;
}

int plan_advise(const struct fit *f, const struct model_shape *m, const struct train_settings *t,
		const char *const *locks, size_t nlocks, struct plan_result *r, struct hint *h, const char **why)
{
	struct advise a = { .f = f, .m = m, .t = *t, .r = r };
	int found = -1;

	memset(h, 0, sizeof(*h));
	a.t.past = on_past;
	a.t.past_ctx = &a;
	if (plan_cpus() > 1 && !pthread_mutex_init(&a.mu, NULL)) {
		if (!pthread_cond_init(&a.cv, NULL)) {
			found = beside(&a, t, locks, nlocks, h);
			pthread_cond_destroy(&a.cv);
		}
		pthread_mutex_destroy(&a.mu);
	}
	if (found < 0) { /* one CPU, or no thread: in turn */
		a.t.past = NULL;
		a.rc = fit_plan(f, m, &a.t, r, &a.why);
		found = 0;
	}
	*why = a.why;
	if (a.rc)
		return a.rc;
	if (fit_ok(f, r)) /* told early, and then the run on the card took less */
		memset(h, 0, sizeof(*h));
	else if (!found)
		hint_find(f, m, t, NULL, locks, nlocks, h);
	return 0;
}
