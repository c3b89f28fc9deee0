#include "util/yaml.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "util/parse.h"
#include "util/xalloc.h"

/* Nesting deeper than this is refused: a config is a few levels deep. */
#define YAML_MAX_DEPTH 64

static int word_in(const char *s, const char *const *words)
{
	for (; *words; words++)
		if (!strcmp(s, *words))
			return 1;
	return 0;
}

/* A plain scalar as YAML 1.2's core schema types it (and YAML 1.1's yes/no, which
 * axolotl's older examples write, as booleans). */
static json_t *plain_scalar(const char *s)
{
	static const char *const yes[] = { "true", "True", "TRUE", "yes", "Yes", "YES", NULL };
	static const char *const no[] = { "false", "False", "FALSE", "no", "No", "NO", NULL };
	static const char *const nulls[] = { "", "~", "null", "Null", "NULL", NULL };
	int64_t i;
	double d;
	char *end;

	if (word_in(s, yes))
		return json_true();
	if (word_in(s, no))
		return json_false();
	if (word_in(s, nulls))
		return json_null();
	if (!parse_int64(s, INT64_MIN, INT64_MAX, &i))
		return json_integer(i);
	d = strtod(s, &end);
	if (*s && !*end && strspn(s, "+-0123456789.eE") == strlen(s))
		return json_real(d);
	return json_string(s);
}

struct yaml_reader {
	yaml_parser_t p;
	char **err;
};

static int fail(struct yaml_reader *r, const char *what, const yaml_event_t *e)
{
	*r->err = xasprintf("not YAML the planner reads: %s at line %zu", what, e ? e->start_mark.line + 1 : 0);
	return -EINVAL;
}

static int next(struct yaml_reader *r, yaml_event_t *e)
{
	if (yaml_parser_parse(&r->p, e))
		return 0;
	*r->err = xasprintf("not YAML: %s at line %zu", r->p.problem ? r->p.problem : "a syntax error",
			    r->p.problem_mark.line + 1);
	return -EINVAL;
}

static int node(struct yaml_reader *r, yaml_event_t *e, json_t **out, int depth);

/* A mapping's or a sequence's items until its end event into c. */
static int items(struct yaml_reader *r, json_t *c, int depth)
{
	yaml_event_t e, v;
	json_t *key, *val;

	for (;;) {
		if (next(r, &e))
			return -EINVAL;
		if (e.type == YAML_MAPPING_END_EVENT || e.type == YAML_SEQUENCE_END_EVENT) {
			yaml_event_delete(&e);
			return 0;
		}
		if (node(r, &e, &key, depth + 1))
			return -EINVAL;
		if (json_is_array(c)) {
			json_array_append_new(c, key);
			continue;
		}
		if (!json_is_string(key) && !json_is_integer(key) && !json_is_boolean(key) && !json_is_real(key)) {
			json_decref(key);
			return fail(r, "a mapping key that is not a scalar", NULL);
		}
		char *name = json_is_string(key) ? xstrdup(json_string_value(key)) : json_dumps(key, JSON_ENCODE_ANY);
		json_decref(key);
		if (next(r, &v) || node(r, &v, &val, depth + 1)) {
			free(name);
			return -EINVAL;
		}
		json_object_set_new(c, name, val);
		free(name);
	}
}

/* The node that begins with event e (consumed) into *out. */
static int node(struct yaml_reader *r, yaml_event_t *e, json_t **out, int depth)
{
	int rc = 0;

	*out = NULL;
	if (depth > YAML_MAX_DEPTH) {
		rc = fail(r, "nesting too deep", e);
	} else if (e->type == YAML_SCALAR_EVENT) {
		const char *s = (const char *)e->data.scalar.value;
		if (e->data.scalar.tag)
			rc = fail(r, "a tag", e);
		else
			*out = e->data.scalar.style == YAML_PLAIN_SCALAR_STYLE ? plain_scalar(s) : json_string(s);
	} else if (e->type == YAML_MAPPING_START_EVENT || e->type == YAML_SEQUENCE_START_EVENT) {
		*out = e->type == YAML_MAPPING_START_EVENT ? json_object() : json_array();
		rc = items(r, *out, depth);
	} else if (e->type == YAML_ALIAS_EVENT) {
		rc = fail(r, "an alias (*name)", e);
	} else {
		rc = fail(r, "an unexpected event", e);
	}
	if (e->type == YAML_MAPPING_START_EVENT && e->data.mapping_start.anchor)
		rc = rc ? rc : fail(r, "an anchor (&name)", e);
	yaml_event_delete(e);
	if (rc || !*out) {
		json_decref(*out);
		*out = NULL;
		return rc ? rc : -EINVAL;
	}
	return 0;
}

int yaml_to_json(const char *text, size_t len, json_t **out, char **err)
{
	struct yaml_reader r = { .err = err };
	yaml_event_t e;
	int rc = -EINVAL;

	*out = NULL;
	*err = NULL;
	if (!yaml_parser_initialize(&r.p)) {
		*err = xstrdup("libyaml could not start");
		return -ENOMEM;
	}
	yaml_parser_set_input_string(&r.p, (const unsigned char *)text, len);
	/* stream start, document start, then the root */
	for (int i = 0; i < 2; i++) {
		if (next(&r, &e))
			goto out;
		int ok = e.type == (i ? YAML_DOCUMENT_START_EVENT : YAML_STREAM_START_EVENT);
		yaml_event_delete(&e);
		if (!ok) {
			*err = xstrdup("not YAML: an empty file");
			goto out;
		}
	}
	if (next(&r, &e))
		goto out;
	rc = node(&r, &e, out, 0);
out:
	yaml_parser_delete(&r.p);
	return rc;
}
