/* Raising an event: counted, a line on stderr, a JSON line (--jsonl), the hook
 * (--on-event). */
#ifndef HEADROOM_WATCH_NOTIFY_H
#define HEADROOM_WATCH_NOTIFY_H

#include <jansson.h>
#include <stdint.h>
#include <stdio.h>

#include "watch/event.h"
#include "watch/state.h"

struct notifier {
	FILE *jsonl;              /* not owned; NULL: no JSON lines */
	const char *hook_cmd;     /* NULL: no hook */
	uint64_t *counts;         /* not owned: EV_COUNT counters, by kind */
	struct watch_state *log;  /* not owned: keeps each event for the view; NULL none */
};

/* Raise event e: rec (taken) gets type, event, time_ms and the message fmt makes. */
void notify_event(struct notifier *n, enum watch_event e, json_t *rec, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

#endif
