/* Whether a file may be trusted (sys/filetrust), from accounts read out of a fixture
 * tree (sys/accounts, tests/fixtures/accounts). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <string.h>

#include "sys/accounts.h"
#include "sys/filetrust.h"

#define FIX "tests/fixtures/accounts"

static struct accounts acc;

static int load(void **state)
{
	(void)state;
	return accounts_read(FIX, &acc);
}

static int unload(void **state)
{
	(void)state;
	accounts_free(&acc);
	return 0;
}

static void test_read(void **state)
{
	struct accounts none;

	(void)state;
	/* the comment, the NIS line and the line with no uid are no users */
	assert_int_equal(acc.nusers, 8);
	assert_int_equal(acc.ngroups, 7);
	assert_int_equal(accounts_user_by_name(&acc, "audb")->gid, 1001);
	assert_string_equal(accounts_user_by_uid(&acc, 1001)->name, "auda");
	assert_int_equal(accounts_group_by_gid(&acc, 1005)->nmembers, 2);
	assert_string_equal(accounts_group_by_gid(&acc, 1005)->members[1], "frank");
	assert_int_equal(accounts_group_by_gid(&acc, 1001)->nmembers, 0);
	assert_null(accounts_group_by_gid(&acc, 4242));
	assert_int_equal(accounts_read(FIX "/nonexistent", &none), -ENOENT);
	assert_int_equal(none.nusers, 0);
}

/* filetrust_check of a file (owner, group, mode) for uid, its verdict's text in why */
static enum trust check(unsigned owner, unsigned group, unsigned mode, unsigned uid, const struct accounts *a,
			struct trust_verdict *v, char *why, size_t n)
{
	struct file_owner f = { owner, group, 0100000 | mode };
	enum trust t = filetrust_check(&f, uid, a, v);

	assert_int_equal(t, v->why);
	filetrust_why(v, why, n);
	return t;
}

static void test_primary_group(void **state)
{
	struct trust_verdict v;
	char why[256], fix[256];

	(void)state;
	/* auda's group lists no one, but it is audb's primary group: audb can write it */
	assert_int_equal(check(1001, 1001, 0664, 1001, &acc, &v, why, sizeof(why)), TRUST_GROUP_PRIMARY);
	assert_string_equal(v.who, "audb");
	assert_string_equal(why, "is writable by its group auda, and so by user audb, whose primary group it is");
	filetrust_fix(&v, "/h/c", fix, sizeof(fix));
	assert_string_equal(fix, "`chmod g-w /h/c`, or `chgrp` it to a group no one else is in");
	/* the same file not group-writable: no one else can write it */
	assert_int_equal(check(1001, 1001, 0644, 1001, &acc, &v, why, sizeof(why)), TRUST_OK);
	/* root's group, another user's primary group */
	assert_int_equal(check(0, 0, 0664, 0, &acc, &v, why, sizeof(why)), TRUST_GROUP_PRIMARY);
	assert_string_equal(v.who, "opsroot");
}

static void test_member_list(void **state)
{
	struct trust_verdict v;
	char why[256];

	(void)state;
	/* dave's group lists frank, whom /etc/passwd does not know (a network account) */
	assert_int_equal(check(1005, 1005, 0664, 1005, &acc, &v, why, sizeof(why)), TRUST_GROUP_MEMBER);
	assert_string_equal(why, "is writable by its group dave, and so by user frank, a member of it");
	/* erin's group lists root and erin: no one else */
	assert_int_equal(check(1006, 1006, 0664, 1006, &acc, &v, why, sizeof(why)), TRUST_OK);
}

static void test_private_group(void **state)
{
	struct trust_verdict v;
	char why[256];

	(void)state;
	assert_int_equal(check(1003, 1003, 0664, 1003, &acc, &v, why, sizeof(why)), TRUST_OK);
	/* root's file in solo's private group, for solo */
	assert_int_equal(check(0, 1003, 0664, 1003, &acc, &v, why, sizeof(why)), TRUST_OK);
	/* ... but not for auda: solo can write it */
	assert_int_equal(check(0, 1003, 0664, 1001, &acc, &v, why, sizeof(why)), TRUST_GROUP_NOT_OWN);
	/* a group shared by many (users), no one listed, though carol's primary one */
	assert_int_equal(check(1004, 100, 0664, 1004, &acc, &v, why, sizeof(why)), TRUST_GROUP_NOT_OWN);
	assert_string_equal(why, "is writable by its group users, which is neither root's nor yours alone");
	/* a group /etc/group does not list */
	assert_int_equal(check(0, 4242, 0664, 0, &acc, &v, why, sizeof(why)), TRUST_GROUP_UNKNOWN);
	assert_string_equal(why, "is writable by its group gid 4242, which /etc/group does not list, so who else "
				 "can write it is unknown");
}

static void test_owner_and_others(void **state)
{
	struct accounts plain = { 0 };
	struct account_group root_only = { "root", 0, NULL, 0 };
	struct account_user root = { "root", 0, 0 };
	struct trust_verdict v;
	char why[256], fix[256];

	(void)state;
	assert_int_equal(check(1002, 1002, 0644, 1001, &acc, &v, why, sizeof(why)), TRUST_OWNER);
	assert_string_equal(why, "belongs to another user, audb");
	assert_int_equal(check(5555, 5555, 0600, 1001, &acc, &v, why, sizeof(why)), TRUST_OWNER);
	assert_string_equal(why, "belongs to another user, uid 5555");
	assert_int_equal(check(0, 0, 0666, 1001, &acc, &v, why, sizeof(why)), TRUST_EVERYONE);
	filetrust_fix(&v, "/etc/headroom.conf", fix, sizeof(fix));
	assert_string_equal(fix, "`chmod go-w /etc/headroom.conf`");
	assert_int_equal(check(0, 0, 0644, 1001, &acc, &v, why, sizeof(why)), TRUST_OK);
	/* root's file writable by root's group, which holds root alone: trusted by anyone */
	plain.users = &root;
	plain.nusers = 1;
	plain.groups = &root_only;
	plain.ngroups = 1;
	assert_int_equal(check(0, 0, 0664, 1001, &plain, &v, why, sizeof(why)), TRUST_OK);
	assert_int_equal(check(0, 0, 0664, 0, &plain, &v, why, sizeof(why)), TRUST_OK);
	/* no accounts known (unread): a group-writable file is refused */
	assert_int_equal(check(0, 0, 0664, 0, &(struct accounts){ 0 }, &v, why, sizeof(why)), TRUST_GROUP_UNKNOWN);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_read),
		cmocka_unit_test(test_primary_group),
		cmocka_unit_test(test_member_list),
		cmocka_unit_test(test_private_group),
		cmocka_unit_test(test_owner_and_others),
	};
	return cmocka_run_group_tests(tests, load, unload);
}
