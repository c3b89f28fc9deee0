/* The GPU memory planner against every measured case in tests/fixtures/gpu-train, and
 * its config reader on good and bad configs. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <errno.h>
#include <jansson.h>

#include "plan/config.h"
#include "plan/limits.h"
#include "plan/dtype.h"
#include "plan/model.h"
#include "plan/precision.h"
#include "plan/settings.h"
#include "plan/gpus.h"
#include "plan/sim.h"
#include "plan/solve.h"
#include "plan_test.h"

#ifndef FIXTURES
#define FIXTURES "tests/fixtures"
#endif

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* Cases held to a wider bound than their file's, each named with why (NULL ends). */
struct outlier {
	const char *name;
	double bound;             /* |error| at most this fraction */
};

/* A fixture file and its bounds: the median absolute error, the largest, the largest
 * under-estimate (fractions), over the cases that are not outliers (NULL: none). */
struct fixture_check {
	const char *path;
	size_t n;                 /* its cases, outliers included */
	double median_max, max_max, under_max;
	const struct outlier *out;
	const char *card;         /* planned on this GPU (its release of cached blocks), each
				   * run's fits checked: those that ran out of memory (measured
				   * "oom") not to fit, the rest to; NULL: with plenty of memory */
};

/* Cases whose allocated peak is held to a bound of its own (MiB), not 0.5 % or 160 MiB. */
static const struct outlier alloc_outliers[] = {
	/* fp32 weights without autocast: under (not traced) */
	{ "llama-0.5b-gqa/fp32-adamw-fused/b2s1024", 300 },
	{ "qwen2-0.5b/fp32-adamw/b2s1024", 400 },
	/* a prefill of 131,072 tokens grown to a 32k context: a layer's temporaries over
	 * (not traced), the device peak within 1 % */
	{ "qwen3-14b/bf16-infer/b8s16384", 2600 },
	/* FSDP2 with offloaded shards under autocast, use_cache on: over (not traced), the
	 * device peak within 2 % */
	{ "qwen3-1.7b/fsdp2x1-amp-offload/b1s4096", 250 },
	{ NULL, 0 },
};

/* Every allocated byte at the peak has a name: the components but the context and the
 * fragmentation sum to the allocated peak, and fragmentation is what is reserved beyond. */
static void assert_breakdown(const struct plan_result *r)
{
	uint64_t named = 0;

	for (int c = C_WEIGHTS; c < C_FRAGMENTATION; c++)
		named += r->bytes[c];
	assert_int_equal(named, r->allocated_peak_bytes);
	assert_int_equal(r->bytes[C_CONTEXT] + named + r->bytes[C_FRAGMENTATION], r->device_peak_bytes);
}

/* Every case of a fixture file: the parameter count exactly (and the trainable count
 * where the fixture has it), and the device peak within the check's bounds; an outlier
 * within its own bound. One test a file, state its struct fixture_check. */
static void test_fixture_file(void **state)
{
	const struct fixture_check *fc = *state;
	const char *path = fc->path;
	const struct outlier *out = fc->out;
	size_t expect_n = fc->n;
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
		if (fc->card) {
			struct fit f = { .gpu_bytes = gpus_find(fc->card)->memory_bytes };
			assert_int_equal(fit_plan(&f, &m, &t, &r, &why), 0);
			/* a run that ran out of memory is never said to fit, one that completed
			 * never said not to */
			if (json_object_get(meas, "oom")) {
				const struct outlier *k = out;
				while (k && k->name && strcmp(k->name, name))
					k++;
				printf("   %-42s OOM, %s%s\n", name, fit_ok(&f, &r) ? "said to FIT" : "not said to fit",
				       k && k->name ? " (named: past the bound)" : "");
				assert_true((k && k->name) || !fit_ok(&f, &r));
				expect_n--;
				continue;
			}
			assert_true(fit_runs(&f, &r));
		} else {
			assert_int_equal(plan_compute(&m, &t, &r, &why), 0);
		}
		assert_breakdown(&r);
		/* what the model counts: LoRA's adapters besides the base weights */
		assert_int_equal(r.params + (t.lora_rank ? r.trainable_params : 0),
				 json_integer_value(json_object_get(meas, "n_params")));
		/* (a multimodal model's vision tower requires grad but a text-only step gives
		 * it no gradient: the plan counts what trains) */
		if (json_object_get(meas, "n_trainable") && !t.inference &&
		    !json_object_get(json_object_get(c, "model"), "vision_config"))
			assert_int_equal(r.trainable_params, json_integer_value(json_object_get(meas, "n_trainable")));
		double used = (double)json_integer_value(json_object_get(meas, "device_used_by_process_bytes"));
		const struct outlier *o = out;
		while (o && o->name && strcmp(o->name, name))
			o++;
		/* one GPU: the tensors' peak as PyTorch counted it, within 0.5 % or 160 MiB (not
		 * checked for the two-GPU ranks, whose races the outliers name) */
		double alloc = (double)json_integer_value(json_object_get(meas, "torch_max_allocated_bytes"));
		if (t.dp <= 1 && alloc > 0) {
			const struct outlier *ao = alloc_outliers;
			while (ao->name && strcmp(ao->name, name))
				ao++;
			double d = fabs((double)r.allocated_peak_bytes - alloc);
			if (d > 0.005 * alloc && d > (ao->name ? ao->bound : 160) * (1 << 20))
				fail_msg("%s: allocated peak %.0f MiB off", name, d / (1 << 20));
		}
		/* expandable segments: the run's peak among the placements simulated (within
		 * 3 %, outliers aside), the plan between their extremes; otherwise no range */
		if (t.expandable && !t.inference) {
			assert_true(r.device_peak_low_bytes <= r.device_peak_bytes &&
				    r.device_peak_bytes <= r.device_peak_high_bytes);
			assert_true((o && o->name) || (used >= 0.97 * (double)r.device_peak_low_bytes &&
						       used <= 1.03 * (double)r.device_peak_high_bytes));
		} else {
			assert_true(!r.device_peak_low_bytes && !r.device_peak_high_bytes);
		}
		/* no placement escapes the live set; the peak's interval holds the measured one */
		assert_true(r.need_low_bytes <= r.need_high_bytes && (double)r.need_low_bytes <= used);
		/* (a run on a card at its edge reserved less: its cache given back) */
		assert_true((o && o->name) || ((fc->card || (double)r.peak_low_bytes <= used) &&
					       used <= (double)r.peak_high_bytes));
		err[n] = ((double)r.device_peak_bytes - used) / used;
		printf("   %-42s %+6.2f%%\n", name, err[n] * 100);
		if (o && o->name) {
			printf("   (outlier, held within %.0f%%)\n", o->bound * 100);
			assert_true(err[n] <= o->bound && -err[n] <= o->bound);
			expect_n--;
			continue;
		}
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
	assert_true(err[n / 2] <= fc->median_max);
	assert_true(err[n - 1] <= fc->max_max);
	assert_true(worst <= fc->under_max);
}

/* the 17 cases of tests/fixtures/gpu-train/h200-torch2.11.json (the figures print as the test runs) */
static const struct fixture_check fixtures = { FIXTURES "/gpu-train/h200-torch2.11.json", 17, 0.03, 0.08, 0.03, NULL, NULL };

/* headroom's own 22 cases (bench/gpu/cases/gpu-cases.json, measured on the H200 with
 * bench/gpu/gpu-measure.py): other architectures, 16k sequences, SGD with momentum, fused
 * AdamW, LoRA, inference. */
static const struct fixture_check fixtures_headroom = { FIXTURES "/gpu-train/h200-headroom.json", 22, 0.03, 0.08,
							0.03, NULL, NULL };

/* issue 13's cases (bench/gpu/cases/gpu-cases-13.json): qwen3_moe, mixtral, gemma3_text, frozen
 * parts with hidden-state inputs, expandable segments beside the same runs without,
 * full-logit inference, GPT-2 with checkpointing and GPT-2 inference (through the
 * simulation too, bench/gpu/cases/gpu-cases-gpt2-infer.json); its bounds: median 1 %, max 3 %, no
 * under-estimate past 2 %. */
static const struct fixture_check fixtures_issue13 = { FIXTURES "/gpu-train/h200-issue13.json", 37, 0.01, 0.03,
						       0.02, NULL, NULL };

/* issue 13's held-out check of our own (bench/gpu/cases/gpu-cases-13b.json): 18 cases of shapes and
 * settings in no other fixture, planned before they ran; held to the bounds of issue 13's
 * held-out cases (median 2 %, max 4 % here). */
static const struct fixture_check fixtures_issue13b = { FIXTURES "/gpu-train/h200-issue13b.json", 18, 0.02, 0.04,
							0.04, NULL, NULL };

/* a second held-out check of our own (bench/gpu/cases/gpu-cases-13d.json): 16 cases planned before
 * they ran, 13 of them with expandable segments over every family and 3 of MoE under
 * autocast; held to the bounds of issue 13's held-out MoE, gemma3_text and expandable
 * cases: median 3 %, max 6 %. */
static const struct fixture_check fixtures_issue13d = { FIXTURES "/gpu-train/h200-issue13d.json", 16, 0.03, 0.06,
							0.06, NULL, NULL };

/* a third (bench/gpu/cases/gpu-cases-13e.json): 14 cases with expandable segments, planned with
 * five placements before they ran; median 3 %, max 6 % as 13d. */
static const struct fixture_check fixtures_issue13e = { FIXTURES "/gpu-train/h200-issue13e.json", 14, 0.03, 0.06,
							0.06, NULL, NULL };

/* twelve expandable cases of 13d and 13e run for eight steps (bench/gpu/cases/gpu-cases-13f.json),
 * planned as long runs: median 3 %, max 6 %. */
static const struct fixture_check fixtures_issue13f = { FIXTURES "/gpu-train/h200-issue13f.json", 12, 0.03, 0.06,
							0.06, NULL, NULL };

/* a fourth (bench/gpu/cases/gpu-cases-13g.json): twelve qwen3 and qwen3_moe runs with fp32 weights
 * under autocast, whose q and k norms come out fp32, planned by cd94bf7 before they ran;
 * median 3 %, max 6 % as 13d. */
static const struct fixture_check fixtures_issue13g = { FIXTURES "/gpu-train/h200-issue13g.json", 12, 0.03, 0.06,
							0.06, NULL, NULL };

/* a fifth (bench/gpu/cases/gpu-cases-13i.json): 18 cases of the other families and kinds (autocast
 * with and without checkpointing, SGD with momentum, fused AdamW, LoRA, full-logit and
 * last-position inference), planned by 2be3f37 before they ran; issue 13's bounds for
 * held-out full-logit inference and the rest: median 2 %, max 4 %. */
static const struct fixture_check fixtures_issue13i = { FIXTURES "/gpu-train/h200-issue13i.json", 18, 0.02, 0.04,
							0.04, NULL, NULL };

/* a sixth (bench/gpu/cases/gpu-cases-13j.json): 18 cases over issue 13's held-out kinds, planned
 * with this round's planner before they ran; median 3 %, max 6 % as 13d. */
static const struct fixture_check fixtures_issue13j = { FIXTURES "/gpu-train/h200-issue13j.json", 18, 0.03, 0.06,
							0.06, NULL, NULL };

/* a seventh (bench/gpu/cases/gpu-cases-13k.json): 21 cases of issue 13's held-out kinds in
 * combinations no other fixture has (MoE inference, frozen MoE, MoE and gemma3_text fed
 * hidden states, gemma3_text inference, leading layers frozen under a trained embedding,
 * GPT-2 and mixtral with expandable segments), planned by 6ef730c before they ran;
 * median 3 %, max 6 % as 13d. */
static const struct fixture_check fixtures_issue13k = { FIXTURES "/gpu-train/h200-issue13k.json", 21, 0.03, 0.06,
							0.06, NULL, NULL };

/* an eighth (bench/gpu/cases/gpu-cases-13l.json): 10 cases whose sliding windows their sequences
 * reach (phi3 and mistral with a window in their configs, gemma2 at 8192, a mixtral),
 * planned by fcb2609 before they ran (then up to 12.7 % under: the planner read those
 * windows for gemma3_text only); issue 13's bounds for the rest: median 2 %, max 4 %. */
static const struct fixture_check fixtures_issue13l = { FIXTURES "/gpu-train/h200-issue13l.json", 10, 0.02, 0.04,
							0.04, NULL, NULL };

/* a ninth (bench/gpu/cases/gpu-cases-13m.json): 12 cases of kinds no other set has (LoRA on mixtral,
 * gemma3 and gemma2, 128-token sequences, a tiny model, fp32 without autocast, MoE
 * inference, half a model frozen under a trained embedding), planned by f46d833 before
 * they ran (then the LoRA mixtral 9.2 % over: its frozen experts kept their inputs);
 * issue 13's bounds for the rest: median 2 %, max 4 %. */
static const struct fixture_check fixtures_issue13m = { FIXTURES "/gpu-train/h200-issue13m.json", 12, 0.02, 0.04,
							0.04, NULL, NULL };

/* a tenth (bench/gpu/cases/gpu-cases-13n.json and -13o.json): 13 common setups no other set has
 * (LoRA on qwen3, all seven projections too, on phi3's fused projections and a windowed
 * mistral; llama at 12288 tokens; gemma fed hidden states; attention biases; GPT-2 with
 * expandable segments; qwen2 half frozen; mixtral with fused AdamW and checkpointing),
 * planned before they ran; issue 13's bounds for the rest: median 2 %, max 4 %. */
static const struct fixture_check fixtures_issue13n = { FIXTURES "/gpu-train/h200-issue13n.json", 13, 0.02, 0.04,
							0.04, NULL, NULL };

/* an eleventh (bench/gpu/cases/gpu-cases-13p.json): 12 runs with frozen layers under a trained
 * embedding (MoE, under autocast), LoRA under autocast and on the gemmas, GPT-2 under
 * autocast with expandable segments, planned by 73ec486 before they ran (then a frozen
 * llama under autocast 3.1 % under: its frozen weights' casts are kept for the input's
 * gradient; LoRA under autocast 3.6 % over); median 2 %, max 4 % but the one named. */
static const struct fixture_check fixtures_issue13p = { FIXTURES "/gpu-train/h200-issue13p.json", 12, 0.02, 0.04,
							0.04, NULL, NULL };

/* a twelfth (bench/gpu/cases/gpu-cases-13q.json): 11 runs of LoRA under autocast, layers frozen in
 * the middle and at the end, hidden states fed under autocast, a 3B llama, planned by
 * 736cd9f before they ran (its LoRA run adapting the MLP is 13t's); median 2 %, max 4 %. */
static const struct fixture_check fixtures_issue13q = { FIXTURES "/gpu-train/h200-issue13q.json", 11, 0.02, 0.04,
							0.04, NULL, NULL };

/* a thirteenth (bench/gpu/cases/gpu-cases-13r.json): 8 more LoRA and frozen setups, planned by
 * 3f024e8 before they ran (its two LoRA runs adapting the MLP under autocast are 13t's);
 * median 2 %, max 4 %. */
static const struct fixture_check fixtures_issue13r = { FIXTURES "/gpu-train/h200-issue13r.json", 8, 0.02, 0.04,
							0.04, NULL, NULL };

/* LoRA under autocast measured with PEFT's adapter form (bench/gpu/cases/gpu-cases-13t.json),
 * planned by 9ba4170 before they ran: all seven projections of qwen3, gemma3 and phi3,
 * and attention alone; median 2 %, max 4 %. */
static const struct fixture_check fixtures_issue13t = { FIXTURES "/gpu-train/h200-issue13t.json", 4, 0.02, 0.04,
							0.04, NULL, NULL };

/* the story's drafter at its 32,768 tokens a step (bench/gpu/cases/gpu-cases-13s.json), planned by
 * ce6d3be before it ran, without and with expandable segments; issue 13's bound for
 * held-out frozen/hidden-state and expandable cases, max 6 % (of two, the median the test
 * takes is the larger). */
static const struct fixture_check fixtures_issue13s = { FIXTURES "/gpu-train/h200-issue13s.json", 2, 0.06, 0.06,
							0.06, NULL, NULL };

/* 8 MoE runs in bf16, native and with expandable segments (bench/gpu/cases/gpu-cases-13u.json),
 * planned by 0875cd6 before they ran; issue 13's held-out MoE bounds, median 3 %, max
 * 6 %. */
static const struct fixture_check fixtures_issue13u = { FIXTURES "/gpu-train/h200-issue13u.json", 8, 0.03, 0.06,
							0.06, NULL, NULL };

/* 18 runs over issue 13's held-out kinds in shapes no other set has (bench/gpu/cases/gpu-cases-13v.json),
 * planned by 6cf5549 before they ran, after the experts', RMSNorm's, lm_head's and the
 * sliding mask's orders were traced (then a checkpointed mistral with its window under
 * autocast 10.9 % under, until the MLP's backward was traced too); median 2 %, max 4 %. */
static const struct fixture_check fixtures_issue13v = { FIXTURES "/gpu-train/h200-issue13v.json", 18, 0.02, 0.04,
							0.04, NULL, NULL };

/* 18 more in shapes no other set has (bench/gpu/cases/gpu-cases-13w.json), planned by d01ce61
 * before they ran, after lm_head's traced frees (then gemma3 under autocast at 4 x 2048
 * 15.8 % over, until the attention's backward was traced); issue 13's bounds for the
 * rest: median 2 %, max 4 %. */
static const struct fixture_check fixtures_issue13w = { FIXTURES "/gpu-train/h200-issue13w.json", 18, 0.02, 0.04,
							0.04, NULL, NULL };

/* issue 28's real-scale set (bench/gpu/cases/gpu-cases-28.json: 7-15 B shapes, 8k-64k tokens,
 * 64 and 128 experts, the 5120-wide drafter at 32,768 tokens, runs at the card's edge),
 * planned by 6b471d6 before it ran and planned here on the H200 itself: every run that
 * ran out of memory said not to fit, every other said to fit; median 1 %, max 3 %, no
 * under-estimate beyond 2 %. */
static const struct fixture_check fixtures_issue28 = { FIXTURES "/gpu-train/h200-issue28.json", 32, 0.01, 0.07,
						       0.02, NULL, "h200" };

/* issue 28's held-out check of our own (bench/gpu/cases/gpu-cases-28h.json: shapes and settings the
 * set above lacks), planned by 5511971 before it ran, planned here on the H200: the
 * held-out bounds, median 2 %, max 4 %, no under-estimate beyond 2 %. */
static const struct outlier outliers_issue28h[] = {
	/* with expandable segments its five placements spread its peak over 8 %: the plain
	 * run lands the last steps' logits on the highest, the run landed on the lowest
	 * (where the traced run made one fp32 copy the simulation has two norm outputs: it
	 * landed right while v's gradient was copied too, which the traced qwen3-14b does
	 * not do); over, never under */
	{ "qwen3-4b/bf16-adamw-ckpt/b2s16384/expandable", 0.09 },
	{ NULL, 0 },
};

static const struct fixture_check fixtures_issue28h = { FIXTURES "/gpu-train/h200-issue28h.json", 11, 0.02, 0.04,
							0.02, outliers_issue28h, "h200" };

/* issue 28's runs at the card's edge (bench/gpu/cases/gpu-cases-28e.json), planned before they ran:
 * llama-3.1-8b at 10,752 tokens ran at 139.64 of 139.80 GiB and fits; mistral-nemo at
 * 24,576 tokens, whose live segments with plenty of memory fit, ran out of memory in its
 * third step, as the simulation on the card does: said not to fit. */

/* (the plan's peak is the plentiful one; runs at the edge reserved less, their cache given
 * back: hence the wider bounds here and above) */
static const struct fixture_check fixtures_issue28e = { FIXTURES "/gpu-train/h200-issue28e.json", 7, 0.07, 0.07,
							0.02, NULL, "h200" };

/* issue 30's nine families and two multimodal configs (bench/gpu/cases/gpu-cases-30.json: olmo2,
 * granite, smollm3, qwen2_moe, deepseek_v3 with and without q's low rank, glm4_moe,
 * llama4_text, gpt_oss, qwen3_next, gemma3's and qwen2.5-vl's text towers, training with
 * and without checkpointing and inference), planned before they ran
 * (bench/results/gpu-cases-30-plan.md; as planned the exotic three were 7.6 % under at
 * worst, until their allocator histories were traced, and three prefills over until
 * theirs were) and planned here on the H200: median 1 %, max 3 %, no under-estimate
 * beyond 2 %. */
static const struct fixture_check fixtures_issue30 = { FIXTURES "/gpu-train/h200-issue30.json", 35, 0.01, 0.03,
						       0.02, NULL, "h200" };

/* issue 45's runs on an H100 (bench/gpu/cases/gpu-cases-45.json, gpu-trainer-45.json),
 * planned before they ran: gradient accumulation 8 against 1 on two models and four HF
 * Trainer runs under bf16=True over bf16 weights (autocast casts nothing of them), with
 * and without checkpointing and accumulation; planned here on the H100: median 1 %, max
 * 3 %, no under-estimate beyond 2 %. */
static const struct fixture_check fixtures_issue45 = { FIXTURES "/gpu-train/h100-issue45.json", 8, 0.01, 0.03,
						       0.02, NULL, "h100" };

/* issue 45's second H100 set (bench/gpu/gpu-run-45, gpu-run-45e): FSDP2's
 * MixedPrecisionPolicy (bf16 over fp32 shards, reduced in fp32 or bf16) and
 * CPUOffloadPolicy over one rank (the model loaded on the host, as accelerate does),
 * flex_attention through transformers and transformers' Adafactor, planned before they
 * ran; planned here on the H100: median 1 %, max 3 %, no under-estimate beyond 2 %. */
static const struct outlier outliers_issue45b[] = {
	/* checkpointed with offloaded shards: over (the safe side), inside its interval */
	{ "qwen3-1.7b/fsdp2x1-mp-bf16-offload-ckpt/b2s4096", 0.04 },
	{ NULL, 0 },
};
static const struct fixture_check fixtures_issue45b = { FIXTURES "/gpu-train/h100-issue45b.json", 13, 0.01, 0.03,
							0.02, outliers_issue45b, "h100" };

/* issue 13's two-GPU cases (bench/gpu/cases/gpu-dist-cases.json and -2.json on nvidia-h200-x2), one case a
 * rank: DDP and FSDP2 (fully_shard with and without resharding after the forward), bf16
 * and fp32 under autocast; each rank's peak within 3 % but for the named ones. */
static const struct outlier outliers_dist[] = {
	/* DDP's rank 0 held a second copy of the gradient buckets through the second step
	 * in two of four runs: when DDP rebuilds its buckets the old ones live on in
	 * ProcessGroupNCCL's stash until its watchdog drops the finished work, a race either
	 * rank may lose (bench/gpu/ddp-rebuild.py); the plan is the run without it */
	{ "qwen3-0.6b/ddpx2-bf16/b4s1024/rank0", 0.09 },
	{ "mistral-0.4b/ddpx2-mp/b2s4096/rank0", 0.06 },
	{ NULL, 0 },
};
static const struct fixture_check fixtures_dist = { FIXTURES "/gpu-train/h200x2-dist.json", 32, 0.03, 0.03, 0.03,
						    outliers_dist, NULL };

/* five DDP cases and one FSDP2 case of the two-GPU fixture run for 30 steps
 * (bench/gpu/cases/gpu-dist-cases-30.json), planned as long runs (eight steps simulated): each
 * rank's peak within 3 % (the DDP mistral under autocast was 5.4 % over, its simulation
 * growing in its sixth step, until the attention's backward was traced); none grew after
 * its second step. */
static const struct fixture_check fixtures_dist30 = { FIXTURES "/gpu-train/h200x2-dist30.json", 12, 0.03, 0.03,
						      0.03, NULL, NULL };

/* A fixture file's test, named after its check. */
#define FIXTURE_TEST(check) { "test_" #check, test_fixture_file, NULL, NULL, (void *)&check }

/* gemma3_text's sliding layers: from a sequence as long as the window, each hands sdpa
 * a batch x seq x seq mask that its kernel keeps for the backward (as the H200 runs
 * showed: 11 such tensors at the forward's end of gemma3-1b), and layer_types says the
 * same as the pattern */
static uint64_t gemma3_allocated(const char *extra, int64_t seq)
{
	char cfg[512];
	struct model_shape m;
	struct train_settings t;
	struct plan_result r;
	const char *why;

	snprintf(cfg, sizeof(cfg),
		 "{\"model_type\": \"gemma3_text\", \"hidden_size\": 256, \"num_hidden_layers\": 6,"
		 " \"num_attention_heads\": 4, \"num_key_value_heads\": 1, \"head_dim\": 64,"
		 " \"intermediate_size\": 512, \"vocab_size\": 1000%s}", extra);
	shape_of(cfg, &m);
	train_settings_init(&t);
	t.batch = 2, t.seq = seq, t.use_cache = 0;
	assert_int_equal(plan_compute(&m, &t, &r, &why), 0);
	return r.allocated_peak_bytes;
}

static void test_sliding_masks(void **state)
{
	(void)state;
	/* 6 layers, one full in 3: layers 0, 1, 3, 4 slide; bf16 masks of 2 x 1024 x 1024 */
	uint64_t none = gemma3_allocated(", \"sliding_window\": null", 1024);
	uint64_t masks = gemma3_allocated(", \"sliding_window\": 1024, \"sliding_window_pattern\": 3", 1024);
	uint64_t listed = gemma3_allocated(", \"sliding_window\": 1024, \"layer_types\": [\"sliding_attention\","
					   " \"sliding_attention\", \"full_attention\", \"sliding_attention\","
					   " \"sliding_attention\", \"full_attention\"]", 1024);
	uint64_t mask = 2ull * 2 * 1024 * 1024;

	assert_true(masks >= none + 3 * mask && masks <= none + 4 * mask);
	assert_int_equal(listed, masks);
	/* a window longer than the sequence: causal attention, no mask */
	assert_int_equal(gemma3_allocated(", \"sliding_window\": 1025", 1024), none);

	/* gemma2: a window of 4096 by default on every other layer */
	struct model_shape g;
	char *gerr = NULL;
	json_t *gj = json_loads("{\"model_type\": \"gemma2\", \"hidden_size\": 256, \"num_hidden_layers\": 4,"
				" \"num_attention_heads\": 4, \"num_key_value_heads\": 2, \"head_dim\": 64,"
				" \"intermediate_size\": 512, \"vocab_size\": 1000}", 0, NULL);
	assert_non_null(gj);
	assert_int_equal(model_shape_from_json(gj, &g, &gerr), 0);
	assert_int_equal(g.sliding_window, 4096);
	assert_int_equal(g.sliding_pattern, 2);
	json_object_set_new(gj, "sliding_window", json_null());
	assert_int_equal(model_shape_from_json(gj, &g, &gerr), 0);
	assert_int_equal(g.sliding_window, 0);
	json_decref(gj);
	/* mistral's window is 4096 unless its config says null; mixtral's and phi3's none
	 * unless it gives one; every layer of theirs slides */
	static const struct {
		const char *type;
		int64_t absent;
	} every[] = { { "mistral", 4096 }, { "mixtral", 0 }, { "phi3", 0 } };
	for (size_t i = 0; i < sizeof(every) / sizeof(every[0]); i++) {
		char c[256];
		snprintf(c, sizeof(c), "{\"model_type\": \"%s\", \"hidden_size\": 256, \"num_hidden_layers\": 4,"
			 " \"num_attention_heads\": 4, \"intermediate_size\": 512, \"vocab_size\": 1000}", every[i].type);
		gj = json_loads(c, 0, NULL);
		assert_non_null(gj);
		assert_int_equal(model_shape_from_json(gj, &g, &gerr), 0);
		assert_int_equal(g.sliding_window, every[i].absent);
		json_object_set_new(gj, "sliding_window", json_integer(2047));
		assert_int_equal(model_shape_from_json(gj, &g, &gerr), 0);
		assert_int_equal(g.sliding_window, 2047);
		assert_true(g.sliding_pattern > g.layers);
		json_object_set_new(gj, "sliding_window", json_null());
		assert_int_equal(model_shape_from_json(gj, &g, &gerr), 0);
		assert_int_equal(g.sliding_window, 0);
		json_decref(gj);
	}

	/* masks past the planner's limit are refused, not planned: 64 x 2^24 x 2^24 x 2 B a
	 * layer, where the other activations stay far below it */
	struct model_shape m;
	struct train_settings t;
	struct plan_result r;
	const char *why;

	shape_of("{\"model_type\": \"gemma3_text\", \"hidden_size\": 64, \"num_hidden_layers\": 1,"
		 " \"num_attention_heads\": 1, \"head_dim\": 64, \"intermediate_size\": 64,"
		 " \"vocab_size\": 100, \"sliding_window\": 512}", &m);
	train_settings_init(&t);
	t.batch = 64, t.seq = 1 << 24;
	assert_int_equal(plan_compute(&m, &t, &r, &why), -E2BIG);
	assert_non_null(strstr(why, "with sliding windows batch x seq x seq"));
	m.sliding_window = 0; /* the same without sliding layers: within the limit */
	assert_int_equal(plan_compute(&m, &t, &r, &why), 0);
}

/* Expandable segments: the plain run and the jittered ones are each the same every time
 * (a plan is a function of its input), steps past the simulation's are refused; a plan
 * with expandable segments lies within its placements' range and is the same every time
 * (they run on threads), one without has none. */
static void test_placements(void **state)
{
	(void)state;
	struct model_shape m;
	struct train_settings t;
	struct sim_result a, b;
	struct plan_result r;
	const char *why;

	shape_of("{\"model_type\": \"llama\", \"hidden_size\": 1024, \"num_hidden_layers\": 8,"
		 " \"num_attention_heads\": 16, \"num_key_value_heads\": 4, \"intermediate_size\": 2816,"
		 " \"vocab_size\": 32000}", &m);
	train_settings_init(&t);
	t.batch = 4, t.seq = 2048, t.expandable = 1;
	for (uint64_t seed = 0; seed < 3; seed++) {
		assert_int_equal(sim_train(&m, &t, 4, seed, &a), 0);
		assert_int_equal(sim_train(&m, &t, 4, seed, &b), 0);
		assert_memory_equal(&a, &b, sizeof(a));
		assert_true(a.max_allocated_bytes <= a.max_reserved_bytes);
	}
	/* the jitter moves blocks: some seed's run is not the plain one's */
	int moved = 0;
	assert_int_equal(sim_train(&m, &t, 4, 0, &b), 0);
	for (uint64_t seed = 1; seed < 5; seed++) {
		assert_int_equal(sim_train(&m, &t, 4, seed, &a), 0);
		moved |= memcmp(&a, &b, sizeof(a)) != 0;
	}
	assert_true(moved);
	assert_int_equal(sim_train(&m, &t, 0, 0, &a), -EINVAL);
	assert_int_equal(sim_train(&m, &t, SIM_MAX_STEPS + 1, 0, &a), -EINVAL);

	assert_int_equal(plan_compute(&m, &t, &r, &why), 0);
	assert_true(r.device_peak_low_bytes > 0);
	assert_true(r.device_peak_low_bytes <= r.device_peak_bytes && r.device_peak_bytes <= r.device_peak_high_bytes);
	/* the plan is two fifths of the way from the plain run's reserved peak (over the
	 * plan's steps) to the highest placement's (the jittered ones over at most
	 * PLAN_JITTER_STEPS), to the byte, rounding aside; the context beside it */
	int steps = plan_sim_steps(&t), js = steps < PLAN_JITTER_STEPS ? steps : PLAN_JITTER_STEPS;
	int64_t lo = 0, hi = 0;
	assert_int_equal(sim_train(&m, &t, steps, 0, &b), 0);
	for (uint64_t seed = 1; seed < PLAN_PLACEMENTS; seed++) {
		assert_int_equal(sim_train(&m, &t, js, seed, &a), 0);
		int64_t d = (int64_t)a.max_reserved_bytes - (int64_t)b.max_reserved_bytes;
		lo = d < lo ? d : lo, hi = d > hi ? d : hi;
	}
	assert_true(hi > 0 && hi > lo); /* (else any plan would pass) */
	int64_t want = (int64_t)b.max_reserved_bytes + hi * 2 / 5;
	assert_true(llabs((int64_t)(r.device_peak_bytes - r.bytes[C_CONTEXT]) - want) <= 1);
	assert_int_equal(r.device_peak_high_bytes - r.device_peak_low_bytes, (uint64_t)(hi - lo));
	for (int i = 0; i < 8; i++) {
		struct plan_result again;
		assert_int_equal(plan_compute(&m, &t, &again, &why), 0);
		assert_memory_equal(&again, &r, sizeof(r));
	}
	t.expandable = 0;
	assert_int_equal(plan_compute(&m, &t, &r, &why), 0);
	assert_true(!r.device_peak_low_bytes && !r.device_peak_high_bytes);
}

static void test_config_errors(void **state)
{
	(void)state;
	shape_refused("{\"hidden_size\": 8}", "missing model_type");
	shape_refused("{\"model_type\": \"gemma3_text\", \"hidden_size\": 64, \"num_hidden_layers\": 3,"
		      " \"num_attention_heads\": 4, \"intermediate_size\": 128, \"vocab_size\": 100,"
		      " \"layer_types\": [\"sliding_attention\", \"full_attention\"]}", "layer_types must list 3 layers");
	shape_refused("{\"model_type\": \"gemma3_text\", \"hidden_size\": 64, \"num_hidden_layers\": 3,"
		      " \"num_attention_heads\": 4, \"intermediate_size\": 128, \"vocab_size\": 100,"
		      " \"layer_types\": [\"full_attention\", \"sliding_attention\", \"sliding_attention\"]}",
		      "layer_types must list");
	shape_refused("{\"model_type\": \"gemma3_text\", \"hidden_size\": 64, \"num_hidden_layers\": 3,"
		      " \"num_attention_heads\": 4, \"intermediate_size\": 128, \"vocab_size\": 100,"
		      " \"sliding_window\": 0}", "sliding_window must be a whole number");
	shape_refused("{\"model_type\": \"bert\"}", "'bert' is not supported");
	shape_refused("{\"model_type\": \"llama\", \"hidden_size\": 64, \"num_hidden_layers\": 2,"
		      " \"num_attention_heads\": 4, \"vocab_size\": 100}", "missing intermediate_size");
	shape_refused("{\"model_type\": \"mistral\", \"hidden_size\": 64, \"num_hidden_layers\": -2}",
		      "num_hidden_layers must be a whole number from 1 to 1024");
	shape_refused("{\"model_type\": \"llama\", \"hidden_size\": 64, \"num_hidden_layers\": 2, \"intermediate_size\": 128,"
		      " \"num_attention_heads\": 6, \"num_key_value_heads\": 4, \"vocab_size\": 100, \"head_dim\": 16}",
		      "not a multiple of 4 key/value heads");
	shape_refused("{\"model_type\": \"gpt2\", \"n_embd\": 64, \"n_head\": 4, \"vocab_size\": 100}", "missing n_layer");
}

static void test_shapes(void **state)
{
	(void)state;
	/* qwen3: q/k norms, explicit head_dim wider than hidden / heads */
	struct model_shape m;

	shape_of("{\"model_type\": \"qwen3\", \"hidden_size\": 1024, \"num_hidden_layers\": 28,"
		 " \"num_attention_heads\": 16, \"num_key_value_heads\": 8, \"head_dim\": 128,"
		 " \"intermediate_size\": 3072, \"vocab_size\": 151936, \"tie_word_embeddings\": true}", &m);
	assert_int_equal(model_family(&m)->qk_norm, QK_NORM_EACH);
	assert_int_equal(m.head_dim, 128);
	/* Qwen3-0.6B has 596,049,920 parameters */
	assert_int_equal(model_params(&m), 596049920);
}

/* An untied GPT-2 (tie_word_embeddings false) loads its own lm_head, as its parameter
 * count says, and FSDP2's root gathers every one of its five weights (the embeddings,
 * the final LayerNorm's weight and bias, lm_head). */
static void test_gpt2_untied(void **state)
{
	(void)state;
	const char *cfg = "{\"model_type\": \"gpt2\", \"n_embd\": 256, \"n_layer\": 2, \"n_head\": 4,"
			  " \"vocab_size\": 50257, \"tie_word_embeddings\": %s}";
	struct model_shape m;
	struct train_settings t;
	struct plan_result tied, untied, z3;
	const char *why;
	char buf[256];

	snprintf(buf, sizeof(buf), cfg, "true");
	shape_of(buf, &m);
	train_settings_init(&t);
	assert_int_equal(plan_compute(&m, &t, &tied, &why), 0);
	snprintf(buf, sizeof(buf), cfg, "false");
	shape_of(buf, &m);
	assert_int_equal(plan_compute(&m, &t, &untied, &why), 0);
	assert_int_equal(untied.params - tied.params, 50257 * 256);
	assert_true(untied.bytes[C_WEIGHTS] >= tied.bytes[C_WEIGHTS] + 2 * 50257 * 256);
	t.zero_stage = 3;
	t.dp = 2;
	assert_int_equal(plan_compute(&m, &t, &z3, &why), 0);
	assert_true(z3.bytes[C_WEIGHTS] < untied.bytes[C_WEIGHTS]);
}

static void test_knobs(void **state)
{
	(void)state;
	struct model_shape m;
	struct train_settings t;
	struct plan_result full, chunked, lora, inf, zero, buf;
	const char *why;

	shape_of("{\"model_type\": \"llama\", \"hidden_size\": 2048, \"num_hidden_layers\": 16,"
		 " \"num_attention_heads\": 32, \"num_key_value_heads\": 8, \"intermediate_size\": 8192,"
		 " \"vocab_size\": 128256}", &m);
	train_settings_init(&t);
	t.batch = 4;
	assert_int_equal(plan_compute(&m, &t, &full, &why), 0);
	assert_breakdown(&full);
	/* chunking the loss leaves one chunk's fp32 copies at a time (each chunk's
	 * log-softmax is kept): the logits at the peak and the peak shrink */
	t.loss_chunk = 1024;
	assert_int_equal(plan_compute(&m, &t, &chunked, &why), 0);
	assert_breakdown(&chunked);
	assert_true(chunked.bytes[C_LOGITS] * 3 < full.bytes[C_LOGITS] * 2);
	assert_true(chunked.device_peak_bytes < full.device_peak_bytes);
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
	/* issue 13: ZeRO over one rank, or ranks without ZeRO (which plans one GPU all the
	 * same), were accepted silently: each names what to add */
	t.dp = 1;
	assert_int_equal(plan_compute(&m, &t, &zero, &why), -EINVAL);
	assert_non_null(strstr(why, "add --dp N"));
	t.zero_stage = 0;
	t.dp = 8;
	assert_int_equal(plan_compute(&m, &t, &zero, &why), -EINVAL);
	assert_non_null(strstr(why, "--dp wants --zero 1, 2 or 3"));
	/* DDP over 8 ranks plans: a whole replica a rank, and its gradient buckets */
	t.ddp = 1;
	assert_int_equal(plan_compute(&m, &t, &zero, &why), 0);
	assert_true(zero.device_peak_bytes > full.device_peak_bytes);
	t.zero_stage = 2;
	assert_int_equal(plan_compute(&m, &t, &zero, &why), -EINVAL);
	assert_non_null(strstr(why, "without ZeRO"));
	t.zero_stage = 0, t.ddp = 0;
	t.dp = 1;
	/* a prefetch queue of 50 x 100 MiB is added as it is */
	assert_int_equal(buffer_spec_parse("queue=50x100MiB", &t.buffers[0]), 0);
	t.nbuffers = 1;
	assert_int_equal(plan_compute(&m, &t, &buf, &why), 0);
	assert_int_equal(buf.device_peak_bytes - full.device_peak_bytes, 50ULL * 100 * 1024 * 1024);
	/* issue 45: 100MB is 10^8 bytes (each item rounded up to the allocator's 2 MiB), not MiB */
	assert_int_equal(buffer_spec_parse("queue=50x100MB", &t.buffers[0]), 0);
	assert_int_equal(t.buffers[0].item_bytes, 100000000);
	assert_int_equal(plan_compute(&m, &t, &buf, &why), 0);
	assert_true(buf.device_peak_bytes - full.device_peak_bytes >= 50ULL * 100000000);
	assert_true(buf.device_peak_bytes - full.device_peak_bytes < 50ULL * (100000000 + 2 * 1024 * 1024));
	assert_int_equal(buffer_spec_parse("queue=50x100", &t.buffers[0]), -EDOM); /* 100 what? */
	t.nbuffers = 0;
	/* inference: a KV cache, no gradients */
	t.inference = 1;
	t.opt = OPT_NONE;
	t.context = 8192;
	assert_int_equal(plan_compute(&m, &t, &inf, &why), 0);
	/* the whole context's cache, and at the peak one layer's prefill cache not yet let go */
	uint64_t cache = 2ULL * 16 * 4 * 8192 * 512 * 2, prefill_layer = 2ULL * 4 * 2048 * 512 * 2;
	assert_true(inf.bytes[C_KV_CACHE] >= cache && inf.bytes[C_KV_CACHE] <= cache + prefill_layer);
	assert_breakdown(&inf);
	assert_int_equal(inf.bytes[C_GRADS], 0);
	/* nonsense */
	t.batch = 0;
	assert_int_not_equal(plan_compute(&m, &t, &inf, &why), 0);
	assert_non_null(why);
}

#define LLAMA "\"model_type\": \"llama\", \"intermediate_size\": 8192, \"num_attention_heads\": 32"

/* Every field of config.json is range-checked where it is read (plan/limits.h): past
 * the limits the products of the plan would wrap (issue 12: vocab_size 2^50 gave a
 * negative device peak, num_hidden_layers 1e9 ran out of memory). */
static void test_config_limits(void **state)
{
	(void)state;
	shape_refused("{" LLAMA ", \"hidden_size\": 2048, \"num_hidden_layers\": 16, \"vocab_size\": 1125899906842624}",
		      "vocab_size must be a whole number from 1 to 16777216");
	shape_refused("{" LLAMA ", \"hidden_size\": 2048, \"num_hidden_layers\": 1000000000, \"vocab_size\": 100}",
		      "num_hidden_layers must be a whole number from 1 to 1024");
	shape_refused("{" LLAMA ", \"hidden_size\": 2048, \"num_hidden_layers\": 1e9, \"vocab_size\": 100}",
		      "num_hidden_layers must be a whole number");
	shape_refused("{" LLAMA ", \"hidden_size\": 9223372036854775807, \"num_hidden_layers\": 2, \"vocab_size\": 100}",
		      "hidden_size must be a whole number from 1 to 4194304");
	shape_refused("{" LLAMA ", \"hidden_size\": 2048, \"num_hidden_layers\": 2, \"vocab_size\": 100, \"head_dim\": -1}",
		      "head_dim must be a whole number from 1 to 65536");
	shape_refused("{" LLAMA ", \"hidden_size\": 2048, \"num_hidden_layers\": 2, \"vocab_size\": 100,"
		      " \"num_key_value_heads\": 4294967296}", "num_key_value_heads must be a whole number from 1 to 65536");
	shape_refused("{\"model_type\": \"gpt2\", \"n_embd\": 64, \"n_layer\": 2, \"n_head\": 4, \"vocab_size\": 100,"
		      " \"n_positions\": 99999999999}", "n_positions must be a whole number from 1 to 16777216");
}

#define SMALL LLAMA ", \"hidden_size\": 2048, \"num_hidden_layers\": 2, \"vocab_size\": 100"
#define GEMMA3(text, top) "{\"model_type\": \"gemma3\", \"text_config\": {\"hidden_size\": 64," \
	" \"num_hidden_layers\": 2, \"num_attention_heads\": 4, \"intermediate_size\": 128, \"vocab_size\": 100" text "}" top "}"

/* The model's longest sequence is read with its shape, range-checked as every field is
 * (issue 43: max_position_embeddings -5, "4096" or 4096.0 was taken as absent, so that
 * --strict passed and --solve seq had no bound). */
static void test_max_length(void **state)
{
	static const char *const bad[] = { "-5", "0", "\"4096\"", "4096.0", "true", "[4096]", "1073741825",
					   "99999999999" };
	const char *range = "max_position_embeddings must be a whole number from 1 to 1073741824";
	struct model_shape m;
	char cfg[512];
	(void)state;

	shape_of("{" SMALL ", \"max_position_embeddings\": 131072}", &m);
	assert_int_equal(m.max_length, 131072);
	shape_of("{" SMALL ", \"max_position_embeddings\": 33554432}", &m); /* a cap past the seq limit */
	assert_int_equal(m.max_length, 33554432);
	shape_of("{" SMALL ", \"n_positions\": 4096}", &m);
	assert_int_equal(m.max_length, 4096);
	shape_of("{" SMALL "}", &m);
	assert_int_equal(m.max_length, 0);
	shape_of("{" SMALL ", \"max_position_embeddings\": null}", &m);
	assert_int_equal(m.max_length, 0);
	shape_of("{\"model_type\": \"gpt2\", \"n_embd\": 64, \"n_layer\": 2, \"n_head\": 4, \"vocab_size\": 100}", &m);
	assert_int_equal(m.max_length, 1024); /* GPT2Config's n_positions */
	shape_of("{\"model_type\": \"gpt2\", \"n_embd\": 64, \"n_layer\": 2, \"n_head\": 4, \"vocab_size\": 100,"
		 " \"max_position_embeddings\": 2048}", &m);
	assert_true(m.max_length == 2048 && m.positions == 2048);
	shape_of(GEMMA3(", \"max_position_embeddings\": 32768", ""), &m);
	assert_int_equal(m.max_length, 32768);
	shape_of(GEMMA3("", ", \"max_position_embeddings\": 8192"), &m); /* the top level's, when text_config has none */
	assert_int_equal(m.max_length, 8192);
	shape_of(GEMMA3(", \"max_position_embeddings\": 32768", ", \"max_position_embeddings\": 8192"), &m);
	assert_int_equal(m.max_length, 32768);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(cfg, sizeof(cfg), "{" SMALL ", \"max_position_embeddings\": %s}", bad[i]);
		shape_refused(cfg, range);
		snprintf(cfg, sizeof(cfg), GEMMA3(", \"max_position_embeddings\": %s", ""), bad[i]);
		shape_refused(cfg, range);
		snprintf(cfg, sizeof(cfg), GEMMA3("", ", \"max_position_embeddings\": %s"), bad[i]);
		shape_refused(cfg, range);
	}
	shape_refused("{" SMALL ", \"n_positions\": -5}", "n_positions must be a whole number from 1 to 1073741824");
	shape_refused("{\"model_type\": \"gpt2\", \"n_embd\": 64, \"n_layer\": 2, \"n_head\": 4, \"vocab_size\": 100,"
		      " \"n_positions\": 4096.0}", "n_positions must be a whole number from 1 to 16777216");
}

/* The precision key plans as the settings it stands for: amp-bf16 as fp32 weights under
 * autocast (the fixtures' "mp" cases), bf16 as the default. */
static void test_precision_key(void **state)
{
	struct model_shape m;
	struct train_settings t, u;
	struct plan_result a, b;
	const char *why;
	char *err = NULL;
	json_t *j = json_loads("{\"model_type\": \"llama\", \"hidden_size\": 512, \"num_hidden_layers\": 4,"
			       " \"num_attention_heads\": 8, \"intermediate_size\": 1024, \"vocab_size\": 1000}", 0, NULL),
	       *amp = json_loads("{\"precision\": \"amp-bf16\", \"batch\": 2}", 0, NULL),
	       *mp = json_loads("{\"param_dtype\": \"fp32\", \"autocast\": true, \"batch\": 2, \"attn\": \"sdpa\"}", 0, NULL);
	(void)state;

	assert_int_equal(model_shape_from_json(j, &m, &err), 0);
	train_settings_init(&t);
	train_settings_init(&u);
	assert_int_equal(train_settings_from_json(amp, &t, &err), 0);
	assert_int_equal(train_settings_from_json(mp, &u, &err), 0);
	assert_int_equal(t.param_bytes, 4);
	assert_true(t.autocast);
	assert_int_equal(plan_compute(&m, &t, &a, &why), 0);
	assert_int_equal(plan_compute(&m, &u, &b, &why), 0);
	assert_memory_equal(a.bytes, b.bytes, sizeof(a.bytes));
	assert_int_equal(a.device_peak_bytes, b.device_peak_bytes);
	json_decref(j);
	json_decref(amp);
	json_decref(mp);
}

static void expect_settings_error(const char *train, const char *needle)
{
	json_t *j = json_loads(train, 0, NULL);
	struct train_settings t;
	char *err = NULL;

	assert_non_null(j);
	train_settings_init(&t);
	assert_int_equal(train_settings_from_json(j, &t, &err), -EINVAL);
	assert_non_null(err);
	if (!strstr(err, needle))
		fail_msg("'%s' does not say '%s'", err, needle);
	free(err);
	json_decref(j);
}

/* The settings' keys likewise: a zero stage that wrapped to 1 through an int, a momentum
 * of 1e308, a buffer of a billion items or of no count. */
static void test_settings_limits(void **state)
{
	(void)state;
	expect_settings_error("{\"zero_stage\": 4294967297}", "'zero_stage' wants a whole number from 0 to 3");
	expect_settings_error("{\"batch\": 9223372036854775807}", "'batch' wants a whole number from 1 to 1048576");
	expect_settings_error("{\"batch\": 0}", "'batch' wants a whole number from 1 to 1048576");
	expect_settings_error("{\"dp\": 2000000}", "'dp' wants a whole number from 1 to 1048576");
	expect_settings_error("{\"lora_rank\": -1}", "'lora_rank' wants a whole number from 0 to 65536");
	expect_settings_error("{\"context\": 99999999999}", "'context' wants a whole number from 0 to 16777216");
	expect_settings_error("{\"momentum\": 1e308}", "'momentum' wants a number from 0 to below 1");
	expect_settings_error("{\"momentum\": 1}", "'momentum' wants a number from 0 to below 1");
	expect_settings_error("{\"buffers\": {\"q\": \"1000000000x1\"}}", "COUNT from 1 to 65536");
	expect_settings_error("{\"buffers\": {\"q\": \"x1G\"}}", "COUNTxSIZE");
	expect_settings_error("{\"context_bytes\": 9223372036854775807}", "from 1B to 1 TiB");
	/* issue 13: precision presets, refused beside the settings they set, and an
	 * attention the planner does not model */
	expect_settings_error("{\"precision\": \"amp\"}", "'precision' wants bf16, amp-bf16");
	expect_settings_error("{\"precision\": 16}", "'precision' wants bf16, amp-bf16");
	expect_settings_error("{\"precision\": \"fp32\", \"autocast\": true}", "give it or them, not both");
	expect_settings_error("{\"param_dtype\": \"fp32\", \"precision\": \"bf16\"}", "give it or them, not both");
	expect_settings_error("{\"attn\": \"eager\"}", "'attn' wants sdpa");

	struct buffer_spec b;
	static const char *const bad[] = { "q=x1G", "q=0x1G", "q=99999999999999999999x1", "q=65537x1", "q=-1x1",
					   "q= 5x1", "q=5x", "q=5x0", "q=2T", "=5x1", NULL };
	for (int i = 0; bad[i]; i++)
		if (!buffer_spec_parse(bad[i], &b))
			fail_msg("buffer '%s' was accepted", bad[i]);
	assert_int_equal(buffer_spec_parse("queue=65536x1T", &b), 0);
	assert_int_equal(b.count, 65536);
	assert_int_equal(buffer_spec_parse("one=1G", &b), 0);
	assert_int_equal(b.count, 1);
	assert_int_equal(b.item_bytes, 1ULL << 30);
}

/* PEFT's modules_to_save: each copy is a trained vocab x hidden weight in the weights'
 * dtype, with its gradient and AdamW's two states; the originals stay. */
static void test_lora_save(void **state)
{
	struct model_shape m;
	struct train_settings t;
	struct plan_result none, head, both;
	const char *why;

	(void)state;
	llama1b(&m, &t);
	t.param_bytes = DT_BF16, t.autocast = 0, t.lora_rank = 16, t.batch = 2;
	uint64_t vh = (uint64_t)m.vocab * (uint64_t)m.hidden * DT_BF16;
	assert_int_equal(plan_compute(&m, &t, &none, &why), 0);
	t.lora_save = LORA_SAVE_HEAD;
	assert_int_equal(plan_compute(&m, &t, &head, &why), 0);
	t.lora_save = LORA_SAVE_EMBED | LORA_SAVE_HEAD;
	assert_int_equal(plan_compute(&m, &t, &both, &why), 0);
	assert_int_equal(head.trainable_params - none.trainable_params, m.vocab * m.hidden);
	assert_int_equal(both.trainable_params - none.trainable_params, 2 * m.vocab * m.hidden);
	/* the copy and its two states at least; each copy more */
	assert_true(head.allocated_peak_bytes >= none.allocated_peak_bytes + 3 * vh);
	assert_true(both.allocated_peak_bytes >= head.allocated_peak_bytes + 3 * vh);
	assert_true(both.bytes[C_OPT_STATES] >= none.bytes[C_OPT_STATES] + 4 * vh);
	/* LoRA's and in training only; not sharded */
	t.zero_stage = 3, t.dp = 8;
	assert_int_equal(plan_compute(&m, &t, &both, &why), -EINVAL);
	assert_non_null(strstr(why, "under FSDP or ZeRO-3"));
	t.zero_stage = 0, t.dp = 1, t.lora_rank = 0;
	assert_int_equal(plan_compute(&m, &t, &both, &why), -EINVAL);
	assert_non_null(strstr(why, "lora_save"));
}

/* Issue 45: the fused losses make no full logits. Llama-3.1-8B's shape at a long
 * sequence, LoRA (so the loss's transients can make the peak): Liger's and Cut
 * Cross-Entropy's logits at the peak are far below the plain loss's and at most a
 * chunked loss's, and so is the peak; in every precision. A chunk size beside them,
 * or a flash kernel's name where sdpa's flash kernel is not what runs, is refused. */
static void test_fused_losses(void **state)
{
	static const char *const precisions[] = { "bf16", "amp-bf16" };
	struct model_shape m;
	const char *why;
	(void)state;

	shape_of("{\"model_type\": \"llama\", \"hidden_size\": 4096, \"intermediate_size\": 14336,"
		 " \"num_hidden_layers\": 32, \"num_attention_heads\": 32, \"num_key_value_heads\": 8,"
		 " \"vocab_size\": 128256, \"max_position_embeddings\": 131072, \"tie_word_embeddings\": false}", &m);
	for (size_t p = 0; p < sizeof(precisions) / sizeof(precisions[0]); p++) {
		struct train_settings t;
		struct plan_result plain, chunked, fused[2];
		static const enum loss_kind kinds[] = { LOSS_LIGER, LOSS_CCE };

		train_settings_init(&t);
		assert_int_equal(precision_apply(&t, precisions[p]), 0);
		t.seq = 8192, t.lora_rank = 16, t.grad_ckpt = 1;
		assert_int_equal(plan_compute(&m, &t, &plain, &why), 0);
		/* the plain loss keeps each token's fp32 log-softmax at least */
		assert_true(plain.bytes[C_LOGITS] >= (uint64_t)t.seq * (uint64_t)m.vocab * 4);
		t.loss_chunk = 1024;
		assert_int_equal(plan_compute(&m, &t, &chunked, &why), 0);
		t.loss_chunk = 0;
		for (int k = 0; k < 2; k++) {
			t.loss = kinds[k];
			assert_int_equal(plan_compute(&m, &t, &fused[k], &why), 0);
			assert_breakdown(&fused[k]);
			assert_true(fused[k].bytes[C_LOGITS] * 4 < plain.bytes[C_LOGITS]);
			assert_true(fused[k].bytes[C_LOGITS] <= chunked.bytes[C_LOGITS]);
			assert_true(fused[k].device_peak_bytes < chunked.device_peak_bytes);
			assert_true(fused[k].need_high_bytes <= chunked.need_high_bytes);
		}
		/* Liger's chunk is its own */
		t.loss = LOSS_LIGER, t.loss_chunk = 1024;
		assert_int_equal(plan_compute(&m, &t, &fused[0], &why), -EINVAL);
		assert_non_null(strstr(why, "loss_chunk chunks the plain loss"));
	}
	struct train_settings t;
	struct plan_result r;
	train_settings_init(&t);
	assert_int_equal(setting_apply(setting_find("attn"), &t, "flash_attention_2"), 0);
	assert_int_equal(plan_compute(&m, &t, &r, &why), 0);
	assert_int_equal(precision_apply(&t, "fp32"), 0);
	assert_int_equal(plan_compute(&m, &t, &r, &why), -EINVAL);
	assert_non_null(strstr(why, "flash kernels run in bf16 or fp16"));
	assert_int_not_equal(setting_apply(setting_find("attn"), &t, "kernels-community/flash-attn"), 0);
}

/* Gradient accumulation: from the second micro-batch the gradients are resident through
 * the forward and backward, each new one added in and let go, so a step whose backward
 * peaks holds the gradients more (at most them and the largest of them); every count
 * from two plans alike; with ZeRO-2/3 it is planned as one micro-batch. */
static void test_grad_accum(void **state)
{
	struct model_shape m;
	struct train_settings t;
	struct plan_result one, two, many;
	const char *why;
	(void)state;

	llama1b(&m, &t);
	t.seq = 4096;
	assert_int_equal(plan_compute(&m, &t, &one, &why), 0);
	assert_string_equal(one.peak_phase, "backward");
	t.grad_accum = 2;
	assert_int_equal(plan_compute(&m, &t, &two, &why), 0);
	t.grad_accum = 64;
	assert_int_equal(plan_compute(&m, &t, &many, &why), 0);
	uint64_t grads = (uint64_t)one.trainable_params * 2; /* bf16 gradients */
	assert_true(two.allocated_peak_bytes > one.allocated_peak_bytes + grads / 2);
	assert_true(two.allocated_peak_bytes <= one.allocated_peak_bytes + grads + grads / 4);
	assert_int_equal(many.allocated_peak_bytes, two.allocated_peak_bytes);
	assert_int_equal(many.need_low_bytes, two.need_low_bytes);
	assert_true(two.need_low_bytes > one.need_low_bytes);
	/* ZeRO-2 reduce-scatters each micro-batch: planned as one, not refused */
	t.dp = 4;
	t.zero_stage = 2;
	assert_int_equal(plan_compute(&m, &t, &many, &why), 0);
	t.grad_accum = 1;
	assert_int_equal(plan_compute(&m, &t, &one, &why), 0);
	assert_int_equal(many.allocated_peak_bytes, one.allocated_peak_bytes);
}

/* Settings that would wrap a product (issue 12: --batch 9223372036854775807 planned
 * "6.32 GiB, fits") are refused by plan_compute itself, whoever calls it: out of range
 * -EINVAL, too large to plan -E2BIG; a plan within the limits has a peak below them. */
static void test_overflow(void **state)
{
	struct model_shape m;
	struct train_settings t;
	struct plan_result r;
	const char *why;

	(void)state;
	llama1b(&m, &t);
	t.batch = INT64_MAX;
	assert_int_equal(plan_compute(&m, &t, &r, &why), -EINVAL);
	assert_string_equal(why, "batch must be from 1 to 1048576");
	t.batch = 1;
	t.zero_stage = 1;
	t.dp = (int64_t)1 << 40;
	assert_int_equal(plan_compute(&m, &t, &r, &why), -EINVAL);
	assert_string_equal(why, "dp must be from 1 to 1048576");
	t.zero_stage = 0;
	t.dp = 1;
	t.lora_rank = INT64_MAX / 2;
	assert_int_equal(plan_compute(&m, &t, &r, &why), -EINVAL);
	t.lora_rank = 0;
	/* each within its range, together too large: 2^44 tokens */
	t.batch = PLAN_MAX_BATCH;
	t.seq = PLAN_MAX_SEQ;
	assert_int_equal(plan_compute(&m, &t, &r, &why), -E2BIG);
	assert_non_null(strstr(why, "the plan is too large: the activations"));
	/* a narrow model with a wide vocabulary: the logits of 4M tokens */
	m = (struct model_shape){ .type = "llama", .hidden = 64, .layers = 1, .heads = 1, .kv_heads = 1, .head_dim = 64,
				  .intermediate = 64, .vocab = PLAN_MAX_VOCAB };
	t.batch = 1;
	t.seq = 4 << 20;
	assert_int_equal(plan_compute(&m, &t, &r, &why), -E2BIG);
	assert_non_null(strstr(why, "the logits (batch x seq x vocab_size) pass the planner's limit of 1 PiB"));
	llama1b(&m, &t);
	t.batch = 1;
	t.seq = 2048;
	m.vocab = PLAN_MAX_VOCAB;
	m.hidden = PLAN_MAX_WIDTH;
	m.heads = m.kv_heads = 1;
	m.head_dim = 64;
	assert_int_equal(plan_compute(&m, &t, &r, &why), -E2BIG);
	assert_non_null(strstr(why, "the weights and optimizer states"));
	/* fp32 attention keeps batch x heads x seq x seq probabilities */
	llama1b(&m, &t);
	t.param_bytes = 4;
	t.seq = PLAN_MAX_SEQ;
	assert_int_equal(plan_compute(&m, &t, &r, &why), -E2BIG);
	assert_non_null(strstr(why, "the activations"));
	/* the KV cache of inference */
	llama1b(&m, &t);
	t.inference = 1;
	t.opt = OPT_NONE;
	t.batch = PLAN_MAX_BATCH;
	t.seq = 1;
	t.context = PLAN_MAX_SEQ;
	assert_int_equal(plan_compute(&m, &t, &r, &why), -E2BIG);
	assert_non_null(strstr(why, "the KV cache"));
	/* the buffers */
	llama1b(&m, &t);
	for (int i = 0; i < PLAN_MAX_BUFFERS; i++)
		assert_int_equal(buffer_spec_parse("q=65536x1T", &t.buffers[t.nbuffers++]), 0);
	assert_int_equal(plan_compute(&m, &t, &r, &why), -E2BIG);
	assert_non_null(strstr(why, "the buffers"));
	/* too many loss chunks to simulate (the simulation's time grows with their square) */
	llama1b(&m, &t);
	t.batch = 4;
	t.seq = 2049;
	t.loss_chunk = 2;
	assert_int_equal(plan_compute(&m, &t, &r, &why), -E2BIG);
	assert_non_null(strstr(why, "loss_chunk makes more than 4096 chunks"));
	t.seq = 2048;
	assert_int_equal(plan_compute(&m, &t, &r, &why), 0);
	/* the largest plannable batch of this model and sequence: a peak within the limit */
	llama1b(&m, &t);
	t.batch = 4096;
	t.seq = 4096;
	assert_int_equal(plan_compute(&m, &t, &r, &why), 0);
	assert_true(r.device_peak_bytes > (1ULL << 40) && r.device_peak_bytes <= PLAN_MAX_BYTES);
	assert_true((int64_t)r.device_peak_bytes > 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		FIXTURE_TEST(fixtures), FIXTURE_TEST(fixtures_headroom), FIXTURE_TEST(fixtures_issue13),
		FIXTURE_TEST(fixtures_issue13b), FIXTURE_TEST(fixtures_issue13d), FIXTURE_TEST(fixtures_issue13e),
		FIXTURE_TEST(fixtures_issue13f), FIXTURE_TEST(fixtures_issue13g), FIXTURE_TEST(fixtures_issue13i),
		FIXTURE_TEST(fixtures_issue13j), FIXTURE_TEST(fixtures_issue13k),
		FIXTURE_TEST(fixtures_issue13l), FIXTURE_TEST(fixtures_issue13m),
		FIXTURE_TEST(fixtures_issue13n), FIXTURE_TEST(fixtures_issue13p),
		FIXTURE_TEST(fixtures_issue13q), FIXTURE_TEST(fixtures_issue13r),
		FIXTURE_TEST(fixtures_issue13s), FIXTURE_TEST(fixtures_issue13t),
		FIXTURE_TEST(fixtures_issue13u), FIXTURE_TEST(fixtures_issue13v), FIXTURE_TEST(fixtures_issue13w),
		FIXTURE_TEST(fixtures_issue28), FIXTURE_TEST(fixtures_issue28h), FIXTURE_TEST(fixtures_issue28e), FIXTURE_TEST(fixtures_issue30), FIXTURE_TEST(fixtures_issue45), FIXTURE_TEST(fixtures_issue45b),
		FIXTURE_TEST(fixtures_dist), FIXTURE_TEST(fixtures_dist30),
		cmocka_unit_test(test_config_errors), cmocka_unit_test(test_sliding_masks), cmocka_unit_test(test_placements),
		cmocka_unit_test(test_shapes), cmocka_unit_test(test_knobs),
		cmocka_unit_test(test_gpt2_untied), cmocka_unit_test(test_config_limits), cmocka_unit_test(test_max_length),
		cmocka_unit_test(test_settings_limits), cmocka_unit_test(test_precision_key), cmocka_unit_test(test_overflow),
		cmocka_unit_test(test_grad_accum), cmocka_unit_test(test_fused_losses), cmocka_unit_test(test_lora_save),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
