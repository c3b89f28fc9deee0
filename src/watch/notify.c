#include "watch/notify.h"

#include <stdarg.h>
#include <stdlib.h>

#include "util/escape.h"
#include "util/log.h"
#include "util/strbuf.h"
#include "util/xalloc.h"
#include "watch/hook.h"
#include "watch/jsonl.h"

static const enum log_prio prio[] = { [EVC_INFO] = LOG_PRIO_INFO, [EVC_WARNING] = LOG_PRIO_WARNING,
				       [EVC_ERROR] = LOG_PRIO_ERR };

/* The message is whole (never cut inside a character); each sink gets it escaped its
 * own way: a terminal's (stderr), JSON's, and valid UTF-8 for the hook's environment. */
void notify_event(struct notifier *n, enum watch_event e, json_t *rec, const char *fmt, ...)
{
	struct strbuf term = STRBUF_INIT, utf8 = STRBUF_INIT;
	char *msg, *txt;
	va_list ap;

	va_start(ap, fmt);
	if (vasprintf(&msg, fmt, ap) < 0)
		msg = xstrdup(fmt);
	va_end(ap);
	n->counts[e]++;
	json_object_set_new(rec, "type", json_string("event"));
	json_object_set_new(rec, "event", json_string(watch_event_name(e)));
	int64_t wall_ms = jsonl_wall_ms();
	json_object_set_new(rec, "time_ms", json_integer(wall_ms));
	if (n->log)
		watch_state_log_event(n->log, e, wall_ms, msg);
	json_object_set_new(rec, "message", jsonl_str(msg));
	txt = json_dumps(rec, JSON_COMPACT);
	esc_term(&term, msg);
	fprintf(stderr, "%sheadroom watch: %s: %s\n", log_prefix(prio[watch_event_class(e)]), watch_event_name(e),
		strbuf_str(&term));
	if (n->jsonl && txt)
		jsonl_put(n->jsonl, txt);
	esc_utf8(&utf8, msg);
	if (n->hook_cmd && txt)
		hook_run(n->hook_cmd, watch_event_name(e), strbuf_str(&utf8), txt);
	strbuf_release(&term);
	strbuf_release(&utf8);
	free(msg);
	free(txt);
	json_decref(rec);
}
