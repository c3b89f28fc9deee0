/* Unix stream sockets named by a path: the governor listens, launchers connect. */
#ifndef HEADROOM_USOCK_H
#define HEADROOM_USOCK_H

/* A listening, non-blocking, close-on-exec socket bound to path (which must not exist).
 * The descriptor or -errno (-ENAMETOOLONG when path does not fit a sockaddr_un). */
int usock_listen(const char *path, int backlog);

/* A blocking, close-on-exec socket connected to path. The descriptor or -errno. */
int usock_connect(const char *path);

#endif
