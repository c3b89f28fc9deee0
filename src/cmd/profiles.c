/* headroom profiles: list, show, forget, export and import learned job profiles. */
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cmd/cmd.h"
#include "store/store.h"
#include "store/transfer.h"
#include "sys/atomicfile.h"
#include "sys/fsutil.h"
#include "util/escape.h"
#include "util/log.h"
#include "util/units.h"
#include "util/xalloc.h"

static const char usage[] =
	"usage: headroom profiles [--db PATH] [--json] [list [TEXT]]\n"
	"       headroom profiles [--db PATH] [--json] show TEXT\n"
	"       headroom profiles [--db PATH] forget TEXT | --all\n"
	"       headroom profiles [--db PATH] [--root DIR] export FILE | import FILE\n"
	"\n"
	"What headroom learned about compile jobs: one profile per job signature (tool,\n"
	"memory flags and source file) and per class (tool and memory flags). TEXT selects\n"
	"the profiles whose key contains it (a file name, a flag, a tool).\n"
	"\n"
	"  list     one line a profile: kind, runs, peak, duration, key (the default)\n"
	"  show     the same with the learned memory curve\n"
	"  forget   delete them, so the next build learns them again\n"
	"  export   write every profile to FILE (- for stdout) as JSON (" TRANSFER_FORMAT "),\n"
	"           for another machine or checkout to import (a profile an import would\n"
	"           refuse, such as a key with a control character, is left out and counted)\n"
	"  import   merge FILE (- for stdin) into the store: runs add up, a profile the\n"
	"           store knows is folded with the file's, never overwritten; a file with\n"
	"           one bad field imports nothing\n"
	"\n"
	"      --db PATH   profile store (default: $XDG_STATE_HOME/headroom/profiles.db); list,\n"
	"                  show and export only read it (a read-only store is fine); a file\n"
	"                  that is not headroom's is refused and left as it is\n"
	"      --json      JSON array instead of text\n"
	"      --root DIR  the checkout's top directory (default: the current one): a\n"
	"                  signature's source under it travels relative to it, and import\n"
	"                  puts DIR back in front; signatures of sources elsewhere stay\n"
	"  -h, --help      show this help\n"
	"\n"
	"Exit status: 0; 1 if show or forget selected nothing; 2 usage or a bad import\n"
	"file; 125 store error (not headroom's, or it cannot be read, or written by forget\n"
	"and import).\n";

struct listing {
	int json, curves, count;
	json_t *arr;
};

static const char *kind_name(enum profile_kind k)
{
	return k == PROFILE_CLASS ? "class" : "signature";
}

static int one(enum profile_kind kind, const char *key, const struct profile *p, void *arg)
{
	struct listing *l = arg;
	char peak[32];

	l->count++;
	if (l->json) {
		json_t *o = json_pack("{s:s, s:I, s:I, s:I, s:I}", "kind", kind_name(kind), "runs",
				      (json_int_t)p->runs, "peak_bytes", (json_int_t)p->curve.peak_bytes,
				      "duration_ms", (json_int_t)p->curve.duration_ms, "updated_s",
				      (json_int_t)p->updated_s);
		json_set_bytes(o, "key", key); /* a key is file names: bytes */
		if (l->curves) {
			json_t *c = json_array();
			for (int i = 0; i < CURVE_POINTS; i++)
				json_array_append_new(c, json_integer((json_int_t)p->curve.pts[i]));
			json_object_set_new(o, "curve_bytes", c);
		}
		json_array_append_new(l->arr, o);
		return 0;
	}
	/* a key names files: what acts on a terminal is shown, not sent */
	char *shown = esc_dup(esc_term, key);
	printf("%-9s %5lld  %10s  %8.1f s  %s\n", kind_name(kind), (long long)p->runs,
	       size_format(p->curve.peak_bytes, peak, sizeof(peak)), p->curve.duration_ms / 1000.0, shown);
	free(shown);
	if (l->curves) {
		/* The curve as 64 slices of the duration, in MiB, eight to a line, each line
		 * labelled with the part of the job's life it covers. */
		printf("    resident memory (MiB) in %d slices of the job's %.1f s, %.0f ms each:\n", CURVE_POINTS,
		       p->curve.duration_ms / 1000.0, (double)p->curve.duration_ms / CURVE_POINTS);
		for (int i = 0; i < CURVE_POINTS; i++) {
			if (i % 8 == 0)
				printf("    %3d-%3d%%", i * 100 / CURVE_POINTS, (i + 8) * 100 / CURVE_POINTS);
			printf("%7.0f%s", (double)p->curve.pts[i] / (1 << 20), i % 8 == 7 ? "\n" : "");
		}
	}
	return 0;
}

/* export or import FILE ("-": stdout, stdin). */
static int transfer(const char *verb, const char *file, const char *db, const char *root_opt)
{
	int exporting = !strcmp(verb, "export"), is_std = !strcmp(file, "-"), rc, status = 0;
	struct transfer_counts n;
	struct atomic_file out = { 0 };
	struct store *st = NULL;
	char root[PATH_MAX], *err = NULL;
	const char *kind;
	struct stat sb;
	FILE *f, *in = NULL;

	if (!(root_opt ? realpath(root_opt, root) : getcwd(root, sizeof(root))))
		die(EXIT_USAGE, "profiles: cannot use %s as the root: %s", root_opt ? root_opt : "the current directory",
		    strerror(errno));
	/* Exporting a store that was never made exports nothing; it is not made to say so. */
	if ((!exporting || !access(db, F_OK)) && (rc = store_open(db, &st, &err))) {
		log_warn("profile store: %s", err);
		free(err);
		return EXIT_INTERNAL;
	}
	/* an export to a file replaces it whole or not at all */
	rc = is_std ? 0 : exporting ? atomic_open(&out, file) : fs_open_input(file, &in, &sb, &kind);
	f = is_std ? (exporting ? stdout : stdin) : exporting ? out.f : in;
	if (rc == -EINVAL && !exporting) {
		store_close(st);
		die(EXIT_USAGE, "profiles: %s is %s, not a file: give a profile export (headroom profiles export FILE)",
		    file, kind);
	}
	if (!f) {
		store_close(st);
		die(EXIT_USAGE, "profiles: cannot %s %s: %s", exporting ? "write" : "read", file,
		    strerror(rc ? -rc : errno));
	}
	if (exporting) {
		rc = transfer_export(st, f, root, &n);
		if (!is_std)
			rc = atomic_close(&out, rc);
		else if (fflush(f))
			rc = rc ? rc : -EIO;
		if (rc) {
			log_warn("cannot export to %s: %s", file, strerror(-rc));
			status = EXIT_INTERNAL;
		} else {
			fprintf(stderr, "exported %d profile%s to %s\n", n.written, n.written == 1 ? "" : "s",
				is_std ? "stdout" : file);
			if (n.skipped)
				fprintf(stderr, "left out %d signature%s whose source lies outside %s (--root)\n",
					n.skipped, n.skipped == 1 ? "" : "s", root);
			if (n.refused)
				fprintf(stderr, "left out %d profile%s that an import would refuse (the first: %s)\n",
					n.refused, n.refused == 1 ? "" : "s", n.refused_why);
			if (n.written > TRANSFER_MAX_PROFILES || n.bytes > TRANSFER_MAX_BYTES)
				log_warn("%s holds more than an import takes (%d MiB, %d profiles): forget the "
					 "profiles not needed and export again", is_std ? "the export" : file,
					 TRANSFER_MAX_MIB, TRANSFER_MAX_PROFILES);
		}
	} else {
		rc = transfer_import(st, f, is_std ? "stdin" : file, root, &n, &err);
		if (!is_std)
			fclose(f);
		if (rc) {
			log_warn("%s", err);
			free(err);
			status = rc == -EINVAL ? EXIT_USAGE : EXIT_INTERNAL;
		} else {
			printf("imported %d profile%s from %s: %d new, %d merged\n", n.added + n.merged,
			       n.added + n.merged == 1 ? "" : "s", is_std ? "stdin" : file, n.added, n.merged);
		}
	}
	store_close(st);
	return status;
}

int cmd_profiles(int argc, char **argv)
{
	enum { OPT_DB = 256, OPT_JSON, OPT_ALL, OPT_ROOT };
	static const struct option opts[] = {
		{ "db", required_argument, NULL, OPT_DB },
		{ "root", required_argument, NULL, OPT_ROOT },
		{ "json", no_argument, NULL, OPT_JSON },
		{ "all", no_argument, NULL, OPT_ALL },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct listing l = { 0 };
	const char *verb = "list", *text = "";
	char *db = NULL, *err = NULL, *root = NULL;
	struct store *st = NULL;
	int c, all = 0, rc, status = 0;

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case OPT_DB:
			if (!*optarg)
				die(EXIT_USAGE, "profiles: --db wants a path, not ''");
			free(db);
			db = xstrdup(optarg);
			break;
		case OPT_JSON:
			l.json = 1;
			break;
		case OPT_ALL:
			all = 1;
			break;
		case OPT_ROOT:
			root = optarg;
			break;
		case 'h':
			fputs(usage, stdout);
			free(db);
			return 0;
		default:
			opt_refused("profiles", opts, argv);
		}
	}
	if (optind < argc)
		verb = argv[optind++];
	if (optind < argc)
		text = argv[optind++];
	if (optind < argc || (strcmp(verb, "list") && strcmp(verb, "show") && strcmp(verb, "forget") &&
			      strcmp(verb, "export") && strcmp(verb, "import"))) {
		free(db);
		die(EXIT_USAGE, "profiles: expected list, show, forget, export or import with one argument, got '%s'",
		    verb);
	}
	if (!db)
		db = store_default_path();
	if (!strcmp(verb, "export") || !strcmp(verb, "import")) {
		if (!*text) {
			free(db);
			die(EXIT_USAGE, "profiles: %s needs a FILE (- for std%s)", verb,
			    strcmp(verb, "export") ? "in" : "out");
		}
		status = transfer(verb, text, db, root);
		free(db);
		return status;
	}
	if ((!strcmp(verb, "show") || !strcmp(verb, "forget")) && !*text && !all) {
		free(db);
		die(EXIT_USAGE, "profiles: %s needs a TEXT to select profiles (or --all with forget)", verb);
	}
	if (access(db, F_OK)) {
		/* Nothing learned yet: not an error, and no empty store is made just to say so. */
		if (l.json)
			puts("[]");
		else
			printf("no profiles yet (%s does not exist)\n", db);
		free(db);
		return strcmp(verb, "list") ? 1 : 0;
	}
	if (store_open(db, &st, &err)) {
		free(db);
		die(EXIT_INTERNAL, "profiles: profile store: %s", err);
	}
	if (!strcmp(verb, "forget")) {
		rc = store_forget(st, text);
		if (rc < 0) {
			log_warn("cannot forget profiles in %s: %s", db, strerror(-rc));
			status = EXIT_INTERNAL;
		} else {
			printf("forgot %d profile%s\n", rc, rc == 1 ? "" : "s");
			status = rc ? 0 : 1;
		}
		goto out;
	}
	l.curves = !strcmp(verb, "show");
	l.arr = json_array();
	if (!l.json)
		printf("%-9s %5s  %10s  %10s  %s\n", "kind", "runs", "peak", "duration", "key");
	rc = store_each(st, text, one, &l);
	if (rc) {
		log_warn("cannot read %s: %s", db, strerror(-rc));
		status = EXIT_INTERNAL;
	} else if (l.json) {
		char *s = json_dumps(l.arr, JSON_INDENT(2));
		if (s)
			puts(s);
		free(s);
	}
	if (!rc && l.curves && !l.count)
		status = 1;
	json_decref(l.arr);
out:
	store_close(st);
	free(db);
	return status;
}
