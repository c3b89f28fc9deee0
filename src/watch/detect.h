/* The watchdog's detectors: pure policy over samples. The command feeds them what it
 * read (GPUs, processes, host memory) and acts on the events they return. */
#ifndef HEADROOM_DETECT_H
#define HEADROOM_DETECT_H

#include <stddef.h>
#include <stdint.h>

/* A time series of bytes for the trend (time-to-OOM), a fixed ring: at the fastest
 * sampling (100 ms) it spans 12.8 s. */
#define SERIES_POINTS 128
struct series {
	int64_t t_ms[SERIES_POINTS];
	double v[SERIES_POINTS];
	size_t n, head;
};

void series_add(struct series *s, int64_t t_ms, double v);
/* Least-squares slope (per second) over the points of the last window_ms; 0 when fewer
 * than 4 points. */
double series_slope_per_s(const struct series *s, int64_t now_ms, int64_t window_ms);

/* Time-to-OOM: seconds until the series reaches capacity, or -1 when it is not really
 * rising or would reach it only past max_s. Two projections, the sooner taken:
 * - the least-squares line over the window, when its slope is significant (at least
 *   SERIES_MIN_T standard errors above 0: memory that only wobbles has none);
 * - the steps, when the growth comes in jumps between two samples of at least
 *   SERIES_STEP_PCT of capacity (and SERIES_STEP_MIN_BYTES), at least two of them in
 *   the window, none undone by a fall as large, the last no older than twice their
 *   spacing: OOM comes with the first step of the largest size seen that no longer
 *   fits, one spacing after another. A line fitted to a staircase sees that step only
 *   once it has failed. */
#define SERIES_MIN_T 4.0
#define SERIES_STEP_PCT 1.0
#define SERIES_STEP_MIN_BYTES (256.0 * 1024 * 1024)
double series_time_to(const struct series *s, int64_t now_ms, int64_t window_ms, double capacity, double max_s);

/* Low free memory: is free under the absolute or the relative threshold? */
int detect_low_free(uint64_t free_bytes, uint64_t total_bytes, uint64_t min_free_bytes, double min_free_pct);

/* A process stuck: GPU memory held, unchanged and its GPU idle since since_ms. */
int detect_stuck(int64_t used_bytes, int64_t unchanged_since_ms, int util_pct, int64_t now_ms, int64_t timeout_ms);

/* Is a process a rank of a distributed job, by its environment (NUL-separated, as
 * /proc/PID/environ)? A rank has torchrun's TORCHELASTIC_RUN_ID, or torch.distributed's
 * RANK, LOCAL_RANK or WORLD_SIZE (which deepspeed, accelerate and Lightning set too).
 * Returns 1 for a rank, 0 otherwise. *key (the caller frees): its job where the
 * environment says it, whole, "torchelastic:ID", else "dist:MASTER_ADDR:MASTER_PORT"
 * (the job's rendezvous), else NULL (the caller groups it by its launcher). *rank: RANK,
 * else LOCAL_RANK, else -1. */
int detect_rank_from_environ(const char *env, size_t len, char **key, int *rank);

/* How a process ended, as far as watch could read it: only an exit status or a killing
 * signal read (watch's own child, an orphan it reaped, a zombie its parent had not yet
 * reaped) says it died. One whose parent reaped it first (bash's `wait`, mpirun) ended
 * in a way not known: it may have finished (exit 0) as well as died. */
enum wend {
	WEND_CLEAN,               /* exited 0 (read): it finished */
	WEND_FAILED,              /* a non-zero status or a killing signal (read) */
	WEND_ASKED,               /* SIGTERM, SIGINT or SIGHUP (read): asked to end */
	WEND_UNKNOWN,             /* its status could not be read */
	WEND_COUNT
};
/* The ending of a wait status (waitpid's, or a zombie's exit code in /proc/PID/stat). */
enum wend detect_end_of_status(int wait_status);
/* Its name in the JSON records: "clean", "failed", "asked", "unknown" ("?" out of range). */
const char *detect_end_name(enum wend e);
/* Whether it is a death, the only ending partial_death, its hooks and
 * --stop-job-on-partial-death act on: a status read as one. An unknown end is not. */
int detect_end_is_death(enum wend e);

/* Partial death: of a job's ranks ever seen, some died (a status read as a death:
 * detect_end_is_death) while others still run. A rank that exited 0 did not die: it
 * finished; one whose end could not be read is not taken for a death either. */
struct job_ranks {
	int seen;                 /* ranks (GPU processes) seen over the job's life */
	int alive;                /* still running */
	int died;                 /* ended in a death read as one */
};
int detect_partial_death(const struct job_ranks *j);
/* Whether a partial death is news: a job's first death always; a later one unless the
 * rank was asked to end (SIGTERM, SIGINT, SIGHUP): that is its launcher, a person or
 * headroom ending the job after the first, not a rank dying on its own. */
int detect_death_news(int died_before, int asked_to_end);
/* Whether a rank's end raises partial_death (and with it the hooks and the stop of
 * --stop-job-on-partial-death): a death (detect_end_is_death) that leaves the job
 * (counted after this end: j) partly running, news (detect_death_news), in a job whose
 * ranks headroom has not signalled itself (job_signalled: those deaths are its own). */
int detect_partial_death_event(const struct job_ranks *j, enum wend end, int job_signalled);

#endif
