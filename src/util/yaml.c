#include "util/yaml.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "util/escape.h"
#include "util/parse.h"
#include "util/xalloc.h"

/* Nesting deeper than this is refused: a config is a few levels deep. */
#define YAML_MAX_DEPTH 64
/* The most of a scalar an error message shows. */
#define YAML_SHOWN_MAX 40

struct yaml_reader {
	yaml_parser_t p;
	char **err;
	const char *key; /* the mapping key whose value is read (NULL: none), for messages */
};

/* Every error of the reader returns through here: *err is then set (the first message
 * kept, as an error unwinds through the nodes that hold it). */
static int fail(struct yaml_reader *r, const char *what, size_t line)
{
	if (!*r->err)
		*r->err = xasprintf("not YAML the planner reads: %s at line %zu", what, line + 1);
	return -EINVAL;
}

static int word_in(const char *s, const char *const *words)
{
	for (; *words; words++)
		if (!strcmp(s, *words))
			return 1;
	return 0;
}

/* A number past what JSON holds here (an int64_t, a finite double): refused, naming the
 * key it is the value of, rather than read as another number or as nothing. */
static int out_of_range(struct yaml_reader *r, const char *s, const char *past, size_t line)
{
	char *key = r->key ? esc_dup(esc_term, r->key) : NULL;
	char *what = xasprintf("a number out of range (%s%s%.*s%s, past %s)", key ? key : "", key ? ": " : "",
			       YAML_SHOWN_MAX, s, strlen(s) > YAML_SHOWN_MAX ? "..." : "", past);
	int rc = fail(r, what, line);

	free(what);
	free(key);
	return rc;
}

/* An integer of YAML 1.1's, as PyYAML reads axolotl's files: digits grouped by
 * underscores ("500_000") after a non-zero first digit; else as parse_int64. */
static int int_grouped(const char *s, int64_t *i)
{
	size_t sign = *s == '-', n = strlen(s);
	char plain[32];
	size_t k = 0;

	if (!strchr(s, '_') || s[sign] < '1' || s[sign] > '9' || s[n - 1] == '_' ||
	    strspn(s + sign, "0123456789_") != n - sign)
		return parse_int64(s, INT64_MIN, INT64_MAX, i);
	for (size_t j = 0; j < n && k < sizeof(plain) - 1; j++)
		if (s[j] != '_')
			plain[k++] = s[j];
	if (k == sizeof(plain) - 1)
		return -ERANGE;
	plain[k] = '\0';
	return parse_int64(plain, INT64_MIN, INT64_MAX, i);
}

/* A plain scalar as YAML 1.2's core schema types it (and YAML 1.1's yes/no, which
 * axolotl's older examples write, as booleans, and its grouped integers) into *out. */
static int plain_scalar(struct yaml_reader *r, const char *s, size_t line, json_t **out)
{
	static const char *const yes[] = { "true", "True", "TRUE", "yes", "Yes", "YES", NULL };
	static const char *const no[] = { "false", "False", "FALSE", "no", "No", "NO", NULL };
	static const char *const nulls[] = { "", "~", "null", "Null", "NULL", NULL };
	const char *digits = s[0] == '+' && s[1] != '-' ? s + 1 : s; /* core's [-+]?[0-9]+ */
	int64_t i;
	double d;
	char *end;
	int rc;

	if (word_in(s, yes) || word_in(s, no) || word_in(s, nulls)) {
		*out = word_in(s, yes) ? json_true() : word_in(s, no) ? json_false() : json_null();
		return 0;
	}
	rc = int_grouped(digits, &i);
	if (rc == -ERANGE)
		return out_of_range(r, s, "a 64-bit integer", line);
	if (!rc) {
		*out = json_integer(i);
	} else {
		d = strtod(s, &end);
		if (!*end && strspn(s, "+-0123456789.eE") == strlen(s)) {
			if (isinf(d)) /* (underflow reads as 0 or a subnormal, as Python's float does) */
				return out_of_range(r, s, "a double", line);
			*out = json_real(d);
		} else {
			*out = json_string(s);
		}
	}
	return *out ? 0 : fail(r, "out of memory", line);
}

/* The next event into *e: 0, or -EINVAL saying what libyaml found wrong. */
static int next(struct yaml_reader *r, yaml_event_t *e)
{
	if (yaml_parser_parse(&r->p, e))
		return 0;
	if (!*r->err && r->p.error == YAML_MEMORY_ERROR)
		*r->err = xstrdup("not YAML: out of memory");
	if (!*r->err)
		*r->err = xasprintf("not YAML: %s%s%s at line %zu", r->p.context ? r->p.context : "",
				    r->p.context ? ": " : "", r->p.problem ? r->p.problem : "a syntax error",
				    r->p.problem_mark.line + 1);
	return -EINVAL;
}

static int node(struct yaml_reader *r, yaml_event_t *e, json_t **out, int depth);

/* A mapping's key (a scalar, as the text JSON keys it by) and value into c. */
static int mapping_item(struct yaml_reader *r, json_t *c, yaml_event_t *e, int depth)
{
	size_t line = e->start_mark.line;
	yaml_event_t v;
	json_t *key, *val;
	char *name;
	int rc;

	r->key = NULL;
	if (node(r, e, &key, depth + 1))
		return -EINVAL;
	if (!json_is_string(key) && !json_is_integer(key) && !json_is_boolean(key) && !json_is_real(key)) {
		json_decref(key);
		return fail(r, "a mapping key that is not a scalar", line);
	}
	name = json_is_string(key) ? xstrdup(json_string_value(key)) : json_dumps(key, JSON_ENCODE_ANY);
	json_decref(key);
	if (!name)
		return fail(r, "out of memory", line);
	r->key = name;
	rc = next(r, &v) || node(r, &v, &val, depth + 1) ? -EINVAL : 0;
	r->key = NULL;
	if (!rc && json_object_set_new(c, name, val))
		rc = fail(r, "out of memory", line);
	free(name);
	return rc;
}

/* A mapping's or a sequence's items until its end event into c. */
static int items(struct yaml_reader *r, json_t *c, int depth)
{
	const char *outer = r->key; /* a sequence's items are its key's values */
	yaml_event_t e;
	int rc = 0;

	while (!rc) {
		if (next(r, &e)) {
			rc = -EINVAL;
		} else if (e.type == YAML_MAPPING_END_EVENT || e.type == YAML_SEQUENCE_END_EVENT) {
			yaml_event_delete(&e);
			break;
		} else if (json_is_object(c)) {
			rc = mapping_item(r, c, &e, depth);
		} else {
			size_t line = e.start_mark.line;
			json_t *item;
			if (node(r, &e, &item, depth + 1))
				rc = -EINVAL;
			else if (json_array_append_new(c, item))
				rc = fail(r, "out of memory", line);
		}
		r->key = outer;
	}
	r->key = outer;
	return rc;
}

/* The node that begins with event e (consumed) into *out. */
static int node(struct yaml_reader *r, yaml_event_t *e, json_t **out, int depth)
{
	size_t line = e->start_mark.line;
	int rc = 0;

	*out = NULL;
	if (depth > YAML_MAX_DEPTH) {
		rc = fail(r, "nesting too deep", line);
	} else if (e->type == YAML_SCALAR_EVENT) {
		const char *s = (const char *)e->data.scalar.value;
		if (e->data.scalar.tag)
			rc = fail(r, "a tag", line);
		else if (e->data.scalar.style == YAML_PLAIN_SCALAR_STYLE)
			rc = plain_scalar(r, s, line, out);
		else if (!(*out = json_string(s)))
			rc = fail(r, "out of memory", line);
	} else if (e->type == YAML_MAPPING_START_EVENT || e->type == YAML_SEQUENCE_START_EVENT) {
		*out = e->type == YAML_MAPPING_START_EVENT ? json_object() : json_array();
		rc = *out ? items(r, *out, depth) : fail(r, "out of memory", line);
	} else if (e->type == YAML_ALIAS_EVENT) {
		rc = fail(r, "an alias (*name)", line);
	} else {
		rc = fail(r, "an unexpected event", line);
	}
	if (!rc && e->type == YAML_MAPPING_START_EVENT && e->data.mapping_start.anchor)
		rc = fail(r, "an anchor (&name)", line);
	yaml_event_delete(e);
	if (rc || !*out) {
		json_decref(*out);
		*out = NULL;
		return rc ? rc : fail(r, "a node it could not read", line);
	}
	return 0;
}

/* Event e (consumed) is of type want, else fail with what. */
static int expect(struct yaml_reader *r, yaml_event_type_t want, const char *what)
{
	yaml_event_t e;
	int rc;

	if (next(r, &e))
		return -EINVAL;
	rc = e.type == want ? 0 : fail(r, what, e.start_mark.line);
	yaml_event_delete(&e);
	return rc;
}

int yaml_to_json(const char *text, size_t len, json_t **out, char **err)
{
	struct yaml_reader r = { .err = err };
	yaml_event_t e;
	int rc = -EINVAL;

	*out = NULL;
	*err = NULL;
	if (!yaml_parser_initialize(&r.p)) {
		*err = xstrdup("not YAML: libyaml could not start (out of memory)");
		return -ENOMEM;
	}
	yaml_parser_set_input_string(&r.p, (const unsigned char *)text, len);
	/* stream start, document start, the root, document end, and then the stream's end:
	 * PyYAML's safe_load, which axolotl reads its config with, refuses a second document */
	if (expect(&r, YAML_STREAM_START_EVENT, "no stream") ||
	    expect(&r, YAML_DOCUMENT_START_EVENT, "an empty file (no document)") || next(&r, &e) ||
	    node(&r, &e, out, 0) || expect(&r, YAML_DOCUMENT_END_EVENT, "more than one node in the document") ||
	    expect(&r, YAML_STREAM_END_EVENT,
		   "expected a single document in the stream, but found another document"))
		goto out;
	rc = 0;
out:
	yaml_parser_delete(&r.p);
	if (rc) {
		json_decref(*out);
		*out = NULL;
		if (!*err) /* (each path above says why: this only keeps a NULL from a caller's %s) */
			*err = xstrdup("not YAML the planner reads");
	}
	return rc;
}
