/* headroom stats: what headroom has done for the builds it governed, per directory. */
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd/cmd.h"
#include "store/store.h"
#include "util/escape.h"
#include "util/log.h"
#include "util/xalloc.h"

static const char usage[] =
	"usage: headroom stats [--db PATH] [--json]\n"
	"\n"
	"What headroom has done for the builds it governed (`headroom run`), per directory:\n"
	"  builds      builds governed (that ran at least one job)\n"
	"  jobs        jobs admitted\n"
	"  freezes     jobs frozen when memory ran short (thawed later)\n"
	"  kills       jobs killed for memory and requeued (run again)\n"
	"  OOM avoided builds that at their own job count (their -jN, or the CPUs) would have\n"
	"              needed more memory than the memory limit (RAM or cgroup; never a\n"
	"              --budget, which only headroom enforces), and ran without an OOM kill:\n"
	"              the compile jobs' curves replayed that many at a time in their order\n"
	"  saved       the compile jobs' wall time at the best fixed -j that fits the budget\n"
	"              and the CPUs (the same replay) less headroom's, over the builds where\n"
	"              both are known\n"
	"A build cut short (failed, interrupted) counts in neither, nor one recorded before\n"
	"the store's schema 5 (it has no memory limit).\n"
	"\n"
	"A directory is shown with control characters and bytes that are not UTF-8 as \\xHH;\n"
	"in JSON such a directory also has \"dir_hex\", its bytes.\n"
	"\n"
	"      --db PATH   profile store (default: $XDG_STATE_HOME/headroom/profiles.db)\n"
	"      --json      JSON (format headroom-stats/1)\n"
	"  -h, --help      show this help\n";

struct tallies {
	struct governed_tally *v; /* each dir the caller's */
	size_t n;
	struct governed_tally total;
};

static int each(const struct governed_tally *t, void *arg)
{
	struct tallies *ts = arg;
	struct governed_tally *sum = &ts->total;

	ts->v = xreallocarray(ts->v, ts->n + 1, sizeof(*ts->v));
	ts->v[ts->n] = *t;
	ts->v[ts->n++].dir = xstrdup(t->dir);
	sum->builds += t->builds;
	sum->jobs += t->jobs;
	sum->freezes += t->freezes;
	sum->kills += t->kills;
	sum->retries += t->retries;
	sum->oom_kills += t->oom_kills;
	sum->avoided += t->avoided;
	sum->saved_ms += t->saved_ms;
	sum->saved_builds += t->saved_builds;
	return 0;
}

static json_t *tally_json(const struct governed_tally *t)
{
	json_t *o = json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I}", "builds", (json_int_t)t->builds, "jobs",
			      (json_int_t)t->jobs, "freezes", (json_int_t)t->freezes, "kills", (json_int_t)t->kills,
			      "requeues", (json_int_t)t->retries, "oom_kills", (json_int_t)t->oom_kills, "oom_avoided",
			      (json_int_t)t->avoided);

	json_object_set_new(o, "saved_ms", t->saved_builds ? json_integer((json_int_t)t->saved_ms) : json_null());
	if (t->dir)
		json_set_bytes(o, "dir", t->dir);
	return o;
}

static void tally_print(const struct governed_tally *t, const char *name)
{
	char saved[32] = "-", *shown = esc_dup(esc_term, name);

	if (t->saved_builds)
		snprintf(saved, sizeof(saved), "%+.0f s", (double)t->saved_ms / 1000.0);
	printf("%-40s %6lld %7lld %7lld %5lld %8lld %11lld %9s\n", shown, (long long)t->builds, (long long)t->jobs,
	       (long long)t->freezes, (long long)t->kills, (long long)t->retries, (long long)t->avoided, saved);
	free(shown);
}

int cmd_stats(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "db", required_argument, NULL, 'd' }, { "json", no_argument, NULL, 'J' },
		{ "help", no_argument, NULL, 'h' },     { NULL, 0, NULL, 0 },
	};
	struct tallies ts = { 0 };
	struct store *st = NULL;
	char *db = NULL, *err = NULL;
	int c, json = 0, rc = 0;

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'd':
			if (!*optarg)
				die(EXIT_USAGE, "stats: --db wants a path, not ''");
			free(db);
			db = xstrdup(optarg);
			break;
		case 'J': json = 1; break;
		case 'h': fputs(usage, stdout); free(db); return 0;
		default: opt_refused("stats", opts, argv);
		}
	}
	if (optind < argc)
		die(EXIT_USAGE, "stats: no arguments expected, got '%s'", argv[optind]);
	if (!db)
		db = store_default_path();
	/* no store yet: nothing governed, and no empty store is made to say so */
	if (!access(db, F_OK)) {
		rc = store_open(db, &st, &err);
		if (rc)
			die(EXIT_INTERNAL, "stats: %s", err ? err : "cannot open the profile store");
		rc = store_governed_tally(st, each, &ts);
		store_close(st);
		if (rc)
			die(EXIT_INTERNAL, "stats: cannot read the builds in %s", db);
	}
	if (json) {
		json_t *o = json_object(), *dirs = json_array();
		json_object_set_new(o, "format", json_string("headroom-stats/1"));
		json_object_set_new(o, "store", json_string(db));
		json_object_set_new(o, "total", tally_json(&ts.total));
		for (size_t i = 0; i < ts.n; i++)
			json_array_append_new(dirs, tally_json(&ts.v[i]));
		json_object_set_new(o, "directories", dirs);
		json_dumpf(o, stdout, JSON_INDENT(2));
		putchar('\n');
		json_decref(o);
	} else if (!ts.total.builds) {
		printf("no build governed yet (%s): `headroom run -- BUILD` governs one\n", db);
	} else {
		printf("%-40s %6s %7s %7s %5s %8s %11s %9s\n", "DIRECTORY", "BUILDS", "JOBS", "FREEZES", "KILLS",
		       "REQUEUES", "OOM AVOIDED", "SAVED");
		for (size_t i = 0; i < ts.n; i++)
			tally_print(&ts.v[i], ts.v[i].dir);
		tally_print(&ts.total, "total");
		printf("(OOM avoided: builds whose own -jN would not have fit the memory limit; saved: against\n"
		       " the best fixed -j that fits and the CPUs run; `headroom stats --help` says how)\n");
	}
	for (size_t i = 0; i < ts.n; i++)
		free((char *)ts.v[i].dir);
	free(ts.v);
	free(db);
	return 0;
}
