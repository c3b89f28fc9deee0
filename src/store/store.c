#include "store/store.h"

#include <ctype.h>
#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "util/grow.h"
#include "util/strbuf.h"
#include "util/strv.h"
#include "util/xalloc.h"

/* One observed job waiting for store_flush. */
struct pending {
	enum profile_kind kind;
	char *key;
	struct curve seen;
	int keep_pct, floor;
};

struct store {
	char *path;
	sqlite3 *db;                /* NULL while the file does not exist: it is made by the first write */
	int writable;               /* open for writing, the schema and application_id set */
	sqlite3_stmt *get, *put;
	int lookups_off;            /* a lookup found the store locked: no more lookups */
	int writes_off;             /* a write waited STORE_WAIT_MS in vain: no more waits */
	struct pending *q;
	size_t nq, capq;
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
	"CREATE TABLE IF NOT EXISTS governed ("
	" id INTEGER PRIMARY KEY, dir TEXT NOT NULL, command TEXT NOT NULL, ended_s INTEGER NOT NULL,"
	" wall_ms INTEGER NOT NULL, exit_status INTEGER NOT NULL, jobs INTEGER NOT NULL,"
	" compile_jobs INTEGER NOT NULL, freezes INTEGER NOT NULL, kills INTEGER NOT NULL,"
	" retries INTEGER NOT NULL, oom_kills INTEGER NOT NULL, jobs_cap INTEGER NOT NULL,"
	" budget_bytes INTEGER NOT NULL, safe_jobs INTEGER, plain_peak_bytes INTEGER,"
	" compile_wall_ms INTEGER, safe_fixed_wall_ms INTEGER, limit_bytes INTEGER);"
	"CREATE TABLE IF NOT EXISTS probe_runs ("
	" id INTEGER PRIMARY KEY, gpu TEXT NOT NULL, uuid TEXT, driver TEXT, cuda TEXT, torch TEXT,"
	" probed_s INTEGER, total_bytes INTEGER, context_lazy_bytes INTEGER, context_eager_bytes INTEGER,"
	" torch_overhead_bytes INTEGER);"
	"CREATE INDEX IF NOT EXISTS probe_runs_gpu ON probe_runs (gpu, probed_s);"
	"PRAGMA user_version = 6;";
#define SCHEMA_VERSION 6
/* The tables of every schema version (1: profiles, 2: builds, 3: probes, 4: governed,
 * 5: governed.limit_bytes, added to a table of schema 4 by create_schema; 6:
 * probe_runs, every probe kept, where probes kept one a GPU and driver).
 * A store of an older version is read as it is (a table it lacks reads as empty, and
 * probes reads as probe_runs) and gets the tables it lacks at its first write. */
static const char *const our_tables[] = { "profiles", "builds", "probes", "governed", "probe_runs", NULL };

/* The rows of probes (schemas 3 to 5: the JSON probe printed, one a GPU and driver) as
 * rows of probe_runs: what a store of schema 6 gets from them, and what one older,
 * read as it is, reads. A value that is not there is NULL, as in probe_runs. */
#define PROBE_COLUMNS "gpu, uuid, driver, cuda, torch, probed_s, total_bytes, context_lazy_bytes," \
	" context_eager_bytes, torch_overhead_bytes"
#define PROBES_AS_RUNS "(SELECT rowid AS id, coalesce(json_extract(value, '$.gpu'), key) AS gpu, NULL AS uuid," \
	" json_extract(value, '$.driver') AS driver, json_extract(value, '$.torch_cuda') AS cuda," \
	" json_extract(value, '$.torch_version') AS torch, updated_s AS probed_s," \
	" json_extract(value, '$.total_bytes') AS total_bytes," \
	" json_extract(value, '$.context_lazy_bytes') AS context_lazy_bytes," \
	" json_extract(value, '$.context_eager_bytes') AS context_eager_bytes," \
	" json_extract(value, '$.torch_overhead_bytes') AS torch_overhead_bytes" \
	" FROM probes WHERE json_valid(value))"

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

/* An SQLite result as -errno. */
static int sqlite_errno(int s)
{
	switch (s & 0xff) {
	case SQLITE_OK: return 0;
	case SQLITE_BUSY: case SQLITE_LOCKED: return -EBUSY;
	case SQLITE_READONLY: return -EROFS;
	case SQLITE_PERM: case SQLITE_AUTH: return -EACCES;
	case SQLITE_FULL: return -ENOSPC;
	case SQLITE_NOMEM: return -ENOMEM;
	case SQLITE_CANTOPEN: return -EACCES;
	case SQLITE_NOTADB: return -EINVAL;
	default: return -EIO;
	}
}

/* One integer a query returns (PRAGMA application_id, user_version), or -errno. */
static int query_int(sqlite3 *db, const char *sql, int *out)
{
	sqlite3_stmt *q = NULL;
	int s = sqlite3_prepare_v2(db, sql, -1, &q, NULL), rc;

	if (s != SQLITE_OK)
		return sqlite_errno(s);
	s = sqlite3_step(q);
	rc = s == SQLITE_ROW ? 0 : sqlite_errno(s == SQLITE_DONE ? SQLITE_ERROR : s);
	if (!rc)
		*out = sqlite3_column_int(q, 0);
	sqlite3_finalize(q);
	return rc;
}

/* Does the database hold only headroom's tables, profiles among them? 1, 0, or -errno. */
static int only_our_tables(sqlite3 *db)
{
	sqlite3_stmt *q = NULL;
	int s = sqlite3_prepare_v2(db, "SELECT name FROM sqlite_master WHERE type = 'table'"
				       " AND substr(name, 1, 7) != 'sqlite_'", -1, &q, NULL);
	int ours = 1, profiles = 0;

	if (s != SQLITE_OK)
		return sqlite_errno(s);
	while ((s = sqlite3_step(q)) == SQLITE_ROW) {
		const char *name = (const char *)sqlite3_column_text(q, 0);
		if (!name || !strv_contains(our_tables, name))
			ours = 0;
		else if (!strcmp(name, "profiles"))
			profiles = 1;
	}
	sqlite3_finalize(q);
	if (s != SQLITE_DONE)
		return sqlite_errno(s);
	return ours && profiles;
}

/* Does the database hold no table at all (1), as a store another build is making right
 * now does between its creation and its schema, or an empty file? */
static int no_tables(sqlite3 *db)
{
	int n = 0, rc = query_int(db, "SELECT count(*) FROM sqlite_master", &n);

	return rc ? rc : n == 0;
}

/* Is the open database headroom's? Its application_id says so; a store made before
 * headroom set one has none, schema version 1 to 3 and only headroom's tables. Reads
 * only. *version gets the schema version. 0 ours, 1 empty (no id, no version, no table:
 * a store being made by another build, to be taken as new), -EMEDIUMTYPE not
 * headroom's (*err says what it is), other -errno. */
static int check_ours(sqlite3 *db, const char *path, int *version, char **err)
{
	int app = 0, rc = query_int(db, "PRAGMA application_id", &app);

	if (!rc)
		rc = query_int(db, "PRAGMA user_version", version);
	if (rc == -EINVAL) {
		*err = xasprintf("%s is not a SQLite database, so not a headroom profile store: it is left as it is", path);
		return -EMEDIUMTYPE;
	}
	if (rc)
		return rc;
	if (app == STORE_APPLICATION_ID && *version >= 1 && *version <= SCHEMA_VERSION)
		return 0;
	if (!app && !*version && (rc = no_tables(db)))
		return rc;
	if (app == STORE_APPLICATION_ID) {
		*err = xasprintf("%s is a profile store of a newer headroom (schema %d; this one knows %d): it is left as it is",
				 path, *version, SCHEMA_VERSION);
		return -EMEDIUMTYPE;
	}
	if (!app && *version >= 1 && *version <= SCHEMA_VERSION) {
		rc = only_our_tables(db);
		if (rc < 0)
			return rc;
		if (rc)
			return 0;
	}
	*err = xasprintf("%s is not a headroom profile store (SQLite application_id %d, user_version %d, other tables): "
			 "it is left as it is", path, app, *version);
	return -EMEDIUMTYPE;
}

static int exec_rc(sqlite3 *db, const char *sql)
{
	return sqlite_errno(sqlite3_exec(db, sql, NULL, NULL, NULL));
}

/* Whether the governed table has limit_bytes (schema 5): 1, 0, or 0 without the table. */
static int has_limit_column(sqlite3 *db)
{
	sqlite3_stmt *q = NULL;
	int ok = sqlite3_prepare_v2(db, "SELECT limit_bytes FROM governed LIMIT 0", -1, &q, NULL) == SQLITE_OK;

	sqlite3_finalize(q);
	return ok;
}

/* Whether the database has the table name: 1 or 0. */
static int has_table(sqlite3 *db, const char *name)
{
	sqlite3_stmt *q = NULL;
	int has = 0;

	if (sqlite3_prepare_v2(db, "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?1", -1, &q,
			       NULL) == SQLITE_OK) {
		sqlite3_bind_text(q, 1, name, -1, SQLITE_STATIC);
		has = sqlite3_step(q) == SQLITE_ROW;
	}
	sqlite3_finalize(q);
	return has;
}

/* Make the schema current and mark the file headroom's, in one transaction. */
static int create_schema(sqlite3 *db)
{
	char *app = sqlite3_mprintf("PRAGMA application_id = %d", STORE_APPLICATION_ID);
	int rc = app ? exec_rc(db, "BEGIN IMMEDIATE") : -ENOMEM, had_runs;

	if (rc) {
		sqlite3_free(app);
		return rc;
	}
	had_runs = has_table(db, "probe_runs");
	rc = exec_rc(db, schema);
	/* a governed table of schema 4 was kept as it was by CREATE TABLE IF NOT EXISTS */
	if (!rc && !has_limit_column(db))
		rc = exec_rc(db, "ALTER TABLE governed ADD COLUMN limit_bytes INTEGER");
	/* schema 6: the probes kept before become the first rows of their GPU's history;
	 * probes itself stays as it was */
	if (!rc && !had_runs)
		rc = exec_rc(db, "INSERT INTO probe_runs (" PROBE_COLUMNS ") SELECT " PROBE_COLUMNS " FROM "
				 PROBES_AS_RUNS " ORDER BY probed_s, id");
	if (!rc)
		rc = exec_rc(db, app);
	if (!rc)
		rc = exec_rc(db, "COMMIT");
	if (rc)
		sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
	sqlite3_free(app);
	return rc;
}

static int prepare(struct store *st)
{
	int s = sqlite3_prepare_v2(st->db, "SELECT runs, duration_ms, peak_bytes, curve, updated_s"
					   " FROM profiles WHERE kind = ?1 AND key = ?2", -1, &st->get, NULL);

	if (s == SQLITE_OK && st->writable)
		s = sqlite3_prepare_v2(st->db, "INSERT OR REPLACE INTO profiles"
					       " (kind, key, runs, duration_ms, peak_bytes, curve, updated_s)"
					       " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)", -1, &st->put, NULL);
	return sqlite_errno(s);
}

static void close_db(struct store *st)
{
	sqlite3_finalize(st->get);
	sqlite3_finalize(st->put);
	sqlite3_close(st->db);
	st->get = st->put = NULL;
	st->db = NULL;
	st->writable = 0;
}

/* A file that is not there, or empty, holds no database yet: the store is new. */
static int is_new(const char *path, int *rc)
{
	struct stat sb;

	*rc = 0;
	if (stat(path, &sb) == 0)
		return sb.st_size == 0;
	if (errno == ENOENT)
		return 1;
	*rc = -errno;
	return 0;
}

/* The file: URI of path, every byte but [A-Za-z0-9/._~-] %-encoded; caller frees. */
static char *file_uri(const char *path, const char *query)
{
	struct strbuf u = STRBUF_INIT;

	strbuf_add(&u, "file:");
	for (const unsigned char *c = (const unsigned char *)path; *c; c++) {
		if (isalnum(*c) || strchr("/._~-", *c))
			strbuf_addf(&u, "%c", *c);
		else
			strbuf_addf(&u, "%%%02X", *c);
	}
	strbuf_addf(&u, "?%s", query);
	return strbuf_detach(&u);
}

/* Open st->path for reading (nothing of it is changed) and check that it is headroom's.
 * A WAL database is read through its -shm file, made by the first reader: where this
 * process may not make it (another user's directory), no connection is open (the last
 * one removes it), and the file is read as immutable. */
static int open_read(struct store *st, int *version, char **err)
{
	int rc = -EROFS;

	/* The first pass always runs; the second only when the first could not read. */
	for (int immutable = 0; immutable < 2 && (rc == -EROFS || rc == -EACCES); immutable++) {
		char *uri = file_uri(st->path, immutable ? "mode=ro&immutable=1" : "mode=ro");
		int s = sqlite3_open_v2(uri, &st->db, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, NULL);

		free(uri);
		free(*err);
		*err = NULL;
		if (s != SQLITE_OK) {
			rc = st->db ? sqlite_errno(sqlite3_errcode(st->db)) : -ENOMEM;
			*err = xasprintf("cannot open %s: %s", st->path, st->db ? sqlite3_errmsg(st->db) : "out of memory");
			close_db(st);
			continue;
		}
		sqlite3_busy_timeout(st->db, STORE_WAIT_MS);
		rc = check_ours(st->db, st->path, version, err);
		if (rc == 1) {
			/* another build is making it: nothing to read yet, as with no file */
			close_db(st);
			*version = SCHEMA_VERSION;
			return 0;
		}
		if (!rc && (rc = prepare(st)))
			*err = xasprintf("%s is not a usable profile store: %s", st->path, sqlite3_errmsg(st->db));
		else if (rc && !*err)
			*err = xasprintf("cannot read %s: %s", st->path,
					 rc == -EBUSY ? "locked by another process" : strerror(-rc));
		if (rc)
			close_db(st);
	}
	return rc;
}

/* A path that is there but no regular file (a device, a FIFO, a directory) is no store:
 * SQLite would read or write it, and make PATH-journal beside it (/dev/null-journal). */
static int not_a_file(const char *path, char **err)
{
	struct stat sb;

	if (stat(path, &sb) || S_ISREG(sb.st_mode))
		return 0;
	if (err)
		*err = xasprintf("%s is not a regular file, so not a profile store: it is left as it is (give a "
				 "store's file, or a path where one may be made)", path);
	return -EMEDIUMTYPE;
}

/* Reopen for writing, making the file (and its directory) if there is none: the first
 * write of a handle. The read-only handle stays when this fails. 0 or -errno (-EROFS:
 * the file or its directory cannot be written; -EMEDIUMTYPE: someone else's database
 * appeared at the path meanwhile). */
static int make_writable(struct store *st)
{
	struct store w = { .path = st->path, .writable = 1 };
	char *err = NULL;
	int version = 0, app = 0, rc;

	if (st->writable)
		return 0;
	rc = not_a_file(st->path, NULL);
	if (!rc)
		rc = make_parent(st->path);
	if (rc)
		return rc;
	if (sqlite3_open_v2(st->path, &w.db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL) != SQLITE_OK) {
		rc = w.db ? sqlite_errno(sqlite3_errcode(w.db)) : -ENOMEM;
		goto fail;
	}
	/* SQLite opens a file it may not write read-only, without saying so. */
	if (sqlite3_db_readonly(w.db, "main")) {
		rc = -EROFS;
		goto fail;
	}
	sqlite3_busy_timeout(w.db, STORE_WAIT_MS);
	if (!is_new(st->path, &rc) && (rc = rc ? rc : check_ours(w.db, st->path, &version, &err)) < 0)
		goto fail;
	rc = 0; /* 1: empty, made here as if new */
	/* WAL: readers never wait for a writer. A file system without it keeps the rollback
	 * journal, and the lookups' short wait still bounds what a lock costs the loop. */
	rc = exec_rc(w.db, "PRAGMA journal_mode = WAL");
	if (!rc)
		rc = exec_rc(w.db, "PRAGMA synchronous = NORMAL");
	if (!rc)
		rc = query_int(w.db, "PRAGMA application_id", &app);
	if (!rc && (app != STORE_APPLICATION_ID || version != SCHEMA_VERSION))
		rc = create_schema(w.db);
	if (!rc)
		rc = prepare(&w);
	if (rc)
		goto fail;
	close_db(st);
	st->db = w.db;
	st->get = w.get;
	st->put = w.put;
	st->writable = 1;
	return 0;
fail:
	free(err);
	close_db(&w);
	return rc;
}

/* A handle opened before the file existed reads it once another process made it. Not
 * ours, unreadable: nothing is read (a write says why). */
static int can_read(struct store *st)
{
	char *err = NULL;
	int version, rc;

	if (!st->db && !is_new(st->path, &rc) && !rc)
		open_read(st, &version, &err);
	free(err);
	return st->db != NULL;
}

int store_open(const char *path, struct store **out, char **err)
{
	struct store *st = xcalloc(1, sizeof(*st));
	int rc, version = 0;

	*err = NULL;
	st->path = xstrdup(path);
	if ((rc = not_a_file(path, err))) {
		store_close(st);
		return rc;
	}
	if (is_new(path, &rc)) {
		*out = st; /* nothing to read; the first write makes it */
		return 0;
	}
	if (!rc)
		rc = open_read(st, &version, err);
	if (!rc && version < SCHEMA_VERSION) {
		/* An older store of headroom's gets its new tables now if it can; read as it
		 * is if it cannot. */
		make_writable(st);
	}
	if (rc) {
		if (!*err)
			*err = xasprintf("cannot open %s: %s", path, strerror(-rc));
		store_close(st);
		return rc;
	}
	*out = st;
	return 0;
}

void store_close(struct store *st)
{
	if (!st)
		return;
	for (size_t i = 0; i < st->nq; i++)
		free(st->q[i].key);
	free(st->q);
	close_db(st);
	free(st->path);
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

/* The row of kind and key: 0, -ENOENT, -EINVAL (damaged), -EBUSY, -EIO. */
static int row_get(struct store *st, enum profile_kind kind, const char *key, struct profile *out)
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
		if (!rc && (out->curve.duration_ms <= 0 || out->runs <= 0))
			rc = -EINVAL;
	} else if (s == SQLITE_BUSY) {
		rc = -EBUSY;
	} else if (s != SQLITE_DONE) {
		rc = -EIO;
	}
	sqlite3_reset(st->get);
	return rc;
}

int store_get(struct store *st, enum profile_kind kind, const char *key, struct profile *out)
{
	int rc;

	if (!can_read(st))
		return -ENOENT;
	if (st->lookups_off)
		return -EBUSY;
	sqlite3_busy_timeout(st->db, STORE_LOOKUP_WAIT_MS);
	rc = row_get(st, kind, key, out);
	sqlite3_busy_timeout(st->db, STORE_WAIT_MS);
	if (rc == -EBUSY)
		st->lookups_off = 1;
	return rc;
}

/* Step a write; a store found locked past the wait once is not waited on again. */
static int step_write(struct store *st, sqlite3_stmt *q)
{
	int s;

	if (st->writes_off)
		return -EBUSY;
	s = sqlite3_step(q);
	if (s == SQLITE_BUSY)
		st->writes_off = 1;
	return s == SQLITE_DONE ? 0 : s == SQLITE_BUSY ? -EBUSY : -EIO;
}

static int row_put(struct store *st, enum profile_kind kind, const char *key, const struct profile *p)
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
	rc = step_write(st, st->put);
	sqlite3_reset(st->put);
	free(txt);
	return rc;
}

void store_learn(struct store *st, enum profile_kind kind, const char *key, const struct curve *seen,
		 int keep_pct, int floor)
{
	ARRAY_GROW(st->q, st->nq + 1, st->capq);
	st->q[st->nq++] = (struct pending){ kind, xstrdup(key), *seen, keep_pct, floor };
}

/* Inside a transaction begun for it: fold every queued observation into its row as it
 * is now, commit, and empty the queue; on failure roll back and keep the queue. */
static int fold_queue(struct store *st)
{
	int64_t now = (int64_t)time(NULL);
	int rc = 0;

	for (size_t i = 0; i < st->nq && !rc; i++) {
		struct pending *o = &st->q[i];
		struct profile p;
		/* The row as it is now, with what other builds saved since this one read it. */
		int got = row_get(st, o->kind, o->key, &p);

		if (got && got != -ENOENT && got != -EINVAL) {
			rc = got;
			break;
		}
		if (got)
			p.runs = 0; /* unknown or damaged: this observation is the first */
		curve_learn(&p.curve, &o->seen, !p.runs, o->keep_pct, o->floor);
		p.runs += p.runs < PROFILE_MAX_RUNS;
		p.updated_s = now;
		rc = row_put(st, o->kind, o->key, &p);
	}
	if (!rc)
		rc = store_commit(st);
	if (rc) {
		store_rollback(st);
		return rc;
	}
	for (size_t i = 0; i < st->nq; i++)
		free(st->q[i].key);
	st->nq = 0;
	return 0;
}

int store_flush(struct store *st)
{
	int rc;

	if (!st->nq)
		return 0;
	rc = store_begin(st);
	return rc ? rc : fold_queue(st);
}

int store_flush_within(struct store *st, int wait_ms)
{
	int rc;

	if (!st->nq)
		return 0;
	if (st->writes_off)
		return -EBUSY;
	rc = make_writable(st);
	if (rc)
		return rc;
	sqlite3_busy_timeout(st->db, wait_ms);
	rc = exec_rc(st->db, "BEGIN IMMEDIATE");
	sqlite3_busy_timeout(st->db, STORE_WAIT_MS);
	return rc ? rc : fold_queue(st);
}

int store_merge(struct store *st, enum profile_kind kind, const char *key, const struct profile *p, int *added)
{
	struct profile cur;
	int rc = row_get(st, kind, key, &cur);

	*added = rc == -ENOENT || rc == -EINVAL;
	if (*added)
		return row_put(st, kind, key, p);
	if (rc)
		return rc;
	curve_merge(&cur.curve, cur.runs, &p->curve, p->runs, kind == PROFILE_SIG);
	cur.runs = cur.runs > PROFILE_MAX_RUNS - p->runs ? PROFILE_MAX_RUNS : cur.runs + p->runs;
	if (p->updated_s > cur.updated_s)
		cur.updated_s = p->updated_s;
	return row_put(st, kind, key, &cur);
}

int store_each(struct store *st, const char *substr,
	       int (*fn)(enum profile_kind kind, const char *key, const struct profile *p, void *arg), void *arg)
{
	sqlite3_stmt *q = NULL;
	int rc = 0, s;

	if (!can_read(st))
		return 0;
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

int store_each_file(struct store *st, const char *class_key,
		    int (*fn)(const char *key, uint64_t peak_bytes, void *arg), void *arg)
{
	sqlite3_stmt *q = NULL;
	int rc = 0, s;
	/* "C :: " up to "C ::!": '!' follows ' ' */
	char *lo = xasprintf("%s :: ", class_key), *hi = xasprintf("%s ::!", class_key);

	if (!can_read(st))
		goto out;
	if (sqlite3_prepare_v2(st->db, "SELECT key, peak_bytes FROM profiles WHERE kind = 0 AND key >= ?1 AND key < ?2"
				       " ORDER BY key", -1, &q, NULL) != SQLITE_OK) {
		rc = -EIO;
		goto out;
	}
	sqlite3_bind_text(q, 1, lo, -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(q, 2, hi, -1, SQLITE_TRANSIENT);
	while ((s = sqlite3_step(q)) == SQLITE_ROW) {
		sqlite3_int64 peak = sqlite3_column_int64(q, 1);
		if (peak > 0 && fn((const char *)sqlite3_column_text(q, 0), (uint64_t)peak, arg))
			break;
	}
	if (s != SQLITE_ROW && s != SQLITE_DONE)
		rc = -EIO;
	sqlite3_finalize(q);
out:
	free(lo);
	free(hi);
	return rc;
}

int store_forget(struct store *st, const char *substr)
{
	sqlite3_stmt *q = NULL;
	int rc = make_writable(st);

	if (rc)
		return rc;
	if (sqlite3_prepare_v2(st->db, "DELETE FROM profiles WHERE instr(key, ?1) > 0", -1, &q, NULL) != SQLITE_OK)
		return -EIO;
	sqlite3_bind_text(q, 1, substr, -1, SQLITE_TRANSIENT);
	rc = step_write(st, q);
	if (!rc)
		rc = sqlite3_changes(st->db);
	sqlite3_finalize(q);
	return rc;
}

int store_begin(struct store *st)
{
	int rc;

	if (st->writes_off)
		return -EBUSY;
	rc = make_writable(st);
	if (rc)
		return rc;
	rc = exec_rc(st->db, "BEGIN IMMEDIATE");
	if (rc == -EBUSY)
		st->writes_off = 1;
	return rc;
}

int store_commit(struct store *st)
{
	/* In WAL mode a commit holding the write lock does not wait for readers. */
	return exec_rc(st->db, "COMMIT");
}

void store_rollback(struct store *st)
{
	if (st->db && !sqlite3_get_autocommit(st->db))
		sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
}

int store_build_get(struct store *st, const char *key, struct build_profile *out)
{
	sqlite3_stmt *q = NULL;
	int rc = -ENOENT, s;

	if (!can_read(st))
		return -ENOENT;
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
	int rc = make_writable(st);

	if (rc)
		return rc;
	if (sqlite3_prepare_v2(st->db, "INSERT OR REPLACE INTO builds (key, runs, jobs, wall_ms, updated_s)"
				       " VALUES (?1, ?2, ?3, ?4, ?5)", -1, &q, NULL) != SQLITE_OK)
		return -EIO;
	sqlite3_bind_text(q, 1, key, -1, SQLITE_TRANSIENT);
	sqlite3_bind_int64(q, 2, b->runs);
	sqlite3_bind_int64(q, 3, b->jobs);
	sqlite3_bind_int64(q, 4, b->wall_ms);
	sqlite3_bind_int64(q, 5, (int64_t)time(NULL));
	rc = step_write(st, q);
	sqlite3_finalize(q);
	return rc;
}

static void bind_known(sqlite3_stmt *q, int i, int64_t v)
{
	if (v < 0)
		sqlite3_bind_null(q, i);
	else
		sqlite3_bind_int64(q, i, v);
}

static void bind_text_known(sqlite3_stmt *q, int i, const char *s)
{
	if (*s)
		sqlite3_bind_text(q, i, s, -1, SQLITE_TRANSIENT);
	else
		sqlite3_bind_null(q, i);
}

int store_probe_add(struct store *st, const struct gpu_probe *p)
{
	sqlite3_stmt *q = NULL;
	int rc = make_writable(st);

	if (rc)
		return rc;
	if (sqlite3_prepare_v2(st->db, "INSERT INTO probe_runs (" PROBE_COLUMNS ") VALUES (?1, ?2, ?3, ?4, ?5, ?6,"
				       " ?7, ?8, ?9, ?10)", -1, &q, NULL) != SQLITE_OK)
		return -EIO;
	sqlite3_bind_text(q, 1, p->gpu, -1, SQLITE_TRANSIENT);
	bind_text_known(q, 2, p->uuid);
	bind_text_known(q, 3, p->driver);
	bind_text_known(q, 4, p->cuda);
	bind_text_known(q, 5, p->torch);
	bind_known(q, 6, p->probed_s);
	bind_known(q, 7, p->total_bytes);
	bind_known(q, 8, p->context_lazy_bytes);
	bind_known(q, 9, p->context_eager_bytes);
	bind_known(q, 10, p->torch_overhead_bytes);
	rc = step_write(st, q);
	sqlite3_finalize(q);
	return rc;
}

static int64_t column_known(sqlite3_stmt *q, int i);

static void column_text(sqlite3_stmt *q, int i, char *buf, size_t len)
{
	const char *s = (const char *)sqlite3_column_text(q, i);

	snprintf(buf, len, "%s", s ? s : "");
}

/* A row of PROBE_COLUMNS from column 0 on. */
static void probe_row(sqlite3_stmt *q, struct gpu_probe *p)
{
	probe_init(p);
	column_text(q, 0, p->gpu, sizeof(p->gpu));
	column_text(q, 1, p->uuid, sizeof(p->uuid));
	column_text(q, 2, p->driver, sizeof(p->driver));
	column_text(q, 3, p->cuda, sizeof(p->cuda));
	column_text(q, 4, p->torch, sizeof(p->torch));
	p->probed_s = column_known(q, 5);
	p->total_bytes = column_known(q, 6);
	p->context_lazy_bytes = column_known(q, 7);
	p->context_eager_bytes = column_known(q, 8);
	p->torch_overhead_bytes = column_known(q, 9);
}

/* Prepare a query of the probes, "FROM %s" in sql: probe_runs, or in a store older than
 * schema 6 read as it is, probes read as its rows. */
static int probe_query(struct store *st, const char *sql, sqlite3_stmt **q)
{
	char *text = xasprintf(sql, has_table(st->db, "probe_runs") ? "probe_runs" : PROBES_AS_RUNS);
	int s = sqlite3_prepare_v2(st->db, text, -1, q, NULL);

	free(text);
	return s == SQLITE_OK ? 0 : -EIO;
}

int store_probe_latest(struct store *st, const struct gpu_probe *gpu, int with_torch, struct gpu_probe *out)
{
	sqlite3_stmt *q = NULL;
	int rc, s;

	if (!can_read(st) || (!has_table(st->db, "probe_runs") && !has_table(st->db, "probes")))
		return -ENOENT;
	rc = probe_query(st, "SELECT " PROBE_COLUMNS " FROM %s WHERE gpu = ?1 AND (uuid IS NULL OR ?2 IS NULL"
			     " OR uuid = ?2) AND (?3 = 0 OR torch_overhead_bytes IS NOT NULL)"
			     " ORDER BY probed_s DESC, id DESC LIMIT 1", &q);
	if (rc)
		return rc;
	sqlite3_bind_text(q, 1, gpu->gpu, -1, SQLITE_TRANSIENT);
	bind_text_known(q, 2, gpu->uuid);
	sqlite3_bind_int(q, 3, with_torch);
	s = sqlite3_step(q);
	rc = s == SQLITE_ROW ? 0 : s == SQLITE_DONE ? -ENOENT : -EIO;
	if (!rc)
		probe_row(q, out);
	sqlite3_finalize(q);
	return rc;
}

int store_probe_each(struct store *st, int (*fn)(const struct gpu_probe *p, void *arg), void *arg)
{
	sqlite3_stmt *q = NULL;
	int rc, s = SQLITE_DONE;

	if (!can_read(st) || (!has_table(st->db, "probe_runs") && !has_table(st->db, "probes")))
		return 0;
	rc = probe_query(st, "SELECT " PROBE_COLUMNS " FROM %s ORDER BY gpu, probed_s, id", &q);
	while (!rc && (s = sqlite3_step(q)) == SQLITE_ROW) {
		struct gpu_probe p;

		probe_row(q, &p);
		rc = fn(&p, arg);
	}
	if (!rc && s != SQLITE_DONE && s != SQLITE_ROW)
		rc = -EIO;
	sqlite3_finalize(q);
	return rc;
}

int store_governed_add(struct store *st, const struct governed_build *b)
{
	sqlite3_stmt *q = NULL;
	int rc = make_writable(st);

	if (rc)
		return rc;
	if (sqlite3_prepare_v2(st->db, "INSERT INTO governed (dir, command, ended_s, wall_ms, exit_status, jobs,"
				       " compile_jobs, freezes, kills, retries, oom_kills, jobs_cap, budget_bytes,"
				       " safe_jobs, plain_peak_bytes, compile_wall_ms, safe_fixed_wall_ms, limit_bytes)"
				       " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18)",
			       -1, &q, NULL) != SQLITE_OK)
		return -EIO;
	sqlite3_bind_text(q, 1, b->dir, -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(q, 2, b->command, -1, SQLITE_TRANSIENT);
	sqlite3_bind_int64(q, 3, b->ended_s);
	sqlite3_bind_int64(q, 4, b->wall_ms);
	sqlite3_bind_int64(q, 5, b->exit_status);
	sqlite3_bind_int64(q, 6, b->jobs);
	sqlite3_bind_int64(q, 7, b->compile_jobs);
	sqlite3_bind_int64(q, 8, b->freezes);
	sqlite3_bind_int64(q, 9, b->kills);
	sqlite3_bind_int64(q, 10, b->retries);
	sqlite3_bind_int64(q, 11, b->oom_kills);
	sqlite3_bind_int64(q, 12, b->jobs_cap);
	sqlite3_bind_int64(q, 13, b->budget_bytes);
	bind_known(q, 14, b->safe_jobs);
	bind_known(q, 15, b->plain_peak_bytes);
	bind_known(q, 16, b->compile_wall_ms);
	bind_known(q, 17, b->safe_fixed_wall_ms);
	bind_known(q, 18, b->limit_bytes);
	rc = step_write(st, q);
	sqlite3_finalize(q);
	return rc;
}

static int64_t column_known(sqlite3_stmt *q, int i)
{
	return sqlite3_column_type(q, i) == SQLITE_NULL ? -1 : sqlite3_column_int64(q, i);
}

int store_governed_each(struct store *st, int (*fn)(const struct governed_build *b, void *arg), void *arg)
{
	sqlite3_stmt *q = NULL;
	int s, rc = 0;

	if (!can_read(st))
		return 0;
	/* a store of schema 4 read as it is has no limit: unknown */
	s = sqlite3_prepare_v2(st->db, has_limit_column(st->db)
		? "SELECT dir, command, ended_s, wall_ms, exit_status, jobs, compile_jobs, freezes, kills, retries,"
		  " oom_kills, jobs_cap, budget_bytes, safe_jobs, plain_peak_bytes, compile_wall_ms,"
		  " safe_fixed_wall_ms, limit_bytes FROM governed ORDER BY id"
		: "SELECT dir, command, ended_s, wall_ms, exit_status, jobs, compile_jobs, freezes, kills, retries,"
		  " oom_kills, jobs_cap, budget_bytes, safe_jobs, plain_peak_bytes, compile_wall_ms,"
		  " safe_fixed_wall_ms, NULL FROM governed ORDER BY id", -1, &q, NULL);
	if (s != SQLITE_OK) {
		/* a store older than the table: no build recorded yet */
		int none = strstr(sqlite3_errmsg(st->db), "no such table") != NULL;
		sqlite3_finalize(q);
		return none ? 0 : -EIO;
	}
	while (!rc && (s = sqlite3_step(q)) == SQLITE_ROW) {
		const char *dir = (const char *)sqlite3_column_text(q, 0), *cmd = (const char *)sqlite3_column_text(q, 1);
		struct governed_build b = {
			.dir = dir ? dir : "", .command = cmd ? cmd : "",
			.ended_s = sqlite3_column_int64(q, 2), .wall_ms = sqlite3_column_int64(q, 3),
			.exit_status = (int)sqlite3_column_int64(q, 4), .jobs = sqlite3_column_int64(q, 5),
			.compile_jobs = sqlite3_column_int64(q, 6), .freezes = sqlite3_column_int64(q, 7),
			.kills = sqlite3_column_int64(q, 8), .retries = sqlite3_column_int64(q, 9),
			.oom_kills = sqlite3_column_int64(q, 10), .jobs_cap = sqlite3_column_int64(q, 11),
			.budget_bytes = sqlite3_column_int64(q, 12), .safe_jobs = column_known(q, 13),
			.plain_peak_bytes = column_known(q, 14), .compile_wall_ms = column_known(q, 15),
			.safe_fixed_wall_ms = column_known(q, 16), .limit_bytes = column_known(q, 17),
		};
		rc = fn(&b, arg);
	}
	if (!rc && s != SQLITE_DONE && s != SQLITE_ROW)
		rc = -EIO;
	sqlite3_finalize(q);
	return rc;
}

int store_governed_tally(struct store *st, int (*fn)(const struct governed_tally *t, void *arg), void *arg)
{
	sqlite3_stmt *q = NULL;
	int s, rc = 0;

	if (!can_read(st))
		return 0;
	/* NULL is unknown: a comparison with it counts nowhere, as unknown never counts. A
	 * build recorded before schema 5 has no limit: its replays were against a --budget
	 * and a -j past the CPUs, so it counts in neither OOM avoided nor saved. */
	s = sqlite3_prepare_v2(st->db, has_limit_column(st->db)
		? "SELECT dir, count(*), sum(jobs), sum(freezes), sum(kills), sum(retries), sum(oom_kills),"
		  " coalesce(sum(plain_peak_bytes > limit_bytes AND oom_kills = 0), 0),"
		  " coalesce(sum(safe_fixed_wall_ms - compile_wall_ms + 0 * limit_bytes), 0),"
		  " count(safe_fixed_wall_ms - compile_wall_ms + 0 * limit_bytes)"
		  " FROM governed GROUP BY dir ORDER BY min(id)"
		: "SELECT dir, count(*), sum(jobs), sum(freezes), sum(kills), sum(retries), sum(oom_kills), 0, 0, 0"
		  " FROM governed GROUP BY dir ORDER BY min(id)", -1, &q, NULL);
	if (s != SQLITE_OK) {
		/* a store older than the table: no build recorded yet */
		int none = strstr(sqlite3_errmsg(st->db), "no such table") != NULL;
		sqlite3_finalize(q);
		return none ? 0 : -EIO;
	}
	while (!rc && (s = sqlite3_step(q)) == SQLITE_ROW) {
		const char *dir = (const char *)sqlite3_column_text(q, 0);
		struct governed_tally t = {
			.dir = dir ? dir : "", .builds = sqlite3_column_int64(q, 1),
			.jobs = sqlite3_column_int64(q, 2), .freezes = sqlite3_column_int64(q, 3),
			.kills = sqlite3_column_int64(q, 4), .retries = sqlite3_column_int64(q, 5),
			.oom_kills = sqlite3_column_int64(q, 6), .avoided = sqlite3_column_int64(q, 7),
			.saved_ms = sqlite3_column_int64(q, 8), .saved_builds = sqlite3_column_int64(q, 9),
		};
		rc = fn(&t, arg);
	}
	if (!rc && s != SQLITE_DONE && s != SQLITE_ROW)
		rc = -EIO;
	sqlite3_finalize(q);
	return rc;
}
