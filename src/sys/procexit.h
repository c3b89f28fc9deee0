/* Process exits as the kernel announces them: Linux's process events connector (netlink
 * NETLINK_CONNECTOR, CN_IDX_PROC) tells each process's exit status as it exits, before
 * its parent can reap it, so an end that /proc no longer shows (a launcher's `wait`
 * reaped it at once) can still be read. Needs CAP_NET_ADMIN in the initial namespaces
 * and a kernel built with CONFIG_PROC_EVENTS. */
#ifndef HEADROOM_PROCEXIT_H
#define HEADROOM_PROCEXIT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* What one message of the connector says: an exit, or the answer to our subscription. */
enum procexit_kind { PROCEXIT_EXIT, PROCEXIT_ACK };

struct procexit_rec {
	enum procexit_kind kind;
	pid_t pid;                /* EXIT: the thread that exited... */
	pid_t tgid;               /* ...of this process (pid == tgid: its leader, the process's end) */
	int status;               /* EXIT: how it ended, as a wait status */
	uint64_t time_ns;         /* EXIT: when, on CLOCK_MONOTONIC */
	uint32_t ack_of;          /* ACK: the ack number the request answered carried */
	int ack_err;              /* ACK: 0, or the errno the kernel refused it with */
};

/* Open a socket subscribed to process exits, non-blocking, into *fd. 0 or -errno:
 * -EPERM without CAP_NET_ADMIN, -EPROTONOSUPPORT without the connector, -ETIMEDOUT when
 * the kernel does not answer (no CONFIG_PROC_EVENTS, or not in the initial namespaces). */
int procexit_open(int *fd);
/* Read one queued message without waiting: records into out (at most max), their count;
 * -EAGAIN when none is queued, -ENOBUFS when the kernel dropped some (the socket's
 * buffer was full: read on), another -errno on failure. Only the kernel's messages are
 * taken: one sent by a process is dropped (0 records). */
int procexit_read(int fd, struct procexit_rec *out, size_t max);
/* Unsubscribe and close (fd < 0: nothing). */
void procexit_close(int fd);

/* The records of one received datagram (netlink messages carrying process events):
 * exits and acknowledgements into out (at most max), their count. Every length and
 * field the kernel gives is checked: a truncated or foreign message yields nothing. */
size_t procexit_parse(const void *buf, size_t len, struct procexit_rec *out, size_t max);

#endif
