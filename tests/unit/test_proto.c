/* The launcher protocol, and `headroom exec` against a scripted governor. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "govern/proto.h"
#include "util/strbuf.h"

static void test_framing(void **state)
{
	int sv[2];
	struct proto_conn c;
	json_t *m;

	(void)state;
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	proto_conn_init(&c, sv[1]);
	m = json_pack("{s:s, s:i}", "type", "request", "attempt", 1);
	assert_int_equal(proto_send(sv[0], m), 0);
	assert_int_equal(proto_send(sv[0], m), 0);
	json_decref(m);
	/* a line in two pieces is one message */
	assert_int_equal(write(sv[0], "{\"type\":\"do", 11), 11);
	assert_int_equal(proto_recv(&c, &m, -1), 1);
	assert_string_equal(proto_type(m), "request");
	json_decref(m);
	assert_int_equal(proto_recv(&c, &m, -1), 1);
	json_decref(m);
	/* lines that are no JSON object are dropped, and the next line is still taken */
	assert_int_equal(write(sv[0], "ne\"}\nnot json\n[1]\n{\"type\":\"ack\"}\n", 33), 33);
	assert_int_equal(proto_recv(&c, &m, -1), 1);
	assert_string_equal(proto_type(m), "done");
	json_decref(m);
	assert_int_equal(proto_take(&c, &m), -EPROTO);
	assert_int_equal(proto_take(&c, &m), -EPROTO); /* an array is not a message */
	assert_int_equal(proto_take(&c, &m), 1);
	assert_string_equal(proto_type(m), "ack");
	json_decref(m);
	/* nothing more: a bounded wait says so */
	assert_int_equal(proto_recv(&c, &m, 50), -ETIMEDOUT);
	close(sv[0]);
	assert_int_equal(proto_recv(&c, &m, -1), 0); /* EOF */
	proto_conn_close(&c);
}

/* A line longer than PROTO_MAX_LINE is refused, and the buffer never holds more than one. */
static void test_line_limit(void **state)
{
	int sv[2];
	struct proto_conn c;
	json_t *m;
	static char big[PROTO_MAX_LINE + 4096];

	(void)state;
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	proto_conn_init(&c, sv[1]);
	memset(big, 'x', sizeof(big));
	/* a line of exactly the limit is taken (no JSON: dropped as such) */
	big[PROTO_MAX_LINE] = '\n';
	assert_int_equal(write(sv[0], big, PROTO_MAX_LINE + 1), PROTO_MAX_LINE + 1);
	while (c.len < PROTO_MAX_LINE + 1)
		assert_true(proto_fill(&c) > 0);
	assert_int_equal(proto_take(&c, &m), -EPROTO);
	assert_int_equal(c.len, 0);
	/* one byte more and no newline: the buffer is full, the line refused */
	big[PROTO_MAX_LINE] = 'x';
	assert_int_equal(fcntl(sv[1], F_SETFL, O_NONBLOCK), 0);
	assert_int_equal(write(sv[0], big, sizeof(big)), (ssize_t)sizeof(big));
	int rc;
	while ((rc = proto_fill(&c)) > 0)
		;
	assert_int_equal(rc, -E2BIG);
	assert_int_equal(c.len, PROTO_MAX_LINE + 1);
	assert_int_equal(proto_take(&c, &m), -E2BIG);
	assert_int_equal(proto_recv(&c, &m, 100), -E2BIG);
	close(sv[0]);
	proto_conn_close(&c);
}

/* Each message encodes to the protocol's bytes and decodes back to what was encoded. */
static void assert_bytes(json_t *msg, const char *want)
{
	char *s;

	assert_non_null(msg);
	s = json_dumps(msg, JSON_COMPACT);
	assert_string_equal(s, want);
	free(s);
}

static json_t *parse(const char *text)
{
	json_t *m = json_loads(text, 0, NULL);

	assert_non_null(m);
	return m;
}

static void test_request_roundtrip(void **state)
{
	struct proto_request in = { 2, "nvcc", "k.cu", "nvcc -O3", "nvcc -O3 :: k.cu", 1, 0 }, out;
	json_t *m = proto_request_encode(&in);

	(void)state;
	assert_bytes(m, "{\"type\":\"request\",\"attempt\":2,\"tool\":\"nvcc\",\"src\":\"k.cu\","
			"\"class\":\"nvcc -O3\",\"sig\":\"nvcc -O3 :: k.cu\",\"cached\":true,\"check\":false}");
	assert_string_equal(proto_type(m), "request");
	assert_int_equal(proto_request_decode(m, &out), 0);
	assert_int_equal(out.attempt, 2);
	assert_string_equal(out.tool, "nvcc");
	assert_string_equal(out.src, "k.cu");
	assert_string_equal(out.class_key, "nvcc -O3");
	assert_string_equal(out.sig_key, "nvcc -O3 :: k.cu");
	assert_true(out.cached);
	assert_false(out.check);
	json_decref(m);
	/* strings left out read as empty */
	m = parse("{\"type\":\"request\",\"attempt\":1}");
	assert_int_equal(proto_request_decode(m, &out), 0);
	assert_string_equal(out.tool, "");
	assert_string_equal(out.sig_key, "");
	assert_false(out.cached);
	json_decref(m);
	/* the attempt is a number in range, or the request is refused */
	static const char *const bad[] = {
		"{\"type\":\"request\"}", "{\"type\":\"request\",\"attempt\":0}",
		"{\"type\":\"request\",\"attempt\":-1}", "{\"type\":\"request\",\"attempt\":1001}",
		"{\"type\":\"request\",\"attempt\":4294967297}", "{\"type\":\"request\",\"attempt\":1.0}",
		"{\"type\":\"request\",\"attempt\":\"1\"}",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		m = parse(bad[i]);
		assert_int_equal(proto_request_decode(m, &out), -EINVAL);
		json_decref(m);
	}
}

static void test_admit_wait_roundtrip(void **state)
{
	struct proto_admit in = { 7 }, out;
	struct proto_wait win = { 9 }, wout;
	json_t *m = proto_admit_encode(&in);

	(void)state;
	assert_bytes(m, "{\"type\":\"admit\",\"job\":7}");
	assert_int_equal(proto_admit_decode(m, &out), 0);
	assert_int_equal(out.job, 7);
	json_decref(m);
	m = proto_wait_encode(&win);
	assert_bytes(m, "{\"type\":\"wait\",\"job\":9}");
	assert_int_equal(proto_wait_decode(m, &wout), 0);
	assert_int_equal(wout.job, 9);
	json_decref(m);
	m = parse("{\"type\":\"admit\",\"job\":0}");
	assert_int_equal(proto_admit_decode(m, &out), -EINVAL);
	json_decref(m);
	m = parse("{\"type\":\"admit\",\"job\":2147483648}");
	assert_int_equal(proto_admit_decode(m, &out), -EINVAL);
	json_decref(m);
}

static void test_cgroup_roundtrip(void **state)
{
	struct proto_cgroup in = { 7, "/sys/fs/cgroup/b/headroom-1-job7" }, out;
	json_t *m = proto_cgroup_encode(&in);

	(void)state;
	assert_bytes(m, "{\"type\":\"cgroup\",\"job\":7,\"dir\":\"/sys/fs/cgroup/b/headroom-1-job7\"}");
	assert_int_equal(proto_cgroup_decode(m, &out), 0);
	assert_int_equal(out.job, 7);
	assert_string_equal(out.dir, in.dir);
	json_decref(m);
	/* a directory that is no UTF-8 goes as hex and comes back; none is no message */
	in.dir = "/sys/fs/cgroup/\xff";
	m = proto_cgroup_encode(&in);
	assert_non_null(m);
	assert_int_equal(proto_cgroup_decode(m, &out), 0);
	assert_string_equal(out.dir, in.dir);
	json_decref(m);
	m = parse("{\"type\":\"cgroup\",\"job\":7,\"dir\":\"\"}");
	assert_int_equal(proto_cgroup_decode(m, &out), -EINVAL);
	json_decref(m);
}

static void test_done_roundtrip(void **state)
{
	struct proto_done in = { .job = 7, .has_exit = 1, .exit_code = 3, .duration_ms = 1500,
				 .maxrss_bytes = 5ULL << 30, .cache_hit = -1 }, out;
	json_t *m = proto_done_encode(&in);

	(void)state;
	assert_bytes(m, "{\"type\":\"done\",\"job\":7,\"duration_ms\":1500,\"maxrss_bytes\":5368709120,"
			"\"exit\":3,\"signal\":null,\"cache_hit\":null}");
	assert_int_equal(proto_done_decode(m, &out), 0);
	assert_int_equal(out.job, 7);
	assert_true(out.has_exit);
	assert_int_equal(out.exit_code, 3);
	assert_false(out.has_signal);
	assert_int_equal(out.duration_ms, 1500);
	assert_int_equal(out.maxrss_bytes, 5ULL << 30);
	assert_int_equal(out.cache_hit, -1);
	json_decref(m);
	in = (struct proto_done){ .job = 8, .has_signal = 1, .signal = 9, .cache_hit = 1 };
	m = proto_done_encode(&in);
	assert_bytes(m, "{\"type\":\"done\",\"job\":8,\"duration_ms\":0,\"maxrss_bytes\":0,"
			"\"exit\":null,\"signal\":9,\"cache_hit\":true}");
	assert_int_equal(proto_done_decode(m, &out), 0);
	assert_int_equal(out.cache_hit, 1);
	assert_false(out.has_exit);
	assert_true(out.has_signal);
	assert_int_equal(out.signal, 9);
	json_decref(m);
	/* issue 12: a peak of -1 was stored as 16 EiB; every number is range-checked */
	static const char *const bad[] = {
		"{\"job\":7,\"duration_ms\":1,\"maxrss_bytes\":-1,\"exit\":0}",
		"{\"job\":7,\"duration_ms\":1,\"maxrss_bytes\":1125899906842625,\"exit\":0}",
		"{\"job\":7,\"duration_ms\":-5,\"maxrss_bytes\":0,\"exit\":0}",
		"{\"job\":7,\"duration_ms\":1,\"maxrss_bytes\":0,\"exit\":256}",
		"{\"job\":7,\"duration_ms\":1,\"maxrss_bytes\":0,\"exit\":-1}",
		"{\"job\":7,\"duration_ms\":1,\"maxrss_bytes\":0,\"signal\":0}",
		"{\"job\":7,\"duration_ms\":1,\"maxrss_bytes\":0,\"signal\":4294967305}",
		"{\"job\":7,\"duration_ms\":1,\"maxrss_bytes\":0,\"exit\":0,\"signal\":9}",
		"{\"job\":7,\"maxrss_bytes\":0,\"exit\":0}",
		"{\"job\":-7,\"duration_ms\":1,\"maxrss_bytes\":0,\"exit\":0}",
		"{\"duration_ms\":1,\"maxrss_bytes\":0,\"exit\":0}",
		"{\"job\":7,\"duration_ms\":1,\"maxrss_bytes\":1e308,\"exit\":0}",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		m = parse(bad[i]);
		assert_int_equal(proto_done_decode(m, &out), -EINVAL);
		json_decref(m);
	}
	/* the largest peak accepted */
	m = parse("{\"job\":7,\"duration_ms\":1,\"maxrss_bytes\":1125899906842624,\"exit\":0}");
	assert_int_equal(proto_done_decode(m, &out), 0);
	assert_int_equal(out.maxrss_bytes, PROTO_MAX_MAXRSS_BYTES);
	json_decref(m);
}

static void test_ack_roundtrip(void **state)
{
	struct proto_ack in = { 7, 1, "killed by headroom to save memory" }, out;
	json_t *m = proto_ack_encode(&in);

	(void)state;
	assert_bytes(m, "{\"type\":\"ack\",\"job\":7,\"retry\":true,\"reason\":\"killed by headroom to save memory\"}");
	assert_int_equal(proto_ack_decode(m, &out), 0);
	assert_int_equal(out.job, 7);
	assert_true(out.retry);
	assert_string_equal(out.reason, in.reason);
	json_decref(m);
	in.retry = 0;
	in.reason = "finished";
	m = proto_ack_encode(&in);
	assert_bytes(m, "{\"type\":\"ack\",\"job\":7,\"retry\":false,\"reason\":\"finished\"}");
	assert_int_equal(proto_ack_decode(m, &out), 0);
	assert_false(out.retry);
	json_decref(m);
}

/* What proto_send_* put on the socket: the encoded message and a newline. */
static void test_send_line(void **state)
{
	int sv[2];
	char buf[256];

	(void)state;
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	assert_int_equal(proto_send_admit(sv[0], &(struct proto_admit){ 1 }), 0);
	ssize_t n = read(sv[1], buf, sizeof(buf) - 1);
	assert_true(n > 0);
	buf[n] = 0;
	assert_string_equal(buf, "{\"type\":\"admit\",\"job\":1}\n");
	close(sv[0]);
	close(sv[1]);
}

static char dir[] = "/tmp/headroom-test-proto.XXXXXX";

static int listen_at(const char *path)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);

	snprintf(a.sun_path, sizeof(a.sun_path), "%s", path);
	assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(fd, 4), 0);
	return fd;
}

static pid_t start_exec(const char *sock, char **argv)
{
	pid_t pid = fork();

	if (pid == 0) {
		/* The launcher as the build tool runs it: the built headroom, `headroom exec`. */
		const char *bin = getenv("HEADROOM_BIN");
		setenv("HEADROOM_SOCK", sock, 1);
		execv(bin && *bin ? bin : "./headroom", argv);
		_exit(127);
	}
	return pid;
}

static json_t *expect(struct proto_conn *c, const char *type)
{
	json_t *m = NULL;

	assert_int_equal(proto_recv(c, &m, -1), 1);
	assert_string_equal(proto_type(m), type);
	return m;
}

/* The first attempt dies by SIGKILL (as when the governor kills it) and the governor
 * says retry; the launcher runs the tool again, and the build tool sees only the second
 * attempt's success. After an end that is no SIGKILL it waits for no answer. */
static void test_exec_retry(void **state)
{
	char sock[256], out[256], cmd[1024];
	struct proto_conn c;
	int lfd, st;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(sock, sizeof(sock), "%s/gov.sock", dir);
	snprintf(out, sizeof(out), "%s/runs", dir);
	snprintf(cmd, sizeof(cmd), "echo run >> %s; [ $(wc -l < %s) -ge 2 ] || kill -KILL $$", out, out);
	lfd = listen_at(sock);
	char *argv[] = { "headroom", "exec", "--", "sh", "-c", cmd, NULL };
	pid_t pid = start_exec(sock, argv);
	proto_conn_init(&c, accept(lfd, NULL, NULL));

	for (int attempt = 1; attempt <= 2; attempt++) {
		json_t *m = expect(&c, "request");
		assert_int_equal(json_integer_value(json_object_get(m, "attempt")), attempt);
		assert_string_equal(json_string_value(json_object_get(m, "tool")), "sh");
		json_decref(m);
		m = json_pack("{s:s, s:i}", "type", "admit", "job", 7);
		proto_send(c.fd, m);
		json_decref(m);
		m = expect(&c, "done");
		if (attempt == 1) {
			assert_true(json_is_null(json_object_get(m, "exit")));
			assert_int_equal(json_integer_value(json_object_get(m, "signal")), SIGKILL);
		} else {
			assert_int_equal(json_integer_value(json_object_get(m, "exit")), 0);
			assert_true(json_is_null(json_object_get(m, "signal")));
		}
		assert_true(json_integer_value(json_object_get(m, "maxrss_bytes")) > 0);
		json_decref(m);
		if (attempt == 2)
			break; /* no ack: the launcher must end without one */
		m = json_pack("{s:s, s:i, s:b}", "type", "ack", "job", 7, "retry", 1);
		proto_send(c.fd, m);
		json_decref(m);
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	FILE *f = fopen(out, "r");
	char line[16];
	int runs = 0;
	while (f && fgets(line, sizeof(line), f))
		runs++;
	if (f)
		fclose(f);
	assert_int_equal(runs, 2);
	proto_conn_close(&c);
	close(lfd);
	unlink(sock);
	unlink(out);
}

/* A failing tool's status reaches the build tool unchanged. */
static void test_exec_status_passthrough(void **state)
{
	char sock[256];
	struct proto_conn c;
	int lfd, st;
	json_t *m;

	(void)state;
	snprintf(sock, sizeof(sock), "%s/gov2.sock", dir);
	lfd = listen_at(sock);
	char *argv[] = { "headroom", "exec", "sh", "-c", "exit 3", NULL };
	pid_t pid = start_exec(sock, argv);
	proto_conn_init(&c, accept(lfd, NULL, NULL));
	json_decref(expect(&c, "request"));
	m = json_pack("{s:s, s:i}", "type", "admit", "job", 1);
	proto_send(c.fd, m);
	json_decref(m);
	m = expect(&c, "done");
	assert_int_equal(json_integer_value(json_object_get(m, "exit")), 3);
	json_decref(m);
	m = json_pack("{s:s, s:i, s:b}", "type", "ack", "job", 1, "retry", 0);
	proto_send(c.fd, m);
	json_decref(m);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_int_equal(WEXITSTATUS(st), 3);
	proto_conn_close(&c);
	close(lfd);
	unlink(sock);
}

/* The governor hangs up before admitting: the tool still runs, as if ungoverned. */
static void test_exec_governor_gone(void **state)
{
	char sock[256];
	int lfd, st, cfd;

	(void)state;
	snprintf(sock, sizeof(sock), "%s/gov3.sock", dir);
	lfd = listen_at(sock);
	char *argv[] = { "headroom", "exec", "sh", "-c", "exit 5", NULL };
	pid_t pid = start_exec(sock, argv);
	cfd = accept(lfd, NULL, NULL);
	close(cfd);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_int_equal(WEXITSTATUS(st), 5);
	close(lfd);
	unlink(sock);
	rmdir(dir);
}

/* File names and flags are bytes: what is no UTF-8 goes as hex and comes back exactly. */
static void test_request_bytes(void **state)
{
	struct proto_request in = { 1, "nvcc", "k\xff\xfe.cu", "nvcc -D\x80", "nvcc -D\x80 :: k\xff\xfe.cu", 0, 0 }, out;
	json_t *m = proto_request_encode(&in);
	char *text;

	(void)state;
	assert_non_null(m);
	text = json_dumps(m, JSON_COMPACT);
	assert_non_null(text);
	assert_non_null(strstr(text, "\"src\":{\"hex\":\"6bfffe2e6375\"}"));
	assert_string_equal(strstr(text, "\"tool\":\"nvcc\""), strstr(text, "\"tool\""));
	json_decref(m);
	m = parse(text);
	free(text);
	assert_int_equal(proto_request_decode(m, &out), 0);
	assert_string_equal(out.tool, "nvcc");
	assert_string_equal(out.src, "k\xff\xfe.cu");
	assert_string_equal(out.class_key, "nvcc -D\x80");
	assert_string_equal(out.sig_key, "nvcc -D\x80 :: k\xff\xfe.cu");
	json_decref(m);
	/* malformed hex, or a NUL no C string can hold: the request is refused */
	static const char *const bad[] = {
		"{\"type\":\"request\",\"attempt\":1,\"src\":{\"hex\":\"6\"}}",
		"{\"type\":\"request\",\"attempt\":1,\"src\":{\"hex\":\"zz\"}}",
		"{\"type\":\"request\",\"attempt\":1,\"src\":{\"hex\":\"6100\"}}",
		"{\"type\":\"request\",\"attempt\":1,\"src\":{\"hex\":1}}",
		"{\"type\":\"request\",\"attempt\":1,\"src\":{}}",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		m = parse(bad[i]);
		assert_int_equal(proto_request_decode(m, &out), -EINVAL);
		json_decref(m);
	}
}

/* A message longer than a line goes in parts and is read back whole, exactly; one past
 * PROTO_MAX_MESSAGE is not sent at all. */
static void test_long_message_parts(void **state)
{
	struct strbuf flags = STRBUF_INIT;
	int sv[2];
	struct proto_conn c;
	struct proto_request out;
	json_t *m;
	pid_t pid;
	int st;

	(void)state;
	strbuf_add(&flags, "nvcc \xce\xbb");
	for (int i = 0; i < 2000; i++)
		strbuf_addf(&flags, " -gencode arch=compute_%d,code=\"sm_%d\" -D\xce\xbb=\\%d", i, i, i);
	struct proto_request in = { 3, "nvcc", "k.cu", strbuf_str(&flags), "sig", 0, 0 };
	assert_true(strlen(in.class_key) > PROTO_MAX_LINE);
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(sv[1]);
		_exit(proto_send_request(sv[0], &in) || proto_send_wait(sv[0], &(struct proto_wait){ 7 }) ? 1 : 0);
	}
	close(sv[0]);
	proto_conn_init(&c, sv[1]);
	assert_int_equal(proto_recv(&c, &m, 10000), 1);
	assert_string_equal(proto_type(m), "request");
	assert_int_equal(proto_request_decode(m, &out), 0);
	assert_int_equal(out.attempt, 3);
	assert_string_equal(out.class_key, in.class_key);
	json_decref(m);
	/* the next message is taken as usual */
	assert_int_equal(proto_recv(&c, &m, 10000), 1);
	assert_string_equal(proto_type(m), "wait");
	json_decref(m);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	proto_conn_close(&c);
	strbuf_release(&flags);

	/* past the limit: -E2BIG, and nothing was written */
	char *huge = malloc(PROTO_MAX_MESSAGE + 2);
	assert_non_null(huge);
	memset(huge, 'x', PROTO_MAX_MESSAGE + 1);
	huge[PROTO_MAX_MESSAGE + 1] = '\0';
	in.class_key = huge;
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	assert_int_equal(proto_send_request(sv[0], &in), -E2BIG);
	assert_int_equal(fcntl(sv[1], F_SETFL, O_NONBLOCK), 0);
	char b;
	assert_int_equal(read(sv[1], &b, 1), -1);
	assert_int_equal(errno, EAGAIN);
	close(sv[0]);
	close(sv[1]);
	free(huge);
}

/* Parts that add up past PROTO_MAX_MESSAGE are refused like a line too long. */
/* A part's data in the tests below: most of a line. */
#define PART_BYTES 60000

/* Send c parts of the same message (more to come) through w until bytes are sent, taking
 * each as it comes: 0, or what proto_take said first that was not 0. */
static int feed_parts(struct proto_conn *c, int w, size_t bytes)
{
	static char line[PART_BYTES + 64];
	size_t len = (size_t)snprintf(line, sizeof(line), "{\"type\":\"part\",\"data\":\"%0*d\",\"more\":true}\n",
				      PART_BYTES, 0);
	json_t *m;

	for (size_t sent = 0; sent < bytes; sent += PART_BYTES) {
		assert_int_equal(write(w, line, len), (ssize_t)len);
		while (c->len - c->start < len)
			assert_true(proto_fill(c) > 0);
		int rc = proto_take(c, &m);
		if (rc)
			return rc;
	}
	return 0;
}

static void test_parts_limit(void **state)
{
	int sv[2];
	struct proto_conn c;
	json_t *m;

	(void)state;
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	proto_conn_init(&c, sv[1]);
	/* a part without its data is dropped; a lone last part with no object in it too */
	const char *lines = "{\"type\":\"part\",\"more\":true}\n{\"type\":\"part\",\"data\":\"[1]\",\"more\":false}\n"
			    "{\"type\":\"part\",\"data\":\"{\\\"type\\\":\",\"more\":true}\n"
			    "{\"type\":\"part\",\"data\":\"\\\"ack\\\"}\",\"more\":false}\n";
	assert_int_equal(write(sv[0], lines, strlen(lines)), (ssize_t)strlen(lines));
	assert_int_equal(proto_fill(&c) > 0, 1);
	assert_int_equal(proto_take(&c, &m), -EPROTO);
	assert_int_equal(proto_take(&c, &m), -EPROTO);
	assert_int_equal(proto_take(&c, &m), 1);
	assert_string_equal(proto_type(m), "ack");
	json_decref(m);
	/* one message past its limit is refused */
	assert_int_equal(feed_parts(&c, sv[0], PROTO_MAX_MESSAGE + PART_BYTES), -E2BIG);
	close(sv[0]);
	proto_conn_close(&c);
}

/* Many connections each holding most of a message: past what all may hold, the one that
 * asks for more is refused; once another lets go, it is taken again. */
static void test_parts_held(void **state)
{
	enum { N = PROTO_MAX_PARTS_HELD / PROTO_MAX_MESSAGE + 1 };
	int sv[N][2];
	struct proto_conn c[N];

	(void)state;
	for (int i = 0; i < N; i++) {
		assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv[i]), 0);
		proto_conn_init(&c[i], sv[i][1]);
	}
	for (int i = 0; i < N - 1; i++)
		assert_int_equal(feed_parts(&c[i], sv[i][0], PROTO_MAX_MESSAGE - 2 * PART_BYTES), 0);
	assert_int_equal(feed_parts(&c[N - 1], sv[N - 1][0], PROTO_MAX_MESSAGE - 2 * PART_BYTES), -E2BIG);
	close(sv[0][0]);
	proto_conn_close(&c[0]);
	assert_int_equal(feed_parts(&c[N - 1], sv[N - 1][0], PROTO_MAX_MESSAGE - 2 * PART_BYTES), 0);
	for (int i = 1; i < N; i++) {
		close(sv[i][0]);
		proto_conn_close(&c[i]);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_framing),
		cmocka_unit_test(test_request_roundtrip),
		cmocka_unit_test(test_request_bytes),
		cmocka_unit_test(test_long_message_parts),
		cmocka_unit_test(test_parts_limit),
		cmocka_unit_test(test_parts_held),
		cmocka_unit_test(test_line_limit),
		cmocka_unit_test(test_admit_wait_roundtrip),
		cmocka_unit_test(test_cgroup_roundtrip),
		cmocka_unit_test(test_done_roundtrip),
		cmocka_unit_test(test_ack_roundtrip),
		cmocka_unit_test(test_send_line),
		cmocka_unit_test(test_exec_retry),
		cmocka_unit_test(test_exec_status_passthrough),
		cmocka_unit_test(test_exec_governor_gone),
	};
	return cmocka_run_group_tests_name("proto", tests, NULL, NULL);
}
