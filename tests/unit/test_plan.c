/* The GPU memory planner against every measured case in tests/fixtures/gpu-train, and
 * its config reader on good and bad configs. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "plan/config.h"
#include "plan/model.h"

#ifndef FIXTURES
#define FIXTURES "tests/fixtures"
#endif

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* Every case of a fixture file: the parameter count exactly, and the device peak within
 * issue 4's bounds: median absolute error at most 3 %, none off by more than 8 %, no
 * under-estimate larger than 3 %. */
static void check_fixture_file(const char *path, size_t expect_n)
{
	json_error_t e;
	json_t *root = json_load_file(path, 0, &e), *c;
	double err[64], worst = 0;
	size_t i, n = 0;

	if (!root)
		fail_msg("%s: %s", path, e.text);
	printf("   %s\n", path);
	json_array_foreach(json_object_get(root, "cases"), i, c) {
		struct model_shape m;
		struct train_settings t;
		struct plan_result r;
		const char *why, *name = json_string_value(json_object_get(c, "name"));
		char *msg = NULL;
		json_t *meas = json_object_get(c, "measured");

		assert_true(n < sizeof(err) / sizeof(err[0]));
		train_settings_init(&t);
		assert_int_equal(model_shape_from_json(json_object_get(c, "model"), &m, &msg), 0);
		assert_int_equal(train_settings_from_json(json_object_get(c, "train"), &t, &msg), 0);
		assert_int_equal(plan_compute(&m, &t, &r, &why), 0);
		/* what the model counts: LoRA's adapters besides the base weights */
		assert_int_equal(r.params + (t.lora_rank ? r.trainable_params : 0),
				 json_integer_value(json_object_get(meas, "n_params")));
		double used = (double)json_integer_value(json_object_get(meas, "device_used_by_process_bytes"));
		err[n] = ((double)r.device_peak_bytes - used) / used;
		printf("   %-42s %+6.2f%%\n", name, err[n] * 100);
		if (err[n] < 0 && -err[n] > worst)
			worst = -err[n];
		err[n] = err[n] < 0 ? -err[n] : err[n];
		n++;
	}
	json_decref(root);
	assert_int_equal(n, expect_n);
	qsort(err, n, sizeof(err[0]), cmp_double);
	printf("   median |error| %.1f%%, max %.1f%%, worst under-estimate %.1f%%\n",
	       err[n / 2] * 100, err[n - 1] * 100, worst * 100);
	assert_true(err[n / 2] <= 0.03);
	assert_true(err[n - 1] <= 0.08);
	assert_true(worst <= 0.03);
}

/* the 17 cases of tests/fixtures/gpu-train/h200-torch2.11.json (the figures print as the test runs) */
static void test_fixtures(void **state)
{
	(void)state;
	check_fixture_file(FIXTURES "/gpu-train/h200-torch2.11.json", 17);
}

/* headroom's own 22 cases (bench/gpu-cases.json, measured on the H200 with
 * bench/gpu-measure.py): other architectures, 16k sequences, SGD with momentum, fused
 * AdamW, LoRA, inference. */
static void test_fixtures_headroom(void **state)
{
	(void)state;
	check_fixture_file(FIXTURES "/gpu-train/h200-headroom.json", 22);
}

static void expect_error(const char *cfg, const char *needle)
{
	json_t *j = json_loads(cfg, 0, NULL);
	struct model_shape m;
	char *err = NULL;

	assert_non_null(j);
	assert_int_not_equal(model_shape_from_json(j, &m, &err), 0);
	assert_non_null(err);
	if (!strstr(err, needle))
		fail_msg("'%s' does not say '%s'", err, needle);
	free(err);
	json_decref(j);
}

static void test_config_errors(void **state)
{
	(void)state;
	expect_error("{\"hidden_size\": 8}", "missing model_type");
	expect_error("{\"model_type\": \"bert\"}", "'bert' is not supported");
	expect_error("{\"model_type\": \"llama\", \"hidden_size\": 64, \"num_hidden_layers\": 2,"
		     " \"num_attention_heads\": 4, \"vocab_size\": 100}", "missing intermediate_size");
	expect_error("{\"model_type\": \"mistral\", \"hidden_size\": 64, \"num_hidden_layers\": -2}",
		     "num_hidden_layers must be a positive integer");
	expect_error("{\"model_type\": \"llama\", \"hidden_size\": 64, \"num_hidden_layers\": 2, \"intermediate_size\": 128,"
		     " \"num_attention_heads\": 6, \"num_key_value_heads\": 4, \"vocab_size\": 100, \"head_dim\": 16}",
		     "not a multiple of 4 key/value heads");
	expect_error("{\"model_type\": \"gpt2\", \"n_embd\": 64, \"n_head\": 4, \"vocab_size\": 100}", "missing n_layer");
}

static void test_shapes(void **state)
{
	(void)state;
	/* qwen3: q/k norms, explicit head_dim wider than hidden / heads */
	json_t *j = json_loads("{\"model_type\": \"qwen3\", \"hidden_size\": 1024, \"num_hidden_layers\": 28,"
			       " \"num_attention_heads\": 16, \"num_key_value_heads\": 8, \"head_dim\": 128,"
			       " \"intermediate_size\": 3072, \"vocab_size\": 151936, \"tie_word_embeddings\": true}", 0, NULL);
	struct model_shape m;
	char *err = NULL;

	assert_int_equal(model_shape_from_json(j, &m, &err), 0);
	json_decref(j);
	assert_true(m.qk_norm);
	assert_int_equal(m.head_dim, 128);
	/* Qwen3-0.6B has 596,049,920 parameters */
	assert_int_equal(model_params(&m), 596049920);
}

static void test_knobs(void **state)
{
	(void)state;
	json_t *j = json_loads("{\"model_type\": \"llama\", \"hidden_size\": 2048, \"num_hidden_layers\": 16,"
			       " \"num_attention_heads\": 32, \"num_key_value_heads\": 8, \"intermediate_size\": 8192,"
			       " \"vocab_size\": 128256}", 0, NULL);
	struct model_shape m;
	struct train_settings t;
	struct plan_result full, chunked, lora, inf, zero, buf;
	const char *why;
	char *err = NULL;

	assert_int_equal(model_shape_from_json(j, &m, &err), 0);
	json_decref(j);
	train_settings_init(&t);
	t.batch = 4;
	assert_int_equal(plan_compute(&m, &t, &full, &why), 0);
	/* chunking the loss shrinks the logits by the chunk's share */
	t.loss_chunk = 1024;
	assert_int_equal(plan_compute(&m, &t, &chunked, &why), 0);
	assert_true(chunked.bytes[C_LOGITS] * 7 < full.bytes[C_LOGITS]);
	t.loss_chunk = 0;
	/* LoRA trains a few million parameters: no full gradients or states */
	t.lora_rank = 16;
	assert_int_equal(plan_compute(&m, &t, &lora, &why), 0);
	assert_true(lora.trainable_params > 0 && lora.trainable_params < lora.params / 100);
	assert_true(lora.bytes[C_OPT_STATES] < full.bytes[C_OPT_STATES] / 50);
	t.lora_rank = 0;
	/* ZeRO-2 over 8 ranks: an eighth of the states */
	t.zero_stage = 2;
	t.dp = 8;
	assert_int_equal(plan_compute(&m, &t, &zero, &why), 0);
	assert_int_equal(zero.bytes[C_OPT_STATES], full.bytes[C_OPT_STATES] / 8);
	t.zero_stage = 0;
	t.dp = 1;
	/* a prefetch queue of 50 x 100 MB is added as it is */
	assert_int_equal(buffer_spec_parse("queue=50x100MB", &t.buffers[0]), 0);
	t.nbuffers = 1;
	assert_int_equal(plan_compute(&m, &t, &buf, &why), 0);
	assert_int_equal(buf.device_peak_bytes - full.device_peak_bytes, 50ULL * 100 * 1024 * 1024); /* sizes are binary */
	t.nbuffers = 0;
	/* inference: a KV cache, no gradients */
	t.inference = 1;
	t.opt = OPT_NONE;
	t.context = 8192;
	assert_int_equal(plan_compute(&m, &t, &inf, &why), 0);
	assert_int_equal(inf.bytes[C_KV_CACHE], 2ULL * 16 * 4 * 8192 * 512 * 2);
	assert_int_equal(inf.bytes[C_GRADS], 0);
	/* nonsense */
	t.batch = 0;
	assert_int_not_equal(plan_compute(&m, &t, &inf, &why), 0);
	assert_non_null(why);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fixtures), cmocka_unit_test(test_fixtures_headroom), cmocka_unit_test(test_config_errors),
		cmocka_unit_test(test_shapes), cmocka_unit_test(test_knobs),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
