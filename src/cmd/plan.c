/* headroom plan: predict a training step's peak GPU memory and solve for a knob that fits. */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/cmd.h"
#include "plan/anchor.h"
#include "plan/config.h"
#include "plan/gpus.h"
#include "plan/advise.h"
#include "plan/assumed.h"
#include "plan/hint.h"
#include "plan/limits.h"
#include "plan/settings.h"
#include "plan/trainargs.h"
#include "plan/solve.h"
#include "plan/model.h"
#include "store/store.h"
#include "sys/fsutil.h"
#include "sys/nvml.h"
#include "util/log.h"
#include "util/parse.h"
#include "util/strbuf.h"
#include "util/suggest.h"
#include "util/units.h"
#include "util/xalloc.h"

/* The usage in parts: usage_print writes the lines that name the GPUs and the knobs
 * from their tables. */
static const char usage_head[] =
	"usage: headroom plan [OPTIONS] CONFIG.json\n"
	"       headroom plan --compare A.json B.json [--json]\n"
	"\n"
	"Predict the peak GPU memory of a training step (or inference) of a Hugging Face model\n"
	"from its config.json (llama, mistral, qwen2, qwen3, phi3, gemma, gemma2, gemma3_text,\n"
	"qwen3_moe, mixtral, qwen2_moe, glm4_moe, deepseek_v3, gpt2, llama4_text, gpt_oss,\n"
	"qwen3_next, olmo2, granite, smollm3; gemma3 and qwen2_5_vl: their text tower and\n"
	"vision weights; any other with a decoder's common keys, phi or falcon, as a generic\n"
	"dense decoder, said), and say whether it fits the GPU; the first lines say what was\n"
	"assumed (precision and dtypes, optimizer, batch x seq, checkpointing, attention, the\n"
	"experts, what a family's plan assumes of its code, use_cache). Every allocated byte\n"
	"at the peak is named (weights, gathered parameters, gradients, optimizer states and\n"
	"temporaries, activations, backward temporaries, logits + loss, KV cache, collective\n"
	"buffers, cuBLAS workspaces, buffers); allocator fragmentation is what is reserved\n"
	"beyond them. What it needs is an interval (below), beside one likely layout and the\n"
	"peak with plenty of memory.\n"
	"When it does not surely fit (or no value surely does), a hint names the change that\n"
	"fits, or the fewest changes together, keeping the kind of run first: --alloc-conf\n"
	"expandable_segments:True, --optimizer adamw-fused, --no-use-cache, --loss-chunk,\n"
	"--grad-ckpt, fewer items in a --buffer, a smaller --batch and their combinations,\n"
	"then --lora-rank (locked knobs stay).\n"
	"CONFIG.json may also be a case file {\"model\": {...config...}, \"train\": {...settings...}}.\n"
	"\n"
	"Settings: each is a flag and a key of the JSON of --train FILE (or a case file's\n"
	"\"train\"), one spelling: --grad-ckpt is \"grad_ckpt\": true, --no-use-cache \"use_cache\":\n"
	"false, --batch 4 \"batch\": 4. The command line wins over the files, in order.\n";
static const char usage_files[] =
	"Files (read in this order, the command line over them):\n"
	"      --train FILE             the settings' keys as JSON: {\"batch\": 4, \"grad_ckpt\": true}\n"
	"      --trainer-args FILE      a Hugging Face TrainingArguments JSON (to_json_string,\n"
	"                               trainer.save_state): per_device_train_batch_size, bf16,\n"
	"                               gradient_checkpointing, optim, fsdp... (docs/plan.md)\n"
	"      --axolotl FILE           an axolotl YAML config: sequence_len, micro_batch_size,\n"
	"                               adapter and lora_r, optimizer, gradient_checkpointing...\n"
	"      --strict                 a length past the model's max_position_embeddings, or a\n"
	"                               key of these files the planner does not know, is an\n"
	"                               error (exit 2), not a warning\n"
	"      --calibrated [--db PATH] use what `headroom probe --torch` measured on GPU 0 (its\n"
	"                               newest probe; the assumed lines say its date and versions)\n"
	"What the user saw (the plan is then said beside it, its answers also anchored: planned\n"
	"plus how far the plan's likely layout is from what the run held):\n"
	"      --oom FILE               PyTorch's CUDA out-of-memory message, in a log or pasted\n"
	"                               (- for stdin; its last MiB): its figures, what the card\n"
	"                               lacked (asked less free), whether expandable segments or\n"
	"                               fewer buffer items recover it; no message: exit 2\n"
	"      --observed SIZE          a peak seen for these settings (nvidia-smi,\n"
	"                               torch.cuda.max_memory_reserved), e.g. 90.4G\n"
	"GPU:\n";
static const char usage_gpu[] =
	"      --gpu-memory SIZE        the GPU's memory, e.g. 80G\n"
	"                               (every SIZE with its unit: K/M/G/T, KiB/MiB/GiB powers\n"
	"                               of 1024, KB/MB/GB of 1000; 100MB is 10^8 bytes; a bare\n"
	"                               number is refused but 0; docs/units.md)\n"
	"      --margin SIZE|PCT        kept free, e.g. 2G or 5%\n"
	"                               (default 2%: what the live set's model may be off\n"
	"                               by; where blocks land is the interval's)\n"
	"Output and solving:\n"
	"      --json                   JSON (format headroom-plan/2): verdict, need_low_bytes,\n"
	"                               need_high_bytes, limit_bytes, peak_low_bytes,\n"
	"                               peak_high_bytes, device_peak_bytes, min_device_bytes\n"
	"                               (one likely layout), fits, fits_with_margin,\n"
	"                               spare_bytes, assumed, components (*_bytes)...\n";
static const char usage_tail[] =
	"      --lock KNOB              must stay as given (repeatable); --solve refuses it\n"
	"      --compare A B            which components moved between two case files\n"
	"  -h, --help                   show this help\n"
	"\n"
	"Every field and setting is range-checked where it is read; input past the planner's\n"
	"limits (1024 layers, 65536 items a buffer, 4096 loss chunks, a plan of 1 PiB...;\n"
	"docs/plan.md) is bad input. A plan is an interval, need_low (the live tensors as the\n"
	"allocator rounds them) to need_high (and what fragmentation can pin): it fits when\n"
	"need_high is within what CUDA gives less the margin, does not when need_low is past\n"
	"it, and is at risk between. --solve answers the largest value that surely fits and\n"
	"the largest that may (when every value fits, its largest; loss_chunk's: batch x\n"
	"seq). A knob the kind of run does not use is refused: context is inference's,\n"
	"loss_chunk training's, lora_rank LoRA's.\n"
	"\n"
	"Exit status: 0 fits (or a value surely fits), 1 does not fit (or no value may),\n"
	"2 bad input, 3 at risk (or a value may fit, none surely).\n";

/* The GPU table's names, ", " between them; the caller frees. */
static char *gpu_names(void)
{
	struct strbuf sb = STRBUF_INIT;
	const struct gpu_spec *g;

	for (size_t i = 0; (g = gpus_at(i)); i++)
		strbuf_addf(&sb, "%s%s", i ? ", " : "", g->name);
	return strbuf_detach(&sb);
}

/* The knobs' names, "a, b or c"; the caller frees. */
static char *knob_names(void)
{
	struct strbuf sb = STRBUF_INIT;
	const char *k;

	for (size_t i = 0; (k = knob_name(i)); i++)
		strbuf_addf(&sb, "%s%s", !i ? "" : knob_name(i + 1) ? ", " : " or ", k);
	return strbuf_detach(&sb);
}

/* A knob that is none of the planner's: die naming them, and the nearest. */
static noreturn void knob_refused(const char *opt, const char *bad, const char *note)
{
	const char *known[16];
	size_t n = 0;
	char *knobs = knob_names();

	for (const char *k; n < 16 && (k = knob_name(n)); n++)
		known[n] = k;
	const char *near = suggest_closest(bad, known, n);
	if (near)
		die(EXIT_USAGE, "plan: %s wants %s%s, not '%s'; did you mean %s?", opt, knobs, note, bad, near);
	die(EXIT_USAGE, "plan: %s wants %s%s, not '%s'", opt, knobs, note, bad);
}

/* An option's line of the usage: its description from column 31, its words wrapped
 * to lines of at most 90 columns as the rest of the usage is written. */
static void usage_option(struct strbuf *sb, const char *opt, const char *text)
{
	enum { DESC_COL = 31, WIDTH = 90 };
	size_t col = DESC_COL;
	const char *w = text;

	strbuf_addf(sb, "      %-*s", DESC_COL - 6, opt);
	if (strlen(opt) >= DESC_COL - 6) /* too long for its column: the text below it */
		strbuf_addf(sb, "\n%*s", DESC_COL, "");
	while (*w) {
		size_t n = strcspn(w, " ");
		if (w != text && col + 1 + n > WIDTH) {
			strbuf_addf(sb, "\n%*s", DESC_COL, "");
			col = DESC_COL;
		} else if (w != text) {
			strbuf_add(sb, " ");
			col++;
		}
		strbuf_addf(sb, "%.*s", (int)n, w);
		col += n;
		w += n + strspn(w + n, " ");
	}
	strbuf_add(sb, "\n");
}

/* An old spelling's line: "--zero STAGE  is --zero-stage STAGE", "\"fused\": true  is
 * \"optimizer\": \"adamw-fused\"". */
static void usage_alias(struct strbuf *sb, const struct setting_alias *al)
{
	const struct setting *s = setting_find(al->key);
	const char *value = al->if_true ? al->if_true : s->arg;
	char name[48], opt[72], text[96];
	size_t k;

	for (k = 0; al->name[k] && k + 1 < sizeof(name); k++)
		name[k] = al->flag_only && al->name[k] == '_' ? '-' : al->name[k];
	name[k] = '\0';
	if (al->flag_only) {
		snprintf(opt, sizeof(opt), "--%s%s%s", name, value && !al->if_true ? " " : "",
			 value && !al->if_true ? value : "");
		setting_flag_text(s, value, text, sizeof(text));
	} else if (al->if_true) {
		snprintf(opt, sizeof(opt), "\"%s\": true", name);
		snprintf(text, sizeof(text), "\"%s\": \"%s\"", al->key, al->if_true);
	} else {
		snprintf(opt, sizeof(opt), "\"%s\"", name);
		snprintf(text, sizeof(text), "\"%s\"", al->key);
	}
	strbuf_addf(sb, "      %-24s is %s\n", opt, text);
}

/* The settings' lines, from their table, and their old spellings. */
static void usage_settings(struct strbuf *sb)
{
	const struct setting *s;
	const struct setting_alias *al;
	char flag[64], opt[72];

	for (size_t i = 0; (s = setting_at(i)); i++) {
		setting_flag_text(s, s->arg ? s->arg : "true", flag, sizeof(flag));
		snprintf(opt, sizeof(opt), "%s%s", s->arg ? "" : "--[no-]", s->arg ? flag : flag + 2);
		usage_option(sb, opt, s->help);
	}
	strbuf_add(sb, "Old spellings, still taken (docs/plan.md):\n");
	for (size_t i = 0; (al = setting_alias_at(i)); i++)
		usage_alias(sb, al);
}

static void usage_print(FILE *f)
{
	struct strbuf sb = STRBUF_INIT, text = STRBUF_INIT;
	char *gpus = gpu_names(), *knobs = knob_names();

	strbuf_add(&sb, usage_head);
	usage_settings(&sb);
	strbuf_add(&sb, usage_files);
	strbuf_addf(&text, "%s, in any case or as nvidia-smi names them (h100, a100: the 80 GB cards) "
		    "(default: GPU 0 by NVML)", gpus);
	usage_option(&sb, "--gpu NAME", strbuf_str(&text));
	strbuf_release(&text);
	strbuf_add(&sb, usage_gpu);
	strbuf_addf(&text, "the largest value of %s (its count) that surely fits, and that may", knobs);
	usage_option(&sb, "--solve KNOB", strbuf_str(&text));
	strbuf_release(&text);
	strbuf_add(&sb, usage_tail);
	fputs(strbuf_str(&sb), f);
	strbuf_release(&sb);
	free(gpus);
	free(knobs);
}

/* The default margin: what the live set's model (need_low) may be off by on a shape it
 * was not measured on; where blocks land is the interval's, not the margin's. */
#define PLAN_MARGIN_PCT 2.0

struct plan_args {
	struct model_shape m;
	struct train_settings t;
	enum prompt_source prompt;
	uint64_t gpu_bytes;
	const char *gpu_name;
	uint64_t margin_bytes;
	double margin_pct;
	int margin_in_bytes;      /* --margin SIZE (else a percentage of the GPU's memory) */
	int json;
	const char *const *locks; /* --lock's knobs: a hint changes none of them */
	size_t nlocks;
	json_t *ignored;          /* the files' keys not known to the planner, ignored:
				   * {"TrainingArguments": [keys]} (NULL: none) */
	struct strbuf files_said; /* what the files' readers assumed: "TOOL: ...", a line each */
	int file_fsdp_amp;        /* FSDP under bf16/fp16 in a tool's file (trainargs_settle) */
	int tool_file;            /* a file of HF Trainer's, TRL's or axolotl's was read */
	int file_ds_engine;       /* it runs DeepSpeed's 16-bit engine (trainargs_settle) */
	int calibrated;           /* --calibrated: probe is the one whose context is planned */
	struct gpu_probe probe;
	int anchored;             /* --oom or --observed: the plan is said beside anchor */
	struct anchor anchor;
	const char *oom_path;
};

static void prompt_settle(struct plan_args *a, setting_mask given);

static json_t *load_json(const char *path)
{
	return json_file_load("plan", path);
}

/* A config.json, or a case file with "model" and "train": the shape (with the model's
 * longest sequence), the settings given (into *given). */
static void load_case(const char *path, struct model_shape *m, struct train_settings *t, setting_mask *given)
{
	json_t *j = load_json(path), *model = json_object_get(j, "model"), *train = json_object_get(j, "train");
	char *err = NULL;

	if (model_shape_from_json(model ? model : j, m, &err) ||
	    (train && settings_from_json(train, t, given, &err))) {
		json_decref(j);
		die(EXIT_USAGE, "plan: %s: %s", path, err);
	}
	json_decref(j);
}

static uint64_t margin_of(const struct plan_args *a)
{
	return a->margin_in_bytes ? a->margin_bytes : (uint64_t)((double)a->gpu_bytes * a->margin_pct / 100.0);
}

static struct fit fit_of(const struct plan_args *a)
{
	return (struct fit){ .gpu_bytes = a->gpu_bytes, .margin_bytes = margin_of(a), .max_length = a->m.max_length };
}

static void compute(const struct plan_args *a, const struct train_settings *t, struct plan_result *r)
{
	struct fit f = fit_of(a);
	const char *why;

	if (fit_plan(&f, &a->m, t, r, &why))
		die(EXIT_USAGE, "plan: %s", why);
}

/* The version of the JSON plan prints: 2 has snake_case "_bytes" component keys and
 * "assumed" (1, without this field, had the table's names as keys). */
#define PLAN_JSON_FORMAT "headroom-plan/2"

/* What a plan assumed, as JSON (the setting solved for, or NULL, is null) and as the
 * text's first lines. */
static json_t *assumed_json(const struct plan_args *a, const struct train_settings *t, const char *solving)
{
	struct said_ctx c = { .solving = solving, .prompt = a->prompt };
	json_t *o = plan_assumed_json(&a->m, t, &c);

	if (a->ignored) /* (only then: a plan from known keys is as its flags') */
		json_object_set(o, "ignored_keys", a->ignored);
	if (a->calibrated)
		json_object_set_new(o, "calibrated", probe_json(&a->probe));
	return o;
}

static void print_assumed(const char *label, const struct plan_args *a, const struct train_settings *t,
			  const char *solving)
{
	struct said_ctx c = { .solving = solving, .prompt = a->prompt };
	struct strbuf sb = STRBUF_INIT;

	plan_assumed_text(&sb, label, &a->m, t, &c);
	for (const char *l = a->files_said.s, *nl; l && *l; l = nl + 1) {
		nl = strchr(l, '\n');
		strbuf_addf(&sb, "%*s%.*s\n", (int)strlen(label) + 2, "", (int)(nl - l), l);
	}
	if (a->calibrated) {
		strbuf_addf(&sb, "%*scontext: measured by `headroom probe --torch`, ", (int)strlen(label) + 2, "");
		probe_said(&sb, &a->probe);
		strbuf_add(&sb, "\n");
	}
	fputs(strbuf_str(&sb), stdout);
	strbuf_release(&sb);
}

static json_t *result_json(const struct plan_result *r)
{
	json_t *o = json_object(), *c = json_object();

	for (int i = 0; i < C_NCOMPONENTS; i++)
		json_object_set_new(c, plan_component_key(i), json_integer((json_int_t)r->bytes[i]));
	json_object_set_new(o, "device_peak_bytes", json_integer((json_int_t)r->device_peak_bytes));
	json_object_set_new(o, "allocated_peak_bytes", json_integer((json_int_t)r->allocated_peak_bytes));
	json_object_set_new(o, "plentiful_peak_bytes", json_integer((json_int_t)r->plentiful_peak_bytes));
	json_object_set_new(o, "min_device_bytes", json_integer((json_int_t)r->min_device_bytes));
	json_object_set_new(o, "need_low_bytes", json_integer((json_int_t)r->need_low_bytes));
	json_object_set_new(o, "need_high_bytes", json_integer((json_int_t)r->need_high_bytes));
	json_object_set_new(o, "largest_transient_bytes", json_integer((json_int_t)r->largest_transient_bytes));
	json_object_set_new(o, "need_high_phase", r->need_high_phase ? json_string(r->need_high_phase) : json_null());
	json_object_set_new(o, "peak_low_bytes", json_integer((json_int_t)r->peak_low_bytes));
	json_object_set_new(o, "peak_high_bytes", json_integer((json_int_t)r->peak_high_bytes));
	if (r->device_peak_high_bytes) {
		json_t *range = json_object();
		json_object_set_new(range, "low", json_integer((json_int_t)r->device_peak_low_bytes));
		json_object_set_new(range, "high", json_integer((json_int_t)r->device_peak_high_bytes));
		json_object_set_new(o, "device_peak_range_bytes", range);
	} else {
		json_object_set_new(o, "device_peak_range_bytes", json_null());
	}
	json_object_set_new(o, "peak_phase", json_string(r->peak_phase));
	json_object_set_new(o, "params", json_integer(r->params));
	json_object_set_new(o, "trainable_params", json_integer(r->trainable_params));
	json_object_set_new(o, "components", c);
	return o;
}

/* DDP rebuilds its gradient buckets in the second step, in the order the gradients became
 * ready; ProcessGroupNCCL keeps each all-reduce's input (the old buckets) until its
 * watchdog drops the finished work, which can come after the rebuild: then the step holds
 * the buckets twice (measured: bench/results/ddp-rebuild-h200x2.jsonl, 2 of 3 runs). A
 * race, not planned in the peak: said beside it. 0 when not DDP. */
static uint64_t ddp_rebuild_extra_bytes(const struct train_settings *t, const struct plan_result *r)
{
	return t->ddp && !t->inference ? (uint64_t)r->trainable_params * (uint64_t)t->param_bytes : 0;
}

/* Each verdict: its JSON name, how the text says it, and the exit status it ends with
 * (a solve's too: a value that surely fits, one that only may, none). */
static const struct {
	const char *name, *said;
	int exit;
} verdicts[] = {
	[FIT_FITS] = { "fits", "fits", 0 },
	[FIT_AT_RISK] = { "at risk", "at risk", EXIT_AT_RISK },
	[FIT_NO] = { "does not fit", "does NOT fit", 1 },
};

/* At risk: where the limit falls in the interval, and what narrows it (each shrinks what
 * fragmentation can pin). */
static void print_risk(const struct train_settings *t, const struct plan_result *r, uint64_t limit)
{
	char b[32];

	printf(": where blocks land decides (up to %s of fragmentation past the limit)\n",
	       size_format(r->need_high_bytes - limit, b, sizeof(b)));
	/* the risk is where need_high is reached: a chunked loss shrinks the forward's and
	 * backward's transients, a fused optimizer the step's */
	int in_step = r->need_high_phase && !strcmp(r->need_high_phase, "optimizer step");
	int foreach = t->opt == OPT_ADAMW && !t->fused;

	printf("what shrinks the risk (it is in the %s):%s%s torch.cuda.empty_cache() after the first step\n",
	       r->need_high_phase ? r->need_high_phase : "step",
	       t->expandable ? "" : " expandable segments (PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True);",
	       in_step ? (foreach ? " a fused optimizer (--optimizer adamw-fused);" : "")
	       : t->inference || t->loss_chunk || t->loss != LOSS_PLAIN ? "" : " a chunked loss (--loss-chunk 1024);");
}

static void print_table(const struct plan_args *a, const struct plan_result *r)
{
	char b[32], c[32], d[32], e[32], g[32];

	print_assumed("assumed", a, &a->t, NULL);
	printf("%s, %.1fM parameters (%.1fM trainable), peak in the %s\n", a->m.type, r->params / 1e6,
	       r->trainable_params / 1e6, r->peak_phase);
	printf("  %-28s %12s %7s\n", "component", "memory", "share");
	for (int i = 0; i < C_NCOMPONENTS; i++) {
		if (!r->bytes[i])
			continue;
		printf("  %-28s %12s %6.1f%%\n", plan_component_name(i), size_format(r->bytes[i], b, sizeof(b)),
		       100.0 * (double)r->bytes[i] / (double)r->device_peak_bytes);
	}
	printf("  %-28s %12s\n", "device peak", size_format(r->device_peak_bytes, b, sizeof(b)));
	if (r->plentiful_peak_bytes != r->device_peak_bytes)
		printf("with plenty of memory it would reserve %s; near the GPU's size PyTorch gives back\n"
		       "its unused cached memory and retries, and the peak above is this GPU's\n",
		       size_format(r->plentiful_peak_bytes, b, sizeof(b)));
	struct fit f = fit_of(a);
	uint64_t m = f.margin_bytes, usable = fit_usable_bytes(&f), limit = fit_limit_bytes(&f);
	enum fit_verdict v = fit_verdict(&f, r);
	int fits = v != FIT_NO;
	printf("it needs %s to %s (one likely layout: %s); with plenty of memory it peaks at %s to %s\n",
	       size_format(r->need_low_bytes, b, sizeof(b)), size_format(r->need_high_bytes, c, sizeof(c)),
	       size_format(r->min_device_bytes, d, sizeof(d)), size_format(r->peak_low_bytes, e, sizeof(e)),
	       size_format(r->peak_high_bytes, g, sizeof(g)));
	printf("GPU%s%s: %s (%s to a process), margin %s: %s", a->gpu_name ? " " : "", a->gpu_name ? a->gpu_name : "",
	       size_format(a->gpu_bytes, b, sizeof(b)), size_format(usable, c, sizeof(c)),
	       size_format(m, d, sizeof(d)), verdicts[v].said);
	if (v == FIT_NO)
		printf(", %s short even in the best placement\n", size_format(r->need_low_bytes - limit, d, sizeof(d)));
	else if (v == FIT_FITS)
		printf(", %s to spare in any placement\n", size_format(limit - r->need_high_bytes, d, sizeof(d)));
	else
		print_risk(&a->t, r, limit);
	if (r->device_peak_high_bytes)
		printf("expandable segments: %d simulated placements peak at %s to %s, the plan 2/5 of the way "
		       "from the plain run's to the highest%s\n",
		       PLAN_PLACEMENTS, size_format(r->device_peak_low_bytes, b, sizeof(b)),
		       size_format(r->device_peak_high_bytes, c, sizeof(c)),
		       !fits || r->device_peak_high_bytes <= usable ? ""
						      : "; the highest passes the GPU (its cache given back)");
	uint64_t extra = ddp_rebuild_extra_bytes(&a->t, r);
	if (extra)
		printf("DDP: when step 2's bucket rebuild finds NCCL still holding the old buckets (a race: 2 of 3\n"
		       "measured runs), a rank holds %s more, %s: %s\n", size_format(extra, b, sizeof(b)),
		       size_format(r->device_peak_bytes + extra, c, sizeof(c)),
		       r->need_high_bytes + extra <= limit ? "that fits too" : "that may NOT fit");
}

/* A hint's changes as typed, one after another: "--optimizer adamw-fused --grad-ckpt". */
static const char *hint_text(const struct hint *h, char *buf, size_t n)
{
	char one[64];
	size_t len = 0;

	buf[0] = '\0';
	for (int c = 0; c < HINT_NCHANGES; c++)
		if (h->changes & (1u << c) && len < n) {
			hint_flag_text(h, c, h->value[c], one, sizeof(one));
			len += (size_t)snprintf(buf + len, n - len, "%s%s", len ? " " : "", one);
		}
	return buf;
}

/* What a hint says, as JSON: null when no change fits; solving adds the knob's value. */
static json_t *hint_json(const struct hint *h, int solving)
{
	json_t *o, *setting;
	char change[256];

	if (!h->found)
		return json_null();
	o = json_object();
	setting = json_object();
	json_object_set_new(o, "change", json_string(hint_text(h, change, sizeof(change))));
	for (int c = 0; c < HINT_NCHANGES; c++)
		if (h->changes & (1u << c))
			json_object_set_new(setting, hint_key(c), hint_setting_json(h, c, h->value[c]));
	json_object_set_new(o, "setting", setting);
	if (solving)
		json_object_set_new(o, "value", json_integer(h->solved));
	json_object_set_new(o, "device_peak_bytes", json_integer((json_int_t)h->plan.device_peak_bytes));
	json_object_set_new(o, "need_low_bytes", json_integer((json_int_t)h->plan.need_low_bytes));
	json_object_set_new(o, "need_high_bytes", json_integer((json_int_t)h->plan.need_high_bytes));
	return o;
}

/* The changes a hint tried, as a JSON array of flags. */
static json_t *hint_tried_json(const struct hint *h)
{
	json_t *a = json_array();
	char change[64];

	for (int c = 0; c < HINT_NCHANGES; c++)
		if (h->tried & (1u << c))
			json_array_append_new(a, json_string(hint_flag_text(h, c, h->tried_value[c], change, sizeof(change))));
	return a;
}

/* The hint's line: the changes and what they give (knob: the value solved for). */
static void print_hint(const struct plan_args *a, const struct hint *h, const char *knob)
{
	char change[256], b[32], c[32];

	if (!h->found) {
		struct strbuf sb = STRBUF_INIT;
		for (int i = 0, n = 0; i < HINT_NCHANGES; i++)
			if (h->tried & (1u << i))
				strbuf_addf(&sb, "%s%s", n++ ? ", " : "", hint_flag_text(h, i, h->tried_value[i], change,
											   sizeof(change)));
		if (!h->tried)
			printf("hint: none of the changes the planner tries applies\n");
		else
			printf("hint: nothing the planner can change makes it fit, not even all of %s together\n",
			       strbuf_str(&sb));
		strbuf_release(&sb);
		return;
	}
	hint_text(h, change, sizeof(change));
	if (knob)
		printf("hint: with %s, %s = %lld surely fits: needs %s to %s\n", change, knob, (long long)h->solved,
		       size_format(h->plan.need_low_bytes, b, sizeof(b)), size_format(h->plan.need_high_bytes, c, sizeof(c)));
	else {
		struct fit f = fit_of(a);
		char d[32];
		printf("hint: with %s it fits: needs %s to %s, %s to spare\n", change,
		       size_format(h->plan.need_low_bytes, b, sizeof(b)), size_format(h->plan.need_high_bytes, c, sizeof(c)),
		       size_format(fit_limit_bytes(&f) - h->plan.need_high_bytes, d, sizeof(d)));
	}
}

/* --solve's answers: what surely fits, what may, and the first that does not. */
static void print_solved(const char *name, const struct solve_result *r, const struct fit *f)
{
	char b[32], c[32], d[32], e[32];

	printf("GPU %s (%s to a process), margin %s: a run must fit in %s\n", size_format(f->gpu_bytes, b, sizeof(b)),
	       size_format(fit_usable_bytes(f), c, sizeof(c)), size_format(f->margin_bytes, d, sizeof(d)),
	       size_format(fit_limit_bytes(f), e, sizeof(e)));
	if (r->value)
		printf("surely fits: %s = %lld (needs %s to %s)%s\n", name, (long long)r->value,
		       size_format(r->plan.need_low_bytes, b, sizeof(b)), size_format(r->plan.need_high_bytes, e, sizeof(e)),
		       r->largest ? ", its largest" : "");
	else
		printf("surely fits: no %s (placement decides from the least)\n", name);
	printf("may fit: %s = %lld (needs %s to %s)", name, (long long)r->may_value,
	       size_format(r->may_plan.need_low_bytes, b, sizeof(b)), size_format(r->may_plan.need_high_bytes, e, sizeof(e)));
	if (r->may_largest)
		printf(", it is the largest %s (%s)\n", name, r->max_is);
	else if (r->next_too_big)
		printf("; %lld is past the planner's limits (%s)\n", (long long)r->next_value, r->next_too_big);
	else
		printf("; %lld needs at least %s: it does not fit\n", (long long)r->next_value,
		       size_format(r->next.need_low_bytes, b, sizeof(b)));
}

/* The text's names of the message's figures, in enum oom_figure's order. */
static const char *const oom_said[OOM_NFIGURES] = {
	"asked", "total", "free", "in use", "allocated", "reserved but unallocated", "reserved",
};

/* The anchor's figures: the message's (absent ones "unknown") and the observed peak. */
static void print_anchor_figures(const struct plan_args *a)
{
	const struct oom_message *o = &a->anchor.oom;
	char b[32];

	if (a->anchor.has_oom) {
		printf("anchor: the out-of-memory message (%s), GPU ", strcmp(a->oom_path, "-") ? a->oom_path : "stdin");
		o->gpu >= 0 ? printf("%d:\n       ", o->gpu) : printf("unknown:\n       ");
		for (int f = 0, n = 0; f < OOM_NFIGURES; f++)
			if (f != OOM_RESERVED || OOM_KNOWN(o, f)) /* (only older versions print it) */
				printf("%s %s %s%s", n++ ? "," : "", oom_said[f], OOM_KNOWN(o, f) ? size_format(o->bytes[f], b, sizeof(b))
										  : "unknown",
				       o->derived >> f & 1u ? " (reserved less allocated)" : "");
		putchar('\n');
	}
	if (a->anchor.has_observed)
		printf("anchor: observed peak %s\n", size_format(a->anchor.observed_bytes, b, sizeof(b)));
}

/* need_low to need_high, as planned and shifted by the anchor's offset. */
static void print_anchored(const char *what, const struct plan_result *p, const struct anchor_answer *ans)
{
	char b[32], c[32], d[32], e[32], g[32];
	uint64_t off = ans->offset_bytes < 0 ? (uint64_t)-(ans->offset_bytes + 1) + 1 : (uint64_t)ans->offset_bytes;

	printf("anchor: %s needs %s to %s as planned, %s to %s anchored (planned %s %s)\n", what,
	       size_format(p->need_low_bytes, b, sizeof(b)), size_format(p->need_high_bytes, c, sizeof(c)),
	       size_format(anchor_shift(p->need_low_bytes, ans->offset_bytes), d, sizeof(d)),
	       size_format(anchor_shift(p->need_high_bytes, ans->offset_bytes), e, sizeof(e)),
	       ans->offset_bytes < 0 ? "less" : "plus", size_format(off, g, sizeof(g)));
}

/* The plan beside the anchor: how far it is, what the card lacked, what recovers it,
 * and the hint's (h) or --solve's (sr) answer anchored; NULL where there is none. */
static void print_anchor(const struct plan_args *a, const struct plan_result *r, const struct hint *h,
			 const struct solve_result *sr, const char *knob)
{
	struct anchor_answer ans;
	char b[32], c[32], d[32];

	anchor_answer(&a->anchor, r->min_device_bytes, &a->t, &ans);
	print_anchor_figures(a);
	if (ans.has_offset) {
		uint64_t off = ans.offset_bytes < 0 ? (uint64_t)-(ans.offset_bytes + 1) + 1 : (uint64_t)ans.offset_bytes;
		printf("anchor: the run held %s%s; the plan's likely layout, %s, is %s %s it\n",
		       ans.peak_is_least ? "at least " : "", size_format(ans.peak_bytes, b, sizeof(b)),
		       size_format(r->min_device_bytes, c, sizeof(c)), size_format(off, d, sizeof(d)),
		       ans.offset_bytes < 0 ? "above" : "below");
		if (ans.peak_is_least)
			printf("        (in use plus what it asked for: the step failed there, so it peaked no lower)\n");
		print_anchored("this run", r, &ans);
	}
	if (ans.has_short && !ans.short_bytes)
		printf("anchor: the card had the %s asked for free: the allocator's own limit, not the card's, failed it\n",
		       size_format(a->anchor.oom.bytes[OOM_ASKED], b, sizeof(b)));
	else if (ans.has_short)
		printf("anchor: short by %s (asked %s, %s free)\n", size_format(ans.short_bytes, b, sizeof(b)),
		       size_format(a->anchor.oom.bytes[OOM_ASKED], c, sizeof(c)),
		       size_format(a->anchor.oom.bytes[OOM_FREE], d, sizeof(d)));
	if (ans.expandable)
		printf("anchor: expandable segments (--alloc-conf expandable_segments:True) would recover about %s,\n"
		       "        the reserved but unallocated, more than the %s short (about: a page with a live block\n"
		       "        in it stays mapped)\n", size_format(ans.reserved_free_bytes, b, sizeof(b)),
		       size_format(ans.short_bytes, c, sizeof(c)));
	if (ans.has_buffer)
		printf("anchor: dropping %s from %lld to %lld items frees %s, the %s short\n", ans.buffer_name,
		       (long long)ans.buffer_from, (long long)ans.buffer_to, size_format(ans.buffer_frees, b, sizeof(b)),
		       size_format(ans.short_bytes, c, sizeof(c)));
	if (!ans.has_offset)
		return;
	if (h && h->found) {
		char change[256], what[300];
		snprintf(what, sizeof(what), "the hint's %s", hint_text(h, change, sizeof(change)));
		print_anchored(what, &h->plan, &ans);
	}
	if (sr && sr->value) {
		char what[128];
		snprintf(what, sizeof(what), "%s = %lld", knob, (long long)sr->value);
		print_anchored(what, &sr->plan, &ans);
	}
}

/* need_low and need_high as planned and anchored, as JSON. */
static json_t *anchored_json(const struct plan_result *p, const struct anchor_answer *ans)
{
	json_t *o = json_object();

	json_object_set_new(o, "need_low_bytes", json_integer((json_int_t)p->need_low_bytes));
	json_object_set_new(o, "need_high_bytes", json_integer((json_int_t)p->need_high_bytes));
	json_object_set_new(o, "anchored_need_low_bytes",
			    json_integer((json_int_t)anchor_shift(p->need_low_bytes, ans->offset_bytes)));
	json_object_set_new(o, "anchored_need_high_bytes",
			    json_integer((json_int_t)anchor_shift(p->need_high_bytes, ans->offset_bytes)));
	return o;
}

static json_t *bytes_or_null(int has, uint64_t v)
{
	return has ? json_integer((json_int_t)v) : json_null();
}

/* The anchor as JSON: its figures (null where unknown) and the answers beside it. */
static json_t *anchor_json(const struct plan_args *a, const struct plan_result *r, const struct hint *h,
			   const struct solve_result *sr)
{
	const struct oom_message *o = &a->anchor.oom;
	struct anchor_answer ans;
	json_t *j = json_object(), *fig = json_object(), *buf = json_null();
	char key[48];

	anchor_answer(&a->anchor, r->min_device_bytes, &a->t, &ans);
	for (int f = 0; f < OOM_NFIGURES; f++) {
		snprintf(key, sizeof(key), "%s_bytes", oom_figure_key(f));
		json_object_set_new(fig, key, bytes_or_null(a->anchor.has_oom && OOM_KNOWN(o, f), o->bytes[f]));
	}
	json_object_set_new(j, "oom_file", a->anchor.has_oom ? json_string(a->oom_path) : json_null());
	json_object_set_new(j, "gpu", a->anchor.has_oom && o->gpu >= 0 ? json_integer(o->gpu) : json_null());
	json_object_set_new(j, "figures", a->anchor.has_oom ? fig : json_null());
	if (!a->anchor.has_oom)
		json_decref(fig);
	json_object_set_new(j, "observed_bytes", bytes_or_null(a->anchor.has_observed, a->anchor.observed_bytes));
	json_object_set_new(j, "peak_bytes", bytes_or_null(ans.has_peak, ans.peak_bytes));
	json_object_set_new(j, "peak_is_least", json_boolean(ans.peak_is_least));
	json_object_set_new(j, "likely_bytes", json_integer((json_int_t)r->min_device_bytes));
	json_object_set_new(j, "offset_bytes", ans.has_offset ? json_integer(ans.offset_bytes) : json_null());
	json_object_set_new(j, "short_bytes", bytes_or_null(ans.has_short, ans.short_bytes));
	json_object_set_new(j, "expandable_recovers_bytes", bytes_or_null(ans.expandable, ans.reserved_free_bytes));
	if (ans.has_buffer) {
		buf = json_object();
		json_object_set_new(buf, "name", json_string(ans.buffer_name));
		json_object_set_new(buf, "from", json_integer(ans.buffer_from));
		json_object_set_new(buf, "to", json_integer(ans.buffer_to));
		json_object_set_new(buf, "frees_bytes", json_integer((json_int_t)ans.buffer_frees));
	}
	json_object_set_new(j, "buffer", buf);
	json_object_set_new(j, "plan", ans.has_offset ? anchored_json(r, &ans) : json_null());
	json_object_set_new(j, "hint", ans.has_offset && h && h->found ? anchored_json(&h->plan, &ans) : json_null());
	json_object_set_new(j, "solved", ans.has_offset && sr && sr->value ? anchored_json(&sr->plan, &ans) : json_null());
	return j;
}

static int solve(const struct plan_args *a, const char *name)
{
	struct fit f = fit_of(a);
	struct solve_result r;
	const char *why;
	int rc = solve_knob(&f, &a->m, &a->t, name, &r, &why);

	if (rc == -ENOENT)
		knob_refused("--solve", name, " (a --buffer given)");
	if (rc)
		die(EXIT_USAGE, "plan: %s", why);
	struct hint h = { 0 };
	if (!r.value) /* nothing surely fits (-ENOENT cannot be: solve_knob took the knob) */
		hint_find(&f, &a->m, &a->t, name, a->locks, a->nlocks, &h);
	struct plan_result cur; /* the settings as given: the plan the anchor is beside */
	if (a->anchored)
		compute(a, &a->t, &cur);
	if (a->json) {
		json_t *o = json_object();
		json_object_set_new(o, "format", json_string(PLAN_JSON_FORMAT));
		json_object_set_new(o, "assumed", assumed_json(a, &a->t, name));
		json_object_set_new(o, "knob", json_string(name));
		json_object_set_new(o, "value", r.value ? json_integer(r.value) : json_null());
		json_object_set_new(o, "plan", r.value ? result_json(&r.plan) : json_null());
		json_object_set_new(o, "may_value", r.may_value ? json_integer(r.may_value) : json_null());
		json_object_set_new(o, "may_plan", r.may_value ? result_json(&r.may_plan) : json_null());
		json_object_set_new(o, "next_value", r.may_largest ? json_null() : json_integer(r.next_value));
		json_object_set_new(o, "next_need_low_bytes", r.may_largest || r.next_too_big ? json_null()
							: json_integer((json_int_t)r.next.need_low_bytes));
		json_object_set_new(o, "gpu_memory_bytes", json_integer((json_int_t)a->gpu_bytes));
		json_object_set_new(o, "margin_bytes", json_integer((json_int_t)f.margin_bytes));
		json_object_set_new(o, "limit_bytes", json_integer((json_int_t)fit_limit_bytes(&f)));
		if (!r.value) {
			json_object_set_new(o, "hint", hint_json(&h, 1));
			json_object_set_new(o, "hint_tried", hint_tried_json(&h));
		}
		if (a->anchored)
			json_object_set_new(o, "anchor", anchor_json(a, &cur, r.value ? NULL : &h, &r));
		json_dumpf(o, stdout, JSON_INDENT(2));
		putchar('\n');
		json_decref(o);
	} else {
		char b[32], c[32], d[32];
		print_assumed("assumed", a, &a->t, name);
		if (!r.may_value) {
			printf("no %s fits: %s = %lld needs at least %s, the GPU has %s with a margin of %s\n", name,
			       name, (long long)r.next_value, size_format(r.next.need_low_bytes, b, sizeof(b)),
			       size_format(a->gpu_bytes, c, sizeof(c)), size_format(f.margin_bytes, d, sizeof(d)));
		} else {
			print_solved(name, &r, &f);
		}
		if (!r.value)
			print_hint(a, &h, name);
		if (a->anchored)
			print_anchor(a, &cur, r.value ? NULL : &h, &r, name);
	}
	return verdicts[r.value ? FIT_FITS : r.may_value ? FIT_AT_RISK : FIT_NO].exit;
}

static int compare(struct plan_args *a, const char *pa, const char *pb)
{
	struct plan_args x = *a, y = *a;
	struct plan_result ra, rb;
	char s1[32], s2[32], s3[32];

	train_settings_init(&x.t);
	train_settings_init(&y.t);
	setting_mask gx = 0, gy = 0;
	load_case(pa, &x.m, &x.t, &gx);
	load_case(pb, &y.m, &y.t, &gy);
	prompt_settle(&x, gx);
	prompt_settle(&y, gy);
	compute(&x, &x.t, &ra);
	compute(&y, &y.t, &rb);
	if (a->json) {
		json_t *o = json_object(), *ja = result_json(&ra), *jb = result_json(&rb);
		json_object_set_new(ja, "assumed", assumed_json(&x, &x.t, NULL));
		json_object_set_new(jb, "assumed", assumed_json(&y, &y.t, NULL));
		json_object_set_new(o, "format", json_string(PLAN_JSON_FORMAT));
		json_object_set_new(o, "a", ja);
		json_object_set_new(o, "b", jb);
		json_dumpf(o, stdout, JSON_INDENT(2));
		putchar('\n');
		json_decref(o);
		return 0;
	}
	print_assumed("A assumed", &x, &x.t, NULL);
	print_assumed("B assumed", &y, &y.t, NULL);
	printf("  %-28s %12s %12s %12s\n", "component", "A", "B", "B - A");
	for (int i = 0; i < C_NCOMPONENTS; i++) {
		if (!ra.bytes[i] && !rb.bytes[i])
			continue;
		uint64_t d = ra.bytes[i] > rb.bytes[i] ? ra.bytes[i] - rb.bytes[i] : rb.bytes[i] - ra.bytes[i];
		printf("  %-28s %12s %12s %c%11s\n", plan_component_name(i), size_format(ra.bytes[i], s1, sizeof(s1)),
		       size_format(rb.bytes[i], s2, sizeof(s2)), rb.bytes[i] >= ra.bytes[i] ? '+' : '-',
		       size_format(d, s3, sizeof(s3)));
	}
	printf("  %-28s %12s %12s (peak in the %s / %s)\n", "device peak", size_format(ra.device_peak_bytes, s1, sizeof(s1)),
	       size_format(rb.device_peak_bytes, s2, sizeof(s2)), ra.peak_phase, rb.peak_phase);
	return 0;
}

/* What `headroom probe --torch` measured on this machine's GPU 0: PyTorch's device
 * memory beyond its reserved memory (the context and the libraries' workspaces), from
 * the GPU's newest probe with it, kept in *used for the assumed lines. */
static uint64_t calibrated_context(const char *db, struct gpu_probe *used)
{
	struct nvml_gpu g;
	struct gpu_probe gpu;
	struct store *st = NULL;
	char *path = db ? xstrdup(db) : store_default_path(), *err = NULL;

	if (nvml_gpu_read(0, &g))
		die(EXIT_USAGE, "plan: --calibrated needs this machine's GPU 0 (NVML found none)");
	probe_init(&gpu);
	snprintf(gpu.gpu, sizeof(gpu.gpu), "%s", g.name);
	snprintf(gpu.uuid, sizeof(gpu.uuid), "%s", g.uuid);
	if (store_open(path, &st, &err) || store_probe_latest(st, &gpu, 1, used))
		die(EXIT_USAGE, "plan: no PyTorch figure measured for \"%s\" in %s: run `headroom probe --torch` first",
		    g.name, path);
	store_close(st);
	if (used->torch_overhead_bytes <= 0 || (uint64_t)used->torch_overhead_bytes > PLAN_MAX_ITEM_BYTES)
		die(EXIT_USAGE, "plan: the probe of \"%s\" has no PyTorch figure from 1 byte to 1 TiB: run "
		    "`headroom probe --torch`", g.name);
	if (*used->driver && strcmp(used->driver, g.driver))
		log_warn("plan: --calibrated: the newest probe of \"%s\" ran under driver %s, this machine has %s: "
			 "run `headroom probe --torch` again", g.name, used->driver, g.driver);
	free(path);
	return (uint64_t)used->torch_overhead_bytes;
}

/* The command's own options; the settings' follow from their table (plan/settings.h). */
enum plan_opt { O_TRAIN = 256, O_GPU, O_GPUMEM, O_MARGIN, O_JSON, O_SOLVE, O_LOCK, O_CMP, O_CALIB, O_DB, O_STRICT,
		O_TRAINER_ARGS, O_AXOLOTL, O_OOM, O_OBSERVED, O_SETTING = 1000, O_SETTING_NO = 1100, O_ALIAS = 1200 };

#define PLAN_MAX_OPTIONS 96
#define PLAN_MAX_PENDING 64
#define PLAN_MAX_LOCKS 16

/* What the command line said, before it is applied over the files. */
struct plan_cli {
	struct option opts[PLAN_MAX_OPTIONS];
	char names[PLAN_MAX_OPTIONS][48];
	struct { int c; const char *arg; } pending[PLAN_MAX_PENDING];
	size_t npending;
	const char *train_file, *trainer_args, *axolotl, *solve_name, *db, *locks[PLAN_MAX_LOCKS];
	size_t nlocks;
	int cmp, calibrated, strict;
};

static void add_option(struct plan_cli *c, size_t *n, const char *prefix, const char *key, int has_arg, int val)
{
	size_t i, k = strlen(prefix);

	if (*n + 1 >= PLAN_MAX_OPTIONS)
		die(EXIT_INTERNAL, "plan: more options than PLAN_MAX_OPTIONS");
	memcpy(c->names[*n], prefix, k);
	for (i = 0; key[i] && k + i + 1 < sizeof(c->names[0]); i++)
		c->names[*n][k + i] = key[i] == '_' ? '-' : key[i];
	c->names[*n][k + i] = '\0';
	c->opts[*n] = (struct option){ c->names[*n], has_arg, NULL, val };
	(*n)++;
}

/* getopt's table: the command's options, each setting (a boolean's --no- too), each
 * old spelling. */
static void options_build(struct plan_cli *c)
{
	static const struct { const char *name; int has_arg, val; } own[] = {
		{ "train", required_argument, O_TRAIN }, { "gpu", required_argument, O_GPU },
		{ "gpu-memory", required_argument, O_GPUMEM }, { "margin", required_argument, O_MARGIN },
		{ "json", no_argument, O_JSON }, { "solve", required_argument, O_SOLVE },
		{ "lock", required_argument, O_LOCK }, { "compare", no_argument, O_CMP },
		{ "calibrated", no_argument, O_CALIB }, { "db", required_argument, O_DB },
		{ "strict", no_argument, O_STRICT }, { "trainer-args", required_argument, O_TRAINER_ARGS },
		{ "axolotl", required_argument, O_AXOLOTL }, { "oom", required_argument, O_OOM },
		{ "observed", required_argument, O_OBSERVED }, { "help", no_argument, 'h' },
	};
	const struct setting *s;
	const struct setting_alias *al;
	size_t n = 0;

	for (size_t i = 0; i < sizeof(own) / sizeof(own[0]); i++)
		add_option(c, &n, "", own[i].name, own[i].has_arg, own[i].val);
	for (size_t i = 0; (s = setting_at(i)); i++) {
		add_option(c, &n, "", s->key, s->arg ? required_argument : no_argument, O_SETTING + (int)i);
		if (!s->arg)
			add_option(c, &n, "no-", s->key, no_argument, O_SETTING_NO + (int)i);
	}
	for (size_t i = 0; (al = setting_alias_at(i)); i++)
		add_option(c, &n, "", al->name, al->if_true || !setting_find(al->key)->arg ? no_argument : required_argument,
			   O_ALIAS + (int)i);
	c->opts[n] = (struct option){ NULL, 0, NULL, 0 };
}

/* The name of getopt's option val, as typed ("--zero"). */
static const char *option_name(const struct plan_cli *c, int val)
{
	for (const struct option *o = c->opts; o->name; o++)
		if (o->val == val)
			return o->name;
	return "?";
}

/* The setting getopt's val (a setting's flag, its --no- or an old spelling) gives. */
static const struct setting *option_setting(int val)
{
	if (val >= O_ALIAS)
		return setting_find(setting_alias_at((size_t)(val - O_ALIAS))->key);
	return setting_at((size_t)(val - (val >= O_SETTING_NO ? O_SETTING_NO : O_SETTING)));
}

/* A setting's value with a size that has no unit ("740", "queue=50x100"): the number
 * is its last, as COUNTxSIZE ends in SIZE; dies saying what to write. */
static noreturn void bare_size(const char *option, const char *text)
{
	size_t n = strlen(text), at = n;
	char hint[256];

	while (at && (isdigit((unsigned char)text[at - 1]) || text[at - 1] == '.'))
		at--;
	size_unit_hint(text + at, 'M', hint, sizeof(hint));
	if (at)
		die(EXIT_USAGE, "plan: --%s: '%s': %s", option, text, hint);
	die(EXIT_USAGE, "plan: --%s: %s", option, hint);
}

/* A setting from the command line, applied over what the files said: die naming the
 * flag, what it wants and the nearest value. */
static void apply_option(const struct plan_cli *c, struct train_settings *t, setting_mask *given, int val,
			 const char *arg)
{
	const struct setting *s = option_setting(val);
	const char *text = arg, *near;
	char want[256];
	int rc;

	if (val >= O_ALIAS) {
		const struct setting_alias *al = setting_alias_at((size_t)(val - O_ALIAS));
		if (al->if_true)
			text = al->if_true;
		else if (!s->arg)
			text = "true";
	} else if (val >= O_SETTING_NO) {
		text = "false";
	} else if (!s->arg) {
		text = "true";
	}
	*given |= SETTING_BIT(s);
	if (!(rc = setting_apply(s, t, text)))
		return;
	if (rc == -EDOM)
		bare_size(option_name(c, val), text);
	setting_want(s, want, sizeof(want));
	near = setting_suggest(s, text);
	if (near)
		die(EXIT_USAGE, "plan: --%s wants %s, not '%s'; did you mean %s?", option_name(c, val), want, text, near);
	die(EXIT_USAGE, "plan: --%s wants %s, not '%s'", option_name(c, val), want, text);
}

static void gpu_option(struct plan_args *a, const char *name)
{
	const struct gpu_spec *g = gpus_find(name);
	const char *near;

	if (g) {
		a->gpu_bytes = g->memory_bytes;
		a->gpu_name = g->name;
		return;
	}
	char *names = gpu_names();
	near = gpus_suggest(name);
	if (near)
		die(EXIT_USAGE, "plan: unknown --gpu '%s'; did you mean %s? (%s; or --gpu-memory SIZE)", name, near, names);
	die(EXIT_USAGE, "plan: unknown --gpu '%s' (%s; or --gpu-memory SIZE)", name, names);
}

static void margin_option(struct plan_args *a, const char *arg)
{
	size_t n = strlen(arg);
	int rc;

	if (n && arg[n - 1] == '%') {
		if (parse_pct(arg, 0, nextafter(100.0, 0.0), &a->margin_pct))
			die(EXIT_USAGE, "plan: --margin wants a percentage from 0%% to below 100%%, not '%s'", arg);
		a->margin_in_bytes = 0;
	} else if ((rc = parse_size(arg, 0, PLAN_MAX_BYTES, &a->margin_bytes))) {
		if (rc == -EDOM) /* a share or a size: neither is the likelier */
			die(EXIT_USAGE, "plan: --margin: '%s' has no unit: %s what? %s%% or %sG", arg, arg, arg, arg);
		die(EXIT_USAGE, "plan: --margin wants a size up to 1 PiB such as 2G or a percentage such as 5%%, not '%s'",
		    arg);
	} else {
		a->margin_in_bytes = 1;
	}
}

/* What --oom reads of its file: the last of it, where a log's message is. */
#define OOM_READ_MAX (1024 * 1024)
#define OOM_READ_CHUNK (64 * 1024)

/* The last OOM_READ_MAX bytes (about) of f into *buf (to free), their count into *n. */
static int read_tail(FILE *f, const struct stat *st, char **buf, size_t *n)
{
	char *b = xmalloc(OOM_READ_MAX);
	size_t len = 0, got;

	if (S_ISREG(st->st_mode) && st->st_size > OOM_READ_MAX && fseeko(f, st->st_size - OOM_READ_MAX, SEEK_SET)) {
		free(b);
		return -errno;
	}
	for (;;) {
		if (len + OOM_READ_CHUNK > OOM_READ_MAX) { /* a pipe's longer text: keep its end */
			memmove(b, b + OOM_READ_CHUNK, len - OOM_READ_CHUNK);
			len -= OOM_READ_CHUNK;
		}
		got = fread(b + len, 1, OOM_READ_CHUNK, f);
		len += got;
		if (got < OOM_READ_CHUNK)
			break;
	}
	if (ferror(f)) {
		free(b);
		return -EIO;
	}
	*buf = b;
	*n = len;
	return 0;
}

/* --oom FILE ("-": standard input): PyTorch's out-of-memory message in it, read. */
static void oom_option(struct plan_args *a, const char *path)
{
	FILE *f = stdin;
	struct stat st;
	const char *kind = NULL, *why = NULL;
	char *text = NULL;
	size_t n = 0;
	int rc = 0, is_std = !strcmp(path, "-");

	if (!is_std && (rc = fs_open_input(path, &f, &st, &kind))) {
		if (rc == -EINVAL)
			die(EXIT_USAGE, "plan: --oom %s is %s, not a file: give the log or a file with the message pasted", path,
			    kind);
		die(EXIT_USAGE, "plan: --oom: cannot read %s: %s", path, strerror(-rc));
	}
	if (is_std && fstat(fileno(stdin), &st))
		die(EXIT_USAGE, "plan: --oom -: cannot read standard input: %s", strerror(errno));
	rc = read_tail(f, &st, &text, &n);
	if (!is_std)
		fclose(f);
	if (rc)
		die(EXIT_USAGE, "plan: --oom: cannot read %s: %s", is_std ? "standard input" : path, strerror(-rc));
	rc = oom_parse(text, n, &a->anchor.oom, &why);
	free(text);
	if (rc == -ENOENT)
		die(EXIT_USAGE, "plan: --oom %s: no PyTorch out-of-memory message in it (looked for \"CUDA out of memory. "
		    "Tried to allocate ...\"%s): give the log of the run that failed, or the message pasted into a file",
		    is_std ? "-" : path, n >= OOM_READ_MAX ? " in its last MiB" : "");
	if (rc)
		die(EXIT_USAGE, "plan: --oom %s: %s", is_std ? "-" : path, why);
	if (!a->anchor.oom.known)
		die(EXIT_USAGE, "plan: --oom %s: its \"CUDA out of memory\" message has none of PyTorch's figures "
		    "(\"Tried to allocate X\", \"of which X is free\"...): paste the whole message", is_std ? "-" : path);
	a->anchor.has_oom = a->anchored = 1;
	a->oom_path = path;
}

/* One of the command's own options (not a setting). */
static void own_option(struct plan_cli *c, struct plan_args *a, int opt, const char *arg)
{
	switch (opt) {
	case O_TRAIN: c->train_file = arg; break;
	case O_TRAINER_ARGS: c->trainer_args = arg; break;
	case O_AXOLOTL: c->axolotl = arg; break;
	case O_GPU: gpu_option(a, arg); break;
	case O_GPUMEM: {
		int rc = parse_size(arg, 1, PLAN_MAX_BYTES, &a->gpu_bytes);
		opt_size_unit("plan", "--gpu-memory", arg, rc, 'G');
		if (rc)
			die(EXIT_USAGE, "plan: --gpu-memory wants a size from 1 byte to 1 PiB such as 80G, not '%s'", arg);
		break;
	}
	case O_MARGIN: margin_option(a, arg); break;
	case O_OOM: oom_option(a, arg); break;
	case O_OBSERVED: {
		int rc = parse_size(arg, 1, PLAN_MAX_BYTES, &a->anchor.observed_bytes);
		opt_size_unit("plan", "--observed", arg, rc, 'G');
		if (rc)
			die(EXIT_USAGE, "plan: --observed wants the peak seen, a size from 1 byte to 1 PiB such as 90.4G, "
			    "not '%s'", arg);
		a->anchor.has_observed = a->anchored = 1;
		break;
	}
	case O_JSON: a->json = 1; break;
	case O_SOLVE: c->solve_name = arg; break;
	case O_LOCK:
		if (c->nlocks == PLAN_MAX_LOCKS)
			die(EXIT_USAGE, "plan: at most %d --lock", PLAN_MAX_LOCKS);
		c->locks[c->nlocks++] = arg;
		break;
	case O_CMP: c->cmp = 1; break;
	case O_CALIB: c->calibrated = 1; break;
	case O_STRICT: c->strict = 1; break;
	case O_DB:
		if (!*arg)
			die(EXIT_USAGE, "plan: --db wants a path, not ''");
		c->db = arg;
		break;
	}
}

/* The command line into c and a: 1 when --help was given. */
static int parse_args(int argc, char **argv, struct plan_cli *c, struct plan_args *a)
{
	int opt;

	options_build(c);
	while ((opt = getopt_long(argc, argv, "h", c->opts, NULL)) != -1) {
		if (opt == 'h')
			return 1;
		if (opt == '?')
			opt_refused("plan", c->opts, argv);
		if (opt < O_SETTING) {
			own_option(c, a, opt, optarg);
			continue;
		}
		/* applied after the files, in order: the command line wins */
		if (c->npending == PLAN_MAX_PENDING)
			die(EXIT_USAGE, "plan: more than %d settings on the command line", PLAN_MAX_PENDING);
		c->pending[c->npending].c = opt;
		c->pending[c->npending++].arg = optarg;
	}
	return 0;
}

typedef int (*settings_reader)(const char *, struct train_settings *, setting_mask *, struct file_read *, char **);

/* A file of another tool's settings, read by reader over a's settings: the settings the
 * command line gives (cli) are the flags', the keys it did not know warned of (refused
 * with --strict), and both said on the assumed lines. */
static void load_settings_file(const struct plan_cli *c, struct plan_args *a, setting_mask *given, setting_mask cli,
			       const char *tool, const char *path, settings_reader reader)
{
	struct file_read f = { .cli = cli, .dtype = a->m.dtype, .strict = c->strict, .layers = (int)a->m.layers };
	struct strbuf keys = STRBUF_INIT;
	char *err = NULL;
	size_t i;
	json_t *k;

	if (reader(path, &a->t, given, &f, &err)) /* (a reader always says why; NULL never reaches %s) */
		die(EXIT_USAGE, "plan: %s: %s", path, err ? err : "not read");
	a->file_fsdp_amp = f.fsdp_amp ? f.fsdp_amp : a->file_fsdp_amp;
	a->tool_file |= f.tool_file;
	a->file_ds_engine |= f.ds_engine;
	if (f.said)
		strbuf_addf(&a->files_said, "%s: %s\n", tool, f.said);
	free(f.said);
	if (!f.unknown)
		return;
	json_array_foreach(f.unknown, i, k)
		strbuf_addf(&keys, "%s'%s'", i ? ", " : "", json_string_value(k));
	log_warn("plan: %s: %s not known to the planner: ignored (--strict refuses %s)", path, strbuf_str(&keys),
		 i > 1 ? "them" : "it");
	strbuf_addf(&a->files_said, "%s: ignored, not known to the planner: %s\n", tool, strbuf_str(&keys));
	if (!a->ignored)
		a->ignored = json_object();
	json_object_set_new(a->ignored, tool, f.unknown);
	strbuf_release(&keys);
}

/* In inference with a KV cache (--context) and no prompt length given, the prompt is
 * taken to be the whole context: its prefill is the step's largest, and a plan that
 * silently kept the default 2048 tokens under a long context planned too little. */
static void prompt_settle(struct plan_args *a, setting_mask given)
{
	const struct setting *seq = setting_find("seq"), *ctx = setting_find("context");

	a->prompt = PROMPT_GIVEN;
	if (!a->t.inference)
		return;
	if (given & SETTING_BIT(seq))
		return;
	if ((given & SETTING_BIT(ctx)) && a->t.context > 0) {
		a->t.seq = a->t.context;
		a->prompt = PROMPT_CONTEXT;
	} else {
		a->prompt = PROMPT_DEFAULT;
	}
}

/* Lengths past the model's max_position_embeddings: a model was not trained for them
 * (and GPT-2's learned positions have no row for them); said, or refused with --strict. */
static void lengths_check(const struct plan_args *a, int strict, const char *solving)
{
	int64_t len = a->t.seq;
	const char *what = "seq";

	if (!a->m.max_length || (solving && !strcmp(solving, "seq")))
		return;
	if (a->t.inference && a->t.context >= len && !(solving && !strcmp(solving, "context"))) {
		len = a->t.context;
		what = "context";
	}
	if (len <= a->m.max_length)
		return;
	if (strict)
		die(EXIT_USAGE, "plan: %s %lld is past the model's max_position_embeddings (%lld): give --%s %lld or less, "
		    "or leave out --strict to plan it anyway", what, (long long)len, (long long)a->m.max_length, what,
		    (long long)a->m.max_length);
	log_warn("plan: %s %lld is past the model's max_position_embeddings (%lld): planned anyway (--strict refuses it)",
		 what, (long long)len, (long long)a->m.max_length);
}

/* The case file, the settings files, then the command line's settings over them. */
static void settings_load(struct plan_cli *c, struct plan_args *a, const char *config)
{
	setting_mask given = 0, cli = 0;

	for (size_t i = 0; i < c->npending; i++)
		cli |= SETTING_BIT(option_setting(c->pending[i].c));
	load_case(config, &a->m, &a->t, &given);
	if (c->train_file) {
		json_t *j = load_json(c->train_file);
		char *err = NULL;
		if (settings_from_json(j, &a->t, &given, &err))
			die(EXIT_USAGE, "plan: %s: %s", c->train_file, err);
		json_decref(j);
	}
	if (c->trainer_args)
		load_settings_file(c, a, &given, cli, "TrainingArguments", c->trainer_args, trainargs_read);
	if (c->axolotl)
		load_settings_file(c, a, &given, cli, "axolotl", c->axolotl, axolotl_read);
	for (size_t i = 0; i < c->npending; i++)
		apply_option(c, &a->t, &given, c->pending[i].c, c->pending[i].arg);
	if (a->tool_file) { /* what the tools do with the settings as they end up */
		struct file_read f = { .fsdp_amp = a->file_fsdp_amp, .tool_file = 1, .ds_engine = a->file_ds_engine };
		struct strbuf said = STRBUF_INIT;
		trainargs_settle(&a->t, cli, &f, &said);
		if (said.len)
			strbuf_addf(&a->files_said, "%s: %s\n", c->axolotl ? "axolotl" : "TrainingArguments", strbuf_str(&said));
		strbuf_release(&said);
	}
	if (c->calibrated) {
		a->t.context_bytes = calibrated_context(c->db, &a->probe);
		a->calibrated = 1;
	}
	prompt_settle(a, given);
	lengths_check(a, c->strict, c->solve_name);
}

static void gpu_default(struct plan_args *a)
{
	int rc;

	if (a->gpu_bytes)
		return;
	rc = nvml_gpu_total_bytes(0, &a->gpu_bytes);
	if (rc)
		die(EXIT_USAGE, "plan: no GPU found through NVML (%s): give --gpu NAME or --gpu-memory SIZE",
		    rc == -ENOENT ? "no driver or no GPU" : "NVML failed");
	a->gpu_name = "0 (NVML)";
}

/* --lock's and --solve's knobs: each one the planner has, the nearest named if not;
 * the one solved for one that applies to the plan's kind of run. */
static void knobs_check(struct plan_cli *c, struct plan_args *a)
{
	char why[512];
	const char *bad;
	int rc = knob_locks_check(&a->t, c->locks, c->nlocks, c->solve_name, &bad);

	if (rc == -ENOENT)
		knob_refused("--lock", bad, "");
	if (rc)
		die(EXIT_USAGE, "plan: %s is locked: it cannot be solved for", bad);
	if (c->solve_name && !knob_of(&a->t, c->solve_name))
		knob_refused("--solve", c->solve_name, " (a --buffer given)");
	if (c->solve_name && knob_applies(&a->t, c->solve_name, why, sizeof(why)))
		die(EXIT_USAGE, "plan: --solve %s: %s", c->solve_name, why);
	a->locks = c->locks;
	a->nlocks = c->nlocks;
}

static void print_plan_json(const struct plan_args *a, const struct plan_result *r, const struct hint *h)
{
	struct fit f = fit_of(a);
	enum fit_verdict v = fit_verdict(&f, r);
	json_t *r_json, *o = json_object();

	json_object_set_new(o, "format", json_string(PLAN_JSON_FORMAT));
	json_object_set_new(o, "assumed", assumed_json(a, &a->t, NULL));
	json_object_update(o, r_json = result_json(r));
	json_decref(r_json);
	json_object_set_new(o, "gpu_memory_bytes", json_integer((json_int_t)a->gpu_bytes));
	json_object_set_new(o, "margin_bytes", json_integer((json_int_t)margin_of(a)));
	json_object_set_new(o, "usable_bytes", json_integer((json_int_t)fit_usable_bytes(&f)));
	json_object_set_new(o, "limit_bytes", json_integer((json_int_t)fit_limit_bytes(&f)));
	json_object_set_new(o, "verdict", json_string(verdicts[v].name));
	/* fits: in any placement, on what CUDA gives, margin or not */
	json_object_set_new(o, "fits", json_boolean(r->need_high_bytes <= fit_usable_bytes(&f)));
	json_object_set_new(o, "fits_with_margin", json_boolean(v == FIT_FITS));
	json_object_set_new(o, "spare_bytes", json_integer((json_int_t)fit_limit_bytes(&f) -
							    (json_int_t)r->need_high_bytes));
	uint64_t extra = ddp_rebuild_extra_bytes(&a->t, r);
	json_object_set_new(o, "ddp_rebuild_extra_bytes", extra ? json_integer((json_int_t)extra) : json_null());
	if (v != FIT_FITS) {
		json_object_set_new(o, "hint", hint_json(h, 0));
		json_object_set_new(o, "hint_tried", hint_tried_json(h));
	}
	if (a->anchored)
		json_object_set_new(o, "anchor", anchor_json(a, r, v != FIT_FITS ? h : NULL, NULL));
	json_dumpf(o, stdout, JSON_INDENT(2));
	putchar('\n');
	json_decref(o);
}

/* The plan of a's settings, printed: its exit status. */
static int plan_print(const struct plan_args *a)
{
	struct plan_result r;
	struct hint h;
	struct fit f = fit_of(a);
	const char *why;

	if (plan_advise(&f, &a->m, &a->t, a->locks, a->nlocks, &r, &h, &why))
		die(EXIT_USAGE, "plan: %s", why);
	enum fit_verdict v = fit_verdict(&f, &r);
	if (a->json) {
		print_plan_json(a, &r, &h);
	} else {
		print_table(a, &r);
		if (v != FIT_FITS)
			print_hint(a, &h, NULL);
		if (a->anchored)
			print_anchor(a, &r, v != FIT_FITS ? &h : NULL, NULL, NULL);
	}
	return verdicts[v].exit;
}

int cmd_plan(int argc, char **argv)
{
	static struct plan_cli c; /* (its option names outlive getopt's use of them) */
	struct plan_args a = { .margin_pct = PLAN_MARGIN_PCT };

	memset(&c, 0, sizeof(c));
	train_settings_init(&a.t);
	if (parse_args(argc, argv, &c, &a)) {
		usage_print(stdout);
		return 0;
	}
	if (c.cmp) {
		if (argc - optind != 2)
			die(EXIT_USAGE, "plan: --compare wants two case files (try: headroom plan --compare a.json b.json)");
		return compare(&a, argv[optind], argv[optind + 1]);
	}
	if (argc - optind != 1)
		die(EXIT_USAGE, "plan: give one config.json (try: headroom plan --gpu h200 --batch 4 config.json)");
	settings_load(&c, &a, argv[optind]);
	gpu_default(&a);
	knobs_check(&c, &a);
	int rc = c.solve_name ? solve(&a, c.solve_name) : plan_print(&a);
	json_decref(a.ignored);
	strbuf_release(&a.files_said);
	return rc;
}
