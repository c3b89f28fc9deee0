/* Unix sockets by path (sys/usock.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "sys/usock.h"

static void test_listen_connect(void **state)
{
	char dir[] = "/tmp/headroom-usock.XXXXXX", path[64], buf[8] = { 0 };
	int lfd, cfd, afd;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/s", dir);
	lfd = usock_listen(path, 4);
	assert_true(lfd >= 0);
	assert_true(fcntl(lfd, F_GETFL) & O_NONBLOCK);
	assert_true(fcntl(lfd, F_GETFD) & FD_CLOEXEC);
	/* Nobody waiting: a non-blocking accept says so rather than hanging. */
	assert_int_equal(accept(lfd, NULL, NULL), -1);
	assert_int_equal(errno, EAGAIN);
	cfd = usock_connect(path);
	assert_true(cfd >= 0);
	assert_false(fcntl(cfd, F_GETFL) & O_NONBLOCK);
	afd = accept(lfd, NULL, NULL);
	assert_true(afd >= 0);
	assert_int_equal(write(cfd, "hi", 2), 2);
	assert_int_equal(read(afd, buf, sizeof(buf)), 2);
	assert_string_equal(buf, "hi");
	/* each end knows the other's pid from the kernel: here both are this process */
	pid_t peer = 0;
	assert_int_equal(usock_peer_pid(afd, &peer), 0);
	assert_int_equal(peer, getpid());
	peer = 0;
	assert_int_equal(usock_peer_pid(cfd, &peer), 0);
	assert_int_equal(peer, getpid());
	/* The path is taken: a second listener fails and leaks nothing. */
	assert_int_equal(usock_listen(path, 4), -EADDRINUSE);
	close(afd);
	close(cfd);
	close(lfd);
	unlink(path);
	assert_int_equal(usock_connect(path), -ENOENT);
	rmdir(dir);
}

static void test_too_long(void **state)
{
	char path[200];

	(void)state;
	memset(path, 'a', sizeof(path) - 1);
	path[0] = '/';
	path[sizeof(path) - 1] = '\0';
	assert_int_equal(usock_listen(path, 1), -ENAMETOOLONG);
	assert_int_equal(usock_connect(path), -ENAMETOOLONG);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_listen_connect),
		cmocka_unit_test(test_too_long),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
