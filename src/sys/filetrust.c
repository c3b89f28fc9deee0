#include "sys/filetrust.h"

#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

/* What each verdict says (its group's name, then the other user's, given to each) and
 * what to do about it (the path given). */
static const struct {
	const char *why, *fix;
} texts[] = {
	[TRUST_OK] = { "may be trusted", "nothing" },
	[TRUST_OWNER] = { "%.0sbelongs to another user, %s", "have it owned by you or root (`chown`)" },
	[TRUST_EVERYONE] = { "is writable by every user", "`chmod go-w %s`" },
	[TRUST_GROUP_UNKNOWN] = { "is writable by its group %s, which /etc/group does not list, so who else "
				  "can write it is unknown",
				  "`chmod g-w %s`" },
	[TRUST_GROUP_NOT_OWN] = { "is writable by its group %s, which is neither root's nor yours alone",
				  "`chmod g-w %s`, or `chgrp` it to your own group" },
	[TRUST_GROUP_MEMBER] = { "is writable by its group %s, and so by user %s, a member of it",
				 "`chmod g-w %s`, or `chgrp` it to a group no one else is in" },
	[TRUST_GROUP_PRIMARY] = { "is writable by its group %s, and so by user %s, whose primary group it is",
				  "`chmod g-w %s`, or `chgrp` it to a group no one else is in" },
};

static enum trust verdict(struct trust_verdict *v, enum trust why, const char *name, unsigned id)
{
	v->why = why;
	if (name)
		snprintf(v->who, sizeof(v->who), "%s", name);
	else if (why == TRUST_OWNER)
		snprintf(v->who, sizeof(v->who), "uid %u", id);
	return why;
}

/* Is the user called name (a group's listed member) another, non-root user than uid?
 * One /etc/passwd does not know is taken to be (a network account). */
static int other_member(const struct accounts *a, const char *name, uid_t uid)
{
	const struct account_user *u = accounts_user_by_name(a, name);

	return !u || (u->uid != uid && u->uid != 0);
}

/* Who else its group lets write it; root, who can write any file, is no one else. */
static enum trust group_writers(const struct file_owner *f, uid_t uid, const struct accounts *a,
				struct trust_verdict *v)
{
	const struct account_group *g = accounts_group_by_gid(a, f->gid);
	const struct account_user *me = accounts_user_by_uid(a, uid);

	if (!g)
		return verdict(v, TRUST_GROUP_UNKNOWN, NULL, 0);
	snprintf(v->group, sizeof(v->group), "%s", g->name);
	/* a group shared by many users (users, staff) is not the user's, though it be the
	 * primary one and list no one */
	if (f->gid != 0 && (!me || strcmp(g->name, me->name)))
		return verdict(v, TRUST_GROUP_NOT_OWN, NULL, 0);
	for (size_t i = 0; i < g->nmembers; i++)
		if (other_member(a, g->members[i], uid))
			return verdict(v, TRUST_GROUP_MEMBER, g->members[i], 0);
	for (size_t i = 0; i < a->nusers; i++)
		if (a->users[i].gid == f->gid && a->users[i].uid != uid && a->users[i].uid != 0)
			return verdict(v, TRUST_GROUP_PRIMARY, a->users[i].name, 0);
	return TRUST_OK;
}

enum trust filetrust_check(const struct file_owner *f, uid_t uid, const struct accounts *a,
			   struct trust_verdict *v)
{
	memset(v, 0, sizeof(*v));
	snprintf(v->group, sizeof(v->group), "gid %u", (unsigned)f->gid);
	if (f->uid != 0 && f->uid != uid) {
		const struct account_user *owner = accounts_user_by_uid(a, f->uid);
		return verdict(v, TRUST_OWNER, owner ? owner->name : NULL, (unsigned)f->uid);
	}
	if (f->mode & S_IWOTH)
		return verdict(v, TRUST_EVERYONE, NULL, 0);
	if (f->mode & S_IWGRP)
		return group_writers(f, uid, a, v);
	return TRUST_OK;
}

void filetrust_why(const struct trust_verdict *v, char *buf, size_t n)
{
	snprintf(buf, n, texts[v->why].why, v->group, v->who);
}

void filetrust_fix(const struct trust_verdict *v, const char *path, char *buf, size_t n)
{
	snprintf(buf, n, texts[v->why].fix, path);
}
