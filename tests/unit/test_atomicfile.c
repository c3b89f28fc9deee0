/* An output file written whole or not at all (sys/atomicfile), in a directory of its own. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sys/atomicfile.h"

static char dir[] = "/tmp/headroom-atomic.XXXXXX";

static int setup(void **state)
{
	(void)state;
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[64];
	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) ? -1 : 0;
}

static char *at(const char *name)
{
	static char path[128];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return path;
}

static void put(const char *name, const char *text, mode_t mode)
{
	FILE *f = fopen(at(name), "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	assert_int_equal(chmod(at(name), mode), 0);
}

static void expect(const char *name, const char *text)
{
	char buf[64] = "";
	FILE *f = fopen(at(name), "r");
	assert_non_null(f);
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	assert_string_equal(buf, text);
}

/* Entries in the directory: no temporary file is left behind. */
static int entries(void)
{
	DIR *d = opendir(dir);
	int n = 0;
	assert_non_null(d);
	for (struct dirent *e; (e = readdir(d));)
		n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
	closedir(d);
	return n;
}

static void test_replace(void **state)
{
	struct atomic_file a;
	struct stat st, tmp;
	(void)state;

	put("r.json", "old", 0600);
	assert_int_equal(atomic_open(&a, at("r.json")), 0);
	assert_non_null(a.tmp);
	/* nobody the file's mode keeps out can open what is being written */
	assert_int_equal(stat(a.tmp, &tmp), 0);
	assert_int_equal(tmp.st_mode & 07777, 0600);
	fputs("new", a.f);
	assert_int_equal(atomic_close(&a, 0), 0);
	expect("r.json", "new");
	assert_int_equal(stat(at("r.json"), &st), 0);
	assert_int_equal(st.st_mode & 07777, 0600);
	assert_int_equal(entries(), 1);
	/* a write that failed: the old file as it was, nothing else */
	assert_int_equal(atomic_open(&a, at("r.json")), 0);
	fputs("partial", a.f);
	assert_int_equal(atomic_close(&a, -ENOSPC), -ENOSPC);
	expect("r.json", "new");
	assert_int_equal(entries(), 1);
}

static void test_new_file_mode(void **state)
{
	struct atomic_file a;
	struct stat st;
	mode_t old = umask(027);
	(void)state;

	assert_int_equal(atomic_open(&a, at("n.json")), 0);
	fputs("x", a.f);
	assert_int_equal(atomic_close(&a, 0), 0);
	umask(old);
	assert_int_equal(stat(at("n.json"), &st), 0);
	assert_int_equal(st.st_mode & 07777, 0640);
	unlink(at("n.json"));
}

/* The file standard output goes to is written in place: what else was written there
 * stays the same file's. */
static void test_std_stream(void **state)
{
	struct atomic_file a;
	struct stat before, after;
	int saved = dup(1), fd;
	(void)state;

	put("out.log", "", 0644);
	fd = open(at("out.log"), O_WRONLY | O_APPEND);
	assert_true(fd >= 0 && saved >= 0);
	assert_int_equal(dup2(fd, 1), 1);
	close(fd);
	assert_int_equal(stat(at("out.log"), &before), 0);
	assert_int_equal(atomic_open(&a, at("out.log")), 0);
	assert_null(a.tmp);
	fputs("report", a.f);
	assert_int_equal(atomic_close(&a, 0), 0);
	assert_int_equal(dup2(saved, 1), 1);
	close(saved);
	assert_int_equal(stat(at("out.log"), &after), 0);
	assert_int_equal(before.st_ino, after.st_ino);
	expect("out.log", "report");
	unlink(at("out.log"));
}

/* A symlink to a file not yet made: the file is made, the link stays. */
static void test_dangling_link(void **state)
{
	struct atomic_file a;
	struct stat st;
	(void)state;

	char target[128];

	snprintf(target, sizeof(target), "%s", at("target.json"));
	assert_int_equal(symlink(target, at("link.json")), 0);
	assert_int_equal(atomic_open(&a, at("link.json")), 0);
	fputs("via", a.f);
	assert_int_equal(atomic_close(&a, 0), 0);
	assert_int_equal(lstat(at("link.json"), &st), 0);
	assert_true(S_ISLNK(st.st_mode));
	expect("target.json", "via");
	unlink(at("link.json"));
	unlink(at("target.json"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_replace),
		cmocka_unit_test(test_new_file_mode),
		cmocka_unit_test(test_std_stream),
		cmocka_unit_test(test_dangling_link),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
