#include "sys/procexit.h"

#include <errno.h>
#include <linux/cn_proc.h>
#include <linux/connector.h>
#include <linux/netlink.h>
#include <poll.h>
#include <stddef.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "util/units.h"

/* The kernel answers a subscription at once (it runs in our send): a wait this long
 * only covers one that never answers. */
#define PROCEXIT_ACK_MS 200
/* The socket's buffer: exits queue there while watch is busy (or held); past it the
 * kernel drops them (ENOBUFS). */
#define PROCEXIT_RCVBUF (4 << 20)
/* One datagram: a netlink message with one event is about a hundred bytes. */
#define PROCEXIT_DATAGRAM 8192
/* Since Linux 6.6 a subscription may name the events wanted (struct proc_input: the
 * operation, then a mask of events); older kernels ignore it, and take the operation
 * alone. */
#define PROCEXIT_WANT PROC_EVENT_EXIT

/* Bytes of the event from its start up to the end of field f. */
#define EV_NEEDS(f) (offsetof(struct proc_event, f) + sizeof(((struct proc_event *)0)->f))

static uint32_t get32(const unsigned char *p, size_t off)
{
	uint32_t v;
	memcpy(&v, p + off, sizeof(v));
	return v;
}

/* One process event (data: the cn_msg's data, dlen bytes) into *r; 0 when not one. */
static int parse_event(const unsigned char *data, size_t dlen, uint32_t ack, struct procexit_rec *r)
{
	uint32_t what, pid, tgid;
	uint64_t ts;

	if (dlen < offsetof(struct proc_event, event_data))
		return 0;
	what = get32(data, offsetof(struct proc_event, what));
	memset(r, 0, sizeof(*r));
	if (what == PROC_EVENT_NONE) {
		uint32_t err;
		if (dlen < EV_NEEDS(event_data.ack.err))
			return 0;
		err = get32(data, offsetof(struct proc_event, event_data.ack.err));
		r->kind = PROCEXIT_ACK;
		r->ack_of = ack - 1; /* the kernel answers with the request's ack number plus one */
		r->ack_err = err < 4096 ? (int)err : EPROTO; /* an errno, or nonsense */
		return 1;
	}
	if (what != PROC_EVENT_EXIT || dlen < EV_NEEDS(event_data.exit.exit_code))
		return 0;
	pid = get32(data, offsetof(struct proc_event, event_data.exit.process_pid));
	tgid = get32(data, offsetof(struct proc_event, event_data.exit.process_tgid));
	if (!pid || !tgid || pid > INT32_MAX || tgid > INT32_MAX)
		return 0;
	memcpy(&ts, data + offsetof(struct proc_event, timestamp_ns), sizeof(ts));
	r->kind = PROCEXIT_EXIT;
	r->pid = (pid_t)pid;
	r->tgid = (pid_t)tgid;
	r->status = (int)get32(data, offsetof(struct proc_event, event_data.exit.exit_code));
	r->time_ns = ts;
	return 1;
}

size_t procexit_parse(const void *buf, size_t len, struct procexit_rec *out, size_t max)
{
	const unsigned char *b = buf;
	size_t off = 0, n = 0;

	while (n < max && len - off >= NLMSG_HDRLEN) {
		struct nlmsghdr nh;
		struct cn_msg cn;
		size_t payload;

		memcpy(&nh, b + off, sizeof(nh));
		if (nh.nlmsg_len < NLMSG_HDRLEN || nh.nlmsg_len > len - off)
			break; /* truncated, or a length that lies */
		payload = nh.nlmsg_len - NLMSG_HDRLEN;
		if (nh.nlmsg_type == NLMSG_DONE && payload >= sizeof(cn)) {
			memcpy(&cn, b + off + NLMSG_HDRLEN, sizeof(cn));
			if (cn.id.idx == CN_IDX_PROC && cn.id.val == CN_VAL_PROC && cn.len <= payload - sizeof(cn))
				n += (size_t)parse_event(b + off + NLMSG_HDRLEN + sizeof(cn), cn.len, cn.ack, &out[n]);
		}
		if (NLMSG_ALIGN(nh.nlmsg_len) >= len - off)
			break;
		off += NLMSG_ALIGN(nh.nlmsg_len);
	}
	return n;
}

int procexit_read(int fd, struct procexit_rec *out, size_t max)
{
	/* netlink headers are read in place by the kernel's alignment: a word-aligned buffer */
	union {
		struct nlmsghdr h;
		unsigned char b[PROCEXIT_DATAGRAM];
	} buf;
	struct sockaddr_nl from;
	socklen_t flen = sizeof(from);
	ssize_t got;

	memset(&from, 0, sizeof(from));
	got = recvfrom(fd, buf.b, sizeof(buf.b), MSG_DONTWAIT, (struct sockaddr *)&from, &flen);
	if (got < 0)
		return errno == EWOULDBLOCK ? -EAGAIN : -errno;
	/* any process may send to our port: only the kernel (port 0) is believed */
	if (flen < sizeof(from) || from.nl_family != AF_NETLINK || from.nl_pid != 0)
		return 0;
	return (int)procexit_parse(buf.b, (size_t)got, out, max);
}

/* Send the multicast operation op to the connector, numbered ack (its answer carries
 * it); with want, the events wanted too. */
static int send_op(int fd, uint32_t ack, uint32_t op, int with_want)
{
	uint32_t data[2] = { op, PROCEXIT_WANT };
	size_t dlen = with_want ? sizeof(data) : sizeof(data[0]);
	unsigned char msg[NLMSG_SPACE(sizeof(struct cn_msg) + sizeof(data))];
	struct nlmsghdr nh = { 0 };
	struct cn_msg cn = { 0 };

	memset(msg, 0, sizeof(msg));
	nh.nlmsg_len = (uint32_t)NLMSG_LENGTH(sizeof(cn) + dlen);
	nh.nlmsg_type = NLMSG_DONE;
	cn.id.idx = CN_IDX_PROC;
	cn.id.val = CN_VAL_PROC;
	cn.ack = ack;
	cn.len = (uint16_t)dlen;
	memcpy(msg, &nh, sizeof(nh));
	memcpy(msg + NLMSG_HDRLEN, &cn, sizeof(cn));
	memcpy(msg + NLMSG_HDRLEN + sizeof(cn), data, dlen);
	return send(fd, msg, nh.nlmsg_len, 0) == (ssize_t)nh.nlmsg_len ? 0 : -errno;
}

/* The kernel's answer to our request numbered ack: 0, -errno, or -ETIMEDOUT (none
 * came). Events queued meanwhile are dropped: watch follows no process yet. */
static int await_ack(int fd, uint32_t ack)
{
	int64_t until = now_ms() + PROCEXIT_ACK_MS, now;
	struct procexit_rec r[8];

	while ((now = now_ms()) < until) {
		struct pollfd pf = { .fd = fd, .events = POLLIN };
		int n;

		if (poll(&pf, 1, (int)(until - now)) <= 0)
			continue;
		while ((n = procexit_read(fd, r, sizeof(r) / sizeof(r[0]))) != -EAGAIN) {
			if (n < 0 && n != -ENOBUFS)
				return n;
			for (int i = 0; i < n; i++)
				if (r[i].kind == PROCEXIT_ACK && r[i].ack_of == ack)
					return -r[i].ack_err;
		}
	}
	return -ETIMEDOUT;
}

int procexit_open(int *fdp)
{
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK, .nl_groups = CN_IDX_PROC };
	socklen_t slen = sizeof(sa);
	int fd, rc, size = PROCEXIT_RCVBUF;

	*fdp = -1;
	fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, NETLINK_CONNECTOR);
	if (fd < 0)
		return -errno;
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) || getsockname(fd, (struct sockaddr *)&sa, &slen)) {
		rc = -errno;
		goto out;
	}
	if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &size, sizeof(size)))
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof(size));
	/* our port, unique to this socket, numbers the request: the answer goes to every
	 * listener, and ours is the one that carries it. Every kernel answers the operation
	 * alone; then, the exits alone are asked for, in a request a kernel before 6.6
	 * ignores and a later one does not answer (its answer is no exit: filtered out) */
	rc = send_op(fd, sa.nl_pid, PROC_CN_MCAST_LISTEN, 0);
	if (!rc)
		rc = await_ack(fd, sa.nl_pid);
	if (!rc)
		send_op(fd, sa.nl_pid, PROC_CN_MCAST_LISTEN, 1);
out:
	if (rc) {
		close(fd);
		return rc;
	}
	*fdp = fd;
	return 0;
}

void procexit_close(int fd)
{
	if (fd < 0)
		return;
	/* the kernel counts listeners, and announces events while any is left */
	send_op(fd, 0, PROC_CN_MCAST_IGNORE, 0);
	close(fd);
}
