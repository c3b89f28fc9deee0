/* headroom probe: measure on this machine's GPU what the planner assumes: the CUDA
 * context (lazy and eager module loading) and, with --torch, what PyTorch holds beyond
 * its reserved memory (context, cuBLAS workspaces). Saved in the store for plan. */
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
#include <unistd.h>

#include "cmd/cmd.h"
#include "store/store.h"
#include "sys/command.h"
#include "sys/nvml.h"
#include "util/log.h"
#include "util/units.h"
#include "util/xalloc.h"

static const char usage[] =
	"usage: headroom probe [--torch] [--json] [--db PATH]\n"
	"\n"
	"Measure on GPU 0 what `headroom plan` assumes: the CUDA context with lazy and with\n"
	"eager module loading (through libcuda.so.1), and with --torch what PyTorch holds\n"
	"beyond its reserved memory once cuBLAS has run (python3 with torch). The results\n"
	"are saved in the store; `headroom plan --calibrated` uses them on this machine.\n"
	"Run it on an idle GPU: it reads the GPU's used memory before and after.\n"
	"\n"
	"      --torch       also measure PyTorch's overhead (python3 -c ...)\n"
	"      --json        print the results as JSON\n"
	"      --db PATH     the store (default: $XDG_STATE_HOME/headroom/profiles.db)\n"
	"  -h, --help        show this help\n"
	"\n"
	"Exit status: 0 measured, 1 no GPU or a measurement failed, 2 usage error.\n";

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
static int measure_torch(json_t *out)
{
	struct nvml_gpu before;
	/* run from "/": a torch.py (or json.py) in the user's directory is not imported */
	char *argv[] = { "python3", "-c", (char *)torch_script, NULL }, *text, *last;
	json_t *j = NULL;

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
	json_object_set_new(out, "torch_version", json_incref(json_object_get(j, "torch")));
	json_object_set_new(out, "torch_cuda", json_incref(json_object_get(j, "cuda")));
	json_object_set_new(out, "torch_overhead_bytes", json_integer(overhead > 0 ? overhead : 0));
	json_decref(j);
	return 0;
}

int cmd_probe(int argc, char **argv)
{
	enum { O_TORCH = 256, O_JSON, O_DB };
	static const struct option opts[] = {
		{ "torch", no_argument, NULL, O_TORCH }, { "json", no_argument, NULL, O_JSON },
		{ "db", required_argument, NULL, O_DB }, { "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c, torch = 0, as_json = 0, rc;
	char *db = NULL, *err = NULL, *key, *txt, a[32];
	struct nvml_gpu g;
	struct store *st = NULL;
	uint64_t lazy = 0, eager = 0;
	json_t *out;

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case O_TORCH: torch = 1; break;
		case O_JSON: as_json = 1; break;
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
	rc = nvml_gpu_read(0, &g);
	if (rc) {
		free(db);
		die(1, "probe: no GPU found through NVML (%s); nothing to measure",
		    rc == -ENOENT ? "no libnvidia-ml.so.1 or no GPU 0" : "NVML failed");
	}
	out = json_object();
	json_object_set_new(out, "gpu", json_string(g.name));
	json_object_set_new(out, "driver", json_string(g.driver));
	json_object_set_new(out, "total_bytes", json_integer((json_int_t)g.total_bytes));
	if (measure_context("LAZY", &lazy) || measure_context("EAGER", &eager)) {
		json_decref(out);
		free(db);
		die(1, "probe: could not create a CUDA context on GPU 0 through libcuda.so.1");
	}
	json_object_set_new(out, "context_lazy_bytes", json_integer((json_int_t)lazy));
	json_object_set_new(out, "context_eager_bytes", json_integer((json_int_t)eager));
	if (torch && measure_torch(out)) {
		json_decref(out);
		free(db);
		die(1, "probe: the PyTorch measurement failed (is torch installed for python3?)");
	}
	if (!db)
		db = store_default_path();
	key = nvml_gpu_key(&g);
	txt = json_dumps(out, JSON_COMPACT);
	if (store_open(db, &st, &err) || store_probe_put(st, key, txt))
		log_warn("probe: could not save the results in %s%s%s", db, err ? ": " : "", err ? err : "");
	store_close(st);
	if (as_json) {
		json_dumpf(out, stdout, JSON_INDENT(2));
		putchar('\n');
	} else {
		printf("%s (driver %s)\n", g.name, g.driver);
		printf("  CUDA context, lazy loading    %s\n", size_format(lazy, a, sizeof(a)));
		printf("  CUDA context, eager loading   %s\n", size_format(eager, a, sizeof(a)));
		json_t *o = json_object_get(out, "torch_overhead_bytes");
		if (o)
			printf("  PyTorch %s beyond its reserved memory   %s\n",
			       json_string_value(json_object_get(out, "torch_version")),
			       size_format((uint64_t)json_integer_value(o), a, sizeof(a)));
		printf("saved for `headroom plan --calibrated` as \"%s\"\n", key);
	}
	free(txt);
	free(key);
	free(err);
	free(db);
	json_decref(out);
	return 0;
}
