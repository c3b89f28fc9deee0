#include "watch/event.h"

#include <stdio.h>
#include <time.h>

static const struct {
	const char *name;
	enum watch_event_class cls;
} kinds[EV_COUNT] = {
	[EV_LOW_FREE] = { "low_free", EVC_WARNING },
	[EV_TIME_TO_OOM] = { "time_to_oom", EVC_WARNING },
	[EV_PARTIAL_DEATH] = { "partial_death", EVC_WARNING },
	[EV_STUCK] = { "stuck", EVC_WARNING },
	[EV_PROCESS_EXIT] = { "process_exit", EVC_INFO },
	[EV_READ_FAILED] = { "read_failed", EVC_ERROR },
	[EV_JOB_STOPPED] = { "job_stopped", EVC_INFO },
	[EV_XID] = { "xid", EVC_ERROR },
};

const char *watch_event_name(enum watch_event e)
{
	return (unsigned)e < EV_COUNT ? kinds[e].name : "?";
}

enum watch_event_class watch_event_class(enum watch_event e)
{
	return (unsigned)e < EV_COUNT ? kinds[e].cls : EVC_INFO;
}

uint64_t watch_events_problems(const uint64_t counts[EV_COUNT])
{
	uint64_t n = 0;

	for (int e = 0; e < EV_COUNT; e++)
		if (watch_event_class((enum watch_event)e) != EVC_INFO)
			n += counts[e];
	return n;
}

const char *watch_event_clock(int64_t wall_ms, char *buf, size_t size)
{
	time_t t = (time_t)(wall_ms / 1000);
	struct tm tm;

	if (!localtime_r(&t, &tm) || !strftime(buf, size, "%H:%M:%S", &tm))
		snprintf(buf, size, "?");
	return buf;
}
