/* headroom run: run a build with every compile job admitted by memory. */
#include <errno.h>
#include <getopt.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cmd/cmd.h"
#include "govern/governor.h"
#include "sys/command.h"
#include "sys/cpus.h"
#include "govern/launch.h"
#include "govern/tree.h"
#include "sys/fsutil.h"
#include "sys/proc.h"
#include "store/store.h"
#include "util/log.h"
#include "util/path.h"
#include "util/units.h"
#include "util/xalloc.h"

static const char usage[] =
	"usage: headroom run [OPTIONS] -- COMMAND [ARGS...]\n"
	"\n"
	"Run a build (pip, setup.py, cmake --build, ninja, make...) so that its compile jobs\n"
	"start only when memory can hold them, learned from earlier jobs; freeze or requeue\n"
	"jobs if memory runs short anyway. COMMAND's jobs reach headroom through the\n"
	"launcher variables it sets: HEADROOM_LAUNCHER, PYTORCH_NVCC,\n"
	"CMAKE_{C,CXX,CUDA}_COMPILER_LAUNCHER, CC and CXX for python/pip builds (shims\n"
	"named cc and c++ that launch the real compilers), and\n"
	"MAX_JOBS when it is not set. A build tool run directly (make, ninja outside a CMake\n"
	"build directory) runs its compilers as its Makefile says: its jobs are found in the\n"
	"process tree from the first, as with --tree, beside the launcher. Compilers seen\n"
	"running outside the launcher otherwise (a script that overwrites PYTORCH_NVCC)\n"
	"make headroom govern the process tree as well; so does a\n"
	"CMake build directory configured without headroom (reconfigure it under headroom run).\n"
	"Compiler cache hits (ccache, sccache), configure checks and jobs seen only in part are\n"
	"counted but not learned.\n"
	"\n"
	"  -j, --jobs N        at most N jobs at once (default: the build's own -jN, --jobs=N,\n"
	"                      --parallel N or make's MAKEFLAGS -jN, else a MAX_JOBS you set,\n"
	"                      else the CPUs it may use: its affinity mask, or a cgroup v2 CPU\n"
	"                      quota when smaller)\n"
	"  -b, --budget SIZE   memory the jobs may use together, e.g. 24G (default: the\n"
	"                      cgroup limit or RAM, less what others use and a reserve)\n"
	"      --reserve SIZE  memory always kept free (default: 6% of the limit, 64M..2G)\n"
	"                      (SIZE: a number and its unit: K/M/G/T powers of 1024, KB/MB/GB\n"
	"                      powers of 1000; a bare number is refused; docs/units.md)\n"
	"      --tree          no launcher: govern each child of ninja/make found in the process\n"
	"                      tree (held until admitted, frozen when short; never killed)\n"
	"      --jobserver[=STYLE]  serve a GNU make jobserver handing out tokens by memory, with\n"
	"                      --tree: for make, and ninja >= 1.13, run WITHOUT -j. STYLE: pipe\n"
	"                      (make <= 4.3), fifo (make >= 4.4, ninja >= 1.13), auto (default);\n"
	"                      one the installed make or ninja cannot read is refused\n"
	"      --db PATH       profile store (default: $XDG_STATE_HOME/headroom/profiles.db); read\n"
	"                      only until the build saves what it learned, made then; one that\n"
	"                      cannot be read or written costs the learning, not the build; a\n"
	"                      file that is not headroom's is refused and left as it is\n"
	"      --no-db         learn for this build only\n"
	"      --report FILE   write the end report as JSON to FILE\n"
	"      --trace FILE    write a Chrome/Perfetto trace: a span per job, memory counters\n"
	"      --record FILE   write the build as a headroom-trace/1 file, for bench/build/replay\n"
	"                      (each checked before the build: its directory must exist, and it\n"
	"                      may be neither the store nor another of these)\n"
	"  -q, --quiet         no live line and no end report: only warnings and errors on\n"
	"                      stderr (--report FILE still writes the report)\n"
	"  -v, --verbose       say what headroom decides, as it decides\n"
	"  -h, --help          show this help\n"
	"\n"
	"Exit status: COMMAND's own; 128+N if headroom was stopped by signal N (130 for\n"
	"Ctrl-C); 2 for a usage error (an output in a missing directory, or naming the store);\n"
	"125 if headroom itself failed (a --db that is not headroom's, the socket, an output\n"
	"it could not write: then the file that was there is left as it was);\n"
	"126/127 if COMMAND cannot be run / is not found.\n";

/* The most jobs at once that -j, a build's -j or MAX_JOBS may ask for. */
#define MAX_JOBS_CAP 100000

/* Prepend our launcher to a variable, keeping a launcher the user already has. */
static void set_launcher(const char *var, const char *ours, const char *sep)
{
	const char *old = getenv(var);
	char *v;

	if (old && strstr(old, "headroom"))
		return;
	v = old && *old ? xasprintf("%s%s%s", ours, sep, old) : xstrdup(ours);
	setenv(var, v, 1);
	free(v);
}

static char *find_nvcc(void)
{
	const char *home = getenv("CUDA_HOME");
	char *p;

	if (!home || !*home)
		home = getenv("CUDA_PATH");
	if (home && *home) {
		p = xasprintf("%s/bin/nvcc", home);
		if (!access(p, X_OK))
			return p;
		free(p);
	}
	if (!access("/usr/local/cuda/bin/nvcc", X_OK))
		return xstrdup("/usr/local/cuda/bin/nvcc");
	return NULL;
}

/* torch.utils.cpp_extension compiles C++ with $CXX (default c++), setuptools with $CC:
 * for python and pip builds they go through the launcher too. Not for others: CMake
 * would take the launcher for the compiler itself. */
static int is_python_build(const char *cmd)
{
	const char *b = path_base(cmd);

	return !strncmp(b, "python", 6) || !strncmp(b, "pip", 3) || !strcmp(b, "uv");
}

/* Point var (CC, CXX) at a shim named shim_name in shim_dir: a link to headroom that
 * runs the real compiler through the launcher. A shim rather than "headroom exec -- c++"
 * in the variable, because build scripts look at the compiler's name and version
 * (torch.utils.cpp_extension runs `$CXX -dumpversion` and rejects other names). */
static void shim_compiler(const char *self, const char *shim_dir, const char *var, const char *shim_name,
			  const char *real_var, const char *dflt)
{
	const char *old = getenv(var);
	char *first, *rest, *real, *link, *v;

	if (old && strstr(old, "headroom"))
		return;
	first = xstrdup(old && *old ? old : dflt);
	rest = strpbrk(first, " \t");
	if (rest)
		*rest++ = '\0';
	real = fs_which(first);
	link = xasprintf("%s/%s", shim_dir, shim_name);
	if (real && !symlink(self, link)) {
		setenv(real_var, real, 1);
		v = rest && *rest ? xasprintf("%s %s", link, rest) : xstrdup(link);
		setenv(var, v, 1);
		free(v);
	} else {
		log_debug("no shim for %s (%s not found)", var, first);
	}
	free(link);
	free(real);
	free(first);
}

/* The launcher the build calls once per compile job: headroom-exec beside headroom, a
 * small static program that starts in a fraction of headroom's time, else headroom
 * exec. *launcher is the command, *cmake the same as a CMake list, *shim what the cc and
 * c++ shims link to; caller frees. */
static void launcher_of(const char *self, char **launcher, char **cmake, char **shim)
{
	const char *base = path_base(self);
	char *small = xasprintf("%.*s%s", (int)(base - self), self, LAUNCH_EXEC_NAME);

	if (!access(small, X_OK)) {
		*launcher = xasprintf("%s --", small);
		*cmake = xasprintf("%s;--", small);
		*shim = small;
		return;
	}
	free(small);
	*launcher = xasprintf("%s exec --", self);
	*cmake = xasprintf("%s;exec;--", self);
	*shim = xstrdup(self);
}

static void wire_launchers(const char *self, int jobs, const char *cmd, const char *shim_dir)
{
	char *launcher, *cmake, *shim;
	const char *pt = getenv("PYTORCH_NVCC");

	launcher_of(self, &launcher, &cmake, &shim);

	setenv(LAUNCH_ENV_VAR, launcher, 1);
	set_launcher("CMAKE_C_COMPILER_LAUNCHER", cmake, ";");
	set_launcher("CMAKE_CXX_COMPILER_LAUNCHER", cmake, ";");
	set_launcher("CMAKE_CUDA_COMPILER_LAUNCHER", cmake, ";");
	if (pt && *pt) {
		set_launcher("PYTORCH_NVCC", launcher, " ");
	} else {
		char *nvcc = find_nvcc();
		if (nvcc) {
			char *v = xasprintf("%s %s", launcher, nvcc);
			setenv("PYTORCH_NVCC", v, 1);
			free(v);
			free(nvcc);
		}
	}
	if (shim_dir && is_python_build(cmd)) {
		shim_compiler(shim, shim_dir, "CC", "cc", "HEADROOM_REAL_CC", "cc");
		shim_compiler(shim, shim_dir, "CXX", "c++", "HEADROOM_REAL_CXX", "c++");
	}
	if (!getenv("MAX_JOBS")) {
		char n[16];
		snprintf(n, sizeof(n), "%d", jobs);
		setenv("MAX_JOBS", n, 1);
	}
	free(launcher);
	free(cmake);
	free(shim);
}

static void remove_shims(const char *dir)
{
	static const char *const names[] = { "cc", "c++" };

	for (size_t i = 0; i < 2; i++) {
		char *p = xasprintf("%s/%s", dir, names[i]);
		unlink(p);
		free(p);
	}
	rmdir(dir);
}

/* A whole number of jobs from 1, or 0 when s is none. */
static int jobs_number(const char *s)
{
	char *end;
	long n;

	if (!s || !*s)
		return 0;
	errno = 0;
	n = strtol(s, &end, 10);
	return errno || *end || n < 1 || n > MAX_JOBS_CAP ? 0 : (int)n;
}

/* The jobs one word of a make or ninja command line asks for: -j8, --jobs=8, or a
 * cluster of make's one-letter flags ending in j (-kj8); with next, the number may be
 * the word after (-j 8, --jobs 8, -kj 8): then *took_next is set. 0 when none. */
static int word_jobs(const char *w, const char *next, int cmake, int *took_next)
{
	const char *v = NULL;
	int want_next = 0;

	*took_next = 0;
	if (!strcmp(w, "--jobs") || (cmake && !strcmp(w, "--parallel")))
		want_next = 1;
	else if (!strncmp(w, "--jobs=", 7))
		v = w + 7;
	else if (cmake && !strncmp(w, "--parallel=", 11))
		v = w + 11;
	else if (w[0] == '-' && w[1] != '-') {
		const char *j = strchr(w, 'j');
		if (j && strspn(w + 1, "BbeikLnpqrRsStvwj") == (size_t)(j - w)) {
			if (j[1])
				v = j + 1;
			else
				want_next = 1;
		}
	}
	if (want_next && jobs_number(next)) {
		v = next;
		*took_next = 1;
	}
	return jobs_number(v);
}

/* The -jN in MAKEFLAGS ("-j8", "kj8 --jobserver-auth=...", "-j 8"): GNU make's first word
 * is a cluster of one-letter flags, with or without its dash. 0 when none. */
static int makeflags_jobs(const char *mf)
{
	char *copy = xasprintf("-%s", mf + strspn(mf, " -")), *save = NULL;
	char *words[64];
	size_t nw = 0;
	int n = 0, took;

	if (mf[0] == '-' && mf[1] == '-') { /* no one-letter cluster: the first word is long */
		free(copy);
		copy = xstrdup(mf);
	}
	for (char *w = strtok_r(copy, " ", &save); w && nw < 63; w = strtok_r(NULL, " ", &save))
		words[nw++] = w;
	words[nw] = NULL;
	for (size_t i = 0; i < nw; i++) {
		int m = word_jobs(words[i], words[i + 1], 0, &took);
		if (m)
			n = m;
		i += (size_t)took;
	}
	free(copy);
	return n;
}

/* The parallelism the build command asks for itself: -jN, -j N, --jobs=N, --jobs N (make,
 * ninja, also in make's clusters such as -kj8), make's MAKEFLAGS, cmake --build's
 * --parallel N, -j N or CMAKE_BUILD_PARALLEL_LEVEL. 0 when it names none; *flag gets the
 * words that did. */
static int build_jobs(char **argv, char *flag, size_t size)
{
	const char *b = path_base(argv[0]);
	int cmake = !strcmp(b, "cmake"), make = !strcmp(b, "make") || !strcmp(b, "gmake"), n = 0, took;

	if (!cmake && !make && strcmp(b, "ninja") && strcmp(b, "samu"))
		return 0;
	for (char **a = argv + 1; *a && strcmp(*a, "--"); a++) {
		int m = word_jobs(*a, a[1], cmake, &took);
		if (m) {
			n = m;
			snprintf(flag, size, "build -j%d", n);
		}
		a += took;
	}
	if (!n && make && getenv("MAKEFLAGS") && (n = makeflags_jobs(getenv("MAKEFLAGS"))))
		snprintf(flag, size, "MAKEFLAGS -j%d", n);
	if (!n && cmake) {
		n = jobs_number(getenv("CMAKE_BUILD_PARALLEL_LEVEL"));
		if (n)
			snprintf(flag, size, "CMAKE_BUILD_PARALLEL_LEVEL=%d", n);
	}
	return n;
}

/* The CPU cap: headroom's -j, else the build's own -jN, else a MAX_JOBS the user set,
 * else the CPUs this process may use (headroom then sets the parallelism: MAX_JOBS). */
static void choose_cap(struct governor_opts *o, int jobs_opt, char *from, size_t size)
{
	int n;

	if (jobs_opt) {
		o->jobs = jobs_opt;
		snprintf(from, size, "headroom -j%d", jobs_opt);
	} else if ((n = build_jobs(o->argv, from, size))) {
		o->jobs = n;
	} else if ((n = jobs_number(getenv("MAX_JOBS")))) {
		o->jobs = n;
		snprintf(from, size, "MAX_JOBS=%d", n);
	} else {
		o->jobs = cpus_usable("");
		snprintf(from, size, "%d CPU%s", o->jobs, o->jobs == 1 ? "" : "s");
	}
	o->jobs_from = from;
	log_info("at most %d jobs at once (%s)", o->jobs, from);
}

/* The CMake build directory the command builds, or NULL: `cmake --build DIR`, or ninja
 * or make run in (or -C) a directory that holds a CMakeCache.txt. Caller frees. */
static char *cmake_build_dir(char **argv)
{
	const char *b = path_base(argv[0]), *dir = ".";
	char *cache;

	if (!strcmp(b, "cmake")) {
		if (!argv[1] || strcmp(argv[1], "--build") || !argv[2])
			return NULL;
		dir = argv[2];
	} else if (!strcmp(b, "ninja") || !strcmp(b, "make") || !strcmp(b, "gmake")) {
		for (char **a = argv + 1; *a; a++) {
			if (!strcmp(*a, "-C") && a[1])
				dir = *++a;
			else if (!strncmp(*a, "-C", 2) && (*a)[2])
				dir = *a + 2;
		}
	} else {
		return NULL;
	}
	cache = xasprintf("%s/CMakeCache.txt", dir);
	if (access(cache, R_OK)) {
		free(cache);
		return NULL;
	}
	free(cache);
	return xstrdup(dir);
}

/* Enough of a CMakeCache.txt for the variables CMake writes first and the launchers. */
#define CMAKE_CACHE_MAX (1 << 20)

/* A line "KEY:TYPE=value" of a CMakeCache.txt, value into out (size bytes); 0 or -ENOENT. */
static int cmake_cache_get(const char *text, const char *key, char *out, size_t size)
{
	size_t klen = strlen(key);

	for (const char *l = text; *l; l += strcspn(l, "\n"), l += *l == '\n') {
		const char *eq;
		if (strncmp(l, key, klen) || l[klen] != ':' || !(eq = strchr(l, '=')))
			continue;
		size_t n = strcspn(eq + 1, "\n");
		snprintf(out, size, "%.*s", (int)n, eq + 1);
		return 0;
	}
	return -ENOENT;
}

/* A CMake build directory configured without headroom: no CMAKE_<LANG>_COMPILER_LAUNCHER
 * reaches `headroom exec`, and CMake keeps what it found at the first configure. Say so,
 * and govern the process tree instead. Returns 1 when it did, 0 for a build directory
 * configured with headroom's launcher, -1 when the build is no CMake build's. */
static int cmake_without_launcher(char **argv)
{
	static const char *const langs[] = { "C", "CXX", "CUDA", "HIP", "OBJC", "OBJCXX", "Fortran" };
	char *dir = cmake_build_dir(argv), *path, *text, v[4096], src[4096];
	int ours = 0;

	if (!dir)
		return -1;
	path = xasprintf("%s/CMakeCache.txt", dir);
	text = xmalloc(CMAKE_CACHE_MAX);
	if (fs_read(path, text, CMAKE_CACHE_MAX) < 0) {
		free(text);
		text = NULL;
	}
	free(path);
	for (size_t i = 0; text && i < sizeof(langs) / sizeof(*langs); i++) {
		char key[64];
		snprintf(key, sizeof(key), "CMAKE_%s_COMPILER_LAUNCHER", langs[i]);
		if (!cmake_cache_get(text, key, v, sizeof(v)) && (strstr(v, ";exec;--") || strstr(v, LAUNCH_EXEC_NAME ";--")))
			ours = 1;
	}
	if (!text || ours) {
		free(text);
		free(dir);
		return 0;
	}
	if (cmake_cache_get(text, "CMAKE_HOME_DIRECTORY", src, sizeof(src)))
		snprintf(src, sizeof(src), "SOURCE_DIR");
	log_warn("the build directory %s was configured without headroom's launcher (its CMakeCache.txt "
		 "sets no CMAKE_<LANG>_COMPILER_LAUNCHER to headroom exec): reconfigure it under headroom "
		 "(headroom run -- cmake -S %s -B %s), or build it with --tree. This build: governing the "
		 "process tree, as with --tree", dir, src, dir);
	free(text);
	free(dir);
	return 1;
}

/* Are a and b one file: the same inode when both exist, else the same path once their
 * directories are resolved? */
static int same_file(const char *a, const char *b)
{
	char da[PATH_MAX], db[PATH_MAX], ra[PATH_MAX], rb[PATH_MAX];
	struct stat sa, sb;

	if (!stat(a, &sa) && !stat(b, &sb))
		return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
	snprintf(da, sizeof(da), "%s", a);
	snprintf(db, sizeof(db), "%s", b);
	if (!realpath(dirname(da), ra) || !realpath(dirname(db), rb))
		return 0;
	return !strcmp(ra, rb) && !strcmp(path_base(a), path_base(b));
}

/* --report, --trace and --record are written after the build: a directory that is not
 * there, or an output that is the store (which it would overwrite) or another output,
 * is said before the build starts, not found when it has ended. */
static void check_outputs(const struct governor_opts *o, const char *db)
{
	const struct { const char *opt, *path; } out[] = {
		{ "--report", o->report_path },
		{ "--trace", o->trace_path },
		{ "--record", o->record_path },
	};
	char dir[PATH_MAX], base[PATH_MAX];
	struct stat sb;

	for (size_t i = 0; i < sizeof(out) / sizeof(*out); i++) {
		const char *p = out[i].path;

		if (!p)
			continue;
		if (!*p)
			die(EXIT_USAGE, "run: %s wants a file name", out[i].opt);
		/* dirname() may return a static "." rather than cut its argument */
		snprintf(base, sizeof(base), "%s", p);
		snprintf(dir, sizeof(dir), "%s", dirname(base));
		if (stat(dir, &sb) || !S_ISDIR(sb.st_mode))
			die(EXIT_USAGE, "run: %s %s: the directory %s does not exist", out[i].opt, p, dir);
		if (access(dir, W_OK | X_OK))
			die(EXIT_USAGE, "run: %s %s: cannot write in %s: %s", out[i].opt, p, dir, strerror(errno));
		if (!stat(p, &sb) && S_ISDIR(sb.st_mode))
			die(EXIT_USAGE, "run: %s %s is a directory", out[i].opt, p);
		if (db && same_file(p, db))
			die(EXIT_USAGE, "run: %s %s is the profile store (--db): it would be overwritten", out[i].opt, p);
		for (size_t j = 0; j < i; j++)
			if (out[j].path && same_file(p, out[j].path))
				die(EXIT_USAGE, "run: %s and %s name the same file, %s", out[j].opt, out[i].opt, p);
	}
}

static enum jobserver_style choose_jobserver(const char *style, const char *cmd)
{
	char *const make_argv[] = { "make", "--version", NULL };
	char *const ninja_argv[] = { "ninja", "--version", NULL };
	char *make, *ninja;
	enum jobserver_style js;

	make = command_first_line(make_argv, NULL);
	ninja = command_first_line(ninja_argv, NULL);
	if (strcmp(style, "auto")) {
		/* one the tools cannot read fails inside the build: say so before it starts */
		js = !strcmp(style, "pipe") ? JOBSERVER_PIPE : JOBSERVER_FIFO;
		if (jobserver_style_readable(js, make, ninja, cmd))
			goto out;
		if (!strcmp(path_base(cmd), "ninja"))
			die(EXIT_USAGE, "run: --jobserver=%s: ninja %s reads no %s jobserver (ninja 1.13 reads fifo); "
					"use --jobserver to choose, or --tree", style, ninja ? ninja : "", style);
		die(EXIT_USAGE, "run: --jobserver=fifo: %s reads no fifo jobserver (make 4.4 added it); "
				"use --jobserver=pipe, or --jobserver to choose", make);
	}
	js = jobserver_style_for(make, ninja, cmd);
	if (js == JOBSERVER_NONE)
		die(EXIT_USAGE, "run: ninja %s takes no jobserver tokens (1.13 does); run it with --tree, "
				"or through the launcher (no option)", ninja ? ninja : "(not found)");
out:
	free(make);
	free(ninja);
	return js;
}

/* What the command line says, apart from the build command. */
struct run_args {
	struct governor_opts o;
	char *db;
	int no_db, jobserver, jobs_opt;
	const char *js_style;
};

/* Parse the options into a; exits on --help or a bad option. */
static void run_options(int argc, char **argv, struct run_args *a)
{
	enum { OPT_DB = 256, OPT_NODB, OPT_REPORT, OPT_RESERVE, OPT_TRACE, OPT_RECORD, OPT_TREE, OPT_JOBSERVER };
	static const struct option opts[] = {
		{ "jobs", required_argument, NULL, 'j' },
		{ "budget", required_argument, NULL, 'b' },
		{ "reserve", required_argument, NULL, OPT_RESERVE },
		{ "db", required_argument, NULL, OPT_DB },
		{ "no-db", no_argument, NULL, OPT_NODB },
		{ "report", required_argument, NULL, OPT_REPORT },
		{ "trace", required_argument, NULL, OPT_TRACE },
		{ "tree", no_argument, NULL, OPT_TREE },
		{ "jobserver", optional_argument, NULL, OPT_JOBSERVER },
		{ "record", required_argument, NULL, OPT_RECORD },
		{ "quiet", no_argument, NULL, 'q' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct governor_opts *o = &a->o;
	int c, rc;

	while ((c = getopt_long(argc, argv, "+j:b:qvh", opts, NULL)) != -1) {
		switch (c) {
		case 'j':
			a->jobs_opt = jobs_number(optarg);
			if (!a->jobs_opt)
				die(EXIT_USAGE, "run: --jobs wants a whole number from 1, not '%s'", optarg);
			break;
		case 'b':
			rc = size_parse(optarg, &o->budget_bytes);
			opt_size_unit("run", "--budget", optarg, rc, 'G');
			if (rc || !o->budget_bytes)
				die(EXIT_USAGE, "run: --budget wants a size such as 24G or 512M, not '%s'", optarg);
			break;
		case OPT_RESERVE:
			rc = size_parse(optarg, &o->reserve_bytes);
			opt_size_unit("run", "--reserve", optarg, rc, 'G');
			if (rc)
				die(EXIT_USAGE, "run: --reserve wants a size such as 1G, not '%s'", optarg);
			break;
		case OPT_DB:
			if (!*optarg)
				die(EXIT_USAGE, "run: --db wants a path, not ''");
			free(a->db);
			a->db = xstrdup(optarg);
			break;
		case OPT_NODB:
			a->no_db = 1;
			break;
		case OPT_REPORT:
			o->report_path = optarg;
			break;
		case OPT_TRACE:
			o->trace_path = optarg;
			break;
		case OPT_TREE:
			o->tree = 1;
			break;
		case OPT_JOBSERVER:
			a->jobserver = 1;
			a->js_style = optarg ? optarg : "auto";
			if (strcmp(a->js_style, "auto") && strcmp(a->js_style, "pipe") && strcmp(a->js_style, "fifo"))
				die(EXIT_USAGE, "run: --jobserver takes auto, pipe or fifo, not '%s'", a->js_style);
			break;
		case OPT_RECORD:
			o->record_path = optarg;
			break;
		case 'q':
			o->quiet = 1;
			log_level = 0;
			break;
		case 'v':
			if (log_level < 2)
				log_level = 2;
			break;
		case 'h':
			fputs(usage, stdout);
			free(a->db);
			exit(0);
		default:
			opt_refused("run", opts, argv);
		}
	}
}

/* Where the build's jobs are found. A build tool run directly (make, ninja, samu) outside
 * a CMake build directory starts its compilers itself, as its Makefile or build.ninja says:
 * only one that names $HEADROOM_LAUNCHER goes through the launcher. So its children are
 * governed from the first (the process tree, as --tree) beside the launcher, rather than
 * found later as compilers that escaped it, seen in part. */
static void find_jobs_how(struct governor_opts *o)
{
	int cmake = cmake_without_launcher(o->argv);

	if (cmake > 0)
		o->tree = 1;
	else if (cmake < 0 && tree_is_build_tool(path_base(o->argv[0])))
		o->tree_too = 1;
}

int cmd_run(int argc, char **argv)
{
	struct run_args a = { .o = { .proc_root = "", .tick_ms = 100 }, .js_style = "auto" };
	struct governor_opts *o = &a.o;
	char *err = NULL, *shim_dir = NULL, self[PATH_MAX], cap_from[64];
	int status;

	run_options(argc, argv, &a);
	if (optind >= argc) {
		free(a.db);
		die(EXIT_USAGE, "run: missing the build command (try: headroom run -- ninja -C build)");
	}
	o->argv = argv + optind;
	choose_cap(o, a.jobs_opt, cap_from, sizeof(cap_from));
	if (a.jobserver) {
		o->jobserver = choose_jobserver(a.js_style, o->argv[0]);
		o->tree = 1;
	}

	if (!a.no_db && !a.db)
		a.db = store_default_path();
	check_outputs(o, a.no_db ? NULL : a.db);
	if (!a.no_db) {
		int rc = store_open(a.db, &o->store, &err);
		if (rc == -EMEDIUMTYPE) {
			/* Someone else's file: refused, and left as it was. */
			log_warn("profile store: %s", err);
			log_warn("choose another with --db PATH, or run without one with --no-db");
			free(err);
			free(a.db);
			return EXIT_INTERNAL;
		} else if (rc) {
			/* Locked, unreadable: the build matters more than what it would learn. */
			log_warn("profile store: %s; this build runs without learned profiles", err);
			free(err);
		}
	}
	if (proc_self_exe(self, sizeof(self)))
		die(EXIT_INTERNAL, "cannot find headroom's own path in /proc/self/exe");
	if (!o->quiet)
		doctor_preflight();
	if (!o->tree)
		find_jobs_how(o);
	/* With --tree the jobs are found below ninja/make; a launcher would make them twice. */
	if (!o->tree) {
		shim_dir = xasprintf("%s/headroom-shims.XXXXXX", runtime_dir());
		if (!mkdtemp(shim_dir)) {
			free(shim_dir);
			shim_dir = NULL;
		}
		wire_launchers(self, o->jobs, o->argv[0], shim_dir);
		o->shim_dir = shim_dir;
	}
	status = governor_run(o);
	if (shim_dir) {
		remove_shims(shim_dir);
		free(shim_dir);
	}
	store_close(o->store);
	free(a.db);
	return status;
}
