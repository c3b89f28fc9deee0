/* Which compiler processes outlived their build (govern/leftover.c), on a table built
 * here and on the fixture tree tests/fixtures/leftover read through sys/proc. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "govern/leftover.h"
#include "sys/proc.h"

struct p {
	pid_t pid, ppid;
	const char *comm;
	const char *argv[6];
};

/* The table of ps[] and each process's roles. */
static void build(const struct p *ps, size_t n, struct proc_table *t, unsigned *roles)
{
	memset(t, 0, sizeof(*t));
	t->v = calloc(n, sizeof(*t->v));
	assert_non_null(t->v);
	t->n = t->cap = n;
	for (size_t i = 0; i < n; i++) {
		t->v[i].pid = ps[i].pid;
		t->v[i].ppid = ps[i].ppid;
		t->v[i].state = 'S';
		snprintf(t->v[i].comm, sizeof(t->v[i].comm), "%s", ps[i].comm);
	}
	for (size_t i = 0; i < n; i++)
		roles[i] = leftover_role(&t->v[i], ps[i].argv[0] ? (char *const *)ps[i].argv : NULL);
}

static enum leftover_kind kind_of(const struct proc_table *t, const unsigned *roles, pid_t pid, pid_t *by)
{
	const struct proc_entry *e = proc_table_find(t, pid);

	assert_non_null(e);
	return leftover_classify(t, roles, (size_t)(e - t->v), by);
}

static void test_roles(void **state)
{
	const struct proc_entry e_sh = { .pid = 5, .comm = "sh" }, e_py = { .pid = 6, .comm = "python3" },
				e_init = { .pid = 1, .comm = "bash" }, e_gcc = { .pid = 7, .comm = "x86_64-linux-gn" };
	char *sh_c[] = { "/bin/sh", "-c", "nvcc -c a.cu", NULL }, *sh_ec[] = { "sh", "-ec", "cc1", NULL };
	char *sh_script[] = { "sh", "./build.sh", NULL }, *login[] = { "-bash", NULL };
	char *setup[] = { "python3", "-u", "setup.py", "build_ext", NULL }, *mpip[] = { "python3", "-m", "pip", "install", ".", NULL };
	char *script[] = { "python3", "train.py", "setup.py", NULL }, *mbuild[] = { "python3", "-m", "build", NULL };

	(void)state;
	assert_int_equal(leftover_role(&e_sh, sh_c), LEFTOVER_STEP);
	assert_int_equal(leftover_role(&e_sh, sh_ec), LEFTOVER_STEP);
	/* a script or a login shell is a program of its own, not a compile step */
	assert_int_equal(leftover_role(&e_sh, sh_script), 0);
	assert_int_equal(leftover_role(&e_sh, login), 0);
	assert_int_equal(leftover_role(&e_sh, NULL), 0);
	assert_int_equal(leftover_role(&e_py, setup), LEFTOVER_BUILD_TOOL);
	assert_int_equal(leftover_role(&e_py, mpip), LEFTOVER_BUILD_TOOL);
	assert_int_equal(leftover_role(&e_py, mbuild), LEFTOVER_BUILD_TOOL);
	assert_int_equal(leftover_role(&e_py, script), 0); /* setup.py as the script's argument */
	assert_int_equal(leftover_role(&e_py, NULL), 0);
	/* pid 1 adopts orphans whatever it is called */
	assert_int_equal(leftover_role(&e_init, login), LEFTOVER_REAPER);
	assert_int_equal(leftover_role(&e_gcc, NULL), LEFTOVER_STEP); /* x86_64-linux-gnu-gcc, cut at 15 */
	assert_true(leftover_is_compiler("cicc"));
	assert_true(leftover_is_compiler("ld"));
	assert_false(leftover_is_compiler("ninja"));
	assert_false(leftover_is_compiler("cicc (x) y"));
}

/* The cases of issue 12: a running build's compilers and another program's are not
 * leftovers; a compile whose build tool died and that init or a subreaper adopted is. */
static void test_classify(void **state)
{
	static const struct p ps[] = {
		{ 1, 0, "init", { "/sbin/init" } },
		/* a running ninja build: ninja -> sh -c -> nvcc -> cicc */
		{ 10, 1, "ninja", { "ninja" } },
		{ 11, 10, "sh", { "/bin/sh", "-c", "nvcc -c a.cu" } },
		{ 12, 11, "nvcc", { "nvcc" } },
		{ 13, 12, "cicc", { "cicc" } },
		/* the same after ninja died: sh adopted by init */
		{ 20, 1, "sh", { "/bin/sh", "-c", "nvcc -c b.cu" } },
		{ 21, 20, "nvcc", { "nvcc" } },
		{ 22, 21, "ptxas", { "ptxas" } },
		/* a compile run by hand from a shell, and by a build script */
		{ 30, 1, "bash", { "-bash" } },
		{ 31, 30, "gcc", { "gcc" } },
		{ 32, 31, "cc1", { "cc1" } },
		{ 33, 30, "bash", { "bash", "./build.sh" } },
		{ 34, 33, "cc1plus", { "cc1plus" } },
		/* pip -> python setup.py -> cicc, and headroom run -> ninja -> headroom exec -> cicc */
		{ 40, 1, "python3", { "python3", "-m", "pip", "install", "." } },
		{ 41, 40, "python3", { "python3", "setup.py", "build_ext" } },
		{ 42, 41, "cicc", { "cicc" } },
		{ 50, 1, "headroom", { "headroom", "run", "--", "ninja" } },
		{ 51, 50, "ninja", { "ninja" } },
		{ 52, 51, "headroom", { "headroom", "exec", "--", "cicc" } },
		{ 53, 52, "cicc", { "cicc" } },
		/* adopted by a subreaper (systemd --user); a parent gone from the table */
		{ 60, 1, "systemd", { "/lib/systemd/systemd", "--user" } },
		{ 61, 60, "ld", { "ld" } },
		{ 70, 99, "ptxas", { "ptxas" } },
		/* a container's init that runs the compile itself (sh -c as pid 1 there, pid 80
		 * here, whose parent is not in the table) */
		{ 80, 79, "sh", { "sh", "-c", "nvcc -c c.cu; sleep 1" } },
		{ 81, 80, "nvcc", { "nvcc" } },
	};
	size_t n = sizeof(ps) / sizeof(*ps);
	unsigned roles[sizeof(ps) / sizeof(*ps)];
	struct proc_table t;
	pid_t by;

	(void)state;
	build(ps, n, &t, roles);
	assert_int_equal(kind_of(&t, roles, 12, &by), LEFTOVER_BUILD);
	assert_int_equal(by, 10);
	assert_int_equal(kind_of(&t, roles, 13, &by), LEFTOVER_BUILD);
	assert_int_equal(by, 10);
	assert_int_equal(kind_of(&t, roles, 21, &by), LEFTOVER_ORPHAN);
	assert_int_equal(by, 1);
	assert_int_equal(kind_of(&t, roles, 22, &by), LEFTOVER_ORPHAN);
	assert_int_equal(kind_of(&t, roles, 32, &by), LEFTOVER_HELD);
	assert_int_equal(by, 30);
	assert_int_equal(kind_of(&t, roles, 34, &by), LEFTOVER_HELD);
	assert_int_equal(by, 33);
	/* the highest build tool names the build */
	assert_int_equal(kind_of(&t, roles, 42, &by), LEFTOVER_BUILD);
	assert_int_equal(by, 40);
	assert_int_equal(kind_of(&t, roles, 53, &by), LEFTOVER_BUILD);
	assert_int_equal(by, 50);
	assert_int_equal(kind_of(&t, roles, 61, &by), LEFTOVER_ORPHAN);
	assert_int_equal(by, 60);
	assert_int_equal(kind_of(&t, roles, 70, &by), LEFTOVER_HELD);
	assert_int_equal(by, 99);
	assert_int_equal(kind_of(&t, roles, 81, &by), LEFTOVER_HELD);
	free(t.v);
}

/* A table read while processes come and go may hold a cycle: the walk ends. */
static void test_cycle(void **state)
{
	static const struct p ps[] = {
		{ 5, 6, "nvcc", { "nvcc" } },
		{ 6, 5, "cicc", { "cicc" } },
	};
	unsigned roles[2];
	struct proc_table t;
	pid_t by;

	(void)state;
	build(ps, 2, &t, roles);
	assert_int_equal(kind_of(&t, roles, 6, &by), LEFTOVER_HELD);
	free(t.v);
}

/* The fixture tree through the readers: what `doctor --root tests/fixtures/leftover`
 * sees. */
static void test_fixture(void **state)
{
	static const struct {
		pid_t pid;
		enum leftover_kind kind;
		pid_t by;
	} want[] = {
		{ 12, LEFTOVER_BUILD, 10 },  { 13, LEFTOVER_BUILD, 10 },  { 21, LEFTOVER_ORPHAN, 1 },
		{ 22, LEFTOVER_ORPHAN, 1 },  { 30, LEFTOVER_ORPHAN, 1 },  { 42, LEFTOVER_HELD, 40 },
		{ 51, LEFTOVER_BUILD, 50 },  { 61, LEFTOVER_ORPHAN, 60 }, { 81, LEFTOVER_ORPHAN, 80 },
		{ 90, LEFTOVER_HELD, 99 },   { 98, LEFTOVER_BUILD, 95 },
	};
	struct proc_table t = { 0 };
	char buf[4096], *argv[64];
	unsigned *roles;
	pid_t by;

	(void)state;
	assert_int_equal(proc_table_read("tests/fixtures/leftover", &t), 0);
	roles = calloc(t.n, sizeof(*roles));
	assert_non_null(roles);
	for (size_t i = 0; i < t.n; i++)
		roles[i] = leftover_role(&t.v[i], proc_cmdline("tests/fixtures/leftover", t.v[i].pid, buf, sizeof(buf), argv,
							      64) ? argv : NULL);
	for (size_t i = 0; i < sizeof(want) / sizeof(*want); i++) {
		assert_int_equal(kind_of(&t, roles, want[i].pid, &by), want[i].kind);
		assert_int_equal(by, want[i].by);
	}
	free(roles);
	proc_table_free(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_roles),
		cmocka_unit_test(test_classify),
		cmocka_unit_test(test_cycle),
		cmocka_unit_test(test_fixture),
	};
	return cmocka_run_group_tests_name("leftover", tests, NULL, NULL);
}
