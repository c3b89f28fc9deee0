#include "sys/accounts.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/grow.h"
#include "util/parse.h"
#include "util/xalloc.h"

enum { FIELDS_MAX = 7 }; /* passwd's; group's are 4 */

/* line cut at ':' into at most FIELDS_MAX fields (its newline dropped); their count. */
static size_t split(char *line, char **f)
{
	size_t n = 0;

	line[strcspn(line, "\n")] = '\0';
	while (line && n < FIELDS_MAX)
		f[n++] = strsep(&line, ":");
	return n;
}

/* A uid or gid: whole decimal digits (no sign) within id_t; (uid_t)-1 is no one. */
static int id_of(const char *s, unsigned *out)
{
	int64_t v;

	if (*s < '0' || *s > '9' || parse_int64(s, 0, (int64_t)UINT_MAX - 1, &v))
		return -EINVAL;
	*out = (unsigned)v;
	return 0;
}

static void add_user(struct accounts *a, size_t *cap, char **f, size_t n)
{
	unsigned uid, gid;

	if (n < 4 || !*f[0] || id_of(f[2], &uid) || id_of(f[3], &gid))
		return;
	ARRAY_GROW(a->users, a->nusers + 1, *cap);
	a->users[a->nusers++] = (struct account_user){ xstrdup(f[0]), uid, gid };
}

static void add_group(struct accounts *a, size_t *cap, char **f, size_t n)
{
	struct account_group g = { 0 };
	size_t mcap = 0;
	unsigned gid;
	char *list, *m;

	if (n < 4 || !*f[0] || id_of(f[2], &gid))
		return;
	g.name = xstrdup(f[0]);
	g.gid = gid;
	for (list = f[3]; (m = strsep(&list, ","));)
		if (*m) {
			ARRAY_GROW(g.members, g.nmembers + 1, mcap);
			g.members[g.nmembers++] = xstrdup(m);
		}
	ARRAY_GROW(a->groups, a->ngroups + 1, *cap);
	a->groups[a->ngroups++] = g;
}

static int read_db(const char *root, const char *file, struct accounts *a,
		   void (*add)(struct accounts *, size_t *, char **, size_t))
{
	char path[PATH_MAX], *line = NULL, *f[FIELDS_MAX];
	size_t len = 0, cap = 0;
	FILE *fp;

	if (snprintf(path, sizeof(path), "%s/etc/%s", root, file) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	if (!(fp = fopen(path, "re")))
		return -errno;
	while (getline(&line, &len, fp) >= 0)
		if (line[0] != '#' && line[0] != '+' && line[0] != '-')
			add(a, &cap, f, split(line, f));
	free(line);
	fclose(fp);
	return 0;
}

int accounts_read(const char *root, struct accounts *a)
{
	int rc;

	memset(a, 0, sizeof(*a));
	rc = read_db(root, "passwd", a, add_user);
	if (!rc)
		rc = read_db(root, "group", a, add_group);
	if (rc)
		accounts_free(a);
	return rc;
}

void accounts_free(struct accounts *a)
{
	for (size_t i = 0; i < a->nusers; i++)
		free(a->users[i].name);
	for (size_t i = 0; i < a->ngroups; i++) {
		for (size_t k = 0; k < a->groups[i].nmembers; k++)
			free(a->groups[i].members[k]);
		free(a->groups[i].members);
		free(a->groups[i].name);
	}
	free(a->users);
	free(a->groups);
	memset(a, 0, sizeof(*a));
}

const struct account_user *accounts_user_by_uid(const struct accounts *a, uid_t uid)
{
	for (size_t i = 0; i < a->nusers; i++)
		if (a->users[i].uid == uid)
			return &a->users[i];
	return NULL;
}

const struct account_user *accounts_user_by_name(const struct accounts *a, const char *name)
{
	for (size_t i = 0; i < a->nusers; i++)
		if (!strcmp(a->users[i].name, name))
			return &a->users[i];
	return NULL;
}

const struct account_group *accounts_group_by_gid(const struct accounts *a, gid_t gid)
{
	for (size_t i = 0; i < a->ngroups; i++)
		if (a->groups[i].gid == gid)
			return &a->groups[i];
	return NULL;
}
