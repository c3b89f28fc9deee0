#include "watch/state.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/escape.h"
#include "util/grow.h"
#include "util/strbuf.h"
#include "util/xalloc.h"

int wjob_id_same(const struct wjob_id *a, const struct wjob_id *b)
{
	return a->uid == b->uid && a->origin == b->origin && a->origin_start == b->origin_start &&
	       !strcmp(a->key, b->key);
}

static struct wjob_id id_copy(const struct wjob_id *id)
{
	struct wjob_id c = *id;

	c.key = xstrdup(id->key);
	return c;
}

struct wjob *watch_state_job(struct watch_state *w, const struct wjob_id *id)
{
	struct wjob *j;

	for (size_t i = 0; i < w->njobs; i++)
		if (wjob_id_same(&w->jobs[i].id, id))
			return &w->jobs[i];
	ARRAY_GROW(w->jobs, w->njobs + 1, w->capjobs);
	j = &w->jobs[w->njobs++];
	memset(j, 0, sizeof(*j));
	j->id = id_copy(id);
	return j;
}

struct wproc *watch_state_proc(struct watch_state *w, pid_t pid, unsigned gpu)
{
	for (size_t i = 0; i < w->nprocs; i++)
		if (w->procs[i].pid == pid && w->procs[i].gpu == gpu)
			return &w->procs[i];
	return NULL;
}

struct wproc *watch_state_add_proc(struct watch_state *w, pid_t pid, unsigned gpu, int64_t now_ms,
				   const struct wjob_id *job, int rank)
{
	struct wproc *p;
	struct wjob *j;

	ARRAY_GROW(w->procs, w->nprocs + 1, w->capprocs);
	p = &w->procs[w->nprocs++];
	memset(p, 0, sizeof(*p));
	p->pid = pid;
	p->gpu = gpu;
	p->alive = 1;
	p->used_bytes = p->peak_bytes = -1;
	p->unchanged_since_ms = now_ms;
	p->pidfd = -1;
	p->job = id_copy(job);
	p->rank = rank;
	j = watch_state_job(w, &p->job);
	for (size_t i = 0; i + 1 < w->nprocs; i++)
		if (w->procs[i].pid == pid && w->procs[i].alive && wjob_id_same(&w->procs[i].job, &p->job))
			return p; /* counted already, on another GPU */
	j->seen++;
	j->alive++;
	return p;
}

#define KEEP_ENDED 256
void watch_state_forget_ended(struct watch_state *w)
{
	size_t k = 0;

	if (w->nprocs <= KEEP_ENDED && w->njobs <= KEEP_ENDED)
		return;
	for (size_t i = 0; i < w->nprocs; i++) {
		struct wproc *p = &w->procs[i];
		if (p->alive || watch_state_job(w, &p->job)->alive)
			w->procs[k++] = *p;
		else
			free(p->job.key);
	}
	w->nprocs = k;
	k = 0;
	for (size_t i = 0; i < w->njobs; i++) {
		if (w->jobs[i].alive)
			w->jobs[k++] = w->jobs[i];
		else
			free(w->jobs[i].id.key);
	}
	w->njobs = k;
}

void watch_state_log_event(struct watch_state *w, enum watch_event e, int64_t wall_ms, const char *msg)
{
	struct strbuf t = STRBUF_INIT;

	if (w->nlog == WATCH_EVENT_LOG_MAX) {
		free(w->log[0].msg);
		memmove(w->log, w->log + 1, (w->nlog - 1) * sizeof(*w->log));
		w->nlog--;
		w->log_dropped++;
	}
	ARRAY_GROW(w->log, w->nlog + 1, w->caplog);
	esc_term(&t, msg);
	w->log[w->nlog++] = (struct wevent_rec){ wall_ms, e, strbuf_detach(&t) };
}

void watch_state_free(struct watch_state *w)
{
	for (size_t i = 0; i < w->nlog; i++)
		free(w->log[i].msg);
	free(w->log);
	w->log = NULL;
	w->nlog = w->caplog = 0;
	for (size_t i = 0; i < w->nprocs; i++)
		free(w->procs[i].job.key);
	for (size_t i = 0; i < w->njobs; i++)
		free(w->jobs[i].id.key);
	free(w->gpus);
	free(w->procs);
	free(w->jobs);
	w->gpus = NULL;
	w->procs = NULL;
	w->jobs = NULL;
	w->ngpus = w->nprocs = w->njobs = w->capprocs = w->capjobs = 0;
}

int watch_job_key(const char *env, size_t env_len, pid_t pid, pid_t command, pid_t ppid, char **key, int *rank)
{
	*rank = -1;
	*key = NULL;
	if (env && detect_rank_from_environ(env, env_len, key, rank)) {
		if (*key)
			return 1;
		if (command > 0)
			*key = xasprintf("cmd:%d", (int)command);
		else if (ppid > 1)
			*key = xasprintf("parent:%d", (int)ppid);
		else
			*key = xasprintf("pid:%d", (int)pid);
		return 1;
	}
	*key = xasprintf("pid:%d", (int)pid);
	return 0;
}
