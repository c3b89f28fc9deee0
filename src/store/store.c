#include "store/store.h"

#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "util/xalloc.h"

struct store {
	sqlite3 *db;
	sqlite3_stmt *get, *put;
};

static const char schema[] =
	"CREATE TABLE IF NOT EXISTS profiles ("
	" kind INTEGER NOT NULL, key TEXT NOT NULL, runs INTEGER NOT NULL,"
	" duration_ms INTEGER NOT NULL, peak_bytes INTEGER NOT NULL,"
	" curve TEXT NOT NULL, updated_s INTEGER NOT NULL,"
	" PRIMARY KEY (kind, key));"
	"CREATE TABLE IF NOT EXISTS builds ("
	" key TEXT PRIMARY KEY, runs INTEGER NOT NULL, jobs INTEGER NOT NULL,"
	" wall_ms INTEGER NOT NULL, updated_s INTEGER NOT NULL);"
	"CREATE TABLE IF NOT EXISTS probes ("
	" key TEXT PRIMARY KEY, value TEXT NOT NULL, updated_s INTEGER NOT NULL);"
	"PRAGMA user_version = 3;";

char *store_default_path(void)
{
	const char *xdg = getenv("XDG_STATE_HOME");
	const char *home = getenv("HOME");

	if (xdg && *xdg)
		return xasprintf("%s/headroom/profiles.db", xdg);
	if (home && *home)
		return xasprintf("%s/.local/state/headroom/profiles.db", home);
	return xstrdup("headroom-profiles.db");
}

/* mkdir -p of the directory part of path. */
static int make_parent(const char *path)
{
	char dir[PATH_MAX];
	size_t len = strlen(path);
	char *slash;

	if (len >= sizeof(dir))
		return -ENAMETOOLONG;
	memcpy(dir, path, len + 1);
	slash = strrchr(dir, '/');
	if (!slash || slash == dir)
		return 0;
	*slash = '\0';
	for (char *p = dir + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(dir, 0755) && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(dir, 0755) && errno != EEXIST)
		return -errno;
	return 0;
}

int store_open(const char *path, struct store **out, char **err)
{
	struct store *st = xcalloc(1, sizeof(*st));
	int rc = make_parent(path);

	*err = NULL;
	if (rc) {
		*err = xasprintf("cannot create the directory of %s: %s", path, strerror(-rc));
		goto fail;
	}
	if (sqlite3_open_v2(path, &st->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL) != SQLITE_OK) {
		rc = -EIO;
		*err = xasprintf("cannot open %s: %s", path, st->db ? sqlite3_errmsg(st->db) : "out of memory");
		goto fail;
	}
	sqlite3_busy_timeout(st->db, 5000);
	if (sqlite3_exec(st->db, schema, NULL, NULL, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(st->db, "SELECT runs, duration_ms, peak_bytes, curve, updated_s"
				       " FROM profiles WHERE kind = ?1 AND key = ?2", -1, &st->get, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(st->db, "INSERT OR REPLACE INTO profiles"
				       " (kind, key, runs, duration_ms, peak_bytes, curve, updated_s)"
				       " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)", -1, &st->put, NULL) != SQLITE_OK) {
		rc = -EIO;
		*err = xasprintf("%s is not a usable profile store: %s", path, sqlite3_errmsg(st->db));
		goto fail;
	}
	*out = st;
	return 0;
fail:
	store_close(st);
	return rc;
}

void store_close(struct store *st)
{
	if (!st)
		return;
	sqlite3_finalize(st->get);
	sqlite3_finalize(st->put);
	sqlite3_close(st->db);
	free(st);
}

/* Parse a stored curve's points; 0 or -EINVAL. */
static int parse_points(const char *txt, struct curve *c)
{
	json_t *pts = txt ? json_loads(txt, 0, NULL) : NULL;
	int rc = -EINVAL;

	if (json_is_array(pts) && json_array_size(pts) == CURVE_POINTS) {
		for (size_t i = 0; i < CURVE_POINTS; i++)
			c->pts[i] = (uint64_t)json_integer_value(json_array_get(pts, i));
		rc = 0;
	}
	json_decref(pts);
	return rc;
}

int store_get(struct store *st, enum profile_kind kind, const char *key, struct profile *out)
{
	int rc = -ENOENT;

	sqlite3_reset(st->get);
	sqlite3_bind_int(st->get, 1, kind);
	sqlite3_bind_text(st->get, 2, key, -1, SQLITE_TRANSIENT);
	int s = sqlite3_step(st->get);
	if (s == SQLITE_ROW) {
		memset(out, 0, sizeof(*out));
		out->runs = sqlite3_column_int64(st->get, 0);
		out->curve.duration_ms = sqlite3_column_int64(st->get, 1);
		out->curve.peak_bytes = (uint64_t)sqlite3_column_int64(st->get, 2);
		out->updated_s = sqlite3_column_int64(st->get, 4);
		rc = parse_points((const char *)sqlite3_column_text(st->get, 3), &out->curve);
		if (!rc && out->curve.duration_ms <= 0)
			rc = -EINVAL;
	} else if (s != SQLITE_DONE) {
		rc = -EIO;
	}
	sqlite3_reset(st->get);
	return rc;
}

int store_put(struct store *st, enum profile_kind kind, const char *key, const struct profile *p)
{
	json_t *pts = json_array();
	char *txt;
	int rc;

	if (!pts)
		return -ENOMEM;
	for (size_t i = 0; i < CURVE_POINTS; i++)
		json_array_append_new(pts, json_integer((json_int_t)p->curve.pts[i]));
	txt = json_dumps(pts, JSON_COMPACT);
	json_decref(pts);
	if (!txt)
		return -ENOMEM;
	sqlite3_reset(st->put);
	sqlite3_bind_int(st->put, 1, kind);
	sqlite3_bind_text(st->put, 2, key, -1, SQLITE_TRANSIENT);
	sqlite3_bind_int64(st->put, 3, p->runs);
	sqlite3_bind_int64(st->put, 4, p->curve.duration_ms);
	sqlite3_bind_int64(st->put, 5, (sqlite3_int64)p->curve.peak_bytes);
	sqlite3_bind_text(st->put, 6, txt, -1, SQLITE_TRANSIENT);
	sqlite3_bind_int64(st->put, 7, p->updated_s ? p->updated_s : (int64_t)time(NULL));
	rc = sqlite3_step(st->put) == SQLITE_DONE ? 0 : -EIO;
	sqlite3_reset(st->put);
	free(txt);
	return rc;
}

int store_each(struct store *st, const char *substr,
	       int (*fn)(enum profile_kind kind, const char *key, const struct profile *p, void *arg), void *arg)
{
	sqlite3_stmt *q = NULL;
	int rc = 0, s;

	if (sqlite3_prepare_v2(st->db, "SELECT kind, key, runs, duration_ms, peak_bytes, curve, updated_s"
				       " FROM profiles WHERE instr(key, ?1) > 0 ORDER BY kind DESC, key",
			       -1, &q, NULL) != SQLITE_OK)
		return -EIO;
	sqlite3_bind_text(q, 1, substr, -1, SQLITE_TRANSIENT);
	while ((s = sqlite3_step(q)) == SQLITE_ROW) {
		struct profile p = { 0 };

		p.runs = sqlite3_column_int64(q, 2);
		p.curve.duration_ms = sqlite3_column_int64(q, 3);
		p.curve.peak_bytes = (uint64_t)sqlite3_column_int64(q, 4);
		p.updated_s = sqlite3_column_int64(q, 6);
		if (parse_points((const char *)sqlite3_column_text(q, 5), &p.curve))
			continue; /* a damaged row is skipped, not fatal */
		if (fn((enum profile_kind)sqlite3_column_int(q, 0), (const char *)sqlite3_column_text(q, 1), &p, arg))
			break;
	}
	if (s != SQLITE_ROW && s != SQLITE_DONE)
		rc = -EIO;
	sqlite3_finalize(q);
	return rc;
}

int store_forget(struct store *st, const char *substr)
{
	sqlite3_stmt *q = NULL;
	int rc;

	if (sqlite3_prepare_v2(st->db, "DELETE FROM profiles WHERE instr(key, ?1) > 0", -1, &q, NULL) != SQLITE_OK)
		return -EIO;
	sqlite3_bind_text(q, 1, substr, -1, SQLITE_TRANSIENT);
	rc = sqlite3_step(q) == SQLITE_DONE ? sqlite3_changes(st->db) : -EIO;
	sqlite3_finalize(q);
	return rc;
}

int store_begin(struct store *st)
{
	return sqlite3_exec(st->db, "BEGIN IMMEDIATE", NULL, NULL, NULL) == SQLITE_OK ? 0 : -EIO;
}

int store_commit(struct store *st)
{
	return sqlite3_exec(st->db, "COMMIT", NULL, NULL, NULL) == SQLITE_OK ? 0 : -EIO;
}

int store_build_get(struct store *st, const char *key, struct build_profile *out)
{
	sqlite3_stmt *q = NULL;
	int rc = -ENOENT, s;

	if (sqlite3_prepare_v2(st->db, "SELECT runs, jobs, wall_ms FROM builds WHERE key = ?1", -1, &q, NULL) != SQLITE_OK)
		return -EIO;
	sqlite3_bind_text(q, 1, key, -1, SQLITE_TRANSIENT);
	s = sqlite3_step(q);
	if (s == SQLITE_ROW) {
		out->runs = sqlite3_column_int64(q, 0);
		out->jobs = sqlite3_column_int64(q, 1);
		out->wall_ms = sqlite3_column_int64(q, 2);
		rc = out->jobs > 0 && out->wall_ms > 0 ? 0 : -EINVAL;
	} else if (s != SQLITE_DONE) {
		rc = -EIO;
	}
	sqlite3_finalize(q);
	return rc;
}

int store_build_put(struct store *st, const char *key, const struct build_profile *b)
{
	sqlite3_stmt *q = NULL;
	int rc;

	if (sqlite3_prepare_v2(st->db, "INSERT OR REPLACE INTO builds (key, runs, jobs, wall_ms, updated_s)"
				       " VALUES (?1, ?2, ?3, ?4, ?5)", -1, &q, NULL) != SQLITE_OK)
		return -EIO;
	sqlite3_bind_text(q, 1, key, -1, SQLITE_TRANSIENT);
	sqlite3_bind_int64(q, 2, b->runs);
	sqlite3_bind_int64(q, 3, b->jobs);
	sqlite3_bind_int64(q, 4, b->wall_ms);
	sqlite3_bind_int64(q, 5, (int64_t)time(NULL));
	rc = sqlite3_step(q) == SQLITE_DONE ? 0 : -EIO;
	sqlite3_finalize(q);
	return rc;
}

int store_probe_get(struct store *st, const char *key, char **value)
{
	sqlite3_stmt *q = NULL;
	int rc = -ENOENT, s;

	*value = NULL;
	if (sqlite3_prepare_v2(st->db, "SELECT value FROM probes WHERE key = ?1", -1, &q, NULL) != SQLITE_OK)
		return -EIO;
	sqlite3_bind_text(q, 1, key, -1, SQLITE_TRANSIENT);
	s = sqlite3_step(q);
	if (s == SQLITE_ROW) {
		*value = xstrdup((const char *)sqlite3_column_text(q, 0));
		rc = 0;
	} else if (s != SQLITE_DONE) {
		rc = -EIO;
	}
	sqlite3_finalize(q);
	return rc;
}

int store_probe_put(struct store *st, const char *key, const char *value)
{
	sqlite3_stmt *q = NULL;
	int rc;

	if (sqlite3_prepare_v2(st->db, "INSERT OR REPLACE INTO probes (key, value, updated_s) VALUES (?1, ?2, ?3)",
			       -1, &q, NULL) != SQLITE_OK)
		return -EIO;
	sqlite3_bind_text(q, 1, key, -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(q, 2, value, -1, SQLITE_TRANSIENT);
	sqlite3_bind_int64(q, 3, (int64_t)time(NULL));
	rc = sqlite3_step(q) == SQLITE_DONE ? 0 : -EIO;
	sqlite3_finalize(q);
	return rc;
}
