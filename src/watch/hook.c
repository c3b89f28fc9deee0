#include "watch/hook.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/xalloc.h"

extern char **environ;

/* The environment is built before fork: the Prometheus thread may hold malloc's lock,
 * and a forked child of a threaded process may only call async-signal-safe functions. */
void hook_run(const char *cmd, const char *event, const char *msg, const char *json)
{
	size_t n = 0;
	char **envp, *argv[] = { "sh", "-c", (char *)cmd, NULL };

	while (environ[n])
		n++;
	envp = xcalloc(n + 4, sizeof(*envp));
	envp[0] = xasprintf("HEADROOM_EVENT=%s", event);
	envp[1] = xasprintf("HEADROOM_EVENT_MESSAGE=%s", msg);
	envp[2] = xasprintf("HEADROOM_EVENT_JSON=%s", json);
	for (size_t i = 0, k = 3; i < n; i++)
		if (strncmp(environ[i], "HEADROOM_EVENT", 14))
			envp[k++] = environ[i];
	if (fork() == 0) {
		execve("/bin/sh", argv, envp);
		_exit(127);
	}
	for (int i = 0; i < 3; i++)
		free(envp[i]);
	free(envp);
}
