/* The planner's mixture-of-experts families of issue 30 (qwen2_moe, glm4_moe,
 * deepseek_v3): their config defaults, parameter formulas, and what their rows make a
 * plan do that the older MoE rows (qwen3_moe, mixtral) do not. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <errno.h>
#include <jansson.h>

#include "plan/config.h"
#include "plan/dtype.h"
#include "plan/family.h"
#include "plan/model.h"
#include "plan_test.h"

/* The allocated peak of a bf16 AdamW step of batch x seq (3 steps). */
static uint64_t allocated(const struct model_shape *m, int64_t batch, int64_t seq, int ckpt)
{
	struct train_settings t;
	struct plan_result r;
	const char *why = NULL;

	train_settings_init(&t);
	t.batch = batch, t.seq = seq, t.steps = 3, t.grad_ckpt = ckpt, t.use_cache = !ckpt;
	assert_int_equal(plan_compute(m, &t, &r, &why), 0);
	return r.allocated_peak_bytes;
}

/* The allocated peak of a bf16 prefill of batch x seq. */
static uint64_t allocated_infer(const struct model_shape *m, int64_t batch, int64_t seq)
{
	struct train_settings t;
	struct plan_result r;
	const char *why = NULL;

	train_settings_init(&t);
	t.inference = 1, t.opt = OPT_NONE, t.batch = batch, t.seq = seq, t.context = seq;
	assert_int_equal(plan_compute(m, &t, &r, &why), 0);
	return r.allocated_peak_bytes;
}

#define QWEN2_MOE                                                                                                   \
	"{\"model_type\": \"qwen2_moe\", \"hidden_size\": 256, \"num_hidden_layers\": 4, \"num_attention_heads\": 4," \
	" \"intermediate_size\": 1024, \"moe_intermediate_size\": 128, \"num_experts\": 8, \"num_experts_per_tok\": 2," \
	" \"vocab_size\": 1000%s}"

static void test_qwen2_moe(void **state)
{
	(void)state;
	struct model_shape m, d;
	char cfg[1024], *err = NULL;
	int64_t h = 256, V = 1000, E = 8, Im = 128, Is = 5632, I = 1024;

	/* its config class's defaults: q, k, v biases (its own key), a shared expert of 5632
	 * units, every layer sparse */
	snprintf(cfg, sizeof(cfg), QWEN2_MOE, "");
	assert_int_equal(shape_try(cfg, &m, &err), 0);
	assert_true(m.qkv_bias && !m.o_bias);
	assert_int_equal(m.shared_inter, Is);
	assert_int_equal(m.experts, E);
	int64_t attn = 4 * h * h + 3 * h, moe = E * (3 * h * Im + h) + 3 * h * Is + h;
	assert_int_equal(model_params(&m), 2 * V * h + h + 4 * (attn + moe + 2 * h));
	snprintf(cfg, sizeof(cfg), QWEN2_MOE, ", \"qkv_bias\": false, \"attention_bias\": true");
	assert_int_equal(shape_try(cfg, &m, &err), 0);
	assert_false(m.qkv_bias);

	/* dense layers: off every decoder_sparse_step-th, and mlp_only_layers */
	snprintf(cfg, sizeof(cfg), QWEN2_MOE, ", \"decoder_sparse_step\": 2, \"mlp_only_layers\": [3]");
	assert_int_equal(shape_try(cfg, &d, &err), 0);
	assert_true(model_dense_layer(&d, 0) && !model_dense_layer(&d, 1) && model_dense_layer(&d, 2) &&
		    model_dense_layer(&d, 3));
	assert_int_equal(model_params(&d), 2 * V * h + h + 4 * (attn + 2 * h) + moe + 3 * (3 * h * I));
	assert_true(allocated(&d, 2, 512, 0) != allocated(&m, 2, 512, 0));
	snprintf(cfg, sizeof(cfg), QWEN2_MOE, ", \"mlp_only_layers\": [4]");
	assert_int_equal(shape_try(cfg, &d, &err), -EINVAL);
	assert_non_null(strstr(err, "mlp_only_layers"));
	free(err), err = NULL;
	snprintf(cfg, sizeof(cfg), QWEN2_MOE, ", \"shared_expert_intermediate_size\": -1");
	assert_int_equal(shape_try(cfg, &d, &err), -EINVAL);
	assert_non_null(strstr(err, "shared_expert_intermediate_size"));
	free(err), err = NULL;

	/* the shared expert: its weights (with their gradients and states) and the
	 * activations it holds to the backward (gate, act, up, the product a layer) */
	snprintf(cfg, sizeof(cfg), QWEN2_MOE, ", \"shared_expert_intermediate_size\": 0");
	assert_int_equal(shape_try(cfg, &d, &err), 0);
	assert_int_equal(d.shared_inter, 0);
	m.qkv_bias = d.qkv_bias;
	int64_t T = 2 * 512;
	uint64_t with = allocated(&m, 2, 512, 0), without = allocated(&d, 2, 512, 0);
	assert_true(with > without + (uint64_t)(4 * 4 * T * Is * 2));

	/* its forward builds the sliding-window mask whatever the config says (its config
	 * class sets the window to 0 when off): a boolean seq x seq held through the forward,
	 * in training and in a prefill alike (a prefill's peak holds it whole) */
	struct family f = *model_family(&m);
	f.window_mask_always = 0;
	d = m, d.family = &f;
	int64_t S = 16384;
	uint64_t mask = (uint64_t)(DT_BOOL * S * S);
	assert_true(allocated(&m, 1, S, 0) > allocated(&d, 1, S, 0));
	assert_true(allocated_infer(&m, 1, S) >= allocated_infer(&d, 1, S) + mask);
}

#define GLM4_MOE                                                                                                    \
	"{\"model_type\": \"glm4_moe\", \"hidden_size\": 256, \"num_hidden_layers\": 3, \"num_attention_heads\": 8," \
	" \"num_key_value_heads\": 2, \"head_dim\": 64, \"intermediate_size\": 1024, \"moe_intermediate_size\": 128," \
	" \"n_routed_experts\": 8, \"num_experts_per_tok\": 2, \"vocab_size\": 1000%s}"

static void test_glm4_moe(void **state)
{
	(void)state;
	struct model_shape m, d;
	char cfg[1024], *err = NULL;
	int64_t h = 256, V = 1000, E = 8, Im = 128, I = 1024, q = 8 * 64, k = 2 * 64;

	/* its config class's defaults: the first layer dense, one shared expert of the
	 * experts' width, half of a head rotated, no biases */
	snprintf(cfg, sizeof(cfg), GLM4_MOE, "");
	assert_int_equal(shape_try(cfg, &m, &err), 0);
	assert_int_equal(m.dense_first, 1);
	assert_int_equal(m.shared_inter, Im);
	assert_int_equal(m.rotary_dim, 32);
	assert_true(model_dense_layer(&m, 0) && !model_dense_layer(&m, 1));
	int64_t attn = 2 * h * q + 2 * h * k, moe = E * (3 * h * Im + h) + 3 * h * Im;
	assert_int_equal(model_params(&m), 2 * V * h + h + 3 * (attn + 2 * h) + 3 * h * I + 2 * moe);
	/* attention_bias: q, k and v's biases, never o's; two shared experts; all sparse */
	snprintf(cfg, sizeof(cfg), GLM4_MOE,
		 ", \"attention_bias\": true, \"n_shared_experts\": 2, \"first_k_dense_replace\": 0");
	assert_int_equal(shape_try(cfg, &d, &err), 0);
	assert_true(d.qkv_bias && !d.o_bias);
	assert_int_equal(d.shared_inter, 2 * Im);
	assert_int_equal(model_params(&d), 2 * V * h + h + 3 * (attn + q + 2 * k + 2 * h + moe + 3 * h * Im));
	/* use_qk_norm: qwen3's per-head norms, their weights a head wide each */
	snprintf(cfg, sizeof(cfg), GLM4_MOE, ", \"use_qk_norm\": true");
	assert_int_equal(shape_try(cfg, &d, &err), 0);
	assert_int_equal(model_params(&d), model_params(&m) + 3 * 2 * 64);
	assert_true(allocated(&d, 2, 512, 0) > allocated(&m, 2, 512, 0));
	snprintf(cfg, sizeof(cfg), GLM4_MOE, ", \"first_k_dense_replace\": 4");
	assert_int_equal(shape_try(cfg, &d, &err), -EINVAL);
	assert_non_null(strstr(err, "first_k_dense_replace"));
	free(err), err = NULL;
	snprintf(cfg, sizeof(cfg), GLM4_MOE, ", \"partial_rotary_factor\": 0");
	assert_int_equal(shape_try(cfg, &d, &err), -EINVAL);
	assert_non_null(strstr(err, "partial_rotary_factor"));
	free(err), err = NULL;

	/* the whole head rotated: the rotation's products are over all of it, and cos and
	 * sin twice as wide; no concatenation */
	snprintf(cfg, sizeof(cfg), GLM4_MOE, ", \"partial_rotary_factor\": 1.0");
	assert_int_equal(shape_try(cfg, &d, &err), 0);
	assert_int_equal(d.rotary_dim, 0);
	assert_true(allocated(&d, 2, 512, 0) != allocated(&m, 2, 512, 0));
}

#define DEEPSEEK_V3                                                                                                 \
	"{\"model_type\": \"deepseek_v3\", \"hidden_size\": 256, \"num_hidden_layers\": 4, \"num_attention_heads\": 4," \
	" \"intermediate_size\": 1024, \"moe_intermediate_size\": 128, \"n_routed_experts\": 8," \
	" \"num_experts_per_tok\": 2, \"vocab_size\": 1000%s}"

static void test_deepseek_v3(void **state)
{
	(void)state;
	struct model_shape m, d;
	char cfg[1024], *err = NULL;
	int64_t h = 256, V = 1000, E = 8, Im = 128, I = 1024, H = 4, qr = 1536, kvr = 512, r = 64, n = 128, vd = 128;

	/* its config class's defaults: DeepSeek-V3's latent attention (a q low rank of 1536,
	 * a latent of 512, heads of 128 + 64 q/k units and 128 v units), three dense layers
	 * first, one shared expert */
	snprintf(cfg, sizeof(cfg), DEEPSEEK_V3, "");
	assert_int_equal(shape_try(cfg, &m, &err), 0);
	assert_int_equal(m.q_lora_rank, qr);
	assert_int_equal(m.kv_lora_rank, kvr);
	assert_int_equal(m.head_dim, n + r);
	assert_int_equal(m.rotary_dim, r);
	assert_int_equal(m.dense_first, 3);
	assert_int_equal(m.shared_inter, Im);
	int64_t kv = h * (kvr + r) + kvr + kvr * H * (n + vd) + H * vd * h;
	int64_t attn = h * qr + qr + qr * H * (n + r) + kv;
	int64_t moe = E * (3 * h * Im + h) + 3 * h * Im;
	assert_int_equal(model_params(&m), 2 * V * h + h + 4 * (attn + 2 * h) + 3 * 3 * h * I + moe);
	/* q_lora_rank null: one q_proj; two shared experts */
	snprintf(cfg, sizeof(cfg), DEEPSEEK_V3, ", \"q_lora_rank\": null, \"n_shared_experts\": 2");
	assert_int_equal(shape_try(cfg, &d, &err), 0);
	assert_int_equal(d.q_lora_rank, 0);
	assert_int_equal(model_params(&d), 2 * V * h + h + 4 * (h * H * (n + r) + kv + 2 * h) + 3 * 3 * h * I + moe +
						   3 * h * Im);
	/* the dense layers' width by default: DeepSeek-V3's */
	assert_int_equal(shape_try("{\"model_type\": \"deepseek_v3\", \"hidden_size\": 256, \"num_hidden_layers\": 4,"
				  " \"num_attention_heads\": 4, \"vocab_size\": 1000}", &d, &err), 0);
	assert_int_equal(d.intermediate, 18432);
	snprintf(cfg, sizeof(cfg), DEEPSEEK_V3, ", \"kv_lora_rank\": 0");
	assert_int_equal(shape_try(cfg, &d, &err), -EINVAL);
	assert_non_null(strstr(err, "kv_lora_rank"));
	free(err), err = NULL;

	/* the cache keeps the latents: a token's kv_lora_rank + rope units a layer (bf16),
	 * not keys and values of every head; a prompt of 1024 grown to 65536 */
	struct train_settings t;
	struct plan_result r1, r2;
	const char *why = NULL;
	train_settings_init(&t);
	t.inference = 1, t.batch = 2, t.seq = 1024, t.context = 65536;
	assert_int_equal(plan_compute(&m, &t, &r1, &why), 0);
	snprintf(cfg, sizeof(cfg), DEEPSEEK_V3, ", \"kv_lora_rank\": 1024");
	assert_int_equal(shape_try(cfg, &d, &err), 0);
	assert_int_equal(plan_compute(&d, &t, &r2, &why), 0);
	uint64_t latents = 4ull * 2 * 65536 * (uint64_t)(kvr + r) * 2;
	assert_true(r1.bytes[C_KV_CACHE] >= latents && r1.bytes[C_KV_CACHE] <= latents + latents / 10);
	assert_true(r2.bytes[C_KV_CACHE] > r1.bytes[C_KV_CACHE]);
	/* training runs the latent attention's ops: checkpointed and not */
	assert_true(allocated(&m, 1, 512, 1) < allocated(&m, 1, 512, 0));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_qwen2_moe), cmocka_unit_test(test_glm4_moe), cmocka_unit_test(test_deepseek_v3),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
