/* Issue 30's dense families (olmo2, granite, smollm3) and multimodal configs: each read
 * with its family's defaults, its parameters counted as transformers builds them, and
 * what sets its plan apart from llama's as its row says. */
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
#include "plan/dtype.h"
#include "plan/model.h"
#include "plan_test.h"

/* config (JSON, with %s for extra keys) read into *m; 0 or the reader's error. */
static int shape_with(const char *cfg, const char *extra, struct model_shape *m)
{
	char buf[2048];

	snprintf(buf, sizeof(buf), cfg, extra);
	return shape_try(buf, m, NULL);
}

/* The plan of a training step (bf16, AdamW) of batch x seq for m. */
static struct plan_result plan_train(const struct model_shape *m, int64_t batch, int64_t seq, int ckpt)
{
	struct train_settings t;
	struct plan_result r;
	const char *why;

	train_settings_init(&t);
	t.batch = batch, t.seq = seq, t.grad_ckpt = ckpt, t.steps = 3;
	assert_int_equal(plan_compute(m, &t, &r, &why), 0);
	return r;
}

/* OLMo-2-1124-7B's shape with n layers (config.json leaves the untied embeddings, the
 * biases, head_dim to the family). */
#define OLMO2 "{\"model_type\": \"%s\", \"hidden_size\": 4096, \"num_hidden_layers\": %d, " \
	      "\"num_attention_heads\": 32, \"num_key_value_heads\": 32, \"intermediate_size\": 11008, " \
	      "\"vocab_size\": 100352%s}"

static void olmo2_shape(const char *type, int layers, const char *extra, struct model_shape *m)
{
	char cfg[512];

	snprintf(cfg, sizeof(cfg), OLMO2, type, layers, "%s");
	assert_int_equal(shape_with(cfg, extra, m), 0);
}

/* olmo2: no pre-norms, post-norms on both sublayers, q and k normalized over the whole
 * projection; all four norms keep their fp32 normalized tensor. */
static void test_olmo2(void **state)
{
	struct model_shape m, biased, llama;

	(void)state;
	olmo2_shape("olmo2", 32, "", &m);
	assert_false(m.tied);
	assert_false(m.qkv_bias || m.o_bias);
	assert_int_equal(m.head_dim, 128);
	/* OLMo-2-1124-7B: 2 norms a layer (no input norm) and q/k norms of 4096 each */
	assert_int_equal(model_params(&m), 7298617344);
	/* the 4-layer shape bench/gpu/cases/gpu-cases-30.json builds, as transformers counted it */
	olmo2_shape("olmo2", 4, "", &m);
	assert_int_equal(model_params(&m), 1631653888);
	olmo2_shape("olmo2", 4, ", \"attention_bias\": true", &biased);
	assert_int_equal(model_params(&biased) - model_params(&m), 4 * (4 * 4096));

	/* against llama's layer of the same shape: each layer keeps the fp32 normalized q
	 * and k (T x 4096 x 4 B each) where llama keeps nothing of q's and k's norms, and
	 * its post-norms' fp32 normalized tensors (T x h x 4 B each) where llama's pre-norms
	 * keep bf16 ones */
	olmo2_shape("llama", 4, "", &llama);
	int64_t T = 4096;
	struct plan_result o = plan_train(&m, 1, T, 0), l = plan_train(&llama, 1, T, 0);
	uint64_t kept = (uint64_t)4 * T * (4096 + 4096) * 4;
	assert_true(o.bytes[C_ACTIVATIONS] >= l.bytes[C_ACTIVATIONS] + kept);
	assert_true(o.allocated_peak_bytes > l.allocated_peak_bytes);
	/* checkpointed, a layer keeps its input only: the two differ by the recomputed layer */
	struct plan_result oc = plan_train(&m, 1, T, 1), lc = plan_train(&llama, 1, T, 1);
	assert_true(oc.allocated_peak_bytes < o.allocated_peak_bytes);
	assert_true(oc.allocated_peak_bytes != lc.allocated_peak_bytes);
}

/* granite-3.1-8b's shape with n layers; tie_word_embeddings left to the family */
#define GRANITE "{\"model_type\": \"%s\", \"hidden_size\": 4096, \"num_hidden_layers\": %d, " \
		"\"num_attention_heads\": 32, \"num_key_value_heads\": 8, \"intermediate_size\": 12800, " \
		"\"vocab_size\": 49155, \"embedding_multiplier\": 12.0, \"logits_scaling\": 16.0, " \
		"\"residual_multiplier\": 0.22, \"attention_multiplier\": 0.0078125%s}"

static void granite_shape(const char *type, int layers, const char *extra, struct model_shape *m)
{
	char cfg[640];

	snprintf(cfg, sizeof(cfg), GRANITE, type, layers, "%s");
	assert_int_equal(shape_with(cfg, extra, m), 0);
}

/* granite: llama's parameters; its multipliers' values change nothing, but each is a
 * tensor op: the logits divided make a second logits tensor. */
static void test_granite(void **state)
{
	struct model_shape m, llama;
	struct train_settings t;
	struct plan_result g, l;
	const char *why;

	(void)state;
	granite_shape("granite", 40, "", &m);
	assert_false(m.tied); /* GraniteConfig's default; the 3.x checkpoints say true */
	granite_shape("granite", 40, ", \"tie_word_embeddings\": true", &m);
	assert_int_equal(model_params(&m), 8170848256); /* granite-3.1-8b */
	granite_shape("granite", 8, ", \"tie_word_embeddings\": true", &m);
	assert_int_equal(model_params(&m), 1795244032); /* as transformers built it */
	assert_non_null(model_family(&m)->assumes);

	/* every position's logits in inference: granite holds the scaled ones besides (a
	 * small model, whose peak is at its logits) */
	const char *small = "{\"model_type\": \"%s\", \"hidden_size\": 1024, \"num_hidden_layers\": 2, "
			    "\"num_attention_heads\": 8, \"num_key_value_heads\": 2, \"intermediate_size\": 2048, "
			    "\"vocab_size\": 49155, \"tie_word_embeddings\": true}";
	assert_int_equal(shape_with(small, "granite", &m), 0);
	assert_int_equal(shape_with(small, "llama", &llama), 0);
	train_settings_init(&t);
	t.inference = 1, t.logits_all = 1, t.batch = 1, t.seq = 2048;
	assert_int_equal(plan_compute(&m, &t, &g, &why), 0);
	assert_int_equal(plan_compute(&llama, &t, &l, &why), 0);
	assert_int_equal(g.bytes[C_LOGITS], 2 * l.bytes[C_LOGITS]);
	assert_int_equal(l.bytes[C_LOGITS], 2048ull * 49155 * 2);
	assert_int_equal(model_params(&m), model_params(&llama));
}

/* SmolLM3-3B's shape with n layers (tied by the family's default) */
#define SMOLLM3 "{\"model_type\": \"%s\", \"hidden_size\": 2048, \"num_hidden_layers\": %d, " \
		"\"num_attention_heads\": 16, \"num_key_value_heads\": 4, \"intermediate_size\": 11008, " \
		"\"vocab_size\": 128256%s}"

static int smollm3_shape(const char *type, int layers, const char *extra, struct model_shape *m)
{
	char cfg[640];

	snprintf(cfg, sizeof(cfg), SMOLLM3, type, layers, "%s");
	return shape_with(cfg, extra, m);
}

/* smollm3: llama's layer and parameters; every 4th layer (no_rope_layers' 0s) rotates
 * neither q nor k, which is all that sets its plan apart. */
static void test_smollm3(void **state)
{
	struct model_shape m, all, llama;

	(void)state;
	assert_int_equal(smollm3_shape("smollm3", 36, "", &m), 0);
	assert_true(m.tied);
	assert_int_equal(m.nope_step, 4);
	assert_int_equal(model_params(&m), 3075098624); /* SmolLM3-3B */
	/* the list as SmolLM3-3B's config.json gives it says the same */
	assert_int_equal(smollm3_shape("smollm3", 8, ", \"no_rope_layers\": [1, 1, 1, 0, 1, 1, 1, 0]", &all), 0);
	assert_int_equal(all.nope_step, 4);
	assert_int_equal(smollm3_shape("smollm3", 8, ", \"no_rope_layer_interval\": 2", &all), 0);
	assert_int_equal(all.nope_step, 2);
	assert_int_not_equal(smollm3_shape("smollm3", 8, ", \"no_rope_layers\": [1, 0, 1, 1, 1, 0, 1, 1]", &all), 0);
	assert_int_not_equal(smollm3_shape("smollm3", 8, ", \"no_rope_layers\": [1, 1]", &all), 0);
	assert_int_not_equal(smollm3_shape("smollm3", 8, ", \"no_rope_layer_interval\": 0", &all), 0);

	/* rope on every layer: llama's plan to the byte */
	assert_int_equal(smollm3_shape("smollm3", 8, ", \"no_rope_layers\": [1, 1, 1, 1, 1, 1, 1, 1]", &all), 0);
	assert_int_equal(all.nope_step, 0);
	assert_int_equal(smollm3_shape("llama", 8, ", \"tie_word_embeddings\": true", &llama), 0);
	assert_int_equal(smollm3_shape("smollm3", 8, "", &m), 0);
	struct plan_result r = plan_train(&all, 1, 4096, 0), l = plan_train(&llama, 1, 4096, 0);
	assert_int_equal(r.allocated_peak_bytes, l.allocated_peak_bytes);
	assert_int_equal(model_params(&m), model_params(&llama));

	/* a prefill whose peak is the last layer's attention (wide q, narrow MLP): without
	 * rope there, none of the rotation's temporaries (each q's size, bf16) */
	const char *wide = "{\"model_type\": \"smollm3\", \"hidden_size\": 1024, \"num_hidden_layers\": 4, "
			   "\"num_attention_heads\": 16, \"num_key_value_heads\": 16, \"head_dim\": 256, "
			   "\"intermediate_size\": 512, \"vocab_size\": 1000, \"no_rope_layer_interval\": %s}";
	struct train_settings t;
	struct plan_result nope, rope;
	const char *why;
	int64_t q = 4ll * 4096 * 4096 * 2;

	train_settings_init(&t);
	t.inference = 1, t.batch = 4, t.seq = 4096;
	assert_int_equal(shape_with(wide, "1", &m), 0);
	assert_int_equal(plan_compute(&m, &t, &nope, &why), 0);
	assert_int_equal(shape_with(wide, "100", &m), 0);
	assert_int_equal(plan_compute(&m, &t, &rope, &why), 0);
	assert_true(rope.allocated_peak_bytes >= nope.allocated_peak_bytes + q);
	assert_true(rope.allocated_peak_bytes <= nope.allocated_peak_bytes + 3 * q);
}

/* gemma-3-4b's text tower at 8 layers, as bench/gpu/cases/gpu-cases-30.json builds it */
#define GEMMA3_TEXT "{\"hidden_size\": 2560, \"num_hidden_layers\": 8, \"num_attention_heads\": 8, " \
		    "\"num_key_value_heads\": 4, \"head_dim\": 256, \"intermediate_size\": 10240, " \
		    "\"vocab_size\": 262208, \"sliding_window\": 1024%s}"
#define SIGLIP "{\"hidden_size\": 1152, \"intermediate_size\": 4304, \"num_hidden_layers\": 27, " \
	       "\"num_attention_heads\": 16, \"image_size\": 896, \"patch_size\": 14, \"vision_use_head\": false%s}"
/* Qwen2.5-VL-3B's text tower at 8 layers, and its vision tower */
#define QWEN25VL_TEXT "\"hidden_size\": 2048, \"num_hidden_layers\": 8, \"num_attention_heads\": 16, " \
		      "\"num_key_value_heads\": 2, \"intermediate_size\": 11008, \"vocab_size\": 151936"
#define QWEN25VL_VISION "\"vision_config\": {\"depth\": 32, \"hidden_size\": 1280, \"out_hidden_size\": 2048, " \
			"\"intermediate_size\": 3420, \"num_heads\": 16, \"patch_size\": 14, " \
			"\"spatial_merge_size\": 2, \"temporal_patch_size\": 2}"

/* A multimodal config plans its text tower from text_config and counts its vision
 * tower's weights (no gradient, no state in a text-only step), as transformers builds
 * them: the parameters each model of bench/gpu/cases/gpu-cases-30.json had. */
static void test_multimodal(void **state)
{
	struct model_shape vlm, text, flat;
	char cfg[2048], tc[512], vc[512];

	(void)state;
	snprintf(tc, sizeof(tc), GEMMA3_TEXT, ", \"model_type\": \"gemma3_text\"");
	snprintf(vc, sizeof(vc), SIGLIP, "");
	snprintf(cfg, sizeof(cfg), "{\"model_type\": \"gemma3\", \"mm_tokens_per_image\": 256, "
		 "\"text_config\": %s, \"vision_config\": %s}", tc, vc);
	assert_int_equal(shape_with(cfg, "", &vlm), 0);
	assert_int_equal(shape_with(tc, "", &text), 0);
	assert_non_null(vlm.wrapper);
	assert_true(vlm.tied); /* gemma3_text's default, through the wrapper */
	assert_int_equal(vision_params(&vlm.vision), 419816304);
	assert_int_equal(model_params(&text), 1426315776);
	assert_int_equal(model_params(&vlm), 1846132080);
	/* the vision weights are loaded, and nothing else of them: the plans differ by the
	 * weights' bytes (and where those blocks land) */
	struct plan_result a = plan_train(&vlm, 1, 4096, 0), b = plan_train(&text, 1, 4096, 0);
	assert_int_equal(a.trainable_params, b.trainable_params);
	/* (small tensors' blocks share 2 MiB segments with the vision's small weights) */
	assert_true(llabs((long long)a.bytes[C_GRADS] - (long long)b.bytes[C_GRADS]) <= 2 << 20);
	assert_true(llabs((long long)a.bytes[C_OPT_STATES] - (long long)b.bytes[C_OPT_STATES]) <= 2 << 20);
	assert_true(a.bytes[C_WEIGHTS] >= b.bytes[C_WEIGHTS] + 2ull * 419816304);
	assert_true(a.bytes[C_WEIGHTS] <= b.bytes[C_WEIGHTS] + 2ull * 419816304 + (16u << 20));
	/* its forward (token_type_ids: images attend both ways) holds a causal and a sliding
	 * boolean mask of batch x seq x seq through the prefill (the text tower's sliding
	 * layers already take a bias a layer, past the window) */
	struct train_settings t;
	const char *why;
	const int64_t B = 4, S = 8192, mask = B * S * S;
	train_settings_init(&t);
	t.inference = 1, t.batch = B, t.seq = S, t.steps = 1;
	assert_int_equal(plan_compute(&vlm, &t, &a, &why), 0);
	assert_int_equal(plan_compute(&text, &t, &b, &why), 0);
	int64_t more = (int64_t)a.allocated_peak_bytes - (int64_t)b.allocated_peak_bytes - 2 * 419816304;
	print_message("VLM prefill: %lld bytes more than its text tower's beside its vision weights\n",
		      (long long)more);
	assert_true(more >= 2 * DT_BOOL * mask);
	assert_true(more <= 2 * DT_BOOL * mask + DT_BF16 * mask);
	/* gemma-3-4b-it's text_config leaves heads, kv heads, head_dim and the vocabulary to
	 * Gemma3TextConfig's defaults (its own values) */
	struct model_shape bare;
	assert_int_equal(shape_with("{\"model_type\": \"gemma3_text\", \"hidden_size\": 2560, "
				  "\"num_hidden_layers\": 8, \"intermediate_size\": 10240, \"sliding_window\": 1024}",
				  "", &bare), 0);
	assert_int_equal(bare.heads, 8);
	assert_int_equal(bare.kv_heads, 4);
	assert_int_equal(bare.head_dim, 256);
	assert_int_equal(model_params(&bare), model_params(&text));
	/* a vision_config the planner cannot count: the text tower alone, saying why */
	snprintf(vc, sizeof(vc), "{\"hidden_size\": 1152}");
	snprintf(cfg, sizeof(cfg), "{\"model_type\": \"gemma3\", \"text_config\": %s, \"vision_config\": %s}",
		 tc, vc);
	assert_int_equal(shape_with(cfg, "", &vlm), 0);
	assert_int_equal(vlm.vision.kind, VISION_NONE);
	assert_non_null(vlm.vision_why);
	assert_int_equal(model_params(&vlm), 1426315776);
	/* sizes past the planner's vision limits are not counted either (their products
	 * could wrap) */
	snprintf(vc, sizeof(vc), SIGLIP, "");
	json_t *j = json_loads(vc, 0, NULL);
	assert_non_null(j);
	json_object_set_new(j, "patch_size", json_integer(4194304));
	char *vcs = json_dumps(j, 0);
	json_decref(j);
	snprintf(cfg, sizeof(cfg), "{\"model_type\": \"gemma3\", \"text_config\": %s, \"vision_config\": %s}",
		 tc, vcs);
	free(vcs);
	assert_int_equal(shape_with(cfg, "", &vlm), 0);
	assert_int_equal(vlm.vision.kind, VISION_NONE);
	assert_non_null(strstr(vlm.vision_why, "out of range"));
	/* a text_config that is itself multimodal is refused */
	snprintf(cfg, sizeof(cfg), "{\"model_type\": \"gemma3\", \"text_config\": {\"model_type\": \"gemma3\"}}");
	assert_int_not_equal(shape_with(cfg, "", &vlm), 0);

	/* qwen2_5_vl: text_config, or (older config.json files) the text keys at the top */
	snprintf(cfg, sizeof(cfg), "{\"model_type\": \"qwen2_5_vl\", \"tie_word_embeddings\": true, "
		 "\"text_config\": {\"model_type\": \"qwen2_5_vl_text\", " QWEN25VL_TEXT "}, " QWEN25VL_VISION "}");
	assert_int_equal(shape_with(cfg, "", &vlm), 0);
	assert_true(vlm.tied && vlm.qkv_bias && !vlm.o_bias);
	assert_int_equal(vision_params(&vlm.vision), 668684288);
	assert_int_equal(model_params(&vlm), 1596467200);
	snprintf(cfg, sizeof(cfg), "{\"model_type\": \"qwen2_5_vl\", \"tie_word_embeddings\": true, "
		 QWEN25VL_TEXT ", " QWEN25VL_VISION "}");
	assert_int_equal(shape_with(cfg, "", &flat), 0);
	assert_int_equal(model_params(&flat), 1596467200);
	struct plan_result n = plan_train(&vlm, 2, 8192, 1), f = plan_train(&flat, 2, 8192, 1);
	assert_int_equal(n.allocated_peak_bytes, f.allocated_peak_bytes);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_olmo2),
		cmocka_unit_test(test_granite),
		cmocka_unit_test(test_smollm3),
		cmocka_unit_test(test_multimodal),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
