#!/usr/bin/env bats
# The source's layers (docs/architecture.md), checked by tools/check-layers: no room
# includes one above it, no module reaches itself through includes.

load helper

@test "headroom's own sources keep their layers and have no include cycle" {
	run "$ROOT/tools/check-layers" "$ROOT/src"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"no upward include, no cycle"* ]]
}

# A small tree shaped like src/: util <- sys <- govern <- cmd.
fake_src() {
	mkdir -p "$T/src/util" "$T/src/sys" "$T/src/govern" "$T/src/cmd"
	printf '#include "util/a.h"\n' > "$T/src/util/a.c"; : > "$T/src/util/a.h"
	printf '#include "sys/b.h"\n#include "util/a.h"\n' > "$T/src/sys/b.c"; : > "$T/src/sys/b.h"
	printf '#include "govern/c.h"\n#include "sys/b.h"\n' > "$T/src/govern/c.c"; : > "$T/src/govern/c.h"
	printf '#include "govern/c.h"\n' > "$T/src/cmd/d.c"
}

@test "check-layers passes a well-layered tree and names an upward include" {
	fake_src
	run "$ROOT/tools/check-layers" "$T/src"
	[ "$status" -eq 0 ]
	printf '#include "cmd/cmd.h"\n' >> "$T/src/govern/c.c"; : > "$T/src/cmd/cmd.h"
	run "$ROOT/tools/check-layers" "$T/src"
	echo "$output"
	[ "$status" -eq 1 ]
	[[ "$output" == *"govern/c.c: includes cmd/cmd.h: 'govern' may not depend on 'cmd'"* ]]
}

@test "check-layers names a cycle inside a room and a room it does not know" {
	fake_src
	printf '#include "sys/e.h"\n' > "$T/src/sys/b.h"
	printf '#include "sys/b.h"\n' > "$T/src/sys/e.h"
	mkdir "$T/src/extra" && : > "$T/src/extra/f.c"
	run "$ROOT/tools/check-layers" "$T/src"
	echo "$output"
	[ "$status" -eq 1 ]
	[[ "$output" == *"include cycle: sys/b -> sys/e -> sys/b"* ]]
	[[ "$output" == *"extra/f.c: room 'extra' has no place in the layers"* ]]
}
