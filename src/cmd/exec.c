/* headroom exec: the launcher that build tools call for each compile job. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cmd/cmd.h"
#include "govern/proto.h"
#include "govern/signature.h"
#include "sys/cgroup.h"
#include "sys/fsutil.h"
#include "sys/proc.h"
#include "sys/usock.h"
#include "util/log.h"
#include "util/path.h"
#include "util/units.h"
#include "util/xalloc.h"

/* The governor decides about retries; this only stops a confused one from looping. */
#define LAUNCHER_MAX_ATTEMPTS 10

static const char usage[] =
	"usage: headroom exec [--] TOOL [ARGS...]\n"
	"\n"
	"Run one compile job under the governor named by HEADROOM_SOCK (set by\n"
	"`headroom run`): wait until memory admits it, run it, report its memory, and run it\n"
	"again if the governor had to kill it or the kernel OOM-killed it. Without a\n"
	"governor it simply runs TOOL; output and exit status are always TOOL's own.\n"
	"\n"
	"  -h, --help   show this help\n"
	"\n"
	"Exit status: TOOL's; 126 if TOOL cannot be executed, 127 if it is not found.\n";

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

static void run_direct(char **argv)
{
	execvp(argv[0], argv);
	int e = errno;
	log_warn("cannot run %s: %s", argv[0], strerror(e));
	exit(exec_failed_status(e));
}

/* Die the way the tool died, so that the build tool sees exactly what it would have. */
static void pass_on(int wstatus)
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

static pid_t spawn(char **argv, const char *cgroup_dir, int errpipe)
{
	pid_t pid = fork();

	if (pid != 0)
		return pid;
	/* A process group of its own: the governor freezes and kills the job as one. */
	setpgid(0, 0);
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	signal(SIGHUP, SIG_DFL);
	signal(SIGQUIT, SIG_DFL);
	if (cgroup_dir && *cgroup_dir) {
		struct cgroup cg = { .version = CGROUP_V2, .dir = (char *)cgroup_dir };
		cgroup_attach(&cg, getpid());
	}
	/* When memory runs out, the kernel should pick a compiler, never sshd. */
	fs_write("/proc/self/oom_score_adj", "500");
	/* A launcher inside this job (CXX and a CMake launcher both set) runs its tool
	 * directly: the job is admitted already. */
	setenv("HEADROOM_JOB", "1", 1);
	execvp(argv[0], argv);
	int e = errno;
	if (write(errpipe, &e, sizeof(e)) < 0)
		_exit(EXIT_INTERNAL);
	_exit(exec_failed_status(e));
}

static json_t *request_msg(const struct job_sig *sig, int attempt)
{
	return json_pack("{s:s, s:i, s:i, s:s, s:s, s:s, s:s}", "type", "request", "pid", (int)getpid(),
			 "attempt", attempt, "tool", sig->tool, "src", sig->src, "class", sig->class_key,
			 "sig", sig->sig_key);
}

static json_t *done_msg(json_int_t job, int wstatus, int64_t duration_ms, uint64_t maxrss_bytes)
{
	json_t *m = json_pack("{s:s, s:I, s:I, s:I}", "type", "done", "job", job, "duration_ms",
			      (json_int_t)duration_ms, "maxrss_bytes", (json_int_t)maxrss_bytes);

	json_object_set_new(m, "exit", WIFEXITED(wstatus) ? json_integer(WEXITSTATUS(wstatus)) : json_null());
	json_object_set_new(m, "signal", WIFSIGNALED(wstatus) ? json_integer(WTERMSIG(wstatus)) : json_null());
	return m;
}

static void on_sigchld(int sig)
{
	(void)sig; /* only to interrupt ppoll */
}

/* Wait for the tool, forwarding interrupts to its process group, and watching the
 * governor: if it dies while the job is frozen, nobody else would ever thaw it.
 * *maxrss_bytes gets the largest resident set of any one process of its tree: a floor
 * under the job's peak that even a job shorter than the governor's sampling leaves.
 * Returns the wait status, or -1. */
static int wait_child(pid_t pid, struct proto_conn *conn, uint64_t *maxrss_bytes, int *governor_gone)
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
		if (ppoll(&p, 1, NULL, &orig) > 0 && proto_fill(conn) <= 0) {
			*governor_gone = 1;
			kill(-pid, SIGCONT);
		}
	}
	sigprocmask(SIG_SETMASK, &orig, NULL);
	if (st != -1)
		*maxrss_bytes = (uint64_t)ru.ru_maxrss * 1024;
	return st;
}

static int governed(char **argv, int fd)
{
	struct proto_conn conn;
	struct job_sig sig;
	struct sigaction sa = { .sa_handler = forward };
	int status = 0;
	int argc = 0;

	while (argv[argc])
		argc++;
	job_sig_from_argv(argc, argv, &sig);
	proto_conn_init(&conn, fd);
	sigemptyset(&sa.sa_mask);

	for (int attempt = 1; attempt <= LAUNCHER_MAX_ATTEMPTS; attempt++) {
		json_t *msg = request_msg(&sig, attempt), *reply = NULL;
		int errpipe[2];

		if (!msg || proto_send(fd, msg)) {
			json_decref(msg);
			goto ungoverned;
		}
		json_decref(msg);
		if (proto_recv(&conn, &reply) <= 0 || strcmp(proto_type(reply), "admit")) {
			json_decref(reply);
			goto ungoverned;
		}
		json_int_t job = json_integer_value(json_object_get(reply, "job"));
		const char *cgdir = json_string_value(json_object_get(reply, "cgroup"));
		if (pipe2(errpipe, O_CLOEXEC)) {
			json_decref(reply);
			die(EXIT_INTERNAL, "pipe: %s", strerror(errno));
		}
		int64_t t0 = now_ms();
		pid_t pid = spawn(argv, cgdir, errpipe[1]);
		char *cg_copy = cgdir && *cgdir ? xstrdup(cgdir) : NULL;
		json_decref(reply);
		close(errpipe[1]);
		if (pid < 0)
			die(EXIT_INTERNAL, "fork: %s", strerror(errno));
		setpgid(pid, pid);
		child_pgid = pid;
		sigaction(SIGINT, &sa, NULL);
		sigaction(SIGTERM, &sa, NULL);
		sigaction(SIGHUP, &sa, NULL);
		sigaction(SIGQUIT, &sa, NULL);
		msg = json_pack("{s:s, s:I, s:i}", "type", "started", "job", job, "pid", (int)pid);
		if (msg)
			proto_send(fd, msg);
		json_decref(msg);

		uint64_t maxrss = 0;
		int gone = 0;
		status = wait_child(pid, &conn, &maxrss, &gone);
		child_pgid = 0;
		int exec_errno = 0;
		if (read(errpipe[0], &exec_errno, sizeof(exec_errno)) == (ssize_t)sizeof(exec_errno))
			log_warn("cannot run %s: %s", argv[0], strerror(exec_errno));
		close(errpipe[0]);

		if (gone) {
			/* Nobody else will remove the job's group now. */
			if (cg_copy) {
				struct cgroup cg = { .version = CGROUP_V2, .dir = cg_copy };
				cgroup_remove(&cg);
			}
			free(cg_copy);
			log_debug("the governor went away while %s ran", argv[0]);
			break;
		}
		free(cg_copy);
		msg = done_msg(job, status, now_ms() - t0, maxrss);
		if (!msg || proto_send(fd, msg)) {
			json_decref(msg);
			break;
		}
		json_decref(msg);
		if (proto_recv(&conn, &reply) <= 0) {
			json_decref(reply);
			break;
		}
		int retry = json_is_true(json_object_get(reply, "retry"));
		json_decref(reply);
		if (!retry)
			break;
		log_debug("job %lld: the governor requeued %s (attempt %d)", (long long)job, sig.src, attempt);
	}
	proto_conn_close(&conn);
	job_sig_free(&sig);
	pass_on(status);
	return EXIT_INTERNAL;

ungoverned:
	/* The governor went away before admitting us: run as if it never existed. */
	proto_conn_close(&conn);
	job_sig_free(&sig);
	run_direct(argv);
	return EXIT_INTERNAL;
}

int cmd_exec(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *sock;
	int c, fd;

	/* "+": stop at the first non-option, which is the tool; its options are its own. */
	while ((c = getopt_long(argc, argv, "+h", opts, NULL)) != -1) {
		switch (c) {
		case 'h':
			fputs(usage, stdout);
			return 0;
		default:
			fputs(usage, stderr);
			return EXIT_USAGE;
		}
	}
	if (optind >= argc) {
		log_warn("exec: missing the command to run (try: headroom exec -- gcc -c x.c)");
		return EXIT_USAGE;
	}
	argv += optind;
	sock = getenv("HEADROOM_SOCK");
	if (!sock || !*sock || getenv("HEADROOM_JOB"))
		run_direct(argv);
	fd = usock_connect(sock);
	if (fd < 0) {
		log_debug("no governor at %s (%s): running %s directly", sock, strerror(-fd), argv[0]);
		run_direct(argv);
	}
	return governed(argv, fd);
}

int cmd_shim(int argc, char **argv)
{
	const char *name = path_base(argv[0]);
	const char *real = getenv(!strcmp(name, "c++") ? "HEADROOM_REAL_CXX" : "HEADROOM_REAL_CC");
	char self[4096];
	char **args;

	if (!real || !*real) {
		log_warn("%s: this is headroom's compiler shim, but HEADROOM_REAL_%s is not set: "
		      "run the build under `headroom run`, or call the compiler itself", name,
		      !strcmp(name, "c++") ? "CXX" : "CC");
		return EXIT_NOTFOUND;
	}
	if (proc_self_exe(self, sizeof(self)))
		die(EXIT_INTERNAL, "cannot find headroom's own path in /proc/self/exe");
	/* headroom exec -- REAL ARGS...: started by its own name, so that it shows as
	 * headroom in the process table (a launcher, not an escaped compiler). */
	args = xcalloc((size_t)argc + 4, sizeof(*args));
	args[0] = "headroom";
	args[1] = "exec";
	args[2] = "--";
	args[3] = (char *)real;
	for (int i = 1; i < argc; i++)
		args[i + 3] = argv[i];
	execv(self, args);
	die(EXIT_NOEXEC, "cannot run %s: %s", self, strerror(errno));
}
