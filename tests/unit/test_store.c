/* The SQLite profile store. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "store/store.h"

static char dir[] = "/tmp/headroom-test-store.XXXXXX";

static int count_one(enum profile_kind kind, const char *key, const struct profile *p, void *arg)
{
	(void)kind;
	(void)key;
	assert_int_equal(p->curve.duration_ms, 1234);
	++*(int *)arg;
	return 0;
}

static int count_any(enum profile_kind kind, const char *key, const struct profile *p, void *arg)
{
	(void)kind;
	(void)key;
	(void)p;
	++*(int *)arg;
	return 0;
}

static void test_roundtrip(void **state)
{
	struct store *st;
	struct profile p = { .runs = 3 }, q;
	char *err = NULL, *path = NULL;

	(void)state;
	assert_non_null(mkdtemp(dir));
	assert_true(asprintf(&path, "%s/a/b/profiles.db", dir) > 0);
	assert_int_equal(store_open(path, &st, &err), 0); /* a/b is made by the first write */
	p.curve.duration_ms = 1234;
	for (int i = 0; i < CURVE_POINTS; i++)
		p.curve.pts[i] = (uint64_t)i << 30; /* past 32 bits: stored whole */
	curve_update_peak(&p.curve);
	assert_int_equal(store_get(st, PROFILE_SIG, "nvcc :: a.cu", &q), -ENOENT);
	int added = 0;
	assert_int_equal(store_begin(st), 0);
	assert_int_equal(store_merge(st, PROFILE_SIG, "nvcc :: a.cu", &p, &added), 0);
	assert_int_equal(store_commit(st), 0);
	assert_int_equal(added, 1); /* nothing to merge with: stored as it is */
	store_close(st);

	assert_int_equal(store_open(path, &st, &err), 0);
	assert_int_equal(store_get(st, PROFILE_SIG, "nvcc :: a.cu", &q), 0);
	assert_int_equal(q.runs, 3);
	assert_int_equal(q.curve.duration_ms, 1234);
	assert_int_equal(q.curve.peak_bytes, 63ULL << 30);
	assert_memory_equal(q.curve.pts, p.curve.pts, sizeof(p.curve.pts));
	/* kinds are separate namespaces */
	assert_int_equal(store_get(st, PROFILE_CLASS, "nvcc :: a.cu", &q), -ENOENT);
	int n = 0;
	assert_int_equal(store_each(st, "a.cu", count_one, &n), 0);
	assert_int_equal(n, 1);
	n = 0;
	assert_int_equal(store_each(st, "b.cu", count_one, &n), 0);
	assert_int_equal(n, 0);
	assert_int_equal(store_forget(st, "nothing-like-it"), 0);
	assert_int_equal(store_forget(st, "a.cu"), 1);
	assert_int_equal(store_get(st, PROFILE_SIG, "nvcc :: a.cu", &q), -ENOENT);
	store_close(st);
	unlink(path);
	free(path);
}

/* A curve of one value everywhere. */
static struct curve flat(uint64_t bytes, int64_t duration_ms)
{
	struct curve c = { .duration_ms = duration_ms };

	for (int i = 0; i < CURVE_POINTS; i++)
		c.pts[i] = bytes;
	curve_update_peak(&c);
	return c;
}

static char *db_path(const char *name)
{
	char *path = NULL;

	assert_true(asprintf(&path, "%s/%s", dir, name) > 0);
	return path;
}

/* Two builds on one store, each reading the profile before either saves: the second to
 * save folds its jobs into what the first saved, as if they had run one after the other. */
static void test_concurrent_builds_merge(void **state)
{
	struct store *a, *b;
	struct profile p;
	struct curve seen[5], want;
	char *err = NULL, *path = db_path("shared.db");

	(void)state;
	for (int i = 0; i < 5; i++)
		seen[i] = flat((uint64_t)(i + 1) << 20, 1000 * (i + 1));
	assert_int_equal(store_open(path, &a, &err), 0);
	assert_int_equal(store_open(path, &b, &err), 0);
	assert_int_equal(store_get(a, PROFILE_CLASS, "cc -O2", &p), -ENOENT);
	assert_int_equal(store_get(b, PROFILE_CLASS, "cc -O2", &p), -ENOENT);
	for (int i = 0; i < 3; i++)
		store_learn(a, PROFILE_CLASS, "cc -O2", &seen[i], 80, 0);
	for (int i = 3; i < 5; i++)
		store_learn(b, PROFILE_CLASS, "cc -O2", &seen[i], 80, 0);
	assert_int_equal(store_flush(a), 0);
	assert_int_equal(store_flush(b), 0);
	assert_int_equal(store_flush(b), 0); /* the queue was emptied: nothing counted twice */

	assert_int_equal(store_get(a, PROFILE_CLASS, "cc -O2", &p), 0);
	assert_int_equal(p.runs, 5);
	for (int i = 0; i < 5; i++)
		curve_learn(&want, &seen[i], i == 0, 80, 0);
	assert_int_equal(p.curve.duration_ms, want.duration_ms);
	assert_int_equal(p.curve.peak_bytes, want.peak_bytes);
	assert_memory_equal(p.curve.pts, want.pts, sizeof(want.pts));
	store_close(a);
	store_close(b);
	free(path);
}

/* While another handle holds the write lock, lookups go on (WAL) and do not wait. */
static void test_lookup_while_locked(void **state)
{
	struct store *a, *b;
	struct profile p = { .runs = 1, .curve = flat(1 << 20, 100) };
	char *err = NULL, *path = db_path("locked.db");
	int added;

	(void)state;
	assert_int_equal(store_open(path, &a, &err), 0);
	assert_int_equal(store_open(path, &b, &err), 0);
	assert_int_equal(store_begin(a), 0);
	assert_int_equal(store_merge(a, PROFILE_SIG, "cc :: x.c", &p, &added), 0);
	assert_int_equal(store_commit(a), 0);
	assert_int_equal(store_begin(a), 0); /* a holds the write lock from here */
	/* a lookup that had to wait would end -EBUSY */
	assert_int_equal(store_get(b, PROFILE_SIG, "cc :: x.c", &p), 0);
	assert_int_equal(store_get(b, PROFILE_SIG, "cc :: y.c", &p), -ENOENT);
	store_rollback(a);
	store_close(a);
	store_close(b);
	free(path);
}

/* Import's merge: runs add up, a class keeps the runs-weighted mean, a signature the
 * envelope; nothing known is overwritten. */
static void test_merge(void **state)
{
	struct store *st;
	struct profile mine = { .runs = 3, .updated_s = 1000 }, theirs = { .runs = 1, .updated_s = 2000 }, p;
	char *err = NULL, *path = db_path("merge.db");
	int added;

	(void)state;
	mine.curve = flat(100 << 20, 4000);
	theirs.curve = flat(500 << 20, 8000);
	theirs.curve.pts[0] = 50 << 20; /* below mine there */
	assert_int_equal(store_open(path, &st, &err), 0);
	assert_int_equal(store_begin(st), 0);
	for (int k = PROFILE_SIG; k <= PROFILE_CLASS; k++) {
		assert_int_equal(store_merge(st, k, "nvcc -O3", &mine, &added), 0);
		assert_int_equal(added, 1);
		assert_int_equal(store_merge(st, k, "nvcc -O3", &theirs, &added), 0);
		assert_int_equal(added, 0);
	}
	assert_int_equal(store_commit(st), 0);

	assert_int_equal(store_get(st, PROFILE_CLASS, "nvcc -O3", &p), 0);
	assert_int_equal(p.runs, 4);
	assert_int_equal(p.updated_s, 2000);
	assert_int_equal(p.curve.duration_ms, 5000);                  /* (3 * 4000 + 8000) / 4 */
	assert_int_equal(p.curve.pts[1], 200 << 20);                 /* (3 * 100 + 500) / 4 MiB */
	assert_int_equal(p.curve.pts[0], (3 * 100 + 50) << 20 >> 2); /* 87.5 MiB */
	assert_int_equal(p.curve.peak_bytes, 200 << 20);

	assert_int_equal(store_get(st, PROFILE_SIG, "nvcc -O3", &p), 0);
	assert_int_equal(p.runs, 4);
	assert_int_equal(p.curve.duration_ms, 5000);
	assert_int_equal(p.curve.pts[0], 100 << 20);  /* the larger of the two, point by point */
	assert_int_equal(p.curve.pts[1], 500 << 20);
	assert_int_equal(p.curve.peak_bytes, 500 << 20);
	store_close(st);
	free(path);
}

static void test_not_a_database(void **state)
{
	struct store *st = NULL;
	char *err = NULL, *path = NULL;
	FILE *f;

	(void)state;
	assert_true(asprintf(&path, "%s/junk.db", dir) > 0);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs("this is not sqlite, it is a text file that someone left here\n", f);
	fclose(f);
	assert_int_not_equal(store_open(path, &st, &err), 0);
	assert_non_null(err);
	assert_non_null(strstr(err, path)); /* the message names the file */
	free(err);
	unlink(path);
	free(path);
}

static void test_unwritable_dir(void **state)
{
	struct store *st = NULL;
	char *err = NULL;

	(void)state;
	/* the parent is a regular file: the directory cannot be made */
	assert_int_not_equal(store_open("/dev/null/x/profiles.db", &st, &err), 0);
	assert_non_null(err);
	free(err);
}

/* The whole of a file, for comparing before and after; caller frees. */
static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf;

	assert_non_null(f);
	assert_int_equal(fseek(f, 0, SEEK_END), 0);
	*len = (size_t)ftell(f);
	rewind(f);
	buf = malloc(*len + 1);
	assert_non_null(buf);
	assert_int_equal(fread(buf, 1, *len, f), *len);
	buf[*len] = '\0'; /* read as text too (a fixture's SQL) */
	fclose(f);
	return buf;
}

/* A database made here with sql, closed. */
static char *make_db(const char *name, const char *sql)
{
	char *path = db_path(name);
	sqlite3 *db;

	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	assert_int_equal(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(db);
	return path;
}

static int int_of(const char *path, const char *sql)
{
	sqlite3 *db;
	sqlite3_stmt *q;
	int v;

	assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &q, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_step(q), SQLITE_ROW);
	v = sqlite3_column_int(q, 0);
	sqlite3_finalize(q);
	sqlite3_close(db);
	return v;
}

/* Someone's application database, given as the store: refused, and not one byte of it
 * changed (issue 12: its user_version became 3 and three tables were added). The same for
 * one that looks like an old store of headroom's but holds other tables too, and for one
 * with another application_id. */
static void test_foreign_untouched(void **state)
{
	static const char *const sql[] = {
		"CREATE TABLE users (name TEXT); INSERT INTO users VALUES ('ada'); PRAGMA user_version = 42;",
		"CREATE TABLE profiles (x); CREATE TABLE users (name TEXT); PRAGMA user_version = 3;",
		"CREATE TABLE profiles (x); PRAGMA user_version = 3; PRAGMA application_id = 1234;",
		"CREATE TABLE users (name TEXT);",
	};

	(void)state;
	for (size_t i = 0; i < sizeof(sql) / sizeof(*sql); i++) {
		char name[32], *path, *before, *after, *err = NULL;
		struct store *st = NULL;
		size_t n0, n1;

		snprintf(name, sizeof(name), "app%zu.db", i);
		path = make_db(name, sql[i]);
		before = slurp(path, &n0);
		assert_int_equal(store_open(path, &st, &err), -EMEDIUMTYPE);
		assert_null(st);
		assert_non_null(strstr(err, path));
		assert_non_null(strstr(err, "not a headroom profile store"));
		after = slurp(path, &n1);
		assert_int_equal(n0, n1);
		assert_memory_equal(before, after, n0);
		free(before);
		free(after);
		free(err);
		free(path);
	}
}

/* A store is not made until something is written to it; then it is marked headroom's. */
static void test_made_by_first_write(void **state)
{
	struct store *st;
	struct profile p;
	struct build_profile b = { 1, 7, 1000 };
	char *err = NULL, *path = db_path("late/dir/profiles.db"), *dirpath = db_path("late");
	struct gpu_probe gpu, got;
	int n = 0;

	(void)state;
	assert_int_equal(store_open(path, &st, &err), 0);
	assert_int_not_equal(access(dirpath, F_OK), 0);
	assert_int_equal(store_get(st, PROFILE_SIG, "cc :: a.c", &p), -ENOENT);
	assert_int_equal(store_each(st, "", count_one, &n), 0);
	assert_int_equal(n, 0);
	assert_int_equal(store_build_get(st, "k", &b), -ENOENT);
	probe_init(&gpu);
	snprintf(gpu.gpu, sizeof(gpu.gpu), "NVIDIA H200");
	assert_int_equal(store_probe_latest(st, &gpu, 0, &got), -ENOENT);
	assert_int_equal(store_flush(st), 0); /* nothing queued: nothing written */
	assert_int_not_equal(access(dirpath, F_OK), 0);
	assert_int_equal(store_build_put(st, "k", &b), 0);
	assert_int_equal(access(path, F_OK), 0);
	assert_int_equal(int_of(path, "PRAGMA application_id"), STORE_APPLICATION_ID);
	assert_int_equal(int_of(path, "PRAGMA user_version"), 6);
	store_close(st);
	free(path);
	free(dirpath);
}

/* Two builds start at once on a store not made yet: the second may open the file the
 * first has just created, before its schema is in (a database with no table, no id).
 * That is a store being made, not someone else's: it reads as empty, and the second
 * build's write completes it (before, the second build lost all it learned). */
static void test_store_being_made(void **state)
{
	char *path = make_db("making.db", "PRAGMA journal_mode = WAL;");
	struct build_profile b = { 1, 7, 1000 };
	struct profile p;
	struct store *st = NULL;
	char *err = NULL;

	(void)state;
	assert_int_equal(store_open(path, &st, &err), 0);
	assert_int_equal(store_get(st, PROFILE_SIG, "cc :: a.c", &p), -ENOENT);
	assert_int_equal(store_build_put(st, "k", &b), 0);
	assert_int_equal(int_of(path, "PRAGMA application_id"), STORE_APPLICATION_ID);
	assert_int_equal(store_build_get(st, "k", &b), 0);
	store_close(st);
	free(path);
}

/* The tables of a schema 3 store, as headroom made them. */
#define SCHEMA_3_TABLES \
	"CREATE TABLE profiles (kind INTEGER NOT NULL, key TEXT NOT NULL, runs INTEGER NOT NULL," \
	" duration_ms INTEGER NOT NULL, peak_bytes INTEGER NOT NULL, curve TEXT NOT NULL," \
	" updated_s INTEGER NOT NULL, PRIMARY KEY (kind, key));" \
	"CREATE TABLE builds (key TEXT PRIMARY KEY, runs INTEGER NOT NULL, jobs INTEGER NOT NULL," \
	" wall_ms INTEGER NOT NULL, updated_s INTEGER NOT NULL);" \
	"CREATE TABLE probes (key TEXT PRIMARY KEY, value TEXT NOT NULL, updated_s INTEGER NOT NULL);"

static int collect(const struct governed_build *b, void *arg)
{
	struct governed_build *out = arg;
	int64_t n = out[0].jobs++;

	out[1 + n] = *b;
	out[1 + n].dir = NULL;
	out[1 + n].command = NULL;
	assert_string_equal(b->dir, n ? "/src/b" : "/src/a");
	return 0;
}

/* headroom stats' builds: a schema 3 store has none, and gets the table when opened;
 * unknown values come back unknown (NULL in the table, -1 here). */
static void test_governed(void **state)
{
	char *path = make_db("v3.db",
			     SCHEMA_3_TABLES
			     "PRAGMA user_version = 3; PRAGMA application_id = 1214534253;");
	struct governed_build a = { .dir = "/src/a", .command = "ninja -j16", .ended_s = 100, .wall_ms = 5000,
				    .jobs = 47, .compile_jobs = 46, .freezes = 3, .kills = 1, .retries = 1,
				    .jobs_cap = 16, .budget_bytes = 1 << 30, .safe_jobs = 5,
				    .plain_peak_bytes = 3LL << 30, .compile_wall_ms = 4900, .safe_fixed_wall_ms = 7000 };
	struct governed_build b = { .dir = "/src/b", .command = "make", .ended_s = 200, .wall_ms = 10, .jobs = 1,
				    .jobs_cap = 2, .budget_bytes = 1 << 30, .safe_jobs = -1, .plain_peak_bytes = -1,
				    .compile_wall_ms = -1, .safe_fixed_wall_ms = -1 };
	struct governed_build got[3] = { 0 };
	struct store *st;
	char *err = NULL;

	(void)state;
	assert_int_equal(STORE_APPLICATION_ID, 1214534253);
	assert_int_equal(store_open(path, &st, &err), 0);
	assert_int_equal(store_governed_each(st, collect, got), 0);
	assert_int_equal(got[0].jobs, 0);
	assert_int_equal(store_governed_add(st, &a), 0);
	assert_int_equal(store_governed_add(st, &b), 0);
	assert_int_equal(int_of(path, "PRAGMA user_version"), 6);
	assert_int_equal(store_governed_each(st, collect, got), 0);
	assert_int_equal(got[0].jobs, 2);
	assert_int_equal(got[1].freezes, 3);
	assert_int_equal(got[1].plain_peak_bytes, 3LL << 30);
	assert_int_equal(got[1].safe_fixed_wall_ms, 7000);
	assert_int_equal(got[2].safe_jobs, -1);
	assert_int_equal(got[2].plain_peak_bytes, -1);
	assert_int_equal(got[2].compile_wall_ms, -1);
	store_close(st);
	free(path);
}

/* A store made before headroom set an application_id (schema 3, headroom's tables
 * only) is headroom's: opening it brings it to the current schema (schema 4's table for
 * headroom stats), which marks it, as older schemas always were on open. */
static void test_old_store_adopted(void **state)
{
	char *path = make_db("old.db",
			     SCHEMA_3_TABLES
			     "PRAGMA user_version = 3;");
	struct build_profile b = { 1, 7, 1000 };
	struct store *st;
	char *err = NULL;

	(void)state;
	assert_int_equal(store_open(path, &st, &err), 0);
	assert_int_equal(int_of(path, "PRAGMA application_id"), STORE_APPLICATION_ID);
	assert_int_equal(int_of(path, "PRAGMA user_version"), 6);
	assert_int_equal(store_build_put(st, "k", &b), 0);
	assert_int_equal(store_build_get(st, "k", &b), 0);
	store_close(st);
	free(path);
}

/* A store this process may read but not write (its file and directory are another
 * user's): read in full; a write fails and says why, and what was read stays. As root
 * the test reads as uid 4242 in a child. */
static void test_read_only_store(void **state)
{
	struct profile p = { .runs = 2, .curve = flat(3 << 20, 500) };
	struct store *st;
	char *err = NULL, *rodir = db_path("ro"), *path = db_path("ro/profiles.db");
	int added, status;
	pid_t pid;

	(void)state;
	assert_int_equal(store_open(path, &st, &err), 0);
	assert_int_equal(store_begin(st), 0);
	assert_int_equal(store_merge(st, PROFILE_CLASS, "nvcc -O3", &p, &added), 0);
	assert_int_equal(store_commit(st), 0);
	store_close(st);
	assert_int_equal(chmod(path, 0444), 0);
	assert_int_equal(chmod(rodir, 0555), 0);
	assert_int_equal(chmod(dir, 0755), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct profile q;
		int n = 0;

		if (getuid() == 0 && (setgid(4242) || setuid(4242)))
			_exit(10);
		if (store_open(path, &st, &err)) {
			fprintf(stderr, "%s\n", err);
			_exit(11);
		}
		if (store_get(st, PROFILE_CLASS, "nvcc -O3", &q) || q.runs != 2)
			_exit(12);
		if (store_each(st, "", count_any, &n) || n != 1)
			_exit(13);
		store_learn(st, PROFILE_CLASS, "nvcc -O3", &p.curve, 10, 0);
		int rc = store_flush(st);
		if (rc != -EROFS && rc != -EACCES)
			_exit(14);
		if (store_get(st, PROFILE_CLASS, "nvcc -O3", &q) || q.runs != 2)
			_exit(15);
		store_close(st);
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	chmod(rodir, 0755);
	chmod(dir, 0700);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	free(path);
	free(rodir);
}

/* The probes of tests/fixtures/store/schema5.sql, as collected by store_probe_each. */
struct probes_seen {
	int n;
	struct gpu_probe p[8];
};

static int collect_probe(const struct gpu_probe *p, void *arg)
{
	struct probes_seen *s = arg;

	assert_true(s->n < 8);
	s->p[s->n++] = *p;
	return 0;
}

static char *schema5_store(const char *name)
{
	size_t len;
	char *sql = slurp("tests/fixtures/store/schema5.sql", &len), *path = make_db(name, sql);

	free(sql);
	return path;
}

static void assert_schema5_probes(const struct probes_seen *s)
{
	assert_int_equal(s->n, 3);
	/* by GPU, then oldest first; what a probe without --torch did not measure is unknown */
	assert_string_equal(s->p[0].gpu, "NVIDIA H100 80GB HBM3");
	assert_string_equal(s->p[0].torch, "");
	assert_string_equal(s->p[0].cuda, "");
	assert_string_equal(s->p[0].uuid, "");
	assert_int_equal(s->p[0].torch_overhead_bytes, -1);
	assert_int_equal(s->p[0].context_lazy_bytes, 511705088);
	assert_string_equal(s->p[1].driver, "570.86.15");
	assert_string_equal(s->p[1].torch, "2.10.0+cu128");
	assert_int_equal(s->p[1].probed_s, 1762000000);
	assert_int_equal(s->p[1].torch_overhead_bytes, 546LL << 20);
	assert_string_equal(s->p[2].driver, "580.159.04");
	assert_string_equal(s->p[2].cuda, "13.0");
	assert_int_equal(s->p[2].total_bytes, 150754820096LL);
	assert_int_equal(s->p[2].torch_overhead_bytes, 758LL << 20);
}

/* A store of schema 5 kept one probe a GPU and driver: opened, it is migrated to schema
 * 6, its probes become the first rows of each GPU's history, and nothing else is lost
 * (profiles, builds, governed builds, the old probes table as it was). */
static void test_probe_history_migrated(void **state)
{
	char *path = schema5_store("v5.db"), *err = NULL;
	struct probes_seen seen = { 0 };
	struct build_profile b;
	struct profile p;
	struct governed_build got[3] = { 0 };
	struct store *st;

	(void)state;
	assert_int_equal(store_open(path, &st, &err), 0);
	assert_int_equal(int_of(path, "PRAGMA user_version"), 6);
	assert_int_equal(store_probe_each(st, collect_probe, &seen), 0);
	assert_schema5_probes(&seen);
	assert_int_equal(store_get(st, PROFILE_SIG, "cc -O2 :: a.c", &p), 0);
	assert_int_equal(p.runs, 3);
	assert_int_equal(p.curve.pts[CURVE_POINTS - 1], CURVE_POINTS);
	assert_int_equal(store_build_get(st, "/src/a :: make", &b), 0);
	assert_int_equal(b.jobs, 47);
	assert_int_equal(store_governed_each(st, collect, got), 0);
	assert_int_equal(got[0].jobs, 1);
	assert_int_equal(got[1].limit_bytes, 64LL << 30);
	assert_int_equal(int_of(path, "SELECT count(*) FROM probes"), 3);
	store_close(st);
	/* opened again and written to: migrated once, not twice */
	assert_int_equal(store_open(path, &st, &err), 0);
	assert_int_equal(store_build_put(st, "k", &b), 0);
	store_close(st);
	assert_int_equal(int_of(path, "SELECT count(*) FROM probe_runs"), 3);
	free(path);
}

/* Each probe is a row; the newest of a GPU is found by its name and UUID, a row kept
 * before UUIDs were matching a card of its name; with_torch skips probes without it. */
static void test_probe_latest(void **state)
{
	char *path = schema5_store("latest.db"), *err = NULL;
	struct gpu_probe gpu, now, got;
	struct probes_seen seen = { 0 };
	struct store *st;

	(void)state;
	assert_int_equal(store_open(path, &st, &err), 0);
	probe_init(&gpu);
	snprintf(gpu.gpu, sizeof(gpu.gpu), "NVIDIA H200");
	snprintf(gpu.uuid, sizeof(gpu.uuid), "GPU-aaaa");
	assert_int_equal(store_probe_latest(st, &gpu, 1, &got), 0);
	assert_string_equal(got.driver, "580.159.04");
	now = gpu;
	snprintf(now.driver, sizeof(now.driver), "590.10");
	now.probed_s = 1766000000;
	now.context_lazy_bytes = 500LL << 20; /* without --torch: the rest unknown */
	assert_int_equal(store_probe_add(st, &now), 0);
	assert_int_equal(store_probe_latest(st, &gpu, 0, &got), 0);
	assert_string_equal(got.driver, "590.10");
	assert_string_equal(got.uuid, "GPU-aaaa");
	assert_int_equal(got.torch_overhead_bytes, -1);
	assert_int_equal(got.context_eager_bytes, -1);
	/* plan wants PyTorch's figure: the newest probe that has one */
	assert_int_equal(store_probe_latest(st, &gpu, 1, &got), 0);
	assert_string_equal(got.driver, "580.159.04");
	/* another H200 does not see this one's probe, only the rows of unknown card */
	snprintf(gpu.uuid, sizeof(gpu.uuid), "GPU-bbbb");
	assert_int_equal(store_probe_latest(st, &gpu, 0, &got), 0);
	assert_string_equal(got.driver, "580.159.04");
	snprintf(gpu.gpu, sizeof(gpu.gpu), "NVIDIA H100 80GB HBM3");
	assert_int_equal(store_probe_latest(st, &gpu, 1, &got), -ENOENT);
	snprintf(gpu.gpu, sizeof(gpu.gpu), "NVIDIA B200");
	assert_int_equal(store_probe_latest(st, &gpu, 0, &got), -ENOENT);
	assert_int_equal(store_probe_each(st, collect_probe, &seen), 0);
	assert_int_equal(seen.n, 4);
	assert_string_equal(seen.p[3].driver, "590.10");
	store_close(st);
	free(path);
}

/* A store of schema 5 that cannot be written is read as it is: its probes are read as
 * the rows they would become. As root the test reads as uid 4242 in a child. */
static void test_probe_history_read_only(void **state)
{
	char *rodir = db_path("ro5"), *path = db_path("ro5/profiles.db");
	char *sql, *err = NULL;
	size_t len;
	sqlite3 *db;
	int status;
	pid_t pid;

	(void)state;
	assert_int_equal(mkdir(rodir, 0755), 0);
	sql = slurp("tests/fixtures/store/schema5.sql", &len);
	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	assert_int_equal(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(db);
	free(sql);
	assert_int_equal(chmod(path, 0444), 0);
	assert_int_equal(chmod(rodir, 0555), 0);
	assert_int_equal(chmod(dir, 0755), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct probes_seen seen = { 0 };
		struct gpu_probe gpu, got;
		struct store *st;

		if (getuid() == 0 && (setgid(4242) || setuid(4242)))
			_exit(10);
		if (store_open(path, &st, &err))
			_exit(11);
		/* no cmocka assertion in the child: it would go on to the next tests */
		if (store_probe_each(st, collect_probe, &seen) || seen.n != 3 || seen.p[0].torch_overhead_bytes != -1 ||
		    *seen.p[0].torch || seen.p[1].torch_overhead_bytes != 546LL << 20 || seen.p[1].probed_s != 1762000000)
			_exit(12);
		probe_init(&gpu);
		snprintf(gpu.gpu, sizeof(gpu.gpu), "NVIDIA H200");
		if (store_probe_latest(st, &gpu, 1, &got) || strcmp(got.driver, "580.159.04"))
			_exit(13);
		store_close(st);
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	chmod(rodir, 0755);
	chmod(dir, 0700);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	assert_int_equal(int_of(path, "PRAGMA user_version"), 5);
	free(path);
	free(rodir);
}

static int teardown(void **state)
{
	(void)state;
	char *cmd = NULL;
	if (asprintf(&cmd, "rm -rf %s", dir) > 0 && system(cmd))
		return 0;
	free(cmd);
	return 0;
}

static int count_file(const char *key, uint64_t peak_bytes, void *arg)
{
	int *n = arg;

	assert_true(!strncmp(key, "nvcc -O2 :: ", 12));
	assert_int_equal(peak_bytes, 7ULL << 20);
	(*n)++;
	return 0;
}

/* A class's files: its signature keys only, not a class whose name starts with its name,
 * nor one that ends with it, nor the class itself. */
static void test_each_file(void **state)
{
	struct store *st;
	struct profile p = { .runs = 1 };
	char *err = NULL, *path = NULL;
	const char *keys[] = { "nvcc -O2 :: a.cu", "nvcc -O2 :: b/a.cu", "nvcc -O2x :: c.cu", "ccache nvcc -O2 :: d.cu",
			       "nvcc -O2 ::e.cu" };
	int added, n = 0;

	(void)state;
	assert_true(asprintf(&path, "%s/files.db", dir) > 0);
	assert_int_equal(store_open(path, &st, &err), 0);
	p.curve.duration_ms = 100;
	for (int i = 0; i < CURVE_POINTS; i++)
		p.curve.pts[i] = 7ULL << 20;
	curve_update_peak(&p.curve);
	assert_int_equal(store_begin(st), 0);
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		assert_int_equal(store_merge(st, PROFILE_SIG, keys[i], &p, &added), 0);
	assert_int_equal(store_merge(st, PROFILE_CLASS, "nvcc -O2", &p, &added), 0);
	assert_int_equal(store_commit(st), 0);
	assert_int_equal(store_each_file(st, "nvcc -O2", count_file, &n), 0);
	assert_int_equal(n, 2);
	store_close(st);
	unlink(path);
	free(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_roundtrip),
		cmocka_unit_test(test_concurrent_builds_merge),
		cmocka_unit_test(test_lookup_while_locked),
		cmocka_unit_test(test_merge),
		cmocka_unit_test(test_not_a_database),
		cmocka_unit_test(test_unwritable_dir),
		cmocka_unit_test(test_foreign_untouched),
		cmocka_unit_test(test_store_being_made),
		cmocka_unit_test(test_made_by_first_write),
		cmocka_unit_test(test_old_store_adopted),
		cmocka_unit_test(test_governed),
		cmocka_unit_test(test_read_only_store),
		cmocka_unit_test(test_each_file),
		cmocka_unit_test(test_probe_history_migrated),
		cmocka_unit_test(test_probe_latest),
		cmocka_unit_test(test_probe_history_read_only),
	};
	return cmocka_run_group_tests_name("store", tests, NULL, teardown);
}
