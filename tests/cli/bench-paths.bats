#!/usr/bin/env bats
# bench/ is arranged by what each benchmark measures (bench/README.md); tools/check-bench-paths
# keeps every bench/... path the tree names (README, docs, tests, scripts) pointing at a file.

load helper

@test "every bench/ path the tracked files name exists" {
	run "$ROOT/tools/check-bench-paths" "$ROOT"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"bench/ paths named exist"* ]]
}

@test "check-bench-paths names a stale path, and passes placeholders, built targets and results" {
	mkdir -p "$T/r/bench/plan" "$T/r/bench/results" "$T/r/docs"
	: > "$T/r/bench/plan/plan-speed"; : > "$T/r/bench/plan/alloc-replay.c"
	: > "$T/r/bench/results/plan-speed-2cpu.md"
	printf 'bench/plan/alloc-replay: bench/plan/alloc-replay.c\n' > "$T/r/Makefile"
	printf 'Run `bench/plan/plan-speed`, then make bench/plan/alloc-replay.\n' > "$T/r/docs/a.md"
	printf 'Tables in bench/results/plan-speed-<CPUS>cpu.md, bench/results/plan-speed-*.md.\n' >> "$T/r/docs/a.md"
	printf 'Scratch in bench/work/x; the old bench/plan-speed in a record.\n' > "$T/r/bench/results/README.md"
	git -C "$T/r" init -q && git -C "$T/r" add -A
	run "$ROOT/tools/check-bench-paths" "$T/r"
	echo "$output"
	[ "$status" -eq 0 ]
	printf 'See bench/plan-speed.\n' >> "$T/r/docs/a.md"
	run "$ROOT/tools/check-bench-paths" "$T/r"
	echo "$output"
	[ "$status" -eq 1 ]
	[[ "$output" == *"docs/a.md:3: bench/plan-speed"* ]]
	[[ "$output" == *"1 of "*" do not exist"* ]]
}
