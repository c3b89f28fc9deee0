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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_array_grow),
		cmocka_unit_test(test_strbuf),
		cmocka_unit_test(test_exit_status_of),
		cmocka_unit_test(test_paths),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
