/* headroom doctor: a preflight before a big build. Each finding says what to do. */
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cmd/cmd.h"
#include "govern/jobserver.h"
#include "govern/leftover.h"
#include "sys/cgroup.h"
#include "sys/command.h"
#include "sys/meminfo.h"
#include "sys/fsutil.h"
#include "sys/proc.h"
#include "sys/procinfo.h"
#include "sys/psi.h"
#include "util/log.h"
#include "util/parse.h"
#include "util/strbuf.h"
#include "util/strv.h"
#include "util/units.h"
#include "util/xalloc.h"

static const char usage[] =
	"usage: headroom doctor [--json] [--clean] [--root DIR]\n"
	"\n"
	"Check the machine before a big build: memory and the limit that applies, compiler\n"
	"processes left over from builds that are gone, memory pressure, cgroup support, build\n"
	"tools, the python3 first on PATH (its build dependencies; whether torch imports there\n"
	"and its CUDA), the CUDA toolkit against torch's CUDA, and what TORCH_CUDA_ARCH_LIST\n"
	"makes a torch extension compile (unset: the GPUs torch sees, or with none every\n"
	"architecture of its list, each a full compile of every kernel).\n"
	"\n"
	"A leftover is a compiler process (nvcc, cicc, ptxas, cc1plus, ld...) with no live build\n"
	"tool (ninja, make, cmake, setup.py, pip, uv, headroom) above it, whose compile steps\n"
	"were reparented to init or a subreaper; yours, or any user's when run as root (named).\n"
	"Compilers of a running build, or run by another live program, are listed as such and\n"
	"never ended.\n"
	"\n"
	"      --json      one JSON object: {\"findings\": [{check, status, detail, fix}], \"failed\"};\n"
	"                  leftovers and compiling also have \"processes\": [{pid, comm, uid, user,\n"
	"                  rss_bytes, kind, by_pid, by_comm}] (with --clean: ended, error)\n"
	"      --clean     end the leftovers it lists (SIGKILL, each checked again first); those\n"
	"                  it could not end are named and the exit status is 1\n"
	"      --root DIR  read /proc and /sys under DIR (for tests)\n"
	"  -h, --help      show this help\n"
	"\n"
	"Exit status: 0 when nothing failed (warnings allowed), 1 when a check failed (or\n"
	"--clean could not end a leftover), 2 usage.\n";

struct doctor {
	const char *root;
	int json, clean, failed;
	int preflight;        /* inside headroom run: say only what is wrong, on stderr */
	json_t *findings;
};

/* Record a finding and say it; returns it (still the findings' own) for more fields. */
static json_t *finding(struct doctor *d, const char *check, const char *status, const char *detail, const char *fix)
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
	return f;
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

/* One compiler process the doctor looked at. */
struct compiler_proc {
	const struct proc_entry *e;
	enum leftover_kind kind;
	pid_t by;              /* the build tool, the program running it, or the reaper */
	uid_t uid;
	int err;               /* --clean: 0 ended (or gone already), else the errno */
};

/* The roles of every process (leftover_role); argv is read only where it decides. */
static unsigned *read_roles(const char *root, const struct proc_table *t)
{
	unsigned *roles = xcalloc(t->n ? t->n : 1, sizeof(*roles));
	char buf[4096], *argv[64];

	for (size_t i = 0; i < t->n; i++) {
		const char *c = t->v[i].comm;
		int read = !strncmp(c, "python", 6) || !strcmp(c, "sh") || !strcmp(c, "bash") || !strcmp(c, "dash") ||
			   !strcmp(c, "zsh") || !strcmp(c, "ksh") || !strcmp(c, "busybox");

		if (!read || !proc_cmdline(root, t->v[i].pid, buf, sizeof(buf), argv, 64))
			roles[i] = leftover_role(&t->v[i], NULL);
		else
			roles[i] = leftover_role(&t->v[i], argv);
	}
	return roles;
}

/* A process name as text: comm is any bytes but '\0'. */
static const char *printable(const char *comm, char *out, size_t size)
{
	size_t i = 0;

	for (; comm[i] && i + 1 < size; i++)
		out[i] = comm[i] > ' ' && comm[i] < 127 ? comm[i] : '?';
	out[i] = '\0';
	return out;
}

static void owner_name(uid_t uid, char *out, size_t size)
{
	struct passwd *pw = getpwuid(uid);

	if (pw)
		snprintf(out, size, "%s", pw->pw_name);
	else
		snprintf(out, size, "uid %u", (unsigned)uid);
}

/* "nvcc 101 (alice, 2.00 MiB, in the build of ninja 100)": the owner only for root,
 * who sees every user's. */
static void describe(struct strbuf *sb, const struct proc_table *t, const struct compiler_proc *p, int all_users)
{
	const struct proc_entry *by = proc_table_find(t, p->by);
	char user[64], sz[32], name[32];

	owner_name(p->uid, user, sizeof(user));
	strbuf_addf(sb, "%s %d (%s%s%s", p->e->comm, (int)p->e->pid, all_users ? user : "", all_users ? ", " : "",
		    size_format(p->e->rss_bytes, sz, sizeof(sz)));
	if (p->kind == LEFTOVER_BUILD)
		strbuf_addf(sb, ", in the build of %s %d", by ? printable(by->comm, name, sizeof(name)) : "?", (int)p->by);
	else if (p->kind == LEFTOVER_HELD && by)
		strbuf_addf(sb, ", run by %s %d", printable(by->comm, name, sizeof(name)), (int)p->by);
	else if (p->kind == LEFTOVER_HELD)
		strbuf_addf(sb, ", its parent %d not seen", (int)p->by);
	strbuf_add(sb, ")");
}

static json_t *proc_json(const struct proc_table *t, const struct compiler_proc *p, int cleaning)
{
	static const char *const kinds[] = { [LEFTOVER_ORPHAN] = "leftover", [LEFTOVER_BUILD] = "running_build",
					     [LEFTOVER_HELD] = "in_use" };
	const struct proc_entry *by = proc_table_find(t, p->by);
	struct passwd *pw = getpwuid(p->uid);
	char name[32];
	json_t *o = json_pack("{s:i, s:s, s:I, s:I, s:s, s:i}", "pid", (int)p->e->pid, "comm", p->e->comm, "uid",
			      (json_int_t)p->uid, "rss_bytes", (json_int_t)p->e->rss_bytes, "kind", kinds[p->kind],
			      "by_pid", (int)p->by);

	json_object_set_new(o, "user", pw ? json_string(pw->pw_name) : json_null());
	json_object_set_new(o, "by_comm", by ? json_string(printable(by->comm, name, sizeof(name))) : json_null());
	if (cleaning && p->kind == LEFTOVER_ORPHAN) {
		json_object_set_new(o, "ended", json_boolean(!p->err));
		json_object_set_new(o, "error", p->err ? json_string(strerror(p->err)) : json_null());
	}
	return o;
}

/* End a leftover with SIGKILL, only if the process at its pid is still the one listed
 * (same name, same parent): a pidfd holds it while that is checked. 0 when it ended or
 * was gone already, else the errno. */
static int end_leftover(const struct proc_entry *e)
{
	char path[64], buf[1024];
	struct proc_entry now;
	int fd = (int)syscall(SYS_pidfd_open, e->pid, 0), rc = 0;

	if (fd < 0 && errno == ESRCH)
		return 0;
	if (fd < 0 && errno != ENOSYS)
		return errno;
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)e->pid);
	if (fs_read(path, buf, sizeof(buf)) <= 0 || proc_parse_stat(buf, sysconf(_SC_PAGESIZE), &now) ||
	    strcmp(now.comm, e->comm) || now.ppid != e->ppid)
		goto out; /* gone, or its pid now another process's */
	if ((fd >= 0 ? syscall(SYS_pidfd_send_signal, fd, SIGKILL, NULL, 0) : kill(e->pid, SIGKILL)) && errno != ESRCH)
		rc = errno;
out:
	if (fd >= 0)
		close(fd);
	return rc;
}

static void check_leftovers(struct doctor *d)
{
	struct proc_table t = { 0 };
	struct compiler_proc *v;
	size_t n = 0, nleft = 0, nfailed = 0;
	uint64_t left_bytes = 0;
	uid_t me = getuid();
	int all_users = me == 0;
	unsigned *roles;
	char sz[32];

	if (proc_table_read(d->root, &t)) {
		finding(d, "leftovers", "warn", "cannot read the process table", NULL);
		return;
	}
	roles = read_roles(d->root, &t);
	v = xcalloc(t.n ? t.n : 1, sizeof(*v));
	for (size_t i = 0; i < t.n; i++) {
		const struct proc_entry *e = &t.v[i];
		struct compiler_proc *p = &v[n];

		/* A zombie holds no memory and ends with its parent's wait. */
		if (!leftover_is_compiler(e->comm) || e->pid == getpid() || e->state == 'Z' || e->state == 'X')
			continue;
		if (procinfo_uid(d->root, e->pid, &p->uid) || (!all_users && p->uid != me))
			continue;
		p->e = e;
		p->kind = leftover_classify(&t, roles, i, &p->by);
		if (p->kind == LEFTOVER_ORPHAN) {
			nleft++;
			left_bytes += e->rss_bytes;
		}
		n++;
	}
	/* Only the processes just listed: said first, then done. */
	for (size_t i = 0; d->clean && i < n; i++)
		if (v[i].kind == LEFTOVER_ORPHAN && (v[i].err = end_leftover(v[i].e)))
			nfailed++;

	struct strbuf list = STRBUF_INIT, failed = STRBUF_INIT, held = STRBUF_INIT;
	json_t *left_procs = json_array(), *held_procs = json_array();
	size_t nheld = 0;

	for (size_t i = 0; i < n; i++) {
		struct compiler_proc *p = &v[i];
		if (p->kind != LEFTOVER_ORPHAN) {
			strbuf_add(&held, held.len ? ", " : "");
			describe(&held, &t, p, all_users);
			nheld++;
			json_array_append_new(held_procs, proc_json(&t, p, 0));
			continue;
		}
		json_array_append_new(left_procs, proc_json(&t, p, d->clean));
		if (p->err) {
			strbuf_add(&failed, failed.len ? "; " : "");
			describe(&failed, &t, p, all_users);
			strbuf_addf(&failed, ": %s", strerror(p->err));
		} else {
			strbuf_add(&list, list.len ? ", " : "");
			describe(&list, &t, p, all_users);
		}
	}
	const char *who = all_users ? "" : " of yours";
	char *msg;
	json_t *f;

	if (!nleft) {
		msg = xasprintf("no compiler processes%s left from builds that are gone", who);
		f = finding(d, "leftovers", "ok", msg, NULL);
	} else if (!d->clean) {
		msg = xasprintf("%zu compiler process%s%s left from builds that are gone %s %s: %s", nleft,
				nleft == 1 ? "" : "es", who, nleft == 1 ? "holds" : "hold", size_format(left_bytes, sz, sizeof(sz)),
				strbuf_str(&list));
		f = finding(d, "leftovers", "warn", msg, "end them: headroom doctor --clean");
	} else if (!nfailed) {
		msg = xasprintf("ended %zu compiler process%s%s left from builds that are gone (%s): %s", nleft,
				nleft == 1 ? "" : "es", who, size_format(left_bytes, sz, sizeof(sz)), strbuf_str(&list));
		f = finding(d, "leftovers", "ok", msg, NULL);
	} else {
		msg = xasprintf("could not end %zu of %zu compiler process%s left from builds that are gone: %s%s%s",
				nfailed, nleft, nleft == 1 ? "" : "es", strbuf_str(&failed), list.len ? "; ended: " : "",
				strbuf_str(&list));
		f = finding(d, "leftovers", "fail", msg, "end them as their owner, or as root");
	}
	json_object_set_new(f, "processes", left_procs);
	free(msg);
	if (nheld) {
		msg = xasprintf("%zu compiler process%s%s still in use, left alone: %s", nheld, nheld == 1 ? "" : "es", who,
				strbuf_str(&held));
		f = finding(d, "compiling", "ok", msg, NULL);
		json_object_set_new(f, "processes", held_procs);
		free(msg);
	} else {
		json_decref(held_procs);
	}
	strbuf_release(&list);
	strbuf_release(&failed);
	strbuf_release(&held);
	free(v);
	free(roles);
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

/* What python3 (the first on PATH, as a build runs it) says of itself, torch and the
 * architectures torch.utils.cpp_extension would compile for. Strings owned; NULL unknown. */
struct python_facts {
	char *exe, *version, *missing; /* missing: build dependencies, "" when none */
	char *torch, *torch_cuda;      /* torch's version and CUDA; torch NULL: no import */
	char *torch_error;             /* why torch did not import */
	char *archs;                   /* "8.0 9.0": what an unset TORCH_CUDA_ARCH_LIST builds */
	int gpus;                      /* GPUs torch sees, -1 unknown */
};

/* One line a fact, in struct python_facts' order; "-" for none. The arch list comes from
 * cpp_extension's own choice (_get_cuda_arch_flags): the GPUs torch sees, else every
 * architecture of its list; a private function, so any failure only leaves it unknown. */
static const char python_probe[] =
	"import sys, importlib.util as u, os, re, warnings\n"
	"print(sys.executable or '-'); print(sys.version.split()[0])\n"
	"print(' '.join(m for m in ('ninja', 'packaging', 'wheel', 'psutil', 'setuptools') if u.find_spec(m) is None) or '-')\n"
	"try:\n"
	"    import torch\n"
	"except Exception as e:\n"
	"    print('-'); print('-'); print((type(e).__name__ + ': ' + str(e)).replace('\\n', ' ')[:200]); print('-'); print(-1)\n"
	"    sys.exit(0)\n"
	"print(torch.__version__); print(torch.version.cuda or '-'); print('-')\n"
	"try:\n"
	"    os.environ.pop('TORCH_CUDA_ARCH_LIST', None)\n"
	"    from torch.utils.cpp_extension import _get_cuda_arch_flags\n"
	"    with warnings.catch_warnings():\n"
	"        warnings.simplefilter('ignore')\n"
	"        f = _get_cuda_arch_flags()\n"
	"    a = sorted({m.group(1) for x in f for m in [re.search(r'code=sm_(\\d+)', x)] if m}, key=int)\n"
	"    print(' '.join(v[:-1] + '.' + v[-1] for v in a) or '-')\n"
	"except Exception:\n"
	"    print('-')\n"
	"try:\n"
	"    print(torch.cuda.device_count())\n"
	"except Exception:\n"
	"    print(-1)\n";

static char *fact(char **line)
{
	char *l = *line, *nl;

	if (!l || !*l)
		return NULL;
	nl = strchr(l, '\n');
	if (nl)
		*nl = '\0';
	*line = nl ? nl + 1 : l + strlen(l);
	return strcmp(l, "-") ? xstrdup(l) : NULL;
}

/* 0, or -ENOENT when no python3 ran. */
static int python_facts_read(struct python_facts *p)
{
	char *const argv[] = { "python3", "-c", (char *)python_probe, NULL };
	char *out = command_output(argv, PYTHON_CWD), *l = out, *gpus;

	memset(p, 0, sizeof(*p));
	p->gpus = -1;
	if (!out || !*out) {
		free(out);
		return -ENOENT;
	}
	p->exe = fact(&l);
	p->version = fact(&l);
	p->missing = fact(&l);
	if (!p->missing)
		p->missing = xstrdup("");
	p->torch = fact(&l);
	p->torch_cuda = fact(&l);
	p->torch_error = fact(&l);
	p->archs = fact(&l);
	gpus = fact(&l);
	if (gpus) {
		int64_t n;
		if (!parse_int64(gpus, 0, 1024, &n))
			p->gpus = (int)n;
		free(gpus);
	}
	free(out);
	return 0;
}

static void python_facts_free(struct python_facts *p)
{
	free(p->exe);
	free(p->version);
	free(p->missing);
	free(p->torch);
	free(p->torch_cuda);
	free(p->torch_error);
	free(p->archs);
}

static void check_cuda(struct doctor *d, const struct python_facts *py)
{
	const char *home = getenv("CUDA_HOME"), *torch = py ? py->torch_cuda : NULL;
	char *nvcc = nvcc_release("nvcc");
	char *msg;

	if (!nvcc && home && *home) {
		char *path = xasprintf("%s/bin/nvcc", home);
		nvcc = nvcc_release(path);
		free(path);
	}
	if (!nvcc) {
		finding(d, "cuda", "warn", "no nvcc on PATH or in CUDA_HOME",
			"for CUDA extensions, set CUDA_HOME to the toolkit or put its bin/ on PATH");
	} else if (!py || !py->torch) {
		msg = xasprintf("nvcc %s; no PyTorch to compare it with (%s)", nvcc,
				py ? "torch does not import" : "no python3");
		finding(d, "cuda", "warn", msg, "install PyTorch in the python3 the build will run (see the python check)");
		free(msg);
	} else if (!torch) {
		msg = xasprintf("nvcc %s, but PyTorch %s is a CPU-only build", nvcc, py->torch);
		finding(d, "cuda", "warn", msg, "install a PyTorch built with CUDA of nvcc's major version");
		free(msg);
	} else if (strncmp(nvcc, torch, strcspn(torch, "."))) {
		msg = xasprintf("nvcc %s, but PyTorch was built with CUDA %s", nvcc, torch);
		finding(d, "cuda", "warn", msg, "use a toolkit of PyTorch's CUDA major version (CUDA_HOME), or a PyTorch built for yours");
		free(msg);
	} else {
		msg = xasprintf("nvcc %s, PyTorch built with CUDA %s", nvcc, torch);
		finding(d, "cuda", "ok", msg, NULL);
		free(msg);
	}
	free(nvcc);
}

static void check_python(struct doctor *d, const struct python_facts *py)
{
	char *msg, *fix = NULL;

	if (!py) {
		finding(d, "python", "warn", "no python3 on PATH", "install python3 (Debian: apt-get install python3)");
		return;
	}
	if (!*py->missing) {
		msg = xasprintf("%s (Python %s): build dependencies present (ninja, packaging, wheel, psutil, setuptools)",
				py->exe ? py->exe : "python3", py->version ? py->version : "?");
	} else {
		msg = xasprintf("%s (Python %s) lacks Python build dependencies: %s", py->exe ? py->exe : "python3",
				py->version ? py->version : "?", py->missing);
		fix = xasprintf("pip install %s (before pip install --no-build-isolation ...)", py->missing);
	}
	finding(d, "python", fix ? "warn" : "ok", msg, fix);
	free(msg);
	free(fix);
	if (py->torch)
		msg = xasprintf("torch %s imports in %s (CUDA %s; %d GPU%s visible to it)", py->torch,
				py->exe ? py->exe : "python3", py->torch_cuda ? py->torch_cuda : "none: a CPU-only build",
				py->gpus < 0 ? 0 : py->gpus, py->gpus == 1 ? "" : "s");
	else
		msg = xasprintf("torch does not import in %s (%s)", py->exe ? py->exe : "python3",
				py->torch_error ? py->torch_error : "unknown error");
	finding(d, "torch", py->torch ? "ok" : "warn", msg,
		py->torch ? NULL : "install PyTorch into this python3, or put the one that has it first on PATH");
	free(msg);
}

/* What TORCH_CUDA_ARCH_LIST makes a torch extension compile: every architecture is a
 * full compile of every kernel, the largest multiplier of a flash-attn build's time and
 * memory. */
static void check_arch_list(struct doctor *d, const struct python_facts *py)
{
	const char *set = getenv("TORCH_CUDA_ARCH_LIST");
	char *msg, *fix = NULL;
	const char *status = "ok";

	if (set && *set) {
		msg = xasprintf("TORCH_CUDA_ARCH_LIST=%s: torch extensions compile for those", set);
	} else if (!py || !py->torch) {
		msg = xasprintf("TORCH_CUDA_ARCH_LIST is not set (what torch would build for is unknown: no torch)");
		status = "warn";
		fix = xasprintf("set TORCH_CUDA_ARCH_LIST to your GPUs' compute capability, e.g. 9.0 for H100/H200");
	} else if (py->gpus > 0) {
		msg = xasprintf("TORCH_CUDA_ARCH_LIST is not set: torch compiles for the GPUs it sees (%s)",
				py->archs ? py->archs : "their architectures");
	} else {
		msg = xasprintf("TORCH_CUDA_ARCH_LIST is not set and torch sees no GPU: it compiles for every "
				"architecture of its list (%s)", py->archs ? py->archs : "unknown");
		status = "warn";
		fix = xasprintf("set TORCH_CUDA_ARCH_LIST to the GPUs the build is for, e.g. '9.0' for H100/H200 "
				"(flash-attn also reads FLASH_ATTN_CUDA_ARCHS, e.g. 90)");
	}
	finding(d, "arch list", status, msg, fix);
	free(msg);
	free(fix);
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
		default: opt_refused("doctor", opts, argv);
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
		struct python_facts py;
		int have_py = python_facts_read(&py) == 0;
		check_python(&d, have_py ? &py : NULL);
		check_cuda(&d, have_py ? &py : NULL);
		check_arch_list(&d, have_py ? &py : NULL);
		if (have_py)
			python_facts_free(&py);
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
