/* Precision presets (plan/precision): each maps onto the settings the model takes, is
 * named back from them, and says what each kind of tensor is held in. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <errno.h>

#include "plan/model.h"
#include "plan/precision.h"

static void test_presets(void **state)
{
	struct train_settings t;
	(void)state;

	train_settings_init(&t);
	/* the default is pure bf16: named so, and unchanged by its own preset */
	assert_string_equal(precision_name(&t), "bf16");
	assert_int_equal(precision_apply(&t, "amp-bf16"), 0);
	assert_int_equal(t.param_bytes, 4);
	assert_true(t.autocast);
	assert_string_equal(precision_name(&t), "amp-bf16");
	assert_int_equal(precision_apply(&t, "fp32"), 0);
	assert_int_equal(t.param_bytes, 4);
	assert_false(t.autocast);
	assert_string_equal(precision_name(&t), "fp32");
	assert_int_equal(precision_apply(&t, "fp16"), 0);
	assert_int_equal(t.param_bytes, 2);
	assert_true(t.fp16);
	assert_string_equal(precision_name(&t), "fp16");
	assert_int_equal(precision_apply(&t, "bf16"), 0);
	assert_int_equal(t.param_bytes, 2);
	assert_false(t.fp16);
	assert_false(t.autocast);
	assert_string_equal(precision_name(&t), "bf16");
	/* unknown names leave t as it was */
	assert_int_equal(precision_apply(&t, "amp"), -EINVAL);
	assert_int_equal(precision_apply(&t, "BF16"), -EINVAL);
	assert_int_equal(precision_apply(&t, ""), -EINVAL);
	assert_string_equal(precision_name(&t), "bf16");
	/* 16-bit weights under autocast are no preset */
	t.autocast = 1;
	assert_null(precision_name(&t));
}

static void test_dtypes(void **state)
{
	struct train_settings t;
	struct precision_dtypes d;
	(void)state;

	train_settings_init(&t);
	precision_dtypes(&t, &d);
	assert_string_equal(d.weights, "bf16");
	assert_string_equal(d.compute, "bf16");
	assert_string_equal(d.master_weights, "none");
	assert_string_equal(d.gradients, "bf16");
	assert_string_equal(d.optimizer_states, "bf16");
	precision_apply(&t, "amp-bf16");
	precision_dtypes(&t, &d);
	assert_string_equal(d.weights, "fp32");
	assert_string_equal(d.compute, "bf16");
	assert_string_equal(d.master_weights, "fp32");
	assert_string_equal(d.optimizer_states, "fp32");
	precision_apply(&t, "fp32");
	precision_dtypes(&t, &d);
	assert_string_equal(d.compute, "fp32");
	/* LoRA: frozen 16-bit weights, fp32 adapters with fp32 gradients and states */
	precision_apply(&t, "fp16");
	t.lora_rank = 16;
	precision_dtypes(&t, &d);
	assert_string_equal(d.weights, "fp16");
	assert_string_equal(d.master_weights, "fp32");
	assert_string_equal(d.gradients, "fp32");
	assert_string_equal(d.optimizer_states, "fp32");
	t.lora_rank = 0;
	/* SGD keeps states only with momentum; inference keeps neither */
	t.opt = OPT_SGD;
	precision_dtypes(&t, &d);
	assert_string_equal(d.optimizer_states, "none");
	t.momentum = 0.9;
	precision_dtypes(&t, &d);
	assert_string_equal(d.optimizer_states, "fp16");
	t.inference = 1;
	precision_dtypes(&t, &d);
	assert_string_equal(d.gradients, "none");
	assert_string_equal(d.optimizer_states, "none");
	assert_string_equal(d.master_weights, "none");
}

int main(void)
{
	const struct CMUnitTest tests[] = { cmocka_unit_test(test_presets), cmocka_unit_test(test_dtypes) };
	return cmocka_run_group_tests(tests, NULL, NULL);
}
