#include "util/pyre.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <errno.h>
#include <pcre2.h>
#include <stdlib.h>
#include <string.h>

#include "util/strbuf.h"
#include "util/xalloc.h"

struct pyre {
	pcre2_code *code;
	pcre2_match_data *md;
	pcre2_match_context *mc;
};

/* Steps one match may take: a module name is short, and a pattern that backtracks past
 * this on one (nested quantifiers) would take minutes over every layer's names. */
#define MATCH_LIMIT 100000

/* Python's \Z is the very end, PCRE2's \z; everything else is read alike. A backslash
 * escape is copied whole so that "\\Z" stays a backslash and a Z. */
static void translate(const char *p, struct strbuf *out)
{
	for (; *p; p++) {
		if (*p != '\\' || !p[1]) {
			strbuf_addf(out, "%c", *p);
			continue;
		}
		strbuf_addf(out, "\\%c", p[1] == 'Z' ? 'z' : p[1]);
		p++;
	}
}

int pyre_compile(struct pyre **re, const char *pattern, char **err)
{
	struct strbuf pat = STRBUF_INIT;
	int code;
	PCRE2_SIZE at;
	struct pyre *r = xcalloc(1, sizeof(*r));

	*err = NULL;
	*re = NULL;
	translate(pattern, &pat);
	r->code = pcre2_compile((PCRE2_SPTR)strbuf_str(&pat), PCRE2_ZERO_TERMINATED,
				PCRE2_ANCHORED | PCRE2_ENDANCHORED, &code, &at, NULL);
	strbuf_release(&pat);
	if (!r->code) {
		PCRE2_UCHAR msg[256];
		if (pcre2_get_error_message(code, msg, sizeof(msg)) < 0)
			strcpy((char *)msg, "not a regular expression");
		*err = xasprintf("not a regular expression: %s at offset %zu", (const char *)msg, (size_t)at);
		free(r);
		return -EINVAL;
	}
	/* JIT is a speed-up only: where it is not to be had the interpreter matches */
	(void)pcre2_jit_compile(r->code, PCRE2_JIT_COMPLETE);
	r->md = pcre2_match_data_create_from_pattern(r->code, NULL);
	r->mc = pcre2_match_context_create(NULL);
	if (!r->md || !r->mc) {
		pyre_free(r);
		return -ENOMEM;
	}
	pcre2_set_match_limit(r->mc, MATCH_LIMIT);
	*re = r;
	return 0;
}

int pyre_match(struct pyre *re, const char *s)
{
	int rc = pcre2_match(re->code, (PCRE2_SPTR)s, strlen(s), 0, 0, re->md, re->mc);
	if (rc >= 0)
		return 1;
	return rc == PCRE2_ERROR_NOMATCH ? 0 : -E2BIG;
}

void pyre_free(struct pyre *re)
{
	if (!re)
		return;
	pcre2_match_context_free(re->mc);
	pcre2_match_data_free(re->md);
	pcre2_code_free(re->code);
	free(re);
}
