/* The summary at the end of a watch: how long, each GPU's and process's peak, the
 * events by kind. */
#ifndef HEADROOM_WATCH_SUMMARY_H
#define HEADROOM_WATCH_SUMMARY_H

#include <stdint.h>

#include "util/strbuf.h"
#include "watch/state.h"

/* Appends the summary of w after elapsed_ms to out. watched_command: it watched a
 * command (`watch -- CMD`), which has ended by now; else it was stopped. list_events:
 * each event kept, in order, with its time and message (after a live view, which hid
 * the lines stderr got). */
void summary_render(const struct watch_state *w, int watched_command, int64_t elapsed_ms, int list_events,
		    struct strbuf *out);

#endif
