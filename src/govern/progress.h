/* The live progress line of a governed build on a terminal:
 *   [37/96] running 14 · 3 waiting for memory · jobs 81.0/110.0 GiB budget · ETA 6m
 * (the jobs' memory together against the budget in force, never the machine's RAM)
 * kept on the terminal's last line below a scroll region, so that the build's own
 * output (ninja's status line included) scrolls above it. */
#ifndef HEADROOM_PROGRESS_H
#define HEADROOM_PROGRESS_H

#include <stddef.h>
#include <stdint.h>

struct progress_state {
	int done;                 /* jobs finished */
	int total;                /* jobs the build will run: 0 when unknown */
	int running, frozen;
	int waiting_memory;       /* waiting with a CPU slot free (job_waits_for_memory) */
	int waiting_slot;         /* waiting for a CPU slot: the cap runs */
	uint64_t jobs_bytes;      /* the jobs' resident memory together */
	uint64_t budget_bytes;    /* the budget in force */
	int64_t eta_ms;           /* < 0 when unknown */
};

/* What the ETA is computed from; times in ms. */
struct progress_eta_in {
	int64_t elapsed_ms;       /* since the build started */
	int64_t done_work_ms;     /* the finished jobs' durations, summed */
	int done, total, running; /* total 0: unknown */
	int64_t running_left_ms;  /* predicted time left of the running jobs, summed */
	int64_t last_wall_ms;     /* the same build's last wall time; 0 unknown */
	int jobs_cap;
};

/* The ETA in ms, or -1 when it cannot be told: work left (running jobs' predicted rest,
 * and the jobs not started at the mean duration so far) over the parallelism reached. */
int64_t progress_eta(const struct progress_eta_in *in);
/* Format one line (no newline) into buf; utf8 selects "·" over ",". */
void progress_format(const struct progress_state *s, int utf8, char *buf, size_t size);

struct progress {
	int fd;                   /* -1: no live line */
	int rows;                 /* the terminal's height when the region was set */
	int utf8;
};

/* Start a live line on fd if it is a terminal (TERM not dumb). Always safe to call
 * progress_show and progress_close after it. */
void progress_open(struct progress *p, int fd);
void progress_show(struct progress *p, const struct progress_state *s);
/* Clear the line and give the whole terminal back. */
void progress_close(struct progress *p);

#endif
