#!/usr/bin/env bats
# The governor against launchers that lie or misbehave (issue 12): a small hostile
# protocol client, tests/cli/hostile.py, runs as the build under `headroom run`.
load helper

HOSTILE="$BATS_TEST_DIRNAME/hostile.py"

@test "a launcher's pid claims are ignored: the governor never signals a group it did not find below the build" {
	# a process group outside the build, as an unrelated program of the same user
	cp "$(command -v sleep)" "$T/victim"
	setsid "$T/victim" 300 &
	local victim=$!
	leads() { [ "$(ps -o pgid= -p "$victim" | tr -d ' ')" = "$victim" ] && [ "$(cat /proc/$victim/comm)" = victim ]; }
	wait_for 10 leads
	run "$HR" run -q --no-db -- python3 "$HOSTILE" claim-pid "$victim"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *claimed* ]]
	sleep 0.5
	kill -0 "$victim"
}

@test "a done with maxrss_bytes -1 is refused, not learned as a 16 EiB peak; a true one is learned" {
	run "$HR" run -q --db "$T/p.db" -- python3 "$HOSTILE" maxrss -1
	echo "$output"
	[ "$status" -eq 0 ]
	run "$HR" run -q --db "$T/p.db" -- python3 "$HOSTILE" maxrss $((50 << 20))
	[ "$status" -eq 0 ]
	"$HR" profiles list --json --db "$T/p.db" > "$T/profiles.json"
	python3 - "$T/profiles.json" <<-'PY'
	import json, sys
	ps = json.load(open(sys.argv[1]))
	print(ps)
	cls = [p for p in ps if p["kind"] == "class" and p["key"] == "cc -O2"]
	assert cls and cls[0]["runs"] == 1, ps          # the true report alone was learned
	assert all(p["peak_bytes"] is None or p["peak_bytes"] < 1 << 40 for p in ps), ps
	PY
}

@test "a line longer than 64 KiB: the governor hangs up instead of buffering it" {
	run "$HR" run -q --no-db -- python3 "$HOSTILE" long-line $((4 << 20))
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"longer than 65536 bytes, or a message past 16 MiB"*": hanging up"* ]]
	local n=$(sed -n 's/^hung up after //p' <<< "$output")
	[ -n "$n" ] && [ "$n" -lt $((1 << 20)) ]
}

@test "after a line that is no JSON, the next line of the same write is taken" {
	run "$HR" run -q --no-db -- python3 "$HOSTILE" bad-then-good
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$output" = "admitted" ]
}
