#include "sys/proc.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sys/fsutil.h"
#include "util/grow.h"
#include "util/xalloc.h"

int proc_parse_stat(const char *line, long page_size, struct proc_entry *e)
{
	/* comm may hold spaces and parentheses: it ends at the last ')'. */
	const char *open = strchr(line, '(');
	const char *close = strrchr(line, ')');
	long rss_pages = 0;
	int pid, ppid, pgid, threads;
	char state;

	if (!open || !close || close < open)
		return -EINVAL;
	if (sscanf(line, "%d", &pid) != 1)
		return -EINVAL;
	/* fields after comm: state ppid pgrp session tty_nr tpgid flags minflt cminflt
	 * majflt cmajflt utime stime cutime cstime priority nice num_threads itrealvalue
	 * starttime vsize rss */
	if (sscanf(close + 1, " %c %d %d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d"
			      " %*d %*d %d %*d %*u %*u %ld",
		   &state, &ppid, &pgid, &threads, &rss_pages) != 5)
		return -EINVAL;
	memset(e, 0, sizeof(*e));
	e->pid = pid;
	e->ppid = ppid;
	e->pgid = pgid;
	e->state = state;
	e->threads = threads;
	e->rss_bytes = rss_pages > 0 ? (uint64_t)rss_pages * (uint64_t)page_size : 0;
	size_t clen = (size_t)(close - open - 1);
	if (clen >= sizeof(e->comm))
		clen = sizeof(e->comm) - 1;
	memcpy(e->comm, open + 1, clen);
	e->comm[clen] = '\0';
	return 0;
}

static int cmp_pid(const void *a, const void *b)
{
	const struct proc_entry *x = a, *y = b;
	return (x->pid > y->pid) - (x->pid < y->pid);
}

int proc_table_read(const char *root, struct proc_table *t)
{
	char path[PATH_MAX], buf[1024];
	long page = sysconf(_SC_PAGESIZE);
	struct dirent *d;
	DIR *dir;

	snprintf(path, sizeof(path), "%s/proc", root);
	dir = opendir(path);
	if (!dir)
		return -errno;
	t->n = 0;
	while ((d = readdir(dir))) {
		struct proc_entry e;

		if (!isdigit((unsigned char)d->d_name[0]))
			continue;
		snprintf(path, sizeof(path), "%s/proc/%s/stat", root, d->d_name);
		if (fs_read(path, buf, sizeof(buf)) <= 0)
			continue;
		if (proc_parse_stat(buf, page, &e))
			continue;
		ARRAY_GROW(t->v, t->n + 1, t->cap);
		t->v[t->n++] = e;
	}
	closedir(dir);
	if (t->n > 1)
		qsort(t->v, t->n, sizeof(*t->v), cmp_pid);
	return 0;
}

/* One read: /proc hands a stat record over whole. -errno, or the length. */
static long read_record(const char *path, char *buf, size_t size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	do
		n = read(fd, buf, size - 1);
	while (n < 0 && errno == EINTR);
	int e = errno;
	close(fd);
	if (n < 0)
		return -e;
	buf[n] = '\0';
	return (long)n;
}

static int read_one(const char *root, long page, pid_t pid, struct proc_entry *e)
{
	char path[PATH_MAX], buf[1024];

	snprintf(path, sizeof(path), "%s/proc/%d/stat", root, (int)pid);
	if (read_record(path, buf, sizeof(buf)) <= 0 || proc_parse_stat(buf, page, e) || e->pid != pid)
		return -ESRCH;
	return 0;
}

int proc_read_one(const char *root, pid_t pid, struct proc_entry *e)
{
	return read_one(root, sysconf(_SC_PAGESIZE), pid, e);
}

int proc_children(const char *root, pid_t pid, pid_t *out, size_t max)
{
	char path[PATH_MAX], buf[4096], *p, *end;
	size_t n = 0;
	long len;

	snprintf(path, sizeof(path), "%s/proc/%d/task/%d/children", root, (int)pid, (int)pid);
	len = fs_read(path, buf, sizeof(buf));
	if (len < 0)
		return (int)len;
	for (p = buf; n < max; p = end) {
		long child = strtol(p, &end, 10);
		if (end == p)
			break;
		if (child > 0 && child <= INT_MAX)
			out[n++] = (pid_t)child;
	}
	return (int)n;
}

static int add_pid(const char *root, long page, pid_t pid, struct proc_table *t)
{
	struct proc_entry e;

	if (read_one(root, page, pid, &e))
		return -ESRCH;
	ARRAY_GROW(t->v, t->n + 1, t->cap);
	t->v[t->n++] = e;
	return 0;
}

/* Add the children one thread lists. */
static void add_children(const char *root, long page, pid_t pid, pid_t tid, struct proc_table *t)
{
	char path[PATH_MAX], *buf = NULL, *p, *end;
	size_t size = 4096;
	long n;

	snprintf(path, sizeof(path), "%s/proc/%d/task/%d/children", root, (int)pid, (int)tid);
	/* a build tool's children may not fit one page: "123 " each */
	for (;;) {
		buf = xrealloc(buf, size);
		n = fs_read(path, buf, size);
		if (n < 0 || (size_t)n + 1 < size || size >= (1u << 24))
			break;
		size *= 2;
	}
	for (p = buf; n > 0 && t->n < PROC_BELOW_MAX; p = end) {
		long child = strtol(p, &end, 10);
		if (end == p)
			break;
		if (child > 0 && child <= INT_MAX)
			add_pid(root, page, (pid_t)child, t);
	}
	free(buf);
}

int proc_table_read_below(const char *root, pid_t top, struct proc_table *t)
{
	char path[PATH_MAX];
	long page = sysconf(_SC_PAGESIZE);

	t->n = 0;
	if (add_pid(root, page, top, t))
		return -ESRCH;
	snprintf(path, sizeof(path), "%s/proc/%d/task/%d/children", root, (int)top, (int)top);
	if (access(path, F_OK)) {
		t->n = 0;
		return -ENOENT;
	}
	/* breadth first: the table is the queue */
	for (size_t i = 0; i < t->n && t->n < PROC_BELOW_MAX; i++) {
		pid_t pid = t->v[i].pid;
		DIR *dir;
		struct dirent *d;

		if (t->v[i].threads <= 1) {
			add_children(root, page, pid, pid, t);
			continue;
		}
		snprintf(path, sizeof(path), "%s/proc/%d/task", root, (int)pid);
		dir = opendir(path);
		if (!dir)
			continue;
		while ((d = readdir(dir)))
			if (isdigit((unsigned char)d->d_name[0]))
				add_children(root, page, pid, (pid_t)atoi(d->d_name), t);
		closedir(dir);
	}
	if (t->n > 1)
		qsort(t->v, t->n, sizeof(*t->v), cmp_pid);
	/* a process reparented while the lists were read may be listed twice */
	size_t k = 0;
	for (size_t i = 0; i < t->n; i++)
		if (!k || t->v[k - 1].pid != t->v[i].pid)
			t->v[k++] = t->v[i];
	t->n = k;
	return 0;
}

void proc_table_free(struct proc_table *t)
{
	free(t->v);
	t->v = NULL;
	t->n = t->cap = 0;
}

const struct proc_entry *proc_table_find(const struct proc_table *t, pid_t pid)
{
	struct proc_entry key = { .pid = pid };

	if (!t->n)
		return NULL;
	return bsearch(&key, t->v, t->n, sizeof(*t->v), cmp_pid);
}

int proc_table_is_descendant(const struct proc_table *t, pid_t pid, pid_t ancestor)
{
	/* Bounded walk: a table read while processes come and go may hold a cycle. */
	for (int depth = 0; depth < 256 && pid > 0; depth++) {
		const struct proc_entry *e;

		if (pid == ancestor)
			return 1;
		e = proc_table_find(t, pid);
		if (!e)
			return 0;
		pid = e->ppid;
	}
	return 0;
}

uint64_t proc_table_tree_rss(const struct proc_table *t, pid_t pid)
{
	uint64_t sum = 0;

	for (size_t i = 0; i < t->n; i++)
		if (proc_table_is_descendant(t, t->v[i].pid, pid))
			sum += t->v[i].rss_bytes;
	return sum;
}

int proc_self_exe(char *buf, size_t size)
{
	ssize_t len = readlink("/proc/self/exe", buf, size);

	if (len < 0)
		return -errno;
	if (len == 0 || (size_t)len >= size)
		return -ENAMETOOLONG;
	buf[len] = '\0';
	return 0;
}

int proc_cmdline(const char *root, pid_t pid, char *buf, size_t size, char **argv, int max)
{
	char path[PATH_MAX];
	int argc = 0;

	snprintf(path, sizeof(path), "%s/proc/%d/cmdline", root, (int)pid);
	long n = fs_read(path, buf, size);
	for (long i = 0; n > 0 && i < n && argc < max - 1; i += (long)strlen(buf + i) + 1)
		argv[argc++] = buf + i;
	argv[argc] = NULL;
	return argc;
}
