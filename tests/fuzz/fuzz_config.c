/* libFuzzer target: the planner's JSON readers (a config.json, or a case with "model"
 * and "train", as `headroom plan` and --train read them), the readers of
 * TrainingArguments JSON and axolotl YAML (--trainer-args, --axolotl) and its option
 * parsers (--buffer, --lora-targets, --precision, --gpu). */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "plan/config.h"
#include "plan/gpus.h"
#include "plan/model.h"
#include "plan/precision.h"
#include "plan/trainargs.h"
#include "util/yaml.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	json_t *j = json_loadb((const char *)data, size, 0, NULL);
	char *err = NULL, *text;
	struct model_shape m;
	struct train_settings t;
	struct buffer_spec b;
	unsigned bits;
	int rc;

	if (j) {
		json_t *model = json_object_get(j, "model"), *train = json_object_get(j, "train");

		memset(&m, 0, sizeof(m));
		model_shape_from_json(model ? model : j, &m, &err);
		free(err);
		err = NULL;
		train_settings_init(&t);
		train_settings_from_json(train ? train : j, &t, &err);
		free(err);
		err = NULL;
		train_settings_init(&t);
		trainargs_from_json(j, &t, NULL, NULL, &err);
		free(err);
		json_decref(j);
	}
	err = NULL;
	rc = yaml_to_json((const char *)data, size, &j, &err);
	/* its contract: an error always says why (a NULL reached a %s: issue 43), a success
	 * always gives a document */
	if (rc ? !err || j : err || !j)
		abort();
	if (!rc) {
		train_settings_init(&t);
		axolotl_from_json(j, &t, NULL, NULL, &err);
		json_decref(j);
	}
	free(err);
	/* The same bytes as a --buffer, --lora-targets, --precision or --gpu value. */
	text = malloc(size + 1);
	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	buffer_spec_parse(text, &b);
	lora_targets_parse(text, &bits);
	train_settings_init(&t);
	precision_apply(&t, text);
	gpus_find(text);
	free(text);
	return 0;
}
