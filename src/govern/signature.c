#include "govern/signature.h"

#include <stdlib.h>
#include <string.h>

#include "util/path.h"
#include "util/strbuf.h"
#include "util/strv.h"
#include "util/xalloc.h"

static int is_wrapper(const char *tool)
{
	static const char *const w[] = { "ccache", "sccache", "distcc", "icecc", NULL };
	return strv_contains(w, tool);
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

void job_sig_from_argv(int argc, char *const argv[], struct job_sig *out)
{
	struct strbuf flags = STRBUF_INIT;
	const char *src = "";
	int i = 0;

	while (i < argc - 1 && is_wrapper(path_base(argv[i])))
		i++;
	out->tool = xstrdup(argc > 0 ? path_base(argv[i]) : "");
	for (i++; i < argc; i++) {
		const char *a = argv[i];

		if (!strcmp(a, "-o") || !strcmp(a, "-MF") || !strcmp(a, "-MT") || !strcmp(a, "-MQ") ||
		    !strcmp(a, "-I") || !strcmp(a, "-D") || !strcmp(a, "-include") || !strcmp(a, "-x")) {
			i++; /* skip the value: not a source, not a memory flag */
		} else if (mem_flag_with_value(a) && i + 1 < argc) {
			append(&flags, a);
			append(&flags, argv[++i]);
		} else if (mem_flag(a)) {
			append(&flags, a);
		} else if (is_source(a)) {
			src = a;
		}
	}
	out->flags = strbuf_detach(&flags);
	out->src = xstrdup(src);
	out->class_key = *out->flags ? xasprintf("%s %s", out->tool, out->flags) : xstrdup(out->tool);
	out->sig_key = xasprintf("%s :: %s", out->class_key, out->src);
}

void job_sig_free(struct job_sig *s)
{
	free(s->tool);
	free(s->src);
	free(s->flags);
	free(s->class_key);
	free(s->sig_key);
	memset(s, 0, sizeof(*s));
}
