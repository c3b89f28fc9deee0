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
	assert_int_equal(store_begin(st), 0);
	assert_int_equal(store_put(st, PROFILE_SIG, "nvcc :: a.cu", &p), 0);
	assert_int_equal(store_commit(st), 0);
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
		cmocka_unit_test(test_not_a_database),
		cmocka_unit_test(test_unwritable_dir),
	};
	return cmocka_run_group_tests_name("store", tests, NULL, teardown);
}
