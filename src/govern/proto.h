/* The launcher protocol: JSON objects, one per line, over the governor's unix socket.
 *
 *   launcher -> governor  {"type":"request","pid":P,"attempt":A,"tool":T,"src":S,"class":C,"sig":K}
 *   governor -> launcher  {"type":"admit","job":J,"cgroup":PATH|null}
 *   launcher -> governor  {"type":"started","job":J,"pid":CHILD}
 *   launcher -> governor  {"type":"done","job":J,"exit":E|null,"signal":S|null,"duration_ms":D,
 *                          "maxrss_bytes":M}   (M: largest single process of the tool's tree)
 *   governor -> launcher  {"type":"ack","job":J,"retry":true|false,"reason":R}
 *
 * After an ack with retry the launcher sends a new request (attempt A+1) on the same
 * connection. A closed connection means the other side is gone. */
#ifndef HEADROOM_PROTO_H
#define HEADROOM_PROTO_H

#include <jansson.h>
#include <stddef.h>

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

#endif
