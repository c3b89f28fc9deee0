#include "sys/atomicfile.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/xalloc.h"

/* A new file beside path, made here (O_EXCL, so never another's), mode 0666 less the
 * umask; fd or -errno. */
static int make_tmp(struct atomic_file *a)
{
	static unsigned serial;
	char *dir = xstrdup(a->path), *base = xstrdup(a->path);
	int fd = -EEXIST;

	for (int tries = 0; fd == -EEXIST && tries < 100; tries++) {
		free(a->tmp);
		a->tmp = xasprintf("%s/.%s.%ld.%u.tmp", dirname(dir), basename(base), (long)getpid(), serial++);
		fd = open(a->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0666);
		if (fd < 0)
			fd = -errno;
	}
	free(dir);
	free(base);
	return fd;
}

int atomic_open(struct atomic_file *a, const char *path)
{
	char real[PATH_MAX];
	struct stat st;
	int fd, rc = 0, had = !stat(path, &st);

	memset(a, 0, sizeof(*a));
	if (had && !S_ISREG(st.st_mode)) {
		/* a device or a FIFO cannot be replaced: written as it is */
		a->f = fopen(path, "w");
		if (!a->f)
			return -errno;
		a->path = xstrdup(path);
		return 0;
	}
	a->path = xstrdup(had && realpath(path, real) ? real : path);
	fd = make_tmp(a);
	if (fd < 0) {
		rc = fd;
		goto fail;
	}
	/* the file it replaces keeps its mode, and root's writing keeps its owner */
	if (had && (fchmod(fd, st.st_mode & 07777) || (!geteuid() && fchown(fd, st.st_uid, st.st_gid))))
		rc = -errno;
	if (!rc && !(a->f = fdopen(fd, "w")))
		rc = -errno;
	if (rc) {
		close(fd);
		unlink(a->tmp);
		goto fail;
	}
	return 0;
fail:
	free(a->tmp);
	free(a->path);
	memset(a, 0, sizeof(*a));
	return rc;
}

int atomic_close(struct atomic_file *a, int rc)
{
	if (!a->f)
		return rc ? rc : -EBADF;
	if (!rc && fflush(a->f))
		rc = -errno;
	if (!rc && ferror(a->f))
		rc = -EIO;
	if (!rc && a->tmp && fsync(fileno(a->f)))
		rc = -errno;
	if (fclose(a->f) && !rc)
		rc = -errno;
	if (a->tmp && !rc && rename(a->tmp, a->path))
		rc = -errno;
	if (a->tmp && rc)
		unlink(a->tmp);
	free(a->tmp);
	free(a->path);
	memset(a, 0, sizeof(*a));
	return rc;
}
