/* The watchdog's pure parts: the event table, the summary, job grouping, the process
 * and job tables, the sampling pace, the JSON sample and the live view. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/escape.h"
#include "util/strbuf.h"
#include "watch/event.h"
#include "watch/jsonl.h"
#include "watch/prom.h"
#include "watch/state.h"
#include "watch/summary.h"
#include "watch/view.h"
#include "watch/watcher.h"

#define GIB (1ULL << 30)

/* A job of root's under origin 1 (the tables copy the key). */
static struct wjob_id jid(const char *key)
{
	return (struct wjob_id){ .uid = 0, .origin = 1, .origin_start = 0, .key = (char *)key };
}

static void test_event_table(void **state)
{
	/* the names Prometheus and the JSON records have always used, in this order */
	static const char *const names[EV_COUNT] = {
		"low_free", "time_to_oom", "partial_death", "stuck", "process_exit", "read_failed", "job_stopped", "xid",
	};
	uint64_t counts[EV_COUNT] = { 0 };

	(void)state;
	for (int e = 0; e < EV_COUNT; e++)
		assert_string_equal(watch_event_name((enum watch_event)e), names[e]);
	assert_string_equal(watch_event_name(EV_COUNT), "?");
	assert_int_equal(watch_event_class(EV_LOW_FREE), EVC_WARNING);
	assert_int_equal(watch_event_class(EV_PARTIAL_DEATH), EVC_WARNING);
	assert_int_equal(watch_event_class(EV_XID), EVC_ERROR);
	assert_int_equal(watch_event_class(EV_READ_FAILED), EVC_ERROR);
	assert_int_equal(watch_event_class(EV_PROCESS_EXIT), EVC_INFO);
	assert_int_equal(watch_event_class(EV_JOB_STOPPED), EVC_INFO);
	counts[EV_PROCESS_EXIT] = 3;
	counts[EV_JOB_STOPPED] = 1;
	assert_int_equal(watch_events_problems(counts), 0);
	counts[EV_XID] = 2;
	counts[EV_STUCK] = 1;
	assert_int_equal(watch_events_problems(counts), 3);
}

/* Two GPUs that peaked at 5 and 6 GiB, one process of 4 GiB, one whose memory the
 * driver never said. */
static void two_gpus(struct watch_state *w, struct wgpu gpus[2])
{
	memset(w, 0, sizeof(*w));
	memset(gpus, 0, 2 * sizeof(*gpus));
	snprintf(gpus[0].d.uuid, sizeof(gpus[0].d.uuid), "GPU-a");
	snprintf(gpus[1].d.uuid, sizeof(gpus[1].d.uuid), "GPU-b");
	gpus[0].peak_used_bytes = 5 * GIB;
	gpus[1].peak_used_bytes = 6 * GIB;
	w->gpus = gpus;
	w->ngpus = 2;
	watch_state_add_proc(w, 41, 0, 0, &(struct wjob_id){ 0, 1, 0, "cmd:40" }, -1)->peak_bytes = 4 * GIB;
	snprintf(w->procs[0].comm, sizeof(w->procs[0].comm), "python");
	snprintf(watch_state_add_proc(w, 42, 1, 0, &(struct wjob_id){ 0, 1, 0, "cmd:40" }, -1)->comm, sizeof(w->procs[0].comm), "python");
}

static char *summary_of(const struct watch_state *w, int watched_command, int64_t elapsed_ms)
{
	struct strbuf b = STRBUF_INIT;

	summary_render(w, watched_command, elapsed_ms, 0, &b);
	return strbuf_detach(&b);
}

/* An XID alone is an error: the summary must not say there were no warnings (it did,
 * when it counted the first four kinds by their position). */
static void test_summary_xid_only(void **state)
{
	struct watch_state w;
	struct wgpu gpus[2];
	char *s;

	(void)state;
	two_gpus(&w, gpus);
	w.events[EV_XID] = 1;
	s = summary_of(&w, 0, 1500);
	assert_string_equal(s, "headroom watch: stopped after 1.5 s\n"
			       "  GPU 0 (GPU-a): peak used 5.00 GiB\n"
			       "  GPU 1 (GPU-b): peak used 6.00 GiB\n"
			       "  pid 41 (python, job cmd:40) on GPU 0: peak 4.00 GiB\n"
			       "  pid 42 (python, job cmd:40) on GPU 1: peak unknown\n"
			       "  events: xid 1\n");
	free(s);
	w.gpus = NULL;
	watch_state_free(&w);
}

static void test_summary_events(void **state)
{
	struct watch_state w;
	char *s;

	(void)state;
	memset(&w, 0, sizeof(w));
	s = summary_of(&w, 1, 12345);
	assert_string_equal(s, "headroom watch: the command ended after 12.3 s\n  events: no warnings\n");
	free(s);
	w.events[EV_PROCESS_EXIT] = 2;
	s = summary_of(&w, 1, 100);
	assert_string_equal(s, "headroom watch: the command ended after 0.1 s\n  events: process_exit 2 no warnings\n");
	free(s);
	w.events[EV_READ_FAILED] = 1;
	s = summary_of(&w, 0, 0);
	assert_string_equal(s, "headroom watch: stopped after 0.0 s\n  events: process_exit 2 read_failed 1\n");
	free(s);
	memset(w.events, 0, sizeof(w.events));
	w.events[EV_LOW_FREE] = 1;
	w.events[EV_JOB_STOPPED] = 1;
	s = summary_of(&w, 0, 0);
	assert_string_equal(s, "headroom watch: stopped after 0.0 s\n  events: low_free 1 job_stopped 1\n");
	free(s);
}

static void test_job_key(void **state)
{
	const char env[] = "PATH=/bin\0TORCHELASTIC_RUN_ID=abc\0RANK=3\0";
	const char dist[] = "PATH=/bin\0WORLD_SIZE=2\0RANK=1\0";
	const char plain[] = "PATH=/bin\0HOME=/root\0";
	char *key;
	int rank;

	(void)state;
	/* torchrun's run id wins over the command and the parent */
	assert_true(watch_job_key(env, sizeof(env), 41, 40, 7, &key, &rank));
	assert_string_equal(key, "torchelastic:abc");
	assert_int_equal(rank, 3);
	free(key);
	/* a rank without either: the command's, else its parent's */
	assert_true(watch_job_key(dist, sizeof(dist), 41, 40, 7, &key, &rank));
	assert_string_equal(key, "cmd:40");
	assert_int_equal(rank, 1);
	free(key);
	assert_true(watch_job_key(dist, sizeof(dist), 41, 0, 7, &key, &rank));
	assert_string_equal(key, "parent:7");
	free(key);
	/* issue 29: an orphan's parent (init) launched nothing: a job of its own, never
	 * "parent:1" beside every other orphan, another user's included */
	assert_true(watch_job_key(dist, sizeof(dist), 41, 0, 1, &key, &rank));
	assert_string_equal(key, "pid:41");
	assert_int_equal(rank, 1);
	free(key);
	assert_true(watch_job_key(dist, sizeof(dist), 42, 0, 0, &key, &rank));
	assert_string_equal(key, "pid:42");
	free(key);
	/* no rank: a job of its own, never its siblings' (issue 12) */
	assert_false(watch_job_key(plain, sizeof(plain), 41, 40, 7, &key, &rank));
	assert_string_equal(key, "pid:41");
	assert_int_equal(rank, -1);
	free(key);
	assert_false(watch_job_key(plain, sizeof(plain), 42, 0, 7, &key, &rank));
	assert_string_equal(key, "pid:42");
	free(key);
	/* an environment that could not be read: nothing says it is a rank */
	assert_false(watch_job_key(NULL, 0, 43, 0, 0, &key, &rank));
	assert_string_equal(key, "pid:43");
	assert_int_equal(rank, -1);
	free(key);
}

/* Issue 29: the same key is another job for another user or under another origin. */
static void test_job_identity(void **state)
{
	struct watch_state w;
	struct wjob_id victim = { .uid = 4242, .origin = 300, .origin_start = 9, .key = "torchelastic:victimjob" };
	struct wjob_id mallory = victim, other_tree = victim;

	(void)state;
	mallory.uid = 4343;
	other_tree.origin_start = 10; /* the same origin pid, another process */
	memset(&w, 0, sizeof(w));
	watch_state_add_proc(&w, 100, 0, 0, &victim, 0);
	watch_state_add_proc(&w, 101, 0, 0, &victim, 1);
	watch_state_add_proc(&w, 102, 0, 0, &mallory, 7);
	watch_state_add_proc(&w, 103, 0, 0, &other_tree, 0);
	assert_int_equal(w.njobs, 3);
	assert_int_equal(watch_state_job(&w, &victim)->seen, 2);
	assert_int_equal(watch_state_job(&w, &mallory)->seen, 1);
	assert_int_equal(watch_state_job(&w, &other_tree)->seen, 1);
	assert_true(wjob_id_same(&w.procs[0].job, &victim));
	assert_false(wjob_id_same(&w.procs[2].job, &victim));
	watch_state_free(&w);
}

static void test_state_tables(void **state)
{
	struct watch_state w;
	struct wproc *p;
	char key[64];
	struct wjob_id j = jid("torchelastic:j");

	(void)state;
	memset(&w, 0, sizeof(w));
	p = watch_state_add_proc(&w, 100, 0, 5000, &j, 0);
	assert_int_equal(p->pid, 100);
	assert_int_equal(p->alive, 1);
	assert_int_equal(p->used_bytes, -1); /* unknown until sampled */
	assert_int_equal(p->peak_bytes, -1);
	assert_int_equal(p->unchanged_since_ms, 5000);
	assert_int_equal(p->pidfd, -1);
	watch_state_add_proc(&w, 101, 1, 5000, &j, 1);
	watch_state_add_proc(&w, 100, 1, 6000, &j, 0); /* the same pid on another GPU */
	assert_int_equal(w.njobs, 1);
	assert_int_equal(w.jobs[0].seen, 2); /* processes: one on two GPUs is one rank */
	assert_int_equal(w.jobs[0].alive, 2);
	assert_ptr_equal(watch_state_proc(&w, 100, 1), &w.procs[2]);
	assert_ptr_equal(watch_state_proc(&w, 101, 1), &w.procs[1]);
	assert_null(watch_state_proc(&w, 101, 0));
	assert_ptr_equal(watch_state_job(&w, &j), &w.jobs[0]);
	/* a bounded memory: 300 ended one-process jobs are forgotten, the running job stays */
	for (int i = 0; i < 300; i++) {
		snprintf(key, sizeof(key), "parent:%d", i);
		struct wjob_id k = jid(key);
		p = watch_state_add_proc(&w, 1000 + i, 0, 0, &k, -1);
		p->alive = 0;
		watch_state_job(&w, &k)->alive = 0;
	}
	assert_int_equal(w.nprocs, 303);
	watch_state_forget_ended(&w);
	assert_int_equal(w.nprocs, 3);
	assert_int_equal(w.njobs, 1);
	assert_string_equal(w.jobs[0].id.key, "torchelastic:j");
	watch_state_free(&w);
	assert_null(w.procs);
	assert_int_equal(w.nprocs, 0);
}

static void test_next_interval(void **state)
{
	struct watch_limits lim = { .interval_ms = 1000, .min_interval_ms = 100, .min_free_pct = 5,
				    .horizon_ms = 120000 };
	struct wgpu gpu;
	struct watcher x;

	(void)state;
	watcher_init(&x, "", &lim);
	assert_int_equal(watcher_next_interval_ms(&x), 1000); /* no GPU: wide */
	memset(&gpu, 0, sizeof(gpu));
	gpu.ok = 1;
	gpu.ttoom_s = -1;
	gpu.d.total_bytes = 100 * GIB;
	x.w.gpus = &gpu;
	x.w.ngpus = 1;
	gpu.d.free_bytes = 50 * GIB; /* far above 5 %: wide */
	assert_int_equal(watcher_next_interval_ms(&x), 1000);
	gpu.d.free_bytes = 10 * GIB; /* a quarter of the way from 5 % to 25 % */
	assert_int_equal(watcher_next_interval_ms(&x), 325);
	gpu.d.free_bytes = 3 * GIB; /* under the threshold */
	assert_int_equal(watcher_next_interval_ms(&x), 100);
	gpu.d.free_bytes = 50 * GIB;
	gpu.ttoom_s = 30; /* a sixteenth of 4 horizons */
	assert_int_equal(watcher_next_interval_ms(&x), 156);
	gpu.ok = 0; /* figures unknown: no say in the pace */
	assert_int_equal(watcher_next_interval_ms(&x), 1000);
}

/* Host memory under a cgroup limit (the v2 fixture: MemTotal 31.25 GiB, MemAvailable
 * 19.5 GiB, a 4 GiB limit over a 2 GiB working set): the limit is the total and what it
 * leaves is the available; each sample reads them afresh. */
static void test_host_cgroup(void **state)
{
	struct watch_limits lim = { .interval_ms = 1000, .min_interval_ms = 100, .horizon_ms = 120000,
				    .window_ms = 30000 };
	struct watcher x;

	(void)state;
	watcher_init(&x, "tests/fixtures/v2", &lim);
	x.has_cg = !cgroup_find(x.root, 0, &x.cg);
	assert_true(x.has_cg);
	watcher_sample(&x, 0);
	assert_true(x.w.has_host);
	assert_int_equal(x.w.host_total_bytes, 4 * GIB);
	assert_int_equal(x.w.host_available_bytes, 2 * GIB);
	/* no cgroup: /proc/meminfo as it is */
	cgroup_free(&x.cg);
	x.has_cg = 0;
	watcher_sample(&x, 100);
	assert_int_equal(x.w.host_total_bytes, 32768000ULL * 1024);
	assert_int_equal(x.w.host_available_bytes, 20480000ULL * 1024);
	watcher_free(&x);
}

static void test_jsonl_sample(void **state)
{
	struct watch_state w;
	struct wgpu gpus[2];
	char *text = NULL;
	size_t size = 0;
	FILE *f = open_memstream(&text, &size);
	json_t *s, *g, *p;

	(void)state;
	assert_non_null(f);
	two_gpus(&w, gpus);
	gpus[0].ok = 1;
	gpus[0].ttoom_s = -1;
	gpus[0].d.total_bytes = 80 * GIB;
	gpus[0].d.used_bytes = 20 * GIB;
	gpus[0].d.free_bytes = 60 * GIB;
	gpus[0].d.reserved_bytes = -1;
	gpus[0].d.util_gpu_pct = 50;
	w.procs[0].used_bytes = 4 * GIB;
	w.procs[0].ns_pid = 7;
	w.procs[1].alive = 0;
	w.psi_full_avg10 = -1;
	jsonl_sample(f, &w, 1700000000123);
	fclose(f);
	assert_non_null(strchr(text, '\n'));
	s = json_loads(text, 0, NULL);
	assert_non_null(s);
	assert_string_equal(json_string_value(json_object_get(s, "type")), "sample");
	assert_int_equal(json_integer_value(json_object_get(s, "time_ms")), 1700000000123);
	assert_true(json_is_null(json_object_get(s, "host_available_bytes"))); /* not read: unknown, not 0 */
	assert_true(json_is_null(json_object_get(s, "psi_full_avg10")));
	g = json_array_get(json_object_get(s, "gpus"), 0);
	assert_int_equal(json_integer_value(json_object_get(g, "used_bytes")), 20 * GIB);
	assert_int_equal(json_integer_value(json_object_get(g, "util_pct")), 50);
	assert_true(json_is_null(json_object_get(g, "reserved_bytes")));
	assert_true(json_is_null(json_object_get(g, "time_to_oom_s")));
	g = json_array_get(json_object_get(s, "gpus"), 1); /* its read failed */
	assert_true(json_is_false(json_object_get(g, "ok")));
	assert_true(json_is_null(json_object_get(g, "used_bytes")));
	assert_true(json_is_null(json_object_get(g, "total_bytes")));
	assert_int_equal(json_array_size(json_object_get(s, "processes")), 1); /* the ended one is left out */
	p = json_array_get(json_object_get(s, "processes"), 0);
	assert_int_equal(json_integer_value(json_object_get(p, "pid")), 41);
	assert_string_equal(json_string_value(json_object_get(p, "job")), "cmd:40");
	assert_int_equal(json_integer_value(json_object_get(p, "used_bytes")), 4 * GIB);
	assert_int_equal(json_integer_value(json_object_get(p, "container_pid")), 7);
	assert_true(json_is_null(json_object_get(p, "rank")));
	json_decref(s);
	free(text);
	w.gpus = NULL;
	watch_state_free(&w);
}

static void test_view(void **state)
{
	struct watch_state w;
	struct wgpu gpus[2];
	char *text = NULL;
	size_t size = 0;
	FILE *f = open_memstream(&text, &size);

	(void)state;
	two_gpus(&w, gpus);
	snprintf(gpus[1].d.name, sizeof(gpus[1].d.name), "H200");
	gpus[0].ok = 1;
	gpus[0].ttoom_s = -1;
	gpus[0].d.util_gpu_pct = -1;
	gpus[0].d.total_bytes = 80 * GIB;
	gpus[0].d.free_bytes = 60 * GIB;
	gpus[0].d.used_bytes = 20 * GIB;
	w.has_host = 1;
	w.host_total_bytes = 64 * GIB;
	w.host_available_bytes = 32 * GIB;
	w.psi_full_avg10 = -1;
	view_show(f, &w, 1);
	fclose(f);
	assert_string_equal(text, "host: 32.00 GiB available of 64.00 GiB\n\n"
				  "GPU  name                           free         used   free%  util    to OOM\n"
				  "0                              60.00 GiB    20.00 GiB   75.0%     -         -\n"
				  "1    H200                     (read failed: figures unknown)\n"
				  "job cmd:40                                   2 of 2 ranks alive (uid 0)\n"
				  "  pid 41       python           GPU 0             ? (peak 4.00 GiB)\n"
				  "  pid 42       python           GPU 1             ? (peak ?)\n"
				  "\nno events yet (q quits)\n");
	free(text);
	w.gpus = NULL;
	watch_state_free(&w);
}

static int valid_utf8(const char *s)
{
	for (size_t n; *s; s += n)
		if (!(n = utf8_seq_len(s)))
			return 0;
	return 1;
}

/* Issue 29: another user's run id of invalid UTF-8 and terminal controls: /metrics stays
 * valid UTF-8 (Prometheus refused the page), the JSON sample keeps the process (it was
 * dropped), and the live view and summary show the controls, not act on them. */
static void test_hostile_text(void **state)
{
	struct watch_state w;
	struct wgpu gpus[2];
	struct wjob_id id = jid("torchelastic:x\x1B]0;PWNED\a\x1B[2J\xFF\xC3");
	char *text = NULL, *page;
	size_t size = 0;
	FILE *f;
	json_t *s;
	struct strbuf sum = STRBUF_INIT;

	(void)state;
	two_gpus(&w, gpus);
	watch_state_add_proc(&w, 43, 0, 0, &id, 0)->used_bytes = GIB;
	snprintf(w.procs[2].comm, sizeof(w.procs[2].comm), "py\x1B[2J\xE2\x82");
	w.psi_full_avg10 = -1;
	page = prom_render(&w);
	assert_true(valid_utf8(page));
	assert_non_null(strstr(page, "job=\"torchelastic:x\x1B]0;PWNED\a\x1B[2J\\\\xFF\\\\xC3\""));
	free(page);
	f = open_memstream(&text, &size);
	assert_non_null(f);
	jsonl_sample(f, &w, 1);
	fclose(f);
	s = json_loads(text, 0, NULL);
	assert_non_null(s);
	assert_int_equal(json_array_size(json_object_get(s, "processes")), 3);
	assert_string_equal(json_string_value(json_object_get(json_array_get(json_object_get(s, "processes"), 2), "job")),
			    "torchelastic:x\x1B]0;PWNED\a\x1B[2J\\xFF\\xC3");
	json_decref(s);
	free(text);
	text = NULL;
	f = open_memstream(&text, &size);
	assert_non_null(f);
	view_show(f, &w, 1);
	fclose(f);
	summary_render(&w, 0, 0, 0, &sum);
	assert_null(strchr(text, '\x1B'));
	assert_null(strchr(text, '\a'));
	assert_non_null(strstr(text, "torchelastic:x\\x1B]0;PWNED\\x07\\x1B[2J\\xFF\\xC3"));
	assert_null(strchr(strbuf_str(&sum), '\x1B'));
	assert_true(valid_utf8(text) && valid_utf8(strbuf_str(&sum)));
	free(text);
	strbuf_release(&sum);
	w.gpus = NULL;
	watch_state_free(&w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_event_table),  cmocka_unit_test(test_summary_xid_only),
		cmocka_unit_test(test_summary_events), cmocka_unit_test(test_job_key),
		cmocka_unit_test(test_job_identity),
		cmocka_unit_test(test_state_tables), cmocka_unit_test(test_next_interval),
		cmocka_unit_test(test_host_cgroup),
		cmocka_unit_test(test_jsonl_sample), cmocka_unit_test(test_view),
		cmocka_unit_test(test_hostile_text),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
