/* A Python regular expression (re's syntax, as PEFT's target_modules and other tools'
 * files give one) as a POSIX extended one, matched whole as re.fullmatch does. The
 * classes \d \w \s, non-capturing and named groups and lazy quantifiers are translated;
 * what ERE cannot say (lookaround, backreferences, inline flags) is refused by name. */
#ifndef HEADROOM_PYRE_H
#define HEADROOM_PYRE_H

#include <regex.h>

/* pattern compiled into re (REG_EXTENDED | REG_NOSUB, anchored at both ends): 0, or
 * -EINVAL with *err saying what it could not take (caller frees). */
int pyre_compile(regex_t *re, const char *pattern, char **err);
/* Whether s matches re whole. */
int pyre_match(const regex_t *re, const char *s);

#endif
