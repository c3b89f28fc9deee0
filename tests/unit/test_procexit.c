/* The kernel's process events, parsed from hand-built netlink datagrams: exits and
 * answers read, everything else, truncated or lying, yields nothing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <linux/cn_proc.h>
#include <linux/connector.h>
#include <linux/netlink.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>

#include "sys/procexit.h"

#define BUF 4096
#define RECS 16

/* Append one netlink message carrying a cn_msg of id (idx, CN_VAL_PROC) whose data is
 * ev's first evlen bytes; cnlen is the cn_msg's own length field (normally evlen). */
static size_t put(unsigned char *buf, size_t off, uint32_t idx, const struct proc_event *ev, size_t evlen,
		  size_t cnlen, uint32_t ack)
{
	struct nlmsghdr nh = { 0 };
	struct cn_msg cn = { 0 };

	nh.nlmsg_len = (uint32_t)NLMSG_LENGTH(sizeof(cn) + evlen);
	nh.nlmsg_type = NLMSG_DONE;
	cn.id.idx = idx;
	cn.id.val = CN_VAL_PROC;
	cn.ack = ack;
	cn.len = (uint16_t)cnlen;
	assert_true(off + NLMSG_ALIGN(nh.nlmsg_len) <= BUF);
	memcpy(buf + off, &nh, sizeof(nh));
	memcpy(buf + off + NLMSG_HDRLEN, &cn, sizeof(cn));
	memcpy(buf + off + NLMSG_HDRLEN + sizeof(cn), ev, evlen);
	return off + NLMSG_ALIGN(nh.nlmsg_len);
}

static struct proc_event exit_ev(uint32_t pid, uint32_t tgid, uint32_t code, uint64_t ts)
{
	struct proc_event ev;

	memset(&ev, 0, sizeof(ev));
	ev.what = PROC_EVENT_EXIT;
	ev.timestamp_ns = ts;
	ev.event_data.exit.process_pid = (__kernel_pid_t)pid;
	ev.event_data.exit.process_tgid = (__kernel_pid_t)tgid;
	ev.event_data.exit.exit_code = code;
	ev.event_data.exit.exit_signal = SIGCHLD;
	return ev;
}

static struct proc_event ack_ev(uint32_t err)
{
	struct proc_event ev;

	memset(&ev, 0, sizeof(ev));
	ev.what = PROC_EVENT_NONE;
	ev.event_data.ack.err = err;
	return ev;
}

/* The bytes of an exit event up to its exit code: what the oldest kernels send. */
#define EXIT_MIN (offsetof(struct proc_event, event_data.exit.exit_signal))

static void test_parse_exits_and_answers(void **state)
{
	unsigned char buf[BUF];
	struct procexit_rec r[RECS];
	struct proc_event ev;
	size_t off = 0;

	(void)state;
	ev = exit_ev(100, 100, 1 << 8, 5000);          /* exit(1) */
	off = put(buf, off, CN_IDX_PROC, &ev, sizeof(ev), sizeof(ev), 0);
	ev = exit_ev(101, 100, SIGKILL, 6000);         /* a thread of 100, killed */
	off = put(buf, off, CN_IDX_PROC, &ev, sizeof(ev), sizeof(ev), 0);
	ev = ack_ev(EPERM);
	off = put(buf, off, CN_IDX_PROC, &ev, sizeof(ev), sizeof(ev), 42);
	memset(&ev, 0, sizeof(ev));                     /* a fork: no exit */
	ev.what = PROC_EVENT_FORK;
	off = put(buf, off, CN_IDX_PROC, &ev, sizeof(ev), sizeof(ev), 0);
	ev = exit_ev(200, 200, 0, 7000);               /* another connector's message */
	off = put(buf, off, CN_IDX_CIFS, &ev, sizeof(ev), sizeof(ev), 0);
	ev = exit_ev(300, 300, 0, 8000);               /* an older kernel's shorter exit */
	off = put(buf, off, CN_IDX_PROC, &ev, EXIT_MIN, EXIT_MIN, 0);

	assert_int_equal(procexit_parse(buf, off, r, RECS), 4);
	assert_int_equal(r[0].kind, PROCEXIT_EXIT);
	assert_int_equal(r[0].pid, 100);
	assert_int_equal(r[0].tgid, 100);
	assert_true(WIFEXITED(r[0].status) && WEXITSTATUS(r[0].status) == 1);
	assert_int_equal(r[0].time_ns, 5000);
	assert_int_equal(r[1].pid, 101);
	assert_int_equal(r[1].tgid, 100);
	assert_true(WIFSIGNALED(r[1].status) && WTERMSIG(r[1].status) == SIGKILL);
	assert_int_equal(r[2].kind, PROCEXIT_ACK);
	assert_int_equal(r[2].ack_of, 41); /* the kernel answers with the request's number plus one */
	assert_int_equal(r[2].ack_err, EPERM);
	assert_int_equal(r[3].kind, PROCEXIT_EXIT);
	assert_int_equal(r[3].pid, 300);
	assert_true(WIFEXITED(r[3].status) && WEXITSTATUS(r[3].status) == 0);

	/* no more records than room for */
	assert_int_equal(procexit_parse(buf, off, r, 1), 1);
	assert_int_equal(r[0].pid, 100);
	assert_int_equal(procexit_parse(buf, off, r, 0), 0);
}

/* Every truncation of a datagram gives the whole messages before the cut, no more. */
static void test_parse_truncated(void **state)
{
	unsigned char buf[BUF];
	struct procexit_rec r[RECS];
	struct proc_event ev;
	size_t ends[3], off = 0;

	(void)state;
	for (int i = 0; i < 3; i++) {
		ev = exit_ev((uint32_t)(10 + i), (uint32_t)(10 + i), 0, 1);
		ends[i] = off + NLMSG_LENGTH(sizeof(struct cn_msg) + sizeof(ev));
		off = put(buf, off, CN_IDX_PROC, &ev, sizeof(ev), sizeof(ev), 0);
	}
	for (size_t len = 0; len <= off; len++) {
		size_t want = (len >= ends[0]) + (len >= ends[1]) + (len >= ends[2]);
		assert_int_equal(procexit_parse(buf, len, r, RECS), want);
	}
}

/* Lengths that lie and fields out of range: nothing read, nothing read past the buffer. */
static void test_parse_garbage(void **state)
{
	unsigned char buf[BUF];
	struct procexit_rec r[RECS];
	struct proc_event ev = exit_ev(100, 100, 0, 1);
	struct nlmsghdr nh;
	size_t off;

	(void)state;
	/* the cn_msg says more data than the netlink message holds */
	off = put(buf, 0, CN_IDX_PROC, &ev, sizeof(ev), sizeof(ev) + 1, 0);
	assert_int_equal(procexit_parse(buf, off, r, RECS), 0);
	/* too short for an exit's pids and code, or for any event */
	off = put(buf, 0, CN_IDX_PROC, &ev, EXIT_MIN - 1, EXIT_MIN - 1, 0);
	assert_int_equal(procexit_parse(buf, off, r, RECS), 0);
	off = put(buf, 0, CN_IDX_PROC, &ev, 4, 4, 0);
	assert_int_equal(procexit_parse(buf, off, r, RECS), 0);
	/* pids no process has */
	ev = exit_ev(0, 0, 0, 1);
	off = put(buf, 0, CN_IDX_PROC, &ev, sizeof(ev), sizeof(ev), 0);
	assert_int_equal(procexit_parse(buf, off, r, RECS), 0);
	ev = exit_ev(0x80000000u, 0x80000000u, 0, 1);
	off = put(buf, 0, CN_IDX_PROC, &ev, sizeof(ev), sizeof(ev), 0);
	assert_int_equal(procexit_parse(buf, off, r, RECS), 0);
	/* an answer whose error is no errno */
	ev = ack_ev(0xffffffffu);
	off = put(buf, 0, CN_IDX_PROC, &ev, sizeof(ev), sizeof(ev), 1);
	assert_int_equal(procexit_parse(buf, off, r, RECS), 1);
	assert_int_equal(r[0].ack_err, EPROTO);
	/* a netlink length past the datagram, then one below its own header */
	ev = exit_ev(100, 100, 0, 1);
	off = put(buf, 0, CN_IDX_PROC, &ev, sizeof(ev), sizeof(ev), 0);
	memcpy(&nh, buf, sizeof(nh));
	nh.nlmsg_len = (uint32_t)off + 4;
	memcpy(buf, &nh, sizeof(nh));
	assert_int_equal(procexit_parse(buf, off, r, RECS), 0);
	nh.nlmsg_len = NLMSG_HDRLEN - 1;
	memcpy(buf, &nh, sizeof(nh));
	assert_int_equal(procexit_parse(buf, off, r, RECS), 0);
	/* another message type (an error, an overrun) */
	nh.nlmsg_len = (uint32_t)NLMSG_LENGTH(sizeof(struct cn_msg) + sizeof(ev));
	nh.nlmsg_type = NLMSG_ERROR;
	memcpy(buf, &nh, sizeof(nh));
	assert_int_equal(procexit_parse(buf, off, r, RECS), 0);
	/* bytes of no meaning at all: whatever they say, the parser stays in the buffer
	 * (ASan watches) and gives no more records than room for */
	uint32_t x = 12345;
	for (int round = 0; round < 2000; round++) {
		size_t len = (size_t)(round % 200);
		for (size_t i = 0; i < len; i++) {
			x = x * 1103515245u + 12345u;
			buf[i] = (unsigned char)(x >> 16);
		}
		if (len >= sizeof(nh) && round % 2) { /* now and then a header that holds */
			nh.nlmsg_len = (uint32_t)len;
			nh.nlmsg_type = NLMSG_DONE;
			memcpy(buf, &nh, sizeof(nh));
		}
		assert_true(procexit_parse(buf, len, r, 2) <= 2);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_exits_and_answers),
		cmocka_unit_test(test_parse_truncated),
		cmocka_unit_test(test_parse_garbage),
	};
	return cmocka_run_group_tests(tests, 0, 0);
}
