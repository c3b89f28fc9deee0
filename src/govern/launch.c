#include "govern/launch.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "govern/proto.h"
#include "govern/signature.h"
#include "sys/cgroup.h"
#include "sys/fsutil.h"
#include "sys/usock.h"
#include "util/log.h"
#include "util/path.h"
#include "util/units.h"
#include "util/xalloc.h"

/* The governor decides about retries; this only stops a confused one from looping. */
#define LAUNCHER_MAX_ATTEMPTS 10

static volatile sig_atomic_t child_pgid;

static void forward(int sig)
{
	if (child_pgid > 0)
		kill(-(pid_t)child_pgid, sig);
}

static int exec_failed_status(int e)
{
	return e == ENOENT || e == ENOTDIR ? EXIT_NOTFOUND : EXIT_NOEXEC;
}

void launch_direct(char **argv)
{
	execvp(argv[0], argv);
	int e = errno;
	log_warn("cannot run %s: %s", argv[0], strerror(e));
	exit(exec_failed_status(e));
}

/* Die the way the tool died, so that the build tool sees exactly what it would have. */
static noreturn void pass_on(int wstatus)
{
	if (wstatus < 0)
		exit(EXIT_INTERNAL);
	if (WIFSIGNALED(wstatus)) {
		int sig = WTERMSIG(wstatus);
		sigset_t set;

		signal(sig, SIG_DFL);
		sigemptyset(&set);
		sigaddset(&set, sig);
		sigprocmask(SIG_UNBLOCK, &set, NULL);
		kill(getpid(), sig);
	}
	exit(exit_status_of(wstatus));
}

/* What the child does between vfork and exec, prepared by the parent: the child shares
 * the parent's memory until it execs, so it allocates nothing and touches only this.
 * (Its cgroup, if it lives long enough to get one, is the governor's to give.) */
struct spawn_ctx {
	char **argv;
	int errpipe;
};

static pid_t spawn(struct spawn_ctx *c)
{
	static const int dfl[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT };
	pid_t pid;

	/* vfork: a fork would copy the launcher's page tables and then fault on every page
	 * it writes after, as much work as the launcher's own start-up; the launcher waits
	 * here until the child has exec'd or failed, which is all it would do anyway. */
	pid = vfork();
	if (pid != 0)
		return pid;
	/* A process group of its own: the governor freezes and kills the job as one. */
	setpgid(0, 0);
	for (size_t i = 0; i < sizeof(dfl) / sizeof(dfl[0]); i++)
		signal(dfl[i], SIG_DFL);
	/* When memory runs out, the kernel should pick a compiler, never sshd. */
	fs_write("/proc/self/oom_score_adj", "500");
	execvp(c->argv[0], c->argv);
	int e = errno;
	if (write(c->errpipe, &e, sizeof(e)) < 0)
		_exit(EXIT_INTERNAL);
	_exit(exec_failed_status(e));
}

static void on_sigchld(int sig)
{
	(void)sig; /* only to interrupt ppoll */
}

/* Take what the governor sent while the job runs: the job's cgroup (*cg_dir, replaced). */
static void take_messages(struct proto_conn *conn, char **cg_dir)
{
	json_t *msg;

	while (proto_take(conn, &msg) == 1) {
		struct proto_cgroup m;

		if (!strcmp(proto_type(msg), "cgroup") && !proto_cgroup_decode(msg, &m)) {
			free(*cg_dir);
			*cg_dir = xstrdup(m.dir);
		}
		json_decref(msg);
	}
}

/* Wait for the tool, forwarding interrupts to its process group, and watching the
 * governor: if it dies while the job is frozen, nobody else would ever thaw it.
 * *maxrss_bytes gets the largest resident set of any one process of its tree: a floor
 * under the job's peak that even a job shorter than the governor's sampling leaves.
 * *cg_dir gets the job's cgroup when the governor gives it one.
 * Returns the wait status, or -1. */
static int wait_child(pid_t pid, struct proto_conn *conn, uint64_t *maxrss_bytes, int *governor_gone, char **cg_dir)
{
	struct sigaction sa = { .sa_handler = on_sigchld };
	sigset_t chld, orig;
	struct rusage ru;
	int st = -1;

	sigemptyset(&sa.sa_mask);
	sigaction(SIGCHLD, &sa, NULL);
	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	/* SIGCHLD stays blocked but inside ppoll: no exit slips in between the check and the wait. */
	sigprocmask(SIG_BLOCK, &chld, &orig);
	for (;;) {
		pid_t r = wait4(pid, &st, *governor_gone ? 0 : WNOHANG, &ru);
		if (r == pid)
			break;
		if (r < 0 && errno != EINTR) {
			st = -1;
			break;
		}
		if (r != 0 || *governor_gone)
			continue;
		struct pollfd p = { .fd = conn->fd, .events = POLLIN };
		if (ppoll(&p, 1, NULL, &orig) <= 0)
			continue;
		if (proto_fill(conn) > 0) {
			take_messages(conn, cg_dir);
			continue;
		}
		*governor_gone = 1;
		if (*cg_dir) {
			struct cgroup cg = { .version = CGROUP_V2, .dir = *cg_dir };
			cgroup_freeze(&cg, 0);
		}
		kill(-pid, SIGCONT);
	}
	sigprocmask(SIG_SETMASK, &orig, NULL);
	if (st != -1)
		*maxrss_bytes = (uint64_t)ru.ru_maxrss * 1024;
	return st;
}

/* How long a launcher waits for a governor that says nothing: HEADROOM_GOVERNOR_TIMEOUT
 * seconds, else GOVERNOR_TIMEOUT_S. A governor that makes a job wait says so every
 * SERVER_TELL_WAITING_MS, so only one that is stopped or stuck stays silent this long. */
#define GOVERNOR_TIMEOUT_S 30
#define GOVERNOR_TIMEOUT_MIN_S 6
#define GOVERNOR_TIMEOUT_MAX_S 86400

static int governor_timeout_ms(void)
{
	const char *v = getenv("HEADROOM_GOVERNOR_TIMEOUT");
	char *end;
	long s;

	if (!v || !*v)
		return GOVERNOR_TIMEOUT_S * 1000;
	errno = 0;
	s = strtol(v, &end, 10);
	if (errno || *end || s < GOVERNOR_TIMEOUT_MIN_S || s > GOVERNOR_TIMEOUT_MAX_S) {
		log_warn("HEADROOM_GOVERNOR_TIMEOUT=%s is no number of seconds from %d to %d: using %d", v,
			 GOVERNOR_TIMEOUT_MIN_S, GOVERNOR_TIMEOUT_MAX_S, GOVERNOR_TIMEOUT_S);
		return GOVERNOR_TIMEOUT_S * 1000;
	}
	return (int)s * 1000;
}

static void governor_silent(int fd, const char *tool, int timeout_ms, const char *then)
{
	pid_t gov = 0;

	usock_peer_pid(fd, &gov);
	log_warn("the governor (pid %d) has not answered for %d s: %s %s", (int)gov, timeout_ms / 1000, then, tool);
}

/* The governor's answer of type `want`, taking the job's cgroup and the governor's
 * waits on the way: 1 (*reply set, caller decrefs), 0 when it went away, -ETIMEDOUT when
 * it said nothing for timeout_ms. */
static int recv_type(struct proto_conn *conn, const char *want, int timeout_ms, json_t **reply, char **cg_dir)
{
	for (;;) {
		int rc = proto_recv(conn, reply, timeout_ms);

		if (rc <= 0)
			return rc == -ETIMEDOUT ? rc : 0;
		if (!strcmp(proto_type(*reply), want))
			return 1;
		if (cg_dir && !strcmp(proto_type(*reply), "cgroup")) {
			struct proto_cgroup m;

			if (!proto_cgroup_decode(*reply, &m)) {
				free(*cg_dir);
				*cg_dir = xstrdup(m.dir);
			}
		}
		json_decref(*reply);
		*reply = NULL;
	}
}

/* A compiler named plainly that is a compiler cache in disguise: /usr/lib/ccache/gcc (or
 * gcc found first there on PATH) is a link to ccache, which runs the real gcc. */
static void cache_masquerade(const char *argv0, struct job_sig *sig)
{
	char *exe, *real;

	if (sig->cached || !sig->compiler)
		return;
	exe = fs_which(argv0);
	real = exe ? realpath(exe, NULL) : NULL;
	if (real && job_sig_is_cache(path_base(real)))
		job_sig_add_cache(sig, path_base(real));
	free(real);
	free(exe);
}

/* A file for ccache's word on this job (CCACHE_STATSLOG), when the job runs through
 * ccache and the user keeps no stats log of their own; NULL otherwise. */
static char *cache_log_open(const struct job_sig *sig)
{
	const char *own = getenv("CCACHE_STATSLOG");
	char *path;
	int fd;

	if (!strstr(sig->via, "ccache") || strstr(sig->via, "sccache") || (own && *own))
		return NULL;
	path = xasprintf("%s/headroom-ccache.XXXXXX", runtime_dir());
	fd = mkstemp(path);
	if (fd < 0) {
		free(path);
		return NULL;
	}
	close(fd);
	setenv("CCACHE_STATSLOG", path, 1);
	return path;
}

/* 1 a hit, 0 a miss, -1 unknown; the log is emptied for the next attempt. */
static int cache_log_take(const char *path)
{
	char buf[4096];
	int hit;

	if (!path || fs_read(path, buf, sizeof(buf)) < 0)
		return -1;
	hit = job_cache_log_hit(buf);
	if (truncate(path, 0))
		log_debug("cannot empty %s: %s", path, strerror(errno));
	return hit;
}

static void cache_log_close(char *path)
{
	if (!path)
		return;
	unlink(path);
	unsetenv("CCACHE_STATSLOG");
	free(path);
}

/* What a key is cut to when the whole request is too long to send. */
#define KEY_CUT_BYTES (PROTO_MAX_MESSAGE / 16)

static char *cut_key(const char *key)
{
	size_t n = strlen(key);

	return n > KEY_CUT_BYTES ? xasprintf("%.*s ... (%zu bytes)", KEY_CUT_BYTES, key, n) : xstrdup(key);
}

/* Send the request; one too long for the protocol goes with its keys cut short, so that
 * the job is still governed and counted, with a warning that says why. */
static int send_request(int fd, const struct proto_request *req, const char *tool)
{
	int rc = proto_send_request(fd, req);

	if (rc != -E2BIG)
		return rc;
	log_warn("%s: the command line is too long to tell the governor whole (over %d MiB encoded): "
		 "governed under a signature cut short", tool, PROTO_MAX_MESSAGE >> 20);
	struct proto_request cut = *req;
	char *keys[] = { cut_key(req->tool), cut_key(req->src), cut_key(req->class_key), cut_key(req->sig_key) };
	cut.tool = keys[0];
	cut.src = keys[1];
	cut.class_key = keys[2];
	cut.sig_key = keys[3];
	rc = proto_send_request(fd, &cut);
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		free(keys[i]);
	return rc;
}

/* Run the admitted tool once and wait for it: its wait status, and how long it ran.
 * *gone: the governor went away meanwhile (the job's group is then removed here, since
 * nobody else will); otherwise *cg_dir is the group the governor put it in, or NULL. */
static int run_admitted(char **argv, struct proto_conn *conn, const struct sigaction *sa, uint64_t *maxrss,
			int *gone, char **cg_dir, int64_t *duration_ms)
{
	int errpipe[2], status, exec_errno = 0;

	if (pipe2(errpipe, O_CLOEXEC))
		die(EXIT_INTERNAL, "pipe: %s", strerror(errno));
	struct spawn_ctx ctx = { .argv = argv, .errpipe = errpipe[1] };
	/* Inherited by the job: a launcher inside it (CXX and a CMake launcher both
	 * set) runs its tool directly, the job being admitted already. */
	setenv("HEADROOM_JOB", "1", 1);
	int64_t t0 = now_ms();
	pid_t pid = spawn(&ctx);
	close(errpipe[1]);
	if (pid < 0)
		die(EXIT_INTERNAL, "vfork: %s", strerror(errno));
	child_pgid = pid;
	sigaction(SIGINT, sa, NULL);
	sigaction(SIGTERM, sa, NULL);
	sigaction(SIGHUP, sa, NULL);
	sigaction(SIGQUIT, sa, NULL);
	*maxrss = 0;
	*gone = 0;
	*cg_dir = NULL;
	status = wait_child(pid, conn, maxrss, gone, cg_dir);
	*duration_ms = now_ms() - t0;
	child_pgid = 0;
	if (read(errpipe[0], &exec_errno, sizeof(exec_errno)) == (ssize_t)sizeof(exec_errno))
		log_warn("cannot run %s: %s", argv[0], strerror(exec_errno));
	close(errpipe[0]);
	if (*gone) {
		if (*cg_dir) {
			struct cgroup cg = { .version = CGROUP_V2, .dir = *cg_dir };
			cgroup_remove(&cg);
		}
		free(*cg_dir);
		*cg_dir = NULL;
		log_debug("the governor went away while %s ran", argv[0]);
	}
	return status;
}

void launch_governed(char **argv, int fd)
{
	struct proto_conn conn;
	struct job_sig sig;
	struct sigaction sa = { .sa_handler = forward };
	int status = 0;
	int argc = 0;

	while (argv[argc])
		argc++;
	job_sig_from_argv(argc, argv, &sig);
	cache_masquerade(argv[0], &sig);
	char *cache_log = cache_log_open(&sig);
	proto_conn_init(&conn, fd);
	sigemptyset(&sa.sa_mask);
	int timeout_ms = governor_timeout_ms();

	for (int attempt = 1; attempt <= LAUNCHER_MAX_ATTEMPTS; attempt++) {
		struct proto_request req = { attempt, sig.tool, sig.src, sig.class_key, sig.sig_key, sig.cached,
					     sig.check };
		struct proto_admit adm;
		struct proto_ack ack;
		json_t *reply = NULL;
		int rc, gone;
		uint64_t maxrss;
		char *cg_dir;
		int64_t ran_ms;

		if (send_request(fd, &req, argv[0]))
			goto ungoverned;
		rc = recv_type(&conn, "admit", timeout_ms, &reply, NULL);
		if (rc == -ETIMEDOUT)
			governor_silent(fd, argv[0], timeout_ms, "running, ungoverned,");
		int bad_admit = rc <= 0 || proto_admit_decode(reply, &adm);
		json_decref(reply);
		reply = NULL;
		if (bad_admit)
			goto ungoverned;
		status = run_admitted(argv, &conn, &sa, &maxrss, &gone, &cg_dir, &ran_ms);
		if (gone)
			break;
		struct proto_done done = {
			.job = adm.job,
			.has_exit = WIFEXITED(status),
			.exit_code = WEXITSTATUS(status),
			.has_signal = WIFSIGNALED(status),
			.signal = WTERMSIG(status),
			.duration_ms = ran_ms,
			.maxrss_bytes = maxrss,
			.cache_hit = cache_log_take(cache_log),
		};
		int wait_ack = WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL;
		/* Only a job killed by SIGKILL (the governor's, or the kernel's for memory)
		 * may be run again: after any other end there is no answer to wait for. */
		if (proto_send_done(fd, &done) || !wait_ack ||
		    (rc = recv_type(&conn, "ack", timeout_ms, &reply, &cg_dir)) <= 0) {
			if (wait_ack && rc == -ETIMEDOUT)
				governor_silent(fd, argv[0], timeout_ms, "not running again");
			free(cg_dir);
			break;
		}
		free(cg_dir);
		int bad = proto_ack_decode(reply, &ack);
		json_decref(reply);
		if (bad || !ack.retry)
			break;
		log_debug("job %lld: the governor requeued %s (attempt %d)", (long long)adm.job, sig.src, attempt);
	}
	proto_conn_close(&conn);
	job_sig_free(&sig);
	cache_log_close(cache_log);
	pass_on(status);

ungoverned:
	/* The governor went away before admitting us: the caller runs the tool as if it never existed. */
	proto_conn_close(&conn);
	job_sig_free(&sig);
	cache_log_close(cache_log);
}
