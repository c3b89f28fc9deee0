/* Text from outside made safe for each sink (util/escape): valid UTF-8 always, a
 * terminal's controls shown, never acted on. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "util/escape.h"

static char *run(void (*f)(struct strbuf *, const char *), const char *s)
{
	struct strbuf b = STRBUF_INIT;

	f(&b, s);
	return strbuf_detach(&b);
}

#define EXPECT(f, in, out)                            \
	do {                                          \
		char *got_ = run(f, in);              \
		assert_string_equal(got_, out);       \
		free(got_);                           \
	} while (0)

static void test_utf8_seq(void **state)
{
	(void)state;
	assert_int_equal(utf8_seq_len("a"), 1);
	assert_int_equal(utf8_seq_len(""), 0);
	assert_int_equal(utf8_seq_len("\xC3\xA9"), 2);          /* é */
	assert_int_equal(utf8_seq_len("\xE2\x82\xAC"), 3);      /* € */
	assert_int_equal(utf8_seq_len("\xF0\x9F\x98\x80"), 4);  /* an emoji */
	assert_int_equal(utf8_seq_len("\xC3"), 0);              /* cut short */
	assert_int_equal(utf8_seq_len("\xE2\x82"), 0);
	assert_int_equal(utf8_seq_len("\xC0\xAF"), 0);          /* overlong */
	assert_int_equal(utf8_seq_len("\xE0\x80\xAF"), 0);
	assert_int_equal(utf8_seq_len("\xED\xA0\x80"), 0);      /* a surrogate */
	assert_int_equal(utf8_seq_len("\xF4\x90\x80\x80"), 0);  /* past U+10FFFF */
	assert_int_equal(utf8_seq_len("\xFF"), 0);
	assert_int_equal(utf8_seq_len("\x80"), 0);
	/* a cut never splits a character */
	assert_int_equal(utf8_cut("ab\xE2\x82\xAC", 4), 2);
	assert_int_equal(utf8_cut("ab\xE2\x82\xAC", 5), 5);
	assert_int_equal(utf8_cut("abc", 10), 3);
	assert_true(utf8_valid("caf\xC3\xA9 \xE2\x82\xAC"));
	assert_true(utf8_valid(""));
	assert_false(utf8_valid("k\xFF\xFE.cu"));
	assert_false(utf8_valid("a\xE2\x82"));
}

static void test_sinks(void **state)
{
	(void)state;
	/* JSON: invalid bytes shown, valid text kept */
	EXPECT(esc_utf8, "x\xFFy", "x\\xFFy");
	EXPECT(esc_utf8, "caf\xC3\xA9", "caf\xC3\xA9");
	EXPECT(esc_utf8, "ab\xE2\x82", "ab\\xE2\\x82");           /* a character cut short */
	EXPECT(esc_utf8, "\xC0\xAF\xED\xA0\x80", "\\xC0\\xAF\\xED\\xA0\\x80"); /* overlong, surrogate */
	/* Prometheus: the same, and its three escapes (the shown byte's backslash too) */
	EXPECT(esc_prom_label, "a\\b\"c\nd\xFF", "a\\\\b\\\"c\\nd\\\\xFF");
	/* terminal: every control shown, nothing of an escape sequence left raw */
	EXPECT(esc_term, "x\x1B]0;PWNED\a\x1B[2J", "x\\x1B]0;PWNED\\x07\\x1B[2J");
	EXPECT(esc_term, "a\xC2\x9B" "2Jb", "a\\u{009B}2Jb");            /* C1 CSI */
	EXPECT(esc_term, "\xE2\x80\xAE" "txt", "\\u{202E}txt");          /* right-to-left override */
	EXPECT(esc_term, "r\xFFs\\", "r\\xFFs\\\\");
	EXPECT(esc_term, "caf\xC3\xA9 \xE2\x82\xAC", "caf\xC3\xA9 \xE2\x82\xAC");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_utf8_seq),
		cmocka_unit_test(test_sinks),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
