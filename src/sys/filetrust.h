/* Whether a file another user could have written may be trusted: pure, from the file's
 * owner, group and mode and the accounts (sys/accounts). A file that can name a command
 * headroom runs as the user (a settings file's on_event) must be writable by no one but
 * the user and root, as ssh and sudo ask of theirs. Who can write it is read from its
 * mode bits: its owner, every user, and its group's users, both those the group's line
 * lists and those whose primary group it is. ACLs (a "+" in ls -l) are not read: a file
 * an ACL lets another user write is not seen as such. */
#ifndef HEADROOM_FILETRUST_H
#define HEADROOM_FILETRUST_H

#include <stddef.h>
#include <sys/types.h>

#include "sys/accounts.h"

enum trust {
	TRUST_OK,
	TRUST_OWNER,         /* owned by another user (not root) */
	TRUST_EVERYONE,      /* writable by every user */
	TRUST_GROUP_UNKNOWN, /* writable by a group /etc/group does not list */
	TRUST_GROUP_NOT_OWN, /* writable by a group neither root's nor the user's own */
	TRUST_GROUP_MEMBER,  /* writable by its group, which lists another user */
	TRUST_GROUP_PRIMARY, /* writable by its group, another user's primary group */
};

/* The file as stat gives it. */
struct file_owner {
	uid_t uid;
	gid_t gid;
	mode_t mode;
};

struct trust_verdict {
	enum trust why;
	char who[64];   /* the other user who can write it, by name ("uid N" unnamed) */
	char group[64]; /* its group, by name ("gid N" unnamed) */
};

/* May user uid trust f? TRUST_OK or why not, with who can write it. */
enum trust filetrust_check(const struct file_owner *f, uid_t uid, const struct accounts *a,
			   struct trust_verdict *v);
/* Why the file is refused, into buf (at most n bytes, NUL-terminated): "is writable by
 * its group auda, and so by user audb, whose primary group it is". */
void filetrust_why(const struct trust_verdict *v, char *buf, size_t n);
/* What to do about it, for the file at path: "`chmod g-w PATH`, or ...". */
void filetrust_fix(const struct trust_verdict *v, const char *path, char *buf, size_t n);

#endif
