#include "sys/fsutil.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/xalloc.h"

long fs_read(const char *path, char *buf, size_t len)
{
	size_t got = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	while (got + 1 < len) {
		ssize_t n = read(fd, buf + got, len - 1 - got);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			int e = errno;
			close(fd);
			return -e;
		}
		if (n == 0)
			break;
		got += (size_t)n;
	}
	buf[got] = '\0';
	close(fd);
	return (long)got;
}

int fs_read_u64(const char *path, uint64_t *out)
{
	char buf[64], *end;
	long n = fs_read(path, buf, sizeof(buf));

	if (n < 0)
		return (int)n;
	if (!strncmp(buf, "max", 3))
		return -ENODATA;
	errno = 0;
	unsigned long long v = strtoull(buf, &end, 10);
	if (errno || end == buf)
		return -EINVAL;
	*out = v;
	return 0;
}

int fs_read_key_u64(const char *path, const char *key, uint64_t *out)
{
	char line[256];
	size_t klen = strlen(key);
	int rc = -ENOENT;
	FILE *f = fopen(path, "re");

	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, key, klen) && line[klen] == ' ') {
			*out = strtoull(line + klen + 1, NULL, 10);
			rc = 0;
			break;
		}
	}
	fclose(f);
	return rc;
}

int fs_write(const char *path, const char *s)
{
	size_t len = strlen(s);
	/* O_TRUNC: a regular file (a fixture) reads back what was written, as echo > leaves it;
	 * /proc and cgroup files ignore it */
	int fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	ssize_t n = write(fd, s, len);
	int e = n < 0 ? errno : 0;
	close(fd);
	if (n < 0)
		return -e;
	return (size_t)n == len ? 0 : -EIO;
}

char *fs_which(const char *name)
{
	const char *path = getenv("PATH");
	char *dirs, *save = NULL, *found = NULL;

	if (strchr(name, '/'))
		return access(name, X_OK) ? NULL : xstrdup(name);
	dirs = xstrdup(path && *path ? path : "/usr/local/bin:/usr/bin:/bin");
	for (char *d = strtok_r(dirs, ":", &save); d && !found; d = strtok_r(NULL, ":", &save)) {
		char *c = xasprintf("%s/%s", *d ? d : ".", name);
		if (!access(c, X_OK))
			found = c;
		else
			free(c);
	}
	free(dirs);
	return found;
}

const char *fs_kind(mode_t mode)
{
	static const struct {
		mode_t type;
		const char *kind;
	} kinds[] = {
		{ S_IFREG, NULL },         { S_IFDIR, "a directory" }, { S_IFCHR, "a character device" },
		{ S_IFBLK, "a block device" }, { S_IFIFO, "a FIFO" },  { S_IFSOCK, "a socket" },
		{ S_IFLNK, "a symbolic link" },
	};

	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		if ((mode & S_IFMT) == kinds[i].type)
			return kinds[i].kind;
	return "not a file";
}

static int readable(const struct stat *st, const char **kind)
{
	*kind = fs_kind(st->st_mode);
	return S_ISREG(st->st_mode) || S_ISFIFO(st->st_mode) ? 0 : -EINVAL;
}

int fs_open_input(const char *path, FILE **f, struct stat *st, const char **kind)
{
	int fd, rc, flags;

	*f = NULL;
	/* a device is not opened at all: opening one may do something (a tape rewinds) */
	if (stat(path, st))
		return *kind = NULL, -errno;
	if ((rc = readable(st, kind)))
		return rc;
	/* not blocking in open(): a FIFO with no writer would wait for one */
	fd = open(path, O_RDONLY | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, st) || (rc = readable(st, kind)) || (flags = fcntl(fd, F_GETFL)) < 0 ||
	    fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) || !(*f = fdopen(fd, "r"))) {
		rc = rc ? rc : -errno;
		close(fd);
		return rc;
	}
	return 0;
}
