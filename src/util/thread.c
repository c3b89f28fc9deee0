#include "util/thread.h"

#include <errno.h>

/* Faults are delivered to the thread that caused them whatever its mask; blocked, the
 * kernel would bypass their handlers (the sanitizers' reports) and simply kill. */
static const int faults[] = { SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGSYS };

void signals_hold(sigset_t *saved)
{
	sigset_t all;

	sigfillset(&all);
	for (size_t i = 0; i < sizeof(faults) / sizeof(faults[0]); i++)
		sigdelset(&all, faults[i]);
	pthread_sigmask(SIG_BLOCK, &all, saved);
}

void signals_release(const sigset_t *saved)
{
	pthread_sigmask(SIG_SETMASK, saved, NULL);
}

int thread_start(pthread_t *th, void *(*fn)(void *), void *arg)
{
	sigset_t saved;
	int rc;

	signals_hold(&saved);
	rc = pthread_create(th, NULL, fn, arg);
	signals_release(&saved);
	return -rc;
}
