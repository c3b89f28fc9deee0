#include "watch/summary.h"

#include "util/escape.h"
#include "util/units.h"

void summary_render(const struct watch_state *w, int watched_command, int64_t elapsed_ms, int list_events,
		    struct strbuf *out)
{
	char a[32];

	strbuf_addf(out, "headroom watch: %s after %.1f s\n", watched_command ? "the command ended" : "stopped",
		    (double)elapsed_ms / 1000.0);
	/* for a terminal (stderr): what processes and drivers named is escaped */
	for (size_t g = 0; g < w->ngpus; g++) {
		strbuf_addf(out, "  GPU %zu (", g);
		esc_term(out, w->gpus[g].d.uuid);
		strbuf_addf(out, "): peak used %s\n", size_format(w->gpus[g].peak_used_bytes, a, sizeof(a)));
	}
	for (size_t i = 0; i < w->nprocs; i++) {
		const struct wproc *p = &w->procs[i];
		strbuf_addf(out, "  pid %d (", (int)p->pid);
		esc_term(out, p->comm);
		strbuf_add(out, ", job ");
		esc_term(out, p->job.key);
		strbuf_addf(out, ") on GPU %u: peak %s\n", p->gpu,
			    p->peak_bytes >= 0 ? size_format((uint64_t)p->peak_bytes, a, sizeof(a)) : "unknown");
	}
	strbuf_add(out, "  events:");
	for (int e = 0; e < EV_COUNT; e++)
		if (w->events[e])
			strbuf_addf(out, " %s %llu", watch_event_name((enum watch_event)e), (unsigned long long)w->events[e]);
	/* info events alone (processes that ended) are no reason for concern */
	strbuf_addf(out, "%s\n", watch_events_problems(w->events) ? "" : " no warnings");
	if (!list_events)
		return;
	if (w->log_dropped)
		strbuf_addf(out, "  (%llu earlier events not kept)\n", (unsigned long long)w->log_dropped);
	for (size_t i = 0; i < w->nlog; i++)
		strbuf_addf(out, "  %s %s: %s\n", watch_event_clock(w->log[i].wall_ms, a, sizeof(a)),
			    watch_event_name(w->log[i].e), w->log[i].msg);
}
