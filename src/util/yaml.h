/* A YAML document (a config file: mappings, sequences, scalars) as JSON, through libyaml:
 * plain scalars that YAML 1.2's core schema reads as booleans, null, integers or floats
 * become those; quoted scalars stay strings. Anchors, aliases and tags are refused (no
 * config the planner reads needs them). */
#ifndef HEADROOM_UTIL_YAML_H
#define HEADROOM_UTIL_YAML_H

#include <jansson.h>
#include <stddef.h>

/* The first document of text (len bytes) into *out (the caller decrefs). 0, or -EINVAL
 * with *err (caller frees) saying where it is not YAML. */
int yaml_to_json(const char *text, size_t len, json_t **out, char **err);

#endif
