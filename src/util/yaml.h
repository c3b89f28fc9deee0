/* A YAML document (a config file: mappings, sequences, scalars) as JSON, through libyaml:
 * plain scalars that YAML 1.2's core schema reads as booleans, null, integers or floats
 * become those (a number too large for them is refused, never read as another); quoted
 * scalars stay strings. Anchors on mappings, aliases and tags are refused (no config the
 * planner reads needs them). */
#ifndef HEADROOM_UTIL_YAML_H
#define HEADROOM_UTIL_YAML_H

#include <jansson.h>
#include <stddef.h>

/* The one document of text (len bytes) into *out (the caller decrefs). 0, or -EINVAL
 * (-ENOMEM) with *err (caller frees) always set, saying what and where: text that is not
 * YAML, a second document (as PyYAML's safe_load refuses one), a number past an int64_t
 * or a double, an alias, an anchor on a mapping, a tag, nesting too deep. */
int yaml_to_json(const char *text, size_t len, json_t **out, char **err);

#endif
