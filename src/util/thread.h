/* Threads that take no signals. A command that takes its signals on its main thread (a
 * signalfd) blocks them there, and the kernel hands a process-directed signal to any
 * thread that has it unblocked: one such thread and SIGTERM's default action ends the
 * whole process (the command it watches orphaned), or a SIGCHLD is taken and lost. So
 * every thread starts with every signal blocked but the faults, which are its own. */
#ifndef HEADROOM_THREAD_H
#define HEADROOM_THREAD_H

#include <pthread.h>
#include <signal.h>

/* pthread_create, the new thread's signals blocked. 0 or -errno. */
int thread_start(pthread_t *th, void *(*fn)(void *), void *arg);
/* Block the signals on the calling thread (*saved: its mask before) around a library
 * call that starts threads of its own (libmicrohttpd's), which inherit the mask. */
void signals_hold(sigset_t *saved);
void signals_release(const sigset_t *saved);

#endif
