#include "sys/command.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "util/xalloc.h"

/* In the child: only system calls between fork and exec. */
static void run_child(int out_fd, char *const argv[], const char *cwd)
{
	int null = open("/dev/null", O_RDWR);

	if (null < 0 || dup2(null, 0) < 0 || dup2(null, 2) < 0 || dup2(out_fd, 1) < 0)
		_exit(127);
	if (cwd && chdir(cwd))
		_exit(127);
	execvp(argv[0], argv);
	_exit(127);
}

char *command_output(char *const argv[], const char *cwd)
{
	int fds[2];
	size_t got = 0;
	char *buf, drop[4096];
	pid_t pid;

	if (!argv[0] || pipe2(fds, O_CLOEXEC))
		return NULL;
	pid = fork();
	if (pid < 0) {
		close(fds[0]);
		close(fds[1]);
		return NULL;
	}
	if (pid == 0)
		run_child(fds[1], argv, cwd);
	close(fds[1]);
	buf = xmalloc(COMMAND_OUTPUT_MAX);
	for (;;) {
		/* Past the limit the output is still read, so that the program does not block. */
		int full = got + 1 >= COMMAND_OUTPUT_MAX;
		ssize_t n = full ? read(fds[0], drop, sizeof(drop)) : read(fds[0], buf + got, COMMAND_OUTPUT_MAX - 1 - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		if (!full)
			got += (size_t)n;
	}
	close(fds[0]);
	while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
		;
	buf[got] = '\0';
	if (!got) {
		free(buf);
		return NULL;
	}
	return buf;
}

char *command_first_line(char *const argv[], const char *cwd)
{
	char *out = command_output(argv, cwd);

	if (!out)
		return NULL;
	out[strcspn(out, "\n")] = '\0';
	if (!*out) {
		free(out);
		return NULL;
	}
	return out;
}
