#include "util/pyre.h"

#include <ctype.h>
#include <errno.h>
#include <string.h>

#include "util/strbuf.h"
#include "util/xalloc.h"

/* Python's class escapes, outside a bracket expression and inside one. */
static const struct {
	char c;
	const char *out, *in;
} classes[] = {
	{ 'd', "[0-9]", "0-9" },
	{ 'D', "[^0-9]", NULL },
	{ 'w', "[A-Za-z0-9_]", "A-Za-z0-9_" },
	{ 'W', "[^A-Za-z0-9_]", NULL },
	{ 's', "[[:space:]]", "[:space:]" },
	{ 'S', "[^[:space:]]", NULL },
};

static int class_of(char c)
{
	for (size_t i = 0; i < sizeof(classes) / sizeof(classes[0]); i++)
		if (classes[i].c == c)
			return (int)i;
	return -1;
}

static void addch(struct strbuf *sb, char c)
{
	strbuf_addf(sb, "%c", c);
}

/* A bracket expression from p (after its '['): written to out; returns where it ends
 * (after its ']'), or NULL. A backslash escape in Python is a literal or a class; ERE
 * has no escapes there, so a literal ']' goes first, '^' and '-' last. */
static const char *bracket(const char *p, struct strbuf *out, char **err)
{
	struct strbuf body = STRBUF_INIT;
	int neg = *p == '^', rb = 0, caret = 0, dash = 0;

	p += neg;
	if (*p == ']')
		rb = 1, p++;
	for (; *p && *p != ']'; p++) {
		if (*p != '\\') {
			addch(&body, *p);
			continue;
		}
		int k = class_of(*++p);
		if (k >= 0 && classes[k].in)
			strbuf_add(&body, classes[k].in);
		else if (k >= 0 || !*p || isalnum((unsigned char)*p)) /* \D, \b, \n: not a set ERE says */
			break;
		else
			rb |= *p == ']', caret |= *p == '^', dash |= *p == '-';
		if (k < 0 && !strchr("]^-", *p))
			addch(&body, *p);
	}
	if (*p != ']') {
		*err = *p ? xasprintf("'\\%c' inside [...] is not taken", *p) : xasprintf("a '[' is not closed");
		strbuf_release(&body);
		return NULL;
	}
	strbuf_addf(out, "[%s%s%s%s%s]", neg ? "^" : "", rb ? "]" : "", strbuf_str(&body), caret ? "^" : "",
		    dash ? "-" : "");
	strbuf_release(&body);
	return p + 1;
}

/* A '(' at p: a group, non-capturing or named ones as plain groups; returns the rest. */
static const char *group(const char *p, struct strbuf *out, char **err)
{
	addch(out, '(');
	if (p[1] != '?')
		return p + 1;
	if (p[2] == ':')
		return p + 3;
	if (p[2] == 'P' && p[3] == '<') {
		const char *gt = strchr(p, '>');
		if (gt)
			return gt + 1;
	}
	*err = xasprintf("'(?%c' (lookaround, flags or a named reference) is not taken", p[2] ? p[2] : ' ');
	return NULL;
}

/* Python's pattern as an ERE; 0 or -EINVAL with *err. */
static int translate(const char *p, struct strbuf *out, char **err)
{
	strbuf_add(out, "^(");
	const char *start = p;

	while (p && *p) {
		if (*p == '[') {
			p = bracket(p + 1, out, err);
		} else if (*p == '(') {
			p = group(p, out, err);
		} else if (*p == '\\') {
			int k = class_of(p[1]);
			if (k >= 0)
				strbuf_add(out, classes[k].out);
			else if (p[1] >= '0' && p[1] <= '9') {
				*err = xasprintf("a backreference ('\\%c') is not taken", p[1]);
				return -EINVAL;
			} else if (!p[1] || strchr("AZbBntrfv", p[1])) {
				*err = xasprintf("'\\%c' is not taken", p[1] ? p[1] : ' ');
				return -EINVAL;
			} else {
				addch(out, '\\');
				addch(out, p[1]);
			}
			p += 2;
		} else if ((*p == '?' || *p == '+') && p - start >= 1 && strchr("*+?}", p[-1]) &&
			   (p - start < 2 || p[-2] != '\\')) {
			p++; /* lazy or possessive: the same strings match whole */
		} else {
			addch(out, *p++);
		}
	}
	strbuf_add(out, ")$");
	return p ? 0 : -EINVAL;
}

int pyre_compile(regex_t *re, const char *pattern, char **err)
{
	struct strbuf ere = STRBUF_INIT;
	int rc;

	*err = NULL;
	rc = translate(pattern, &ere, err);
	if (!rc && regcomp(re, strbuf_str(&ere), REG_EXTENDED | REG_NOSUB)) {
		*err = xasprintf("not a regular expression the planner can read");
		rc = -EINVAL;
	}
	strbuf_release(&ere);
	return rc;
}

int pyre_match(const regex_t *re, const char *s)
{
	return regexec(re, s, 0, NULL, 0) == 0;
}
