/* Unix stream sockets named by a path: the governor listens, launchers connect. */
#ifndef HEADROOM_USOCK_H
#define HEADROOM_USOCK_H

#include <sys/types.h>

/* A listening, non-blocking, close-on-exec socket bound to path (which must not exist).
 * The descriptor or -errno (-ENAMETOOLONG when path does not fit a sockaddr_un). */
int usock_listen(const char *path, int backlog);

/* A blocking, close-on-exec socket connected to path. The descriptor or -errno. */
int usock_connect(const char *path);

/* The process at the other end of a connected socket, as the kernel saw it when the
 * connection was made (SO_PEERCRED): never what that process says of itself. 0 or -errno. */
int usock_peer_pid(int fd, pid_t *pid);

#endif
