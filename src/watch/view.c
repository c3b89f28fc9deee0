#include "watch/view.h"

#include "util/escape.h"
#include "util/strbuf.h"
#include "util/units.h"

/* Text from outside, for the terminal (util/escape.h): in b, emptied first. */
static const char *term(struct strbuf *b, const char *s)
{
	b->len = 0;
	esc_term(b, s);
	return strbuf_str(b);
}

/* The last events, newest first: each kept on screen until newer ones push it off (the
 * summary lists them all when watch ends). */
static void view_events(FILE *out, const struct watch_state *w)
{
	char clock[16];
	size_t shown = w->nlog < VIEW_EVENTS ? w->nlog : VIEW_EVENTS;

	if (!w->nlog) {
		fprintf(out, "\nno events yet (q quits)\n");
		return;
	}
	fprintf(out, "\nevents, newest first (%llu in all; q quits):\n",
		(unsigned long long)(w->nlog + w->log_dropped));
	for (size_t k = 0; k < shown; k++) {
		const struct wevent_rec *r = &w->log[w->nlog - 1 - k];
		fprintf(out, "  %s %-13s %s\n", watch_event_clock(r->wall_ms, clock, sizeof(clock)),
			watch_event_name(r->e), r->msg);
	}
}

void view_show(FILE *out, const struct watch_state *w, int have_driver)
{
	char a[32], b[32], c[32];
	struct strbuf t = STRBUF_INIT;

	if (w->has_host)
		fprintf(out, "host: %s available of %s", size_format(w->host_available_bytes, a, sizeof(a)),
			size_format(w->host_total_bytes, b, sizeof(b)));
	if (w->psi_full_avg10 >= 0)
		fprintf(out, ", memory pressure full %.1f%%", w->psi_full_avg10);
	if (w->has_oom)
		fprintf(out, ", OOM kills %llu", (unsigned long long)w->host_oom_kills);
	fprintf(out, "\n%s\n", have_driver ? "" : "no NVIDIA driver: host memory only");
	if (w->ngpus)
		fprintf(out, "%-4s %-22s %12s %12s %7s %5s %9s\n", "GPU", "name", "free", "used", "free%", "util", "to OOM");
	for (size_t g = 0; g < w->ngpus; g++) {
		const struct wgpu *G = &w->gpus[g];
		if (!G->ok) {
			term(&t, G->d.name);
			fprintf(out, "%-4zu %-22.*s   (read failed: figures unknown)\n", g, (int)utf8_cut(t.s, 22), t.s);
			continue;
		}
		term(&t, G->d.name);
		fprintf(out, "%-4zu %-22.*s %12s %12s %6.1f%% ", g, (int)utf8_cut(t.s, 22), t.s, size_format(G->d.free_bytes, a, sizeof(a)),
			size_format(G->d.used_bytes, b, sizeof(b)),
			100.0 * (double)G->d.free_bytes / (double)(G->d.total_bytes ? G->d.total_bytes : 1));
		if (G->d.util_gpu_pct >= 0)
			fprintf(out, "%4d%% ", G->d.util_gpu_pct);
		else
			fprintf(out, "%5s ", "-");
		if (G->ttoom_s >= 0)
			fprintf(out, "%8.0fs\n", G->ttoom_s);
		else
			fprintf(out, "%9s\n", "-");
	}
	for (size_t i = 0; i < w->njobs; i++)
		fprintf(out, "job %-40s %d of %d ranks alive (uid %lu)\n", term(&t, w->jobs[i].id.key), w->jobs[i].alive,
			w->jobs[i].seen, (unsigned long)w->jobs[i].id.uid);
	for (size_t i = 0; i < w->nprocs; i++) {
		const struct wproc *p = &w->procs[i];
		if (p->alive)
			fprintf(out, "  pid %-8d %-16s GPU %-2u %12s (peak %s)\n", (int)p->pid, term(&t, p->comm), p->gpu,
				p->used_bytes >= 0 ? size_format((uint64_t)p->used_bytes, a, sizeof(a)) : "?",
				p->peak_bytes >= 0 ? size_format((uint64_t)p->peak_bytes, c, sizeof(c)) : "?");
	}
	view_events(out, w);
	strbuf_release(&t);
	fflush(out);
}
