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

static void test_roundtrip(void **state)
{
	struct store *st;
	struct profile p = { .runs = 3 }, q;
	char *err = NULL, *path = NULL;

	(void)state;
	assert_non_null(mkdtemp(dir));
	assert_true(asprintf(&path, "%s/a/b/profiles.db", dir) > 0);
	assert_int_equal(store_open(path, &st, &err), 0); /* creates a/b */
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

static int teardown(void **state)
{
	(void)state;
	char *cmd = NULL;
	if (asprintf(&cmd, "rm -rf %s", dir) > 0 && system(cmd))
		return 0;
	free(cmd);
	return 0;
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
	};
	return cmocka_run_group_tests_name("store", tests, NULL, teardown);
}
