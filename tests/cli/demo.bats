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

@test "tools/demo: a replayed job is busy on a CPU for its duration, as a compile is" {
	command -v ninja || skip "ninja needed"
	# the demo's own replay, one job built alone: its CPU time is the duration its curve
	# gives it (a job that slept through it would use next to none), whatever the load
	python3 - "$ROOT/tools/demo" "$T/b" <<-'PY'
	import importlib.machinery, importlib.util, json, os, resource, subprocess, sys
	sys.dont_write_bytecode = True  # no __pycache__ left in tools/
	loader = importlib.machinery.SourceFileLoader("demo", sys.argv[1])
	demo = importlib.util.module_from_spec(importlib.util.spec_from_loader("demo", loader))
	loader.exec_module(demo)
	build = sys.argv[2]
	demo.generate(build)
	meta = json.load(open(os.path.join(build, "replay.json")))
	def duration_ms(src):
	    with open(os.path.join(build, src)) as f:
	        return (len(f.read().split()) - 2) * meta["interval_ms"]
	# a job of about a second: long against what touching its memory costs
	src, obj = min(meta["edges"], key=lambda e: abs(duration_ms(e[0]) - 1000))
	def cpu():
	    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
	    return (ru.ru_utime + ru.ru_stime) * 1000
	before = cpu()
	subprocess.run(["ninja", "-C", build, obj], check=True, stdout=subprocess.DEVNULL)
	cpu_ms = cpu() - before
	print(f"{src}: {cpu_ms:.0f} ms of CPU for a curve of {duration_ms(src)} ms")
	assert cpu_ms >= 0.9 * duration_ms(src), (cpu_ms, duration_ms(src))
	PY
	[ -z "$(left_over)" ]
}
