/* Quantized base weights, one table row a format: bitsandbytes' 4-bit (NF4, FP4, with or
 * without double quantization) and int8 (LLM.int8's Linear8bitLt), as transformers'
 * BitsAndBytesConfig loads a model's linear projections. What a quantized weight stores
 * is the format's arithmetic (packed codes and their scales); the simulation (sim_setup.c,
 * op_linear.c), the words taken (settings.c) and axolotl's keys (trainargs.c) read it.
 * Modelled from the library's format, not measured. Pure. */
#ifndef HEADROOM_PLAN_QUANT_H
#define HEADROOM_PLAN_QUANT_H

#include <stdint.h>

enum quant_kind { QUANT_NONE, QUANT_NF4, QUANT_FP4, QUANT_INT8, QUANT_KINDS };

struct quant_format {
	const char *word;        /* --quant's */
	int64_t codes_per_byte;  /* packed elements a byte */
	int64_t block;           /* elements a scale covers (0: one fp32 scale a row) */
	int64_t dq_block;        /* double quantization: scales a second-level fp32 scale covers */
	const char *said;        /* what the plan says of it */
};

/* The row of a kind (QUANT_NONE's names no format). */
const struct quant_format *quant_format(enum quant_kind k);

/* The kind a word names; -1 none does. */
int quant_find(const char *word);

/* The bytes a weight of elems elements in rows output rows is stored in under kind k
 * (double_quant: 4-bit scales quantized to a byte each, a second fp32 scale a dq_block of
 * them). 0 for QUANT_NONE. */
int64_t quant_weight_bytes(enum quant_kind k, int double_quant, int64_t elems, int64_t rows);

#endif
