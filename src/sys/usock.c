#include "sys/usock.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

static int usock_open(const char *path, int flags, struct sockaddr_un *a)
{
	memset(a, 0, sizeof(*a));
	a->sun_family = AF_UNIX;
	if (strlen(path) >= sizeof(a->sun_path))
		return -ENAMETOOLONG;
	memcpy(a->sun_path, path, strlen(path) + 1);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | flags, 0);
	return fd < 0 ? -errno : fd;
}

int usock_listen(const char *path, int backlog)
{
	struct sockaddr_un a;
	int fd = usock_open(path, SOCK_NONBLOCK, &a);

	if (fd < 0)
		return fd;
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) || listen(fd, backlog)) {
		int e = errno;
		close(fd);
		return -e;
	}
	return fd;
}

int usock_connect(const char *path)
{
	struct sockaddr_un a;
	int fd = usock_open(path, 0, &a);

	if (fd < 0)
		return fd;
	if (connect(fd, (struct sockaddr *)&a, sizeof(a))) {
		int e = errno;
		close(fd);
		return -e;
	}
	return fd;
}

int usock_peer_pid(int fd, pid_t *pid)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len))
		return -errno;
	if (len != sizeof(cred) || cred.pid <= 0)
		return -ESRCH;
	*pid = cred.pid;
	return 0;
}
