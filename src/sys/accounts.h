/* The machine's local accounts, as /etc/passwd and /etc/group list them: who each user
 * is, their primary group, and each group's listed members. root is "" for the live
 * system or a fixture tree. Accounts only a network directory (LDAP, NIS) knows are not
 * in these files and so not here. */
#ifndef HEADROOM_ACCOUNTS_H
#define HEADROOM_ACCOUNTS_H

#include <stddef.h>
#include <sys/types.h>

struct account_user {
	char *name;
	uid_t uid;
	gid_t gid; /* the primary group */
};

struct account_group {
	char *name;
	gid_t gid;
	char **members; /* the names its line lists (not those whose primary group it is) */
	size_t nmembers;
};

struct accounts {
	struct account_user *users;
	size_t nusers;
	struct account_group *groups;
	size_t ngroups;
};

/* root's etc/passwd and etc/group into a (to free with accounts_free); a line that is
 * not an entry (a comment, a NIS "+" line, a field missing) is skipped. 0 or -errno
 * (a empty then). */
int accounts_read(const char *root, struct accounts *a);
void accounts_free(struct accounts *a);

/* The first entry of that uid, name or gid, or NULL. */
const struct account_user *accounts_user_by_uid(const struct accounts *a, uid_t uid);
const struct account_user *accounts_user_by_name(const struct accounts *a, const char *name);
const struct account_group *accounts_group_by_gid(const struct accounts *a, gid_t gid);

#endif
