/* Quantized weights' bytes (plan/quant.c): bitsandbytes' formats as arithmetic. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "plan/quant.h"

/* a 4096 x 4096 projection, its 16 Mi elements */
#define ELEMS (4096LL * 4096)
#define ROWS 4096LL

static void test_bytes(void **state)
{
	(void)state;
	/* two codes a byte, an fp32 absmax each 64 */
	assert_int_equal(quant_weight_bytes(QUANT_NF4, 0, ELEMS, ROWS), ELEMS / 2 + ELEMS / 64 * 4);
	assert_int_equal(quant_weight_bytes(QUANT_FP4, 0, ELEMS, ROWS), ELEMS / 2 + ELEMS / 64 * 4);
	/* double-quantized: a byte an absmax, an fp32 scale each 256 of them, a code table */
	assert_int_equal(quant_weight_bytes(QUANT_NF4, 1, ELEMS, ROWS), ELEMS / 2 + ELEMS / 64 + ELEMS / 64 / 256 * 4 + 256 * 4);
	/* LLM.int8: a byte an element, an fp32 scale a row (double_quant means nothing to it) */
	assert_int_equal(quant_weight_bytes(QUANT_INT8, 0, ELEMS, ROWS), ELEMS + ROWS * 4);
	assert_int_equal(quant_weight_bytes(QUANT_INT8, 1, ELEMS, ROWS), ELEMS + ROWS * 4);
	assert_int_equal(quant_weight_bytes(QUANT_NONE, 0, ELEMS, ROWS), 0);
	/* partial blocks round up */
	assert_int_equal(quant_weight_bytes(QUANT_NF4, 0, 65, 1), 33 + 2 * 4);
	assert_int_equal(quant_weight_bytes(QUANT_NF4, 0, 0, 1), 0);
	/* fewer bytes with fewer bits, for every size */
	for (int64_t e = 1; e < (1LL << 40); e = e * 3 + 1) {
		int64_t r = e / 4096 ? e / 4096 : 1;
		assert_true(quant_weight_bytes(QUANT_NF4, 1, e, r) <= quant_weight_bytes(QUANT_NF4, 0, e, r) ||
			    e < 64 * 256);
		assert_true(quant_weight_bytes(QUANT_NF4, 0, e, r) < quant_weight_bytes(QUANT_INT8, 0, e, r) ||
			    e < 64);
	}
}

static void test_words(void **state)
{
	(void)state;
	assert_int_equal(quant_find("nf4"), QUANT_NF4);
	assert_int_equal(quant_find("fp4"), QUANT_FP4);
	assert_int_equal(quant_find("int8"), QUANT_INT8);
	assert_int_equal(quant_find("none"), QUANT_NONE);
	assert_int_equal(quant_find("NF4"), -1);
	assert_int_equal(quant_find("int4"), -1);
	for (int k = 0; k < QUANT_KINDS; k++)
		assert_int_equal(quant_find(quant_format(k)->word), k);
	assert_ptr_equal(quant_format(QUANT_KINDS), quant_format(QUANT_NONE));
}

int main(void)
{
	const struct CMUnitTest tests[] = { cmocka_unit_test(test_bytes), cmocka_unit_test(test_words) };
	return cmocka_run_group_tests(tests, NULL, NULL);
}
