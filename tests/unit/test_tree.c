/* Process-tree classification. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cmocka.h>

#include "govern/tree.h"

static void test_classify(void **state)
{
	(void)state;
	char *job[] = { "g++", "-O2", "-c", "a.cpp", "-o", "a.o" };
	char *rec[] = { "/usr/bin/make", "-C", "sub", "-j4" };
	char *nin[] = { "ninja", "-C", "build" };
	char *launched[] = { "/opt/bin/headroom", "exec", "--", "nvcc", "-c", "k.cu" };
	char *notlaunch[] = { "headroom-data-gen", "exec" };
	char *mk_obj[] = { "cc", "-c", "make.c", "-o", "make.o" };
	char *shim[] = { "/tmp/headroom-shims.Ab12Cd/c++", "-c", "t.cpp" };
	char *small[] = { "/opt/bin/headroom-exec", "--", "nvcc", "-c", "k.cu" };

	assert_int_equal(tree_classify(6, job, "headroom"), TREE_JOB);
	assert_int_equal(tree_classify(4, rec, "headroom"), TREE_WRAPPER);
	assert_int_equal(tree_classify(3, nin, "headroom"), TREE_WRAPPER);
	assert_int_equal(tree_classify(6, launched, "headroom"), TREE_LAUNCHED);
	assert_int_equal(tree_classify(2, notlaunch, "headroom"), TREE_JOB);
	assert_int_equal(tree_classify(5, mk_obj, "headroom"), TREE_JOB);
	assert_int_equal(tree_classify(3, shim, "headroom"), TREE_LAUNCHED);
	assert_int_equal(tree_classify(5, small, "headroom"), TREE_LAUNCHED);
	assert_true(tree_is_launcher("headroom-exec", "headroom"));
	assert_true(tree_is_launcher("hr", "hr"));
	assert_false(tree_is_launcher("headroom", "hr"));
	assert_true(tree_is_compiler("cc1plus"));
	assert_true(tree_is_compiler("cicc"));
	assert_false(tree_is_compiler("sh"));
}

/* A nested build is a command whose program is a build tool, not one that names one. */
static void test_classify_shell(void **state)
{
	static const struct {
		const char *cmd;
		enum tree_kind kind;
	} rows[] = {
		{ "cd sub && /usr/bin/make -j4", TREE_WRAPPER },
		{ "$(MAKE) -C sub", TREE_JOB },  /* unexpanded: seen when make appears below it */
		{ "make -C sub all", TREE_WRAPPER },
		{ "memhog --hold 300M && echo built with make > out", TREE_JOB },
		{ "echo ninja gmake samu", TREE_JOB },
		{ "g++ -c make.cpp -o ninja.o", TREE_JOB },
		/* the launcher's variable, which the shell has not expanded yet */
		{ "${HEADROOM_LAUNCHER} memhog --hold 8M", TREE_LAUNCHED },
		{ "$HEADROOM_LAUNCHER g++ -c a.cpp -o a.o", TREE_LAUNCHED },
		{ "echo start >> log; $HEADROOM_LAUNCHER cc -c a.c", TREE_LAUNCHED },
		{ "$CXX -c a.cpp -o a.o", TREE_JOB },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		char cmd[256], *argv[32] = { "/bin/sh", "-c", cmd, NULL };
		snprintf(cmd, sizeof(cmd), "%s", rows[i].cmd);
		int argc = tree_job_argv(3, argv, 32, 1);
		assert_int_equal(tree_classify(argc, argv, "headroom"), rows[i].kind);
	}
}

/* With no launcher set (--tree), $HEADROOM_LAUNCHER expands to nothing: the job is the
 * tree's, named by the tool after it. */
static void test_launcher_unset(void **state)
{
	static const char *const cmds[] = { "${HEADROOM_LAUNCHER} memhog -c k.cu -o k.o",
					    "echo start >> log; $HEADROOM_LAUNCHER memhog -c k.cu -o k.o" };

	(void)state;
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
		char cmd[256], *argv[32] = { "/bin/sh", "-c", cmd, NULL };
		snprintf(cmd, sizeof(cmd), "%s", cmds[i]);
		int argc = tree_job_argv(3, argv, 32, 0);
		assert_int_equal(tree_classify(argc, argv, "headroom"), TREE_JOB);
		if (!i)
			assert_string_equal(argv[0], "memhog");
	}
}

static int skip_pid(void *ctx, pid_t pid)
{
	return pid == *(pid_t *)ctx;
}

static void test_ungoverned(void **state)
{
	(void)state;
	/* 10 headroom run -> 11 ninja -> 12 sh -> 13 headroom exec -> 14 g++ -> 15 cc1plus (governed)
	 *                             -> 16 sh -> 17 nvcc -> 18 cicc (not)
	 * 30 cc1plus elsewhere on the machine (not ours) */
	struct proc_entry v[] = {
		{ 10, 1, 10, 'S', 0, "headroom", 1 }, { 11, 10, 11, 'S', 0, "ninja", 1 },
		{ 12, 11, 11, 'S', 0, "sh", 1 },      { 13, 12, 13, 'S', 0, "headroom", 1 },
		{ 14, 13, 13, 'S', 0, "g++", 1 },     { 15, 14, 13, 'R', 0, "cc1plus", 1 },
		{ 16, 11, 11, 'S', 0, "sh", 1 },      { 17, 16, 11, 'S', 0, "nvcc", 1 },
		{ 18, 17, 11, 'R', 0, "cicc", 1 },    { 30, 1, 30, 'R', 0, "cc1plus", 1 },
	};
	struct proc_table t = { v, 10, 10 };

	assert_int_equal(tree_ungoverned_compiler(&t, 10, "headroom", NULL, NULL), 17);
	/* 17 a version query, passed over: the escaped cicc below it is still found */
	pid_t query = 17;
	assert_int_equal(tree_ungoverned_compiler(&t, 10, "headroom", skip_pid, &query), 18);
	query = 18;
	assert_int_equal(tree_ungoverned_compiler(&t, 10, "headroom", skip_pid, &query), 17);
	/* 17 headroom-exec -> 18 nvcc: the launcher as a program of its own governs as well */
	snprintf(v[7].comm, sizeof(v[7].comm), "headroom-exec");
	snprintf(v[8].comm, sizeof(v[8].comm), "nvcc");
	assert_int_equal(tree_ungoverned_compiler(&t, 10, "headroom", NULL, NULL), 0);
	snprintf(v[7].comm, sizeof(v[7].comm), "nvcc");
	snprintf(v[8].comm, sizeof(v[8].comm), "cicc");
	t.n = 6; /* only the governed branch */
	assert_int_equal(tree_ungoverned_compiler(&t, 10, "headroom", NULL, NULL), 0);
	v[5].pid = 30; /* a compiler that is not below us */
	assert_int_equal(tree_ungoverned_compiler(&t, 10, "headroom", NULL, NULL), 0);
	/* cmake identifying its compiler (cmake -> cc -> cc1) is no escape; cmake --build ->
	 * ninja -> cc -> cc1 is */
	struct proc_entry c[] = {
		{ 10, 1, 10, 'S', 0, "headroom", 1 }, { 11, 10, 11, 'S', 0, "cmake", 1 },
		{ 12, 11, 11, 'S', 0, "cc", 1 },      { 13, 12, 11, 'R', 0, "cc1", 1 },
	};
	struct proc_table ct = { c, 4, 4 };
	assert_int_equal(tree_ungoverned_compiler(&ct, 10, "headroom", NULL, NULL), 0);
	snprintf(c[2].comm, sizeof(c[2].comm), "ninja");
	assert_int_equal(tree_ungoverned_compiler(&ct, 10, "headroom", NULL, NULL), 13);
}

static void test_job_argv(void **state)
{
	char cmd[] = "FOO=1 $CCACHE g++ -O2  -c\ta.cpp -o a.o";
	char *argv[8] = { "/bin/sh", "-c", cmd, NULL };
	char *plain[] = { "g++", "-O2", "-c", NULL };
	char small[] = "a b c d e";
	char *few[8] = { "sh", "-c", small, NULL };

	(void)state;
	/* sh -c: split on blanks; the assignment and the unexpanded variable before the tool go */
	assert_int_equal(tree_job_argv(3, argv, 8, 0), 6);
	assert_string_equal(argv[0], "g++");
	assert_string_equal(argv[1], "-O2");
	assert_string_equal(argv[3], "a.cpp");
	assert_string_equal(argv[5], "a.o");
	assert_null(argv[6]);
	/* anything else stays as it is */
	assert_int_equal(tree_job_argv(3, plain, 4, 0), 3);
	assert_string_equal(plain[0], "g++");
	/* at most max - 1 words */
	assert_int_equal(tree_job_argv(3, few, 4, 0), 3);
	assert_string_equal(few[2], "c");
	assert_null(few[3]);
}

static void test_cmake_steps(void **state)
{
	/* CMake's ninja rules: a link starts with `: &&`, custom steps with `cd DIR &&` */
	char link[] = ": && /usr/bin/c++ -O2 CMakeFiles/app.dir/a.cpp.o -o app && :";
	char step[] = "cd /b/sub && /usr/bin/cmake -E touch stamp";
	char *a[8] = { "/bin/sh", "-c", link, NULL };
	char *b[8] = { "/bin/sh", "-c", step, NULL };

	(void)state;
	assert_true(tree_job_argv(3, a, 8, 0) > 0);
	assert_string_equal(a[0], "/usr/bin/c++");
	assert_true(tree_job_argv(3, b, 8, 0) > 0);
	assert_string_equal(b[0], "/usr/bin/cmake");
	assert_string_equal(b[1], "-E");
}

static void test_has_compiler(void **state)
{
	/* 20 ccache -> 21 gcc -> 22 cc1 (a miss); 30 ccache alone (a hit) */
	struct proc_entry v[] = {
		{ 20, 1, 20, 'S', 0, "ccache", 1 }, { 21, 20, 20, 'S', 0, "gcc", 1 },
		{ 22, 21, 20, 'R', 0, "cc1", 1 },   { 30, 1, 30, 'R', 0, "ccache", 1 },
	};
	struct proc_table t = { v, 4, 4 };

	(void)state;
	assert_true(tree_has_compiler(&t, 20));
	assert_false(tree_has_compiler(&t, 30));
	t.n = 2; /* the driver alone is no compiler */
	assert_false(tree_has_compiler(&t, 20));
}

/* What the build left below the governor, and no job owns, is counted; the build's own
 * processes, the governor and its guardian are not. */
static void test_unowned(void **state)
{
	(void)state;
	/* 10 headroom -> 11 make -> 12 sh -> 13 memhog (a job's)
	 *             -> 20 headroom-guard
	 *             -> 21 memhog (its job ended: adopted) -> 22 its child
	 * 30 elsewhere on the machine */
	struct proc_entry v[] = {
		{ 10, 1, 10, 'S', 5 << 20, "headroom", 1 },   { 11, 10, 11, 'S', 2 << 20, "make", 1 },
		{ 12, 11, 11, 'S', 1 << 20, "sh", 1 },        { 13, 12, 11, 'S', 300 << 20, "memhog", 1 },
		{ 20, 10, 20, 'S', 5 << 20, "headroom-guard", 1 }, { 21, 10, 21, 'S', 600 << 20, "memhog", 1 },
		{ 22, 21, 21, 'S', 7 << 20, "memhog", 1 },    { 30, 1, 30, 'S', 900 << 20, "memhog", 1 },
	};
	struct proc_table t = { v, 8, 8 };

	assert_int_equal(tree_unowned_bytes(&t, 10, 11, 20), 607 << 20);
	/* without a guardian it would count as well: it is named by pid only */
	assert_int_equal(tree_unowned_bytes(&t, 10, 11, 0), 612 << 20);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_classify),
		cmocka_unit_test(test_classify_shell),
		cmocka_unit_test(test_launcher_unset),
		cmocka_unit_test(test_unowned),
		cmocka_unit_test(test_ungoverned),
		cmocka_unit_test(test_job_argv),
		cmocka_unit_test(test_cmake_steps),
		cmocka_unit_test(test_has_compiler),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
