/* The small shared pieces of util/: growing arrays, string builder, exit statuses, paths. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "util/exitcode.h"
#include "util/grow.h"
#include "util/path.h"
#include "util/strbuf.h"
#include "util/utf8.h"
#include "util/text.h"

static void test_array_grow(void **state)
{
	int *v = NULL;
	size_t n = 0, cap = 0;

	(void)state;
	for (int i = 0; i < 1000; i++) {
		ARRAY_GROW(v, n + 1, cap);
		v[n++] = i;
	}
	assert_true(cap >= 1000 && cap < 2048);
	for (int i = 0; i < 1000; i++)
		assert_int_equal(v[i], i);
	/* A jump past double the capacity gets what it asks for at once. */
	ARRAY_GROW(v, 10000, cap);
	assert_int_equal(cap, 10000);
	ARRAY_GROW(v, 5, cap); /* never shrinks */
	assert_int_equal(cap, 10000);
	free(v);
}

static void test_strbuf(void **state)
{
	struct strbuf sb = STRBUF_INIT;
	char *s;

	(void)state;
	assert_string_equal(strbuf_str(&sb), "");
	strbuf_addf(&sb, "%s ::", "/src");
	for (int i = 0; i < 500; i++)
		strbuf_addf(&sb, " %d", i);
	strbuf_add(&sb, "!");
	assert_int_equal(sb.len, strlen(sb.s));
	assert_memory_equal(sb.s, "/src :: 0 1 2", 13);
	assert_string_equal(sb.s + sb.len - 5, " 499!");
	s = strbuf_detach(&sb);
	assert_null(sb.s);
	assert_int_equal(sb.len, 0);
	free(s);
	s = strbuf_detach(&sb); /* nothing added: "" the caller owns */
	assert_string_equal(s, "");
	free(s);
	strbuf_add(&sb, "x");
	strbuf_release(&sb);
	assert_null(sb.s);
}

static void test_exit_status_of(void **state)
{
	int st;
	pid_t pid;

	(void)state;
	pid = fork();
	if (pid == 0)
		_exit(3);
	waitpid(pid, &st, 0);
	assert_int_equal(exit_status_of(st), 3);
	pid = fork();
	if (pid == 0) {
		raise(SIGKILL);
		_exit(0);
	}
	waitpid(pid, &st, 0);
	assert_int_equal(exit_status_of(st), 128 + SIGKILL);
}

static void test_paths(void **state)
{
	(void)state;
	assert_string_equal(path_base("/usr/bin/nvcc"), "nvcc");
	assert_string_equal(path_base("nvcc"), "nvcc");
	assert_string_equal(path_base("dir/"), "");
	setenv("XDG_RUNTIME_DIR", "/", 1);
	assert_string_equal(runtime_dir(), "/");
	setenv("XDG_RUNTIME_DIR", "/nonexistent/headroom-test", 1);
	assert_string_equal(runtime_dir(), "/tmp");
	setenv("XDG_RUNTIME_DIR", "", 1);
	assert_string_equal(runtime_dir(), "/tmp");
	unsetenv("XDG_RUNTIME_DIR");
	assert_string_equal(runtime_dir(), "/tmp");
}

/* Bytes that are no UTF-8 are shown as \xNN; UTF-8 is kept as it is. */
static void test_utf8(void **state)
{
	static const struct {
		const char *in, *shown;
		int valid;
	} rows[] = {
		{ "plain.c", "plain.c", 1 },
		{ "\xce\xbb.cu", "\xce\xbb.cu", 1 },
		{ "k\xff\xfe.cu", "k\\xff\\xfe.cu", 0 },
		{ "\xc0\xaf", "\\xc0\\xaf", 0 },             /* overlong */
		{ "\xed\xa0\x80", "\\xed\\xa0\\x80", 0 },     /* a surrogate */
		{ "\xf4\x90\x80\x80", "\\xf4\\x90\\x80\\x80", 0 }, /* past U+10FFFF */
		{ "a\xe2\x82", "a\\xe2\\x82", 0 },           /* cut short */
	};

	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		char *v = utf8_visible(rows[i].in);
		assert_int_equal(utf8_valid(rows[i].in, strlen(rows[i].in)), rows[i].valid);
		assert_string_equal(v, rows[i].shown);
		assert_true(utf8_valid(v, strlen(v)));
		free(v);
/* What a terminal is shown of a name: nothing that acts on it, nothing lost. */
static void test_text(void **state)
{
	static const struct {
		const char *in, *out;
		int utf8;
	} cases[] = {
		{ "plain/file.cu", "plain/file.cu", 1 },
		{ "a\tb\nc\x1b[31mred", "a\\tb\\nc\\e[31mred", 1 },
		{ "back\\slash", "back\\\\slash", 1 },
		{ "del\x7f c1\xc2\x9b", "del\\x7f c1\\xc2\\x9b", 1 },
		{ "caf\xc3\xa9 \xe2\x82\xac", "caf\xc3\xa9 \xe2\x82\xac", 1 },
		{ "bad\xff", "bad\\xff", 0 },
		{ "cut\xe2\x82", "cut\\xe2\\x82", 0 },
		{ "overlong\xc0\xaf", "overlong\\xc0\\xaf", 0 },
		{ "surrogate\xed\xa0\x80", "surrogate\\xed\\xa0\\x80", 0 },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *p = text_printable(cases[i].in);
		assert_string_equal(p, cases[i].out);
		assert_int_equal(text_is_utf8(cases[i].in), cases[i].utf8);
		free(p);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_array_grow),
		cmocka_unit_test(test_strbuf),
		cmocka_unit_test(test_utf8),
		cmocka_unit_test(test_text),
		cmocka_unit_test(test_exit_status_of),
		cmocka_unit_test(test_paths),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
