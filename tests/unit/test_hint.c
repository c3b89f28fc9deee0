/* The hint (plan/hint): the first change, cheapest first, that makes a plan fit, on
 * llama-1b (the CLI tests' model); each answer checked by planning it again. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "plan/advise.h"
#include "plan/config.h"
#include "plan/hint.h"
#include "plan/model.h"
#include "plan/solve.h"
#include "plan_test.h"

#define MiB (1024ULL * 1024)

/* t fits f: its plan's device peak, or 0 when it does not fit. */
static uint64_t fitting_peak(const struct fit *f, const struct model_shape *m, const struct train_settings *t)
{
	struct plan_result r;
	const char *why;

	assert_int_equal(fit_plan(f, m, t, &r, &why), 0);
	return fit_ok(f, &r) ? r.device_peak_bytes : 0;
}

/* Foreach AdamW's temporaries tip a small step over: fused AdamW, the first change; at
 * risk only, expandable segments first (they cost nothing and leave holes no pinning). */
static void test_fused_first(void **state)
{
	struct model_shape m;
	struct train_settings t;
	struct fit f = { .gpu_bytes = 12800 * MiB };
	struct hint h;
	(void)state;

	llama1b(&m, &t);
	t.seq = 512;
	assert_int_equal(fitting_peak(&f, &m, &t), 0);
	assert_int_equal(hint_find(&f, &m, &t, NULL, NULL, 0, &h), 0);
	assert_true(h.found);
	assert_int_equal(h.changes, 1u << HINT_EXPANDABLE);
	/* (a hint's candidates simulate the plain placement only: their verdict's) */
	t.expandable = t.one_placement = 1;
	assert_int_equal(fitting_peak(&f, &m, &t), h.plan.device_peak_bytes);
	t.expandable = t.one_placement = 0;
	/* a card its live set passes: no placement helps, fewer temporaries do */
	f.gpu_bytes = 12500 * MiB;
	assert_int_equal(fitting_peak(&f, &m, &t), 0);
	assert_int_equal(hint_find(&f, &m, &t, NULL, NULL, 0, &h), 0);
	assert_true(h.found);
	assert_int_equal(h.changes, 1u << HINT_FUSED);
	char text[64];
	assert_string_equal(hint_flag_text(&h, HINT_FUSED, 0, text, sizeof(text)), "--optimizer adamw-fused");
	assert_string_equal(hint_key(HINT_FUSED), "optimizer");
	assert_string_equal(hint_value(HINT_FUSED), "adamw-fused");
	assert_string_equal(hint_flag_text(&h, HINT_NO_CACHE, 0, text, sizeof(text)), "--no-use-cache");
	assert_string_equal(hint_flag_text(&h, HINT_BATCH, 3, text, sizeof(text)), "--batch 3");
	/* what it says it gives is what the plan with the change gives */
	t.fused = 1;
	assert_int_equal(fitting_peak(&f, &m, &t), h.plan.device_peak_bytes);
	t.fused = 0;
	/* solving the batch, of which none fit: fused AdamW, and the batch it gives */
	struct solve_result sr;
	const char *why;
	assert_int_equal(solve_knob(&f, &m, &t, "batch", &sr, &why), 0);
	assert_int_equal(sr.value, 0);
	assert_int_equal(hint_find(&f, &m, &t, "batch", NULL, 0, &h), 0);
	assert_true(h.found);
	assert_int_equal(h.changes, 1u << HINT_FUSED);
	t.fused = 1;
	assert_int_equal(solve_knob(&f, &m, &t, "batch", &sr, &why), 0);
	assert_true(sr.value >= 1);
	assert_int_equal(h.solved, sr.value);
	assert_int_equal(h.plan.device_peak_bytes, sr.plan.device_peak_bytes);
	assert_int_equal(hint_find(&f, &m, &t, "nosuch", NULL, 0, &h), -ENOENT);
}

/* A locked knob, or the knob solved for, is never the change; what is already set is
 * not tried; the largest smaller batch is found. */
static void test_locks_and_batch(void **state)
{
	static const char *const lock_chunk[] = { "loss_chunk" };
	static const char *const lock_all[] = { "loss_chunk", "batch", "lora_rank" };
	struct model_shape m;
	struct train_settings t;
	struct fit f = { .gpu_bytes = 20500 * MiB };
	struct hint h;
	(void)state;

	llama1b(&m, &t);
	t.batch = 2;
	t.fused = 1;
	t.use_cache = 0;
	assert_int_equal(hint_find(&f, &m, &t, NULL, NULL, 0, &h), 0);
	assert_true(h.found);
	assert_int_equal(h.changes, 1u << HINT_LOSS_CHUNK);
	assert_int_equal(h.value[HINT_LOSS_CHUNK], HINT_LOSS_CHUNK_TOKENS);
	assert_false(h.tried & (1u << HINT_FUSED));
	assert_false(h.tried & (1u << HINT_NO_CACHE));
	assert_int_equal(hint_find(&f, &m, &t, NULL, lock_chunk, 1, &h), 0);
	assert_true(h.found);
	assert_int_equal(h.changes, 1u << HINT_GRAD_CKPT);
	assert_false(h.tried & (1u << HINT_LOSS_CHUNK));

	/* batch 16 with checkpointing on 40 GiB: the largest batch that fits */
	f.gpu_bytes = 40 * 1024 * MiB;
	t.batch = 16;
	t.grad_ckpt = 1;
	assert_int_equal(hint_find(&f, &m, &t, NULL, lock_chunk, 1, &h), 0);
	assert_true(h.found);
	assert_int_equal(h.changes, 1u << HINT_BATCH);
	assert_true(h.value[HINT_BATCH] > 1 && h.value[HINT_BATCH] < 16);
	t.batch = h.value[HINT_BATCH];
	assert_int_equal(fitting_peak(&f, &m, &t), h.plan.device_peak_bytes);
	t.batch = h.value[HINT_BATCH] + 1;
	assert_int_equal(fitting_peak(&f, &m, &t), 0);
	t.batch = 16;
	/* nothing left to change but the allocator, which does not bring the live set under */
	assert_int_equal(hint_find(&f, &m, &t, NULL, lock_all, 3, &h), 0);
	assert_false(h.found);
	assert_int_equal(h.tried, 1u << HINT_EXPANDABLE);
	t.expandable = 1;
	assert_int_equal(hint_find(&f, &m, &t, NULL, lock_all, 3, &h), 0);
	assert_int_equal(h.tried, 0);
}

/* When not even all the changes together fit, none is found, and each was tried. */
static void test_nothing_fits(void **state)
{
	struct model_shape m;
	struct train_settings t;
	struct fit f = { .gpu_bytes = 3072 * MiB };
	struct hint h;
	(void)state;

	llama1b(&m, &t);
	t.batch = 16;
	assert_int_equal(hint_find(&f, &m, &t, NULL, NULL, 0, &h), 0);
	assert_false(h.found);
	/* (no buffer to shrink) */
	assert_int_equal(h.tried, ((1u << HINT_NCHANGES) - 1) & ~(1u << HINT_BUFFER));
	assert_int_equal(h.tried_value[HINT_BATCH], 1);
	assert_int_equal(h.tried_value[HINT_LORA], HINT_LORA_RANK);
	/* inference: the allocator, the batch, a buffer's count and a 4-bit model apply */
	t.inference = 1;
	t.opt = OPT_NONE;
	assert_int_equal(hint_find(&f, &m, &t, NULL, NULL, 0, &h), 0);
	assert_int_equal(h.tried, 1u << HINT_EXPANDABLE | 1u << HINT_BATCH | 1u << HINT_QUANT);
}

/* A buffer the script keeps, its live set past the card: the largest count that fits,
 * said as the flag a user types; locked, it is not tried. */
static void test_buffer_count(void **state)
{
	static const char *const lock_queue[] = { "buffer:queue", "loss_chunk" };
	struct model_shape m;
	struct train_settings t;
	struct fit f = { .gpu_bytes = 20 * 1024 * MiB };
	struct hint h;
	char text[64];
	(void)state;

	llama1b(&m, &t);
	t.seq = 512;
	t.fused = 1;
	assert_int_equal(buffer_spec_parse("queue=100x100MB", &t.buffers[0]), 0);
	t.nbuffers = 1;
	assert_int_equal(fitting_peak(&f, &m, &t), 0);
	assert_int_equal(hint_find(&f, &m, &t, NULL, NULL, 0, &h), 0);
	assert_true(h.found);
	assert_int_equal(h.changes, 1u << HINT_BUFFER);
	int64_t n = h.value[HINT_BUFFER];
	assert_true(n > 1 && n < 100);
	snprintf(text, sizeof(text), "--buffer queue=%lldx100MB", (long long)n);
	char got[64];
	assert_string_equal(hint_flag_text(&h, HINT_BUFFER, n, got, sizeof(got)), text);
	t.buffers[0].count = n;
	assert_int_equal(fitting_peak(&f, &m, &t), h.plan.device_peak_bytes);
	t.buffers[0].count = n + 1;
	assert_int_equal(fitting_peak(&f, &m, &t), 0);
	t.buffers[0].count = 100;
	assert_int_equal(hint_find(&f, &m, &t, NULL, lock_queue, 2, &h), 0);
	assert_false(h.tried & (1u << HINT_BUFFER));
}

/* Llama-3.1-8B's published shape */
static void llama8b(struct model_shape *m, struct train_settings *t)
{
	shape_of("{\"model_type\": \"llama\", \"hidden_size\": 4096, \"intermediate_size\": 14336,"
		 " \"num_hidden_layers\": 32, \"num_attention_heads\": 32, \"num_key_value_heads\": 8,"
		 " \"vocab_size\": 128256, \"rope_theta\": 500000.0, \"max_position_embeddings\": 131072,"
		 " \"torch_dtype\": \"bfloat16\"}", m);
	train_settings_init(t);
}

/* A full fine-tune of an 8B model at batch 2 on an 80 GB card: no change alone fits, but
 * fused AdamW with checkpointing does (or a cheaper pair): the hint keeps the kind of
 * run, never LoRA (issue 30). */
static void test_kind_kept_before_lora(void **state)
{
	struct model_shape m;
	struct train_settings t, s;
	struct fit f = { .gpu_bytes = 81559 * MiB };
	struct hint h;
	(void)state;

	llama8b(&m, &t);
	t.batch = 2;
	t.keep_outputs = 1; /* a loop that holds its output: no change alone is then enough */
	f.margin_bytes = f.gpu_bytes / 25;
	assert_int_equal(fitting_peak(&f, &m, &t), 0);
	s = t;
	s.fused = 1;
	s.grad_ckpt = 1;
	assert_true(fitting_peak(&f, &m, &s) > 0);
	assert_int_equal(hint_find(&f, &m, &t, NULL, NULL, 0, &h), 0);
	assert_true(h.found);
	assert_false(h.changes & (1u << HINT_LORA));
	assert_true(__builtin_popcount(h.changes) >= 2);
	/* what it says is what planning it gives */
	s = t;
	s.expandable = !!(h.changes & (1u << HINT_EXPANDABLE));
	s.fused = !!(h.changes & (1u << HINT_FUSED));
	s.loss_chunk = h.changes & (1u << HINT_LOSS_CHUNK) ? h.value[HINT_LOSS_CHUNK] : 0;
	s.grad_ckpt = !!(h.changes & (1u << HINT_GRAD_CKPT));
	s.use_cache = !(h.changes & (1u << HINT_NO_CACHE));
	if (h.changes & (1u << HINT_BATCH))
		s.batch = h.value[HINT_BATCH];
	s.one_placement = 1;
	assert_int_equal(fitting_peak(&f, &m, &s), h.plan.device_peak_bytes);
	/* with every kind-keeping change locked or made, LoRA is what is left */
	static const char *const locks[] = { "loss_chunk", "batch" };
	t.batch = 1;
	t.seq = 8192;
	t.fused = 1;
	t.grad_ckpt = 1;
	t.expandable = 1;
	f.gpu_bytes = 40 * 1024 * MiB;
	f.margin_bytes = 0;
	assert_int_equal(hint_find(&f, &m, &t, NULL, locks, 2, &h), 0);
	assert_true(h.found);
	assert_int_equal(h.changes, 1u << HINT_LORA);
}

static void count_past(void *ctx)
{
	++*(int *)ctx;
}

/* The plan with its hint, side by side, says what the plan then the hint say in turn;
 * the plain run tells once that its live segments passed the card, and only when they
 * did. */
static void test_advise_as_in_turn(void **state)
{
	struct model_shape m;
	struct train_settings t;
	struct fit f = { .gpu_bytes = 14336 * MiB };
	struct plan_result r, r_turn;
	struct hint h, h_turn;
	const char *why;
	int told = 0;
	(void)state;

	llama1b(&m, &t);
	for (int64_t seq = 64; seq <= 16384; seq *= 4) {
		t.seq = seq;
		assert_int_equal(plan_advise(&f, &m, &t, NULL, 0, &r, &h, &why), 0);
		assert_int_equal(fit_plan(&f, &m, &t, &r_turn, &why), 0);
		memset(&h_turn, 0, sizeof(h_turn));
		if (!fit_ok(&f, &r_turn))
			assert_int_equal(hint_find(&f, &m, &t, NULL, NULL, 0, &h_turn), 0);
		assert_memory_equal(&r, &r_turn, sizeof(r));
		assert_int_equal(h.found, h_turn.found);
		assert_int_equal(h.changes, h_turn.changes);
		assert_memory_equal(h.value, h_turn.value, sizeof(h.value));
		assert_int_equal(h.plan.device_peak_bytes, h_turn.plan.device_peak_bytes);
	}
	/* some of them fit, some not */
	assert_true(r.oom);
	t.seq = 64;
	assert_int_equal(plan_advise(&f, &m, &t, NULL, 0, &r, &h, &why), 0);
	assert_true(fit_ok(&f, &r) && !h.tried);
	t.seq = 16384;
	t.past = count_past;
	t.past_ctx = &told;
	assert_int_equal(fit_plan(&f, &m, &t, &r, &why), 0);
	assert_int_equal(told, 1);
	t.seq = 64;
	assert_int_equal(fit_plan(&f, &m, &t, &r, &why), 0);
	assert_int_equal(told, 1);
	assert_true(fit_runs(&f, &r));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fused_first),
		cmocka_unit_test(test_locks_and_batch),
		cmocka_unit_test(test_nothing_fits), cmocka_unit_test(test_buffer_count),
		cmocka_unit_test(test_kind_kept_before_lora),
		cmocka_unit_test(test_advise_as_in_turn),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
