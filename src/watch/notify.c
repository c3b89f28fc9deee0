#include "watch/notify.h"

#include <stdarg.h>
#include <stdlib.h>

#include "util/log.h"
#include "watch/hook.h"
#include "watch/jsonl.h"

static const enum log_prio prio[] = { [EVC_INFO] = LOG_PRIO_INFO, [EVC_WARNING] = LOG_PRIO_WARNING,
				       [EVC_ERROR] = LOG_PRIO_ERR };

void notify_event(struct notifier *n, enum watch_event e, json_t *rec, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	char *txt;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	n->counts[e]++;
	json_object_set_new(rec, "type", json_string("event"));
	json_object_set_new(rec, "event", json_string(watch_event_name(e)));
	json_object_set_new(rec, "time_ms", json_integer(jsonl_wall_ms()));
	json_object_set_new(rec, "message", json_string(msg));
	txt = json_dumps(rec, JSON_COMPACT);
	fprintf(stderr, "%sheadroom watch: %s: %s\n", log_prefix(prio[watch_event_class(e)]), watch_event_name(e), msg);
	if (n->jsonl && txt)
		jsonl_put(n->jsonl, txt);
	if (n->hook_cmd && txt)
		hook_run(n->hook_cmd, watch_event_name(e), msg, txt);
	free(txt);
	json_decref(rec);
}
