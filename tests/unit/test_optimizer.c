/* The optimizers' table (plan/optimizer): each row's states and step temporaries for a
 * known shape, and what they do to a plan of Llama-3.2-1B. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <errno.h>
#include <string.h>

#include "plan/model.h"
#include "plan/optimizer.h"
#include "plan/precision.h"
#include "plan/settings.h"
#include "plan/sim.h"
#include "plan_test.h"

/* Llama-3.2-1B's shapes: its hidden size, an MLP matrix, a norm */
#define SIDE 2048
#define MATRIX (2048 * 8192)
#define NORM 2048

static void use(struct train_settings *t, const char *word)
{
	const struct optimizer_row *o = optimizer_by_word(word);

	assert_non_null(o);
	t->opt = o->opt;
	t->fused = o->fused;
	assert_ptr_equal(optimizer_row(t), o);
}

static int64_t sum(const struct opt_states *st)
{
	int64_t b = 0;

	for (int i = 0; i < st->n; i++)
		b += st->bytes[i];
	return b;
}

static void test_names(void **state)
{
	const struct optimizer_row *o;
	(void)state;

	/* every row's word and Hugging Face names lead back to it */
	for (size_t i = 0; (o = optimizer_at(i)); i++) {
		assert_ptr_equal(optimizer_by_word(o->word), o);
		for (int j = 0; j < OPT_MAX_NAMES && o->hf[j]; j++)
			assert_ptr_equal(optimizer_by_hf(o->hf[j]), o);
	}
	assert_string_equal(optimizer_by_hf("adamw_bnb_8bit")->word, "adamw-8bit");
	assert_string_equal(optimizer_by_hf("adamw_8bit")->word, "adamw-8bit");
	assert_string_equal(optimizer_by_hf("paged_adamw_8bit")->word, "paged-adamw-8bit");
	assert_string_equal(optimizer_by_hf("paged_adamw_32bit")->word, "paged-adamw");
	assert_string_equal(optimizer_by_hf("adafactor")->word, "adafactor");
	assert_string_equal(optimizer_by_hf("lion_32bit")->word, "lion");
	assert_null(optimizer_by_hf("lion_8bit"));
	assert_null(optimizer_by_word("adamw-4bit"));
	assert_string_equal(optimizer_by_hf("adamw_torch_8bit")->word, "adamw-ao-8bit");
	assert_string_equal(optimizer_by_hf("adamw_torch_4bit")->word, "adamw-ao-4bit");
}

static void test_state_bytes(void **state)
{
	struct train_settings t;
	struct opt_states st;
	int64_t blocks = MATRIX / 256;
	(void)state;

	train_settings_init(&t);
	assert_int_equal(precision_apply(&t, "amp-bf16"), 0);
	/* AdamW: two states of the tensor's dtype */
	use(&t, "adamw");
	optimizer_tensor_states(optimizer_row(&t), &t, MATRIX, MATRIX * 4, SIDE, &st);
	assert_int_equal(st.n, 2);
	assert_int_equal(sum(&st), 2LL * MATRIX * 4);
	/* 8-bit AdamW: a byte an element a state, an fp32 absmax a block of 256 */
	use(&t, "adamw-8bit");
	optimizer_tensor_states(optimizer_row(&t), &t, MATRIX, MATRIX * 4, SIDE, &st);
	assert_int_equal(sum(&st), 2LL * MATRIX + 2 * blocks * 4);
	assert_int_equal(st.paged_bytes, 0);
	/* a tensor below bitsandbytes' min_8bit_size keeps 32-bit states, no absmax */
	optimizer_tensor_states(optimizer_row(&t), &t, NORM, NORM * 2, SIDE, &st);
	assert_int_equal(st.n, 2);
	assert_int_equal(sum(&st), 2LL * NORM * 4);
	/* paged: the state buffers in managed memory, the absmax on the GPU */
	use(&t, "paged-adamw-8bit");
	optimizer_tensor_states(optimizer_row(&t), &t, MATRIX, MATRIX * 4, SIDE, &st);
	assert_int_equal(st.paged_bytes, 2LL * MATRIX);
	assert_int_equal(sum(&st), 2 * blocks * 4);
	use(&t, "paged-adamw");
	optimizer_tensor_states(optimizer_row(&t), &t, MATRIX, MATRIX * 2, SIDE, &st);
	assert_int_equal(st.paged_bytes, 2LL * MATRIX * 4);
	assert_int_equal(st.n, 0);
	/* (a small tensor's states are torch's, on the GPU) */
	optimizer_tensor_states(optimizer_row(&t), &t, NORM, NORM * 2, SIDE, &st);
	assert_int_equal(st.paged_bytes, 0);
	assert_int_equal(sum(&st), 2LL * NORM * 4);
	/* torchao's: uint8 codes (two 4-bit ones a byte), an fp32 scale a block, a quantile
	 * map each state; a small tensor's, or one its block does not divide, zeros_like */
	use(&t, "adamw-ao-8bit");
	optimizer_tensor_states(optimizer_row(&t), &t, MATRIX, MATRIX * 4, SIDE, &st);
	assert_int_equal(st.n, 6);
	assert_int_equal(sum(&st), 2LL * MATRIX + 2 * blocks * 4 + 2 * 256 * 4);
	optimizer_tensor_states(optimizer_row(&t), &t, NORM, NORM * 2, SIDE, &st);
	assert_int_equal(sum(&st), 2LL * NORM * 2);
	optimizer_tensor_states(optimizer_row(&t), &t, MATRIX + 1, (MATRIX + 1) * 2LL, SIDE, &st);
	assert_int_equal(sum(&st), 2LL * (MATRIX + 1) * 2);
	use(&t, "adamw-ao-4bit");
	optimizer_tensor_states(optimizer_row(&t), &t, MATRIX, MATRIX * 4, SIDE, &st);
	assert_int_equal(sum(&st), MATRIX + 2LL * MATRIX / 128 * 4 + 2 * 16 * 4);
	/* Adafactor: a matrix's row and column, a vector's whole second moment, fp32 */
	use(&t, "adafactor");
	optimizer_tensor_states(optimizer_row(&t), &t, MATRIX, MATRIX * 4, SIDE, &st);
	assert_int_equal(sum(&st), (MATRIX / SIDE + SIDE) * 4LL);
	optimizer_tensor_states(optimizer_row(&t), &t, NORM, NORM * 4, SIDE, &st);
	assert_int_equal(sum(&st), NORM * 4LL);
	/* Lion: one fp32 state, half AdamW's under fp32 weights */
	use(&t, "lion");
	optimizer_tensor_states(optimizer_row(&t), &t, MATRIX, MATRIX * 4, SIDE, &st);
	assert_int_equal(sum(&st), MATRIX * 4LL);
	/* SGD: a buffer with momentum, none without */
	use(&t, "sgd");
	t.momentum = 0;
	optimizer_tensor_states(optimizer_row(&t), &t, MATRIX, MATRIX * 4, SIDE, &st);
	assert_int_equal(st.n, 0);
	t.momentum = 0.9;
	optimizer_tensor_states(optimizer_row(&t), &t, MATRIX, MATRIX * 4, SIDE, &st);
	assert_int_equal(sum(&st), MATRIX * 4LL);
}

static void test_temps(void **state)
{
	struct train_settings t;
	int64_t each = 0;
	(void)state;

	train_settings_init(&t);
	use(&t, "adamw");
	assert_int_equal(optimizer_temps(optimizer_row(&t), MATRIX, MATRIX * 2, &each), 1);
	assert_int_equal(each, MATRIX * 2LL);
	use(&t, "adamw-fused");
	assert_int_equal(optimizer_temps(optimizer_row(&t), MATRIX, MATRIX * 2, &each), 0);
	use(&t, "adamw-8bit");
	assert_int_equal(optimizer_temps(optimizer_row(&t), MATRIX, MATRIX * 2, &each), 0);
	/* torchao's compiled step: its fp32 states and weight, a tensor at a time */
	use(&t, "adamw-ao-4bit");
	assert_int_equal(optimizer_temps(optimizer_row(&t), MATRIX, MATRIX * 2, &each), 3);
	assert_int_equal(each, MATRIX * 4LL);
	/* Adafactor: two fp32 of the tensor's size, two more upcasting a 16-bit one */
	use(&t, "adafactor");
	assert_int_equal(optimizer_temps(optimizer_row(&t), MATRIX, MATRIX * 4, &each), 2);
	assert_int_equal(optimizer_temps(optimizer_row(&t), MATRIX, MATRIX * 2, &each), 4);
	assert_int_equal(each, MATRIX * 4LL);
	assert_int_equal(optimizer_row(&t)->temps, OT_PER_TENSOR);
}

/* The plans of Llama-3.2-1B, fp32 weights under autocast, by optimizer. */
static void plan_with(const char *word, struct plan_result *r)
{
	struct model_shape m;
	struct train_settings t;
	const char *why;

	llama1b(&m, &t);
	assert_int_equal(precision_apply(&t, "amp-bf16"), 0);
	t.seq = 1024;
	use(&t, word);
	assert_int_equal(plan_compute(&m, &t, r, &why), 0);
}

static void test_plans(void **state)
{
	struct plan_result fused, bit8, paged, sgd, ada, lion;
	struct model_shape m;
	struct train_settings t;
	struct precision_dtypes d;
	(void)state;

	plan_with("adamw-fused", &fused);
	plan_with("adamw-8bit", &bit8);
	plan_with("paged-adamw-8bit", &paged);
	plan_with("sgd", &sgd);
	plan_with("adafactor", &ada);
	plan_with("lion", &lion);
	uint64_t params = (uint64_t)fused.trainable_params;
	/* 8-bit states: about two bytes a parameter, with the absmax a little more */
	assert_true(bit8.bytes[C_OPT_STATES] >= 2 * params);
	assert_true(bit8.bytes[C_OPT_STATES] < 2 * params + params / 16);
	/* the peak falls by about the states' difference (neither makes temporaries) */
	uint64_t saved = fused.bytes[C_OPT_STATES] - bit8.bytes[C_OPT_STATES];
	assert_true(bit8.need_low_bytes < fused.need_low_bytes);
	assert_true(fused.need_low_bytes - bit8.need_low_bytes > saved - saved / 20);
	assert_true(fused.need_low_bytes - bit8.need_low_bytes < saved + saved / 20);
	/* paged states are not counted against the card: need_low within the absmax (8 bytes a block of 256) of SGD
	 * without momentum's, which keeps none */
	assert_true(paged.bytes[C_OPT_STATES] < params / 16);
	assert_true(paged.need_low_bytes < sgd.need_low_bytes + params / 16);
	llama1b(&m, &t);
	assert_int_equal(precision_apply(&t, "amp-bf16"), 0);
	use(&t, "paged-adamw-8bit");
	assert_true(sim_paged_bytes(&m, &t) > 2 * params - params / 50 && sim_paged_bytes(&m, &t) <= 2 * params);
	precision_dtypes(&t, &d);
	assert_string_equal(d.optimizer_states, "8-bit");
	use(&t, "adamw");
	assert_int_equal(sim_paged_bytes(&m, &t), 0);
	/* Adafactor's factored states are far below AdamW's; Lion's half */
	assert_true(ada.bytes[C_OPT_STATES] < fused.bytes[C_OPT_STATES] / 100);
	assert_int_equal(lion.bytes[C_OPT_STATES] * 2, fused.bytes[C_OPT_STATES]);
	/* Adafactor's temporaries: one tensor's at a time (the embedding's, the largest) */
	assert_true(ada.bytes[C_OPT_TEMP] <= 2 * 4 * (uint64_t)128256 * 2048 + 2 * (1ULL << 20));
}

/* What the plan says of each new row: modelled, not measured, but for Adafactor, whose
 * library (transformers) was on the GPU machine. */
static void test_said(void **state)
{
	const struct optimizer_row *o;
	(void)state;

	for (size_t i = 0; (o = optimizer_at(i)); i++)
		if (o->opt != OPT_ADAMW && o->opt != OPT_SGD && o->opt != OPT_NONE)
			assert_non_null(strstr(o->said, o->opt == OPT_ADAFACTOR ? "measured on an H100" : "modelled, not measured"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_state_bytes),
		cmocka_unit_test(test_temps),
		cmocka_unit_test(test_plans),
		cmocka_unit_test(test_said),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
