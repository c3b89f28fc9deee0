#include "sys/procinfo.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sys/fsutil.h"
#include "sys/proc.h"

long procinfo_environ(const char *root, pid_t pid, char *buf, size_t size)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/proc/%d/environ", root, (int)pid);
	return fs_read(path, buf, size);
}

pid_t procinfo_parse_nspid(char *status, pid_t pid)
{
	char *l = strstr(status, "\nNSpid:"), *end, *last;
	pid_t inner;

	if (!l)
		return 0;
	l += 7;
	end = strchr(l, '\n');
	if (end)
		*end = '\0';
	last = strrchr(l, '\t') ? strrchr(l, '\t') + 1 : l;
	inner = (pid_t)atoi(last);
	return inner > 0 && inner != pid ? inner : 0;
}

/* /proc/PID/status into buf: its length, or -errno. */
static long read_status(const char *root, pid_t pid, char *buf, size_t size)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/proc/%d/status", root, (int)pid);
	return fs_read(path, buf, size);
}

int procinfo_container_pid(const char *root, pid_t pid, pid_t *inner)
{
	char buf[4096];
	long n;

	*inner = 0;
	n = read_status(root, pid, buf, sizeof(buf));
	if (n < 0)
		return (int)n;
	*inner = procinfo_parse_nspid(buf, pid);
	return 0;
}

int procinfo_parse_uid(const char *status, uid_t *uid)
{
	const char *l = !strncmp(status, "Uid:", 4) ? status : strstr(status, "\nUid:");
	unsigned long v;
	char *end;

	if (!l)
		return -EINVAL;
	l += *l == '\n' ? 5 : 4;
	errno = 0;
	v = strtoul(l, &end, 10);
	if (errno || end == l || (*end != '\t' && *end != ' ' && *end != '\n') || v > (uid_t)-2)
		return -EINVAL;
	*uid = (uid_t)v;
	return 0;
}

int procinfo_uid(const char *root, pid_t pid, uid_t *uid)
{
	char buf[4096];
	long n = read_status(root, pid, buf, sizeof(buf));

	if (n < 0)
		return (int)n;
	return procinfo_parse_uid(buf, uid);
}

int procinfo_running(const char *root, pid_t pid)
{
	char path[PATH_MAX], buf[1024];
	struct proc_entry e;

	snprintf(path, sizeof(path), "%s/proc/%d/stat", root, (int)pid);
	if (fs_read(path, buf, sizeof(buf)) <= 0 || proc_parse_stat(buf, sysconf(_SC_PAGESIZE), &e))
		return 0;
	return e.state != 'Z' && e.state != 'X';
}

/* Fields want[0..n) (numbered as proc(5): 3 is the state) of /proc/PID/stat into out.
 * 0, or -errno (-EINVAL: fewer fields, as older kernels write). */
static int stat_fields(const char *root, pid_t pid, const int *want, size_t n, unsigned long long *out, char *state)
{
	char path[PATH_MAX], buf[1024], *f, *save = NULL;
	long len;
	int field = 3;
	size_t got = 0;

	snprintf(path, sizeof(path), "%s/proc/%d/stat", root, (int)pid);
	len = fs_read(path, buf, sizeof(buf));
	if (len < 0)
		return (int)len;
	/* comm may hold spaces and parentheses: it ends at the last ')' */
	f = strrchr(buf, ')');
	if (!f)
		return -EINVAL;
	for (f = strtok_r(f + 1, " \n", &save); f && got < n; f = strtok_r(NULL, " \n", &save), field++) {
		if (field == 3)
			*state = f[0];
		if (field == want[got])
			out[got++] = strtoull(f, NULL, 10);
	}
	return got == n ? 0 : -EINVAL;
}

int procinfo_start_ticks(const char *root, pid_t pid, unsigned long long *ticks)
{
	static const int want[] = { 22 };
	char state;

	return stat_fields(root, pid, want, 1, ticks, &state);
}

int procinfo_exit_status(const char *root, pid_t pid, int *wstatus)
{
	static const int want[] = { 52 };
	unsigned long long code;
	char state = 0;
	int rc = stat_fields(root, pid, want, 1, &code, &state);

	if (state && state != 'Z')
		return -ESRCH;
	if (rc)
		return rc == -ENOENT ? -ESRCH : rc;
	*wstatus = (int)(code & 0xffff);
	return 0;
}
