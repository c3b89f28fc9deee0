/* The settings table (plan/settings), the readers of other tools' files
 * (plan/trainargs) and the YAML reader (util/yaml): text in, settings out. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "plan/config.h"
#include "plan/lora_names.h"
#include "plan/model.h"
#include "plan/quant.h"
#include "plan/settings.h"
#include "plan/trainargs.h"
#include "util/strbuf.h"
#include "util/yaml.h"

static json_t *obj(const char *text)
{
	json_t *j = json_loads(text, 0, NULL);

	assert_non_null(j);
	return j;
}

/* The settings a JSON train object gives (0), or its error's text (must hold needle). */
static int from_json(const char *text, struct train_settings *t, const char *needle)
{
	json_t *j = obj(text);
	setting_mask given = 0;
	char *err = NULL;
	int rc;

	train_settings_init(t);
	rc = settings_from_json(j, t, &given, &err);
	json_decref(j);
	if (needle) {
		assert_int_equal(rc, -EINVAL);
		if (!strstr(err, needle))
			fail_msg("'%s' does not say '%s'", err, needle);
	}
	free(err);
	return rc;
}

/* An old spelling is its row: applied after the row's own key whatever their order. */
static void test_aliases(void **state)
{
	struct train_settings a, b, c;
	(void)state;

	assert_int_equal(from_json("{\"fused\": true, \"optimizer\": \"adamw\"}", &a, NULL), 0);
	assert_int_equal(from_json("{\"optimizer\": \"adamw\", \"fused\": true}", &b, NULL), 0);
	assert_int_equal(from_json("{\"optimizer\": \"adamw-fused\"}", &c, NULL), 0);
	assert_true(a.fused && b.fused && c.fused);
	assert_int_equal(a.opt, OPT_ADAMW);
	assert_memory_equal(&a, &c, sizeof(a));
	assert_int_equal(from_json("{\"param_dtype\": \"fp32\", \"buffers\": {\"q\": \"2x1G\"}}", &a, NULL), 0);
	assert_int_equal(from_json("{\"dtype\": \"fp32\", \"buffer\": [\"q=2x1G\"]}", &b, NULL), 0);
	assert_memory_equal(&a, &b, sizeof(a));
	assert_int_equal(a.param_bytes, 4);
	assert_int_equal(a.nbuffers, 1);
	/* a list is one value, its items joined: q_proj is q */
	assert_int_equal(from_json("{\"lora_targets\": [\"q_proj\", \"v_proj\"], \"freeze\": [\"embed\", \"lm_head\"]}", &a,
				   NULL), 0);
	assert_int_equal(a.lora_targets, LORA_Q | LORA_V);
	assert_true(a.freeze_embed && a.freeze_head);
	assert_int_equal(from_json("{\"reshard_after_forward\": false, \"inference\": true}", &a, NULL), 0);
	assert_true(a.keep_gathered);
	assert_int_equal(a.opt, OPT_NONE);
}

static void test_bad_values(void **state)
{
	struct train_settings t;
	(void)state;

	from_json("{\"grad_ckp\": true}", &t, "unknown key 'grad_ckp'; did you mean 'grad_ckpt'?");
	from_json("{\"optimizer\": \"adamw-fuse\"}", &t, "not 'adamw-fuse'; did you mean adamw-fused?");
	from_json("{\"inputs_embeds\": 1}", &t, "'inputs_embeds' wants true or false");
	from_json("{\"batch\": \"4\"}", &t, "'batch' wants a whole number from 1 to 1048576");
	from_json("{\"fused\": \"yes\"}", &t, "'fused' wants true or false");
	from_json("{\"no_cache\": true}", &t, "unknown key 'no_cache'");
	from_json("{\"precision\": \"bf16\", \"dtype\": \"fp32\"}", &t, "'precision' sets dtype and autocast");
	from_json("{\"lora_targets\": []}", &t, "'lora_targets' wants");
}

static void test_flags(void **state)
{
	char buf[64];
	(void)state;

	assert_string_equal(setting_flag_text(setting_find("grad_ckpt"), "true", buf, sizeof(buf)), "--grad-ckpt");
	assert_string_equal(setting_flag_text(setting_find("use_cache"), "false", buf, sizeof(buf)), "--no-use-cache");
	assert_string_equal(setting_flag_text(setting_find("loss_chunk"), "1024", buf, sizeof(buf)),
			    "--loss-chunk 1024");
	/* flags and keys are one spelling */
	assert_ptr_equal(setting_find("grad-ckpt"), setting_find("grad_ckpt"));
	assert_string_equal(setting_alias_find("no-cache")->key, "use_cache");
	for (size_t i = 0; setting_at(i); i++) {
		const struct setting *s = setting_at(i);
		assert_ptr_equal(setting_find(s->key), s);
		assert_non_null(s->help);
		for (size_t j = 0; setting_alias_at(j); j++)
			assert_string_not_equal(setting_alias_at(j)->name, s->key);
	}
	for (size_t j = 0; setting_alias_at(j); j++)
		assert_non_null(setting_find(setting_alias_at(j)->key));
}

static json_t *yaml(const char *text, const char *needle)
{
	json_t *j = NULL;
	char *err = NULL;
	int rc = yaml_to_json(text, strlen(text), &j, &err);

	if (needle) {
		assert_int_equal(rc, -EINVAL);
		assert_null(j);
		assert_non_null(err); /* every error says why: never a NULL for a %s */
		if (!strstr(err, needle))
			fail_msg("'%s' does not say '%s'", err, needle);
		free(err);
		return NULL;
	}
	if (rc)
		fail_msg("%s", err);
	return j;
}

static void test_yaml(void **state)
{
	json_t *j;
	(void)state;

	j = yaml("a: 1\nb: true\nc: \"true\"\nd:\ne: 2e-5\nf: [x, 'y']\ng:\n  h: no\nlr: 0.0002\n", NULL);
	assert_int_equal(json_integer_value(json_object_get(j, "a")), 1);
	assert_true(json_is_true(json_object_get(j, "b")));
	assert_string_equal(json_string_value(json_object_get(j, "c")), "true");
	assert_true(json_is_null(json_object_get(j, "d")));
	assert_true(json_is_real(json_object_get(j, "e")));
	assert_int_equal(json_array_size(json_object_get(j, "f")), 2);
	assert_true(json_is_false(json_object_get(json_object_get(j, "g"), "h")));
	json_decref(j);
	yaml("a: [1, 2\n", "not YAML");
	yaml("a: &x 1\nb: *x\n", "alias");
	yaml("", "empty");
	yaml("a: !!str 1\n", "tag");
}

/* Issue 43: "micro_batch_size: 1e999 -> headroom: plan: inf.yml: (null)": a number past
 * an int64_t or a double is refused, naming its key and line; every error says why. */
static void test_yaml_numbers(void **state)
{
	json_t *j;
	(void)state;

	yaml("micro_batch_size: 1e999\n", "a number out of range (micro_batch_size: 1e999, past a double) at line 1");
	yaml("a: 1\nb: -1.5e400\n", "(b: -1.5e400, past a double) at line 2");
	yaml("a: 1\nseed: 99999999999999999999\n", "(seed: 99999999999999999999, past a 64-bit integer) at line 2");
	yaml("a: -9223372036854775809\n", "past a 64-bit integer");
	yaml("a:\n  b: [1, {c: 2}, 1e999]\n  d: 1\n", "(b: 1e999, past a double) at line 2");
	yaml("[1, 1e999]\n", "a number out of range (1e999, past a double)");
	yaml("1e999: 1\n", "a number out of range (1e999, past a double)");
	j = yaml("a: 9223372036854775807\nb: 1e-999\nc: +4\nd: \"1e999\"\ne: 1e308\n", NULL);
	assert_true(json_integer_value(json_object_get(j, "a")) == INT64_MAX);
	assert_true(json_is_real(json_object_get(j, "b")) && json_real_value(json_object_get(j, "b")) == 0);
	assert_true(json_is_integer(json_object_get(j, "c")) && json_integer_value(json_object_get(j, "c")) == 4);
	assert_string_equal(json_string_value(json_object_get(j, "d")), "1e999");
	assert_true(json_is_real(json_object_get(j, "e")));
	json_decref(j);
	/* YAML 1.1's grouped digits, as PyYAML reads axolotl's files */
	j = yaml("a: 500_000\nb: -1_000\nc: 0_1\nd: 1_\ne: _1\n", NULL);
	assert_true(json_integer_value(json_object_get(j, "a")) == 500000);
	assert_true(json_integer_value(json_object_get(j, "b")) == -1000);
	assert_string_equal(json_string_value(json_object_get(j, "c")), "0_1");
	assert_string_equal(json_string_value(json_object_get(j, "d")), "1_");
	assert_string_equal(json_string_value(json_object_get(j, "e")), "_1");
	json_decref(j);
	yaml("a: 9_223_372_036_854_775_808\n", "past a 64-bit integer");
}

/* Issue 43: "sequence_len: 2048 / --- / sequence_len: 999999999 plans the first document
 * and ignores the rest; PyYAML's safe_load (what axolotl uses) refuses it". */
static void test_yaml_documents(void **state)
{
	static const char *const one[] = { "---\na: 1\n", "a: 1\n...\n", "---\na: 1\n...\n# end\n",
					   "# a comment\n---\na: 1\n" };
	const char *another = "expected a single document in the stream, but found another document";
	json_t *j;
	(void)state;

	for (size_t i = 0; i < sizeof(one) / sizeof(one[0]); i++) {
		j = yaml(one[i], NULL);
		assert_int_equal(json_integer_value(json_object_get(j, "a")), 1);
		json_decref(j);
	}
	yaml("sequence_len: 2048\n---\nsequence_len: 999999999\n", another);
	yaml("sequence_len: 2048\n---\nsequence_len: 999999999\n", "at line 2");
	yaml("a: 1\n...\n---\nb: 2\n", "another document at line 3");
	yaml("a: 1\n---\n", another);
	yaml("--- 1\n--- 2\n", another);
	yaml("a: 1\n...\nb: 2\n", "not YAML: did not find expected <document start> at line 3");
	/* the other errors, each with its message and line */
	yaml("# nothing\n", "an empty file");
	yaml("a: 1\n]\n", "not YAML: ");
	yaml("? [a]\n: 1\n", "a mapping key that is not a scalar at line 1");
	yaml("a: 1\nb: &x {c: 1}\n", "an anchor (&name) at line 2");
	yaml("a: [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]\n",
	     "nesting too deep");
}

static int read_args(int axolotl, const char *yaml_or_json, struct train_settings *t, const char *needle)
{
	json_t *j = axolotl ? yaml(yaml_or_json, NULL) : obj(yaml_or_json);
	char *err = NULL;
	int rc;

	struct file_read f = { .strict = 1 };
	struct strbuf said = STRBUF_INIT;

	train_settings_init(t);
	rc = axolotl ? axolotl_from_json(j, t, NULL, &f, &err) : trainargs_from_json(j, t, NULL, &f, &err);
	if (!rc) /* as plan does once the command line's settings are in (none here) */
		trainargs_settle(t, 0, &f, &said);
	free(f.said);
	json_decref(f.unknown);
	strbuf_release(&said);
	json_decref(j);
	if (needle) {
		assert_int_equal(rc, -EINVAL);
		if (!strstr(err, needle))
			fail_msg("'%s' does not say '%s'", err, needle);
	} else if (rc) {
		fail_msg("%s", err);
	}
	free(err);
	return rc;
}

static void test_trainer_args(void **state)
{
	struct train_settings t;
	(void)state;

	read_args(0, "{\"per_device_train_batch_size\": 4, \"bf16\": true, \"optim\": \"adamw_torch_fused\","
		     " \"gradient_checkpointing\": true, \"max_steps\": -1, \"learning_rate\": 1e-5}", &t, NULL);
	assert_int_equal(t.batch, 4);
	assert_int_equal(t.param_bytes, 4);
	assert_true(t.autocast && t.fused && t.grad_ckpt);
	assert_int_equal(t.steps, 0);
	read_args(0, "{\"fsdp\": \"full_shard auto_wrap\", \"fsdp_config\": {\"reshard_after_forward\": false}}", &t,
		  NULL);
	assert_int_equal(t.zero_stage, 3);
	assert_true(t.keep_gathered);
	read_args(0, "{\"deepspeed\": {\"zero_optimization\": {\"stage\": 2, \"offload_optimizer\": {\"device\": "
		     "\"none\"}}}}", &t, NULL);
	assert_int_equal(t.zero_stage, 2);
	/* TRL's SFTConfig gives the length; trainer_state.json the batch */
	read_args(0, "{\"max_length\": 1024, \"packing\": true, \"dataset_text_field\": \"text\"}", &t, NULL);
	assert_int_equal(t.seq, 1024);
	read_args(0, "{\"max_seq_length\": null, \"activation_offloading\": false}", &t, NULL);
	assert_int_equal(t.seq, 2048);
	/* TRL's activation offloading: planned with the activations kept, checkpointing as given */
	read_args(0, "{\"activation_offloading\": true, \"gradient_checkpointing\": true}", &t, NULL);
	assert_true(t.grad_ckpt);
	read_args(0, "{\"activation_offloading\": \"everything\"}", &t, "wants true, false, legacy, disk");
	/* TRL's DPOConfig and GRPOConfig are no SFT run: refused by a key only they write */
	read_args(0, "{\"beta\": 0.1, \"precompute_ref_log_probs\": false}", &t, "TRL's preference or reinforcement");
	read_args(0, "{\"num_generations\": 8}", &t, "'num_generations' is a key of TRL's preference");
	read_args(0, "{\"train_batch_size\": 6, \"global_step\": 10, \"log_history\": [], \"max_steps\": 5}", &t, NULL);
	assert_int_equal(t.batch, 6);
	assert_int_equal(t.steps, 5);
	read_args(0, "{\"deepspeed\": \"no/such/ds.json\"}", &t, "no/such/ds.json, which cannot be read");
	/* axolotl's bundled configs, where no file of the name is here: each as axolotl has it */
	static const struct {
		const char *yaml;
		int stage, param_bytes, oo, op;
	} bundled[] = {
		{ "deepspeed: deepspeed_configs/zero1.json\nbf16: true\n", 1, 2, 0, 0 },
		{ "deepspeed: ./deepspeed_configs/zero2.json\nbf16: auto\n", 2, 2, 1, 0 },
		{ "deepspeed: deepspeed_configs/zero3.json\nfp16: true\n", 3, 2, 0, 0 },
		{ "deepspeed: deepspeed_configs/zero3_bf16.json\n", 3, 2, 0, 0 },
		{ "deepspeed: /opt/axolotl/deepspeed_configs/zero3_bf16_cpuoffload_params.json\n", 3, 2, 0, 1 },
		{ "deepspeed: deepspeed_configs/zero3_bf16_cpuoffload_all.json\n", 3, 2, 1, 1 },
	};
	for (size_t i = 0; i < sizeof(bundled) / sizeof(bundled[0]); i++) {
		read_args(1, bundled[i].yaml, &t, NULL);
		assert_int_equal(t.zero_stage, bundled[i].stage);
		assert_int_equal(t.param_bytes, bundled[i].param_bytes);
		assert_int_equal(t.offload_optimizer, bundled[i].oo);
		assert_int_equal(t.offload_params, bundled[i].op);
	}
	/* QLoRA under DeepSpeed's bf16 engine at stage 2: the engine casts what
	 * prepare_model_for_kbit_training left in fp32 back to bf16 */
	read_args(1, "adapter: qlora\nload_in_4bit: true\nlora_r: 8\nbf16: auto\n"
		     "deepspeed: deepspeed_configs/zero2.json\n", &t, NULL);
	assert_true(t.quant == QUANT_NF4 && !t.kbit_prepare && t.zero_stage == 2);
	read_args(1, "adapter: qlora\nload_in_4bit: true\nlora_r: 8\nbf16: auto\n", &t, NULL);
	assert_true(t.quant == QUANT_NF4 && t.kbit_prepare);
	read_args(1, "deepspeed: deepspeed_configs/zero2_torch_compile.json\n", &t, "which cannot be read");
	read_args(1, "deepspeed: my_deepspeed_configs/zero2.json\n", &t, "which cannot be read");
	read_args(0, "{\"deepspeed\": \"deepspeed_configs/zero2.json\"}", &t, "which cannot be read");
	/* DeepSpeed's bf16 engine: 16-bit weights, fp32 masters; "auto" follows the file's bf16 */
	read_args(0, "{\"bf16\": true, \"deepspeed\": {\"bf16\": {\"enabled\": \"auto\"}, \"zero_optimization\": "
		     "{\"stage\": 2, \"offload_optimizer\": {\"device\": \"cpu\"}, \"reduce_bucket_size\": 5e8}}}",
		  &t, NULL);
	assert_int_equal(t.zero_stage, 2);
	assert_int_equal(t.param_bytes, 2);
	assert_true(t.master_weights && t.offload_optimizer && !t.offload_params && !t.autocast);
	assert_int_equal(t.reduce_bucket, 500000000);
	assert_false(t.overlap_comm);
	read_args(0, "{\"bf16\": false, \"deepspeed\": {\"bf16\": {\"enabled\": \"auto\"}, \"zero_optimization\": "
		     "{\"stage\": 3, \"offload_param\": {\"device\": \"nvme\"}}}}",
		  &t, NULL);
	assert_int_equal(t.zero_stage, 3);
	assert_true(!t.master_weights && !t.offload_optimizer && t.offload_params);
	assert_int_equal(t.reduce_bucket, 500000000); /* DeepSpeed's default */
	assert_false(t.overlap_comm); /* (its default, on at stage 3, doubles no bucket there) */
	read_args(0, "{\"deepspeed\": {\"zero_optimization\": {\"stage\": 3, \"reduce_bucket_size\": \"auto\", "
		     "\"overlap_comm\": false}}}", &t, NULL);
	assert_int_equal(t.reduce_bucket, -1);
	assert_false(t.overlap_comm);
	read_args(0, "{\"deepspeed\": {\"zero_optimization\": {\"stage\": 2, \"reduce_bucket_size\": 2.5}}}", &t,
		  "reduce_bucket_size that is not a whole number");
	read_args(0, "{\"deepspeed\": {\"zero_optimization\": {\"stage\": 2, \"reduce_bucket_size\": \"big\"}}}", &t,
		  "neither a number nor auto");
	read_args(0, "{\"deepspeed\": {\"zero_optimization\": {\"stage\": 4}}}", &t, "stage other than 0 to 3");
	read_args(0, "{\"deepspeed\": [1]}", &t, "wants a DeepSpeed config");
	/* TRL's model_init_kwargs: from_pretrained's quantization_config, attention, use_cache */
	read_args(0, "{\"model_init_kwargs\": {\"quantization_config\": {\"load_in_4bit\": true, "
		     "\"bnb_4bit_quant_type\": \"nf4\", \"bnb_4bit_use_double_quant\": true}, \"attn_implementation\": "
		     "\"flash_attention_2\", \"use_cache\": false, \"device_map\": \"auto\"}}", &t, NULL);
	assert_int_equal(t.quant, QUANT_NF4);
	assert_true(t.double_quant && !t.use_cache);
	assert_int_equal(t.attn_name, ATTN_NAME_FA2);
	read_args(0, "{\"model_init_kwargs\": {\"quantization_config\": {\"load_in_4bit\": true}}}", &t, NULL);
	assert_int_equal(t.quant, QUANT_FP4); /* BitsAndBytesConfig's default */
	assert_false(t.double_quant);
	read_args(0, "{\"model_init_kwargs\": {\"quantization_config\": {\"load_in_8bit\": true}}}", &t, NULL);
	assert_int_equal(t.quant, QUANT_INT8);
	read_args(0, "{\"model_init_kwargs\": {\"quantization_config\": {\"load_in_4bit\": true, "
		     "\"bnb_4bit_quant_type\": \"nf3\"}}}", &t, "gives quant 'nf3'");
	read_args(0, "{\"model_init_kwargs\": 3}", &t, "wants an object of from_pretrained's arguments");
	/* a flash-attn kernel from the Hub: the flash-attn it builds */
	read_args(0, "{\"model_init_kwargs\": {\"attn_implementation\": \"kernels-community/flash-attn3\"}}", &t, NULL);
	assert_int_equal(t.attn_name, ATTN_NAME_FA3);
	read_args(0, "{\"model_init_kwargs\": {\"attn_implementation\": \"kernels-community/other\"}}", &t,
		  "'model_init_kwargs' wants sdpa, default");
	/* the dtype it loads in is the weights' under bf16=true */
	read_args(0, "{\"bf16\": true, \"model_init_kwargs\": {\"dtype\": \"float32\"}}", &t, NULL);
	assert_int_equal(t.param_bytes, 4);
	assert_true(t.autocast);
	/* FSDP under bf16 through accelerate: fp32 shards, the layers gathered in bf16 */
	read_args(0, "{\"bf16\": true, \"fsdp\": \"full_shard auto_wrap\", \"fsdp_config\": {\"offload_params\": true}}",
		  &t, NULL);
	assert_int_equal(t.zero_stage, 3);
	assert_int_equal(t.param_bytes, 4);
	assert_int_equal(t.mp_param_bytes, 2);
	assert_true(t.offload_optimizer && t.offload_params);
	read_args(1, "adapter: lora\nlora_r: 8\nbf16: true\nfsdp: [full_shard, auto_wrap]\n", &t, NULL);
	assert_int_equal(t.param_bytes, 2); /* LoRA's frozen base is not upcast */
	assert_int_equal(t.mp_param_bytes, 2);
	read_args(0, "{\"optim\": \"adafactor\"}", &t, NULL);
	assert_int_equal(t.opt, OPT_ADAFACTOR);
	read_args(0, "{\"optim\": \"paged_adamw_8bit\"}", &t, NULL);
	assert_int_equal(t.opt, OPT_PAGED_ADAMW_8BIT);
	read_args(0, "{\"optim\": \"lion_8bit\"}", &t, "plan with --optimizer lion");
	read_args(0, "{\"optim\": \"galore_adamw\"}", &t, "'optim' is galore_adamw");
	read_args(0, "{\"fsdp\": [\"full_shard\", \"offload\"]}", &t, NULL);
	assert_true(t.zero_stage == 3 && t.offload_optimizer && t.offload_params && !t.mp_param_bytes);
	read_args(0, "{\"fsdp\": [\"hybrid_shard\"]}", &t, "'fsdp' has an FSDP option");
	read_args(0, "{\"a_new_key\": 1, \"another\": 2, \"seed\": 3}", &t, "'a_new_key', 'another' are not known");
	read_args(0, "{\"torch_compile\": true}", &t, "'torch_compile' is not modelled");
}

static void test_axolotl(void **state)
{
	struct train_settings t;
	(void)state;

	/* bnb_config_kwargs' format over load_in_4bit's nf4, double-quantized */
	read_args(1, "adapter: qlora\nlora_r: 8\nload_in_4bit: true\nbnb_config_kwargs:\n  bnb_4bit_quant_type: fp4\n"
		     "  bnb_4bit_use_double_quant: false\n  llm_int8_has_fp16_weight: false\n", &t, NULL);
	assert_int_equal(t.quant, QUANT_FP4);
	assert_false(t.double_quant);
	read_args(1, "adapter: qlora\nlora_r: 8\nload_in_4bit: true\n", &t, NULL);
	assert_int_equal(t.quant, QUANT_NF4);
	assert_true(t.double_quant);
	read_args(1, "adapter: qlora\nlora_r: 8\nload_in_4bit: true\nbnb_config_kwargs: [1]\n", &t,
		  "wants an object of BitsAndBytesConfig's arguments");

	read_args(1, "adapter: lora\nlora_r: 8\nlora_target_linear: true\nsequence_len: 4096\nmicro_batch_size: 2\n"
		     "bf16: auto\noptimizer: adamw_torch\ngradient_checkpointing: unsloth\nflash_attention: true\n",
		  &t, NULL);
	assert_int_equal(t.lora_rank, 8);
	assert_int_equal(t.lora_targets, LORA_Q | LORA_K | LORA_V | LORA_O | LORA_GATE | LORA_UP | LORA_DOWN);
	assert_int_equal(t.seq, 4096);
	assert_int_equal(t.batch, 2);
	assert_int_equal(t.param_bytes, 2);
	assert_true(t.grad_ckpt);
	/* lora_r without an adapter is unused, as in axolotl */
	read_args(1, "lora_r: 8\nlora_target_modules: [q_proj]\n", &t, NULL);
	assert_int_equal(t.lora_rank, 0);
	/* QLoRA: NF4 double-quantized under bf16's autocast, as axolotl loads it */
	read_args(1, "adapter: qlora\nlora_r: 8\n", &t, "qlora without load_in_4bit");
	read_args(1, "adapter: qlora\nload_in_4bit: true\nlora_r: 8\nbf16: auto\n", &t, NULL);
	assert_int_equal(t.quant, QUANT_NF4);
	assert_true(t.double_quant && t.kbit_prepare && t.autocast);
	assert_int_equal(t.lora_rank, 8);
	read_args(1, "adapter: lora\nload_in_8bit: true\nlora_r: 8\n", &t, NULL);
	assert_int_equal(t.quant, QUANT_INT8);
	assert_false(t.autocast);
	read_args(1, "adapter: dora\nlora_r: 8\n", &t, "neither lora nor qlora");
	read_args(1, "load_in_4bit: maybe\n", &t, "'load_in_4bit' wants true or false");
	read_args(1, "sequence_parallel_degree: 2\n", &t, "splits the sequence");
	/* activation offloading planned with what it offloads kept: for LoRA in place of
	 * checkpointing (axolotl turns it off), else beside it; a flag wins */
	read_args(1, "adapter: lora\nlora_r: 8\ngradient_checkpointing: offload\n", &t, NULL);
	assert_false(t.grad_ckpt);
	read_args(1, "adapter: lora\nlora_r: 8\ngradient_checkpointing: true\nactivation_offloading: hidden_states\n",
		  &t, NULL);
	assert_true(t.grad_ckpt);
	read_args(1, "activation_offloading: disk\ngradient_checkpointing: true\n", &t, NULL);
	assert_true(t.grad_ckpt);
	read_args(1, "gradient_checkpointing: sometimes\n", &t, "wants true, false, offload or offload_disk");
	read_args(1, "gradient_checkpointing:\n", &t, NULL);
	assert_false(t.grad_ckpt);
	/* PEFT's modules_to_save: the embedding and lm_head by any family's names */
	read_args(1, "adapter: lora\nlora_r: 8\nlora_modules_to_save:\n  - embed_tokens\n  - lm_head\n", &t, NULL);
	assert_int_equal(t.lora_save, LORA_SAVE_EMBED | LORA_SAVE_HEAD);
	read_args(1, "adapter: lora\nlora_r: 8\nlora_modules_to_save: [transformer.wte]\n", &t, NULL);
	assert_int_equal(t.lora_save, LORA_SAVE_EMBED);
	read_args(1, "adapter: lora\nlora_r: 8\nlora_modules_to_save: [lm_head, score]\n", &t,
		  "names 'score', a module whose trained copy the planner does not model");
	read_args(1, "adapter: lora\nlora_r: 8\nlora_modules_to_save: [1]\n", &t, "wants a list of module names");
	/* preference training is not plain fine-tuning: refused, not planned as one */
	read_args(1, "rl: dpo\nadapter: lora\nlora_r: 8\n", &t, "'rl' is dpo, preference or reinforcement training");
	read_args(1, "rl:\nadapter: lora\nlora_r: 8\n", &t, NULL);
}

/* One line of the "assumed:" text the rows say for the settings of a JSON train object. */
static void expect_said(const char *train, enum said_line line, const char *solving, enum prompt_source prompt,
			const char *want)
{
	struct said_ctx c = { .solving = solving, .prompt = prompt };
	struct strbuf sb = STRBUF_INIT;
	struct train_settings t;

	assert_int_equal(from_json(train, &t, NULL), 0);
	settings_said(&sb, line, &t, &c);
	if (strcmp(strbuf_str(&sb), want))
		fail_msg("%s on line %d says\n'%s', not\n'%s'", train, (int)line, strbuf_str(&sb), want);
	strbuf_release(&sb);
}

/* Each row says its phrase on its line, in the table's order; a row dropped or moved
 * changes one of these. */
/* axolotl's file read, what it said back into *said (caller frees). */
static void read_said(const char *yaml_text, struct train_settings *t, char **said)
{
	json_t *j = yaml(yaml_text, NULL);
	struct file_read f = { .layers = 32 };
	char *err = NULL;

	train_settings_init(t);
	if (axolotl_from_json(j, t, NULL, &f, &err))
		fail_msg("%s", err);
	json_decref(f.unknown);
	json_decref(j);
	*said = f.said;
}

/* PEFT's target_modules, as a list of any family's names or one regular expression */
static void test_lora_targets(void **state)
{
	unsigned bits, partial;
	struct train_settings t;
	char *said = NULL, *err = NULL;

	(void)state;
	assert_int_equal(lora_targets_parse("q,self_attn.v_proj,o_proj", &bits), 0);
	assert_int_equal(bits, LORA_Q | LORA_V | LORA_O);
	assert_int_equal(lora_targets_parse("query_key_value,dense_h_to_4h", &bits), 0);
	assert_int_equal(bits, LORA_Q | LORA_K | LORA_V | LORA_UP);
	assert_int_equal(lora_targets_parse("all-linear", &bits), 0);
	assert_int_equal(bits, LORA_ALL);
	assert_int_equal(lora_targets_parse("q_proj,in_proj", &bits), -EINVAL);
	assert_int_equal(lora_name_bits("mlp.experts.gate_up_proj"), LORA_GATE | LORA_UP);
	assert_int_equal(lora_name_bits("x_proj"), 0);
	/* an expression over some layers: those projections planned on all, said */
	assert_int_equal(lora_regex_bits(".*\\.layers\\.(3|7)\\.self_attn\\.(q|v)_proj|.*\\.mlp\\.down_proj", 32, &bits,
					 &partial, &err), 0);
	assert_int_equal(bits, LORA_Q | LORA_V | LORA_DOWN);
	assert_int_equal(partial, LORA_Q | LORA_V);
	/* layers past the ones a model has match nothing */
	assert_int_equal(lora_regex_bits(".*\\.layers\\.(40|41)\\..*", 32, &bits, &partial, &err), 0);
	assert_int_equal(bits, 0);

	read_said("adapter: lora\nlora_r: 8\nlora_target_modules: 'model.language_model.layers.[\\d]+.(mlp|self_attn)."
		  "(up|down|gate|q|k|v|o)_proj'\n", &t, &said);
	assert_int_equal(t.lora_targets, LORA_ALL);
	assert_null(strstr(said ? said : "", "some layers"));
	free(said);
	read_said("adapter: lora\nlora_r: 8\nlora_target_modules: '.*\\.layers\\.(3|7)\\.self_attn\\.(q|k|v|o)_proj'\n", &t, &said);
	assert_int_equal(t.lora_targets, LORA_Q | LORA_K | LORA_V | LORA_O);
	assert_non_null(strstr(said, "LoRA on q,k,v,o of some layers only"));
	free(said);
	read_said("adapter: lora\nlora_r: 8\nlora_target_modules: [self_attn.q_proj, in_proj, x_proj, shared_expert.up_proj]\n", &t,
		  &said);
	assert_int_equal(t.lora_targets, LORA_Q | LORA_UP);
	assert_non_null(strstr(said, "LoRA on 'in_proj', 'x_proj' not counted"));
	free(said);
	/* lora_target_linear adds every linear layer, whichever key comes first */
	read_args(1, "adapter: lora\nlora_r: 8\nlora_target_modules: [q_proj]\nlora_target_linear: true\n", &t, NULL);
	assert_int_equal(t.lora_targets, LORA_ALL);
	read_args(1, "adapter: lora\nlora_r: 8\nlora_target_linear: true\nlora_target_modules: [q_proj]\n", &t, NULL);
	assert_int_equal(t.lora_targets, LORA_ALL);
	read_args(1, "adapter: lora\nlora_r: 8\nlora_target_modules: [in_proj, layer]\n", &t,
		  "'lora_target_modules' names no projection the planner models ('in_proj', 'layer')");
	read_args(1, "adapter: lora\nlora_r: 8\nlora_target_modules: 'vision_tower\\..*'\n", &t, "matches none of the decoder");
	read_args(1, "adapter: lora\nlora_r: 8\nlora_target_modules: '(q_proj'\n", &t,
		  "is not a regular expression: missing closing parenthesis at offset");
	read_args(1, "adapter: lora\nlora_r: 8\nlora_target_modules: '(.|..)*_proj_'\n", &t, "backtracks without end");
	/* Python's inline flags, as re reads them */
	read_args(1, "adapter: lora\nlora_r: 8\nlora_target_modules: '(?i).*Q_PROJ'\n", &t, NULL);
	assert_int_equal(t.lora_targets, LORA_Q);
	read_args(1, "adapter: lora\nlora_r: 8\nlora_target_modules: [[q_proj]]\n", &t, "wants module names");
	read_args(1, "adapter: lora\nlora_r: 8\nlora_target_modules: q_proj,v_proj\n", &t, NULL);
	assert_int_equal(t.lora_targets, LORA_Q | LORA_V);
	/* an axolotl file naming no optimizer (or null) runs its schema's default */
	read_args(1, "sequence_len: 2048\n", &t, NULL);
	assert_true(t.opt == OPT_ADAMW && t.fused);
	read_args(1, "sequence_len: 2048\noptimizer:\n", &t, NULL);
	assert_true(t.opt == OPT_ADAMW && t.fused);
	read_args(1, "sequence_len: 2048\noptimizer: adamw_torch\n", &t, NULL);
	assert_true(t.opt == OPT_ADAMW && !t.fused);
}

static void test_said(void **state)
{
	(void)state;

	expect_said("{}", SAID_PRECISION, NULL, PROMPT_GIVEN,
		    "precision bf16 (HF Trainer's bf16=True is amp-bf16: fp32 weights)");
	expect_said("{}", SAID_TENSORS, NULL, PROMPT_GIVEN,
		    "weights bf16, master weights none, gradients bf16, optimizer states bf16");
	expect_said("{}", SAID_RUN, NULL, PROMPT_GIVEN,
		    "optimizer adamw (foreach), batch 1 x seq 2048, no gradient checkpointing");
	expect_said("{}", SAID_PARTS, NULL, PROMPT_GIVEN, "");
	expect_said("{}", SAID_ALLOCATOR, NULL, PROMPT_GIVEN, "");
	expect_said("{}", SAID_ATTENTION, NULL, PROMPT_GIVEN,
		    "use_cache on (keys and values held to the next step; --no-use-cache if off)");
	/* inference: no optimizer or checkpointing; the prompt, the cache and the logits */
	expect_said("{\"inference\": true, \"context\": 4096}", SAID_TENSORS, NULL, PROMPT_CONTEXT,
		    "weights bf16, inference: no gradients or optimizer states");
	expect_said("{\"inference\": true, \"seq\": 4096}", SAID_RUN, NULL, PROMPT_CONTEXT,
		    "batch 1 x seq 4096 (the prompt: the whole context, as no --seq gave its length), KV cache of 4096 "
		    "tokens, logits of the last position (generate)");
	expect_said("{\"inference\": true, \"seq\": 100, \"context\": 4096, \"logits\": \"all\"}", SAID_RUN, "context",
		    PROMPT_GIVEN,
		    "batch 1 x seq 100 (the prompt), KV cache of ? tokens, logits of every position (model(input_ids))");
	expect_said("{\"inference\": true}", SAID_ATTENTION, NULL, PROMPT_DEFAULT, "use_cache on (the KV cache)");
	/* LoRA: the base frozen, the adapters' rank (solved for: "?") and targets */
	expect_said("{\"lora_rank\": 16, \"precision\": \"amp-bf16\"}", SAID_TENSORS, NULL, PROMPT_GIVEN,
		    "weights fp32 (frozen) (bf16 autocast), master weights fp32 (the adapters), gradients fp32, "
		    "optimizer states fp32");
	expect_said("{\"lora_rank\": 16, \"lora_targets\": \"all\", \"batch\": 4, \"grad_ckpt\": true}", SAID_RUN,
		    "lora_rank", PROMPT_GIVEN,
		    "optimizer adamw (foreach) on LoRA r? adapters (q,k,v,o,gate,up,down), batch 4 x seq 2048, gradient "
		    "checkpointing");
	/* ZeRO-3 without resharding; DDP; a loss in chunks */
	expect_said("{\"zero_stage\": 3, \"dp\": 4, \"reshard_after_forward\": false, \"optimizer\": \"adamw-fused\"}",
		    SAID_RUN, "batch", PROMPT_GIVEN,
		    "optimizer adamw-fused, batch ? x seq 2048, no gradient checkpointing, ZeRO-3/FSDP over 4 ranks "
		    "(no reshard after forward)");
	expect_said("{\"ddp\": true, \"dp\": 2, \"loss_chunk\": 512, \"grad_ckpt\": true}", SAID_RUN, NULL,
		    PROMPT_GIVEN,
		    "optimizer adamw (foreach), batch 1 x seq 2048, gradient checkpointing, loss in chunks of 512 tokens, "
		    "DDP over 2 ranks (per rank)");
	expect_said("{\"grad_ckpt\": true}", SAID_ATTENTION, NULL, PROMPT_GIVEN,
		    "use_cache off (checkpointing turns it off)");
	/* the fused losses and the flash kernels' names say what they are planned as */
	expect_said("{\"loss\": \"liger\"}", SAID_RUN, NULL, PROMPT_GIVEN,
		    "optimizer adamw (foreach), batch 1 x seq 2048, no gradient checkpointing, loss: Liger's fused linear "
		    "cross-entropy (chunks of about batch x seq x hidden / vocab tokens; the input's and lm_head's "
		    "gradients made in the forward; modelled, not measured)");
	expect_said("{\"loss\": \"cce\", \"grad_ckpt\": true}", SAID_RUN, NULL, PROMPT_GIVEN,
		    "optimizer adamw (foreach), batch 1 x seq 2048, gradient checkpointing, loss: Cut Cross-Entropy "
		    "(logits only in on-chip blocks, a log-sum-exp a token kept; the gradients made in the backward; "
		    "modelled, not measured)");
	expect_said("{\"attn\": \"flex_attention\", \"grad_ckpt\": true}", SAID_ATTENTION, NULL, PROMPT_GIVEN,
		    "use_cache off (checkpointing turns it off), flex_attention planned as sdpa's flash kernel, the mask "
		    "taken to be causal (its block mask's few bytes not counted); measured on an H100");
	expect_said("{\"attn\": \"sdpa\", \"grad_ckpt\": true}", SAID_ATTENTION, NULL, PROMPT_GIVEN,
		    "use_cache off (checkpointing turns it off)");
	/* SGD's momentum */
	expect_said("{\"optimizer\": \"sgd\", \"momentum\": 0.9}", SAID_RUN, NULL, PROMPT_GIVEN,
		    "optimizer sgd (momentum 0.9), batch 1 x seq 2048, no gradient checkpointing");
	/* frozen parts and fed hidden states, "; " between them; the allocator when not the default */
	expect_said("{\"freeze\": \"embed,lm_head,layers:1-3\", \"inputs_embeds\": true}", SAID_PARTS, NULL,
		    PROMPT_GIVEN,
		    "frozen (no gradient or optimizer state): embed lm_head layers 1-3; fed hidden states "
		    "(inputs_embeds), no embedding lookup");
	expect_said("{\"inputs_embeds\": true}", SAID_PARTS, NULL, PROMPT_GIVEN,
		    "fed hidden states (inputs_embeds), no embedding lookup");
	expect_said("{\"alloc_conf\": \"expandable_segments:True\"}", SAID_ALLOCATOR, NULL, PROMPT_GIVEN,
		    "allocator: expandable segments (expandable_segments:True)");
	expect_said("{\"dtype\": \"fp32\", \"autocast\": true}", SAID_PRECISION, NULL, PROMPT_GIVEN,
		    "precision amp-bf16");
	expect_said("{\"dtype\": \"bf16\", \"autocast\": true}", SAID_PRECISION, NULL, PROMPT_GIVEN, "precision (no preset)");
}

/* A row says something or is one of those known to say nothing (what they set shows in
 * the numbers, or in another row's phrase): a new setting decides which. */
static void test_said_rows(void **state)
{
	static const char *const silent[] = { "steps", "buffer", "dp", "context_bytes", "double_quant", "kbit_prepare",
					      "fsdp_reduce_dtype", "overlap_comm" };
	(void)state;

	for (size_t i = 0; setting_at(i); i++) {
		const struct setting *s = setting_at(i);
		int quiet = 0;

		for (size_t j = 0; j < sizeof(silent) / sizeof(silent[0]); j++)
			quiet |= !strcmp(s->key, silent[j]);
		if (quiet != !s->said || (s->said_on == SAID_NONE) != !s->said)
			fail_msg("row %s: %s", s->key, s->said ? "says something" : "says nothing");
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_aliases),      cmocka_unit_test(test_bad_values), cmocka_unit_test(test_flags),
		cmocka_unit_test(test_yaml),       cmocka_unit_test(test_yaml_numbers),
		cmocka_unit_test(test_yaml_documents),       cmocka_unit_test(test_trainer_args),
		cmocka_unit_test(test_axolotl),      cmocka_unit_test(test_lora_targets),      cmocka_unit_test(test_said),       cmocka_unit_test(test_said_rows),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
