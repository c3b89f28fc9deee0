#!/usr/bin/env bats
# headroom stats: what headroom did for the builds it governed, per directory.

load helper

js() { # the value at a path (.a.b or .a.0.b) of the JSON on stdin; null when absent
	python3 -c 'import json, sys
v = json.load(sys.stdin)
for k in sys.argv[1].split(".")[1:]:
    v = v[int(k)] if isinstance(v, list) and k.isdigit() and int(k) < len(v) else v.get(k) if isinstance(v, dict) else None
print("null" if v is None else v)' "$1" || echo "(not JSON)"
}

@test "stats: nothing governed yet, no store made to say so; --json the same as zeros" {
	run "$HR" stats --db "$T/p.db"
	[ "$status" -eq 0 ]
	[[ "$output" == "no build governed yet"* ]]
	[ ! -e "$T/p.db" ]
	run "$HR" stats --db "$T/p.db" --json
	[ "$(js .total.builds <<<"$output")" -eq 0 ]
	[ "$(js .total.saved_ms <<<"$output")" = null ]
}

@test "stats: builds per directory, jobs admitted, and a build whose -j16 would not fit its budget counted as an OOM avoided" {
	command -v ninja || skip "ninja needed"
	"$ROOT/bench/replay" generate "$ROOT/tests/fixtures/tiny-trace.json" "$T/a" --time-scale 0.2 >/dev/null
	hold_build "$T/b" 2 10M 100
	cd "$T/a"
	run "$HR" run --db "$T/p.db" --budget 250M -- ninja -j16
	[ "$status" -eq 0 ]
	cd "$T/b"
	run "$HR" run --db "$T/p.db" --budget 250M -- ninja -j2
	[ "$status" -eq 0 ]
	rm -f out*
	run "$HR" run --db "$T/p.db" --budget 250M -- ninja -j2
	[ "$status" -eq 0 ]
	# a build with nothing to do ran no job: not counted
	run "$HR" run --db "$T/p.db" --budget 250M -- ninja -j2
	run --separate-stderr "$HR" stats --db "$T/p.db" --json
	[ "$status" -eq 0 ]
	echo "$output"
	[ "$(js .format <<<"$output")" = headroom-stats/1 ]
	[ "$(js .total.builds <<<"$output")" -eq 3 ]
	[ "$(js .directories.0.dir <<<"$output")" = "$T/a" ]
	[ "$(js .directories.0.builds <<<"$output")" -eq 1 ]
	[ "$(js .directories.0.jobs <<<"$output")" -eq 6 ]
	# the six jobs (60 to 110 MiB) at once need more than 250M
	[ "$(js .directories.0.oom_avoided <<<"$output")" -eq 1 ]
	[ "$(js .directories.0.saved_ms <<<"$output")" != null ]
	[ "$(js .directories.1.dir <<<"$output")" = "$T/b" ]
	[ "$(js .directories.1.builds <<<"$output")" -eq 2 ]
	[ "$(js .directories.1.oom_avoided <<<"$output")" -eq 0 ]
	run "$HR" stats --db "$T/p.db"
	[ "$status" -eq 0 ]
	grep -E "^$T/a +1 +6 +[0-9]+ +0 +0 +1 +[-+][0-9]+ s$" <<<"$output"
	grep -E "^total +3 +" <<<"$output"
}
