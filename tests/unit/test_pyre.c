/* Python regular expressions matched whole, as re.fullmatch does (util/pyre.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "util/pyre.h"

/* Whether pattern (which must compile) matches s whole. */
static int matches(const char *pattern, const char *s)
{
	struct pyre *re;
	char *err = NULL;
	int m;

	if (pyre_compile(&re, pattern, &err))
		fail_msg("'%s' did not compile: %s", pattern, err);
	m = pyre_match(re, s);
	pyre_free(re);
	return m;
}

static void refused(const char *pattern, const char *needle)
{
	struct pyre *re = (struct pyre *)&re;
	char *err = NULL;

	assert_int_equal(pyre_compile(&re, pattern, &err), -EINVAL);
	assert_null(re);
	if (!strstr(err, needle))
		fail_msg("'%s': '%s' does not say '%s'", pattern, err, needle);
	free(err);
}

static void test_fullmatch(void **state)
{
	(void)state;
	/* re.fullmatch: the whole name, not a part of it */
	assert_true(matches("q_proj", "q_proj"));
	assert_false(matches("q_proj", "model.layers.0.self_attn.q_proj"));
	assert_true(matches(".*q_proj", "model.layers.0.self_attn.q_proj"));
	assert_false(matches("a|b", "ab"));
	assert_true(matches("a|b", "b"));
}

static void test_classes(void **state)
{
	const char *name = "model.language_model.layers.12.self_attn.k_proj";

	(void)state;
	assert_true(matches("model.language_model.layers.[\\d]+.(mlp|self_attn).(up|down|gate|q|k|v|o)_proj", name));
	assert_true(matches("model\\.language_model\\.layers\\.\\d+\\.self_attn\\.\\w+", name));
	assert_false(matches("model\\.language_model\\.layers\\.\\D+\\.self_attn\\.\\w+", name));
	/* an escaped dot is a dot, not any letter */
	assert_false(matches("model\\.language", "modelXlanguage"));
	assert_true(matches("a\\sb", "a b"));
	/* inside brackets: escapes are literals or classes */
	assert_true(matches("[\\.\\-]+", ".-."));
	assert_false(matches("[\\.\\-]+", "a"));
	assert_true(matches("[a\\-z]", "-"));
	assert_false(matches("[a\\-z]", "m"));
	assert_true(matches("[\\]x]", "]"));
	assert_true(matches("[^\\d]", "x"));
	assert_false(matches("[^\\d]", "7"));
}

static void test_groups_and_laziness(void **state)
{
	(void)state;
	assert_true(matches("(?:mlp|attn)\\.(?P<p>up|down)_proj", "attn.down_proj"));
	assert_true(matches(".*?\\.layers\\.(3|7|11)\\.o_proj", "m.layers.7.o_proj"));
	assert_false(matches(".*?\\.layers\\.(3|7|11)\\.o_proj", "m.layers.8.o_proj"));
	assert_true(matches("a+?b", "aab"));
	assert_true(matches("a\\+?", "a+"));
	assert_true(matches("a\\+?", "a"));
}

static void test_python_only(void **state)
{
	(void)state;
	/* what Python reads and a POSIX expression cannot say */
	assert_true(matches("(?!.*lm_head).*_proj", "model.layers.0.mlp.up_proj"));
	assert_false(matches("(?!.*lm_head).*_proj", "lm_head_proj"));
	assert_true(matches(".*(?<=self_attn\\.)q_proj", "layers.1.self_attn.q_proj"));
	assert_false(matches(".*(?<=self_attn\\.)q_proj", "layers.1.cross_attn.q_proj"));
	assert_true(matches("(?i)Q_PROJ", "q_proj"));
	assert_true(matches("(a)b\\1", "aba"));
	assert_true(matches("(?P<x>a)b(?P=x)", "aba"));
	assert_true(matches(".*\\bq_proj", "self_attn.q_proj"));
	/* Python's \Z is the very end; an escaped backslash before a Z stays a literal */
	assert_true(matches("q_proj\\Z", "q_proj"));
	assert_true(matches("a\\\\Z", "a\\Z"));
	assert_true(matches("[\\b]", "\b"));
}

static void test_refused(void **state)
{
	(void)state;
	/* what Python refuses too, each said with where */
	refused("[abc", "at offset");
	refused("(a", "missing closing parenthesis");
	refused("a\\", "\\ at end of pattern");
	refused("*a", "quantifier does not follow");
	refused("(?P<1a>x)", "at offset");
}

static void test_backtracking_bounded(void **state)
{
	struct pyre *re;
	char *err = NULL;

	(void)state;
	/* nested quantifiers on a name that does not match: no answer, soon */
	assert_int_equal(pyre_compile(&re, "(.|..)*\\d", &err), 0);
	assert_int_equal(pyre_match(re, "model.layers.self_attn.q_proj.lora_A.default"), -E2BIG);
	assert_int_equal(pyre_match(re, "layers.1"), 1);
	pyre_free(re);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fullmatch),
		cmocka_unit_test(test_classes),
		cmocka_unit_test(test_groups_and_laziness),
		cmocka_unit_test(test_python_only),
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_backtracking_bounded),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
