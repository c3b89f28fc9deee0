/* Linux fact readers against fixture trees (tests/fixtures/v1, v2). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sys/cgroup.h"
#include "sys/cpus.h"
#include "sys/fsutil.h"
#include "sys/meminfo.h"
#include "sys/proc.h"
#include "sys/psi.h"

#define FIX "tests/fixtures"

static void test_meminfo(void **state)
{
	struct meminfo mi;
	uint64_t oom;

	(void)state;
	assert_int_equal(meminfo_read(FIX "/v2", &mi), 0);
	assert_int_equal(mi.total_bytes, 32768000ULL * 1024);
	assert_int_equal(mi.available_bytes, 20480000ULL * 1024);
	assert_int_equal(meminfo_oom_kills(FIX "/v2", &oom), 0);
	assert_int_equal(oom, 3);
	assert_int_equal(meminfo_read(FIX "/nonexistent", &mi), -ENOENT);
}

static void test_psi(void **state)
{
	struct psi p;

	(void)state;
	assert_int_equal(psi_read(FIX "/v2/proc/pressure/memory", &p), 0);
	assert_true(p.some_avg10_pct > 1.49 && p.some_avg10_pct < 1.51);
	assert_true(p.full_avg10_pct > 0.24 && p.full_avg10_pct < 0.26);
	assert_int_equal(p.some_total_us, 123456);
	assert_int_equal(psi_parse("garbage\n", &p), -EINVAL);
}

static void test_proc_parse(void **state)
{
	struct proc_entry e;

	(void)state;
	/* a comm with spaces and parentheses must not shift the fields after it */
	assert_int_equal(proc_parse_stat("7 (a (b) c) S 3 7 7 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 9 100 10", 4096, &e), 0);
	assert_int_equal(e.pid, 7);
	assert_int_equal(e.ppid, 3);
	assert_int_equal(e.pgid, 7);
	assert_int_equal(e.state, 'S');
	assert_int_equal(e.rss_bytes, 40960);
	assert_string_equal(e.comm, "a (b) c");
	assert_int_equal(proc_parse_stat("7 no-parens S", 4096, &e), -EINVAL);
}

static void test_proc_tree(void **state)
{
	struct proc_table t = { 0 };
	long page = sysconf(_SC_PAGESIZE);

	(void)state;
	assert_int_equal(proc_table_read(FIX "/v2", &t), 0);
	assert_int_equal(t.n, 4);
	assert_non_null(proc_table_find(&t, 102));
	assert_null(proc_table_find(&t, 103));
	assert_true(proc_table_is_descendant(&t, 102, 100));
	assert_false(proc_table_is_descendant(&t, 200, 100));
	/* nvcc (512 pages) + cicc (1024000 pages), not sshd */
	assert_int_equal(proc_table_tree_rss(&t, 101), (512ULL + 1024000ULL) * (uint64_t)page);
	assert_int_equal(proc_table_tree_rss(&t, 100), (256ULL + 512ULL + 1024000ULL) * (uint64_t)page);
	/* a /proc with no processes at all is an empty table, not an error */
	assert_int_equal(proc_table_read(FIX "/v1", &t), 0);
	assert_int_equal(t.n, 0);
	proc_table_free(&t);
}

/* tree: 10 headroom -> 11 ninja (two threads) -> 12 sh -> 15 cicc (16 listed, gone);
 * ninja's second thread 13 started 14 nvcc; 20 sshd is not below 10 */
static void test_proc_below(void **state)
{
	struct proc_table t = { 0 };
	long page = sysconf(_SC_PAGESIZE);

	(void)state;
	assert_int_equal(proc_table_read_below(FIX "/tree", 10, &t), 0);
	assert_int_equal(t.n, 5);
	for (size_t i = 1; i < t.n; i++)
		assert_true(t.v[i - 1].pid < t.v[i].pid);
	assert_non_null(proc_table_find(&t, 14)); /* through the second thread's list */
	assert_non_null(proc_table_find(&t, 15));
	assert_null(proc_table_find(&t, 16));
	assert_null(proc_table_find(&t, 20));
	assert_int_equal(proc_table_find(&t, 11)->threads, 2);
	assert_true(proc_table_is_descendant(&t, 15, 10));
	assert_int_equal(proc_table_tree_rss(&t, 12), (10ULL + 4000ULL) * (uint64_t)page);
	/* the whole table has sshd too */
	assert_int_equal(proc_table_read(FIX "/tree", &t), 0);
	assert_int_equal(t.n, 6);
	/* below 12 only */
	assert_int_equal(proc_table_read_below(FIX "/tree", 12, &t), 0);
	assert_int_equal(t.n, 2);
	assert_int_equal(proc_table_read_below(FIX "/tree", 16, &t), -ESRCH);
	/* a kernel without children lists */
	assert_int_equal(proc_table_read_below(FIX "/v2", 100, &t), -ENOENT);
	assert_int_equal(t.n, 0);
	proc_table_free(&t);
}

static void test_cgroup_v2(void **state)
{
	struct cgroup cg;
	uint64_t v;
	char *p;

	(void)state;
	assert_int_equal(cgroup_find(FIX "/v2", 0, &cg), 0);
	assert_int_equal(cg.version, CGROUP_V2);
	assert_non_null(strstr(cg.dir, "user.slice/build"));
	/* the tightest limit on the way up: 4 GiB here, 8 GiB above, none at the root */
	assert_int_equal(cgroup_mem_limit(&cg, &v), 0);
	assert_int_equal(v, 4294967296ULL);
	assert_int_equal(cgroup_mem_working_set(&cg, &v), 0);
	assert_int_equal(v, 3221225472ULL - 1073741824ULL);
	assert_int_equal(cgroup_mem_peak(&cg, &v), 0);
	assert_int_equal(v, 3500000000ULL);
	assert_int_equal(cgroup_oom_kills(&cg, &v), 0);
	assert_int_equal(v, 2);
	assert_int_equal(cgroup_freeze(&cg, 1), -ENOENT); /* fixture has no cgroup.freeze file */
	/* the tightest CPU quota on the way up: half a CPU here, 4 above, none at the root */
	assert_int_equal(cgroup_cpu_limit(&cg, &v), 0);
	assert_int_equal(v, 500);
	p = cgroup_pressure_path(&cg);
	assert_non_null(strstr(p, "build/memory.pressure"));
	free(p);
	cgroup_free(&cg);
}

/* The CPUs a build may use: the affinity mask, less where a v2 quota allows fewer (the
 * fixture's half CPU counts as one); v1 and no cgroup: the mask alone. */
static void test_cpus(void **state)
{
	cpu_set_t set;
	int mask;

	(void)state;
	assert_int_equal(sched_getaffinity(0, sizeof(set), &set), 0);
	mask = CPU_COUNT(&set);
	assert_int_equal(cpus_usable(FIX "/v2"), 1);
	assert_int_equal(cpus_usable(FIX "/v1"), mask);
	assert_int_equal(cpus_usable(FIX "/none-here"), mask);
}

static void test_cgroup_v1(void **state)
{
	struct cgroup cg;
	uint64_t v;

	(void)state;
	assert_int_equal(cgroup_find(FIX "/v1", 0, &cg), 0);
	assert_int_equal(cg.version, CGROUP_V1);
	assert_non_null(strstr(cg.dir, "memory/docker/abc"));
	assert_int_equal(cgroup_mem_limit(&cg, &v), 0);
	assert_int_equal(v, 2147483648ULL);
	assert_int_equal(cgroup_mem_working_set(&cg, &v), 0);
	assert_int_equal(v, 1073741824ULL);
	assert_int_equal(cgroup_oom_kills(&cg, &v), 0);
	assert_int_equal(v, 1);
	assert_null(cgroup_pressure_path(&cg));
	assert_true(cgroup_children_counted(&cg));
	assert_int_equal(cgroup_freeze(&cg, 1), -ENOTSUP);
	assert_int_equal(cgroup_cpu_limit(&cg, &v), -ENOTSUP);
	cgroup_free(&cg);
}

static void put(const char *dir, const char *file, const char *text)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, file);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

/* A group used before keeps its old peak: the build's is read from a mark at its start. */
static void test_cgroup_peak_since(void **state)
{
	char dir[] = "/tmp/headroom-cgpeak.XXXXXX", path[512];
	struct cgroup cg = { .version = CGROUP_V1, .dir = dir };
	struct cgroup_peak_mark m;
	uint64_t v;

	(void)state;
	assert_non_null(mkdtemp(dir));
	/* v1: a stale 150 MiB peak, 4 MiB charged now; the write resets it (the file
	 * here reads back the 0 written, at most the charge: as the kernel's would) */
	put(dir, "memory.max_usage_in_bytes", "157286400\n");
	put(dir, "memory.usage_in_bytes", "4194304\n");
	assert_int_equal(cgroup_mem_peak_mark(&cg, &m), 0);
	assert_true(m.reset);
	put(dir, "memory.max_usage_in_bytes", "11534336\n"); /* the build's 11 MiB */
	assert_int_equal(cgroup_mem_peak_since(&cg, &m, &v), 0);
	assert_int_equal(v, 11534336);
	/* not reset (v2 here): the old peak, never passed, is no peak of this build */
	cg.version = CGROUP_V2;
	put(dir, "memory.peak", "157286400\n");
	assert_int_equal(cgroup_mem_peak_mark(&cg, &m), 0);
	assert_false(m.reset);
	assert_int_equal(cgroup_mem_peak_since(&cg, &m, &v), -ENODATA);
	/* passed since: that is the build's */
	put(dir, "memory.peak", "209715200\n");
	assert_int_equal(cgroup_mem_peak_since(&cg, &m, &v), 0);
	assert_int_equal(v, 209715200);
	static const char *const files[] = { "memory.max_usage_in_bytes", "memory.usage_in_bytes", "memory.peak" };
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, files[i]);
		assert_int_equal(unlink(path), 0);
	}
	assert_int_equal(rmdir(dir), 0);
}

static void test_cgroup_none(void **state)
{
	struct cgroup cg;

	(void)state;
	/* no /proc/self/cgroup: no cgroup, and that is not an error for the callers */
	assert_int_not_equal(cgroup_find(FIX "/nonexistent", 0, &cg), 0);
	assert_int_equal(cg.version, CGROUP_NONE);
}

static void test_proc_cmdline(void **state)
{
	char root[] = "/tmp/headroom-test-cmdline.XXXXXX", path[256], buf[64], *argv[4];
	static const char cmdline[] = "cc\0-c\0a.c\0-o\0a.o\0";
	FILE *f;

	(void)state;
	assert_non_null(mkdtemp(root));
	snprintf(path, sizeof(path), "%s/proc", root);
	assert_int_equal(mkdir(path, 0700), 0);
	snprintf(path, sizeof(path), "%s/proc/42", root);
	assert_int_equal(mkdir(path, 0700), 0);
	snprintf(path, sizeof(path), "%s/proc/42/cmdline", root);
	f = fopen(path, "w");
	assert_non_null(f);
	assert_int_equal(fwrite(cmdline, 1, sizeof(cmdline) - 1, f), sizeof(cmdline) - 1);
	fclose(f);
	/* at most max - 1 words, NULL after them */
	assert_int_equal(proc_cmdline(root, 42, buf, sizeof(buf), argv, 4), 3);
	assert_string_equal(argv[0], "cc");
	assert_string_equal(argv[1], "-c");
	assert_string_equal(argv[2], "a.c");
	assert_null(argv[3]);
	/* a process that is gone has none */
	assert_int_equal(proc_cmdline(root, 43, buf, sizeof(buf), argv, 4), 0);
	assert_null(argv[0]);
	unlink(path);
	snprintf(path, sizeof(path), "%s/proc/42", root);
	rmdir(path);
	snprintf(path, sizeof(path), "%s/proc", root);
	rmdir(path);
	rmdir(root);
}

/* A file the user names: each kind said as what it is; a FIFO opened at once. */
static void test_fs_open_input(void **state)
{
	char dir[] = "/tmp/headroom-test-XXXXXX", path[64], c;
	const char *kind;
	struct stat st;
	FILE *f;

	(void)state;
	assert_null(fs_kind(S_IFREG | 0644));
	assert_string_equal(fs_kind(S_IFCHR), "a character device");
	assert_string_equal(fs_kind(S_IFBLK), "a block device");
	assert_string_equal(fs_kind(S_IFIFO), "a FIFO");
	assert_string_equal(fs_kind(S_IFSOCK), "a socket");
	assert_string_equal(fs_kind(S_IFDIR), "a directory");
	assert_int_equal(fs_open_input("/dev/null", &f, &st, &kind), -EINVAL);
	assert_null(f);
	assert_string_equal(kind, "a character device");
	assert_non_null(mkdtemp(dir));
	assert_int_equal(fs_open_input(dir, &f, &st, &kind), -EINVAL);
	assert_string_equal(kind, "a directory");
	snprintf(path, sizeof(path), "%s/none", dir);
	assert_int_equal(fs_open_input(path, &f, &st, &kind), -ENOENT);
	snprintf(path, sizeof(path), "%s/fifo", dir);
	assert_int_equal(mkfifo(path, 0600), 0);
	/* no writer: opened, not waited on, and read as empty */
	assert_int_equal(fs_open_input(path, &f, &st, &kind), 0);
	assert_string_equal(kind, "a FIFO");
	assert_int_equal(fread(&c, 1, 1, f), 0);
	fclose(f);
	unlink(path);
	snprintf(path, sizeof(path), "%s/file", dir);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs("{}", f);
	fclose(f);
	assert_int_equal(fs_open_input(path, &f, &st, &kind), 0);
	assert_null(kind);
	assert_int_equal(st.st_size, 2);
	fclose(f);
	unlink(path);
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_meminfo),    cmocka_unit_test(test_psi),
		cmocka_unit_test(test_proc_parse), cmocka_unit_test(test_proc_tree), cmocka_unit_test(test_proc_below),
		cmocka_unit_test(test_proc_cmdline),
		cmocka_unit_test(test_cgroup_v2),  cmocka_unit_test(test_cgroup_v1),
		cmocka_unit_test(test_cgroup_peak_since),
		cmocka_unit_test(test_cgroup_none),  cmocka_unit_test(test_cpus),
		cmocka_unit_test(test_fs_open_input),
	};
	return cmocka_run_group_tests_name("sys", tests, NULL, NULL);
}
