/* Fitting a plan to a GPU and solving for a knob (plan/solve), on llama-1b (the CLI
 * tests' model): the values `headroom plan --solve` gives for it. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>
#include <dirent.h>
#include <jansson.h>
#include <stdio.h>

#include "plan/config.h"
#include "plan/gpus.h"
#include "plan/limits.h"
#include "plan/model.h"
#include "plan/quant.h"
#include "plan/solve.h"
#include "plan_test.h"

#define GiB (1024ULL * 1024 * 1024)
#define MiB (1024ULL * 1024)

/* A GPU of the table with a margin of 4 % of its memory (the figures below were pinned
 * with it). */

/* Llama-3.2-1B in a loop that holds its output into the next step: the figures below
 * were pinned with it (the answers' shapes, not the loop, are what these tests check). */
static void pinned_llama1b(struct model_shape *m, struct train_settings *t)
{
	llama1b(m, t);
	t->keep_outputs = 1;
}

static struct fit fit_gpu(const char *name)
{
	uint64_t gpu = gpus_find(name)->memory_bytes;
	return (struct fit){ .gpu_bytes = gpu, .margin_bytes = (uint64_t)((double)gpu * 4.0 / 100.0) };
}

static void test_knobs(void **state)
{
	static const char *const names[] = { "batch", "seq", "loss_chunk", "lora_rank", "context", "buffer:NAME" };
	struct train_settings t;
	(void)state;

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		assert_string_equal(knob_name(i), names[i]);
	assert_null(knob_name(sizeof(names) / sizeof(names[0])));
	train_settings_init(&t);
	assert_ptr_equal(knob_of(&t, "batch"), &t.batch);
	assert_ptr_equal(knob_of(&t, "seq"), &t.seq);
	assert_ptr_equal(knob_of(&t, "loss_chunk"), &t.loss_chunk);
	assert_ptr_equal(knob_of(&t, "lora_rank"), &t.lora_rank);
	assert_ptr_equal(knob_of(&t, "context"), &t.context);
	assert_null(knob_of(&t, "buffer:q"));
	assert_int_equal(buffer_spec_parse("q=2x1G", &t.buffers[0]), 0);
	t.nbuffers = 1;
	assert_ptr_equal(knob_of(&t, "buffer:q"), &t.buffers[0].count);
	assert_null(knob_of(&t, "buffer:"));
	assert_null(knob_of(&t, "buffer:NAME"));
	assert_null(knob_of(&t, "dp"));
	assert_null(knob_of(&t, "Batch"));
}

/* Each knob applies to the kinds of run it changes: solved in another it is refused. */
static void test_knob_applies(void **state)
{
	static const struct {
		const char *knob;
		int full, lora, inference; /* applies */
	} rows[] = {
		{ "batch", 1, 1, 1 },     { "seq", 1, 1, 1 },       { "loss_chunk", 1, 1, 0 },
		{ "lora_rank", 0, 1, 0 }, { "context", 0, 0, 1 },   { "buffer:q", 1, 1, 1 },
	};
	struct train_settings t;
	char why[512];
	(void)state;

	train_settings_init(&t);
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		t.inference = 0;
		t.lora_rank = 0;
		assert_int_equal(knob_applies(&t, rows[i].knob, why, sizeof(why)), rows[i].full ? 0 : -EINVAL);
		t.lora_rank = 16;
		assert_int_equal(knob_applies(&t, rows[i].knob, why, sizeof(why)), rows[i].lora ? 0 : -EINVAL);
		t.inference = 1;
		assert_int_equal(knob_applies(&t, rows[i].knob, why, sizeof(why)), rows[i].inference ? 0 : -EINVAL);
	}
	t.inference = 0;
	t.lora_rank = 0;
	assert_int_equal(knob_applies(&t, "context", why, sizeof(why)), -EINVAL);
	assert_string_equal(why, "context applies to inference (it sets the tokens of the KV cache), not to this "
				 "plan's full fine-tuning; to solve it, plan inference (--inference)");
	t.inference = 1;
	assert_int_equal(knob_applies(&t, "loss_chunk", why, sizeof(why)), -EINVAL);
	assert_string_equal(why, "loss_chunk applies to full fine-tuning or LoRA training (it sets the tokens of "
				 "each chunk of the training loss), not to this plan's inference; to solve it, plan "
				 "training (without --inference)");
	/* cut short, not overrun */
	assert_int_equal(knob_applies(&t, "loss_chunk", why, 8), -EINVAL);
	assert_string_equal(why, "loss_ch");
}

static void test_locks(void **state)
{
	const char *const locks[] = { "batch", "seq" }, *const bad[] = { "batch", "nosuch" };
	struct train_settings t;
	const char *which;
	(void)state;

	train_settings_init(&t);
	assert_int_equal(knob_locks_check(&t, locks, 2, NULL, &which), 0);
	assert_null(which);
	assert_int_equal(knob_locks_check(&t, locks, 2, "loss_chunk", &which), 0);
	assert_int_equal(knob_locks_check(&t, locks, 2, "seq", &which), -EPERM);
	assert_string_equal(which, "seq");
	assert_int_equal(knob_locks_check(&t, bad, 2, NULL, &which), -ENOENT);
	assert_string_equal(which, "nosuch");
	assert_int_equal(knob_locks_check(&t, locks, 0, "batch", &which), 0);
}

/* Without a GPU the plan is plan_compute's; with one, the verdict is its interval's
 * against the GPU less the margin. */
static void test_fit(void **state)
{
	struct model_shape m;
	struct train_settings t;
	struct plan_result a, b;
	struct fit none = { 0 }, h100 = fit_gpu("h100-80gb");
	const char *why;
	(void)state;

	pinned_llama1b(&m, &t);
	t.seq = 4096;
	t.batch = 1;
	assert_int_equal(fit_plan(&none, &m, &t, &a, &why), 0);
	assert_int_equal(plan_compute(&m, &t, &b, &why), 0);
	assert_memory_equal(a.bytes, b.bytes, sizeof(a.bytes));
	assert_true(a.need_low_bytes <= a.need_high_bytes && a.need_low_bytes <= a.device_peak_bytes);
	assert_int_equal(fit_plan(&h100, &m, &t, &a, &why), 0);
	assert_int_equal(fit_verdict(&h100, &a), FIT_FITS);
	t.batch = 16;
	assert_int_equal(fit_plan(&h100, &m, &t, &a, &why), 0);
	assert_int_equal(fit_verdict(&h100, &a), FIT_NO);
	assert_true(a.oom && !fit_ok(&h100, &a) && !fit_runs(&h100, &a));
	t.zero_stage = 5;
	assert_int_equal(fit_plan(&h100, &m, &t, &a, &why), -EINVAL);
	assert_string_equal(why, "zero stage must be 0..3 and dp at least 1");
}

/* The three verdicts by where the limit falls in the interval; a margin smaller than
 * what CUDA keeps back does not let a run past what CUDA gives. */
static void test_fit_verdicts(void **state)
{
	struct plan_result r = { .need_low_bytes = 30 * GiB, .need_high_bytes = 40 * GiB };
	struct fit exact = { .gpu_bytes = 40 * GiB }, roomy = { .gpu_bytes = 41 * GiB }, small = { .gpu_bytes = 29 * GiB };
	(void)state;

	assert_int_equal(fit_verdict(&exact, &r), FIT_AT_RISK);
	assert_true(fit_runs(&exact, &r) && !fit_ok(&exact, &r));
	assert_int_equal(fit_verdict(&roomy, &r), FIT_FITS);
	roomy.margin_bytes = GiB;
	assert_int_equal(fit_verdict(&roomy, &r), FIT_FITS);
	roomy.margin_bytes = GiB + 1;
	assert_int_equal(fit_verdict(&roomy, &r), FIT_AT_RISK);
	assert_int_equal(fit_verdict(&small, &r), FIT_NO);
	assert_false(fit_runs(&small, &r));
}

/* Solving the batch: what surely fits is at most what may, each with its verdict, and
 * the value after what may fit does not. */
static void test_solve_batch(void **state)
{
	struct model_shape m;
	struct train_settings t;
	struct solve_result r;
	struct fit h100 = fit_gpu("h100-80gb");
	const char *why;
	(void)state;

	pinned_llama1b(&m, &t);
	t.seq = 4096;
	assert_int_equal(solve_knob(&h100, &m, &t, "batch", &r, &why), 0);
	assert_true(r.value >= 1 && r.value <= r.may_value);
	assert_int_equal(fit_verdict(&h100, &r.plan), FIT_FITS);
	assert_int_not_equal(fit_verdict(&h100, &r.may_plan), FIT_NO);
	assert_int_equal(r.next_value, r.may_value + 1);
	assert_int_equal(fit_verdict(&h100, &r.next), FIT_NO);
	assert_int_equal(t.batch, 1); /* the caller's settings stay as they were */
}

/* Nothing fits a T4: both 0, and what batch 1 would need at the least. */
static void test_solve_none(void **state)
{
	struct model_shape m;
	struct train_settings t;
	struct solve_result r;
	struct fit t4 = fit_gpu("t4");
	const char *why;
	(void)state;

	pinned_llama1b(&m, &t);
	t.seq = 4096;
	assert_int_equal(solve_knob(&t4, &m, &t, "batch", &r, &why), 0);
	assert_int_equal(r.value, 0);
	assert_int_equal(r.may_value, 0);
	assert_int_equal(r.plan.device_peak_bytes, 0);
	assert_int_equal(r.next_value, 1);
	assert_true(r.next.oom && r.next.need_low_bytes > fit_usable_bytes(&t4));
}

/* A buffer's count: each 1 GiB item moves both bounds by 1 GiB, so the two answers are
 * the counts that keep need_high and need_low within the limit. */
static void test_solve_buffer(void **state)
{
	struct model_shape m;
	struct train_settings t;
	struct solve_result r;
	struct fit f = { .gpu_bytes = 80 * GiB, .margin_bytes = 2 * GiB };
	const char *why;
	(void)state;

	pinned_llama1b(&m, &t);
	assert_int_equal(buffer_spec_parse("q=1x1G", &t.buffers[0]), 0);
	t.nbuffers = 1;
	assert_int_equal(solve_knob(&f, &m, &t, "buffer:q", &r, &why), 0);
	assert_true(r.value > 0 && r.value <= r.may_value);
	assert_true(r.plan.need_high_bytes <= fit_limit_bytes(&f) && r.plan.need_high_bytes + GiB > fit_limit_bytes(&f));
	assert_true(r.may_plan.need_low_bytes <= fit_limit_bytes(&f) && r.next.need_low_bytes > fit_limit_bytes(&f));
	assert_int_equal(solve_knob(&f, &m, &t, "buffer:other", &r, &why), -ENOENT);
	assert_int_equal(solve_knob(&f, &m, &t, "nosuch", &r, &why), -ENOENT);
	t.dp = 0;
	assert_int_equal(solve_knob(&f, &m, &t, "batch", &r, &why), -EINVAL);
	assert_string_equal(why, "zero stage must be 0..3 and dp at least 1");
}

/* A knob whose every value fits stops at its largest and says so (issue 12: --solve
 * loss_chunk answered its search cap, 1073741823): loss_chunk's is batch x seq, the
 * loss in one chunk. */
static void test_solve_largest(void **state)
{
	struct model_shape m;
	struct train_settings t;
	struct solve_result r;
	struct fit h200 = fit_gpu("h200");
	const char *why;
	int64_t min, max;
	const char *max_is;
	(void)state;

	pinned_llama1b(&m, &t);
	t.batch = 2;
	t.seq = 1024;
	assert_int_equal(knob_range(&t, "loss_chunk", &min, &max, &max_is), 0);
	assert_int_equal(min, 1);
	assert_int_equal(max, 2048);
	assert_string_equal(max_is, "batch x seq: the loss in one chunk");
	assert_int_equal(solve_knob(&h200, &m, &t, "loss_chunk", &r, &why), 0);
	assert_int_equal(r.value, 2048);
	assert_true(r.largest);
	assert_int_equal(r.next_value, 0);
	assert_int_equal(r.next.device_peak_bytes, 0);
	assert_true(r.plan.device_peak_bytes > 0 && fit_ok(&h200, &r.plan));
	/* more tokens than PLAN_MAX_LOSS_CHUNKS: the least chunk keeps them to 4096 chunks */
	t.batch = 8;
	t.seq = 4097;
	assert_int_equal(knob_range(&t, "loss_chunk", &min, &max, &max_is), 0);
	assert_int_equal(min, 9);
	assert_int_equal(max, 8 * 4097);
	assert_int_equal(knob_range(&t, "batch", &min, &max, &max_is), 0);
	assert_int_equal(min, 1);
	assert_int_equal(max, 1048576);
	assert_string_equal(max_is, "the planner's limit");
	assert_int_equal(knob_range(&t, "nosuch", &min, &max, &max_is), -ENOENT);
}

/* A tiny buffer's count: every count up to the planner's limit fits, and the search
 * stops there (issue 12: it ran out of memory, exit 125). */
static void test_solve_tiny_buffer(void **state)
{
	struct model_shape m;
	struct train_settings t;
	struct solve_result r;
	struct fit f = { .gpu_bytes = 80 * GiB, .margin_bytes = 2 * GiB };
	const char *why;
	(void)state;

	pinned_llama1b(&m, &t);
	assert_int_equal(buffer_spec_parse("q=1x1B", &t.buffers[0]), 0);
	t.nbuffers = 1;
	assert_int_equal(solve_knob(&f, &m, &t, "buffer:q", &r, &why), 0);
	assert_int_equal(r.value, 65536);
	assert_true(r.largest);
	assert_string_equal(r.max_is, "the planner's limit");
}

/* Past the planner's limits a value does not fit, and the answer says why; when even
 * the least value is too large to plan, that is an error (bad input), not "none fits". */
static void test_solve_too_big(void **state)
{
	struct model_shape m;
	struct train_settings t;
	struct solve_result r;
	struct fit pib = { .gpu_bytes = PLAN_MAX_BYTES, .margin_bytes = 0 };
	const char *why;
	(void)state;

	pinned_llama1b(&m, &t);
	t.seq = 1 << 20;
	assert_int_equal(solve_knob(&pib, &m, &t, "batch", &r, &why), 0);
	assert_true(r.value >= 1 && !r.largest);
	assert_non_null(r.next_too_big);
	assert_non_null(strstr(r.next_too_big, "the plan is too large"));
	assert_int_equal(r.next_value, r.value + 1);
	assert_int_equal(r.next.device_peak_bytes, 0);
	assert_true(r.plan.device_peak_bytes <= PLAN_MAX_BYTES);
	m.vocab = PLAN_MAX_VOCAB;
	m.hidden = PLAN_MAX_WIDTH;
	m.heads = m.kv_heads = 1;
	m.head_dim = 64;
	assert_int_equal(solve_knob(&pib, &m, &t, "batch", &r, &why), -E2BIG);
	assert_non_null(strstr(why, "the weights and optimizer states"));
}

/* Issue 44's run: Llama-3.1-8B's shape, full fine-tune with checkpointing, 4 steps, on an
 * H100, solving seq with the default margin and with none. Each answer is where its need
 * crosses the limit (the value fits, the next does not), and the search finds both in
 * fewer plans than one bisection over the knob's range would take, with the answers'
 * own plans: the needs are near straight lines in seq. */
static void test_solve_few_plans(void **state)
{
	struct model_shape m;
	struct train_settings t;
	struct solve_result r;
	struct plan_result q;
	struct fit f = fit_gpu("h100-80gb");
	const char *why;
	(void)state;

	shape_of("{\"model_type\": \"llama\", \"hidden_size\": 4096, \"num_hidden_layers\": 32,"
		 " \"num_attention_heads\": 32, \"num_key_value_heads\": 8, \"intermediate_size\": 14336,"
		 " \"vocab_size\": 128256, \"max_position_embeddings\": 131072, \"tie_word_embeddings\": false}",
		 &m);
	train_settings_init(&t);
	t.grad_ckpt = 1;
	t.steps = 4;
	f.max_length = 131072;
	for (int margin = 0; margin < 2; margin++, f.margin_bytes = 0) {
		uint64_t limit = fit_limit_bytes(&f);
		assert_int_equal(solve_knob(&f, &m, &t, "seq", &r, &why), 0);
		printf("   margin %llu: surely %lld, may %lld, %d plans\n", (unsigned long long)f.margin_bytes,
		       (long long)r.value, (long long)r.may_value, r.plans);
		assert_true(r.may_value > 0 && r.value <= r.may_value && !r.may_largest);
		assert_true(r.may_plan.need_low_bytes <= limit && r.next.need_low_bytes > limit);
		if (r.value) {
			assert_true(r.plan.need_high_bytes <= limit);
			t.seq = r.value + 1;
			assert_int_equal(fit_plan(&f, &m, &t, &q, &why), 0);
			assert_true(q.need_high_bytes > limit);
		}
		/* log2 of the range (131072) plans for a bisection of each bound, 3 for the
		 * answers' (one search narrows both where the bounds run straight; where the
		 * lower one is flat, as here, it halves) */
		assert_true(r.plans <= 2 * 17 + 3);
	}
}

/* Monotone by construction: over each knob's sweep need_low and need_high never fall
 * and the verdict only moves fits -> at risk -> does not fit; the context moved by
 * 128 MiB either way, or a 64 MiB buffer added, never turns a fit into a does-not-fit.
 * Over Llama-3.2-1B, full (AdamW and 8-bit AdamW) and LoRA, and a MoE family. */
static void sweep(const struct model_shape *m, struct train_settings t, const char *knob, const int64_t *vs,
		  size_t n, const struct fit *f)
{
	uint64_t lo = 0, hi = 0;
	enum fit_verdict was = FIT_FITS;
	int64_t *k = knob_of(&t, knob);
	const char *why;

	assert_non_null(k);
	for (size_t i = 0; i < n; i++) {
		struct plan_result r;
		*k = vs[i];
		assert_int_equal(fit_plan(f, m, &t, &r, &why), 0);
		enum fit_verdict v = fit_verdict(f, &r);
		if (r.need_low_bytes < lo || r.need_high_bytes < hi || v < was)
			fail_msg("%s = %lld: need %llu..%llu after %llu..%llu, verdict %d after %d", knob,
				 (long long)vs[i], (unsigned long long)r.need_low_bytes,
				 (unsigned long long)r.need_high_bytes, (unsigned long long)lo, (unsigned long long)hi,
				 v, was);
		lo = r.need_low_bytes, hi = r.need_high_bytes, was = v;
		/* a little more or less context, or a small buffer, never a fit into a no */
		struct train_settings u = t;
		uint64_t ctx = plan_context_bytes(&t);
		for (int d = -1; d <= 1 && v == FIT_FITS; d += 2) {
			struct plan_result q;
			u.context_bytes = d < 0 ? ctx - 128 * MiB : ctx + 128 * MiB;
			assert_int_equal(fit_plan(f, m, &u, &q, &why), 0);
			assert_int_not_equal(fit_verdict(f, &q), FIT_NO);
		}
	}
}

static void test_monotone(void **state)
{
	struct model_shape m, moe;
	struct train_settings t;
	struct fit f = { .gpu_bytes = 24 * GiB };
	static const int64_t seqs[] = { 128, 512, 1000, 1024, 1536, 2048, 3000, 4096, 6144, 8192 };
	static const int64_t batches[] = { 1, 2, 3, 4, 6, 8 };
	static const int64_t chunks[] = { 256, 512, 1000, 1024, 2048, 4096 };
	static const int64_t ranks[] = { 4, 8, 16, 64, 256 };
	static const int64_t counts[] = { 1, 2, 8, 30, 31, 64 };
	(void)state;

	pinned_llama1b(&m, &t);
	t.seq = 1024;
	sweep(&m, t, "seq", seqs, sizeof(seqs) / sizeof(seqs[0]), &f);
	sweep(&m, t, "batch", batches, sizeof(batches) / sizeof(batches[0]), &f);
	t.batch = 4;
	sweep(&m, t, "loss_chunk", chunks, sizeof(chunks) / sizeof(chunks[0]), &f);
	t.batch = 1;
	t.loss = LOSS_LIGER; /* its chunk follows the tokens */
	sweep(&m, t, "seq", seqs, sizeof(seqs) / sizeof(seqs[0]), &f);
	t.loss = LOSS_PLAIN;
	assert_int_equal(buffer_spec_parse("q=1x64M", &t.buffers[0]), 0);
	t.nbuffers = 1;
	sweep(&m, t, "buffer:q", counts, sizeof(counts) / sizeof(counts[0]), &f);
	t.nbuffers = 0;
	t.lora_rank = 8;
	sweep(&m, t, "lora_rank", ranks, sizeof(ranks) / sizeof(ranks[0]), &f);
	sweep(&m, t, "seq", seqs, sizeof(seqs) / sizeof(seqs[0]), &f);
	t.lora_rank = 0; /* 8-bit AdamW's blockwise states (plan/optimizer.h) */
	t.opt = OPT_ADAMW_8BIT;
	sweep(&m, t, "batch", batches, sizeof(batches) / sizeof(batches[0]), &f);
	t.opt = OPT_ADAMW;
	shape_of("{\"model_type\": \"qwen3_moe\", \"hidden_size\": 1024, \"intermediate_size\": 3072,"
		 " \"moe_intermediate_size\": 768, \"num_hidden_layers\": 8, \"num_attention_heads\": 16,"
		 " \"num_key_value_heads\": 4, \"head_dim\": 64, \"num_experts\": 32, \"num_experts_per_tok\": 4,"
		 " \"vocab_size\": 151936}", &moe);
	train_settings_init(&t);
	f.gpu_bytes = 16 * GiB;
	sweep(&moe, t, "seq", seqs, sizeof(seqs) / sizeof(seqs[0]), &f);
	sweep(&moe, t, "batch", batches, sizeof(batches) / sizeof(batches[0]), &f);
}

#ifndef FIXTURES
#define FIXTURES "tests/fixtures"
#endif

/* One case of each family (model_type, full or LoRA) of the measured fixtures: its shape
 * and settings (three steps: the bounds are the long run's from the third) into the
 * arrays; returns how many, at most max. */
static size_t family_cases(struct model_shape *ms, struct train_settings *ts, size_t max)
{
	char seen[64][48];
	size_t n = 0;
	DIR *d = opendir(FIXTURES "/gpu-train");
	struct dirent *e;

	assert_non_null(d);
	while ((e = readdir(d)) && n < max) {
		char path[512];
		json_t *root, *c;
		size_t i;

		if (!strstr(e->d_name, ".json"))
			continue;
		snprintf(path, sizeof(path), "%s/gpu-train/%s", FIXTURES, e->d_name);
		root = json_load_file(path, 0, NULL);
		assert_non_null(root);
		json_array_foreach(json_object_get(root, "cases"), i, c) {
			struct train_settings t;
			char key[48], *msg = NULL;
			size_t k;

			train_settings_init(&t);
			if (n == max || model_shape_from_json(json_object_get(c, "model"), &ms[n], &msg) ||
			    train_settings_from_json(json_object_get(c, "train"), &t, &msg) || t.inference || t.dp > 1) {
				free(msg);
				continue;
			}
			snprintf(key, sizeof(key), "%s%s", ms[n].type, t.lora_rank ? "/lora" : "");
			for (k = 0; k < n && strcmp(seen[k], key); k++)
				;
			if (k < n)
				continue;
			memcpy(seen[n], key, sizeof(key));
			t.steps = 3;
			ts[n++] = t;
		}
		json_decref(root);
	}
	closedir(d);
	return n;
}

/* The same property over every family the fixtures measured: seq and batch swept around
 * each one's measured shape, on a card its own need_high passes (the verdict moves). */
static void test_monotone_families(void **state)
{
	static struct model_shape ms[64];
	static struct train_settings ts[64];
	size_t n = family_cases(ms, ts, 64);
	(void)state;

	printf("   %zu families\n", n);
	assert_true(n >= 20);
	for (size_t i = 0; i < n; i++) {
		struct train_settings t = ts[i];
		struct plan_result r;
		const char *why;
		int64_t s0 = t.seq, seqs[6], batches[] = { 1, 2, 3, 4 };

		t.batch = 1;
		assert_int_equal(plan_compute(&ms[i], &t, &r, &why), 0);
		struct fit f = { .gpu_bytes = (r.need_low_bytes + r.need_high_bytes) / 2 };
		for (int j = 0; j < 6; j++)
			seqs[j] = s0 * (j + 1) / 4 > 64 ? s0 * (j + 1) / 4 : 64;
		printf("   %s%s seq %lld\n", ms[i].type, t.lora_rank ? " (LoRA)" : "", (long long)s0);
		sweep(&ms[i], t, "seq", seqs, 6, &f);
		t.seq = s0 / 2 > 64 ? s0 / 2 : 64;
		sweep(&ms[i], t, "batch", batches, 4, &f);
	}
}

/* Quantized bases over every family the fixtures measured (gpt2's Conv1D layers aside):
 * the weights shrink with the bits a weight is stored in (bf16, int8, NF4, NF4 with its
 * scales double-quantized), need_low never grows with them, and QLoRA's (NF4, the other
 * weights fp32 as prepare_model_for_kbit_training leaves them) is monotone in seq. */
static void test_quant_families(void **state)
{
	static struct model_shape ms[64];
	static struct train_settings ts[64];
	size_t n = family_cases(ms, ts, 64), tried = 0;
	(void)state;

	for (size_t i = 0; i < n; i++) {
		struct train_settings t = ts[i];
		struct plan_result r;
		const char *why;
		uint64_t w_prev = UINT64_MAX, low_prev = UINT64_MAX;
		const struct { int quant, dq; } kinds[] = { { QUANT_NONE, 0 }, { QUANT_INT8, 0 }, { QUANT_NF4, 0 },
							    { QUANT_NF4, 1 } };

		if (!strcmp(ms[i].type, "gpt2"))
			continue;
		t.lora_rank = 16, t.kbit_prepare = 0, t.zero_stage = 0, t.dp = 1, t.ddp = 0;
		t.freeze_embed = t.freeze_head = 0, t.freeze_first = 0, t.freeze_last = -1;
		for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
			t.quant = kinds[k].quant, t.double_quant = kinds[k].dq;
			assert_int_equal(plan_compute(&ms[i], &t, &r, &why), 0);
			assert_true(r.bytes[C_WEIGHTS] < w_prev);
			assert_true(r.need_low_bytes <= low_prev);
			w_prev = r.bytes[C_WEIGHTS], low_prev = r.need_low_bytes;
		}
		t.kbit_prepare = 1;
		assert_int_equal(plan_compute(&ms[i], &t, &r, &why), 0);
		struct fit f = { .gpu_bytes = (r.need_low_bytes + r.need_high_bytes) / 2 };
		int64_t s0 = t.seq, seqs[4];
		for (int j = 0; j < 4; j++)
			seqs[j] = s0 * (j + 1) / 2 > 64 ? s0 * (j + 1) / 2 : 64;
		sweep(&ms[i], t, "seq", seqs, 4, &f);
		tried++;
	}
	printf("   %zu families quantized\n", tried);
	assert_true(tried >= 20);
}

/* ZeRO-2 over every family the fixtures measured: its gradients partitioned as the
 * backward makes them, it never needs more than ZeRO-1 beyond the group of gradients
 * reduced at a time, and where the gradients are part of ZeRO-1's peak it needs less. */
static void test_zero2_families(void **state)
{
	static struct model_shape ms[64];
	static struct train_settings ts[64];
	size_t n = family_cases(ms, ts, 64), fewer = 0;
	(void)state;

	for (size_t i = 0; i < n; i++) {
		struct train_settings t = ts[i];
		struct plan_result r1, r2;
		const char *why;

		t.dp = 4, t.ddp = 0, t.keep_gathered = 0, t.zero_stage = 1;
		assert_int_equal(plan_compute(&ms[i], &t, &r1, &why), 0);
		t.zero_stage = 2;
		assert_int_equal(plan_compute(&ms[i], &t, &r2, &why), 0);
		printf("   %-14s%s ZeRO-1 %6.2f GiB, ZeRO-2 %6.2f GiB allocated, need_low %6.2f / %6.2f, weights %6.2f\n",
		       ms[i].type, t.lora_rank ? " (LoRA)" : "", r1.allocated_peak_bytes / 1073741824.0,
		       r2.allocated_peak_bytes / 1073741824.0, r1.need_low_bytes / 1073741824.0,
		       r2.need_low_bytes / 1073741824.0, r2.bytes[C_WEIGHTS] / 1073741824.0);
		fflush(stdout);
		/* at most a layer's gradients (and lm_head's) whole beside their copy in the
		 * reduction's bucket, past ZeRO-1's */
		uint64_t group = r2.bytes[C_WEIGHTS] / (uint64_t)ms[i].layers +
				 (uint64_t)(ms[i].vocab * ms[i].hidden * t.param_bytes);
		assert_true(r2.need_low_bytes <= r1.need_low_bytes + group);
		/* a short sequence: the gradients and states are the peak, partitioned less */
		t.seq = 128, t.zero_stage = 1;
		assert_int_equal(plan_compute(&ms[i], &t, &r1, &why), 0);
		t.zero_stage = 2;
		assert_int_equal(plan_compute(&ms[i], &t, &r2, &why), 0);
		fewer += r2.allocated_peak_bytes < r1.allocated_peak_bytes;
	}
	/* where gradients are part of the peak, the partitions shrink it */
	printf("   %zu of %zu with less at seq 128\n", fewer, n);
	assert_true(fewer >= n / 2);
}

/* DeepSpeed's and FSDP's configurations over every family the fixtures measured (full
 * fine-tunes): fp32 master weights add exactly the trained weights' fp32 copy and fp32
 * states to the optimizer's bytes; offloading the optimizer never needs more and leaves
 * no states on the GPU; FSDP2's MixedPrecisionPolicy over fp32 shards never needs more
 * than the same shards under autocast, and offloading its shards never more than that. */
static void test_ds_fsdp_families(void **state)
{
	static struct model_shape ms[64];
	static struct train_settings ts[64];
	size_t n = family_cases(ms, ts, 64), tried = 0;
	(void)state;

	for (size_t i = 0; i < n; i++) {
		struct train_settings t = ts[i];
		struct plan_result r0, r1, r2;
		const char *why;

		if (t.lora_rank || t.freeze_embed || t.freeze_head || t.freeze_last >= t.freeze_first)
			continue;
		t.dp = 4, t.ddp = 0, t.keep_gathered = 0, t.zero_stage = 1, t.param_bytes = 2, t.autocast = 0;
		t.opt = OPT_ADAMW, t.fused = 0;
		assert_int_equal(plan_compute(&ms[i], &t, &r0, &why), 0);
		t.master_weights = 1;
		assert_int_equal(plan_compute(&ms[i], &t, &r1, &why), 0);
		/* the fp32 copy (4 bytes a weight) is there from the start; with fp32 states
		 * beside it the step needs more than bf16 AdamW's */
		uint64_t per = r0.trainable_params / (uint64_t)t.dp;
		if (r1.bytes[C_OPT_STATES] < per * 4 - per / 100 || r1.allocated_peak_bytes <= r0.allocated_peak_bytes)
			fail_msg("%s: masters %llu bytes of states, peak %llu over %llu", ms[i].type,
				 (unsigned long long)r1.bytes[C_OPT_STATES], (unsigned long long)r1.allocated_peak_bytes,
				 (unsigned long long)r0.allocated_peak_bytes);
		assert_true(r1.need_low_bytes >= r0.need_low_bytes);
		t.offload_optimizer = 1;
		assert_int_equal(plan_compute(&ms[i], &t, &r2, &why), 0);
		assert_int_equal(r2.bytes[C_OPT_STATES], 0);
		assert_true(r2.need_low_bytes <= r1.need_low_bytes);
		/* DeepSpeed's buckets never need less; at stage 3 the gradients' flat partitions
		 * are there throughout */
		t.offload_optimizer = 0, t.zero_stage = 2;
		assert_int_equal(plan_compute(&ms[i], &t, &r1, &why), 0);
		t.reduce_bucket = 500000000, t.overlap_comm = 1;
		assert_int_equal(plan_compute(&ms[i], &t, &r2, &why), 0);
		assert_true(r2.need_low_bytes >= r1.need_low_bytes);
		t.zero_stage = 3, t.reduce_bucket = -1;
		assert_int_equal(plan_compute(&ms[i], &t, &r2, &why), 0);
		assert_true(r2.bytes[C_GRADS] >= per * 2 - per / 100);
		t.reduce_bucket = 0, t.overlap_comm = 0;
		/* FSDP2 over fp32 shards: autocast, then the policy, then the shards offloaded */
		t.master_weights = 0, t.offload_optimizer = 0, t.zero_stage = 3, t.param_bytes = 4, t.autocast = 1;
		assert_int_equal(plan_compute(&ms[i], &t, &r0, &why), 0);
		t.mp_param_bytes = 2, t.mp_reduce_bytes = 4;
		assert_int_equal(plan_compute(&ms[i], &t, &r1, &why), 0);
		t.offload_optimizer = t.offload_params = 1;
		assert_int_equal(plan_compute(&ms[i], &t, &r2, &why), 0);
		printf("   %-14s FSDP2 amp %6.2f, policy %6.2f, offloaded %6.2f GiB need_low\n", ms[i].type,
		       r0.need_low_bytes / 1073741824.0, r1.need_low_bytes / 1073741824.0,
		       r2.need_low_bytes / 1073741824.0);
		assert_true(r1.need_low_bytes <= r0.need_low_bytes);
		assert_true(r2.need_low_bytes <= r1.need_low_bytes);
		if (r2.bytes[C_WEIGHTS] >= r1.bytes[C_WEIGHTS] / 8)
			fail_msg("%s h%lld v%lld l%lld b%lld s%lld: weights %llu offloaded, %llu not", ms[i].type, (long long)ms[i].hidden, (long long)ms[i].vocab, (long long)ms[i].layers, (long long)t.batch, (long long)t.seq, (unsigned long long)r2.bytes[C_WEIGHTS], (unsigned long long)r1.bytes[C_WEIGHTS]);
		tried++;
	}
	assert_true(tried >= 20);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ds_fsdp_families),
		cmocka_unit_test(test_knobs),      cmocka_unit_test(test_knob_applies), cmocka_unit_test(test_locks),      cmocka_unit_test(test_fit),
		cmocka_unit_test(test_fit_verdicts), cmocka_unit_test(test_monotone), cmocka_unit_test(test_monotone_families),
		cmocka_unit_test(test_quant_families), cmocka_unit_test(test_zero2_families),
		cmocka_unit_test(test_solve_batch), cmocka_unit_test(test_solve_none), cmocka_unit_test(test_solve_buffer),
		cmocka_unit_test(test_solve_largest), cmocka_unit_test(test_solve_tiny_buffer),
		cmocka_unit_test(test_solve_too_big), cmocka_unit_test(test_solve_few_plans),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
