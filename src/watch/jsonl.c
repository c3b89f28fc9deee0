#include "watch/jsonl.h"

#include <jansson.h>
#include <stdlib.h>
#include <time.h>

#include "util/escape.h"
#include "util/strbuf.h"

json_t *jsonl_str(const char *s)
{
	struct strbuf b = STRBUF_INIT;
	json_t *j;

	esc_utf8(&b, s);
	j = json_string(strbuf_str(&b));
	strbuf_release(&b);
	return j;
}

int64_t jsonl_wall_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void jsonl_put(FILE *out, const char *text)
{
	fprintf(out, "%s\n", text);
	fflush(out);
}

void jsonl_sample(FILE *out, const struct watch_state *w, int64_t time_ms)
{
	json_t *s = json_object(), *gpus = json_array(), *procs = json_array();
	char *txt;

	json_object_set_new(s, "type", json_string("sample"));
	json_object_set_new(s, "time_ms", json_integer(time_ms));
	json_object_set_new(s, "host_available_bytes",
			    w->has_host ? json_integer((json_int_t)w->host_available_bytes) : json_null());
	json_object_set_new(s, "host_oom_kills", w->has_oom ? json_integer((json_int_t)w->host_oom_kills) : json_null());
	json_object_set_new(s, "psi_full_avg10", w->psi_full_avg10 >= 0 ? json_real(w->psi_full_avg10) : json_null());
	for (size_t g = 0; g < w->ngpus; g++) {
		const struct wgpu *G = &w->gpus[g];
		json_t *o = json_pack("{s:i, s:o, s:o, s:b}", "gpu", (int)g, "uuid", jsonl_str(G->d.uuid), "pci_bus_id",
				      jsonl_str(G->d.bus_id), "ok", G->ok);
		json_object_set_new(o, "used_bytes", G->ok ? json_integer((json_int_t)G->d.used_bytes) : json_null());
		json_object_set_new(o, "free_bytes", G->ok ? json_integer((json_int_t)G->d.free_bytes) : json_null());
		json_object_set_new(o, "total_bytes", G->ok ? json_integer((json_int_t)G->d.total_bytes) : json_null());
		json_object_set_new(o, "reserved_bytes",
				    G->ok && G->d.reserved_bytes >= 0 ? json_integer(G->d.reserved_bytes) : json_null());
		json_object_set_new(o, "util_pct", G->ok && G->d.util_gpu_pct >= 0 ? json_integer(G->d.util_gpu_pct) : json_null());
		json_object_set_new(o, "time_to_oom_s", G->ok && G->ttoom_s >= 0 ? json_real(G->ttoom_s) : json_null());
		json_array_append_new(gpus, o);
	}
	for (size_t i = 0; i < w->nprocs; i++) {
		const struct wproc *p = &w->procs[i];
		if (!p->alive)
			continue;
		json_t *o = json_pack("{s:i, s:i, s:o, s:I, s:o}", "pid", (int)p->pid, "gpu", (int)p->gpu, "job",
				      jsonl_str(p->job.key), "uid", (json_int_t)p->job.uid, "comm", jsonl_str(p->comm));
		json_object_set_new(o, "used_bytes", p->used_bytes >= 0 ? json_integer(p->used_bytes) : json_null());
		json_object_set_new(o, "rank", p->rank >= 0 ? json_integer(p->rank) : json_null());
		json_object_set_new(o, "container_pid", p->ns_pid ? json_integer(p->ns_pid) : json_null());
		json_array_append_new(procs, o);
	}
	json_object_set_new(s, "gpus", gpus);
	json_object_set_new(s, "processes", procs);
	txt = json_dumps(s, JSON_COMPACT);
	if (txt)
		jsonl_put(out, txt);
	free(txt);
	json_decref(s);
}
