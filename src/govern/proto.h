/* The launcher protocol: JSON objects, one per line, over the governor's unix socket.
 *
 *   launcher -> governor  {"type":"request","attempt":A,"tool":T,"src":S,"class":C,"sig":K,
 *                          "cached":B,"check":B}  (through a compiler cache; a configure check)
 *   governor -> launcher  {"type":"wait","job":J}
 *                          (now and then while the request waits for memory: the governor
 *                          is alive and has not forgotten it)
 *   governor -> launcher  {"type":"admit","job":J}
 *   governor -> launcher  {"type":"cgroup","job":J,"dir":PATH}
 *                          (while the job runs: the cgroup the governor gave it once it had
 *                          run a tick; the launcher removes it should the governor go away)
 *   launcher -> governor  {"type":"done","job":J,"exit":E|null,"signal":S|null,"duration_ms":D,
 *                          "maxrss_bytes":M,"cache_hit":true|false|null}
 *                          (M: largest single process of the tool's tree; cache_hit: what
 *                          the compiler cache said, null when it said nothing)
 *   governor -> launcher  {"type":"ack","job":J,"retry":true|false,"reason":R}
 *
 * No message carries a pid: the governor learns the launcher's from the kernel
 * (SO_PEERCRED) and finds the tool as the launcher's child leading a process group of
 * its own. The launcher waits for the ack only when the tool was killed by SIGKILL,
 * since only such a job is run again; after any other end it closes the connection at
 * once. After an ack with retry the launcher sends a new request (attempt A+1) on the
 * same connection. A closed connection means the other side is gone.
 *
 * Bytes: a file name or command line need not be UTF-8, a JSON string must. A string
 * field that is not UTF-8 is sent as {"hex":H}, its bytes in hex, and decoded back to
 * exactly those bytes.
 *
 *   either way    {"type":"part","data":S,"more":B}
 *                          (a message longer than a line: its JSON text in pieces, the
 *                          last with more false; the receiver reads the whole as one)
 *
 * Limits: a line is at most PROTO_MAX_LINE bytes, a message sent in parts at most
 * PROTO_MAX_MESSAGE; every number is range-checked where it is decoded (PROTO_MAX_*
 * below), and a message with one out of range is rejected whole, like a line that is
 * no JSON object. */
#ifndef HEADROOM_PROTO_H
#define HEADROOM_PROTO_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

/* The longest line, its newline not counted; a connection's buffer never holds more. */
#define PROTO_MAX_LINE 65536
/* The longest message, sent in parts (the kernel passes a command at most 6 MiB of
 * arguments and environment; hex doubles what is not UTF-8). */
#define PROTO_MAX_MESSAGE (16 << 20)
/* The JSON text one part carries: escaped, a part's line stays within PROTO_MAX_LINE. */
#define PROTO_PART_BYTES 16384
/* The ranges a decoder accepts. */
#define PROTO_MAX_ATTEMPT 1000
#define PROTO_MAX_JOB INT32_MAX
#define PROTO_MAX_SIGNAL 127
#define PROTO_MAX_DURATION_MS (INT64_C(1) << 40)     /* 34 years */
#define PROTO_MAX_MAXRSS_BYTES (UINT64_C(1) << 50)   /* 1 PiB */

/* What the parts of unfinished messages may hold in all, over every connection: a
 * process that opens many and sends parts without end cannot take the governor's memory
 * (the connection that passes it is refused, as one past PROTO_MAX_MESSAGE is). */
#define PROTO_MAX_PARTS_HELD (4 * PROTO_MAX_MESSAGE)

struct proto_conn {
	int fd;
	char *buf; /* owned; at most PROTO_MAX_LINE + 1 bytes */
	size_t start, len;   /* the bytes not yet taken: buf[start..len) */
	char *part;          /* owned: the message whose parts have come so far */
	size_t part_len, part_cap;
};

void proto_conn_init(struct proto_conn *c, int fd);
/* Frees the buffer and closes fd. */
void proto_conn_close(struct proto_conn *c);
/* Send one message (a JSON object), in parts when it is longer than a line. 0, -E2BIG
 * when it is longer than PROTO_MAX_MESSAGE (nothing sent), or -errno. Does not take the
 * reference. */
int proto_send(int fd, json_t *msg);
/* Read what the socket has (one read call) into the buffer. >0 bytes read, 0 EOF, -errno;
 * -E2BIG when the buffer is full without a whole line (a line over PROTO_MAX_LINE). */
int proto_fill(struct proto_conn *c);
/* Take one complete message out of the buffer: 1 (*out set, caller decrefs), 0 none yet,
 * -EPROTO for a line that is not a JSON object (it is dropped: the next may be taken),
 * -E2BIG when the buffer is full without a whole line, or parts add up to more than
 * PROTO_MAX_MESSAGE. Parts are taken in and put together: *out is never a part. */
int proto_take(struct proto_conn *c, json_t **out);
/* Block until one message arrives, skipping lines that are no JSON object: 1, 0 on EOF,
 * or -errno (-E2BIG for a line too long). timeout_ms < 0 waits for ever; past it,
 * -ETIMEDOUT. */
int proto_recv(struct proto_conn *c, json_t **out, int timeout_ms);
/* The "type" string of a message, "" when absent. */
const char *proto_type(json_t *msg);

/* The messages, typed. Encoding gives a new reference (NULL when a string is NULL);
 * decoding reads the fields of a message whose type the caller has checked and returns
 * 0, or -EINVAL when a number is missing, of the wrong type or out of range, or a
 * string's hex is malformed or holds a NUL (the message is then to be ignored). A
 * string field that is absent or neither a string nor hex reads as "". The strings of
 * a decoded message point into it (hex is decoded into it): valid while the caller
 * holds msg. */
struct proto_request {
	int64_t attempt;          /* 1 first, +1 after each retry: 1..PROTO_MAX_ATTEMPT */
	const char *tool, *src, *class_key, *sig_key;
	int cached;               /* runs through a compiler cache (ccache, sccache); 0 when absent */
	int check;                /* a configure check (CMake's try_compile); 0 when absent */
};

struct proto_admit {
	int64_t job;              /* 1..PROTO_MAX_JOB, as are all job numbers */
};

struct proto_wait {
	int64_t job;
};

struct proto_cgroup {
	int64_t job;
	const char *dir;          /* the job's own cgroup directory; never "" */
};

struct proto_done {
	int64_t job;
	int has_exit;             /* exited: exit_code (0..255) is its status */
	int64_t exit_code;
	int has_signal;           /* killed: signal (1..PROTO_MAX_SIGNAL) is the signal */
	int64_t signal;
	int64_t duration_ms;      /* 0..PROTO_MAX_DURATION_MS */
	uint64_t maxrss_bytes;    /* largest single process of the tool's tree; 0: unknown; at most PROTO_MAX_MAXRSS_BYTES */
	int cache_hit;            /* the compiler cache's word: 1 a hit, 0 a miss, -1 unknown or absent */
};

struct proto_ack {
	int64_t job;
	int retry;                /* run the job again: a new request follows */
	const char *reason;       /* for people */
};

json_t *proto_request_encode(const struct proto_request *m);
int proto_request_decode(json_t *msg, struct proto_request *m);
json_t *proto_wait_encode(const struct proto_wait *m);
int proto_wait_decode(json_t *msg, struct proto_wait *m);
json_t *proto_admit_encode(const struct proto_admit *m);
int proto_admit_decode(json_t *msg, struct proto_admit *m);
json_t *proto_cgroup_encode(const struct proto_cgroup *m);
int proto_cgroup_decode(json_t *msg, struct proto_cgroup *m);
json_t *proto_done_encode(const struct proto_done *m);
int proto_done_decode(json_t *msg, struct proto_done *m);
json_t *proto_ack_encode(const struct proto_ack *m);
int proto_ack_decode(json_t *msg, struct proto_ack *m);
/* Encode and send one message: 0, -ENOMEM when it cannot be encoded, or -errno. */
int proto_send_request(int fd, const struct proto_request *m);
int proto_send_wait(int fd, const struct proto_wait *m);
int proto_send_admit(int fd, const struct proto_admit *m);
int proto_send_cgroup(int fd, const struct proto_cgroup *m);
int proto_send_done(int fd, const struct proto_done *m);
int proto_send_ack(int fd, const struct proto_ack *m);

#endif
