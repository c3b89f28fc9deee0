#!/usr/bin/env bats
# README command 1: tools/demo ends with the side-by-side, a governed build that fit where
# plain ninja -j16 would not.

load helper

@test "tools/demo: plain -j16 would not fit; headroom's build does, and is set against the best fixed -j" {
	command -v ninja || skip "ninja needed"
	# it runs this checkout's headroom, whatever headroom is under test: once is enough
	[ -z "${HEADROOM_BIN-}" ] || skip "run once, in the pass without HEADROOM_BIN"
	run "$ROOT/tools/demo" --dir "$T/demo"
	echo "$output" | tail -12
	[ "$status" -eq 0 ]
	grep -qE '^  plain ninja -j16 +[0-9.]+ [MG]iB +- +does NOT fit' <<<"$output"
	grep -qE '^  best fixed ninja -j[0-9]+ +([0-9.]+ [MG]iB +)?[0-9.]+ s +measured' <<<"$output"
	grep -qE '^  headroom run -- ninja -j16 +[0-9.]+ [MG]iB +[0-9.]+ s +peak; exit status 0, [0-9]+ freezes?, 0 OOM kills' <<<"$output"
	[ -z "$(left_over)" ]
}
