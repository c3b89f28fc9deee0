#include "sys/proc.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
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
	int pid, ppid, pgid;
	char state;

	if (!open || !close || close < open)
		return -EINVAL;
	if (sscanf(line, "%d", &pid) != 1)
		return -EINVAL;
	/* fields after comm: state ppid pgrp session tty_nr tpgid flags minflt cminflt
	 * majflt cmajflt utime stime cutime cstime priority nice num_threads itrealvalue
	 * starttime vsize rss */
	if (sscanf(close + 1, " %c %d %d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d"
			      " %*d %*d %*d %*d %*u %*u %ld",
		   &state, &ppid, &pgid, &rss_pages) != 4)
		return -EINVAL;
	memset(e, 0, sizeof(*e));
	e->pid = pid;
	e->ppid = ppid;
	e->pgid = pgid;
	e->state = state;
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
