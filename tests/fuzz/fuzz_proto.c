/* libFuzzer target: the launcher protocol as the governor reads it. The input arrives on
 * a socket as a client would send it; every message taken is decoded by its type and
 * encoded again. */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "govern/proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Decode by type; a message that decodes (its numbers in range) is encoded again. */
#define ROUNDTRIP(name, m, again)                                             \
	do {                                                                  \
		struct proto_##name x;                                        \
		if (!proto_##name##_decode((m), &x))                          \
			(again) = proto_##name##_encode(&x);                  \
	} while (0)

static void decode(json_t *m)
{
	const char *type = proto_type(m);
	json_t *again = NULL;

	if (!strcmp(type, "request"))
		ROUNDTRIP(request, m, again);
	else if (!strcmp(type, "wait"))
		ROUNDTRIP(wait, m, again);
	else if (!strcmp(type, "admit"))
		ROUNDTRIP(admit, m, again);
	else if (!strcmp(type, "cgroup"))
		ROUNDTRIP(cgroup, m, again);
	else if (!strcmp(type, "done"))
		ROUNDTRIP(done, m, again);
	else if (!strcmp(type, "ack"))
		ROUNDTRIP(ack, m, again);
	json_decref(again);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct proto_conn c;
	size_t off = 0;
	int sv[2];

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv))
		return 0;
	/* The whole input fits the socket's buffer at libFuzzer's -max_len. */
	while (off < size) {
		ssize_t n = write(sv[0], data + off, size - off);
		if (n <= 0)
			break;
		off += (size_t)n;
	}
	close(sv[0]);
	proto_conn_init(&c, sv[1]);
	/* Bounded: every round takes a line or reads at least a byte. */
	for (size_t round = 0; round <= 2 * size + 2; round++) {
		json_t *m = NULL;
		int rc = proto_take(&c, &m);

		if (rc == 1) {
			decode(m);
			json_decref(m);
			continue;
		}
		if (rc == -EPROTO)
			continue; /* the governor drops the line and reads on */
		if (rc < 0 || proto_fill(&c) <= 0)
			break; /* an over-long line ends the connection, as EOF does */
	}
	proto_conn_close(&c);
	return 0;
}
