#!/usr/bin/env bats
# Real compiles of a memory-heavy source of our own (tests/heavy/heavy.cpp, ~420 MiB of
# cc1plus each) under a cgroup memory limit where plain ninja is OOM-killed.

load helper

LIMIT=$((1100 * 1024 * 1024))

heavy_build() {
	mkdir -p "$T/h"
	{
		printf 'rule cxx\n  command = $${HEADROOM_LAUNCHER} g++ -std=c++17 -O1 -ftemplate-depth=100000'
		printf ' -DHEAVY_DEPTH=16000 -DHEAVY_SEED=$seed -c $in -o $out\n\n'
		for i in 1 2 3 4 5 6; do
			printf 'build heavy%d.o: cxx %s/tests/heavy/heavy.cpp\n  seed = %d\n' "$i" "$ROOT" "$i"
		done
	} > "$T/h/build.ninja"
}

teardown() {
	[ -n "${CG:-}" ] && remove_cgroup "$CG"
	pkill -KILL -f "$T" 2>/dev/null || true
	rm -rf "$T"
}

@test "real g++ compiles: ninja -j6 alone is OOM-killed, under headroom run they complete" {
	command -v ninja && command -v g++ || skip "ninja and g++ needed"
	CG=$(make_cgroup "hr-bats-$$" "$LIMIT") || skip "cannot create a memory cgroup here (needs root and writable cgroups)"
	heavy_build
	cd "$T/h"

	# Plain ninja either gets OOM-killed or, with what is left just at the limit, thrashes
	# on reclaim without end (the hang users know): a minute is enough to tell.
	local before=$(oom_kills)
	run in_cgroup "$CG" timeout -s KILL 60 ninja -j6
	[ "$status" -ne 0 ]
	[ "$(oom_kills)" -gt "$before" ] || [ "$status" -eq 137 ]
	remove_cgroup "$CG"

	CG=$(make_cgroup "hr-bats-$$" "$LIMIT")
	rm -f *.o .ninja_log
	run in_cgroup "$CG" "$HR" run --no-db -j 6 --report "$T/r.json" -- ninja -j6
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$(ls heavy*.o | wc -l)" -eq 6 ]
	[ "$(cgroup_oom_kills "$CG")" -eq 0 ]   # the kernel never had to kill anything (jobs' own groups: the report)
	python3 - "$T/r.json" <<-'PY'
	import json, sys
	r = json.load(open(sys.argv[1]))
	assert r["jobs"] == 6, r
	assert r["limit_source"].startswith("cgroup"), r
	assert r["classes"][0]["peak_max_bytes"] > 300 << 20, r   # they really were heavy
	assert r["oom_kills"] == 0, r
	PY
}

@test "process-tree governance alone (no launcher): ninja -j16 is OOM-killed, under headroom run --tree it completes" {
	command -v ninja || skip "ninja needed"
	# room for an ASan-built governor (its shadow memory counts in the group) beside jobs that
	# rise slowly enough for its first ticks on a loaded machine:
	# a killed job cannot run again in --tree mode; plain -j16 still needs twice this
	local limit=$((1600 * 1024 * 1024))
	CG=$(make_cgroup "hr-bats-$$" "$limit") || skip "cannot create a memory cgroup here (needs root and writable cgroups)"
	# 18 jobs of 180-330 MiB peaks, no launcher in the commands. Each starts small, as a
	# compiler does, for one sample before its curve: without a launcher a job is seen
	# only once it runs, and sixteen jobs that each hold a third of their peak before the
	# first tick already fill the group, leaving room for no job to finish.
	python3 - "$ROOT/tests/fixtures/tiny-trace.json" "$T/trace.json" <<-'PY'
	import json, sys
	t = json.load(open(sys.argv[1]))
	for j in t["jobs"]:
	    j["rss_bytes"] = [j["peak_rss_bytes"] // 16] + j["rss_bytes"]
	    j["duration_s"] += t["sample_interval_s"]
	json.dump(t, open(sys.argv[2], "w"))
	PY
	python3 "$ROOT/bench/build/replay" generate "$T/trace.json" "$T/tr" --time-scale 2 --mem-scale 3 --repeat 3
	cd "$T/tr"
	local before=$(oom_kills)
	run in_cgroup "$CG" timeout -s KILL 60 ninja -j16
	[ "$status" -ne 0 ]
	[ "$(oom_kills)" -gt "$before" ] || [ "$status" -eq 137 ]
	remove_cgroup "$CG"

	CG=$(make_cgroup "hr-bats-$$" "$limit")
	rm -rf obj .ninja_log
	# a reserve beside the group's own: the governor's memory (ASan's shadow) counts there,
	# and jobs of unknown shape are predicted, not known
	run in_cgroup "$CG" "$HR" run --tree --no-db --reserve 256M -j 16 --report "$T/r.json" -- ninja -j16
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$(find obj -name '*.o' | wc -l)" -eq 18 ]
	[ "$(cgroup_oom_kills "$CG")" -eq 0 ]   # no job groups with --tree: this is every kill
	python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); assert r["jobs"] == 18 and r["kills"] == 0 and r["oom_kills"] == 0, r' "$T/r.json"
}
