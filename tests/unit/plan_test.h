/* What the planner's unit tests share: a model's shape from a config.json's text, or the
 * reader's refusal of it; Llama-3.2-1B's shape. Include after <cmocka.h>. */
#ifndef HEADROOM_TESTS_PLAN_TEST_H
#define HEADROOM_TESTS_PLAN_TEST_H

#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "plan/config.h"
#include "plan/model.h"

/* cfg (a config.json's text) read into *m: 0, or the reader's error with its message in
 * *err (the caller frees; err NULL: freed here). */
static inline int shape_try(const char *cfg, struct model_shape *m, char **err)
{
	json_t *j = json_loads(cfg, 0, NULL);
	char *msg = NULL;
	int rc;

	assert_non_null(j);
	rc = model_shape_from_json(j, m, &msg);
	json_decref(j);
	if (err)
		*err = msg;
	else
		free(msg);
	return rc;
}

/* cfg read into *m, or the test fails naming the reader's error. */
static inline void shape_of(const char *cfg, struct model_shape *m)
{
	char *err = NULL;

	if (shape_try(cfg, m, &err))
		fail_msg("%s: %s", cfg, err);
	free(err);
}

/* cfg is refused, the error naming needle. */
static inline void shape_refused(const char *cfg, const char *needle)
{
	struct model_shape m;
	char *err = NULL;

	assert_int_not_equal(shape_try(cfg, &m, &err), 0);
	assert_non_null(err);
	if (!strstr(err, needle))
		fail_msg("'%s' does not say '%s'", err, needle);
	free(err);
}

/* Llama-3.2-1B's published shape, and the default settings. */
static inline void llama1b(struct model_shape *m, struct train_settings *t)
{
	shape_of("{\"model_type\": \"llama\", \"hidden_size\": 2048, \"intermediate_size\": 8192,"
		 " \"num_hidden_layers\": 16, \"num_attention_heads\": 32, \"num_key_value_heads\": 8,"
		 " \"vocab_size\": 128256, \"tie_word_embeddings\": true}", m);
	train_settings_init(t);
}

#endif
