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

/* A new file beside path, made here (O_EXCL, so never another's), 0600 until its mode
 * is set (no other user can open it meanwhile and read what is written); fd or -errno. */
static int make_tmp(struct atomic_file *a)
{
	static unsigned serial;
	char *dir = xstrdup(a->path), *base = xstrdup(a->path);
	int fd = -EEXIST;

	for (int tries = 0; fd == -EEXIST && tries < 100; tries++) {
		free(a->tmp);
		a->tmp = xasprintf("%s/.%s.%ld.%u.tmp", dirname(dir), basename(base), (long)getpid(), serial++);
		fd = open(a->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
		if (fd < 0)
			fd = -errno;
	}
	free(dir);
	free(base);
	return fd;
}

/* Whether path is this process's standard input, output or error (/dev/stdout, a
 * /proc/self/fd link, or the file they were redirected to). */
static int is_std_stream(const char *path, const struct stat *st)
{
	struct stat fs;

	if (!strncmp(path, "/dev/", 5) || !strncmp(path, "/proc/", 6))
		return 1;
	for (int fd = 0; fd <= 2; fd++)
		if (!fstat(fd, &fs) && fs.st_dev == st->st_dev && fs.st_ino == st->st_ino)
			return 1;
	return 0;
}

/* Written in place: what cannot be replaced (a device, a FIFO, a standard stream whose
 * other writes a rename would lose, a symlink to nothing yet). */
static int open_in_place(struct atomic_file *a, const char *path)
{
	a->f = fopen(path, "w");
	if (!a->f)
		return -errno;
	a->path = xstrdup(path);
	return 0;
}

int atomic_open(struct atomic_file *a, const char *path)
{
	char real[PATH_MAX];
	struct stat st, lst;
	int fd, rc = 0, had = !stat(path, &st);
	mode_t mask = umask(0);

	umask(mask);
	memset(a, 0, sizeof(*a));
	if ((had && (!S_ISREG(st.st_mode) || is_std_stream(path, &st))) ||
	    (!had && !lstat(path, &lst) && S_ISLNK(lst.st_mode)))
		return open_in_place(a, path);
	a->path = xstrdup(had && realpath(path, real) ? real : path);
	fd = make_tmp(a);
	if (fd < 0) {
		rc = fd;
		goto fail;
	}
	/* the file it replaces keeps its mode, and root's writing keeps its owner; a new
	 * one gets what open(2) would have given it */
	if (fchmod(fd, had ? st.st_mode & 07777 : 0666 & ~mask) ||
	    (had && !geteuid() && fchown(fd, st.st_uid, st.st_gid)))
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

/* A file that cannot be renamed over (a bind mount of one file, as containers make):
 * written in place from the whole temporary file. */
static int copy_over(const char *tmp, const char *path)
{
	char buf[1 << 16];
	int in = open(tmp, O_RDONLY | O_CLOEXEC), out = -1, rc = 0;
	ssize_t n;

	if (in < 0)
		return -errno;
	out = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);
	if (out < 0)
		rc = -errno;
	while (!rc && (n = read(in, buf, sizeof(buf))) != 0) {
		if (n < 0 || write(out, buf, (size_t)n) != n)
			rc = n < 0 ? -errno : -EIO;
	}
	if (!rc && fsync(out))
		rc = -errno;
	if (out >= 0 && close(out) && !rc)
		rc = -errno;
	close(in);
	return rc;
}

/* The rename itself made lasting (best effort: the data already is). */
static void sync_dir(const char *path)
{
	char *copy = xstrdup(path);
	int fd = open(dirname(copy), O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd >= 0) {
		fsync(fd);
		close(fd);
	}
	free(copy);
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
	if (a->tmp && !rc && rename(a->tmp, a->path)) {
		rc = errno == EBUSY || errno == EXDEV ? copy_over(a->tmp, a->path) : -errno;
		unlink(a->tmp);
	} else if (a->tmp && !rc) {
		sync_dir(a->path);
	} else if (a->tmp) {
		unlink(a->tmp);
	}
	free(a->tmp);
	free(a->path);
	memset(a, 0, sizeof(*a));
	return rc;
}
