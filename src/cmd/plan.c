/* headroom plan: predict a training step's peak GPU memory and solve for a knob that fits. */
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/cmd.h"
#include "plan/config.h"
#include "plan/gpus.h"
#include "plan/hint.h"
#include "plan/limits.h"
#include "plan/precision.h"
#include "plan/solve.h"
#include "plan/model.h"
#include "store/store.h"
#include "sys/nvml.h"
#include "util/log.h"
#include "util/parse.h"
#include "util/strbuf.h"
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
	"qwen3_moe, mixtral, gpt2), and say whether it fits the GPU; the first lines say what\n"
	"was assumed (precision and dtypes, optimizer, batch x seq, checkpointing, attention,\n"
	"use_cache). Every allocated byte at the peak is named (weights, gathered parameters,\n"
	"gradients, optimizer states and temporaries, activations, backward temporaries,\n"
	"logits + loss, KV cache, collective buffers, cuBLAS workspaces, buffers); allocator\n"
	"fragmentation is what is reserved beyond them. Near the GPU's size PyTorch gives back\n"
	"its unused cached memory and retries: it fits when the least memory the run completes\n"
	"in is within what CUDA gives a process (\"tight\" when less than the margin is left);\n"
	"the peak with plenty of memory and this GPU's peak are both said.\n"
	"When it does not fit with the margin (or no value solves), a hint names the one\n"
	"change that fits,\n"
	"cheapest first: --optimizer adamw-fused, --no-cache, --loss-chunk, --grad-ckpt, a\n"
	"smaller --batch, --lora-rank (locked knobs stay).\n"
	"CONFIG.json may also be a case file {\"model\": {...config...}, \"train\": {...settings...}}.\n"
	"\n"
	"Settings (or --train FILE with the same keys: precision, param_dtype, autocast,\n"
	"optimizer, fused, momentum, grad_ckpt, use_cache, batch, seq, loss_chunk, zero_stage,\n"
	"dp, ddp, reshard_after_forward, lora_rank, lora_targets, inference, context, logits,\n"
	"buffers, context_bytes, freeze, inputs_embeds, alloc_conf, steps):\n"
	"      --precision P            bf16 (the default: bf16 weights, gradients and AdamW\n"
	"                               states, no fp32 master copy), amp-bf16 (fp32 weights and\n"
	"                               states, bf16 autocast: HF Trainer's bf16=True), fp32, fp16\n"
	"      --dtype fp32|bf16|fp16   weights' dtype (default bf16)\n"
	"      --autocast               bf16 autocast around the forward pass (with --dtype fp32)\n"
	"      --optimizer adamw|adamw-fused|sgd|none   (default adamw, foreach)\n"
	"      --momentum F             SGD momentum, 0 to below 1 (keeps a buffer per parameter)\n"
	"      --grad-ckpt              gradient checkpointing\n"
	"      --no-cache               the model runs with use_cache=False (default: its keys\n"
	"                               and values are cached and held to the next step)\n"
	"      --batch N, --seq N       micro-batch and sequence length (default 1, 2048)\n"
	"      --loss-chunk N           tokens per lm_head + loss chunk (default: all at once)\n"
	"      --steps N                the run's training steps (default: a long run; the first\n"
	"                               8 are simulated, past which PyTorch's allocator was not\n"
	"                               seen to grow; its segments can still grow in the 5th)\n"
	"      --buffer NAME=COUNTxSIZE extra device buffers, e.g. queue=50x100MB (repeatable)\n"
	"      --zero STAGE --dp N      ZeRO-1/2/3 (3 = FSDP2 fully_shard) over N > 1 data-parallel\n"
	"                               ranks, per rank; --no-reshard: reshard_after_forward=False\n"
	"      --ddp --dp N             DDP over N > 1 ranks (a replica and gradient buckets a rank)\n"
	"      --freeze LIST            frozen parts, no gradient or optimizer state: embed,\n"
	"                               lm_head, layers:A-B (e.g. embed,lm_head)\n"
	"      --inputs-embeds          fed hidden states (batch x seq x hidden), no embedding lookup\n"
	"      --alloc-conf expandable_segments:True   PyTorch's expandable segments (5 simulated\n"
	"                               placements, the plan 2/5 of the way from the plain run's\n"
	"                               peak to the highest; their range printed)\n"
	"      --lora-rank R [--lora-targets q,k,v,o,gate,up,down|all]   LoRA (default q,k,v,o)\n"
	"      --inference --context N  inference with a KV cache of batch x N tokens\n"
	"      --logits all|last        inference: every position's logits (model(input_ids)) or\n"
	"                               the last one's (generate(), the default)\n"
	"      --context-bytes SIZE     CUDA context and workspaces (default 740M, H200/torch 2.11)\n"
	"      --calibrated [--db PATH] use what `headroom probe --torch` measured on GPU 0\n"
	"GPU:\n";
static const char usage_gpu[] =
	"      --gpu-memory SIZE        the GPU's memory, e.g. 80G\n"
	"      --margin SIZE|PCT        kept free, e.g. 2G or 5%\n"
	"                               (default 4%: the model's error bound, 3%, and 1 more)\n"
	"Output and solving:\n"
	"      --json                   JSON (format headroom-plan/2): device_peak_bytes (this\n"
	"                               GPU's), plentiful_peak_bytes, min_device_bytes (the\n"
	"                               least it runs in), usable_bytes, fits, fits_with_margin,\n"
	"                               spare_bytes, assumed, components (*_bytes)...\n";
static const char usage_tail[] =
	"      --lock KNOB              must stay as given (repeatable); --solve refuses it\n"
	"      --compare A B            which components moved between two case files\n"
	"  -h, --help                   show this help\n"
	"\n"
	"Every field and setting is range-checked where it is read; input past the planner's\n"
	"limits (1024 layers, 65536 items a buffer, 4096 loss chunks, a plan of 1 PiB...;\n"
	"docs/plan.md) is bad input. --solve answers the largest value that fits with the\n"
	"margin whose smaller neighbours (1, 2, 4... below) fit too, says so where the peak\n"
	"jumps about (a cliff), and shows what values a few steps either side need; when\n"
	"every value fits, its largest (loss_chunk's: batch x seq).\n"
	"\n"
	"Exit status: 0 fits (or solved), 1 does not fit (or no value fits), 2 bad input.\n";

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

/* An option's line of the usage: its description from column 31, its words wrapped
 * to lines of at most 90 columns as the rest of the usage is written. */
static void usage_option(struct strbuf *sb, const char *opt, const char *text)
{
	enum { DESC_COL = 31, WIDTH = 90 };
	size_t col = DESC_COL;
	const char *w = text;

	strbuf_addf(sb, "      %-*s", DESC_COL - 6, opt);
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

static void usage_print(FILE *f)
{
	struct strbuf sb = STRBUF_INIT, text = STRBUF_INIT;
	char *gpus = gpu_names(), *knobs = knob_names();

	strbuf_add(&sb, usage_head);
	strbuf_addf(&text, "%s, in any case or as nvidia-smi names them (h100, a100: the 80 GB cards) "
		    "(default: GPU 0 by NVML)", gpus);
	usage_option(&sb, "--gpu NAME", strbuf_str(&text));
	strbuf_release(&text);
	strbuf_add(&sb, usage_gpu);
	strbuf_addf(&text, "the largest value of %s (its count) that fits", knobs);
	usage_option(&sb, "--solve KNOB", strbuf_str(&text));
	strbuf_release(&text);
	strbuf_add(&sb, usage_tail);
	fputs(strbuf_str(&sb), f);
	strbuf_release(&sb);
	free(gpus);
	free(knobs);
}

struct plan_args {
	struct model_shape m;
	struct train_settings t;
	uint64_t gpu_bytes;
	const char *gpu_name;
	uint64_t margin_bytes;
	double margin_pct;
	int margin_in_bytes;      /* --margin SIZE (else a percentage of the GPU's memory) */
	int json;
	const char *const *locks; /* --lock's knobs: a hint changes none of them */
	size_t nlocks;
};

static json_t *load_json(const char *path)
{
	return json_file_load("plan", path);
}

/* A config.json, or a case file with "model" and "train". */
static void load_case(const char *path, struct model_shape *m, struct train_settings *t)
{
	json_t *j = load_json(path), *model = json_object_get(j, "model"), *train = json_object_get(j, "train");
	char *err = NULL;

	if (model_shape_from_json(model ? model : j, m, &err) ||
	    (train && train_settings_from_json(train, t, &err))) {
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
	return (struct fit){ .gpu_bytes = a->gpu_bytes, .margin_bytes = margin_of(a) };
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

static const char *optimizer_name(const struct train_settings *t)
{
	if (t->inference || t->opt == OPT_NONE)
		return "none";
	if (t->opt == OPT_SGD)
		return "sgd";
	return t->fused ? "adamw-fused" : "adamw";
}

/* The model keeps use_cache in training unless checkpointing turns it off. */
static int cache_on(const struct train_settings *t)
{
	return t->inference || (t->use_cache && !t->grad_ckpt);
}

/* Layers of m with a sliding window (0: none). */
static int64_t sliding_layers(const struct model_shape *m)
{
	int64_t n = 0;

	for (int64_t l = 0; m->sliding_window && l < m->layers; l++)
		n += (l + 1) % m->sliding_pattern != 0;
	return n;
}

/* What a plan assumed, as JSON: the setting solved for (solving, or NULL) is null. */
static json_t *assumed_json(const struct model_shape *m, const struct train_settings *t, const char *solving)
{
	struct precision_dtypes d;
	const char *prec = precision_name(t);
	json_t *o = json_object();

	precision_dtypes(t, &d);
	json_object_set_new(o, "precision", prec ? json_string(prec) : json_null());
	json_object_set_new(o, "weights_dtype", json_string(d.weights));
	json_object_set_new(o, "compute_dtype", json_string(d.compute));
	json_object_set_new(o, "master_weights_dtype", json_string(d.master_weights));
	json_object_set_new(o, "gradients_dtype", json_string(d.gradients));
	json_object_set_new(o, "optimizer_states_dtype", json_string(d.optimizer_states));
	json_object_set_new(o, "optimizer", json_string(optimizer_name(t)));
	if (!t->inference && t->opt == OPT_SGD)
		json_object_set_new(o, "momentum", json_real(t->momentum));
	json_object_set_new(o, "inference", json_boolean(t->inference));
	json_object_set_new(o, "batch", json_integer(t->batch));
	json_object_set_new(o, "seq", json_integer(t->seq));
	json_object_set_new(o, "steps", t->steps && !t->inference ? json_integer(t->steps) : json_null());
	if (t->inference)
		json_object_set_new(o, "context", json_integer(t->context > t->seq ? t->context : t->seq));
	json_object_set_new(o, "grad_ckpt", json_boolean(t->grad_ckpt && !t->inference));
	json_object_set_new(o, "attention", json_string("sdpa"));
	int64_t sliding = sliding_layers(m);
	json_object_set_new(o, "sliding_window", sliding ? json_integer(m->sliding_window) : json_null());
	json_object_set_new(o, "sliding_layers", json_integer(sliding));
	json_object_set_new(o, "use_cache", json_boolean(cache_on(t)));
	json_object_set_new(o, "loss_chunk", t->loss_chunk && !t->inference ? json_integer(t->loss_chunk) : json_null());
	json_object_set_new(o, "lora_rank", t->lora_rank && !t->inference ? json_integer(t->lora_rank) : json_null());
	json_object_set_new(o, "zero_stage", json_integer(t->zero_stage));
	json_object_set_new(o, "dp", json_integer(t->dp));
	json_object_set_new(o, "ddp", json_boolean(t->ddp));
	json_object_set_new(o, "reshard_after_forward",
			    t->zero_stage == 3 ? json_boolean(!t->keep_gathered) : json_null());
	json_t *fz = json_array();
	if (t->freeze_embed)
		json_array_append_new(fz, json_string("embed"));
	if (t->freeze_head)
		json_array_append_new(fz, json_string("lm_head"));
	if (t->freeze_last >= t->freeze_first)
		json_array_append_new(fz, json_sprintf("layers:%lld-%lld", (long long)t->freeze_first,
						       (long long)t->freeze_last));
	json_object_set_new(o, "freeze", fz);
	json_object_set_new(o, "inputs_embeds", json_boolean(t->inputs_embeds));
	json_object_set_new(o, "alloc_conf", json_string(t->expandable ? "expandable_segments:True"
								       : "expandable_segments:False"));
	if (t->inference)
		json_object_set_new(o, "logits", json_string(t->logits_all ? "all" : "last"));
	if (solving && json_object_get(o, solving))
		json_object_set_new(o, solving, json_null());
	return o;
}

/* A whole-number setting as the assumptions print it: "?" when it is solved for. */
static const char *setting_text(const char *name, int64_t v, const char *solving, char *buf, size_t n)
{
	if (solving && !strcmp(solving, name))
		return "?";
	snprintf(buf, n, "%lld", (long long)v);
	return buf;
}

/* LoRA's targets, "q,k,v,o", into buf. */
static const char *lora_targets_text(unsigned bits, char *buf, size_t n)
{
	static const char *const names[] = { "q", "k", "v", "o", "gate", "up", "down" };
	size_t len = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (bits & (1u << i) && len < n)
			len += (size_t)snprintf(buf + len, n - len, "%s%s", len ? "," : "", names[i]);
	return buf;
}

/* The plan's first lines: what it assumed (precision and each kind of tensor's dtype,
 * the optimizer, batch x seq, checkpointing, attention, use_cache), the first line
 * begun with label ("assumed"), the others indented under its text. */
static void print_assumed(const char *label, const struct model_shape *m, const struct train_settings *t,
			  const char *solving)
{
	struct precision_dtypes d;
	const char *prec = precision_name(t);
	char b[24], s[24], c[24], ind[24], tg[40];
	struct strbuf sb = STRBUF_INIT;

	precision_dtypes(t, &d);
	snprintf(ind, sizeof(ind), "\n%*s", (int)strlen(label) + 2, "");
	strbuf_addf(&sb, "%s: precision %s", label, prec ? prec : "(no preset)");
	if (prec && !strcmp(prec, "bf16") && !t->inference && !t->lora_rank)
		strbuf_add(&sb, " (HF Trainer's bf16=True is amp-bf16: fp32 weights)");
	strbuf_addf(&sb, "%sweights %s%s%s", ind, d.weights, t->lora_rank && !t->inference ? " (frozen)" : "",
		    t->autocast ? " (bf16 autocast)" : "");
	if (t->inference)
		strbuf_add(&sb, ", inference: no gradients or optimizer states");
	else
		strbuf_addf(&sb, ", master weights %s%s, gradients %s, optimizer states %s", d.master_weights,
			    strcmp(d.master_weights, "fp32") ? "" : t->lora_rank ? " (the adapters)" : " (the weights)",
			    d.gradients, d.optimizer_states);
	strbuf_add(&sb, ind);
	if (!t->inference) {
		strbuf_addf(&sb, "optimizer %s", optimizer_name(t));
		if (t->opt == OPT_ADAMW && !t->fused)
			strbuf_add(&sb, " (foreach)");
		else if (t->opt == OPT_SGD)
			strbuf_addf(&sb, " (momentum %g)", t->momentum);
		if (t->lora_rank)
			strbuf_addf(&sb, " on LoRA r%s adapters (%s)", setting_text("lora_rank", t->lora_rank, solving, c,
										   sizeof(c)),
				    lora_targets_text(t->lora_targets, tg, sizeof(tg)));
		strbuf_add(&sb, ", ");
	}
	strbuf_addf(&sb, "batch %s x seq %s", setting_text("batch", t->batch, solving, b, sizeof(b)),
		    setting_text("seq", t->seq, solving, s, sizeof(s)));
	if (t->inference)
		strbuf_addf(&sb, ", KV cache of %s tokens, %s",
			    setting_text("context", t->context > t->seq ? t->context : t->seq, solving, c, sizeof(c)),
			    t->logits_all ? "logits of every position (model(input_ids))"
					  : "logits of the last position (generate)");
	else
		strbuf_add(&sb, t->grad_ckpt ? ", gradient checkpointing" : ", no gradient checkpointing");
	if (t->loss_chunk && !t->inference)
		strbuf_addf(&sb, ", loss in chunks of %s tokens", setting_text("loss_chunk", t->loss_chunk, solving, c,
										 sizeof(c)));
	if (t->zero_stage == 3)
		strbuf_addf(&sb, ", ZeRO-3/FSDP over %lld ranks%s", (long long)t->dp,
			    t->keep_gathered ? " (no reshard after forward)" : "");
	else if (t->zero_stage)
		strbuf_addf(&sb, ", ZeRO-%d over %lld ranks", t->zero_stage, (long long)t->dp);
	else if (t->ddp)
		strbuf_addf(&sb, ", DDP over %lld ranks (per rank)", (long long)t->dp);
	if (t->freeze_embed || t->freeze_head || t->freeze_last >= t->freeze_first || t->inputs_embeds) {
		strbuf_add(&sb, ind);
		if (t->freeze_embed || t->freeze_head || t->freeze_last >= t->freeze_first) {
			strbuf_addf(&sb, "frozen (no gradient or optimizer state):%s%s", t->freeze_embed ? " embed" : "",
				    t->freeze_head ? " lm_head" : "");
			if (t->freeze_last >= t->freeze_first)
				strbuf_addf(&sb, " layers %lld-%lld", (long long)t->freeze_first, (long long)t->freeze_last);
			if (t->inputs_embeds)
				strbuf_add(&sb, "; ");
		}
		if (t->inputs_embeds)
			strbuf_add(&sb, "fed hidden states (inputs_embeds), no embedding lookup");
	}
	if (t->expandable) /* said only when on: the native allocator is PyTorch's default */
		strbuf_addf(&sb, "%sallocator: expandable segments (expandable_segments:True)", ind);
	strbuf_addf(&sb, "%sattention sdpa%s", ind,
		    strcmp(d.compute, "fp32") ? "" : " (its math kernel in fp32: it keeps the probabilities)");
	int64_t sliding = sliding_layers(m);
	if (sliding)
		strbuf_addf(&sb, ", a sliding window of %lld on %lld of %lld layers (%s)", (long long)m->sliding_window,
			    (long long)sliding, (long long)m->layers,
			    t->seq >= m->sliding_window ? "seq reaches it: a batch x seq x seq mask a layer"
							: "seq within it: no masks");
	strbuf_addf(&sb, ", use_cache %s\n",
		    t->inference ? "on (the KV cache)"
		    : cache_on(t) ? "on (keys and values held to the next step; --no-cache if off)"
		    : t->grad_ckpt ? "off (checkpointing turns it off)" : "off");
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

static void print_table(const struct plan_args *a, const struct plan_result *r)
{
	char b[32], c[32], d[32];

	print_assumed("assumed", &a->m, &a->t, NULL);
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
	uint64_t m = f.margin_bytes, usable = fit_usable_bytes(&f);
	int fits = fit_runs(&f, r);
	printf("least GPU memory it runs in: %s%s\n", size_format(r->min_device_bytes, b, sizeof(b)),
	       r->oom ? " (more than this GPU: it runs out of memory even with its cache given back)" : "");
	printf("GPU%s%s: %s (%s to a process), margin %s: %s", a->gpu_name ? " " : "", a->gpu_name ? a->gpu_name : "",
	       size_format(a->gpu_bytes, b, sizeof(b)), size_format(usable, c, sizeof(c)),
	       size_format(m, d, sizeof(d)), fits ? "fits" : "does NOT fit");
	if (!fits)
		printf(", %s short\n", size_format(r->min_device_bytes - usable, d, sizeof(d)));
	else if (fit_ok(&f, r))
		printf(", %s to spare\n", size_format(usable - r->min_device_bytes, d, sizeof(d)));
	else
		printf(", but tight: %s to spare, less than the margin\n",
		       size_format(usable - r->min_device_bytes, d, sizeof(d)));
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
		       r->min_device_bytes + extra <= usable ? "that fits too" : "that does NOT fit");
}

/* A hint's change as typed: "--grad-ckpt", "--batch 3". */
static void hint_change_text(enum hint_change c, int64_t value, char *buf, size_t n)
{
	if (hint_bool(c) < 0)
		snprintf(buf, n, "%s %lld", hint_flag(c), (long long)value);
	else
		snprintf(buf, n, "%s", hint_flag(c));
}

/* What a hint says, as JSON: null when no change fits; solving adds the knob's value. */
static json_t *hint_json(const struct hint *h, int solving)
{
	json_t *o, *setting;
	char change[48];

	if (!h->found)
		return json_null();
	o = json_object();
	setting = json_object();
	hint_change_text(h->change, h->value, change, sizeof(change));
	json_object_set_new(o, "change", json_string(change));
	json_object_set_new(setting, hint_key(h->change),
			    hint_bool(h->change) < 0 ? json_integer(h->value) : json_boolean(hint_bool(h->change)));
	json_object_set_new(o, "setting", setting);
	if (solving)
		json_object_set_new(o, "value", json_integer(h->solved));
	json_object_set_new(o, "device_peak_bytes", json_integer((json_int_t)h->plan.device_peak_bytes));
	return o;
}

/* The changes a hint tried, as a JSON array of flags. */
static json_t *hint_tried_json(const struct hint *h)
{
	json_t *a = json_array();
	char change[48];

	for (int c = 0; c < HINT_NCHANGES; c++)
		if (h->tried & (1u << c)) {
			hint_change_text(c, h->tried_value[c], change, sizeof(change));
			json_array_append_new(a, json_string(change));
		}
	return a;
}

/* The changes tried all together: what they gave, solving: the value; null when they
 * do not fit. */
static json_t *hint_together_json(const struct hint *h, int solving)
{
	json_t *o;

	if (!h->all_fit)
		return json_null();
	o = json_object();
	if (solving)
		json_object_set_new(o, "value", json_integer(h->all_solved));
	json_object_set_new(o, "device_peak_bytes", json_integer((json_int_t)h->all_plan.device_peak_bytes));
	return o;
}

/* The hint's line: the change and what it gives (knob: the value solved for); when no
 * change alone fits, what all of them together give. */
static void print_hint(const struct plan_args *a, const struct hint *h, const char *knob)
{
	char change[48], b[32], c[32];

	if (!h->found) {
		struct strbuf sb = STRBUF_INIT;
		for (int i = 0, n = 0; i < HINT_NCHANGES; i++)
			if (h->tried & (1u << i)) {
				hint_change_text(i, h->tried_value[i], change, sizeof(change));
				strbuf_addf(&sb, "%s%s", n++ ? ", " : "", change);
			}
		if (!h->tried)
			printf("hint: none of the changes the planner tries applies\n");
		else if (!h->all_fit)
			printf("hint: nothing the planner can change makes it fit, not even all of %s together\n",
			       strbuf_str(&sb));
		else if (knob)
			printf("hint: no single change makes it fit (%s); all of them together: %s = %lld, peak %s\n",
			       strbuf_str(&sb), knob, (long long)h->all_solved,
			       size_format(h->all_plan.device_peak_bytes, b, sizeof(b)));
		else
			printf("hint: no single change makes it fit (%s); all of them together: peak %s\n",
			       strbuf_str(&sb), size_format(h->all_plan.device_peak_bytes, b, sizeof(b)));
		strbuf_release(&sb);
		return;
	}
	hint_change_text(h->change, h->value, change, sizeof(change));
	if (knob)
		printf("hint: with %s, %s = %lld fits: peak %s\n", change, knob, (long long)h->solved,
		       size_format(h->plan.device_peak_bytes, b, sizeof(b)));
	else {
		struct fit f = fit_of(a);
		printf("hint: with %s it fits: peak %s, %s to spare\n", change,
		       size_format(h->plan.device_peak_bytes, b, sizeof(b)),
		       size_format(fit_usable_bytes(&f) - h->plan.min_device_bytes, c, sizeof(c)));
	}
}

/* The values around a solved answer, and a cliff below it, as JSON. */
static json_t *near_json(const struct solve_result *r)
{
	json_t *a = json_array();

	for (int i = 0; i < r->nnear; i++) {
		json_t *o = json_object();
		json_object_set_new(o, "value", json_integer(r->near[i].value));
		json_object_set_new(o, "min_device_bytes", r->near[i].fits < 0 ? json_null()
						: json_integer((json_int_t)r->near[i].min_device_bytes));
		json_object_set_new(o, "fits", r->near[i].fits < 0 ? json_false() : json_boolean(r->near[i].fits));
		json_array_append_new(a, o);
	}
	return a;
}

static void print_near(const char *name, const struct solve_result *r)
{
	char b[32];

	if (r->cliff_value)
		printf("the peak is not monotonic in %s here: %s = %lld does not fit though larger values do "
		       "(the allocator's placements); the answer is the largest below it whose smaller "
		       "neighbours fit\n", name, name, (long long)r->cliff_value);
	if (!r->nnear)
		return;
	printf("near it:");
	for (int i = 0; i < r->nnear; i++)
		printf("%s %lld needs %s%s", i ? "," : "", (long long)r->near[i].value,
		       r->near[i].fits < 0 ? "(past the limits)" : size_format(r->near[i].min_device_bytes, b, sizeof(b)),
		       r->near[i].fits > 0 ? "" : " (no)");
	putchar('\n');
}

static int solve(const struct plan_args *a, const char *name)
{
	struct fit f = fit_of(a);
	struct solve_result r;
	const char *why;
	int rc = solve_knob(&f, &a->m, &a->t, name, &r, &why);

	if (rc == -ENOENT) {
		char *knobs = knob_names();
		die(EXIT_USAGE, "plan: --solve wants %s (a --buffer given), not '%s'", knobs, name);
	}
	if (rc)
		die(EXIT_USAGE, "plan: %s", why);
	struct hint h = { 0 };
	if (!r.value) /* (-ENOENT cannot be: solve_knob took the knob) */
		hint_find(&f, &a->m, &a->t, name, a->locks, a->nlocks, &h);
	if (a->json) {
		json_t *o = json_object();
		json_object_set_new(o, "format", json_string(PLAN_JSON_FORMAT));
		json_object_set_new(o, "assumed", assumed_json(&a->m, &a->t, name));
		json_object_set_new(o, "knob", json_string(name));
		json_object_set_new(o, "value", r.value ? json_integer(r.value) : json_null());
		json_object_set_new(o, "plan", r.value ? result_json(&r.plan) : json_null());
		json_object_set_new(o, "next_value", r.largest ? json_null() : json_integer(r.next_value));
		json_object_set_new(o, "next_device_peak_bytes", r.largest || r.next_too_big ? json_null()
							: json_integer((json_int_t)r.next.device_peak_bytes));
		json_object_set_new(o, "next_min_device_bytes", r.largest || r.next_too_big ? json_null()
							: json_integer((json_int_t)r.next.min_device_bytes));
		json_object_set_new(o, "cliff_value", r.cliff_value ? json_integer(r.cliff_value) : json_null());
		json_object_set_new(o, "near", near_json(&r));
		json_object_set_new(o, "gpu_memory_bytes", json_integer((json_int_t)a->gpu_bytes));
		json_object_set_new(o, "margin_bytes", json_integer((json_int_t)f.margin_bytes));
		if (!r.value) {
			json_object_set_new(o, "hint", hint_json(&h, 1));
			json_object_set_new(o, "hint_tried", hint_tried_json(&h));
			json_object_set_new(o, "hint_together", hint_together_json(&h, 1));
		}
		json_dumpf(o, stdout, JSON_INDENT(2));
		putchar('\n');
		json_decref(o);
	} else {
		char b[32], c[32], d[32], e[32];
		print_assumed("assumed", &a->m, &a->t, name);
		if (!r.value) {
			printf("no %s fits: %s = %lld needs %s, the GPU has %s with a margin of %s\n", name, name,
			       (long long)r.next_value, size_format(r.next.min_device_bytes, b, sizeof(b)),
			       size_format(a->gpu_bytes, c, sizeof(c)), size_format(f.margin_bytes, d, sizeof(d)));
			print_hint(a, &h, name);
		} else {
			printf("%s = %lld fits: needs %s (peak %s) of %s (margin %s); ", name, (long long)r.value,
			       size_format(r.plan.min_device_bytes, b, sizeof(b)),
			       size_format(r.plan.device_peak_bytes, e, sizeof(e)), size_format(a->gpu_bytes, c, sizeof(c)),
			       size_format(f.margin_bytes, d, sizeof(d)));
			if (r.largest)
				printf("it is the largest %s (%s)\n", name, r.max_is);
			else if (r.next_too_big)
				printf("%lld is past the planner's limits (%s)\n", (long long)r.next_value, r.next_too_big);
			else
				printf("%lld would need %s\n", (long long)r.next_value,
				       size_format(r.next.min_device_bytes, e, sizeof(e)));
			print_near(name, &r);
		}
	}
	return r.value ? 0 : 1;
}

static int compare(struct plan_args *a, const char *pa, const char *pb)
{
	struct plan_args x = *a, y = *a;
	struct plan_result ra, rb;
	char s1[32], s2[32], s3[32];

	train_settings_init(&x.t);
	train_settings_init(&y.t);
	load_case(pa, &x.m, &x.t);
	load_case(pb, &y.m, &y.t);
	compute(&x, &x.t, &ra);
	compute(&y, &y.t, &rb);
	if (a->json) {
		json_t *o = json_object(), *ja = result_json(&ra), *jb = result_json(&rb);
		json_object_set_new(ja, "assumed", assumed_json(&x.m, &x.t, NULL));
		json_object_set_new(jb, "assumed", assumed_json(&y.m, &y.t, NULL));
		json_object_set_new(o, "format", json_string(PLAN_JSON_FORMAT));
		json_object_set_new(o, "a", ja);
		json_object_set_new(o, "b", jb);
		json_dumpf(o, stdout, JSON_INDENT(2));
		putchar('\n');
		json_decref(o);
		return 0;
	}
	print_assumed("A assumed", &x.m, &x.t, NULL);
	print_assumed("B assumed", &y.m, &y.t, NULL);
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
 * memory beyond its reserved memory (the context and the libraries' workspaces). */
static uint64_t calibrated_context(const char *db)
{
	struct nvml_gpu g;
	struct store *st = NULL;
	char *path = db ? xstrdup(db) : store_default_path(), *err = NULL, *key, *txt = NULL;
	json_t *j;
	json_int_t v;

	if (nvml_gpu_read(0, &g))
		die(EXIT_USAGE, "plan: --calibrated needs this machine's GPU 0 (NVML found none)");
	key = nvml_gpu_key(&g);
	if (store_open(path, &st, &err) || store_probe_get(st, key, &txt))
		die(EXIT_USAGE, "plan: nothing measured for \"%s\" in %s: run `headroom probe --torch` first", key, path);
	store_close(st);
	j = json_loads(txt, 0, NULL);
	v = json_integer_value(json_object_get(j, "torch_overhead_bytes"));
	json_decref(j);
	if (v <= 0 || (uint64_t)v > PLAN_MAX_ITEM_BYTES)
		die(EXIT_USAGE, "plan: the probe of \"%s\" has no PyTorch figure from 1 byte to 1 TiB: run "
		    "`headroom probe --torch`", key);
	free(txt);
	free(key);
	free(path);
	return (uint64_t)v;
}

static int64_t whole(const char *opt, const char *v, int64_t min, int64_t max)
{
	int64_t n;

	if (parse_int64(v, min, max, &n))
		die(EXIT_USAGE, "plan: %s wants a whole number from %lld to %lld, not '%s'", opt, (long long)min,
		    (long long)max, v);
	return n;
}

enum plan_opt { O_TRAIN = 256, O_PREC, O_DTYPE, O_AUTOCAST, O_OPT, O_MOM, O_CKPT, O_NOCACHE, O_BATCH, O_SEQ, O_CHUNK, O_BUF, O_ZERO,
       O_DP, O_LRANK, O_LTGT, O_INF, O_CTX, O_CTXB, O_GPU, O_GPUMEM, O_MARGIN, O_JSON, O_SOLVE, O_LOCK, O_CMP,
       O_CALIB, O_DB, O_FREEZE, O_EMBEDS, O_ALLOCCONF, O_LOGITS, O_DDP, O_NORESHARD, O_STEPS };

/* A setting from the command line, applied over what the files said. */
static void apply_setting(struct train_settings *t, int c, const char *arg)
{
	switch (c) {
	case O_PREC:
		if (precision_apply(t, arg))
			die(EXIT_USAGE, "plan: --precision wants bf16, amp-bf16 (fp32 weights, bf16 autocast), fp32 or fp16, "
			    "not '%s'", arg);
		break;
	case O_DTYPE:
		t->param_bytes = param_dtype_bytes(arg);
		if (!t->param_bytes)
			die(EXIT_USAGE, "plan: --dtype wants fp32, bf16 or fp16, not '%s'", arg);
		t->fp16 = !strcmp(arg, "fp16");
		break;
	case O_AUTOCAST: t->autocast = 1; break;
	case O_OPT:
		t->fused = !strcmp(arg, "adamw-fused");
		if (!strcmp(arg, "adamw") || t->fused)
			t->opt = OPT_ADAMW;
		else if (!strcmp(arg, "sgd"))
			t->opt = OPT_SGD;
		else if (!strcmp(arg, "none"))
			t->opt = OPT_NONE;
		else
			die(EXIT_USAGE, "plan: --optimizer wants adamw, adamw-fused, sgd or none, not '%s'", arg);
		break;
	case O_MOM:
		if (parse_double(arg, 0, nextafter(1.0, 0.0), &t->momentum))
			die(EXIT_USAGE, "plan: --momentum wants a number from 0 to below 1, not '%s'", arg);
		break;
	case O_CKPT: t->grad_ckpt = 1; break;
	case O_NOCACHE: t->use_cache = 0; break;
	case O_BATCH: t->batch = whole("--batch", arg, 1, PLAN_MAX_BATCH); break;
	case O_SEQ: t->seq = whole("--seq", arg, 1, PLAN_MAX_SEQ); break;
	case O_STEPS: t->steps = whole("--steps", arg, 1, PLAN_MAX_STEPS); break;
	case O_CHUNK: t->loss_chunk = whole("--loss-chunk", arg, 1, INT64_MAX); break;
	case O_BUF:
		if (t->nbuffers == PLAN_MAX_BUFFERS || buffer_spec_parse(arg, &t->buffers[t->nbuffers]))
			die(EXIT_USAGE, "plan: --buffer wants NAME=COUNTxSIZE such as queue=50x100MB (at most %d of them; "
			    "COUNT from 1 to %d, SIZE from 1 byte to 1 TiB), not '%s'", PLAN_MAX_BUFFERS, PLAN_MAX_BUFFER_COUNT,
			    arg);
		t->nbuffers++;
		break;
	case O_ZERO: t->zero_stage = (int)whole("--zero", arg, 0, 3); break;
	case O_DP: t->dp = whole("--dp", arg, 1, PLAN_MAX_DP); break;
	case O_LRANK: t->lora_rank = whole("--lora-rank", arg, 1, PLAN_MAX_LORA_RANK); break;
	case O_LTGT:
		if (lora_targets_parse(arg, &t->lora_targets))
			die(EXIT_USAGE, "plan: --lora-targets wants a list of q k v o gate up down (or all), not '%s'", arg);
		break;
	case O_INF: t->inference = 1; t->opt = OPT_NONE; break;
	case O_FREEZE:
		if (freeze_list_parse(arg, t))
			die(EXIT_USAGE, "plan: --freeze wants a list of embed, lm_head and layers:A-B (one range of layers, "
			    "from 0), such as embed,lm_head, not '%s'", arg);
		break;
	case O_EMBEDS: t->inputs_embeds = 1; break;
	case O_ALLOCCONF:
		if (alloc_conf_parse(arg, &t->expandable))
			die(EXIT_USAGE, "plan: --alloc-conf wants expandable_segments:True or expandable_segments:False (the "
			    "PYTORCH_CUDA_ALLOC_CONF option modelled), not '%s'", arg);
		break;
	case O_LOGITS:
		if (strcmp(arg, "all") && strcmp(arg, "last"))
			die(EXIT_USAGE, "plan: --logits wants all (every position's, as model(input_ids)) or last (as "
			    "generate()), not '%s'", arg);
		t->logits_all = !strcmp(arg, "all");
		break;
	case O_DDP: t->ddp = 1; break;
	case O_NORESHARD: t->keep_gathered = 1; break;
	case O_CTX: t->context = whole("--context", arg, 1, PLAN_MAX_SEQ); break;
	case O_CTXB:
		if (parse_size(arg, 1, PLAN_MAX_ITEM_BYTES, &t->context_bytes))
			die(EXIT_USAGE, "plan: --context-bytes wants a size from 1 byte to 1 TiB such as 740M, not '%s'", arg);
		break;
	}
}

int cmd_plan(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "train", required_argument, NULL, O_TRAIN },     { "precision", required_argument, NULL, O_PREC },
		{ "dtype", required_argument, NULL, O_DTYPE },
		{ "autocast", no_argument, NULL, O_AUTOCAST },     { "optimizer", required_argument, NULL, O_OPT },
		{ "momentum", required_argument, NULL, O_MOM },    { "grad-ckpt", no_argument, NULL, O_CKPT },
		{ "no-cache", no_argument, NULL, O_NOCACHE },
		{ "batch", required_argument, NULL, O_BATCH },     { "seq", required_argument, NULL, O_SEQ },
		{ "loss-chunk", required_argument, NULL, O_CHUNK }, { "buffer", required_argument, NULL, O_BUF },
		{ "zero", required_argument, NULL, O_ZERO },       { "dp", required_argument, NULL, O_DP },
		{ "lora-rank", required_argument, NULL, O_LRANK }, { "lora-targets", required_argument, NULL, O_LTGT },
		{ "inference", no_argument, NULL, O_INF },         { "context", required_argument, NULL, O_CTX },
		{ "context-bytes", required_argument, NULL, O_CTXB }, { "gpu", required_argument, NULL, O_GPU },
		{ "gpu-memory", required_argument, NULL, O_GPUMEM }, { "margin", required_argument, NULL, O_MARGIN },
		{ "json", no_argument, NULL, O_JSON },             { "solve", required_argument, NULL, O_SOLVE },
		{ "lock", required_argument, NULL, O_LOCK },       { "compare", no_argument, NULL, O_CMP },
		{ "calibrated", no_argument, NULL, O_CALIB },      { "db", required_argument, NULL, O_DB },
		{ "freeze", required_argument, NULL, O_FREEZE },   { "inputs-embeds", no_argument, NULL, O_EMBEDS },
		{ "alloc-conf", required_argument, NULL, O_ALLOCCONF }, { "logits", required_argument, NULL, O_LOGITS },
		{ "ddp", no_argument, NULL, O_DDP },               { "no-reshard", no_argument, NULL, O_NORESHARD },
		{ "steps", required_argument, NULL, O_STEPS },
		{ "help", no_argument, NULL, 'h' },                { NULL, 0, NULL, 0 },
	};
	struct { int c; const char *arg; } pending[64];
	size_t npending = 0;
	struct plan_args a = { .margin_pct = 4.0 };
	const char *train_file = NULL, *solve_name = NULL, *locks[16], *db = NULL;
	size_t nlocks = 0;
	int c, cmp = 0, calibrated = 0;

	train_settings_init(&a.t);
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case O_TRAIN: train_file = optarg; break;
		case O_PREC: case O_DTYPE: case O_AUTOCAST: case O_OPT: case O_MOM: case O_CKPT: case O_NOCACHE: case O_BATCH: case O_SEQ:
		case O_CHUNK: case O_BUF: case O_ZERO: case O_DP: case O_LRANK: case O_LTGT: case O_INF: case O_CTX:
		case O_CTXB: case O_FREEZE: case O_EMBEDS: case O_ALLOCCONF: case O_LOGITS: case O_DDP: case O_NORESHARD:
		case O_STEPS:
			/* applied after the files, in order: the command line wins */
			if (npending == sizeof(pending) / sizeof(pending[0]))
				die(EXIT_USAGE, "plan: too many settings on the command line");
			pending[npending].c = c;
			pending[npending++].arg = optarg;
			break;
		case O_GPU: {
			const struct gpu_spec *g = gpus_find(optarg);
			if (!g) {
				char *names = gpu_names();
				die(EXIT_USAGE, "plan: unknown --gpu '%s' (%s; or --gpu-memory SIZE)", optarg, names);
			}
			a.gpu_bytes = g->memory_bytes;
			a.gpu_name = g->name;
			break;
		}
		case O_GPUMEM:
			if (parse_size(optarg, 1, PLAN_MAX_BYTES, &a.gpu_bytes))
				die(EXIT_USAGE, "plan: --gpu-memory wants a size from 1 byte to 1 PiB such as 80G, not '%s'", optarg);
			break;
		case O_MARGIN: {
			size_t n = strlen(optarg);
			if (n && optarg[n - 1] == '%') {
				if (parse_pct(optarg, 0, nextafter(100.0, 0.0), &a.margin_pct))
					die(EXIT_USAGE, "plan: --margin wants a percentage from 0%% to below 100%%, not '%s'", optarg);
				a.margin_in_bytes = 0;
			} else if (parse_size(optarg, 0, PLAN_MAX_BYTES, &a.margin_bytes)) {
				die(EXIT_USAGE, "plan: --margin wants a size up to 1 PiB such as 2G or a percentage such as 5%%, "
				    "not '%s'", optarg);
			} else {
				a.margin_in_bytes = 1;
			}
			break;
		}
		case O_JSON: a.json = 1; break;
		case O_SOLVE: solve_name = optarg; break;
		case O_LOCK:
			if (nlocks == 16)
				die(EXIT_USAGE, "plan: at most 16 --lock");
			locks[nlocks++] = optarg;
			break;
		case O_CMP: cmp = 1; break;
		case O_CALIB: calibrated = 1; break;
		case O_DB:
			if (!*optarg)
				die(EXIT_USAGE, "plan: --db wants a path, not ''");
			db = optarg;
			break;
		case 'h': usage_print(stdout); return 0;
		default: opt_refused("plan", opts, argv);
		}
	}
	if (cmp) {
		if (argc - optind != 2)
			die(EXIT_USAGE, "plan: --compare wants two case files (try: headroom plan --compare a.json b.json)");
		return compare(&a, argv[optind], argv[optind + 1]);
	}
	if (argc - optind != 1)
		die(EXIT_USAGE, "plan: give one config.json (try: headroom plan --gpu h200 --batch 4 config.json)");
	load_case(argv[optind], &a.m, &a.t);
	if (train_file) {
		json_t *j = load_json(train_file);
		char *err = NULL;
		if (train_settings_from_json(j, &a.t, &err))
			die(EXIT_USAGE, "plan: %s: %s", train_file, err);
		json_decref(j);
	}
	for (size_t i = 0; i < npending; i++)
		apply_setting(&a.t, pending[i].c, pending[i].arg);
	if (calibrated)
		a.t.context_bytes = calibrated_context(db);
	if (!a.gpu_bytes) {
		int rc = nvml_gpu_total_bytes(0, &a.gpu_bytes);
		if (rc)
			die(EXIT_USAGE, "plan: no GPU found through NVML (%s): give --gpu NAME or --gpu-memory SIZE",
			    rc == -ENOENT ? "no driver or no GPU" : "NVML failed");
		a.gpu_name = "0 (NVML)";
	}
	const char *bad;
	int rc = knob_locks_check(&a.t, locks, nlocks, solve_name, &bad);
	if (rc == -ENOENT) {
		char *knobs = knob_names();
		die(EXIT_USAGE, "plan: --lock wants %s, not '%s'", knobs, bad);
	}
	if (rc)
		die(EXIT_USAGE, "plan: %s is locked: it cannot be solved for", bad);
	a.locks = locks;
	a.nlocks = nlocks;
	if (solve_name)
		return solve(&a, solve_name);

	struct plan_result r;
	compute(&a, &a.t, &r);
	struct fit f = fit_of(&a);
	int fits = fit_runs(&f, &r), roomy = fit_ok(&f, &r);
	struct hint h = { 0 };
	if (!roomy)
		hint_find(&f, &a.m, &a.t, NULL, a.locks, a.nlocks, &h);
	if (a.json) {
		json_t *r_json;
		json_t *o = json_object();
		json_object_set_new(o, "format", json_string(PLAN_JSON_FORMAT));
		json_object_set_new(o, "assumed", assumed_json(&a.m, &a.t, NULL));
		json_object_update(o, r_json = result_json(&r));
		json_decref(r_json);
		json_object_set_new(o, "gpu_memory_bytes", json_integer((json_int_t)a.gpu_bytes));
		json_object_set_new(o, "margin_bytes", json_integer((json_int_t)margin_of(&a)));
		json_object_set_new(o, "usable_bytes", json_integer((json_int_t)fit_usable_bytes(&f)));
		json_object_set_new(o, "fits", json_boolean(fits));
		json_object_set_new(o, "fits_with_margin", json_boolean(roomy));
		json_object_set_new(o, "spare_bytes", json_integer((json_int_t)fit_usable_bytes(&f) -
								    (json_int_t)r.min_device_bytes));
		uint64_t extra = ddp_rebuild_extra_bytes(&a.t, &r);
		json_object_set_new(o, "ddp_rebuild_extra_bytes", extra ? json_integer((json_int_t)extra) : json_null());
		if (!roomy) {
			json_object_set_new(o, "hint", hint_json(&h, 0));
			json_object_set_new(o, "hint_tried", hint_tried_json(&h));
			json_object_set_new(o, "hint_together", hint_together_json(&h, 0));
		}
		json_dumpf(o, stdout, JSON_INDENT(2));
		putchar('\n');
		json_decref(o);
	} else {
		print_table(&a, &r);
		if (!roomy)
			print_hint(&a, &h, NULL);
	}
	return fits ? 0 : 1;
}
