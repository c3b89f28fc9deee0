/* What `headroom probe` measured on one GPU, one row per probe, and what changed
 * between two probes of the same GPU (a driver, CUDA or torch upgrade and what it did
 * to the context). Pure: the store keeps the rows, probe and plan print them. */
#ifndef HEADROOM_GPUPROBE_H
#define HEADROOM_GPUPROBE_H

#include <jansson.h>
#include <stdint.h>

#include "util/strbuf.h"

/* A difference of less than one of the driver's 2 MiB pages is the same context: the
 * used memory NVML reports moves in whole pages. */
#define PROBE_SAME_BYTES (2ULL << 20)

/* One probe. Text fields "" and figures -1 when unknown (absent, never 0). */
struct gpu_probe {
	char gpu[96];                 /* the GPU's name as NVML reports it */
	char uuid[96];                /* "GPU-..." as NVML reports it */
	char driver[32];              /* the driver's version */
	char cuda[32];                /* the CUDA torch was built for (torch.version.cuda) */
	char torch[64];               /* torch.__version__: known only with --torch */
	int64_t probed_s;             /* Unix time */
	int64_t total_bytes;          /* the GPU's memory */
	int64_t context_lazy_bytes;   /* the CUDA context, lazy module loading */
	int64_t context_eager_bytes;  /* the CUDA context, eager module loading */
	int64_t torch_overhead_bytes; /* PyTorch beyond its reserved memory: what plan uses */
};

/* A probe with every field unknown. */
void probe_init(struct gpu_probe *p);

/* Whether two probes are of the same GPU: the same name, and the same UUID where both
 * know one (a row kept before UUIDs were recorded matches a card of its name). */
int probe_same_gpu(const struct gpu_probe *a, const struct gpu_probe *b);

/* The versions a probe records, in the order they are said. */
enum probe_version { PROBE_TORCH, PROBE_CUDA, PROBE_DRIVER, PROBE_NVERSIONS };
/* A version or figure between two probes: unknown when either probe lacks it. */
enum probe_diff { PROBE_SAME, PROBE_CHANGED, PROBE_UNKNOWN };

/* What changed from then (the last probe of the GPU, NULL for none) to now. */
struct probe_change {
	int first;                                 /* no earlier probe to compare with */
	enum probe_diff versions[PROBE_NVERSIONS];
	const char *figure;                        /* the figure compared (its JSON key): the
						    * first known in both, in the order plan
						    * prefers them; NULL when none is */
	const char *figure_name;                   /* how it is said ("the context") */
	int64_t now_bytes, then_bytes;             /* that figure; -1 unknown */
	int64_t delta_bytes;                       /* now less then; 0 when not compared */
	enum probe_diff context;                   /* SAME: within PROBE_SAME_BYTES */
	int nothing_changed;                       /* every version known and the same, and the context */
};

void probe_compare(const struct gpu_probe *now, const struct gpu_probe *then, struct probe_change *c);
/* One sentence, no newline: "the context grew 212.00 MiB since torch 2.10.0+cu128 (driver
 * 570.86): 758.00 MiB now, 546.00 MiB then". */
void probe_change_text(struct strbuf *sb, const struct gpu_probe *now, const struct gpu_probe *then,
		       const struct probe_change *c);
json_t *probe_change_json(const struct gpu_probe *now, const struct gpu_probe *then, const struct probe_change *c);

/* "probed 2026-12-07 10:31 UTC (torch 2.11.0+cu130, CUDA 13.0, driver 580.65)": when and
 * with what, the versions known. */
void probe_said(struct strbuf *sb, const struct gpu_probe *p);
/* "2026-12-07 10:31 UTC", or "an unknown date". */
void probe_date(int64_t probed_s, char *buf, size_t len);
/* Every field, unknown ones null. */
json_t *probe_json(const struct gpu_probe *p);

#endif
