#!/usr/bin/env bats
# headroom profiles: what the store learned, listed, shown and forgotten.

load helper

learn_tiny() {
	python3 "$ROOT/bench/replay" generate "$ROOT/tests/fixtures/tiny-trace.json" "$T/b" --time-scale 0.1 --mem-scale 0.5
	(cd "$T/b" && "$HR" run -q --db "$T/p.db" -j 3 -- ninja -j3)
}

@test "profiles lists what a build learned, as text and JSON" {
	command -v ninja || skip "ninja not installed"
	learn_tiny
	run "$HR" profiles --db "$T/p.db"
	[ "$status" -eq 0 ]
	[[ "$output" == *"class"*"memhog"* ]]
	[[ "$output" == *"signature"*"src/rep0/k3.cu"* ]]
	run "$HR" profiles --db "$T/p.db" --json
	[ "$status" -eq 0 ]
	echo "$output" | python3 -c '
import json, sys
p = json.load(sys.stdin)
assert len(p) == 7, p                                # 6 signatures, 1 class
sig = [x for x in p if x["kind"] == "signature"]
assert all(x["runs"] == 1 and x["peak_bytes"] > 20 << 20 and x["duration_ms"] > 0 for x in sig), sig
assert "curve_bytes" not in p[0]
'
}

@test "profiles show gives the curve; forget removes what it selects" {
	command -v ninja || skip "ninja not installed"
	learn_tiny
	run "$HR" profiles --db "$T/p.db" --json show k2.cu
	[ "$status" -eq 0 ]
	echo "$output" | python3 -c '
import json, sys
p = json.load(sys.stdin)
assert len(p) == 1 and len(p[0]["curve_bytes"]) == 64, p
assert max(p[0]["curve_bytes"]) == p[0]["peak_bytes"], p
'
	run "$HR" profiles --db "$T/p.db" forget k2.cu
	[ "$status" -eq 0 ]
	[[ "$output" == "forgot 1 profile" ]]
	run "$HR" profiles --db "$T/p.db" show k2.cu
	[ "$status" -eq 1 ]
	run "$HR" profiles --db "$T/p.db" forget --all
	[[ "$output" == "forgot 6 profiles" ]]
}

@test "profiles without a store says so; bad verbs are usage errors" {
	run "$HR" profiles --db "$T/none.db"
	[ "$status" -eq 0 ]
	[[ "$output" == *"no profiles yet"* ]]
	[ ! -e "$T/none.db" ]
	run "$HR" profiles frobnicate
	[ "$status" -eq 2 ]
	[[ "$output" == *"'frobnicate'"* ]]
	run "$HR" profiles forget
	[ "$status" -eq 2 ]
	[[ "$output" == *"--all"* ]]
}
