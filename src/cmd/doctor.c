/* headroom doctor: a preflight before a big build. Each finding says what to do. */
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd/cmd.h"
#include "govern/jobserver.h"
#include "sys/cgroup.h"
#include "sys/command.h"
#include "sys/meminfo.h"
#include "sys/proc.h"
#include "sys/psi.h"
#include "util/log.h"
#include "util/strbuf.h"
#include "util/strv.h"
#include "util/units.h"
#include "util/xalloc.h"

static const char usage[] =
	"usage: headroom doctor [--json] [--clean] [--root DIR]\n"
	"\n"
	"Check the machine before a big build: memory and the limit that applies, compiler\n"
	"processes left over from earlier builds, memory pressure, cgroup support, build\n"
	"tools, the CUDA toolkit against PyTorch's CUDA, Python build dependencies.\n"
	"\n"
	"      --json      one JSON object: {\"findings\": [{check, status, detail, fix}]}\n"
	"      --clean     end the leftover compiler processes it lists (by pid, SIGKILL)\n"
	"      --root DIR  read /proc and /sys under DIR (for tests)\n"
	"  -h, --help      show this help\n"
	"\n"
	"Exit status: 0 when nothing failed (warnings allowed), 1 when a check failed, 2 usage.\n";

/* Processes of a compile that should not outlive their build. */
static const char *const leftover_names[] = { "cicc", "ptxas", "nvcc", "cudafe++", "fatbinary", "nvlink",
					      "cc1plus", "cc1", "lto1", "ld", NULL };

struct doctor {
	const char *root;
	int json, clean, failed;
	int preflight;        /* inside headroom run: say only what is wrong, on stderr */
	json_t *findings;
};

static void finding(struct doctor *d, const char *check, const char *status, const char *detail, const char *fix)
{
	json_t *f = json_pack("{s:s, s:s, s:s}", "check", check, "status", status, "detail", detail);

	json_object_set_new(f, "fix", fix ? json_string(fix) : json_null());
	json_array_append_new(d->findings, f);
	if (!strcmp(status, "fail"))
		d->failed = 1;
	if (d->preflight) {
		if (strcmp(status, "ok"))
			log_warn("doctor: %s%s%s", detail, fix ? "; " : "", fix ? fix : "");
	} else if (!d->json) {
		printf("%-5s %-12s %s\n", !strcmp(status, "ok") ? "ok" : !strcmp(status, "warn") ? "WARN" : "FAIL",
		       check, detail);
		if (fix)
			printf("      %-12s -> %s\n", "", fix);
	}
}

static void check_memory(struct doctor *d)
{
	struct meminfo mi;
	struct cgroup cg;
	uint64_t lim = 0, ws = 0;
	char a[32], b[32], c[32];
	char *msg;

	if (meminfo_read(d->root, &mi)) {
		finding(d, "memory", "fail", "cannot read /proc/meminfo", "run on Linux with /proc mounted");
		return;
	}
	int have_cg = !cgroup_find(d->root, 0, &cg);
	int limited = have_cg && !cgroup_mem_limit(&cg, &lim) && lim < mi.total_bytes;
	if (limited && !cgroup_mem_working_set(&cg, &ws)) {
		msg = xasprintf("cgroup v%d limit %s (RAM %s), %s in use inside it", cg.version,
				size_format(lim, a, sizeof(a)), size_format(mi.total_bytes, b, sizeof(b)),
				size_format(ws, c, sizeof(c)));
		finding(d, "memory", "ok", msg, NULL);
	} else {
		msg = xasprintf("%s available of %s RAM, no cgroup limit below it",
				size_format(mi.available_bytes, a, sizeof(a)), size_format(mi.total_bytes, b, sizeof(b)));
		finding(d, "memory", mi.available_bytes < mi.total_bytes / 10 ? "warn" : "ok", msg,
			mi.available_bytes < mi.total_bytes / 10 ? "less than 10 % is available: look for what holds it" : NULL);
	}
	free(msg);
	msg = xasprintf("%s", have_cg ? (cg.version == CGROUP_V2 ? "cgroup v2" : "cgroup v1 (memory controller)")
				      : "no memory cgroup found: headroom uses /proc/meminfo alone");
	finding(d, "cgroups", have_cg ? "ok" : "warn", msg, NULL);
	free(msg);
	if (have_cg)
		cgroup_free(&cg);
}

static void check_psi(struct doctor *d)
{
	char path[4096];
	struct psi p;

	snprintf(path, sizeof(path), "%s/proc/pressure/memory", d->root);
	if (psi_read(path, &p)) {
		finding(d, "pressure", "warn", "no memory PSI (/proc/pressure/memory)",
			"boot with psi=1 (CONFIG_PSI) so headroom sees reclaim stalls, not only free memory");
		return;
	}
	char *msg = xasprintf("memory pressure some %.1f %%, full %.1f %% (last 10 s)", p.some_avg10_pct,
			      p.full_avg10_pct);
	finding(d, "pressure", p.full_avg10_pct > 10 ? "warn" : "ok", msg,
		p.full_avg10_pct > 10 ? "the machine is already stalling on memory: find what holds it first" : NULL);
	free(msg);
}

static void check_leftovers(struct doctor *d)
{
	struct proc_table t = { 0 };
	uint64_t total = 0;
	struct strbuf list = STRBUF_INIT;
	size_t n = 0;
	char sz[32];
	pid_t *pids;

	if (proc_table_read(d->root, &t)) {
		finding(d, "leftovers", "warn", "cannot read the process table", NULL);
		return;
	}
	pids = xmalloc((t.n ? t.n : 1) * sizeof(*pids));
	for (size_t i = 0; i < t.n; i++) {
		const struct proc_entry *e = &t.v[i];
		if (!strv_contains(leftover_names, e->comm) || e->pid == getpid())
			continue;
		strbuf_addf(&list, "%s%s %d (%s)", n ? ", " : "", e->comm, (int)e->pid,
			    size_format(e->rss_bytes, sz, sizeof(sz)));
		total += e->rss_bytes;
		pids[n++] = e->pid;
	}
	if (!n) {
		finding(d, "leftovers", "ok", "no compiler processes left from earlier builds", NULL);
	} else {
		char *msg = xasprintf("%zu compiler process%s %s %s: %s%s", n, n == 1 ? "" : "es", n == 1 ? "holds" : "hold",
				      size_format(total, sz, sizeof(sz)), strbuf_str(&list), d->clean ? " (ending them)" : "");
		finding(d, "leftovers", d->clean ? "ok" : "warn", msg,
			d->clean ? NULL : "if no build is running, end them: headroom doctor --clean");
		free(msg);
		/* Only the pids just listed: said first, then done. */
		for (size_t i = 0; d->clean && i < n; i++)
			if (kill(pids[i], SIGKILL) && errno != ESRCH)
				log_warn("cannot end pid %d: %s", (int)pids[i], strerror(errno));
	}
	free(pids);
	strbuf_release(&list);
	proc_table_free(&t);
}

static void check_tools(struct doctor *d)
{
	char *const ninja_argv[] = { "ninja", "--version", NULL };
	char *const make_argv[] = { "make", "--version", NULL };
	char *ninja = command_first_line(ninja_argv, NULL);
	char *make = command_first_line(make_argv, NULL);
	char *msg;

	msg = xasprintf("ninja %s, %s", ninja ? ninja : "not found", make ? make : "make not found");
	finding(d, "build tools", ninja ? "ok" : "warn", msg,
		ninja ? NULL : "install ninja (apt-get install ninja-build, or pip install ninja): "
			       "torch extensions build one file at a time without it");
	free(msg);
	/* Which jobserver `headroom run --jobserver` can serve to these tools. */
	msg = xasprintf("make: %s; ninja: %s",
			!make ? "not found"
			: jobserver_make_has_fifo(make) ? "fifo and pipe styles" : "pipe style (make < 4.4)",
			!ninja ? "not found"
			: jobserver_ninja_is_client(ninja) ? "fifo style (ninja >= 1.13, run without -j)"
							    : "no jobserver client (ninja < 1.13)");
	finding(d, "jobserver", "ok", msg,
		ninja && !jobserver_ninja_is_client(ninja)
			? "ninja builds are governed through the launcher or --tree; ninja >= 1.13 also takes jobserver tokens"
			: NULL);
	free(msg);
	free(ninja);
	free(make);
}

/* The release nvcc at path reports ("12.4" of "Cuda compilation tools, release 12.4,
 * V12.4.131"), or NULL. Run by argv: CUDA_HOME is the user's string, not shell text. */
static char *nvcc_release(const char *path)
{
	char *const argv[] = { (char *)path, "--version", NULL };
	char *out = command_output(argv, NULL), *rel, *ver = NULL;

	if (out && (rel = strstr(out, "release "))) {
		rel += strlen("release ");
		size_t n = strspn(rel, "0123456789.");
		if (n)
			ver = xasprintf("%.*s", (int)n, rel);
	}
	free(out);
	return ver;
}

/* Python runs in / : `python3 -c` puts its current directory first on sys.path, and a
 * torch.py (or ninja.py) where doctor was started must not be imported. The environment
 * is kept (not -I), so a PYTHONPATH or user site that holds torch still counts. */
#define PYTHON_CWD "/"

static void check_cuda(struct doctor *d)
{
	char *const torch_argv[] = { "python3", "-c", "import torch; print(torch.version.cuda or '')", NULL };
	const char *home = getenv("CUDA_HOME");
	char *nvcc = nvcc_release("nvcc");
	char *torch = command_first_line(torch_argv, PYTHON_CWD);
	char *msg;

	if (!nvcc && home && *home) {
		char *path = xasprintf("%s/bin/nvcc", home);
		nvcc = nvcc_release(path);
		free(path);
	}
	if (!nvcc) {
		finding(d, "cuda", "warn", "no nvcc on PATH or in CUDA_HOME",
			"for CUDA extensions, set CUDA_HOME to the toolkit or put its bin/ on PATH");
	} else if (torch && strncmp(nvcc, torch, strcspn(torch, "."))) {
		msg = xasprintf("nvcc %s, but PyTorch was built with CUDA %s", nvcc, torch);
		finding(d, "cuda", "warn", msg, "use a toolkit of PyTorch's CUDA major version (CUDA_HOME), or a PyTorch built for yours");
		free(msg);
	} else {
		msg = xasprintf("nvcc %s%s%s", nvcc, torch ? ", PyTorch built with CUDA " : "", torch ? torch : "");
		finding(d, "cuda", "ok", msg, NULL);
		free(msg);
	}
	free(nvcc);
	free(torch);
}

static void check_python(struct doctor *d)
{
	char *const argv[] = { "python3", "-c",
			       "import importlib.util as u; "
			       "print(' '.join(m for m in ('ninja', 'packaging', 'wheel', 'psutil', 'setuptools') "
			       "if u.find_spec(m) is None) or '-')",
			       NULL };
	char *missing = command_first_line(argv, PYTHON_CWD);

	if (!missing) {
		finding(d, "python", "warn", "no python3", NULL);
	} else if (!strcmp(missing, "-")) {
		finding(d, "python", "ok", "build dependencies present (ninja, packaging, wheel, psutil, setuptools)", NULL);
	} else {
		char *msg = xasprintf("missing Python build dependencies: %s", missing);
		char *fix = xasprintf("pip install %s (before pip install --no-build-isolation ...)", missing);
		finding(d, "python", "warn", msg, fix);
		free(msg);
		free(fix);
	}
	free(missing);
}

void doctor_preflight(void)
{
	struct doctor d = { .root = "", .preflight = 1, .findings = json_array() };

	/* The quick checks only: what could sink the build that is about to start. */
	check_memory(&d);
	check_leftovers(&d);
	json_decref(d.findings);
}

int cmd_doctor(int argc, char **argv)
{
	enum { OPT_JSON = 256, OPT_CLEAN, OPT_ROOT };
	static const struct option opts[] = {
		{ "json", no_argument, NULL, OPT_JSON },
		{ "clean", no_argument, NULL, OPT_CLEAN },
		{ "root", required_argument, NULL, OPT_ROOT },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct doctor d = { .root = "" };
	int c;

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case OPT_JSON: d.json = 1; break;
		case OPT_CLEAN: d.clean = 1; break;
		case OPT_ROOT: d.root = optarg; break;
		case 'h': fputs(usage, stdout); return 0;
		default: fputs(usage, stderr); return EXIT_USAGE;
		}
	}
	if (optind < argc)
		die(EXIT_USAGE, "doctor: unexpected argument '%s'", argv[optind]);
	if (d.clean && *d.root)
		die(EXIT_USAGE, "doctor: --clean ends real processes; it cannot go with --root");
	d.findings = json_array();
	check_memory(&d);
	check_psi(&d);
	check_leftovers(&d);
	/* Tools and Python are facts of this machine, not of a fixture root. */
	if (!*d.root) {
		check_tools(&d);
		check_cuda(&d);
		check_python(&d);
	}
	if (d.json) {
		json_t *o = json_pack("{s:o, s:b}", "findings", d.findings, "failed", d.failed);
		char *s = json_dumps(o, JSON_INDENT(2));
		if (s)
			puts(s);
		free(s);
		json_decref(o);
	} else {
		json_decref(d.findings);
	}
	return d.failed ? 1 : 0;
}
