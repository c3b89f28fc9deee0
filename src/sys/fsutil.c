#include "sys/fsutil.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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
