#!/usr/bin/env bats
# bench/build/replay: a trace's job names reach ninja and sh only escaped; a malformed trace is
# refused with a message, never a Python traceback (issue 12).

load helper

REPLAY="$ROOT/bench/build/replay"

# A trace of jobs named $@ (each 2 samples of 1 MiB, 10 ms apart).
trace() {
	python3 - "$T/trace.json" "$@" <<'PY'
import json, sys
jobs = [{"name": n, "rss_bytes": [1 << 20, 1 << 20]} for n in sys.argv[2:]]
json.dump({"format": "headroom-trace/1", "machine": {"cpus": 2}, "sample_interval_s": 0.01, "jobs": jobs},
          open(sys.argv[1], "w"))
PY
}

@test "names with spaces, \$, : and shell syntax build under ninja and run under sh, as files of those names" {
	[ -x "$MEMHOG" ] || skip "tools/memhog is not built (make)"
	command -v ninja >/dev/null || skip "ninja needed"
	trace 'a b.cu' 'cost$1.cu' 'c:d.cu' 'dir/e.cu' "q'uote.cu" '$(touch PWNED_SUB).cu' 'x;touch PWNED_SEMI.cu' 'a b.cu' '-flag.cu'
	run "$REPLAY" generate "$T/trace.json" "$T/b"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == "replay: 9 jobs"* ]]
	cd "$T/b"
	run ninja -j2
	echo "$output"
	[ "$status" -eq 0 ]
	for o in 'a b.cu' 'cost$1.cu' 'c:d.cu' 'dir__e.cu' "q'uote.cu" '$(touch PWNED_SUB).cu' 'x;touch PWNED_SEMI.cu' 'a b.cu.2' '-flag.cu'; do
		[ -e "obj/rep0/$o.o" ] || { echo "missing obj/rep0/$o.o"; false; }
	done
	rm -rf obj
	"$REPLAY" commands "$T/b" > "$T/cmds"
	cat "$T/cmds"
	[ "$(wc -l < "$T/cmds")" -eq 9 ]
	run sh -e "$T/cmds"
	[ "$status" -eq 0 ]
	[ -e 'obj/rep0/$(touch PWNED_SUB).cu.o' ]
	[ -e 'obj/rep0/x;touch PWNED_SEMI.cu.o' ]
	[ -z "$(find "$T" -name 'PWNED*')" ]
}

@test "a newline or | in a job name is refused: nothing reaches build.ninja" {
	python3 - "$T" <<'PY'
import json, sys
names = ["k.cu\nbuild PWNED_BY_TRACE: cc src/rep0/k.cu", "a|b.cu", "tab\there", ".", "..", "/", "x" * 201]
for i, n in enumerate(names):
    json.dump({"format": "headroom-trace/1", "machine": {"cpus": 2}, "sample_interval_s": 0.01,
               "jobs": [{"name": "ok.cu", "rss_bytes": [1]}, {"name": n, "rss_bytes": [1]}]},
              open(f"{sys.argv[1]}/t{i}.json", "w"))
PY
	for i in 0 1 2 3 4 5 6; do
		run "$REPLAY" generate "$T/t$i.json" "$T/n"
		echo "$output"
		[ "$status" -eq 1 ]
		[[ "$output" == "replay: job 1: "* ]]
		[[ "$output" != *Traceback* ]]
		[ ! -e "$T/n/build.ninja" ]
	done
	[ -z "$(find "$T" -name 'PWNED*')" ]
}

@test "malformed traces end in a message naming what is wrong, never a traceback" {
	# one Python runs bench/build/replay's main on each (a process each costs a second on a
	# busy machine): every one must end in SystemExit("replay: ..."), any other
	# exception fails the test
	cat > "$T/docs" <<'DOCS'
not json
[]
"headroom-trace/1"
{}
{"format": "headroom-trace/2"}
{"format": "headroom-trace/1"}
{"format": "headroom-trace/1", "sample_interval_s": "1", "machine": {"cpus": 2}, "jobs": [{"name": "a", "rss_bytes": [1]}]}
{"format": "headroom-trace/1", "sample_interval_s": 0, "machine": {"cpus": 2}, "jobs": [{"name": "a", "rss_bytes": [1]}]}
{"format": "headroom-trace/1", "sample_interval_s": NaN, "machine": {"cpus": 2}, "jobs": [{"name": "a", "rss_bytes": [1]}]}
{"format": "headroom-trace/1", "sample_interval_s": 1e999, "machine": {"cpus": 2}, "jobs": [{"name": "a", "rss_bytes": [1]}]}
{"format": "headroom-trace/1", "sample_interval_s": 1, "jobs": [{"name": "a", "rss_bytes": [1]}]}
{"format": "headroom-trace/1", "sample_interval_s": 1, "machine": [], "jobs": [{"name": "a", "rss_bytes": [1]}]}
{"format": "headroom-trace/1", "sample_interval_s": 1, "machine": {"cpus": true}, "jobs": [{"name": "a", "rss_bytes": [1]}]}
{"format": "headroom-trace/1", "sample_interval_s": 1, "machine": {"cpus": 2}}
{"format": "headroom-trace/1", "sample_interval_s": 1, "machine": {"cpus": 2}, "jobs": []}
{"format": "headroom-trace/1", "sample_interval_s": 1, "machine": {"cpus": 2}, "jobs": {"a": 1}}
{"format": "headroom-trace/1", "sample_interval_s": 1, "machine": {"cpus": 2}, "jobs": [7]}
{"format": "headroom-trace/1", "sample_interval_s": 1, "machine": {"cpus": 2}, "jobs": [{"rss_bytes": [1]}]}
{"format": "headroom-trace/1", "sample_interval_s": 1, "machine": {"cpus": 2}, "jobs": [{"name": 5, "rss_bytes": [1]}]}
{"format": "headroom-trace/1", "sample_interval_s": 1, "machine": {"cpus": 2}, "jobs": [{"name": "a"}]}
{"format": "headroom-trace/1", "sample_interval_s": 1, "machine": {"cpus": 2}, "jobs": [{"name": "a", "rss_bytes": []}]}
{"format": "headroom-trace/1", "sample_interval_s": 1, "machine": {"cpus": 2}, "jobs": [{"name": "a", "rss_bytes": ["1"]}]}
{"format": "headroom-trace/1", "sample_interval_s": 1, "machine": {"cpus": 2}, "jobs": [{"name": "a", "rss_bytes": [-1]}]}
{"format": "headroom-trace/1", "sample_interval_s": 1, "machine": {"cpus": 2}, "jobs": [{"name": "a", "rss_bytes": [Infinity]}]}
{"format": "headroom-trace/1", "sample_interval_s": 1, "machine": {"cpus": 2}, "jobs": [{"name": "a", "rss_bytes": [1e400]}]}
{"format": "headroom-trace/1", "sample_interval_s": 1, "machine": {"cpus": 2}, "jobs": [{"name": "a", "rss_bytes": [100000000000000000000000000000000000]}]}
{"format": "headroom-trace/1", "sample_interval_s": 1, "machine": {"cpus": 2}, "jobs": [{"name": "\ud800", "rss_bytes": [1]}]}
{"format": "headroom-trace/1", "sample_interval_s": 1, "machine": {"cpus": 2}, "jobs": [{"name": "a", "rss_bytes": [true]}]}
[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[
DOCS
	python3 - "$REPLAY" "$T" <<'PY'
import importlib.machinery, importlib.util, sys
loader = importlib.machinery.SourceFileLoader("replay", sys.argv[1])
spec = importlib.util.spec_from_loader("replay", loader)
replay = importlib.util.module_from_spec(spec)
loader.exec_module(replay)
t = sys.argv[2]
docs = open(t + "/docs").read().splitlines()
assert len(docs) == 29, len(docs)
for doc in docs:
    open(t + "/bad.json", "w").write(doc)
    sys.argv = ["bench/build/replay", "generate", t + "/bad.json", t + "/m"]
    try:
        replay.main()
    except SystemExit as e:
        print(f"{doc[:70]} -> {e.code}")
        assert isinstance(e.code, str) and e.code.startswith("replay: "), e.code
    else:
        raise AssertionError(f"accepted: {doc}")
PY
	# and as a process: the message on stderr, exit 1
	run "$REPLAY" generate "$T/bad.json" "$T/m"
	[ "$status" -eq 1 ]
	[[ "$output" == "replay: "* ]]
	# the command line's numbers, a missing file, and commands without a generated directory
	trace ok.cu
	for opts in "--time-scale nan" "--mem-scale inf" "--time-scale 0" "--repeat 0"; do
		run "$REPLAY" generate "$T/trace.json" "$T/m" $opts
		[ "$status" -eq 1 ]
		[[ "$output" == "replay: --time-scale and --mem-scale must be above 0"* ]]
	done
	run "$REPLAY" generate "$T/none.json" "$T/m"
	[ "$status" -eq 1 ]
	[[ "$output" == "replay: cannot read $T/none.json: No such file or directory" ]]
	run "$REPLAY" commands "$T/nowhere"
	[ "$status" -eq 1 ]
	[[ "$output" == "replay: cannot read $T/nowhere/replay.json"* ]]
	: > "$T/file"
	run "$REPLAY" generate "$T/trace.json" "$T/file"
	echo "$output"
	[ "$status" -eq 1 ]
	[[ "$output" == "replay: "* && "$output" != *Traceback* ]]
}

@test "--cpu: every job runs memhog --cpu, under ninja and under sh; without it none does" {
	[ -x "$MEMHOG" ] || skip "tools/memhog is not built (make)"
	trace 'a b.cu' c.cu
	"$REPLAY" generate "$T/trace.json" "$T/busy" --cpu >/dev/null
	"$REPLAY" generate "$T/trace.json" "$T/idle" >/dev/null
	grep -qF "$MEMHOG --cpu -c \$in -o \$out" "$T/busy/build.ninja"
	[ "$("$REPLAY" commands "$T/busy" | grep -cF "$MEMHOG --cpu -c ")" -eq 2 ]
	not grep -qF -- --cpu "$T/idle/build.ninja"
	[ -z "$("$REPLAY" commands "$T/idle" | grep -F -- --cpu)" ]
}
