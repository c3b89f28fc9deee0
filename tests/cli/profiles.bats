#!/usr/bin/env bats
# headroom profiles: what the store learned, listed, shown and forgotten.

load helper

learn_tiny() {
	python3 "$ROOT/bench/build/replay" generate "$ROOT/tests/fixtures/tiny-trace.json" "$T/b" --time-scale 0.1 --mem-scale 0.5
	(cd "$T/b" && "$HR" run -q --db "$T/p.db" -j 3 -- ninja -j3)
}

@test "profiles lists what a build learned, as text and JSON" {
	command -v ninja || skip "ninja not installed"
	learn_tiny
	run "$HR" profiles --db "$T/p.db"
	[ "$status" -eq 0 ]
	[[ "$output" == *"class"*"memhog"* ]]
	[[ "$output" == *"signature"*"src/rep0/k3.cu"* ]]
	run "$HR" profiles --db "$T/p.db" --json
	[ "$status" -eq 0 ]
	echo "$output" | python3 -c '
import json, sys
p = json.load(sys.stdin)
assert len(p) == 7, p                                # 6 signatures, 1 class
sig = [x for x in p if x["kind"] == "signature"]
assert all(x["runs"] == 1 and x["peak_bytes"] > 20 << 20 and x["duration_ms"] > 0 for x in sig), sig
assert "curve_bytes" not in p[0]
'
}

@test "profiles show gives the curve; forget removes what it selects" {
	command -v ninja || skip "ninja not installed"
	learn_tiny
	run "$HR" profiles --db "$T/p.db" --json show k2.cu
	[ "$status" -eq 0 ]
	echo "$output" | python3 -c '
import json, sys
p = json.load(sys.stdin)
assert len(p) == 1 and len(p[0]["curve_bytes"]) == 64, p
assert max(p[0]["curve_bytes"]) == p[0]["peak_bytes"], p
'
	run "$HR" profiles --db "$T/p.db" forget k2.cu
	[ "$status" -eq 0 ]
	[[ "$output" == "forgot 1 profile" ]]
	run "$HR" profiles --db "$T/p.db" show k2.cu
	[ "$status" -eq 1 ]
	run "$HR" profiles --db "$T/p.db" forget --all
	[[ "$output" == "forgot 6 profiles" ]]
}

@test "profiles without a store says so; bad verbs are usage errors" {
	run "$HR" profiles --db "$T/none.db"
	[ "$status" -eq 0 ]
	[[ "$output" == *"no profiles yet"* ]]
	[ ! -e "$T/none.db" ]
	run "$HR" profiles frobnicate
	[ "$status" -eq 2 ]
	[[ "$output" == *"'frobnicate'"* ]]
	run "$HR" profiles forget
	[ "$status" -eq 2 ]
	[[ "$output" == *"--all"* ]]
}

# The tiny trace built in checkout DIR with absolute source paths (as CMake gives them),
# learning into store DB.
learn_tiny_in() {
	local dir=$1 db=$2
	python3 "$ROOT/bench/build/replay" generate "$ROOT/tests/fixtures/tiny-trace.json" "$dir" --time-scale 0.1 --mem-scale 0.5
	sed -i "s| src/| $dir/src/|" "$dir/build.ninja"
	(cd "$dir" && "$HR" run -q --db "$db" -j 3 -- ninja -j3)
}

@test "profiles export and import: a profile learned in one checkout serves another, and merges" {
	command -v ninja || skip "ninja not installed"
	learn_tiny_in "$T/one/proj" "$T/one.db"
	cd "$T/one/proj"
	run --separate-stderr "$HR" profiles --db "$T/one.db" export "$T/p.json"
	[ "$status" -eq 0 ]
	[[ "$stderr" == "exported 7 profiles to $T/p.json" ]]
	# No absolute path travels: the sources are relative to the checkout.
	not grep -q "$T" "$T/p.json"
	python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["format"] == "headroom-profiles/1", d
sig = [p for p in d["profiles"] if p["kind"] == "signature"]
assert len(sig) == 6 and all(p["root_relative"] and p["key"].startswith("memhog :: src/rep0/k") for p in sig), sig
' "$T/p.json"

	# Another checkout, another store: the keys are this checkout's.
	mkdir -p "$T/two/proj"
	cd "$T/two/proj"
	run "$HR" profiles --db "$T/two.db" import "$T/p.json"
	[ "$status" -eq 0 ]
	[[ "$output" == "imported 7 profiles from $T/p.json: 7 new, 0 merged" ]]
	"$HR" profiles --db "$T/one.db" --json show memhog > "$T/one.json"
	"$HR" profiles --db "$T/two.db" --json show memhog > "$T/two.json"
	python3 -c '
import json, sys
one, two, t = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), sys.argv[3]
k = lambda p: (p["kind"], p["key"].replace(t + "/one/", t + "/two/"))
one = {k(p): p for p in one}
two = {(p["kind"], p["key"]): p for p in two}
assert one.keys() == two.keys(), (one.keys(), two.keys())
for key, p in one.items():
    for f in ("runs", "peak_bytes", "duration_ms", "curve_bytes"):
        assert p[f] == two[key][f], (key, f)
' "$T/one.json" "$T/two.json" "$T"

	# A build in the second checkout finds them: its jobs fold into the imported profiles.
	learn_tiny_in "$T/two/proj" "$T/two.db"
	[ "$("$HR" profiles --db "$T/two.db" --json show k3.cu | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["runs"])')" = 2 ]

	# Importing again merges: runs add up, nothing is overwritten.
	run "$HR" profiles --db "$T/two.db" import "$T/p.json"
	[[ "$output" == *": 0 new, 7 merged" ]]
	[ "$("$HR" profiles --db "$T/two.db" --json show k3.cu | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["runs"])')" = 3 ]

	# - is stdout and stdin.
	"$HR" profiles --db "$T/one.db" --root "$T/one/proj" export - 2>/dev/null | "$HR" profiles --db "$T/three.db" import -
	[ "$("$HR" profiles --db "$T/three.db" --json | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))')" = 7 ]
}

@test "profiles export leaves out signatures of sources outside the root" {
	command -v ninja || skip "ninja not installed"
	learn_tiny_in "$T/one/proj" "$T/one.db"
	mkdir "$T/elsewhere"
	cd "$T/elsewhere"
	run --separate-stderr "$HR" profiles --db "$T/one.db" export -
	[ "$status" -eq 0 ]
	[[ "$stderr" == *"exported 1 profile to stdout"*"left out 6 signatures whose source lies outside $T/elsewhere (--root)"* ]]
	run --separate-stderr "$HR" profiles --db "$T/one.db" --root "$T/one/proj" export -
	[[ "$stderr" == "exported 7 profiles to stdout" ]]
}

@test "profiles import rejects a bad file, naming it and the field, and imports nothing" {
	good='{"kind": "class", "key": "nvcc -O3", "runs": 2, "duration_ms": 1000, "peak_bytes": 5, "updated_s": 1, "curve_bytes": [5'$(printf ',5%.0s' $(seq 63))']}'
	bad_import() { # $1: the profiles array's text; $2: what the message must say
		printf '{"format": "headroom-profiles/1", "profiles": [%s]}' "$1" > "$T/bad.json"
		run "$HR" profiles --db "$T/p.db" import "$T/bad.json"
		[ "$status" -eq 2 ]
		[[ "$output" == *"$T/bad.json: $2"* ]]
	}
	run "$HR" profiles --db "$T/p.db" import <(printf '{"format": "headroom-profiles/1", "profiles": [%s]}' "$good")
	[ "$status" -eq 0 ]
	bad_import "$good, ${good/\"runs\": 2/\"runs\": 0}" "profiles[1].runs: must be an integer from 1"
	bad_import "${good/\"runs\": 2/\"runs\": 2.5}" "profiles[0].runs: must be an integer"
	bad_import "${good/\"duration_ms\": 1000/\"duration_ms\": 99999999999999}" "profiles[0].duration_ms"
	bad_import "${good/\"kind\": \"class\"/\"kind\": \"job\"}" "profiles[0].kind"
	bad_import "${good/nvcc -O3/\/usr\/bin\/nvcc -O3}" "profiles[0].key: holds an absolute path"
	bad_import "${good/nvcc -O3/nvcc -O3 :: \/home\/a\/x.cu}" "profiles[0].key: a class key has no"
	bad_import "${good/\"peak_bytes\": 5/\"peak_bytes\": 6}" "profiles[0].peak_bytes: 6 is not the largest"
	bad_import "${good/\[5,/[-5,}" "profiles[0].curve_bytes[0]: must be an integer from 0"
	bad_import "${good/\[5,5,/[5,}" "profiles[0].curve_bytes: must be an array of 64"
	printf '{"format": "headroom-profiles/9", "profiles": []}' > "$T/bad.json"
	run "$HR" profiles --db "$T/p.db" import "$T/bad.json"
	[ "$status" -eq 2 ]
	[[ "$output" == *"$T/bad.json: format: expected \"headroom-profiles/1\", got \"headroom-profiles/9\""* ]]
	echo 'not json' > "$T/bad.json"
	run "$HR" profiles --db "$T/p.db" import "$T/bad.json"
	[ "$status" -eq 2 ]
	[[ "$output" == *"$T/bad.json: line 1"* ]]
	run "$HR" profiles --db "$T/p.db" import "$T/missing.json"
	[ "$status" -eq 2 ]
	[[ "$output" == *"cannot read $T/missing.json"* ]]
	run "$HR" profiles --db "$T/p.db" import
	[ "$status" -eq 2 ]
	# Only the good file counted: one profile of 2 runs, nothing from the bad ones.
	run "$HR" profiles --db "$T/p.db" --json
	echo "$output" | python3 -c '
import json, sys
p = json.load(sys.stdin)
assert len(p) == 1 and p[0]["key"] == "nvcc -O3" and p[0]["runs"] == 2, p
'
}

# A store of class profiles with keys $2... (each "runs": $1), made by an import.
class_store() {
	local runs=$1
	shift
	python3 -c '
import json, sys
c = [1 << 20] * 63 + [2 << 20]
print(json.dumps({"format": "headroom-profiles/1", "profiles": [{"kind": "class", "key": k,
    "runs": int(sys.argv[1]), "duration_ms": 1000, "peak_bytes": 2 << 20, "updated_s": 1700000000,
    "curve_bytes": c} for k in sys.argv[2:]]}))' "$runs" "$@" > "$T/classes.json"
	"$HR" profiles --db "$T/p.db" import "$T/classes.json" > /dev/null
}

@test "profiles list shows a key's control characters escaped, never sent to the terminal" {
	class_store 1 a b
	sqlite3 "$T/p.db" "UPDATE profiles SET key = 'nvcc' || char(9) || 'x' || char(27) || '[2J' WHERE key = 'a';
		UPDATE profiles SET key = CAST(X'6363ff0a' AS TEXT) WHERE key = 'b'"
	run "$HR" profiles --db "$T/p.db" list
	[ "$status" -eq 0 ]
	[[ "$output" != *$'\e'* && "$output" != *$'\t'* ]]
	[[ "$output" == *' nvcc\x09x\x1B[2J'* ]]
	[[ "$output" == *' cc\xFF\x0A'* ]]
	# in JSON the key is kept: shown, and its bytes exactly
	run "$HR" profiles --db "$T/p.db" list --json
	[ "$status" -eq 0 ]
	python3 -c 'import json, sys; ks = {p["key"]: p.get("key_hex") for p in json.loads(sys.argv[1])}; assert ks["cc\\xFF\n"] == "6363ff0a" and ks["nvcc\tx\x1b[2J"] is None, ks' "$output"
}

@test "profiles export writes only what import accepts: runs past the bound, keys import refuses" {
	class_store 600000000 memhog a b
	# two imports of a fleet's runs: the store counts to the bound, not past it
	"$HR" profiles --db "$T/p.db" import "$T/classes.json" > /dev/null
	[ "$("$HR" profiles --db "$T/p.db" --json show memhog | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["runs"])')" = 1000000000 ]
	sqlite3 "$T/p.db" "UPDATE profiles SET key = 'cc' || char(9) || 'x' WHERE key = 'a';
		UPDATE profiles SET key = CAST(X'6363ff' AS TEXT) WHERE key = 'b'"
	run --separate-stderr "$HR" profiles --db "$T/p.db" export "$T/out.json"
	[ "$status" -eq 0 ]
	[[ "$stderr" == *"exported 1 profile to $T/out.json"* ]]
	[[ "$stderr" == *"left out 2 profiles that an import would refuse (the first: cc\x09x: profiles[0].key: holds a control character)"* ]]
	run "$HR" profiles --db "$T/q.db" import "$T/out.json"
	[ "$status" -eq 0 ]
	[[ "$output" == *"imported 1 profile from $T/out.json: 1 new, 0 merged"* ]]
	run "$HR" profiles --db "$T/q.db" import "$T/out.json"
	[ "$status" -eq 0 ]
	# a store already past the bound (an older headroom's) exports at the bound
	sqlite3 "$T/p.db" "UPDATE profiles SET runs = 5000000000 WHERE key = 'memhog'"
	"$HR" profiles --db "$T/p.db" export "$T/out.json" 2>/dev/null
	run "$HR" profiles --db "$T/r.db" import "$T/out.json"
	[ "$status" -eq 0 ]
}

@test "--db '' is refused by every command that takes a store (it opened a silent temporary store)" {
	for cmd in "run --db '' -- true" "profiles --db '' list" "probe --db ''" "plan --gpu h200 --calibrated --db '' x.json"; do
		eval "set -- $cmd"
		run "$HR" "$@"
		echo "$cmd: $output"
		[ "$status" -eq 2 ]
		[[ "$output" == *"$1: --db wants a path, not ''"* ]]
	done
	[ ! -e "$T/state" ] || [ -z "$(find "$T/state" -type f)" ]
}

# Issue 43: a 118 MB import took 0.85 GB of memory, with no limit.
@test "profiles import refuses a file past its limit before reading it, and stdin once past it, saying the limits" {
	local max_mib
	max_mib=$(sed -n 's/^#define TRANSFER_MAX_MIB \([0-9]*\)$/\1/p' "$ROOT/src/store/transfer.h")
	[ -n "$max_mib" ]
	# a sparse file a MiB past the limit: its size alone refuses it
	truncate -s "$((max_mib + 1))M" "$BATS_TEST_TMPDIR/big.json"
	run /usr/bin/time -f 'maxrss_kb=%M' "$HR" profiles --db "$T/p.db" import "$BATS_TEST_TMPDIR/big.json"
	[ "$status" -eq 2 ]
	[[ "$output" == *"$BATS_TEST_TMPDIR/big.json is $((max_mib + 1)) MiB; profiles import takes at most $max_mib MiB ("*" profiles): export fewer"* ]]
	# not read into memory: far less than the file
	rss=$(sed -n 's/^maxrss_kb=//p' <<<"$output")
	[ "$rss" -lt $((max_mib * 1024 / 2)) ]
	rm "$BATS_TEST_TMPDIR/big.json"
	# a stream of valid JSON (whitespace inside the array) past the limit: stopped as read
	run --separate-stderr bash -c '{ printf "{\"format\": \"headroom-profiles/1\", \"profiles\": ["
		head -c "$1" /dev/zero | tr "\0" " "; printf "]}"; } | /usr/bin/time -f maxrss_kb=%M "$2" profiles --db "$3" import -' \
		_ "$(((max_mib + 1) * 1024 * 1024))" "$HR" "$T/p.db"
	[ "$status" -eq 2 ]
	[[ "$stderr" == *"stdin is more than $max_mib MiB; profiles import takes at most $max_mib MiB"* ]]
	rss=$(sed -n 's/^maxrss_kb=//p' <<<"$stderr")
	[ "$rss" -lt $((max_mib * 1024 / 2)) ]
	# within the limit it is read
	run "$HR" profiles --db "$T/p.db" import <(printf '{"format": "headroom-profiles/1", "profiles": []}')
	[ "$status" -eq 0 ]
}

@test "profiles import names a special file as what it is, and does not wait on a FIFO" {
	mkfifo "$T/fifo"
	python3 -c 'import socket, sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])' "$T/sock"
	for f in "/dev/urandom:a character device" "$T/sock:a socket" "$T:a directory"; do
		run timeout 60 "$HR" profiles --db "$T/p.db" import "${f%%:*}"
		[ "$status" -eq 2 ]
		[ "$output" = "headroom: profiles: ${f%%:*} is ${f#*:}, not a file: give a profile export (headroom profiles export FILE)" ]
	done
	# a FIFO no one writes to reads as empty at once; one written to (<(...)) is read
	run timeout 60 "$HR" profiles --db "$T/p.db" import "$T/fifo"
	[ "$status" -eq 2 ]
	[[ "$output" == *"$T/fifo: line "* ]]
	[ ! -e "$T/p.db" ] || [ "$("$HR" profiles --db "$T/p.db" --json)" = "[]" ]
}
