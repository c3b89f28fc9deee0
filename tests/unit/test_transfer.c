/* Profiles as portable JSON: what export writes, what import accepts and merges. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/transfer.h"
#include "util/xalloc.h"

static char dir[] = "/tmp/headroom-test-transfer.XXXXXX";

static struct store *open_store(const char *name)
{
	struct store *st;
	char *err = NULL, *path = NULL;

	assert_true(asprintf(&path, "%s/%s", dir, name) > 0);
	assert_int_equal(store_open(path, &st, &err), 0);
	free(path);
	return st;
}

static void put(struct store *st, enum profile_kind kind, const char *key, int64_t runs, uint64_t bytes)
{
	struct profile p = { .runs = runs, .updated_s = 1000, .curve = { .duration_ms = 2000 } };
	int added;

	for (int i = 0; i < CURVE_POINTS; i++)
		p.curve.pts[i] = bytes;
	curve_update_peak(&p.curve);
	assert_int_equal(store_begin(st), 0);
	assert_int_equal(store_merge(st, kind, key, &p, &added), 0);
	assert_int_equal(store_commit(st), 0);
}

static int64_t runs_of(struct store *st, enum profile_kind kind, const char *key)
{
	struct profile p;

	return store_get(st, kind, key, &p) ? -1 : p.runs;
}

/* Export from a checkout at /home/a/proj, import into one at /ci/w/proj. */
static void test_roundtrip_between_checkouts(void **state)
{
	struct store *a, *b;
	struct transfer_counts n;
	char *text = NULL, *err = NULL;
	size_t len = 0;
	FILE *f;

	(void)state;
	assert_non_null(mkdtemp(dir));
	a = open_store("a.db");
	b = open_store("b.db");
	put(a, PROFILE_CLASS, "nvcc -O3", 4, 1 << 30);
	put(a, PROFILE_SIG, "nvcc -O3 :: /home/a/proj/csrc/k.cu", 2, 1 << 30);
	put(a, PROFILE_SIG, "nvcc -O3 :: /usr/include/x.cu", 1, 1 << 20); /* outside the checkout */
	put(a, PROFILE_SIG, "cc :: rel/x.c", 1, 1 << 20);                 /* relative as the build gave it */
	put(b, PROFILE_CLASS, "nvcc -O3", 1, 1 << 30);

	f = open_memstream(&text, &len);
	assert_int_equal(transfer_export(a, f, "/home/a/proj/", &n), 0);
	fclose(f);
	assert_int_equal(n.written, 3);
	assert_int_equal(n.skipped, 1);
	assert_null(strstr(text, "/home/a"));
	assert_null(strstr(text, "/usr/include"));
	assert_non_null(strstr(text, "\"format\": \"" TRANSFER_FORMAT "\""));
	assert_non_null(strstr(text, "\"key\":\"nvcc -O3 :: csrc/k.cu\""));

	f = fmemopen(text, len, "r");
	assert_int_equal(transfer_import(b, f, "a.json", "/ci/w/proj", &n, &err), 0);
	fclose(f);
	assert_null(err);
	assert_int_equal(n.added, 2);
	assert_int_equal(n.merged, 1);
	assert_int_equal(runs_of(b, PROFILE_CLASS, "nvcc -O3"), 5); /* merged: 1 + 4 */
	assert_int_equal(runs_of(b, PROFILE_SIG, "nvcc -O3 :: /ci/w/proj/csrc/k.cu"), 2);
	assert_int_equal(runs_of(b, PROFILE_SIG, "cc :: rel/x.c"), 1);
	assert_int_equal(runs_of(b, PROFILE_SIG, "nvcc -O3 :: /usr/include/x.cu"), -1);
	free(text);

	/* Root "/": every absolute source is under it. */
	text = NULL;
	f = open_memstream(&text, &len);
	assert_int_equal(transfer_export(a, f, "/", &n), 0);
	fclose(f);
	assert_int_equal(n.written, 4);
	assert_non_null(strstr(text, "\"key\":\"nvcc -O3 :: usr/include/x.cu\""));
	free(text);
	store_close(a);
	store_close(b);
}

/* A bad entry after good ones: an error naming the file and field, and nothing written. */
static void test_bad_input_imports_nothing(void **state)
{
	static const char doc[] =
		"{\"format\": \"" TRANSFER_FORMAT "\", \"profiles\": ["
		"{\"kind\":\"class\",\"key\":\"cc\",\"runs\":1,\"duration_ms\":5,\"peak_bytes\":0,"
		"\"updated_s\":0,\"curve_bytes\":[0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,"
		"0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0]},"
		"{\"kind\":\"class\",\"key\":\"cc\",\"runs\":1,\"duration_ms\":5,\"peak_bytes\":0,"
		"\"updated_s\":99999999999,\"curve_bytes\":[]}]}";
	struct store *st = open_store("bad.db");
	struct transfer_counts n;
	char *err = NULL;
	FILE *f = fmemopen((void *)doc, sizeof(doc) - 1, "r");

	(void)state;
	assert_int_equal(transfer_import(st, f, "bad.json", "/", &n, &err), -EINVAL);
	fclose(f);
	assert_non_null(err);
	assert_non_null(strstr(err, "bad.json: profiles[1].updated_s: must be an integer from 0 to"));
	free(err);
	assert_int_equal(runs_of(st, PROFILE_CLASS, "cc"), -1);
	store_close(st);
}

/* text imported from memory (no size to stat: bounded while read): its error */
static char *import_text(struct store *st, const char *text, size_t len)
{
	struct transfer_counts n;
	char *err = NULL;
	FILE *f = fmemopen((void *)text, len, "r");

	assert_non_null(f);
	assert_int_equal(transfer_import(st, f, "big.json", "/", &n, &err), -EINVAL);
	fclose(f);
	assert_non_null(err);
	return err;
}

/* An import past TRANSFER_MAX_PROFILES or TRANSFER_MAX_BYTES is refused, saying both. */
static void test_import_bounded(void **state)
{
	static const char head[] = "{\"format\": \"" TRANSFER_FORMAT "\", \"profiles\": [";
	size_t len = sizeof(head) - 1 + ((size_t)TRANSFER_MAX_PROFILES + 1) * 2 + 2;
	struct store *st = open_store("big.db");
	char *text = xcalloc(1, TRANSFER_MAX_BYTES + 64), *err, *p, want[256];

	(void)state;
	/* one entry too many, each refused only once counted */
	p = text + sizeof(head) - 1;
	memcpy(text, head, sizeof(head) - 1);
	for (int i = 0; i <= TRANSFER_MAX_PROFILES; i++, p += 2)
		memcpy(p, i ? ",0" : " 0", 2);
	memcpy(p, "]}", 2);
	err = import_text(st, text, len);
	snprintf(want, sizeof(want), "big.json holds %d profiles; profiles import takes at most %d MiB (%d profiles)",
		 TRANSFER_MAX_PROFILES + 1, TRANSFER_MAX_MIB, TRANSFER_MAX_PROFILES);
	assert_non_null(strstr(err, want));
	free(err);
	/* a byte past the limit: stopped while read, however the rest would parse */
	memset(text + sizeof(head) - 1, ' ', TRANSFER_MAX_BYTES);
	memcpy(text + sizeof(head) - 1 + TRANSFER_MAX_BYTES, "]}", 2);
	err = import_text(st, text, sizeof(head) - 1 + TRANSFER_MAX_BYTES + 2);
	snprintf(want, sizeof(want), "big.json is more than %d MiB; profiles import takes at most", TRANSFER_MAX_MIB);
	assert_non_null(strstr(err, want));
	free(err);
	/* at the limit it is read */
	memcpy(text + TRANSFER_MAX_BYTES - 2, "]}", 2);
	err = NULL;
	{
		struct transfer_counts n;
		FILE *f = fmemopen(text, TRANSFER_MAX_BYTES, "r");
		assert_int_equal(transfer_import(st, f, "big.json", "/", &n, &err), 0);
		fclose(f);
	}
	free(text);
	store_close(st);
}

static int teardown(void **state)
{
	char *cmd = NULL;

	(void)state;
	if (asprintf(&cmd, "rm -rf %s", dir) > 0 && system(cmd))
		return 0;
	free(cmd);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_roundtrip_between_checkouts),
		cmocka_unit_test(test_bad_input_imports_nothing),
		cmocka_unit_test(test_import_bounded),
	};
	return cmocka_run_group_tests_name("transfer", tests, NULL, teardown);
}
