#!/usr/bin/env python3
"""A strict parser of the Prometheus text exposition format (0.0.4) for the tests:
every line a HELP, a TYPE or a sample; names and label names valid; label values quoted
with only \\\\, \\" and \\n escapes; valid UTF-8; values floats; a family's TYPE before its samples
and its samples together; no series twice. Prints the samples as JSON; exit 1 on the
first violation, naming the line."""
import json
import re
import sys

NAME = r"[a-zA-Z_:][a-zA-Z0-9_:]*"
LABEL = r"[a-zA-Z_][a-zA-Z0-9_]*"
VALUE = r"(?:[-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?)|[-+]?Inf|NaN)"
LABELS = r'\{(?:%s="(?:[^"\\\n]|\\[\\"n])*"(?:,%s="(?:[^"\\\n]|\\[\\"n])*")*,?)?\}' % (LABEL, LABEL)
SAMPLE = re.compile(r"^(%s)(%s)? (%s)(?: -?\d+)?$" % (NAME, LABELS, VALUE))
TYPES = {"counter", "gauge", "histogram", "summary", "untyped"}


def fail(n, line, why):
    sys.exit(f"line {n}: {why}: {line!r}")


def main():
    raw = open(sys.argv[1], "rb").read()
    try:
        text = raw.decode("utf-8")  # Prometheus refuses a page with invalid UTF-8
    except UnicodeDecodeError as e:
        sys.exit(f"invalid UTF-8 at byte {e.start}: {raw[max(0, e.start - 40):e.start + 8]!r}")
    if text and not text.endswith("\n"):
        sys.exit("the page does not end with a newline")
    typed, done, seen, out, current = {}, set(), set(), [], None
    for n, line in enumerate(text.splitlines(), 1):
        if line.startswith("# HELP "):
            parts = line.split(" ", 3)
            if len(parts) < 4 or not re.fullmatch(NAME, parts[2]):
                fail(n, line, "bad HELP")
            continue
        if line.startswith("# TYPE "):
            parts = line.split(" ")
            if len(parts) != 4 or not re.fullmatch(NAME, parts[2]) or parts[3] not in TYPES:
                fail(n, line, "bad TYPE")
            if parts[2] in typed:
                fail(n, line, "TYPE given twice")
            typed[parts[2]] = parts[3]
            continue
        if line.startswith("#") or not line:
            fail(n, line, "not a sample")
        m = SAMPLE.match(line)
        if not m:
            fail(n, line, "not a valid sample")
        name, labels, value = m.group(1), m.group(2) or "{}", m.group(3)
        if name not in typed:
            fail(n, line, "sample before its TYPE")
        if name != current:
            if name in done:
                fail(n, line, "the family's samples are not together")
            if current:
                done.add(current)
            current = name
        if (name, labels) in seen:
            fail(n, line, "the same series twice")
        seen.add((name, labels))
        lab = dict(re.findall(r'(%s)="((?:[^"\\]|\\.)*)"' % LABEL, labels))
        out.append({"name": name, "labels": lab, "value": float(value)})
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
