/* Process hygiene: a guardian that outlives headroom to resume what it stopped, reaping,
 * ending everything below headroom at the end, and keeping headroom itself alive. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "govern/gov.h"
#include "govern/governor.h"
#include "sys/fsutil.h"
#include "util/log.h"

void guard_reap(struct gov *g)
{
	int st;
	pid_t p;

	while ((p = waitpid(-1, &st, WNOHANG)) > 0) {
		if (p == g->build_pid) {
			g->build_status = st;
			g->build_done = 1;
		}
	}
}

/* Resuming is done this many times, this far apart: a process held while the table was
 * read, or started by one just resumed, is caught by the next round. */
#define RESUME_ROUNDS 3
#define RESUME_ROUND_US 50000
/* Without a pidfd, how often the guardian looks whether the build is gone. */
#define BUILD_GONE_POLL_US 200000
/* Ending everything: a killed process is usually gone within a millisecond, so the table
 * is read again after waits doubling from KILL_FAST_US, KILL_FAST_ROUNDS times, and then
 * every KILL_SLOW_US. */
#define KILL_FAST_ROUNDS 5
#define KILL_FAST_US 1000u
#define KILL_SLOW_US 20000u
/* The governor's OOM score adjustment as root: the OOM killer takes anything else first
 * (-1000 would exempt it altogether). */
#define GUARD_OOM_SCORE_ADJ "-900"

/* Resume every stopped process below build: what headroom held or froze. */
static void resume_below(pid_t build, const char *proc_root)
{
	struct proc_table t = { 0 };

	for (int round = 0; round < RESUME_ROUNDS; round++) {
		proc_table_read(proc_root, &t);
		for (size_t i = 0; i < t.n; i++)
			if ((t.v[i].state == 'T' || t.v[i].state == 't') && proc_table_is_descendant(&t, t.v[i].pid, build))
				kill(t.v[i].pid, SIGCONT);
		usleep(RESUME_ROUND_US);
	}
	proc_table_free(&t);
}

/* Until build has ended: its pidfd turns readable (it is no child of ours to wait for). */
static void wait_gone(pid_t build, int pidfd)
{
	struct pollfd p = { .fd = pidfd, .events = POLLIN };

	if (pidfd >= 0) {
		while (poll(&p, 1, -1) < 0 && errno == EINTR)
			;
		return;
	}
	while (!kill(build, 0))
		usleep(BUILD_GONE_POLL_US);
}

/* A guardian: a child that sleeps on a pipe only headroom writes to. If headroom dies,
 * even by SIGKILL, the pipe reads EOF and the guardian resumes every stopped process
 * below the build, so that no held or frozen job stays stopped forever; then it says so
 * and cleans up after headroom. When headroom ends normally it ends the guardian first
 * (guard_kill_everything). Returns the pipe's write end to keep open, or -1. */
int guard_start(struct gov *g)
{
	pid_t build = g->build_pid, gov = getpid();
	int fds[2];
	pid_t pid;
	char c;

	if (pipe2(fds, O_CLOEXEC))
		return -1;
	pid = fork();
	if (pid < 0) {
		close(fds[0]);
		close(fds[1]);
		return -1;
	}
	if (pid == 0) {
		/* nothing of headroom's: not its socket (launchers would wait on it), not
		 * the jobserver, not the terminal's Ctrl-C */
		if (fds[0] > 3)
			close_range(3, (unsigned)fds[0] - 1, 0);
		close_range((unsigned)fds[0] + 1, ~0U, 0);
		setpgid(0, 0);
		prctl(PR_SET_NAME, "headroom-guard");
		/* now, while the build is still ours and cannot have been reaped */
		int pidfd = (int)syscall(SYS_pidfd_open, build, 0);
		for (;;) { /* headroom never writes: this returns when it is gone */
			ssize_t r = read(fds[0], &c, 1);
			if (r < 0 && errno == EINTR)
				continue;
			break;
		}
		resume_below(build, g->o->proc_root);
		fprintf(stderr, "headroom: the governor (pid %d) is gone: the build runs on, ungoverned\n", (int)gov);
		if (g->sock_path)
			unlink(g->sock_path);
		if (g->sock_dir)
			rmdir(g->sock_dir);
		/* the shims are the build's compilers: they go only with it */
		if (g->o->shim_dir) {
			static const char *const shims[] = { "cc", "c++" };
			char path[PATH_MAX];

			wait_gone(build, pidfd);
			for (size_t i = 0; i < sizeof(shims) / sizeof(shims[0]); i++) {
				snprintf(path, sizeof(path), "%s/%s", g->o->shim_dir, shims[i]);
				unlink(path);
			}
			rmdir(g->o->shim_dir);
		}
		_exit(0);
	}
	close(fds[0]);
	g->guard_pid = pid;
	return fds[1];
}

/* End every process below headroom: the jobs first, then anything the build left. */
void guard_kill_everything(struct gov *g)
{
	pid_t self = getpid();

	for (size_t i = 0; i < g->njobs; i++) {
		job_signal(g, g->jobs[i], SIGKILL);
		job_signal(g, g->jobs[i], SIGCONT);
		if (g->jobs[i]->cg.version != CGROUP_NONE)
			cgroup_kill_all(&g->jobs[i]->cg);
	}
	for (int round = 0; round < 100; round++) {
		int found = 0;

		proc_table_read(g->o->proc_root, &g->procs);
		for (size_t i = 0; i < g->procs.n; i++) {
			const struct proc_entry *e = &g->procs.v[i];
			if (e->pid == self || e->state == 'Z' || !proc_table_is_descendant(&g->procs, e->pid, self))
				continue;
			kill(e->pid, SIGKILL);
			kill(e->pid, SIGCONT);
			found = 1;
		}
		guard_reap(g);
		if (!found)
			break;
		/* a killed process is usually gone within a millisecond: look again soon */
		usleep(round < KILL_FAST_ROUNDS ? KILL_FAST_US << round : KILL_SLOW_US);
	}
	guard_reap(g);
}

/* The governor's niceness as root (see guard_lock_self). */
#define GUARD_NICE (-5)

void guard_lock_self(void)
{
	struct rlimit rl;
	int lock = 1;

#ifdef __SANITIZE_ADDRESS__
	lock = 0; /* the sanitizer's shadow memory is terabytes of address space */
#endif
	/* Paged out, the governor could not act when it matters most. Only where the
	 * limit allows all of it: a partial lock would make later allocations fail. */
	if (lock && geteuid() != 0 &&
	    (getrlimit(RLIMIT_MEMLOCK, &rl) || (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < (256u << 20)))) {
		log_debug("not locking memory: RLIMIT_MEMLOCK too small");
		lock = 0;
	}
	if (lock && mlockall(MCL_CURRENT | MCL_FUTURE))
		log_debug("mlockall: %s", strerror(errno));
	/* Make the kernel's OOM killer pick anything but the governor (root only). */
	fs_write("/proc/self/oom_score_adj", GUARD_OOM_SCORE_ADJ);
	/* Every job waits on the governor's answer: on a machine whose CPUs the build
	 * itself fills, it should not wait its turn behind the compilers (root only; the
	 * build it starts gets its own niceness back). */
	if (setpriority(PRIO_PROCESS, 0, GUARD_NICE))
		log_debug("setpriority: %s", strerror(errno));
}
