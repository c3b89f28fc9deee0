/* The watchdog's readers of one process against a fixture tree (tests/fixtures/procinfo):
 * 4242 a torchrun rank in a container, 4243 a zombie, 4244 a kernel without NSpid, 4245
 * and 4246 zombies of a kernel that writes their exit codes (exit 1 and exit 0). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <string.h>
#include <sys/wait.h>

#include "sys/procinfo.h"

#define FIX "tests/fixtures/procinfo"

static void test_environ(void **state)
{
	const char want[] = "PATH=/usr/bin\0TORCHELASTIC_RUN_ID=run7\0RANK=2";
	char buf[256];

	(void)state;
	assert_int_equal(procinfo_environ(FIX, 4242, buf, sizeof(buf)), sizeof(want));
	assert_memory_equal(buf, want, sizeof(want));
	/* cut to the buffer, still NUL-terminated */
	assert_int_equal(procinfo_environ(FIX, 4242, buf, 5), 4);
	assert_string_equal(buf, "PATH");
	assert_int_equal(procinfo_environ(FIX, 4299, buf, sizeof(buf)), -ENOENT);
}

static void test_container_pid(void **state)
{
	char status[] = "Name:\tx\nPid:\t9\nNSpid:\t9\t4\t1\nVmRSS:\t1 kB\n";
	pid_t inner = -1;

	(void)state;
	assert_int_equal(procinfo_container_pid(FIX, 4242, &inner), 0);
	assert_int_equal(inner, 17);
	assert_int_equal(procinfo_container_pid(FIX, 4243, &inner), 0);
	assert_int_equal(inner, 0); /* the host's namespace: the same pid */
	assert_int_equal(procinfo_container_pid(FIX, 4244, &inner), 0);
	assert_int_equal(inner, 0); /* no NSpid line */
	assert_int_equal(procinfo_container_pid(FIX, 4299, &inner), -ENOENT);
	assert_int_equal(inner, 0);
	assert_int_equal(procinfo_parse_nspid(status, 9), 1); /* nested: the innermost */
}

static void test_running(void **state)
{
	(void)state;
	assert_true(procinfo_running(FIX, 4242));
	assert_false(procinfo_running(FIX, 4243)); /* a zombie */
	assert_false(procinfo_running(FIX, 4244)); /* no stat */
	assert_false(procinfo_running(FIX, 4299)); /* gone */
}

/* The real uid is the first of four; a status without the line, or with garbage there,
 * gives no uid at all (never 0, which is root). */
static void test_uid(void **state)
{
	uid_t uid = 7;

	(void)state;
	assert_int_equal(procinfo_uid("tests/fixtures/leftover", 30, &uid), 0);
	assert_int_equal(uid, 4242);
	assert_int_equal(procinfo_uid("tests/fixtures/leftover", 12, &uid), 0);
	assert_int_equal(uid, 0);
	assert_int_equal(procinfo_uid(FIX, 4299, &uid), -ENOENT);
	assert_int_equal(procinfo_parse_uid("Name:\tx\nUid:\t1000\t0\t0\t0\n", &uid), 0);
	assert_int_equal(uid, 1000);
	uid = 7;
	assert_int_equal(procinfo_parse_uid("Name:\tx\nGid:\t0\t0\t0\t0\n", &uid), -EINVAL);
	assert_int_equal(procinfo_parse_uid("Name:\tx\nUid:\tabc\n", &uid), -EINVAL);
	assert_int_equal(procinfo_parse_uid("Name:\tx\nUid:\t12x\t0\n", &uid), -EINVAL);
	assert_int_equal(procinfo_parse_uid("Name:\tx\nUid:\t99999999999\n", &uid), -EINVAL);
	assert_int_equal(uid, 7);
}

/* How a zombie ended, from its stat: what tells a rank that exited 0 from one that
 * died, when the watchdog is not its parent. */
static void test_exit_status(void **state)
{
	int st = -1;
	unsigned long long t = 0;

	(void)state;
	assert_int_equal(procinfo_exit_status(FIX, 4245, &st), 0);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 1);
	assert_int_equal(procinfo_exit_status(FIX, 4246, &st), 0);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	st = -1;
	assert_int_equal(procinfo_exit_status(FIX, 4242, &st), -ESRCH); /* running */
	assert_int_equal(procinfo_exit_status(FIX, 4299, &st), -ESRCH); /* gone */
	assert_int_equal(procinfo_exit_status(FIX, 4243, &st), -EINVAL); /* a zombie of an older kernel */
	assert_int_equal(st, -1);
	assert_int_equal(procinfo_start_ticks(FIX, 4242, &t), 0);
	assert_int_equal(t, 1000);
	assert_int_equal(procinfo_start_ticks(FIX, 4245, &t), 0); /* ")" in its name */
	assert_int_equal(t, 1311159);
	assert_int_equal(procinfo_start_ticks(FIX, 4299, &t), -ENOENT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_environ),
		cmocka_unit_test(test_container_pid),
		cmocka_unit_test(test_running),
		cmocka_unit_test(test_uid),
		cmocka_unit_test(test_exit_status),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
