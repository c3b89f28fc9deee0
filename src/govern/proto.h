/* The launcher protocol: JSON objects, one per line, over the governor's unix socket.
 *
 *   launcher -> governor  {"type":"request","pid":P,"attempt":A,"tool":T,"src":S,"class":C,"sig":K,
 *                          "cached":B,"check":B}  (through a compiler cache; a configure check)
 *   governor -> launcher  {"type":"admit","job":J}
 *   launcher -> governor  {"type":"started","job":J,"pid":CHILD}
 *   launcher -> governor  {"type":"done","job":J,"exit":E|null,"signal":S|null,"duration_ms":D,
 *                          "maxrss_bytes":M,"cache_hit":true|false|null}
 *                          (M: largest single process of the tool's tree; cache_hit: what
 *                          the compiler cache said, null when it said nothing)
 *   governor -> launcher  {"type":"cgroup","job":J,"dir":PATH}
 *                          (while the job runs: the cgroup the governor gave it once it had
 *                          run a tick; the launcher removes it should the governor go away)
 *   governor -> launcher  {"type":"ack","job":J,"retry":true|false,"reason":R}
 *
 * The launcher waits for the ack only when the tool was killed by SIGKILL, since only
 * such a job is run again; after any other end it closes the connection at once. After
 * an ack with retry the launcher sends a new request (attempt A+1) on the same
 * connection. A closed connection means the other side is gone. */
#ifndef HEADROOM_PROTO_H
#define HEADROOM_PROTO_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#define PROTO_MAX_LINE 65536

struct proto_conn {
	int fd;
	char *buf; /* owned */
	size_t len, cap;
};

void proto_conn_init(struct proto_conn *c, int fd);
/* Frees the buffer and closes fd. */
void proto_conn_close(struct proto_conn *c);
/* Send one message (a JSON object). 0 or -errno. Does not take the reference. */
int proto_send(int fd, json_t *msg);
/* Read what the socket has (one read call) into the buffer. >0 bytes read, 0 EOF, -errno. */
int proto_fill(struct proto_conn *c);
/* Take one complete message out of the buffer: 1 (*out set, caller decrefs), 0 none yet,
 * -EPROTO for a line that is not a JSON object, -E2BIG for an over-long line. */
int proto_take(struct proto_conn *c, json_t **out);
/* Block until one message arrives: 1, 0 on EOF, or -errno. */
int proto_recv(struct proto_conn *c, json_t **out);
/* The "type" string of a message, "" when absent. */
const char *proto_type(json_t *msg);

/* The messages, typed. Encoding gives a new reference (NULL when a string is NULL);
 * decoding reads the fields of a message whose type the caller has checked, and a
 * field that is absent or of the wrong type reads as 0, NULL or "" as noted. The
 * strings of a decoded message point into it: valid while the caller holds msg. */
struct proto_request {
	int64_t pid;              /* the launcher's */
	int64_t attempt;          /* 1 first, +1 after each retry */
	const char *tool, *src, *class_key, *sig_key; /* "" when absent */
	int cached;               /* runs through a compiler cache (ccache, sccache); 0 when absent */
	int check;                /* a configure check (CMake's try_compile); 0 when absent */
};

struct proto_admit {
	int64_t job;
};

struct proto_cgroup {
	int64_t job;
	const char *dir;          /* the job's own cgroup directory; "" when absent */
};

struct proto_started {
	int64_t job;
	int64_t pid;              /* the tool, leader of the job's process group */
};

struct proto_done {
	int64_t job;
	int has_exit;             /* exited: exit_code is its status */
	int64_t exit_code;
	int has_signal;           /* killed: signal is the signal */
	int64_t signal;
	int64_t duration_ms;
	uint64_t maxrss_bytes;    /* largest single process of the tool's tree */
	int cache_hit;            /* the compiler cache's word: 1 a hit, 0 a miss, -1 unknown or absent */
};

struct proto_ack {
	int64_t job;
	int retry;                /* run the job again: a new request follows */
	const char *reason;       /* for people; "" when absent */
};

json_t *proto_request_encode(const struct proto_request *m);
void proto_request_decode(json_t *msg, struct proto_request *m);
json_t *proto_admit_encode(const struct proto_admit *m);
void proto_admit_decode(json_t *msg, struct proto_admit *m);
json_t *proto_cgroup_encode(const struct proto_cgroup *m);
void proto_cgroup_decode(json_t *msg, struct proto_cgroup *m);
json_t *proto_started_encode(const struct proto_started *m);
void proto_started_decode(json_t *msg, struct proto_started *m);
json_t *proto_done_encode(const struct proto_done *m);
void proto_done_decode(json_t *msg, struct proto_done *m);
json_t *proto_ack_encode(const struct proto_ack *m);
void proto_ack_decode(json_t *msg, struct proto_ack *m);
/* Encode and send one message: 0, -ENOMEM when it cannot be encoded, or -errno. */
int proto_send_request(int fd, const struct proto_request *m);
int proto_send_admit(int fd, const struct proto_admit *m);
int proto_send_cgroup(int fd, const struct proto_cgroup *m);
int proto_send_started(int fd, const struct proto_started *m);
int proto_send_done(int fd, const struct proto_done *m);
int proto_send_ack(int fd, const struct proto_ack *m);

#endif
