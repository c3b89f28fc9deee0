/* The optimizers a plan can name, one table row each: the states a trained tensor keeps
 * and the temporaries its step makes. The simulation (sim.c), the dtypes said
 * (precision.c), the words taken (settings.c) and Hugging Face's names (trainargs.c)
 * all read it. Pure. */
#ifndef HEADROOM_PLAN_OPTIMIZER_H
#define HEADROOM_PLAN_OPTIMIZER_H

#include <stdint.h>

#include "plan/shape.h"

/* What a state of a trained tensor is held in. */
enum opt_state_kind {
	OS_TRAINED,  /* the trained tensor's dtype (torch's zeros_like) */
	OS_FP32,     /* fp32 whatever the tensor's (bitsandbytes' 32-bit states) */
	OS_8BIT,     /* blockwise quantized: a code an element (code_bits) and an fp32 absmax
		      * a block (bitsandbytes', torchao's) */
	OS_FACTORED, /* fp32, a matrix's as a row and a column vector (Adafactor) */
};

/* When the step's temporaries are live. */
enum opt_temps {
	OT_NONE,       /* a fused kernel: none */
	OT_FOREACH,    /* one per trained tensor, all at once (torch's foreach) */
	OT_PER_TENSOR, /* a tensor's at a time, freed before the next's */
};

#define OPT_MAX_NAMES 4

struct optimizer_row {
	const char *word;          /* --optimizer's */
	enum optimizer opt;
	int fused;
	const char *hf[OPT_MAX_NAMES]; /* TrainingArguments' optim, axolotl's optimizer (NULL: no more) */
	int states;                /* a trained tensor's (SGD's: with momentum, else none) */
	enum opt_state_kind kind;
	int64_t min_8bit;          /* OS_8BIT: a tensor of fewer elements keeps unquantized
				    * states (fp32, or its own dtype with small_trained) */
	int64_t block;             /* OS_8BIT: the elements a state's fp32 absmax covers */
	int code_bits;             /* OS_8BIT: bits a code (0: 8) */
	int block_divides;         /* OS_8BIT: quantized only where block divides the tensor */
	int small_trained;         /* OS_8BIT: the unquantized states in the tensor's dtype */
	int64_t qmap_bytes;        /* OS_8BIT: the quantile maps, made once on the GPU */
	int64_t qmap_each;         /* OS_8BIT: a quantile map's bytes, one each quantized state */
	int64_t paged_min;         /* states of tensors of at least this many elements live in
				    * managed memory (0: none do) */
	enum opt_temps temps;
	int ntemps;                /* param-sized temporaries a tensor */
	int temps_fp32;            /* they are fp32 (else the trained tensor's dtype) */
	int upcast_temps;          /* fp32 copies more when the trained tensor is 16-bit */
	const char *states_dtype;  /* as the plan says it; NULL: the gradients' */
	const char *said;          /* what the plan says of it, after its word; NULL nothing */
};

/* The most tensors one trained tensor's states are (two quantized states, each its
 * codes, absmax and quantile map). */
#define OPT_MAX_STATE_TENSORS 6

/* One trained tensor's states: the tensors on the GPU, and the bytes in managed memory. */
struct opt_states {
	int64_t bytes[OPT_MAX_STATE_TENSORS];
	int n;
	int64_t paged_bytes;
};

/* t's row (adamw's when t names none); the row of a word, or of a Hugging Face name
 * (NULL: none); row i of the table (NULL past its end). */
const struct optimizer_row *optimizer_row(const struct train_settings *t);
const struct optimizer_row *optimizer_by_word(const char *word);
const struct optimizer_row *optimizer_by_hf(const char *name);
const struct optimizer_row *optimizer_at(size_t i);
/* The states a trained tensor keeps under t (0: none; none in inference). */
int optimizer_states(const struct train_settings *t);
/* The states of a trained tensor of elems elements, bytes bytes (its dtype's,
 * elems x the dtype's bytes but for a shard's rounding), as o keeps them; side: one
 * side of the model's matrices (its hidden size), for factored states (a tensor whose
 * elements it does not divide is taken as unfactored: a bound from above). */
void optimizer_tensor_states(const struct optimizer_row *o, const struct train_settings *t, int64_t elems,
			     int64_t bytes, int64_t side, struct opt_states *st);
/* The bytes of each of a tensor's step temporaries under o (as optimizer_tensor_states'
 * elems and bytes), and how many (0: none). */
int optimizer_temps(const struct optimizer_row *o, int64_t elems, int64_t bytes, int64_t *each);

#endif
