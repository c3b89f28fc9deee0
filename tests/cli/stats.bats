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

@test "stats: builds per directory, jobs admitted; a -j16 past a hand-set budget but within the machine's memory is no OOM avoided" {
	command -v ninja || skip "ninja needed"
	"$ROOT/bench/build/replay" generate "$ROOT/tests/fixtures/tiny-trace.json" "$T/a" --time-scale 0.2 >/dev/null
	hold_build "$T/b" 2 10M 100
	cd "$T/a"
	run "$HR" run --db "$T/p.db" --budget 250M -- ninja -j16
	[ "$status" -eq 0 ]
	[ "$(nproc)" -ge 16 ] || [ "$("$HR" stats --db "$T/p.db" --json | js .total.saved_ms)" = null ]
	# at most 2 at once, no more than the CPUs: the jobs' durations are a fair basis for
	# the fixed count's replayed wall time, and the saving is known
	rm -rf obj .ninja_log
	run "$HR" run --db "$T/p.db" --budget 250M -j 2 -- ninja -j16
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
	[ "$(js .total.builds <<<"$output")" -eq 4 ]
	[ "$(js .directories.0.dir <<<"$output")" = "$T/a" ]
	[ "$(js .directories.0.builds <<<"$output")" -eq 2 ]
	[ "$(js .directories.0.jobs <<<"$output")" -eq 12 ]
	# the six jobs (60 to 110 MiB) at once need more than 250M, which only headroom
	# enforces: the machine's memory would have held them, nothing would have been killed
	[ "$(js .directories.0.oom_avoided <<<"$output")" -eq 0 ]
	[ "$(js .directories.0.saved_ms <<<"$output")" != null ]
	[ "$(js .directories.1.dir <<<"$output")" = "$T/b" ]
	[ "$(js .directories.1.builds <<<"$output")" -eq 2 ]
	[ "$(js .directories.1.oom_avoided <<<"$output")" -eq 0 ]
	run "$HR" stats --db "$T/p.db"
	[ "$status" -eq 0 ]
	grep -E "^$T/a +2 +12 +[0-9]+ +0 +0 +0 +[-+][0-9]+ s$" <<<"$output"
	grep -E "^total +4 +" <<<"$output"
}

# A store with headroom's schema and no build yet (an import of nothing makes it).
empty_store() {
	printf '{"format": "headroom-profiles/1", "profiles": []}\n' > "$T/none.json"
	"$HR" profiles --db "$1" import "$T/none.json" > /dev/null
}

# SQL for one governed build in directory $1 (an SQL expression) with $2 jobs.
governed_row() {
	printf "INSERT INTO governed (dir, command, ended_s, wall_ms, exit_status, jobs, compile_jobs, freezes,
	kills, retries, oom_kills, jobs_cap, budget_bytes) VALUES (%s, 'ninja', 1700000000, 1000, 0, %s, %s, 0,
	0, 0, 0, 4, 1073741824);\n" "$1" "$2" "$2"
}

@test "stats: a store of many builds in many directories is tallied at once (grouped by the database)" {
	# a bound on time: the sanitizers' build runs it many times slower, linear or not
	[[ "$HR" != *build-asan* ]] || skip "timed on the plain build"
	empty_store "$T/p.db"
	sqlite3 "$T/p.db" "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 200000)
		INSERT INTO governed (dir, command, ended_s, wall_ms, exit_status, jobs, compile_jobs, freezes,
		kills, retries, oom_kills, jobs_cap, budget_bytes, compile_wall_ms, safe_fixed_wall_ms, limit_bytes)
		SELECT '/src/d' || (i % 199999), 'ninja', 1700000000, 1000, 0, 2, 2, 0, 0, 0, 0, 4, 1073741824,
		CASE WHEN i % 2 THEN 500 END, 700, 2147483648 FROM n"
	# an upper bound for a loaded machine, not a measurement: grouped by the database it
	# is far below it, a search of the directories for each row (quadratic) far past it
	run --separate-stderr timeout 60 "$HR" stats --db "$T/p.db" --json
	[ "$status" -eq 0 ]
	[ "$(js .total.builds <<<"$output")" -eq 200000 ]
	[ "$(js .total.jobs <<<"$output")" -eq 400000 ]
	[ "$(js .total.saved_ms <<<"$output")" -eq $((100000 * 200)) ]
	[ "$(js .directories.0.dir <<<"$output")" = /src/d1 ]
	[ "$(js .directories.0.builds <<<"$output")" -eq 2 ]
	[ "$(js .directories.0.saved_ms <<<"$output")" -eq 200 ]
	run timeout 60 "$HR" stats --db "$T/p.db"
	[ "$status" -eq 0 ]
	grep -E "^total +200000 +400000 " <<<"$output"
}

@test "stats: a directory that is not UTF-8 or holds control characters is kept, escaped, never dropped or sent raw" {
	empty_store "$T/p.db"
	sqlite3 "$T/p.db" "$(governed_row "CAST(X'2f7372632fff091b5b33316d' AS TEXT)" 3)" "$(governed_row "'/src/plain'" 1)"
	run --separate-stderr "$HR" stats --db "$T/p.db" --json
	[ "$status" -eq 0 ]
	[ "$(js .directories.0.dir <<<"$output")" = $'/src/\\xFF\t\e[31m' ]
	[ "$(js .directories.0.dir_hex <<<"$output")" = 2f7372632fff091b5b33316d ]
	[ "$(js .directories.0.jobs <<<"$output")" -eq 3 ]
	[ "$(js .directories.1.dir <<<"$output")" = /src/plain ]
	[ "$(js .directories.1.dir_hex <<<"$output")" = null ]
	run "$HR" stats --db "$T/p.db"
	[ "$status" -eq 0 ]
	[[ "$output" != *$'\e'* ]]
	grep -F '/src/\xFF\x09\x1B[31m ' <<<"$output"
}

@test "stats, profiles and run refuse a --db that is a device or a FIFO, and make nothing beside it" {
	[ "$(id -u)" -eq 0 ] || skip "needs root to make a device node"
	mkdir "$T/d"
	mknod "$T/d/null" c 1 3
	mkfifo "$T/d/fifo"
	empty_store "$T/p.db" # for none.json
	for db in "$T/d/null" "$T/d/fifo"; do
		run timeout 60 "$HR" profiles --db "$db" import "$T/none.json"
		[ "$status" -eq 125 ]
		[[ "$output" == *"$db is not a regular file, so not a profile store"* ]]
		run timeout 60 "$HR" run --db "$db" -- true
		[ "$status" -eq 125 ]
		run timeout 60 "$HR" stats --db "$db"
		[ "$status" -eq 125 ]
	done
	[ "$(ls "$T/d" | sort | tr '\n' ' ')" = "fifo null " ]
}

@test "stats: an OOM avoided is a -jN past the memory limit (a cgroup's); a build cut short saves nothing" {
	command -v ninja || skip "ninja needed"
	"$ROOT/bench/build/replay" generate "$ROOT/tests/fixtures/tiny-trace.json" "$T/a" --time-scale 0.1 >/dev/null
	cd "$T/a"
	# cut short: a job fails; it is a build governed, with no replay to count
	cp build.ninja build.ok
	printf 'rule fail\n  command = false\nbuild zz: fail\n' >> build.ninja
	run "$HR" run --db "$T/p.db" -- ninja -j2
	[ "$status" -eq 1 ]
	run --separate-stderr "$HR" stats --db "$T/p.db" --json
	echo "$output"
	[ "$(js .total.builds <<<"$output")" -eq 1 ]
	[ "$(js .total.saved_ms <<<"$output")" = null ]
	[ "$(js .total.oom_avoided <<<"$output")" -eq 0 ]
	# the six jobs (60 to 110 MiB) at once pass a 320M group's limit. The reserve leaves
	# room for what else the group holds (headroom, ninja, the files written), which the
	# jobs' budget does not count.
	mv build.ok build.ninja
	rm -rf obj .ninja_log
	CG=$(make_cgroup "hr-bats-$$" $((320 << 20))) || skip "cannot create a memory cgroup here (needs root and writable cgroups)"
	run --separate-stderr in_cgroup "$CG" "$HR" run --db "$T/p.db" --reserve 64M -- ninja -j16
	remove_cgroup "$CG"
	echo "$stderr"
	[ "$status" -eq 0 ]
	[[ "$stderr" == *"above the memory limit 320.00 MiB (cgroup"*"an OOM avoided"* ]]
	run --separate-stderr "$HR" stats --db "$T/p.db" --json
	echo "$output"
	[ "$(js .total.builds <<<"$output")" -eq 2 ]
	[ "$(js .total.oom_avoided <<<"$output")" -eq 1 ]
	# 16 at once on fewer CPUs stretched the jobs' durations: no saving is claimed from them
	[ "$(nproc)" -ge 16 ] || [ "$(js .total.saved_ms <<<"$output")" = null ]
}

@test "stats: a store of schema 4 gets the limit column; its builds count in neither OOM avoided nor saved" {
	empty_store "$T/p.db"
	sqlite3 "$T/p.db" "CREATE TABLE g4 AS SELECT * FROM governed; DROP TABLE governed;
		CREATE TABLE governed (id INTEGER PRIMARY KEY, dir TEXT NOT NULL, command TEXT NOT NULL,
		ended_s INTEGER NOT NULL, wall_ms INTEGER NOT NULL, exit_status INTEGER NOT NULL,
		jobs INTEGER NOT NULL, compile_jobs INTEGER NOT NULL, freezes INTEGER NOT NULL,
		kills INTEGER NOT NULL, retries INTEGER NOT NULL, oom_kills INTEGER NOT NULL,
		jobs_cap INTEGER NOT NULL, budget_bytes INTEGER NOT NULL, safe_jobs INTEGER,
		plain_peak_bytes INTEGER, compile_wall_ms INTEGER, safe_fixed_wall_ms INTEGER);
		DROP TABLE g4; PRAGMA user_version = 4;"
	sqlite3 "$T/p.db" "INSERT INTO governed (dir, command, ended_s, wall_ms, exit_status, jobs, compile_jobs,
		freezes, kills, retries, oom_kills, jobs_cap, budget_bytes, plain_peak_bytes, compile_wall_ms,
		safe_fixed_wall_ms) VALUES ('/src/old', 'ninja', 1700000000, 1000, 0, 7, 7, 0, 0, 0, 0, 7,
		314572800, 1073741824, 12000, 4000)"
	run --separate-stderr "$HR" stats --db "$T/p.db" --json
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$(js .total.builds <<<"$output")" -eq 1 ]
	[ "$(js .total.oom_avoided <<<"$output")" -eq 0 ]
	[ "$(js .total.saved_ms <<<"$output")" = null ]
	[ "$(sqlite3 "$T/p.db" 'PRAGMA user_version')" -eq 6 ]
	sqlite3 "$T/p.db" 'SELECT limit_bytes FROM governed'
}
