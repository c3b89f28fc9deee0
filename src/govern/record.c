/* Writing a governed build down: a Chrome/Perfetto trace to look at, and a
 * headroom-trace/1 record to replay (bench/build/replay) or share. */
#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "govern/report.h"
#include "sys/atomicfile.h"
#include "util/escape.h"
#include "util/xalloc.h"

/* The record's sampling: what bench/build/traces uses. */
#define RECORD_INTERVAL_MS 500

/* Written whole or not at all (sys/atomicfile): a failure leaves the old file. A root
 * that could not be made (a name that is not UTF-8) is -EINVAL, and nothing written. */
static int dump(json_t *root, const char *path, size_t flags)
{
	struct atomic_file a;
	int rc = root ? atomic_open(&a, path) : -EINVAL;

	if (!rc)
		rc = atomic_close(&a, json_dumpf(root, a.f, flags) ? -EIO : 0);
	json_decref(root);
	return rc;
}

int report_write_json(const struct report *r, const char *path)
{
	return dump(report_to_json(r), path, JSON_INDENT(2));
}

/* Lanes so that spans drawn on one track never overlap: the first lane free at the
 * span's start (spans come in end order, so sort by start first). */
static int cmp_start(const void *a, const void *b)
{
	const struct report_span *x = *(const struct report_span *const *)a, *y = *(const struct report_span *const *)b;
	return (x->start_ms > y->start_ms) - (x->start_ms < y->start_ms);
}

int report_write_trace(const struct report *r, const char *path)
{
	json_t *ev = json_array();
	const struct report_span **order = xmalloc((r->nspans ? r->nspans : 1) * sizeof(*order));
	int64_t *lane_end = xcalloc(r->nspans ? r->nspans : 1, sizeof(*lane_end));
	size_t nlanes = 0;

	for (size_t i = 0; i < r->nspans; i++)
		order[i] = &r->spans[i];
	qsort(order, r->nspans, sizeof(*order), cmp_start);
	json_array_append_new(ev, json_pack("{s:s, s:s, s:i, s:{s:s}}", "name", "process_name", "ph", "M", "pid", 1,
					    "args", "name", "headroom run"));
	for (size_t i = 0; i < r->nspans; i++) {
		const struct report_span *s = order[i];
		size_t lane;

		for (lane = 0; lane < nlanes && lane_end[lane] > s->start_ms; lane++)
			;
		if (lane == nlanes)
			nlanes++;
		lane_end[lane] = s->start_ms + s->duration_ms;
		json_t *args = json_pack("{s:s, s:I, s:b}", "class", s->class_key, "peak_bytes",
					 (json_int_t)s->peak_bytes, "retried", s->retried);
		json_object_set_new(args, "exit_code", s->exit_code >= 0 ? json_integer(s->exit_code) : json_null());
		json_array_append_new(ev, json_pack("{s:s, s:s, s:s, s:I, s:I, s:i, s:I, s:o}", "name", s->name, "cat",
						    s->retried ? "retried" : "job", "ph", "X", "ts",
						    (json_int_t)s->start_ms * 1000, "dur", (json_int_t)s->duration_ms * 1000,
						    "pid", 1, "tid", (json_int_t)lane + 1, "args", args));
	}
	for (size_t i = 0; i < r->npoints; i++) {
		const struct report_point *p = &r->timeline[i];
		json_int_t ts = (json_int_t)p->t_ms * 1000;

		json_array_append_new(ev, json_pack("{s:s, s:s, s:I, s:i, s:{s:I, s:I, s:I}}", "name", "memory bytes",
						    "ph", "C", "ts", ts, "pid", 1, "args", "used",
						    (json_int_t)p->used_bytes, "jobs", (json_int_t)p->jobs_bytes, "budget",
						    (json_int_t)r->budget_bytes));
		json_array_append_new(ev, json_pack("{s:s, s:s, s:I, s:i, s:{s:i, s:i, s:i}}", "name", "jobs", "ph", "C",
						    "ts", ts, "pid", 1, "args", "running", p->running, "frozen",
						    p->frozen, "waiting", p->waiting));
	}
	free(order);
	free(lane_end);
	return dump(json_pack("{s:o, s:s}", "traceEvents", ev, "displayTimeUnit", "ms"), path, JSON_COMPACT);
}

int report_write_record(const struct report *r, const char *path, const char *description, int cpus,
			uint64_t mem_total_bytes)
{
	json_t *jobs = json_array();

	for (size_t i = 0; i < r->nspans; i++) {
		const struct report_span *s = &r->spans[i];
		size_t n = (size_t)(s->duration_ms / RECORD_INTERVAL_MS) + 1;
		uint64_t *rss;
		json_t *arr;

		if (s->retried)
			continue; /* the run that counted follows */
		rss = xcalloc(n, sizeof(*rss));
		for (size_t k = 0; k < s->nsamples; k++) {
			size_t b = (size_t)(s->samples[k].t_ms / RECORD_INTERVAL_MS);
			if (b < n && s->samples[k].rss_bytes > rss[b])
				rss[b] = s->samples[k].rss_bytes;
		}
		arr = json_array();
		for (size_t k = 0; k < n; k++)
			json_array_append_new(arr, json_integer((json_int_t)rss[k]));
		free(rss);
		json_t *j = json_pack("{s:s, s:f, s:f, s:b, s:I, s:o}", "name", s->name, "start_s", s->start_ms / 1000.0,
				      "duration_s", s->duration_ms / 1000.0, "complete", 1, "peak_rss_bytes",
				      (json_int_t)s->peak_bytes, "rss_bytes", arr);
		json_object_set_new(j, "exit_code", s->exit_code >= 0 ? json_integer(s->exit_code) : json_null());
		json_array_append_new(jobs, j);
	}
	/* the build's command line is bytes: the JSON sink's string */
	char *shown = esc_dup(esc_utf8, description);
	int rc = dump(json_pack("{s:s, s:s, s:{s:i, s:I, s:i}, s:f, s:o}", "format", "headroom-trace/1", "description",
				shown, "machine", "cpus", cpus, "mem_total_bytes", (json_int_t)mem_total_bytes,
				"parallel_jobs", r->jobs_cap, "sample_interval_s", RECORD_INTERVAL_MS / 1000.0, "jobs",
				jobs),
		      path, JSON_COMPACT);
	free(shown);
	return rc;
}
