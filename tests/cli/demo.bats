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
	# the figures agree: headroom's peak within its jobs' memory, the fixed row's within
	# what the header says a fixed -j may use
	python3 - "$output" <<-'PY'
	import re, sys
	out = sys.argv[1]
	def mib(s):
	    n, u = s.split()
	    return float(n) * (1024 if u == "GiB" else 1)
	head = re.search(r"headroom's jobs may use ([0-9.]+ [MG]iB) .*a fixed -j ([0-9.]+ [MG]iB) \(no reserve\)", out)
	assert head, out
	fixed = re.search(r"^  best fixed ninja -j[0-9]+ +([0-9.]+ [MG]iB) .*within the ([0-9.]+ [MG]iB) a fixed -j may use", out, re.M)
	if fixed:
	    assert fixed.group(2) == head.group(2), (fixed.groups(), head.groups())
	    assert mib(fixed.group(1)) <= mib(head.group(2)), fixed.groups()
	PY
	[ -z "$(left_over)" ]
}
