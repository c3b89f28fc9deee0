#!/usr/bin/env bats
# Starved or told too much: a governor out of file descriptors, a reserve as large as the
# memory. Memory that cannot be read is unknown, not "nothing free", and a large reserve
# narrows the jobs' room without closing it.

load helper

# A ninja build of N jobs that each sleep a second through the launcher.
sleep_build() {
	local dir=$1 n=$2
	mkdir -p "$dir"
	{
		printf 'rule s\n  command = $${HEADROOM_LAUNCHER} sleep 1 && touch $out\n\n'
		for i in $(seq 1 "$n"); do printf 'build o%d: s\n' "$i"; done
	} > "$dir/build.ninja"
}

@test "with few file descriptors, launchers wait for a connection and nothing is killed" {
	# 100 launchers at once against a governor allowed 48 descriptors: it keeps 32 for its
	# own reads and takes the launchers 16 at a time (before: /proc/meminfo went unread,
	# was taken as 0 bytes free, and jobs were frozen and killed)
	printf 'for i in $(seq 1 100); do $HEADROOM_LAUNCHER sh -c "sleep 0.3; touch o$i" & done; wait\n' > "$T/many.sh"
	mkdir "$T/b"
	cd "$T/b"
	run timeout 120 bash -c "ulimit -Sn 48; '$HR' run -j 100 --budget 8G -- sh '$T/many.sh'"
	[ "$status" -eq 0 ]
	[ "$(ls "$T/b" | grep -c '^o[0-9]')" -eq 100 ]
	[[ "$output" == *"0 freezes, 0 thaws, 0 kills"* ]]
	[[ "$output" != *"killed job"* ]]
}

@test "--reserve as large as the memory is refused before the build, naming the limit" {
	run "$HR" run --reserve 100T -- true
	[ "$status" -eq 2 ]
	[[ "$output" == *"--reserve 100"*"is all of the memory limit"* ]]
}

@test "--reserve of half the memory or more still lets the jobs run" {
	sleep_build "$T/b" 4
	cd "$T/b"
	avail_kb=$(awk '/^MemAvailable:/ {print $2}' /proc/meminfo)
	run timeout 60 "$HR" run --reserve "$((avail_kb * 6 / 10))K" -- ninja -j4
	[ "$status" -eq 0 ]
	[ "$(ls "$T/b" | grep -c '^o[0-9]')" -eq 4 ]
}
