#include "store/transfer.h"

#include <errno.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "util/grow.h"
#include "util/escape.h"
#include "util/xalloc.h"

#define SEP " :: "
#define MAX_KEY_BYTES 4096
#define MAX_DURATION_MS (30LL * 24 * 3600 * 1000)
#define MAX_BYTES (1LL << 50)
#define FUTURE_SLACK_S 86400 /* clocks of two machines disagree */

/* A word of the key that is an absolute path, or an option's value that is (-x=/p). */
static int has_abs_path(const char *key)
{
	for (const char *p = key; *p; p++)
		if (*p == '/' && (p == key || p[-1] == ' ' || p[-1] == '='))
			return 1;
	return 0;
}

/* root without its trailing slashes: "/" becomes "", under which every absolute path lies. */
static size_t root_len(const char *root)
{
	size_t n = strlen(root);

	while (n && root[n - 1] == '/')
		n--;
	return n;
}

struct item {
	enum profile_kind kind;
	char *key;
	struct profile p;
};

static int parse_item(json_t *o, size_t i, const char *name, const char *root, struct item *it, char **err);

struct exporting {
	json_t *arr;
	const char *root;
	size_t rootlen;
	struct transfer_counts *n;
};

/* An entry as an import reads it back, or NULL when an import would refuse it: then
 * e->n says so. */
static json_t *exported(struct exporting *e, const char *key, json_t *o)
{
	struct item it = { 0 };
	char *err = NULL, *shown;

	if (o && !parse_item(o, (size_t)e->n->written, "", e->root, &it, &err)) {
		free(it.key);
		return o;
	}
	json_decref(o);
	if (!e->n->refused++) {
		shown = esc_dup(esc_term, key);
		snprintf(e->n->refused_why, sizeof(e->n->refused_why), "%s: %s", shown,
			 err ? err + 2 : "its key is not UTF-8");
		free(shown);
	}
	free(err);
	return NULL;
}

static int export_one(enum profile_kind kind, const char *key, const struct profile *p, void *arg)
{
	struct exporting *e = arg;
	const char *sep = kind == PROFILE_SIG ? strstr(key, SEP) : NULL;
	const char *src = sep ? sep + strlen(SEP) : NULL;
	char *portable = NULL;
	json_t *o, *c, *k;

	if (src && src[0] == '/' && !strncmp(src, e->root, e->rootlen) && src[e->rootlen] == '/')
		portable = xasprintf("%.*s%s%s", (int)(sep - key), key, SEP, src + e->rootlen + 1);
	if (has_abs_path(portable ? portable : key)) {
		e->n->skipped++;
		free(portable);
		return 0;
	}
	c = json_array();
	for (int i = 0; c && i < CURVE_POINTS; i++)
		json_array_append_new(c, json_integer((json_int_t)p->curve.pts[i]));
	k = json_string(portable ? portable : key); /* NULL: not UTF-8 */
	o = c && k ? json_pack("{s:s, s:o, s:I, s:I, s:I, s:I, s:o}", "kind",
			       kind == PROFILE_CLASS ? "class" : "signature", "key", k, "runs",
			       (json_int_t)(p->runs < PROFILE_MAX_RUNS ? p->runs : PROFILE_MAX_RUNS), "duration_ms",
			       (json_int_t)p->curve.duration_ms, "peak_bytes", (json_int_t)p->curve.peak_bytes,
			       "updated_s", (json_int_t)p->updated_s, "curve_bytes", c)
		       : (json_decref(c), json_decref(k), NULL);
	if (o && portable)
		json_object_set_new(o, "root_relative", json_true());
	free(portable);
	if (!c)
		return -ENOMEM;
	if (!(o = exported(e, key, o)))
		return 0;
	if (json_array_append_new(e->arr, o))
		return -ENOMEM;
	e->n->written++;
	return 0;
}

int transfer_export(struct store *st, FILE *f, const char *root, struct transfer_counts *n)
{
	struct exporting e = { json_array(), root, root_len(root), n };
	int rc, w = 0;

	memset(n, 0, sizeof(*n));
	if (!e.arr)
		return -ENOMEM;
	rc = st ? store_each(st, "", export_one, &e) : 0;
	/* One profile a line: a file that diffs and greps well. */
	if (!rc && (w = fprintf(f, "{\"format\": \"%s\", \"profiles\": [\n", TRANSFER_FORMAT)) < 0)
		rc = -EIO;
	n->bytes += w;
	for (size_t i = 0; !rc && i < json_array_size(e.arr); i++) {
		char *line = json_dumps(json_array_get(e.arr, i), JSON_COMPACT);
		if (!line)
			rc = -ENOMEM;
		else if ((w = fprintf(f, "%s%s\n", line, i + 1 < json_array_size(e.arr) ? "," : "")) < 0)
			rc = -EIO;
		n->bytes += w;
		free(line);
	}
	if (!rc && fputs("]}\n", f) == EOF)
		rc = -EIO;
	n->bytes += 3;
	json_decref(e.arr);
	return rc;
}

/* ---- import ---- */

static int bad(char **err, const char *name, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int bad(char **err, const char *name, const char *fmt, ...)
{
	char what[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	*err = xasprintf("%s: %s", name, what);
	return -EINVAL;
}

/* "NAME is 118 MiB; profiles import takes at most ...": -EINVAL. */
static int too_big(char **err, const char *name, const char *what)
{
	*err = xasprintf("%s %s; profiles import takes at most %d MiB (%d profiles): export fewer (headroom "
			 "profiles forget the ones not needed)", name, what, TRANSFER_MAX_MIB, TRANSFER_MAX_PROFILES);
	return -EINVAL;
}

static int get_int(json_t *o, size_t i, const char *field, long long lo, long long hi, int64_t *out,
		   const char *name, char **err)
{
	json_t *v = json_object_get(o, field);

	if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi)
		return bad(err, name, "profiles[%zu].%s: must be an integer from %lld to %lld", i, field, lo, hi);
	*out = json_integer_value(v);
	return 0;
}

/* One entry, checked field by field, into it. */
static int parse_item(json_t *o, size_t i, const char *name, const char *root, struct item *it, char **err)
{
	const char *kind = json_string_value(json_object_get(o, "kind"));
	const char *key = json_string_value(json_object_get(o, "key"));
	json_t *rel = json_object_get(o, "root_relative"), *c = json_object_get(o, "curve_bytes");
	int64_t v, now = (int64_t)time(NULL);
	const char *sep;
	int rc;

	if (!json_is_object(o))
		return bad(err, name, "profiles[%zu]: must be an object", i);
	if (!kind || (strcmp(kind, "class") && strcmp(kind, "signature")))
		return bad(err, name, "profiles[%zu].kind: must be \"class\" or \"signature\"", i);
	it->kind = strcmp(kind, "class") ? PROFILE_SIG : PROFILE_CLASS;
	if (!key || !*key || strlen(key) > MAX_KEY_BYTES)
		return bad(err, name, "profiles[%zu].key: must be a string of 1 to %d bytes", i, MAX_KEY_BYTES);
	for (const char *p = key; *p; p++)
		if ((unsigned char)*p < 0x20)
			return bad(err, name, "profiles[%zu].key: holds a control character", i);
	sep = strstr(key, SEP);
	if (it->kind == PROFILE_SIG ? !sep : sep != NULL)
		return bad(err, name, "profiles[%zu].key: a %s key %s \"%s\"", i, kind,
			   sep ? "has no" : "needs its", SEP);
	if (has_abs_path(key))
		return bad(err, name, "profiles[%zu].key: holds an absolute path (exported keys are relative)", i);
	if (rel && (!json_is_boolean(rel) || (json_is_true(rel) && (it->kind != PROFILE_SIG || !sep[strlen(SEP)]))))
		return bad(err, name, "profiles[%zu].root_relative: must be a boolean, true only for a signature "
			   "with a source", i);
	if ((rc = get_int(o, i, "runs", 1, PROFILE_MAX_RUNS, &it->p.runs, name, err)) ||
	    (rc = get_int(o, i, "duration_ms", 1, MAX_DURATION_MS, &it->p.curve.duration_ms, name, err)) ||
	    (rc = get_int(o, i, "updated_s", 0, now + FUTURE_SLACK_S, &it->p.updated_s, name, err)) ||
	    (rc = get_int(o, i, "peak_bytes", 0, MAX_BYTES, &v, name, err)))
		return rc;
	if (!json_is_array(c) || json_array_size(c) != CURVE_POINTS)
		return bad(err, name, "profiles[%zu].curve_bytes: must be an array of %d integers", i, CURVE_POINTS);
	for (size_t k = 0; k < CURVE_POINTS; k++) {
		json_t *pt = json_array_get(c, k);
		if (!json_is_integer(pt) || json_integer_value(pt) < 0 || json_integer_value(pt) > MAX_BYTES)
			return bad(err, name, "profiles[%zu].curve_bytes[%zu]: must be an integer from 0 to %lld", i, k,
				   MAX_BYTES);
		it->p.curve.pts[k] = (uint64_t)json_integer_value(pt);
	}
	curve_update_peak(&it->p.curve);
	if ((uint64_t)v != it->p.curve.peak_bytes)
		return bad(err, name, "profiles[%zu].peak_bytes: %lld is not the largest of curve_bytes (%llu)", i,
			   (long long)v, (unsigned long long)it->p.curve.peak_bytes);
	if (json_is_true(rel))
		it->key = xasprintf("%.*s%s%.*s/%s", (int)(sep - key), key, SEP, (int)root_len(root), root,
				    sep + strlen(SEP));
	else
		it->key = xstrdup(key);
	return 0;
}

/* The whole document, checked before anything is written. */
static int parse_doc(json_t *doc, const char *name, const char *root, struct item **items, size_t *nitems,
		     char **err)
{
	const char *format = json_string_value(json_object_get(doc, "format"));
	json_t *arr = json_object_get(doc, "profiles");
	size_t cap = 0;

	if (!json_is_object(doc))
		return bad(err, name, "not a profile export (expected a JSON object)");
	if (!format || strcmp(format, TRANSFER_FORMAT))
		return bad(err, name, "format: expected \"%s\", got %s%s%s", TRANSFER_FORMAT, format ? "\"" : "",
			   format ? format : "none", format ? "\"" : "");
	if (!json_is_array(arr))
		return bad(err, name, "profiles: must be an array");
	if (json_array_size(arr) > TRANSFER_MAX_PROFILES) {
		char what[64];
		snprintf(what, sizeof(what), "holds %zu profiles", json_array_size(arr));
		return too_big(err, name, what);
	}
	for (size_t i = 0; i < json_array_size(arr); i++) {
		ARRAY_GROW(*items, *nitems + 1, cap);
		memset(&(*items)[*nitems], 0, sizeof(**items));
		int rc = parse_item(json_array_get(arr, i), i, name, root, &(*items)[*nitems], err);
		if (rc)
			return rc;
		++*nitems;
	}
	return 0;
}

/* Reading an import, counting its bytes: past TRANSFER_MAX_BYTES it stops. */
struct bounded {
	FILE *f;
	long long read;
};

static size_t read_bounded(void *buf, size_t len, void *data)
{
	struct bounded *b = data;
	size_t got;

	if (b->read > TRANSFER_MAX_BYTES)
		return (size_t)-1;
	got = fread(buf, 1, len, b->f);
	b->read += (long long)got;
	return b->read > TRANSFER_MAX_BYTES || (!got && ferror(b->f)) ? (size_t)-1 : got;
}

/* f read whole as JSON, within TRANSFER_MAX_BYTES; 0 or -EINVAL with *err. */
static int load_bounded(FILE *f, const char *name, json_t **doc, char **err)
{
	struct bounded b = { f, 0 };
	json_error_t jerr;
	struct stat st;
	char what[64];

	if (!fstat(fileno(f), &st) && S_ISREG(st.st_mode) && st.st_size > TRANSFER_MAX_BYTES) {
		snprintf(what, sizeof(what), "is %lld MiB", (long long)((st.st_size + (1 << 20) - 1) >> 20));
		return too_big(err, name, what);
	}
	*doc = json_load_callback(read_bounded, &b, JSON_REJECT_DUPLICATES, &jerr);
	if (b.read > TRANSFER_MAX_BYTES) {
		json_decref(*doc);
		*doc = NULL;
		snprintf(what, sizeof(what), "is more than %d MiB", TRANSFER_MAX_MIB);
		return too_big(err, name, what);
	}
	if (!*doc)
		return bad(err, name, "line %d: %s", jerr.line, jerr.text);
	return 0;
}

int transfer_import(struct store *st, FILE *f, const char *name, const char *root, struct transfer_counts *n,
		    char **err)
{
	json_t *doc = NULL;
	struct item *items = NULL;
	size_t nitems = 0;
	int rc;

	memset(n, 0, sizeof(*n));
	*err = NULL;
	if ((rc = load_bounded(f, name, &doc, err)))
		goto out;
	rc = parse_doc(doc, name, root, &items, &nitems, err);
	if (rc)
		goto out;
	rc = store_begin(st);
	for (size_t i = 0; !rc && i < nitems; i++) {
		int added = 0;
		rc = store_merge(st, items[i].kind, items[i].key, &items[i].p, &added);
		if (added)
			n->added++;
		else
			n->merged++;
	}
	if (!rc)
		rc = store_commit(st);
	if (rc) {
		store_rollback(st);
		memset(n, 0, sizeof(*n));
		*err = xasprintf("cannot merge %s into the store: %s", name,
				 rc == -EBUSY ? "it is locked by another process" : strerror(-rc));
	}
out:
	for (size_t i = 0; i < nitems; i++)
		free(items[i].key);
	free(items);
	json_decref(doc);
	return rc;
}
