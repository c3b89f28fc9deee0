/* headroom watch: a GPU and host memory watchdog: low margins, time-to-OOM, jobs that
 * lost some of their ranks, stuck processes. The options, and the loop that samples
 * (watch/watcher), writes the outputs and waits; the watchdog itself is in watch/. */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include "cmd/cmd.h"
#include "util/log.h"
#include "util/parse.h"
#include "util/strbuf.h"
#include "util/units.h"
#include "util/xalloc.h"
#include "watch/jsonl.h"
#include "watch/prom.h"
#include "watch/summary.h"
#include "watch/screen.h"
#include "watch/watcher.h"

#define STR_(x) #x
#define STR(x) STR_(x)

static const char usage[] =
	"usage: headroom watch [OPTIONS] [-- COMMAND [ARGS...]]\n"
	"\n"
	"Watch GPU and host memory: per GPU used/free, per process GPU memory (host pids),\n"
	"jobs of ranks (processes with TORCHELASTIC_RUN_ID, RANK, LOCAL_RANK or WORLD_SIZE in\n"
	"their environment, grouped by run id, MASTER_ADDR:MASTER_PORT, else their parent\n"
	"(never init); a job is one user's processes under one origin, their ancestor just\n"
	"below init; any other GPU process is a job of its own), host MemAvailable,\n"
	"PSI and OOM kills. Events, each a line on stderr and a JSON record: low_free (a\n"
	"GPU's free memory under a threshold), time_to_oom (its memory reaches the capacity\n"
	"within the horizon: a significantly rising trend, or growth in steps, the first\n"
	"step that no longer fits; none for memory that only wobbles), partial_death (a\n"
	"rank of a job died while others run on: a killing signal or a non-zero status read\n"
	"from watch's own reaping, the rank's zombie or, as root, the kernel's process events,\n"
	"which tell each exit before the parent reaps it; an end whose status could not be\n"
	"read, its parent (bash's wait, mpirun) having reaped it first, is no death: without\n"
	"root, or on a kernel without process events, such deaths go unseen; -v says which),\n"
	"stuck (GPU memory held, unchanged, GPU idle past a timeout),\n"
	"process_exit, read_failed, xid (critical XID errors the driver reports). With\n"
	"COMMAND: run it, watch only its processes, exit with its status and print a\n"
	"summary. Without a GPU or driver it watches host memory.\n"
	"\n"
	"On a terminal, a live view (the alternate screen) shows the figures and the last\n"
	"events, newest first, with their time and message; when watch ends the summary lists\n"
	"every event. q quits, as Ctrl-C does (not with COMMAND: the keys are its input).\n"
	"\n"
	"  -i, --interval MS          sampling interval when margins are wide (default 1000)\n"
	"      --min-interval MS      ... when a margin is narrow (default 100)\n"
	"      --min-free SIZE        low_free under this free memory (default 1G; SIZE with its\n"
	"                             unit: 1G is 1 GiB, 1GB 10^9 bytes; docs/units.md)\n"
	"      --min-free-pct PCT     ... or under this share of the GPU (default 5)\n"
	"      --horizon S            time_to_oom when the trend reaches capacity within S (default 120);\n"
	"                             the time to OOM is shown (JSON, /metrics) within 10 x S\n"
	"      --window S             the trend's window, at least 3 x --interval (default 30)\n"
	"      --stuck-timeout S      stuck after S seconds unchanged and idle (default 600, 0 off)\n"
	"      --jsonl FILE           samples and events as JSON lines (- for stdout)\n"
	"      --prometheus ADDR      serve /metrics on ADDR: PORT (or :PORT) on 127.0.0.1 only;\n"
	"                             IP:PORT on that address (0.0.0.0:9400: every interface).\n"
	"                             at most " STR(PROM_MAX_CONNECTIONS) " connections, " STR(PROM_MAX_WAITING)
	" waiting for a request\n"
	"                             (past that the longest waiting is closed);\n"
	"                             idle ones closed after " STR(PROM_IDLE_TIMEOUT_S) " s, each request given "
	STR(PROM_REQUEST_DEADLINE_S) " s in all\n"
	"      --on-event CMD         run sh -c CMD for each event, with HEADROOM_EVENT,\n"
	"                             HEADROOM_EVENT_MESSAGE, HEADROOM_EVENT_JSON in its environment\n"
	"      --stop-job-on-partial-death   when a rank dies (killed by a signal or a non-zero\n"
	"                             status, as watch read it; a rank that exits 0 has\n"
	"                             finished, and one whose status watch could not read\n"
	"                             (its parent reaped it first, watch not root) is\n"
	"                             reported as ended, status unknown, never acted on), give the job's\n"
	"                             surviving ranks --stop-delay S to end on their own (a\n"
	"                             checkpoint being written), then SIGTERM those still\n"
	"                             running, SIGKILL after --grace S; only ranks of the\n"
	"                             job's own user are signalled, never other processes\n"
	"      --stop-delay S         (default 30)\n"
	"      --grace S              (default 10)\n"
	"      --duration S           stop after S seconds\n"
	"  -q, --quiet                no live view (events still go to stderr)\n"
	"  -v, --verbose              say more: whether the kernel's process events are read\n"
	"  -h, --help                 show this help\n"
	"\n"
	"Exit status: with COMMAND, its own (128+N for signal N); else 0, 2 on bad usage.\n";

struct wopts {
	struct watch_limits lim;
	int64_t duration_ms;
	const char *jsonl_path, *prom_addr, *on_event;
	int quiet;
	char **cmd;
};

/* Seconds (a finite number, at most 1e7) as milliseconds; above 0 when positive. */
static int64_t seconds_ms(const char *opt, const char *v, int positive)
{
	double s;

	if (parse_double(v, 0, 1e7, &s) || (positive && s * 1000 < 1))
		die(EXIT_USAGE, "watch: %s wants seconds %s, not '%s'", opt, positive ? "above 0 (at least 0.001)" : "from 0",
		    v);
	return (int64_t)(s * 1000);
}

static void parse(int argc, char **argv, struct wopts *o)
{
	enum { O_MINI = 256, O_MINFREE, O_MINPCT, O_HORIZON, O_WINDOW, O_STUCK, O_JSONL, O_PROM, O_ONEV, O_STOP, O_DELAY,
	       O_GRACE, O_DUR };
	static const struct option opts[] = {
		{ "interval", required_argument, NULL, 'i' },     { "min-interval", required_argument, NULL, O_MINI },
		{ "min-free", required_argument, NULL, O_MINFREE }, { "min-free-pct", required_argument, NULL, O_MINPCT },
		{ "horizon", required_argument, NULL, O_HORIZON }, { "window", required_argument, NULL, O_WINDOW },
		{ "stuck-timeout", required_argument, NULL, O_STUCK }, { "jsonl", required_argument, NULL, O_JSONL },
		{ "prometheus", required_argument, NULL, O_PROM }, { "on-event", required_argument, NULL, O_ONEV },
		{ "stop-job-on-partial-death", no_argument, NULL, O_STOP }, { "grace", required_argument, NULL, O_GRACE },
		{ "stop-delay", required_argument, NULL, O_DELAY },
		{ "duration", required_argument, NULL, O_DUR },   { "quiet", no_argument, NULL, 'q' },
		{ "verbose", no_argument, NULL, 'v' },            { "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	*o = (struct wopts){ .lim = { .interval_ms = 1000, .min_interval_ms = 100, .min_free_bytes = 1ULL << 30,
				      .min_free_pct = 5, .horizon_ms = 120000, .window_ms = 30000,
				      .stuck_ms = 600000, .stop_delay_ms = 30000, .grace_ms = 10000 } };
	while ((c = getopt_long(argc, argv, "+i:qvh", opts, NULL)) != -1) {
		switch (c) {
		case 'i':
		case O_MINI: {
			int64_t v;
			if (parse_int64(optarg, 10, 3600000, &v))
				die(EXIT_USAGE, "watch: %s wants milliseconds from 10 to 3600000, not '%s'",
				    c == 'i' ? "--interval" : "--min-interval", optarg);
			if (c == 'i')
				o->lim.interval_ms = (int)v;
			else
				o->lim.min_interval_ms = (int)v;
			break;
		}
		case O_MINFREE: {
			int rc = parse_size(optarg, 0, UINT64_MAX, &o->lim.min_free_bytes);
			opt_size_unit("watch", "--min-free", optarg, rc, 'G');
			if (rc)
				die(EXIT_USAGE, "watch: --min-free wants a size such as 2G, not '%s'", optarg);
			break;
		}
		case O_MINPCT:
			if (parse_pct(optarg, 0, nextafter(100.0, 0.0), &o->lim.min_free_pct))
				die(EXIT_USAGE, "watch: --min-free-pct wants a percentage from 0 to below 100, not '%s'", optarg);
			break;
		case O_HORIZON: o->lim.horizon_ms = seconds_ms("--horizon", optarg, 1); break;
		case O_WINDOW: o->lim.window_ms = seconds_ms("--window", optarg, 1); break;
		case O_STUCK: o->lim.stuck_ms = seconds_ms("--stuck-timeout", optarg, 0); break;
		case O_DELAY: o->lim.stop_delay_ms = seconds_ms("--stop-delay", optarg, 0); break;
		case O_GRACE: o->lim.grace_ms = seconds_ms("--grace", optarg, 0); break;
		case O_DUR: o->duration_ms = seconds_ms("--duration", optarg, 1); break;
		case O_JSONL: o->jsonl_path = optarg; break;
		case O_PROM: o->prom_addr = optarg; break;
		case O_ONEV: o->on_event = optarg; break;
		case O_STOP: o->lim.stop_on_partial = 1; break;
		case 'q': o->quiet = 1; break;
		case 'v': log_level = log_level < 2 ? 2 : log_level; break;
		case 'h': fputs(usage, stdout); exit(0);
		default: opt_refused("watch", opts, argv);
		}
	}
	if (o->lim.min_interval_ms > o->lim.interval_ms)
		o->lim.min_interval_ms = o->lim.interval_ms;
	/* the trend is fitted to the samples of the window: series_time_to needs four */
	if (o->lim.window_ms < 3 * (int64_t)o->lim.interval_ms)
		die(EXIT_USAGE, "watch: --window %.3g s is shorter than 3 x --interval %d ms: the trend needs four samples "
		    "in it", (double)o->lim.window_ms / 1000, o->lim.interval_ms);
	o->cmd = optind < argc ? argv + optind : NULL;
}

/* Keys read from the terminal (key_fd): whether one was q. */
static int key_quits(int key_fd)
{
	char buf[64];
	ssize_t n = read(key_fd, buf, sizeof(buf));

	for (ssize_t i = 0; i < n; i++)
		if (buf[i] == 'q' || buf[i] == 'Q')
			return 1;
	return 0;
}

/* Keys one at a time, unechoed, from a terminal on standard input (Ctrl-C still a
 * signal); *saved gets the settings to give back. The descriptor, or -1. */
static int keys_open(struct termios *saved)
{
	struct termios t;

	if (!isatty(STDIN_FILENO) || tcgetattr(STDIN_FILENO, saved))
		return -1;
	t = *saved;
	t.c_lflag &= ~(tcflag_t)(ICANON | ECHO);
	t.c_cc[VMIN] = 0;
	t.c_cc[VTIME] = 0;
	return tcsetattr(STDIN_FILENO, TCSANOW, &t) ? -1 : STDIN_FILENO;
}

/* Wait until `until` for a signal (sfd) or a watched process's end; returns early when
 * the set of processes changed. *interrupted: the signal that stops the watch. */
static void wait_next(struct watcher *x, int sfd, int key_fd, int64_t until, int *interrupted)
{
	size_t npf = 3;
	struct pollfd *pf = xcalloc(x->w.nprocs + 3, sizeof(*pf));
	int64_t now;

	pf[0] = (struct pollfd){ .fd = sfd, .events = POLLIN };
	pf[1] = (struct pollfd){ .fd = key_fd, .events = POLLIN }; /* -1: ignored by poll */
	/* the kernel's process exits, read as they come: its socket's buffer never fills */
	pf[2] = (struct pollfd){ .fd = x->exits_fd, .events = POLLIN };
	for (size_t i = 0; i < x->w.nprocs; i++)
		if (x->w.procs[i].alive && x->w.procs[i].pidfd >= 0)
			pf[npf++] = (struct pollfd){ .fd = x->w.procs[i].pidfd, .events = POLLIN };
	while ((now = now_ms()) < until && !*interrupted) {
		if (poll(pf, (nfds_t)npf, (int)(until - now)) <= 0)
			continue;
		if (pf[0].revents) {
			struct signalfd_siginfo si;
			while (read(sfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
				if (si.ssi_signo == SIGCHLD)
					watcher_reap(x);
				else if (x->child && !x->child_done)
					kill(x->child, (int)si.ssi_signo); /* the command decides; we follow it */
				else
					*interrupted = (int)si.ssi_signo;
			}
		}
		if (pf[1].revents && key_quits(key_fd))
			*interrupted = SIGINT;
		if (pf[1].revents & (POLLHUP | POLLERR | POLLNVAL))
			pf[1].fd = -1;
		if (pf[2].revents) {
			watcher_read_exits(x, now_ms());
			pf[2].fd = x->exits_fd; /* -1 once it failed */
		}
		int ended = 0;
		for (size_t k = 3; k < npf; k++)
			if (pf[k].revents) {
				for (size_t i = 0; i < x->w.nprocs; i++)
					if (x->w.procs[i].pidfd == pf[k].fd)
						watcher_proc_ended(x, &x->w.procs[i], now_ms());
				ended = 1;
			}
		if (ended || (x->child && x->child_done))
			break; /* sample now: the set of processes changed */
	}
	free(pf);
}

/* Each GPU process is watched through a pidfd (the only way a rank is ever signalled)
 * beside /metrics' connections: the descriptor limit as high as it may go. */
static void fds_raise(void)
{
	struct rlimit rl;

	if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

/* SIGCHLD, SIGINT and SIGTERM as a descriptor (*orig: the mask to give back). Blocked
 * before any thread starts (libmicrohttpd's, NVML's), which all inherit the mask: the
 * kernel hands a process's signal to any thread that has it unblocked, and there its
 * default action would end watch, no summary, its command orphaned. */
static int signals_take(sigset_t *orig)
{
	sigset_t mask;
	int sfd;

	sigemptyset(&mask);
	sigaddset(&mask, SIGCHLD);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &mask, orig);
	sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	if (sfd < 0)
		die(EXIT_INTERNAL, "watch: signalfd: %s", strerror(errno));
	return sfd;
}

int cmd_watch(int argc, char **argv)
{
	struct wopts o;
	struct watcher x;
	struct prom_server *prom = NULL;
	FILE *jsonl = NULL;
	sigset_t orig;
	int sfd, tty, status = 0;
	int64_t t0_ms;

	parse(argc, argv, &o);
	sfd = signals_take(&orig); /* first: before any thread */
	fds_raise();
	t0_ms = now_ms();
	watcher_init(&x, "", &o.lim);
	if (o.jsonl_path) {
		jsonl = strcmp(o.jsonl_path, "-") ? fopen(o.jsonl_path, "ae") : stdout;
		if (!jsonl)
			die(EXIT_USAGE, "watch: cannot write %s: %s", o.jsonl_path, strerror(errno));
	}
	x.notify.jsonl = jsonl;
	x.notify.hook_cmd = o.on_event;
	if (o.prom_addr) {
		const char *why;
		if (prom_start(o.prom_addr, &prom, &why))
			die(EXIT_USAGE, "watch: --prometheus %s: %s", o.prom_addr, why);
	}
	tty = !o.quiet && isatty(STDOUT_FILENO) && jsonl != stdout;
	watcher_open(&x);
	if (o.cmd) {
		prctl(PR_SET_CHILD_SUBREAPER, 1);
		x.child = fork();
		if (x.child == 0) {
			pthread_sigmask(SIG_SETMASK, &orig, NULL);
			execvp(o.cmd[0], o.cmd);
			log_warn("watch: cannot run %s: %s", o.cmd[0], strerror(errno));
			_exit(errno == ENOENT ? EXIT_NOTFOUND : EXIT_NOEXEC);
		}
		if (x.child < 0)
			die(EXIT_INTERNAL, "watch: fork: %s", strerror(errno));
	}

	int interrupted = 0;
	struct screen scr = { 0 };
	struct termios keys_saved;
	int key_fd = -1;
	if (tty) {
		screen_enter(&scr, stdout);
		/* a watched command's input is its own: its keys are not read here */
		if (!o.cmd)
			key_fd = keys_open(&keys_saved);
	}
	while (!interrupted) {
		int64_t now = now_ms();
		watcher_sample(&x, now);
		if (jsonl)
			jsonl_sample(jsonl, &x.w, jsonl_wall_ms());
		if (prom)
			prom_publish(prom, prom_render(&x.w));
		if (tty)
			screen_view(&scr, &x.w, x.nvml != NULL);
		if ((x.child && x.child_done) || (o.duration_ms && now - t0_ms >= o.duration_ms))
			break;
		wait_next(&x, sfd, key_fd, now + watcher_next_interval_ms(&x), &interrupted);
	}
	if (key_fd >= 0)
		tcsetattr(key_fd, TCSANOW, &keys_saved);
	screen_leave(&scr);
	if (x.child) {
		while (!x.child_done) { /* interrupted: the command was signalled; wait for it */
			int st;
			if (waitpid(x.child, &st, 0) == x.child) {
				x.child_status = st;
				x.child_done = 1;
			}
		}
		status = exit_status_of(x.child_status);
	}
	if (x.child || !o.quiet) {
		struct strbuf sum = STRBUF_INIT;
		summary_render(&x.w, x.child != 0, now_ms() - t0_ms, tty, &sum);
		fputs(strbuf_str(&sum), stderr);
		strbuf_release(&sum);
	}
	prom_stop(prom);
	if (jsonl && jsonl != stdout)
		fclose(jsonl);
	watcher_free(&x);
	close(sfd);
	pthread_sigmask(SIG_SETMASK, &orig, NULL);
	return status;
}
