#include "plan/quant.h"

#include <string.h>

#include "plan/dtype.h"

/* bitsandbytes' blockwise 4-bit: two codes a byte, an fp32 absmax each 64 elements; with
 * double quantization the absmax values are themselves a byte each, 256 of them under
 * one fp32 scale. Linear8bitLt: a byte an element, one fp32 scale (SCB) a row. */
#define BNB_4BIT_BLOCK 64
#define BNB_DQ_BLOCK 256
/* a quantization state's code table: 256 fp32 entries */
#define BNB_CODE_BYTES (256 * DT_FP32)

static const struct quant_format formats[QUANT_KINDS] = {
	[QUANT_NONE] = { "none", 0, 0, 0, NULL },
	[QUANT_NF4] = { "nf4", 2, BNB_4BIT_BLOCK, BNB_DQ_BLOCK,
			"4-bit NF4 (bitsandbytes: two codes a byte, a scale each 64 elements)" },
	[QUANT_FP4] = { "fp4", 2, BNB_4BIT_BLOCK, BNB_DQ_BLOCK,
			"4-bit FP4 (bitsandbytes: two codes a byte, a scale each 64 elements)" },
	[QUANT_INT8] = { "int8", 1, 0, 0, "int8 (bitsandbytes' LLM.int8: a byte an element, an fp32 scale a row)" },
};

const struct quant_format *quant_format(enum quant_kind k)
{
	return &formats[k < QUANT_KINDS ? k : QUANT_NONE];
}

int quant_find(const char *word)
{
	for (int k = 0; k < QUANT_KINDS; k++)
		if (!strcmp(formats[k].word, word))
			return k;
	return -1;
}

static int64_t ceil_div(int64_t a, int64_t b)
{
	return (a + b - 1) / b;
}

int64_t quant_weight_bytes(enum quant_kind k, int double_quant, int64_t elems, int64_t rows)
{
	const struct quant_format *f = quant_format(k);

	if (k == QUANT_NONE || elems <= 0)
		return 0;
	int64_t codes = ceil_div(elems, f->codes_per_byte);
	if (!f->block) /* one fp32 scale a row */
		return codes + rows * DT_FP32;
	int64_t scales = ceil_div(elems, f->block);
	if (!double_quant)
		return codes + scales * DT_FP32;
	return codes + scales + ceil_div(scales, f->dq_block) * DT_FP32 + BNB_CODE_BYTES;
}
