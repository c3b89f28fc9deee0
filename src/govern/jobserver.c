#include "govern/jobserver.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/path.h"
#include "util/xalloc.h"

/* "GNU Make 4.3" -> 4, 3; 0 when it is not GNU make. */
static int version_of(const char *line, const char *prefix, int *major, int *minor)
{
	size_t n = strlen(prefix);

	*major = *minor = 0;
	if (!line || strncmp(line, prefix, n))
		return 0;
	return sscanf(line + n, "%d.%d", major, minor) >= 1;
}

int jobserver_make_has_fifo(const char *make_version)
{
	int ma, mi;
	return version_of(make_version, "GNU Make ", &ma, &mi) && (ma > 4 || (ma == 4 && mi >= 4));
}

int jobserver_ninja_is_client(const char *ninja_version)
{
	int ma, mi;
	return version_of(ninja_version, "", &ma, &mi) && (ma > 1 || (ma == 1 && mi >= 13));
}

enum jobserver_style jobserver_style_for(const char *make_version, const char *ninja_version, const char *cmd)
{
	const char *b = path_base(cmd);

	/* ninja reads only the fifo style; make 4.4 reads both, make 4.3 only the pipe. */
	if (!strcmp(b, "ninja"))
		return jobserver_ninja_is_client(ninja_version) ? JOBSERVER_FIFO : JOBSERVER_NONE;
	if (!make_version || jobserver_make_has_fifo(make_version))
		return JOBSERVER_FIFO;
	return JOBSERVER_PIPE;
}

int jobserver_style_readable(enum jobserver_style style, const char *make_version, const char *ninja_version,
			     const char *cmd)
{
	if (!strcmp(path_base(cmd), "ninja"))
		return style == JOBSERVER_FIFO && (!ninja_version || jobserver_ninja_is_client(ninja_version));
	return style != JOBSERVER_FIFO || !make_version || jobserver_make_has_fifo(make_version);
}

const char *jobserver_style_name(enum jobserver_style style)
{
	switch (style) {
	case JOBSERVER_PIPE:
		return "pipe";
	case JOBSERVER_FIFO:
		return "fifo";
	default:
		return "none";
	}
}

int jobserver_open(struct jobserver *js, enum jobserver_style style, const char *dir, int jobs,
		   const char *old_makeflags)
{
	char proc[64], *auth = NULL;
	int fds[2], e;

	memset(js, 0, sizeof(*js));
	js->style = style;
	js->rfd = js->wfd = js->own_fd = -1;
	if (style == JOBSERVER_PIPE) {
		/* Inherited by the build: no close-on-exec. */
		if (pipe(fds))
			return -errno;
		js->rfd = fds[0];
		js->wfd = fds[1];
		/* Our own open file description, so that non-blocking reads are ours alone
		 * and make's blocking reads stay blocking. */
		snprintf(proc, sizeof(proc), "/proc/self/fd/%d", js->rfd);
		js->own_fd = open(proc, O_RDWR | O_NONBLOCK | O_CLOEXEC);
		auth = xasprintf("%d,%d", js->rfd, js->wfd);
	} else if (style == JOBSERVER_FIFO) {
		js->fifo_path = xasprintf("%s/jobserver", dir);
		if (mkfifo(js->fifo_path, 0600))
			goto fail;
		js->own_fd = open(js->fifo_path, O_RDWR | O_NONBLOCK | O_CLOEXEC);
		auth = xasprintf("fifo:%s", js->fifo_path);
	} else {
		return -EINVAL;
	}
	if (js->own_fd < 0)
		goto fail;
	/* The user's flags first: make reads a leading word of letters as single-letter flags. */
	js->makeflags = xasprintf("%s -j%d --jobserver-auth=%s", old_makeflags ? old_makeflags : "", jobs, auth);
	free(auth);
	return 0;
fail:
	e = errno;
	free(auth);
	jobserver_close(js);
	return -e;
}

int jobserver_waiting(const struct jobserver *js)
{
	int n = 0;

	if (ioctl(js->own_fd, FIONREAD, &n))
		return -errno;
	return n;
}

int jobserver_set(struct jobserver *js, int want)
{
	char buf[256];
	int have = jobserver_waiting(js);

	if (have < 0)
		return have;
	if (want < 0)
		want = 0;
	while (have < want) {
		size_t n = (size_t)(want - have) < sizeof(buf) ? (size_t)(want - have) : sizeof(buf);
		memset(buf, '+', n);
		ssize_t w = write(js->own_fd, buf, n);
		if (w < 0)
			return errno == EAGAIN ? have : -errno;
		have += (int)w;
	}
	while (have > want) {
		size_t n = (size_t)(have - want) < sizeof(buf) ? (size_t)(have - want) : sizeof(buf);
		/* A build tool may take one between our count and our read: fine, it is its. */
		ssize_t r = read(js->own_fd, buf, n);
		if (r <= 0)
			return r < 0 && errno != EAGAIN ? -errno : jobserver_waiting(js);
		have -= (int)r;
	}
	return have;
}

void jobserver_close(struct jobserver *js)
{
	if (js->rfd >= 0)
		close(js->rfd);
	if (js->wfd >= 0)
		close(js->wfd);
	if (js->own_fd >= 0)
		close(js->own_fd);
	if (js->fifo_path)
		unlink(js->fifo_path);
	free(js->fifo_path);
	free(js->makeflags);
	memset(js, 0, sizeof(*js));
	js->rfd = js->wfd = js->own_fd = -1;
}
