/* headroom probe: measure on this machine's GPU what the planner assumes: the CUDA
 * context (lazy and eager module loading) and, with --torch, what PyTorch holds beyond
 * its reserved memory (context, cuBLAS workspaces). Every probe is kept in the store, a
 * history per GPU with the versions it ran under, for plan and for --history. */
#include <dlfcn.h>
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cmd/cmd.h"
#include "profile/gpuprobe.h"
#include "store/store.h"
#include "sys/command.h"
#include "sys/nvml.h"
#include "util/log.h"
#include "util/strbuf.h"
#include "util/units.h"
#include "util/xalloc.h"

static const char usage[] =
	"usage: headroom probe [--torch] [--json] [--db PATH]\n"
	"       headroom probe --history [--json] [--db PATH]\n"
	"\n"
	"Measure on GPU 0 what `headroom plan` assumes: the CUDA context with lazy and with\n"
	"eager module loading (through libcuda.so.1), and with --torch what PyTorch holds\n"
	"beyond its reserved memory once cuBLAS has run (python3 with torch). Each probe is\n"
	"kept in the store with its date and versions (driver, CUDA, torch), and the probe\n"
	"says what changed since the last one of the GPU; `headroom plan --calibrated` uses\n"
	"the newest with a PyTorch figure. Run it on an idle GPU: it reads the GPU's used\n"
	"memory before and after.\n"
	"\n"
	"      --torch       also measure PyTorch's overhead (python3 -c ...)\n"
	"      --history     list the probes kept, each GPU's oldest first, with what changed\n"
	"                    from one to the next; measures nothing (no GPU needed)\n"
	"      --json        print the results as JSON\n"
	"      --db PATH     the store (default: $XDG_STATE_HOME/headroom/profiles.db)\n"
	"  -h, --help        show this help\n"
	"\n"
	"Exit status: 0 measured (or listed), 1 no GPU, a measurement failed or the store\n"
	"could not be read, 2 usage error.\n";

/* In a child: create the primary context on GPU 0, say so, wait to be told to go. */
static void context_child(const char *loading, int ready_fd, int go_fd)
{
	int (*init)(unsigned), (*get)(int *, int), (*retain)(void **, int), (*cur)(void *);
	void *lib, *ctx;
	int dev;
	char c = 1;

	setenv("CUDA_MODULE_LOADING", loading, 1);
	lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!lib)
		_exit(3);
	*(void **)&init = dlsym(lib, "cuInit");
	*(void **)&get = dlsym(lib, "cuDeviceGet");
	*(void **)&retain = dlsym(lib, "cuDevicePrimaryCtxRetain");
	*(void **)&cur = dlsym(lib, "cuCtxSetCurrent");
	if (!init || !get || !retain || !cur || init(0) || get(&dev, 0) || retain(&ctx, dev) || cur(ctx))
		_exit(4);
	if (write(ready_fd, &c, 1) != 1 || read(go_fd, &c, 1) < 0)
		_exit(5);
	_exit(0);
}

/* The GPU's used memory with a context held, less without. 0 or -errno. */
static int measure_context(const char *loading, uint64_t *bytes)
{
	int ready[2], go[2], st, rc = -EIO;
	struct nvml_gpu before, after;
	struct pollfd pf;
	pid_t pid;
	char c;

	if (nvml_gpu_read(0, &before))
		return -ENOENT;
	if (pipe(ready))
		return -errno;
	if (pipe(go)) {
		close(ready[0]), close(ready[1]);
		return -errno;
	}
	pid = fork();
	if (pid == 0) {
		close(ready[0]), close(go[1]);
		context_child(loading, ready[1], go[0]);
	}
	close(ready[1]), close(go[0]);
	pf = (struct pollfd){ .fd = ready[0], .events = POLLIN };
	if (pid > 0 && poll(&pf, 1, 60000) == 1 && read(ready[0], &c, 1) == 1 && !nvml_gpu_read(0, &after)) {
		*bytes = after.used_bytes > before.used_bytes ? after.used_bytes - before.used_bytes : 0;
		rc = 0;
	}
	close(go[1]);
	close(ready[0]);
	if (pid > 0) {
		if (rc)
			kill(pid, SIGKILL);
		waitpid(pid, &st, 0);
	}
	return rc;
}

static const char torch_script[] =
	"import json, torch\n"
	"torch.empty(1, device='cuda'); torch.cuda.synchronize()\n"
	"a = torch.randn(4096, 4096, device='cuda', dtype=torch.bfloat16); b = a @ a\n"
	"a32 = a.float(); c = a32 @ a32; torch.cuda.synchronize()\n"
	"free, total = torch.cuda.mem_get_info()\n"
	"print(json.dumps({'torch': torch.__version__, 'cuda': torch.version.cuda, 'used': total - free,"
	" 'reserved': torch.cuda.memory_reserved()}))\n";


/* PyTorch's overhead: the GPU's used memory in a torch process that ran bf16 and fp32
 * matmuls, less what was used before it, less torch's own reserved memory. */
static int measure_torch(struct gpu_probe *p)
{
	struct nvml_gpu before;
	/* run from "/": a torch.py (or json.py) in the user's directory is not imported */
	char *argv[] = { "python3", "-c", (char *)torch_script, NULL }, *text, *last;
	json_t *j = NULL;
	const char *v;

	if (nvml_gpu_read(0, &before))
		return -ENOENT;
	text = command_output(argv, "/");
	if (text) { /* the script's line is its last */
		size_t n = strlen(text);
		while (n && text[n - 1] == '\n')
			text[--n] = '\0';
		last = strrchr(text, '\n');
		j = json_loads(last ? last + 1 : text, 0, NULL);
	}
	free(text);
	if (!j)
		return -EIO;
	json_int_t used = json_integer_value(json_object_get(j, "used"));
	json_int_t reserved = json_integer_value(json_object_get(j, "reserved"));
	json_int_t overhead = used - (json_int_t)before.used_bytes - reserved;
	if ((v = json_string_value(json_object_get(j, "torch"))))
		snprintf(p->torch, sizeof(p->torch), "%s", v);
	if ((v = json_string_value(json_object_get(j, "cuda")))) /* None in a CPU build: unknown */
		snprintf(p->cuda, sizeof(p->cuda), "%s", v);
	p->torch_overhead_bytes = overhead > 0 ? overhead : 0;
	json_decref(j);
	return 0;
}

/* A figure, or "not measured". */
static const char *known_size(int64_t v, char *buf, size_t len)
{
	if (v < 0)
		snprintf(buf, len, "not measured");
	else
		size_format((uint64_t)v, buf, len);
	return buf;
}

/* GPU 0 measured into p, or die. */
static void measure(int torch, struct gpu_probe *p)
{
	struct nvml_gpu g;
	uint64_t lazy = 0, eager = 0;
	int rc = nvml_gpu_read(0, &g);

	if (rc)
		die(1, "probe: no GPU found through NVML (%s); nothing to measure",
		    rc == -ENOENT ? "no libnvidia-ml.so.1 or no GPU 0" : "NVML failed");
	probe_init(p);
	snprintf(p->gpu, sizeof(p->gpu), "%s", g.name);
	snprintf(p->uuid, sizeof(p->uuid), "%s", g.uuid);
	snprintf(p->driver, sizeof(p->driver), "%s", g.driver);
	p->total_bytes = (int64_t)g.total_bytes;
	p->probed_s = (int64_t)time(NULL);
	if (measure_context("LAZY", &lazy) || measure_context("EAGER", &eager))
		die(1, "probe: could not create a CUDA context on GPU 0 through libcuda.so.1");
	p->context_lazy_bytes = (int64_t)lazy;
	p->context_eager_bytes = (int64_t)eager;
	if (torch && measure_torch(p))
		die(1, "probe: the PyTorch measurement failed (is torch installed for python3?)");
}

static void print_figures(const char *ind, const struct gpu_probe *p)
{
	char a[32];

	printf("%sCUDA context, lazy loading    %s\n", ind, known_size(p->context_lazy_bytes, a, sizeof(a)));
	printf("%sCUDA context, eager loading   %s\n", ind, known_size(p->context_eager_bytes, a, sizeof(a)));
	if (p->torch_overhead_bytes >= 0)
		printf("%sPyTorch %s beyond its reserved memory   %s\n", ind, *p->torch ? p->torch : "(version unknown)",
		       known_size(p->torch_overhead_bytes, a, sizeof(a)));
}

/* Measure, compare with the last probe of the GPU, keep it, and say so. */
static int probe_now(int torch, int as_json, const char *db)
{
	struct gpu_probe now, prev;
	struct probe_change ch;
	struct store *st = NULL;
	struct strbuf sb = STRBUF_INIT;
	char *err = NULL;
	int rc, have_prev = 0;

	measure(torch, &now);
	rc = store_open(db, &st, &err);
	if (!rc)
		have_prev = !store_probe_latest(st, &now, 0, &prev);
	if (rc || (rc = store_probe_add(st, &now)))
		log_warn("probe: could not save the results in %s: %s", db, err ? err : strerror(-rc));
	store_close(st);
	free(err);
	probe_compare(&now, have_prev ? &prev : NULL, &ch);
	if (as_json) {
		json_t *out = probe_json(&now);
		json_object_set_new(out, "previous", have_prev ? probe_json(&prev) : json_null());
		json_object_set_new(out, "change", probe_change_json(&now, have_prev ? &prev : NULL, &ch));
		json_object_set_new(out, "saved", json_boolean(!rc));
		json_dumpf(out, stdout, JSON_INDENT(2));
		putchar('\n');
		json_decref(out);
		return 0;
	}
	printf("%s (driver %s)\n", now.gpu, now.driver);
	print_figures("  ", &now);
	probe_change_text(&sb, &now, have_prev ? &prev : NULL, &ch);
	printf("%s\n", strbuf_str(&sb));
	strbuf_release(&sb);
	if (!rc)
		printf("kept in %s for `headroom plan --calibrated` (`headroom probe --history` lists them)\n", db);
	return 0;
}

/* --history: each row, and what changed since the one before it of the same GPU. */
struct history {
	int as_json, rows;
	json_t *list;
	struct gpu_probe last;
};

static int history_row(const struct gpu_probe *p, void *arg)
{
	struct history *h = arg;
	int same = h->rows && probe_same_gpu(&h->last, p);
	struct probe_change ch;
	struct strbuf sb = STRBUF_INIT;

	probe_compare(p, same ? &h->last : NULL, &ch);
	if (h->as_json) {
		json_t *o = probe_json(p);
		json_object_set_new(o, "change", probe_change_json(p, same ? &h->last : NULL, &ch));
		json_array_append_new(h->list, o);
	} else {
		if (!same || strcmp(h->last.uuid, p->uuid))
			printf("%s%s%s\n", p->gpu, *p->uuid ? " " : "", p->uuid);
		probe_said(&sb, p);
		printf("  %s\n", strbuf_str(&sb));
		print_figures("    ", p);
		if (same) {
			strbuf_release(&sb);
			probe_change_text(&sb, p, &h->last, &ch);
			printf("    %s\n", strbuf_str(&sb));
		}
		strbuf_release(&sb);
	}
	h->last = *p;
	h->rows++;
	return 0;
}

static int probe_history(int as_json, const char *db)
{
	struct history h = { .as_json = as_json, .list = json_array() };
	struct store *st = NULL;
	char *err = NULL;
	int rc = store_open(db, &st, &err);

	if (!rc)
		rc = store_probe_each(st, history_row, &h);
	store_close(st);
	if (rc) {
		json_decref(h.list);
		die(1, "probe: cannot read the probes kept in %s: %s", db, err ? err : strerror(-rc));
	}
	free(err);
	if (as_json) {
		json_t *o = json_object();
		json_object_set_new(o, "format", json_string("headroom-probes/1"));
		json_object_set_new(o, "probes", h.list);
		json_dumpf(o, stdout, JSON_INDENT(2));
		putchar('\n');
		json_decref(o);
	} else {
		json_decref(h.list);
		if (!h.rows)
			printf("no probe kept in %s: run `headroom probe --torch` on the GPU's machine\n", db);
	}
	return 0;
}

int cmd_probe(int argc, char **argv)
{
	enum { O_TORCH = 256, O_JSON, O_DB, O_HISTORY };
	static const struct option opts[] = {
		{ "torch", no_argument, NULL, O_TORCH }, { "json", no_argument, NULL, O_JSON },
		{ "db", required_argument, NULL, O_DB }, { "history", no_argument, NULL, O_HISTORY },
		{ "help", no_argument, NULL, 'h' }, { NULL, 0, NULL, 0 },
	};
	int c, torch = 0, as_json = 0, history = 0, rc;
	char *db = NULL;

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case O_TORCH: torch = 1; break;
		case O_JSON: as_json = 1; break;
		case O_HISTORY: history = 1; break;
		case O_DB:
			if (!*optarg)
				die(EXIT_USAGE, "probe: --db wants a path, not ''");
			free(db);
			db = xstrdup(optarg);
			break;
		case 'h': fputs(usage, stdout); free(db); return 0;
		default: opt_refused("probe", opts, argv);
		}
	}
	if (optind < argc)
		die(EXIT_USAGE, "probe: no arguments expected, got '%s'", argv[optind]);
	if (history && torch)
		die(EXIT_USAGE, "probe: --history lists the probes kept and --torch measures one: give one of them");
	if (!db)
		db = store_default_path();
	rc = history ? probe_history(as_json, db) : probe_now(torch, as_json, db);
	free(db);
	return rc;
}
