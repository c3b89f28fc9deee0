/* The jobserver: which style a build's tools speak, and the tokens in the pipe or fifo. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include <cmocka.h>

#include "govern/jobserver.h"

static void test_style(void **state)
{
	(void)state;
	assert_int_equal(jobserver_style_for("GNU Make 4.3", "1.11.1", "make"), JOBSERVER_PIPE);
	assert_int_equal(jobserver_style_for("GNU Make 4.4.1", "1.11.1", "/usr/bin/make"), JOBSERVER_FIFO);
	assert_int_equal(jobserver_style_for("GNU Make 4.3", "1.13.0", "ninja"), JOBSERVER_FIFO);
	assert_int_equal(jobserver_style_for("GNU Make 4.3", "1.11.1", "ninja"), JOBSERVER_NONE);
	assert_int_equal(jobserver_style_for("GNU Make 4.3", "1.12.1", "sh"), JOBSERVER_PIPE);
	assert_int_equal(jobserver_style_for(NULL, NULL, "sh"), JOBSERVER_FIFO);
	assert_true(jobserver_ninja_is_client("2.0.0"));
	assert_false(jobserver_make_has_fifo("make (not GNU) 5.0"));
}

/* A style the user names is refused before the build when its tools cannot read it. */
static void test_style_readable(void **state)
{
	static const struct {
		enum jobserver_style style;
		const char *make, *ninja, *cmd;
		int readable;
	} rows[] = {
		{ JOBSERVER_FIFO, "GNU Make 4.3", "1.11.1", "make", 0 },
		{ JOBSERVER_FIFO, "GNU Make 4.3", "1.11.1", "sh", 0 },   /* a script running make */
		{ JOBSERVER_FIFO, "GNU Make 4.4.1", "1.11.1", "/usr/bin/make", 1 },
		{ JOBSERVER_FIFO, "GNU Make 4.3", "1.13.0", "ninja", 1 },
		{ JOBSERVER_FIFO, "GNU Make 4.3", "1.11.1", "ninja", 0 },
		{ JOBSERVER_PIPE, "GNU Make 4.3", "1.13.0", "ninja", 0 },  /* ninja reads only fifo */
		{ JOBSERVER_PIPE, "GNU Make 4.3", "1.11.1", "make", 1 },
		{ JOBSERVER_FIFO, NULL, NULL, "make", 1 },               /* unknown: not refused */
	};

	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
		assert_int_equal(jobserver_style_readable(rows[i].style, rows[i].make, rows[i].ninja, rows[i].cmd),
				 rows[i].readable);
}

static void check_tokens(enum jobserver_style style)
{
	struct jobserver js;
	char dir[] = "/tmp/hr-js.XXXXXX";
	char c;

	assert_non_null(mkdtemp(dir));
	assert_int_equal(jobserver_open(&js, style, dir, 8, NULL), 0);
	assert_non_null(js.makeflags);
	assert_int_equal(jobserver_waiting(&js), 0);
	assert_int_equal(jobserver_set(&js, 5), 5);
	if (style == JOBSERVER_PIPE) {
		/* a client takes one from the inherited end */
		assert_int_equal(read(js.rfd, &c, 1), 1);
		assert_int_equal(c, '+');
		assert_int_equal(jobserver_waiting(&js), 4);
	}
	assert_int_equal(jobserver_set(&js, 1), 1);
	assert_int_equal(jobserver_set(&js, 0), 0);
	jobserver_close(&js);
	assert_int_equal(rmdir(dir), 0); /* the fifo is gone too */
}

static void test_pipe(void **state)
{
	(void)state;
	check_tokens(JOBSERVER_PIPE);
}

static void test_fifo(void **state)
{
	(void)state;
	check_tokens(JOBSERVER_FIFO);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_style),
		cmocka_unit_test(test_style_readable),
		cmocka_unit_test(test_pipe),
		cmocka_unit_test(test_fifo),
	};
	return cmocka_run_group_tests_name("jobserver", tests, NULL, NULL);
}
