/* sys/command: a program run by argv, its output read, no shell in between. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sys/command.h"

/* A value with shell syntax in it is one word of argv, never shell text. */
static void test_no_shell(void **state)
{
	char dir[] = "/tmp/headroom-test-command.XXXXXX", word[1024], marker[200];
	char *out;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(marker, sizeof(marker), "%s/PWN", dir);
	snprintf(word, sizeof(word), "/x'; touch %s; '$(touch %s)`touch %s`", marker, marker, marker);
	char *const argv[] = { "printf", "%s", word, NULL };
	out = command_output(argv, NULL);
	assert_non_null(out);
	assert_string_equal(out, word);
	assert_int_not_equal(access(marker, F_OK), 0);
	free(out);
	rmdir(dir);
}

static void test_cwd_and_lines(void **state)
{
	char *const pwd[] = { "pwd", NULL };
	char *const two[] = { "printf", "first\nsecond\n", NULL };
	char *const empty[] = { "printf", "\nsecond\n", NULL };
	char *const none[] = { "true", NULL };
	char *const missing[] = { "headroom-no-such-program", "--version", NULL };
	char *out;

	(void)state;
	out = command_first_line(pwd, "/");
	assert_non_null(out);
	assert_string_equal(out, "/");
	free(out);
	out = command_first_line(two, NULL);
	assert_string_equal(out, "first");
	free(out);
	out = command_output(two, NULL);
	assert_string_equal(out, "first\nsecond\n");
	free(out);
	/* an empty first line, no output, a program that is not there: nothing */
	assert_null(command_first_line(empty, NULL));
	assert_null(command_output(none, NULL));
	assert_null(command_output(missing, NULL));
	/* a directory that cannot be entered: the program does not run elsewhere */
	assert_null(command_output(pwd, "/nonexistent-headroom-dir"));
}

/* Output past the limit is read and dropped: the program is not left blocked on a full
 * pipe, and what is kept is the limit less the NUL. */
static void test_long_output(void **state)
{
	char *const argv[] = { "sh", "-c", "yes | head -c 1000000", NULL };
	char *out;

	(void)state;
	out = command_output(argv, NULL);
	assert_non_null(out);
	assert_int_equal(strlen(out), COMMAND_OUTPUT_MAX - 1);
	assert_memory_equal(out, "y\ny\n", 4);
	free(out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_no_shell),
		cmocka_unit_test(test_cwd_and_lines),
		cmocka_unit_test(test_long_output),
	};
	return cmocka_run_group_tests_name("command", tests, NULL, NULL);
}
