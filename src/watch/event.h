/* The kinds of event the watchdog raises, and what each is: one table that the
 * stderr line, the JSON record, the Prometheus counter and the summary all read. */
#ifndef HEADROOM_WATCH_EVENT_H
#define HEADROOM_WATCH_EVENT_H

#include <stddef.h>
#include <stdint.h>

/* The order is the order of Prometheus's headroom_events_total samples and of the
 * summary's counts; what a kind means is in its table row, never in its position. */
enum watch_event {
	EV_LOW_FREE, EV_TIME_TO_OOM, EV_PARTIAL_DEATH, EV_STUCK, EV_PROCESS_EXIT, EV_READ_FAILED,
	EV_JOB_STOPPED, EV_XID, EV_COUNT
};

enum watch_event_class {
	EVC_INFO,    /* what happened, not a problem in itself (a process ended) */
	EVC_WARNING, /* a margin is narrow or a job is in trouble */
	EVC_ERROR,   /* the GPU or the driver failed */
};

/* "low_free", "xid"...; "?" for a value out of range. */
const char *watch_event_name(enum watch_event e);
/* EVC_INFO for a value out of range. */
enum watch_event_class watch_event_class(enum watch_event e);
/* Counts by kind (EV_COUNT of them): how many events were warnings or errors. */
uint64_t watch_events_problems(const uint64_t counts[EV_COUNT]);

/* wall_ms (Unix time) as the local time of day, "14:03:09", in buf. */
const char *watch_event_clock(int64_t wall_ms, char *buf, size_t size);

#endif
