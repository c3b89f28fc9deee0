/* Settings from /etc/headroom.conf, the user's config file and HEADROOM_* variables. */
#include "cmd/config.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <ini.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cmd/cmd.h"
#include "govern/admit.h"
#include "store/store.h"
#include "sys/cgroup.h"
#include "sys/cpus.h"
#include "sys/filetrust.h"
#include "sys/fsutil.h"
#include "sys/meminfo.h"
#include "util/log.h"
#include "util/strbuf.h"
#include "util/suggest.h"
#include "util/units.h"
#include "util/xalloc.h"

/* One setting: its key in a file (HEADROOM_ and the key in capitals in the environment),
 * the commands that take it and the option it stands for. A flag (no value) is given
 * when the setting is true. */
struct setting {
	const char *key;
	const char *commands; /* space-separated */
	const char *option;
	const char *short_option; /* or NULL */
	int flag;
	const char *what;
	/* the command's default, as its --help says it, and how it is found: text, or worked
	 * out here for this machine (def_now) */
	const char *def, *def_how;
	void (*def_now)(struct strbuf *value, struct strbuf *how);
};

static void budget_now(struct strbuf *value, struct strbuf *how);
static void reserve_now(struct strbuf *value, struct strbuf *how);
static void jobs_now(struct strbuf *value, struct strbuf *how);
static void db_now(struct strbuf *value, struct strbuf *how);

static const struct setting settings[] = {
	{ "budget", "run", "--budget", "-b", 0, "memory the build's jobs may use, e.g. 24G",
	  NULL, NULL, budget_now },
	{ "reserve", "run", "--reserve", NULL, 0, "memory kept free for the rest of the machine, e.g. 1G",
	  NULL, NULL, reserve_now },
	{ "jobs", "run", "--jobs", "-j", 0, "the most jobs at once",
	  NULL, NULL, jobs_now },
	{ "tree", "run", "--tree", NULL, 1, "govern the process tree (true or false)",
	  "false", NULL, NULL },
	{ "jobserver", "run", "--jobserver", NULL, 0, "serve make's jobserver: auto, pipe or fifo",
	  "off", NULL, NULL },
	{ "db", "run plan probe profiles stats", "--db", NULL, 0, "the profile store",
	  NULL, NULL, db_now },
	{ "margin", "plan", "--margin", NULL, 0, "GPU memory kept free, e.g. 2G or 5%",
	  "2%", NULL, NULL },
	{ "gpu", "plan", "--gpu", NULL, 0, "the GPU planned for, e.g. h100",
	  "none", "plan needs it or --gpu-memory to say whether it fits", NULL },
	{ "gpu_memory", "plan", "--gpu-memory", NULL, 0, "the GPU's memory, e.g. 80G",
	  "none", "the --gpu's memory", NULL },
	{ "context_bytes", "plan", "--context-bytes", NULL, 0, "CUDA context and workspaces, e.g. 740M",
	  "740M", "H200, torch 2.11", NULL },
	{ "interval", "watch", "--interval", "-i", 0, "milliseconds between samples",
	  "1000", NULL, NULL },
	{ "min_free", "watch", "--min-free", NULL, 0, "warn below this much free memory, e.g. 2G",
	  "1G", NULL, NULL },
	{ "min_free_pct", "watch", "--min-free-pct", NULL, 0, "warn below this share free, e.g. 5",
	  "5", NULL, NULL },
	{ "horizon", "watch", "--horizon", NULL, 0, "seconds ahead a time-to-OOM warns",
	  "120", NULL, NULL },
	{ "window", "watch", "--window", NULL, 0, "seconds of samples a trend is fitted to",
	  "30", NULL, NULL },
	{ "stuck_timeout", "watch", "--stuck-timeout", NULL, 0, "seconds before a job that lost ranks is stuck",
	  "600", NULL, NULL },
	{ "prometheus", "watch", "--prometheus", NULL, 0, "address of the Prometheus endpoint, e.g. 127.0.0.1:9405",
	  "off", NULL, NULL },
	{ "jsonl", "watch", "--jsonl", NULL, 0, "file the events are appended to",
	  "off", NULL, NULL },
	{ "on_event", "watch", "--on-event", NULL, 0, "command run on each event",
	  "none", NULL, NULL },
	{ "grace", "watch", "--grace", NULL, 0, "seconds between SIGTERM and SIGKILL",
	  "10", NULL, NULL },
	{ "stop_delay", "watch", "--stop-delay", NULL, 0, "seconds before a job that lost ranks is stopped",
	  "30", NULL, NULL },
};
enum { NSETTINGS = sizeof(settings) / sizeof(settings[0]) };

/* This machine's memory limit (RAM, or a tighter cgroup's) and what is available under
 * it, as `headroom run` reads them; 0 when unknown. */
static uint64_t memory_limit(uint64_t *avail, const char **source)
{
	struct meminfo mi;
	struct cgroup cg;
	uint64_t lim = 0, ws;

	*avail = 0;
	*source = "RAM";
	if (meminfo_read("", &mi))
		return 0;
	*avail = mi.available_bytes;
	if (!cgroup_find("", 0, &cg)) {
		if (!cgroup_mem_limit(&cg, &lim) && lim < mi.total_bytes) {
			*source = cg.version == CGROUP_V1 ? "cgroup v1" : "cgroup v2";
			if (!cgroup_mem_working_set(&cg, &ws) && (lim > ws ? lim - ws : 0) < *avail)
				*avail = lim > ws ? lim - ws : 0;
		} else {
			lim = 0;
		}
		cgroup_free(&cg);
	}
	return lim ? lim : mi.total_bytes;
}

static void reserve_now(struct strbuf *value, struct strbuf *how)
{
	uint64_t avail, lim = memory_limit(&avail, &(const char *){ NULL });
	char a[32];

	strbuf_add(value, lim ? size_format(net_default_reserve(lim), a, sizeof(a)) : "unknown");
	strbuf_add(how, "6% of the memory limit, 64M..2G");
}

/* As the governor sets it (setup_memory): the limit less others' use and the reserve. */
static void budget_now(struct strbuf *value, struct strbuf *how)
{
	const char *src;
	uint64_t avail, lim = memory_limit(&avail, &src), res = net_default_reserve(lim);
	char a[32], b[32];

	if (!lim) {
		strbuf_add(value, "unknown");
		strbuf_add(how, "the memory limit less others' use and the reserve");
		return;
	}
	strbuf_add(value, size_format(avail > res ? avail - res : lim / 4, a, sizeof(a)));
	strbuf_addf(how, "now: the memory limit, %s (%s), less others' use and the reserve",
		    size_format(lim, b, sizeof(b)), src);
}

static void jobs_now(struct strbuf *value, struct strbuf *how)
{
	strbuf_addf(value, "%d", cpus_usable(""));
	strbuf_add(how, "the build's own -jN, else the CPUs");
}

static void db_now(struct strbuf *value, struct strbuf *how)
{
	char *p = store_default_path();

	(void)how;
	strbuf_add(value, p);
	free(p);
}

/* Where each setting's value came from: a file and line, or a variable. */
struct value {
	char *text;
	char *source;
	const char *kind; /* "file", "environment" */
};

/* A key no setting has, and where: whether it fails a command depends on the command. */
struct unknown {
	char *where;
	char *key;
};

struct config {
	struct value v[NSETTINGS];
	char *files[2];
	const char *file_state[2]; /* "read", "absent" */
	struct unknown *unknown;
	size_t nunknown;
};

struct parse_ctx {
	struct config *c;
	const char *path;
	FILE *f;
	int line; /* of the line read last (Debian's inih passes the handler none) */
	char *buf; /* the line read last, whole */
	size_t cap;
	char *err; /* a line refused before inih saw it */
};

static const struct setting *find(const char *key, size_t *at)
{
	for (size_t i = 0; i < NSETTINGS; i++)
		if (!strcmp(settings[i].key, key)) {
			*at = i;
			return &settings[i];
		}
	return NULL;
}

static void set_value(struct value *v, const char *text, char *source, const char *kind)
{
	free(v->text);
	free(v->source);
	v->text = xstrdup(text);
	v->source = source;
	v->kind = kind;
}

static void config_release(struct config *c)
{
	for (size_t i = 0; i < NSETTINGS; i++) {
		free(c->v[i].text);
		free(c->v[i].source);
	}
	free(c->files[0]);
	free(c->files[1]);
	for (size_t i = 0; i < c->nunknown; i++) {
		free(c->unknown[i].where);
		free(c->unknown[i].key);
	}
	free(c->unknown);
	memset(c, 0, sizeof(*c));
}

/* The setting nearest a key no setting has ("budgt": budget), or NULL. */
static const struct setting *nearest(const char *key)
{
	const char *keys[NSETTINGS];
	size_t at;

	for (size_t i = 0; i < NSETTINGS; i++)
		keys[i] = settings[i].key;
	const char *near = suggest_closest(key, keys, NSETTINGS);
	return near ? find(near, &at) : NULL;
}

/* "FILE:LINE: unknown setting 'budgt' (did you mean budget?)", to free. */
static char *unknown_text(const struct unknown *u)
{
	const struct setting *near = nearest(u->key);

	return xasprintf("%s: unknown setting '%s'%s%s%s", u->where, u->key, near ? " (did you mean " : "",
			 near ? near->key : "", near ? "?)" : "");
}

/* What Debian's libinih would misread in a line, said for the file's author: it cuts a
 * line at its buffer and reads the rest as a line of its own, ends a value at " ;" (an
 * inline comment), and reads an indented line as more of the setting above it. Such a
 * line is refused before inih sees it. NULL when the line reads as it looks. */
static const char *misread(const char *line, size_t len, int limit)
{
	const char *s = line;

	if (len > (size_t)limit - 1)
		return "is longer than the reader's limit of %d characters: shorten it (a long command: "
		       "put it in a script and name the script)";
	if (strlen(line) != len)
		return "holds a NUL byte";
	while (isspace((unsigned char)*s))
		s++;
	if (!*s || strchr(";#", *s))
		return NULL; /* blank, or a comment */
	if (s > line)
		return "is indented, which would continue the setting above it: remove the indentation";
	for (s = line + 1; *s; s++)
		if (*s == ';' && isspace((unsigned char)s[-1]))
			return "has ';' after a space, which would start a comment and cut the value short: "
			       "write ';' without the space before it, or put the command in a script";
	return NULL;
}

static char *next_line(char *str, int num, void *user)
{
	struct parse_ctx *p = user;
	ssize_t len = getline(&p->buf, &p->cap, p->f);
	const char *why;

	if (len < 0)
		return NULL;
	p->line++;
	if ((why = misread(p->buf, (size_t)len, num))) {
		char *what = xasprintf(why, num - 2);
		p->err = xasprintf("%s:%d: the line %s", p->path, p->line, what);
		free(what);
		return NULL; /* the end, to inih */
	}
	memcpy(str, p->buf, (size_t)len + 1);
	return str;
}

static int on_line(void *user, const char *section, const char *name, const char *value)
{
	struct parse_ctx *p = user;
	struct config *c = p->c;
	size_t at;

	(void)section;
	if (!find(name, &at)) {
		c->unknown = xreallocarray(c->unknown, c->nunknown + 1, sizeof(*c->unknown));
		c->unknown[c->nunknown++] = (struct unknown){ xasprintf("%s:%d", p->path, p->line), xstrdup(name) };
		return 1;
	}
	set_value(&c->v[at], value, xasprintf("%s:%d", p->path, p->line), "file");
	return 1;
}

/* Dies when a settings file may not be trusted by this user. Its on_event is run as the
 * user (root, for root's watch), so, as ssh and sudo do, a file someone else could have
 * written is refused: owned by another user, or writable by others or by a group other
 * than root's or the user's own, or by one that holds another user (listed in it, or
 * theirs as a primary group). */
static void trust_check(const char *path, const struct stat *st)
{
	struct file_owner fo = { st->st_uid, st->st_gid, st->st_mode };
	struct trust_verdict v;
	struct accounts acc;
	char why[512], fix[PATH_MAX + 128];

	/* unread, no group is known: only a file writable by no group nor other passes */
	if (accounts_read("", &acc))
		memset(&acc, 0, sizeof(acc));
	enum trust t = filetrust_check(&fo, getuid(), &acc, &v);
	accounts_free(&acc);
	if (t == TRUST_OK)
		return;
	filetrust_why(&v, why, sizeof(why));
	filetrust_fix(&v, path, fix, sizeof(fix));
	die(EXIT_USAGE, "%s %s (uid %u, mode %04o): refused, as it could name a command (on_event) for headroom "
	    "to run as you; %s", path, why, (unsigned)st->st_uid, (unsigned)(st->st_mode & 07777), fix);
}

/* path opened for reading, once it is a regular file this user may trust; dies naming
 * what is wrong. A FIFO or a device is not opened at all (it could block, or never end). */
static FILE *open_settings(const char *path, const struct stat *st)
{
	struct stat fst;
	int fd;
	FILE *f;

	if (!S_ISREG(st->st_mode))
		die(EXIT_USAGE, "%s holds settings but is %s, not a regular file: name a file", path, fs_kind(st->st_mode));
	fd = open(path, O_RDONLY | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &fst))
		die(EXIT_USAGE, "cannot read the settings in %s: %s", path, strerror(errno));
	if (!S_ISREG(fst.st_mode))
		die(EXIT_USAGE, "%s holds settings but is %s, not a regular file: name a file", path,
		    fs_kind(fst.st_mode));
	trust_check(path, &fst);
	f = fdopen(fd, "r");
	if (!f)
		die(EXIT_USAGE, "cannot read the settings in %s: %s", path, strerror(errno));
	return f;
}

/* A file's settings over what c holds; an absent file is no error. */
static void read_file(struct config *c, int which, char *path)
{
	struct parse_ctx p = { .c = c, .path = path };
	struct stat st;

	c->files[which] = path;
	if (stat(path, &st)) {
		if (errno != ENOENT)
			die(EXIT_USAGE, "cannot read the settings in %s: %s", path, strerror(errno));
		c->file_state[which] = "absent";
		return;
	}
	p.f = open_settings(path, &st);
	int rc = ini_parse_stream(next_line, &p, on_line, &p);
	fclose(p.f);
	free(p.buf);
	if (rc < 0)
		die(EXIT_USAGE, "cannot read the settings in %s: out of memory", path);
	if (rc > 0)
		die(EXIT_USAGE, "%s:%d: not a setting: write 'key = value' (`headroom config` lists the keys)", path, rc);
	if (p.err)
		die(EXIT_USAGE, "%s", p.err);
	c->file_state[which] = "read";
}

static char *user_file(void)
{
	const char *own = getenv("HEADROOM_CONFIG"), *xdg = getenv("XDG_CONFIG_HOME"), *home = getenv("HOME");

	if (own && *own)
		return xstrdup(own);
	if (xdg && *xdg)
		return xasprintf("%s/headroom/config", xdg);
	return xasprintf("%s/.config/headroom/config", home && *home ? home : "");
}

static void config_load(struct config *c)
{
	const char *sys = getenv("HEADROOM_SYSTEM_CONFIG");

	memset(c, 0, sizeof(*c));
	read_file(c, 0, xstrdup(sys && *sys ? sys : "/etc/headroom.conf"));
	read_file(c, 1, user_file());
	for (size_t i = 0; i < NSETTINGS; i++) {
		struct strbuf name = STRBUF_INIT;
		strbuf_add(&name, "HEADROOM_");
		for (const char *k = settings[i].key; *k; k++)
			strbuf_addf(&name, "%c", *k >= 'a' && *k <= 'z' ? *k - 'a' + 'A' : *k);
		const char *e = getenv(strbuf_str(&name));
		if (e)
			set_value(&c->v[i], e, strbuf_detach(&name), "environment");
		else
			strbuf_release(&name);
	}
}

static int takes(const struct setting *s, const char *cmd)
{
	size_t n = strlen(cmd);

	for (const char *p = s->commands; (p = strstr(p, cmd)); p += n)
		if ((p == s->commands || p[-1] == ' ') && (!p[n] || p[n] == ' '))
			return 1;
	return 0;
}

/* A flag's value: 1 true, 0 false, -1 neither. */
static int truth(const char *v)
{
	static const char *const yes[] = { "1", "true", "yes", "on" }, *const no[] = { "0", "false", "no", "off", "" };

	for (size_t i = 0; i < 4; i++)
		if (!strcasecmp(v, yes[i]))
			return 1;
	for (size_t i = 0; i < 5; i++)
		if (!strcasecmp(v, no[i]))
			return 0;
	return -1;
}

/* The options config_inject gave, and from where: a message about one says so. */
static struct {
	const char *option;
	char note[512];
} given[NSETTINGS];
static size_t ngiven;

static const char *injected_note(const char *msg)
{
	for (size_t i = 0; i < ngiven; i++) {
		const char *p = strstr(msg, given[i].option);
		size_t n = strlen(given[i].option);
		if (p && (p[n] == ' ' || p[n] == '=' || p[n] == ':' || p[n] == '\0'))
			return given[i].note;
	}
	return NULL;
}

/* Whether the command line gives the setting's option itself (before "--"): then it
 * wins, and the setting is not given at all (a bad value in a file cannot fail a command
 * line that overrides it). */
static int on_command_line(int argc, char **argv, const struct setting *s)
{
	size_t n = strlen(s->option);

	for (int i = 1; i < argc && strcmp(argv[i], "--"); i++) {
		if (!strncmp(argv[i], s->option, n) && (!argv[i][n] || argv[i][n] == '='))
			return 1;
		if (s->short_option && !strncmp(argv[i], s->short_option, 2))
			return 1;
	}
	return 0;
}

/* What config_inject() allocated, for config_inject_release(): getopt permutes the
 * array, so the strings are not known by their places. */
static char *injected[NSETTINGS];
static size_t ninjected;

void config_inject_release(char **args)
{
	for (size_t i = 0; i < ninjected; i++)
		free(injected[i]);
	ninjected = 0;
	free(args);
}

/* A key no setting has fails the command whose own setting it looks like a misspelling
 * of: that setting would silently not be in force. To other commands (doctor, which
 * takes none; stats, beside a misspelled budget; any, beside a newer headroom's key) it
 * is a warning, and they go on. */
static void check_unknown(const struct config *c, const char *cmd)
{
	for (size_t i = 0; i < c->nunknown; i++) {
		const struct setting *near = nearest(c->unknown[i].key);
		char *text = unknown_text(&c->unknown[i]);

		if (!cmd || (near && takes(near, cmd)))
			die(EXIT_USAGE, "%s (`headroom config` lists them)", text);
		log_warn("%s, ignored (`headroom config` lists the settings)", text);
		free(text);
	}
}

/* HEADROOM_* variables that are headroom's own and no setting: what it sets for a
 * build's jobs and watch's hooks, and what it reads besides the settings. */
static const char *const own_variables[] = {
	"CONFIG", "SYSTEM_CONFIG", "SOCK", "LAUNCHER", "JOB", "REAL_CC", "REAL_CXX", "DEBUG", "GOVERNOR_TIMEOUT",
	"EVENT", "EVENT_MESSAGE", "EVENT_JSON",
};

/* A HEADROOM_* variable that is no setting but near one (HEADROOM_BUDJET) is a setting
 * misspelled, which would silently not be in force: warned of. One near none is another
 * program's, and left alone. */
static void check_unknown_env(void)
{
	extern char **environ;
	static const char prefix[] = "HEADROOM_";

	for (char **e = environ; e && *e; e++) {
		const char *name = *e + sizeof(prefix) - 1, *eq = strchr(*e, '=');
		size_t at, own = 0;

		if (strncmp(*e, prefix, sizeof(prefix) - 1) || !eq)
			continue;
		char *key = xasprintf("%.*s", (int)(eq - name), name);
		while (own < sizeof(own_variables) / sizeof(*own_variables) && strcmp(key, own_variables[own]))
			own++;
		for (char *k = key; *k; k++)
			*k = (char)tolower((unsigned char)*k);
		const struct setting *near = own < sizeof(own_variables) / sizeof(*own_variables) || find(key, &at)
			? NULL : nearest(key);
		if (near) {
			char *upper = xstrdup(near->key);
			for (char *k = upper; *k; k++)
				*k = (char)toupper((unsigned char)*k);
			log_warn("%.*s is no setting, ignored (did you mean HEADROOM_%s? `headroom config` lists them)",
				 (int)(eq - *e), *e, upper);
			free(upper);
		}
		free(key);
	}
}

char **config_inject(int *argc, char **argv)
{
	struct config c;
	char **out = xcalloc((size_t)*argc + NSETTINGS + 1, sizeof(*out));
	int n = 0;

	config_load(&c);
	check_unknown(&c, argv[0]);
	check_unknown_env();
	out[n++] = argv[0];
	for (size_t i = 0; i < NSETTINGS; i++) {
		const struct setting *s = &settings[i];
		if (!c.v[i].text || !takes(s, argv[0]) || on_command_line(*argc, argv, s))
			continue;
		if (s->flag) {
			int t = truth(c.v[i].text);
			if (t < 0)
				die(EXIT_USAGE, "%s: %s wants true or false, not '%s'", c.v[i].source, s->key, c.v[i].text);
			if (t)
				out[n++] = (char *)s->option;
			continue;
		}
		if (!*c.v[i].text)
			die(EXIT_USAGE, "%s: %s is empty (unset it, or give a value)", c.v[i].source, s->key);
		log_debug("%s=%s from %s", s->option, c.v[i].text, c.v[i].source);
		out[n++] = injected[ninjected++] = xasprintf("%s=%s", s->option, c.v[i].text);
		given[ngiven].option = s->option;
		snprintf(given[ngiven++].note, sizeof(given[0].note), "(%s came from %s)", s->option, c.v[i].source);
	}
	for (int i = 1; i < *argc; i++)
		out[n++] = argv[i];
	out[n] = NULL;
	*argc = n;
	config_release(&c);
	log_set_die_note(injected_note);
	return out;
}

static const char usage[] =
	"usage: headroom config [--json]\n"
	"\n"
	"Show the settings in force and where each came from (one nothing sets: the command's\n"
	"default, worked out for this machine where it depends on it). A setting is an option's default:\n"
	"read from /etc/headroom.conf, then $XDG_CONFIG_HOME/headroom/config (~/.config/headroom/config;\n"
	"HEADROOM_CONFIG names another file), then HEADROOM_<KEY> variables (HEADROOM_BUDGET=24G);\n"
	"each over the one before, and the command line over them all. A file holds lines\n"
	"'key = value' and '# comments', unindented, with no ' ;' (a comment in inih); it is\n"
	"refused when another user could have written it (owned by them, writable by others).\n"
	"\n"
	"      --json      JSON (format headroom-config/1)\n"
	"  -h, --help      show this help\n";

/* A setting's default in force here, and how it is found ("" when plain). */
static void default_of(const struct setting *s, struct strbuf *value, struct strbuf *how)
{
	if (s->def_now) {
		s->def_now(value, how);
		return;
	}
	strbuf_add(value, s->def);
	if (s->def_how)
		strbuf_add(how, s->def_how);
}

int cmd_config(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'J' }, { "help", no_argument, NULL, 'h' }, { NULL, 0, NULL, 0 },
	};
	struct config c;
	int ch, json = 0;

	while ((ch = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (ch) {
		case 'J': json = 1; break;
		case 'h': fputs(usage, stdout); return 0;
		default: opt_refused("config", opts, argv);
		}
	}
	if (optind < argc)
		die(EXIT_USAGE, "config: no arguments expected, got '%s'", argv[optind]);
	config_load(&c);
	check_unknown(&c, NULL);
	check_unknown_env();
	if (json) {
		json_t *o = json_object(), *files = json_array(), *set = json_object();
		json_object_set_new(o, "format", json_string("headroom-config/1"));
		for (int i = 0; i < 2; i++)
			json_array_append_new(files, json_pack("{s:s, s:s}", "path", c.files[i], "state", c.file_state[i]));
		json_object_set_new(o, "files", files);
		for (size_t i = 0; i < NSETTINGS; i++) {
			const struct setting *s = &settings[i];
			json_t *cmds = json_array();
			char *list = xstrdup(s->commands), *save = NULL;
			for (char *w = strtok_r(list, " ", &save); w; w = strtok_r(NULL, " ", &save))
				json_array_append_new(cmds, json_string(w));
			free(list);
			struct strbuf def = STRBUF_INIT, how = STRBUF_INIT;
			default_of(s, &def, &how);
			json_object_set_new(set, s->key, json_pack("{s:s, s:s, s:o, s:o, s:o, s:s, s:o}",
				"value", c.v[i].text ? c.v[i].text : strbuf_str(&def), "default", strbuf_str(&def),
				"default_how", how.len ? json_string(strbuf_str(&how)) : json_null(),
				"source", c.v[i].source ? json_string(c.v[i].source) : json_null(),
				"kind", c.v[i].kind ? json_string(c.v[i].kind) : json_string("default"),
				"option", s->option, "commands", cmds));
			strbuf_release(&how);
			strbuf_release(&def);
		}
		json_object_set_new(o, "settings", set);
		json_dumpf(o, stdout, JSON_INDENT(2));
		putchar('\n');
		json_decref(o);
		config_release(&c);
		return 0;
	}
	for (int i = 0; i < 2; i++)
		printf("# %s: %s\n", c.files[i], c.file_state[i]);
	printf("%-14s %-20s %-32s %s\n", "SETTING", "VALUE", "FROM", "OPTION OF");
	for (size_t i = 0; i < NSETTINGS; i++) {
		const struct setting *s = &settings[i];
		struct strbuf def = STRBUF_INIT, how = STRBUF_INIT;
		if (!c.v[i].text)
			default_of(s, &def, &how);
		/* how a default is found is long more often than a value: it comes last, whole */
		printf("%-14s %-20s %-32s %s %s%s%s%s\n", s->key, c.v[i].text ? c.v[i].text : strbuf_str(&def),
		       c.v[i].source ? c.v[i].source : "(the command's default)", s->option, s->commands,
		       how.len ? " (" : "", strbuf_str(&how), how.len ? ")" : "");
		strbuf_release(&how);
		strbuf_release(&def);
	}
	config_release(&c);
	return 0;
}
