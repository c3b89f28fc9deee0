#include "govern/signature.h"

#include <stdlib.h>
#include <string.h>

#include "util/path.h"
#include "util/strbuf.h"
#include "util/strv.h"
#include "util/xalloc.h"

/* Launchers that run the compiler named after them: a cache, or one that sends the
 * compile to other machines (the preprocessing stays here). */
static int is_cache(const char *tool)
{
	static const char *const w[] = { "ccache", "sccache", NULL };
	return strv_contains(w, tool);
}

static int is_remote(const char *tool)
{
	static const char *const w[] = { "distcc", "icecc", NULL };
	return strv_contains(w, tool);
}

static int is_wrapper(const char *tool)
{
	return is_cache(tool) || is_remote(tool);
}

/* A compiler or linker driver, by name: gcc, x86_64-linux-gnu-g++-12, clang++-15... */
static int is_compiler_tool(const char *tool)
{
	static const char *const names[] = {
		"cc", "c++", "gcc", "g++", "clang", "clang++", "clang-cl", "nvcc", "gfortran", "rustc",
		"icc", "icpc", "icx", "icpx", "hipcc", "nvc", "nvc++", "cc1", "cc1plus", "cicc", "ptxas",
		"cudafe++", "lto1", "ld", "ld.bfd", "ld.gold", "ld.lld", "lld", "mold", "gold", NULL,
	};
	char name[64];
	size_t n = strlen(tool);

	if (n >= sizeof(name))
		return 0;
	memcpy(name, tool, n + 1);
	/* a version suffix: -12, -15.0 */
	char *dash = strrchr(name, '-');
	if (dash && dash[1] && strspn(dash + 1, "0123456789.") == strlen(dash + 1))
		*dash = '\0';
	/* a target prefix: x86_64-linux-gnu- */
	for (const char *p = name; p; p = strchr(p, '-')) {
		if (*p == '-')
			p++;
		if (strv_contains(names, p))
			return 1;
	}
	return 0;
}

/* A configure step's compile or link: CMake's try_compile projects (cmTC_* targets in
 * CMakeScratch or CMakeTmp) and its compiler identification sources. */
static int is_check_arg(const char *a)
{
	const char *b = path_base(a);

	return strstr(a, "cmTC_") || strstr(a, "CMakeFiles/CMakeScratch/") || strstr(a, "CMakeFiles/CMakeTmp/") ||
	       (!strncmp(b, "CMake", 5) && (strstr(b, "CompilerId") || strstr(b, "CompilerABI")));
}

/* A compiler asked who it is, not to compile: a build script's version query (`nvcc -V`
 * from flash-attn's setup.py, `nvcc --version` from torch's extension builder, `rustc -vV`
 * from cargo) or a toolchain lookup. These flags make the compiler answer and stop,
 * whatever else its command line holds (a wrapper's -ccbin, a script's own path). */
static int is_query_arg(const char *a)
{
	static const char *const exact[] = { "--version", "-V", "-vV", "-dumpversion", "-dumpfullversion",
					     "-dumpmachine", "-dumpspecs", "--help", "-###", "--list-gpu-arch",
					     "--list-gpu-code", NULL };
	static const char *const prefix[] = { "-print-", "--print", NULL };

	if (strv_contains(exact, a))
		return 1;
	for (int i = 0; prefix[i]; i++)
		if (!strncmp(a, prefix[i], strlen(prefix[i])))
			return 1;
	return 0;
}

static int is_source(const char *a)
{
	static const char *const ext[] = { ".c", ".cc", ".cpp", ".cxx", ".c++", ".C", ".cu",
					   ".m", ".mm", ".s", ".S", ".f", ".f90", ".F90", ".ispc", NULL };
	const char *dot = strrchr(a, '.');

	if (!dot || a[0] == '-')
		return 0;
	for (int i = 0; ext[i]; i++)
		if (!strcmp(dot, ext[i]))
			return 1;
	return 0;
}

/* Options whose value is in the next argument and changes memory use. */
static int mem_flag_with_value(const char *a)
{
	static const char *const f[] = { "-gencode", "--generate-code", "-arch", "--gpu-architecture",
					 "-code", "--gpu-code", "--threads", "-t", "-maxrregcount", NULL };
	for (int i = 0; f[i]; i++)
		if (!strcmp(a, f[i]))
			return 1;
	return 0;
}

/* Options (possibly with =value) that change memory use on their own. */
static int mem_flag(const char *a)
{
	static const char *const pre[] = { "-O", "-g", "-G", "-flto", "-fsanitize=", "-gencode=",
					   "--generate-code=", "-arch=", "--gpu-architecture=",
					   "-code=", "--gpu-code=", "--threads=", "-fopenmp",
					   "--device-debug", "-lineinfo", "--extended-lambda", NULL };
	for (int i = 0; pre[i]; i++)
		if (!strncmp(a, pre[i], strlen(pre[i])))
			return 1;
	return 0;
}

static void append(struct strbuf *sb, const char *s)
{
	if (sb->len)
		strbuf_add(sb, " ");
	strbuf_add(sb, s);
}

/* The memory flags, each once where it last appears ("-g -O2 -g -O2": "-g -O2"), as the
 * compiler takes the last of a repeated flag; a flag and its value count as one. */
static char *flags_joined(char **items, size_t n)
{
	struct strbuf sb = STRBUF_INIT;

	for (size_t i = 0; i < n; i++) {
		size_t k;
		for (k = i + 1; k < n && strcmp(items[k], items[i]); k++)
			;
		if (k == n)
			append(&sb, items[i]);
	}
	return strbuf_detach(&sb);
}

void job_sig_from_argv(int argc, char *const argv[], struct job_sig *out)
{
	char **items = xcalloc(argc > 0 ? (size_t)argc : 1, sizeof(*items));
	size_t nitems = 0;
	struct strbuf via = STRBUF_INIT;
	const char *src = "", *remote = NULL;
	int i = 0, query = 0, verbose = 0, inputs = 0;

	memset(out, 0, sizeof(*out));
	for (; i < argc - 1 && is_wrapper(path_base(argv[i])); i++) {
		const char *w = path_base(argv[i]);
		append(&via, w);
		out->cached |= is_cache(w);
		if (is_remote(w))
			remote = w;
	}
	out->tool = xstrdup(argc > 0 ? path_base(argv[i]) : "");
	out->compiler = is_compiler_tool(out->tool);
	for (i++; i < argc; i++) {
		const char *a = argv[i];

		out->check |= is_check_arg(a);
		query |= is_query_arg(a);
		verbose |= !strcmp(a, "-v");

		if (!strcmp(a, "-o") || !strcmp(a, "-MF") || !strcmp(a, "-MT") || !strcmp(a, "-MQ") ||
		    !strcmp(a, "-I") || !strcmp(a, "-D") || !strcmp(a, "-include") || !strcmp(a, "-x")) {
			i++; /* skip the value: not a source, not a memory flag */
		} else if (mem_flag_with_value(a) && i + 1 < argc) {
			items[nitems++] = xasprintf("%s %s", a, argv[i + 1]);
			i++;
		} else if (mem_flag(a)) {
			items[nitems++] = xstrdup(a);
		} else if (is_source(a)) {
			src = a;
		} else if (a[0] != '-') {
			inputs++; /* an object, a library, a response file */
		}
	}
	out->flags = flags_joined(items, nitems);
	for (size_t k = 0; k < nitems; k++)
		free(items[k]);
	free(items);
	out->via = strbuf_detach(&via);
	out->src = xstrdup(src);
	/* -v alone prints the version; beside a source, an object or a response file it is a
	 * verbose compile or link */
	out->check |= is_check_arg(src) || query || (verbose && !*src && !inputs);
	/* A job compiled elsewhere costs here what preprocessing it costs: a class of its own. */
	if (remote)
		out->class_key = *out->flags ? xasprintf("%s %s via %s", out->tool, out->flags, remote)
					     : xasprintf("%s via %s", out->tool, remote);
	else
		out->class_key = *out->flags ? xasprintf("%s %s", out->tool, out->flags) : xstrdup(out->tool);
	out->sig_key = xasprintf("%s :: %s", out->class_key, out->src);
}

void job_sig_add_cache(struct job_sig *s, const char *cache)
{
	char *via = *s->via ? xasprintf("%s %s", cache, s->via) : xstrdup(cache);

	free(s->via);
	s->via = via;
	s->cached = 1;
}

int job_sig_is_cache(const char *name)
{
	return is_cache(name);
}

int job_src_twins(const char *src_a, const char *src_b)
{
	return src_a && src_b && *src_a && *src_b && strcmp(src_a, src_b) &&
	       !strcmp(path_base(src_a), path_base(src_b));
}

/* The number a flag's value starts with, clamped to [0, 1024]; -1 when it has none. */
static int small_count(const char *v)
{
	char *end;

	if (!v || *v < '0' || *v > '9')
		return -1;
	long n = strtol(v, &end, 10);
	return n > 1024 ? 1024 : (int)n;
}

int job_sig_peaks(const char *class_key)
{
	char *copy = xstrdup(class_key ? class_key : ""), *save = NULL;
	int passes = 0, arch = 0, threads = 1, want = 0;
	char *t = strtok_r(copy, " ", &save);

	if (!t || strcmp(t, "nvcc")) {
		free(copy);
		return 1;
	}
	for (t = strtok_r(NULL, " ", &save); t; t = strtok_r(NULL, " ", &save)) {
		if (want) {
			int n = small_count(t);
			if (want == 2 && n >= 0)
				threads = n;
			want = 0;
		} else if (!strcmp(t, "-gencode") || !strcmp(t, "--generate-code") || !strncmp(t, "-gencode=", 9) ||
			   !strncmp(t, "--generate-code=", 16)) {
			passes++;
			want = strchr(t, '=') ? 0 : 1;
		} else if (!strcmp(t, "-arch") || !strcmp(t, "--gpu-architecture") || !strncmp(t, "-arch=", 6) ||
			   !strncmp(t, "--gpu-architecture=", 19)) {
			arch = 1;
			want = strchr(t, '=') ? 0 : 1;
		} else if (!strcmp(t, "--threads") || !strcmp(t, "-t")) {
			want = 2;
		} else if (!strncmp(t, "--threads=", 10)) {
			int n = small_count(t + 10);
			if (n >= 0)
				threads = n;
		}
	}
	free(copy);
	if (!passes)
		passes = arch;
	if (passes <= 1 || threads == 0)
		return 1;
	return (passes + threads - 1) / threads;
}

void job_sig_free(struct job_sig *s)
{
	free(s->tool);
	free(s->via);
	free(s->src);
	free(s->flags);
	free(s->class_key);
	free(s->sig_key);
	memset(s, 0, sizeof(*s));
}

const char job_not_compile_why[] = "not a compile job";

const char *job_seen_untrue(const struct job_seen *s)
{
	if (s->check)
		return "a configure check";
	if (s->partial)
		return "observed only in part";
	if (s->not_compile)
		return job_not_compile_why;
	if (s->cache_hit == 1)
		return "a compiler cache hit";
	if (s->cached && s->cache_hit < 0 && !s->saw_compiler)
		return "no compiler ran below the compiler cache (a hit)";
	return NULL;
}

int job_cache_log_hit(const char *log)
{
	int said = -1;

	for (const char *l = log; *l;) {
		size_t n = strcspn(l, "\n");

		if (*l != '#' && n) {
			said = 0;
			if (n >= 10 && !strncmp(l + n - 10, "_cache_hit", 10))
				return 1;
		}
		l += n + (l[n] == '\n');
	}
	return said;
}
