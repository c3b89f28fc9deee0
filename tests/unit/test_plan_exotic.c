/* Issue 30's families llama4_text, gpt_oss and qwen3_next: their parameters as
 * transformers builds them, their configs read with the family's defaults, bad keys
 * refused by name, and what makes each family's plan differ. */
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
#include "plan_test.h"

/* The allocated peak of a bf16 AdamW step (or inference) of cfg at batch x seq. */
static uint64_t peak(const char *cfg, int64_t batch, int64_t seq, int inference)
{
	struct model_shape m;
	struct train_settings t;
	struct plan_result r;
	const char *why;

	shape_of(cfg, &m);
	train_settings_init(&t);
	t.batch = batch, t.seq = seq, t.use_cache = 0, t.steps = 3;
	t.keep_outputs = 1; /* as the traces these figures were read from ran (bench/gpu/gpu-measure.py) */
	if (inference)
		t.inference = 1, t.opt = OPT_NONE;
	if (plan_compute(&m, &t, &r, &why))
		fail_msg("%s: %s", cfg, why);
	return r.allocated_peak_bytes;
}

#define LLAMA4 "{\"model_type\": \"llama4_text\", \"hidden_size\": 256, \"num_hidden_layers\": 4," \
	       " \"num_attention_heads\": 4, \"num_key_value_heads\": 2, \"head_dim\": 64," \
	       " \"intermediate_size\": 512, \"vocab_size\": 1000"

static void test_llama4_text(void **state)
{
	struct model_shape m;
	char cfg[512];

	(void)state;
	/* the development run's model as transformers built it: 4,082,324,480 parameters */
	shape_of("{\"model_type\": \"llama4_text\", \"hidden_size\": 5120, \"num_hidden_layers\": 4,"
		 " \"num_attention_heads\": 40, \"num_key_value_heads\": 8, \"head_dim\": 128,"
		 " \"intermediate_size\": 8192, \"intermediate_size_mlp\": 16384, \"num_local_experts\": 4,"
		 " \"num_experts_per_tok\": 1, \"interleave_moe_layer_step\": 2, \"use_qk_norm\": true,"
		 " \"attention_chunk_size\": 2048, \"no_rope_layer_interval\": 4, \"vocab_size\": 202048,"
		 " \"tie_word_embeddings\": false}", &m);
	assert_int_equal(model_params(&m), 4082324480LL);
	/* the config class's defaults: MoE on every layer (16 experts, top 1), dense layers
	 * of 16384, every 4th layer without rotary embedding, chunks of 8192, use_qk_norm */
	shape_of(LLAMA4 "}", &m);
	assert_int_equal(m.sparse_step, 1);
	assert_int_equal(m.experts, 16);
	assert_int_equal(m.experts_per_tok, 1);
	assert_int_equal(m.dense_inter, 16384);
	assert_int_equal(m.shared_inter, 512);
	assert_int_equal(m.nope_step, 4);
	assert_int_equal(m.sliding_window, 8192);
	assert_int_equal(m.sliding_pattern, 4);
	assert_true(m.qk_l2 && m.nope_temperature);
	/* every layer MoE: experts, router, shared expert, attention, two norms a layer */
	int64_t h = 256, moe = 16 * (3 * h * 512 + h) + 3 * h * 512, attn = 2 * h * 256 + 2 * h * 128;
	assert_int_equal(model_params(&m), 2 * 1000 * h + h + 4 * (attn + moe + 2 * h));
	/* moe_layers and no_rope_layers lists as their intervals make them are taken */
	shape_of(LLAMA4 ", \"moe_layers\": [1, 3], \"no_rope_layers\": [1, 1, 1, 0],"
		 " \"layer_types\": [\"chunked_attention\", \"chunked_attention\", \"chunked_attention\","
		 " \"full_attention\"]}", &m);
	assert_int_equal(m.sparse_step, 2);
	assert_int_equal(model_params(&m), 2 * 1000 * h + h + 4 * (attn + 2 * h) + 2 * moe + 2 * 3 * h * 16384);
	shape_refused(LLAMA4 ", \"moe_layers\": [0, 3]}", "moe_layers must list every N-th layer");
	shape_refused(LLAMA4 ", \"no_rope_layers\": [1, 0, 1, 1]}", "no_rope_layers must list 4 layers");
	shape_refused(LLAMA4 ", \"layer_types\": [\"full_attention\", \"chunked_attention\", \"chunked_attention\","
		             " \"chunked_attention\"]}", "layer_types must list 4 layers");
	shape_refused(LLAMA4 ", \"attention_chunk_size\": 0}", "attention_chunk_size must be a whole number");
	shape_refused(LLAMA4 ", \"intermediate_size_mlp\": -1}", "intermediate_size_mlp must be a whole number");
	/* every expert computes every token: the step grows with the experts, not with the
	 * top k (twice the experts at top 1: more than twice the experts' weights, their
	 * gradients and AdamW's two states, 4 x 2 bytes a parameter, once the tokens pass
	 * what the weights come to) */
	snprintf(cfg, sizeof(cfg), LLAMA4 ", \"num_local_experts\": %d}", 4);
	uint64_t e4 = peak(cfg, 4, 2048, 0);
	snprintf(cfg, sizeof(cfg), LLAMA4 ", \"num_local_experts\": %d}", 8);
	uint64_t e8 = peak(cfg, 4, 2048, 0);
	assert_true(e8 - e4 > (uint64_t)(4 * 8 * 4 * (3 * h * 512 + h)) + 4ULL * 8192 * 4 * h * 2);
	/* chunked layers (3 of 4): once seq reaches attention_chunk_size, each keeps its
	 * mask's bias, batch x seq x seq (and k and v repeated to every head) */
	snprintf(cfg, sizeof(cfg), LLAMA4 ", \"attention_chunk_size\": %d}", 1024);
	uint64_t chunked = peak(cfg, 2, 1024, 0);
	snprintf(cfg, sizeof(cfg), LLAMA4 ", \"attention_chunk_size\": %d}", 1025);
	uint64_t within = peak(cfg, 2, 1024, 0);
	assert_true(chunked >= within + 3 * 2ULL * 2 * 1024 * 1024);
}

#define GPT_OSS "{\"model_type\": \"gpt_oss\", \"hidden_size\": 256, \"num_hidden_layers\": 2," \
		" \"num_attention_heads\": 8, \"num_key_value_heads\": 2, \"head_dim\": 32," \
		" \"intermediate_size\": 256, \"vocab_size\": 1000"

static void test_gpt_oss(void **state)
{
	struct model_shape m;

	(void)state;
	/* the development run's model as transformers built it: 2,804,643,712 parameters */
	shape_of("{\"model_type\": \"gpt_oss\", \"hidden_size\": 2880, \"num_hidden_layers\": 2,"
		 " \"num_attention_heads\": 64, \"num_key_value_heads\": 8, \"head_dim\": 64,"
		 " \"intermediate_size\": 2880, \"num_local_experts\": 32, \"num_experts_per_tok\": 4,"
		 " \"sliding_window\": 128, \"layer_types\": [\"sliding_attention\", \"full_attention\"],"
		 " \"attention_bias\": true, \"vocab_size\": 201088, \"tie_word_embeddings\": false}", &m);
	assert_int_equal(model_params(&m), 2804643712LL);
	/* the config class's defaults: 128 experts, top 4, q/k/v/o biases, sliding windows
	 * of 128 on layers 0, 2, 4... */
	shape_of(GPT_OSS "}", &m);
	assert_int_equal(m.experts, 128);
	assert_int_equal(m.experts_per_tok, 4);
	assert_int_equal(m.sliding_window, 128);
	assert_int_equal(m.sliding_pattern, 2);
	assert_true(m.qkv_bias && m.o_bias);
	/* attention with biases and a sink a head; experts with biases; a router with one */
	int64_t h = 256, attn = 2 * h * 256 + 2 * h * 64 + 256 + 2 * 64 + h + 8;
	int64_t moe = 128 * (3 * h * 256 + h) + 128 * (2 * 256 + h) + 128;
	assert_int_equal(model_params(&m), 2 * 1000 * h + h + 2 * (attn + moe + 2 * h));
	shape_of(GPT_OSS ", \"attention_bias\": false}", &m);
	assert_int_equal(model_params(&m), 2 * 1000 * h + h + 2 * (attn - 256 - 2 * 64 - h + moe + 2 * h));
	shape_refused(GPT_OSS ", \"layer_types\": [\"full_attention\", \"sliding_attention\"]}", "layer_types must list");
	shape_refused(GPT_OSS ", \"num_experts_per_tok\": 200}", "num_experts_per_tok 200 is more than the 128 experts");
	/* eager attention: batch x heads x seq x seq scores, three alive at once (the masked
	 * scores, the sinks' concatenation, its maxima subtracted), whatever the window */
	uint64_t s1024 = peak(GPT_OSS ", \"num_local_experts\": 4}", 1, 1024, 1);
	uint64_t s512 = peak(GPT_OSS ", \"num_local_experts\": 4}", 1, 512, 1);
	assert_true(s1024 - s512 >= 3ULL * 2 * 8 * (1024 * 1024 - 512 * 512));
	/* training one layer: its softmax's backward holds four sink-wide tensors at once
	 * (its output, the slice's gradient, its own and grad x output; the product with v
	 * kept no copy) */
	const char *one = "{\"model_type\": \"gpt_oss\", \"hidden_size\": 256, \"num_hidden_layers\": 1,"
			  " \"num_attention_heads\": 8, \"num_key_value_heads\": 2, \"head_dim\": 32,"
			  " \"intermediate_size\": 256, \"vocab_size\": 1000, \"num_local_experts\": 4}";
	uint64_t t1024 = peak(one, 1, 1024, 0), t512 = peak(one, 1, 512, 0);
	if (t1024 - t512 < 4ULL * 2 * 8 * (1024 * 1025 - 512 * 513))
		fail_msg("the training peak grew by %llu bytes, less than four sink-wide scores",
			 (unsigned long long)(t1024 - t512));
}

#define QWEN3_NEXT "{\"model_type\": \"qwen3_next\", \"hidden_size\": 256, \"num_hidden_layers\": 4," \
		   " \"num_attention_heads\": 4, \"num_key_value_heads\": 2, \"head_dim\": 64," \
		   " \"intermediate_size\": 512, \"vocab_size\": 1000"

/* The inference plan of cfg at batch 2 x seq 512 with its cache grown to context. */
static uint64_t infer_peak(const char *cfg, int64_t context)
{
	struct model_shape m;
	struct train_settings t;
	struct plan_result r;
	const char *why;

	shape_of(cfg, &m);
	train_settings_init(&t);
	t.inference = 1, t.opt = OPT_NONE, t.batch = 2, t.seq = 512, t.context = context;
	if (plan_compute(&m, &t, &r, &why))
		fail_msg("%s: %s", cfg, why);
	return r.allocated_peak_bytes;
}

static void test_qwen3_next(void **state)
{
	struct model_shape m;

	(void)state;
	/* the development run's model as transformers built it: 2,375,019,584 parameters */
	shape_of("{\"model_type\": \"qwen3_next\", \"hidden_size\": 2048, \"num_hidden_layers\": 4,"
		 " \"num_attention_heads\": 16, \"num_key_value_heads\": 2, \"head_dim\": 256,"
		 " \"intermediate_size\": 5120, \"moe_intermediate_size\": 512, \"shared_expert_intermediate_size\": 512,"
		 " \"num_experts\": 128, \"num_experts_per_tok\": 10, \"full_attention_interval\": 4,"
		 " \"linear_num_value_heads\": 32, \"linear_num_key_heads\": 16, \"linear_key_head_dim\": 128,"
		 " \"linear_value_head_dim\": 128, \"linear_conv_kernel_dim\": 4, \"vocab_size\": 151936,"
		 " \"tie_word_embeddings\": false}", &m);
	assert_int_equal(model_params(&m), 2375019584LL);
	/* the config class's defaults: a full layer every 4th, 16 key and 32 value heads of
	 * 128, a conv of 4, 512 experts of 512, top 10, a shared expert of 512 */
	shape_of(QWEN3_NEXT "}", &m);
	assert_int_equal(m.full_step, 4);
	assert_int_equal(m.lin_k_heads, 16);
	assert_int_equal(m.lin_v_heads, 32);
	assert_int_equal(m.lin_k_dim, 128);
	assert_int_equal(m.lin_v_dim, 128);
	assert_int_equal(m.lin_conv, 4);
	assert_int_equal(m.experts, 512);
	assert_int_equal(m.experts_per_tok, 10);
	assert_int_equal(m.moe_inter, 512);
	assert_int_equal(m.shared_inter, 512);
	/* three Gated DeltaNet layers and a full one (q_proj twice as wide: its gate), each
	 * with the experts, the router, the shared expert and its gate */
	int64_t h = 256, kd = 16 * 128, vd = 32 * 128;
	int64_t lin = h * (2 * kd + 2 * vd) + h * 64 + (2 * kd + vd) * 4 + 64 + 128 + vd * h;
	int64_t full = 2 * h * 256 + 2 * h * 128 + 256 * h + 2 * 64;
	int64_t moe = 512 * (3 * h * 512 + h) + 3 * h * 512 + h;
	assert_int_equal(model_params(&m), 2 * 1000 * h + h + 3 * lin + full + 4 * (moe + 2 * h));
	shape_refused(QWEN3_NEXT ", \"layer_types\": [\"full_attention\", \"linear_attention\", \"linear_attention\","
		      " \"linear_attention\"]}", "layer_types must list 4 layers");
	shape_refused(QWEN3_NEXT ", \"linear_num_value_heads\": 24}", "linear_num_value_heads 24 is not a multiple");
	shape_refused(QWEN3_NEXT ", \"linear_conv_kernel_dim\": 0}", "linear_conv_kernel_dim must be a whole number");
	/* inference: a longer context grows the full layer's keys and values only (the
	 * DeltaNet layers keep a conv state and a recurrent state whatever the length);
	 * both contexts long enough for the peak to be the full layer's */
	const char *small = QWEN3_NEXT ", \"num_experts\": 8, \"num_experts_per_tok\": 2,"
			    " \"linear_num_key_heads\": 2, \"linear_num_value_heads\": 4}";
	uint64_t kv = 2ULL * 2 * 65536 * 128 * 2; /* the full layer's for 65536 more tokens */
	uint64_t grown = infer_peak(small, 131072) - infer_peak(small, 65536);
	if (grown < kv / 2 || grown > 2 * kv)
		fail_msg("the cache grew the peak by %llu bytes; the full layer's keys and values are %llu",
			 (unsigned long long)grown, (unsigned long long)kv);
	/* the prefill's peak is the delta rule's, a token holding at once in fp32 the
	 * decayed q and k, the padded v, v and k times beta, k_beta x exp(g), value,
	 * k_cumdecay and the output's zeros (value heads x dims each) and the decay, q k^T
	 * and k_beta k^T (value heads x chunk each); in bf16 the module's silu output,
	 * in_proj_qkvz's, z and the q and k repeats */
	int64_t vd2 = 4 * 128, kd2 = 2 * 128, cd = 2 * kd2 + vd2;
	int64_t tok = 4 * (9 * vd2 + 3 * 4 * 64) + 2 * (cd + (2 * kd2 + 2 * vd2) + vd2 + 2 * vd2);
	uint64_t slope = peak(small, 2, 1024, 1) - peak(small, 2, 512, 1);
	if (slope < (uint64_t)(2 * 512 * tok))
		fail_msg("the prefill's peak grew by %llu bytes for 1024 tokens, less than the rule holds (%llu)",
			 (unsigned long long)slope, (unsigned long long)(2 * 512 * tok));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_llama4_text),
		cmocka_unit_test(test_gpt_oss),
		cmocka_unit_test(test_qwen3_next),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
