/* A Python regular expression (re's syntax, as PEFT's target_modules and other tools'
 * files give one), compiled by PCRE2 and matched whole as re.fullmatch does. PCRE2 reads
 * Python's syntax (classes, named groups, lookaround, backreferences, inline flags); the
 * one spelling that differs, \Z, is translated. */
#ifndef HEADROOM_PYRE_H
#define HEADROOM_PYRE_H

struct pyre;

/* pattern compiled into *re: 0, or -EINVAL with *err saying what it could not take and
 * where (caller frees), -ENOMEM. */
int pyre_compile(struct pyre **re, const char *pattern, char **err);
/* Whether s matches re whole: 1 or 0; -E2BIG when the match backtracked past its limit
 * (nested quantifiers), which is no answer. */
int pyre_match(struct pyre *re, const char *s);
void pyre_free(struct pyre *re);

#endif
