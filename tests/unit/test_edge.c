/* The edge fixture (tests/fixtures/gpu-edge): runs bisected at a card's edge on a real
 * GPU. Each probe planned at its value with no margin: one that ran out of memory is
 * never said to fit, one that completed never said not to; each configuration whose
 * bisection closed: "surely fits" never above the largest value that ran, "may fit"
 * never below it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "plan/config.h"
#include "plan/gpus.h"
#include "plan/model.h"
#include "plan/solve.h"

#ifndef FIXTURES
#define FIXTURES "tests/fixtures"
#endif

#define MAX_PROBES 512

struct probe {
	const char *card;
	const char *outcome;
	int64_t value;
};

/* The case named name of the cases file, its shape and settings, and the card's fit. */
static json_t *case_of(json_t *cases, const char *name)
{
	size_t i;
	json_t *c;

	json_array_foreach(json_object_get(cases, "cases"), i, c)
		if (!strcmp(json_string_value(json_object_get(c, "name")), name))
			return c;
	fail_msg("%s: no such case", name);
	return NULL;
}

static void setup(json_t *cases, json_t *c, const char *card, struct model_shape *m, struct train_settings *t,
		  struct fit *f)
{
	char *msg = NULL;
	const char *gpu = json_string_value(json_object_get(json_object_get(json_object_get(cases, "cards"), card), "gpu"));

	assert_non_null(gpu);
	train_settings_init(t);
	assert_int_equal(model_shape_from_json(json_object_get(c, "model"), m, &msg), 0);
	assert_int_equal(train_settings_from_json(json_object_get(c, "train"), t, &msg), 0);
	*f = (struct fit){ .gpu_bytes = gpus_find(gpu)->memory_bytes, .max_length = m->max_length };
}

static void check_case(json_t *cases, const char *name, const char *card, const struct probe *ps, size_t n,
		       int *wrong)
{
	json_t *c = case_of(cases, name);
	const char *knob = json_string_value(json_object_get(c, "knob")), *why;
	int64_t step = json_integer_value(json_object_get(c, "step")), best = 0, next = INT64_MAX;
	struct model_shape m;
	struct train_settings t;
	struct fit f;
	struct plan_result r;
	struct solve_result sr;

	setup(cases, c, card, &m, &t, &f);
	for (size_t i = 0; i < n; i++) {
		int ok = !strcmp(ps[i].outcome, "ok");
		*knob_of(&t, knob) = ps[i].value;
		assert_int_equal(fit_plan(&f, &m, &t, &r, &why), 0);
		enum fit_verdict v = fit_verdict(&f, &r);
		if ((ok && v == FIT_NO) || (!ok && v == FIT_FITS)) {
			printf("   %s@%s %s = %lld: %s, said %s\n", name, card, knob, (long long)ps[i].value,
			       ps[i].outcome, v == FIT_NO ? "does not fit" : "fits");
			++*wrong;
		}
		if (ok && ps[i].value > best)
			best = ps[i].value;
	}
	for (size_t i = 0; i < n; i++)
		if (strcmp(ps[i].outcome, "ok") && ps[i].value > best && ps[i].value < next)
			next = ps[i].value;
	if (!best || next - best > step)
		return; /* the bisection is open: no largest value yet */
	*knob_of(&t, knob) = json_integer_value(json_object_get(c, "min"));
	assert_int_equal(solve_knob(&f, &m, &t, knob, &sr, &why), 0);
	printf("   %-46s %-5s largest %6lld: surely %6lld, may %6lld\n", name, card, (long long)best,
	       (long long)sr.value, (long long)sr.may_value);
	if (sr.value > best || sr.may_value < best) {
		printf("   (wrong answer)\n");
		++*wrong;
	}
}

static void test_edge_h100(void **state)
{
	static struct probe ps[MAX_PROBES];
	json_error_t e;
	json_t *cases = json_load_file(FIXTURES "/gpu-edge/cases.json", 0, &e), *recs[MAX_PROBES];
	FILE *in = fopen(FIXTURES "/gpu-edge/h100.jsonl", "r");
	char line[16384];
	const char *names[MAX_PROBES];
	size_t n = 0;
	int wrong = 0;
	(void)state;

	assert_non_null(cases);
	assert_non_null(in);
	while (fgets(line, sizeof(line), in)) {
		json_t *j = json_loads(line, 0, &e);
		assert_non_null(j);
		const char *o = json_string_value(json_object_get(j, "outcome"));
		if (strcmp(json_string_value(json_object_get(j, "kind")), "probe") || !o ||
		    (strcmp(o, "ok") && strcmp(o, "oom"))) {
			json_decref(j);
			continue;
		}
		assert_true(n < MAX_PROBES);
		recs[n] = j;
		names[n] = json_string_value(json_object_get(j, "case"));
		ps[n] = (struct probe){ json_string_value(json_object_get(j, "card")), o,
					json_integer_value(json_object_get(j, "value")) };
		n++;
	}
	fclose(in);
	assert_true(n >= 70);
	/* each case and card's probes together, wherever a later run appended them */
	static struct probe group[MAX_PROBES];
	for (size_t i = 0; i < n; i++) {
		size_t k = 0, first = 1;
		for (size_t j = 0; j < i && first; j++)
			first = strcmp(names[j], names[i]) || strcmp(ps[j].card, ps[i].card);
		if (!first)
			continue;
		for (size_t j = i; j < n; j++)
			if (!strcmp(names[j], names[i]) && !strcmp(ps[j].card, ps[i].card))
				group[k++] = ps[j];
		check_case(cases, names[i], ps[i].card, group, k, &wrong);
	}
	for (size_t i = 0; i < n; i++)
		json_decref(recs[i]);
	json_decref(cases);
	assert_int_equal(wrong, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_edge_h100),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
