#!/usr/bin/env bats
# Learn only what is true: compiler cache hits, configure steps and partial observations
# teach nothing; a CMake build directory configured without headroom is named as such; the
# build's own -j is the CPU cap; distcc jobs cost here only what they cost here.

load helper

teardown() {
	cd /   # not this shell too
	for p in $(ls /proc | grep -E '^[0-9]+$'); do
		case "$(readlink "/proc/$p/cwd" 2>/dev/null)" in "$T"/*) kill -KILL "$p" 2>/dev/null ;; esac
	done
	[ -n "${DISTCCD_PID:-}" ] && kill -KILL "$DISTCCD_PID" 2>/dev/null
	pkill -KILL -f "$T" 2>/dev/null || true
	rm -rf "$T"
}

# A C file that takes gcc -O2 a few hundred milliseconds and some tens of MiB.
big_c() {
	cat > "$1" <<-'C'
	#define A(x) int f##x(int a) { int s = 0; for (int i = 0; i < a; i++) s += i * x; return s; }
	#define B(x) A(x##0) A(x##1) A(x##2) A(x##3) A(x##4) A(x##5) A(x##6) A(x##7) A(x##8) A(x##9)
	#define C(x) B(x##0) B(x##1) B(x##2) B(x##3) B(x##4) B(x##5) B(x##6) B(x##7) B(x##8) B(x##9)
	C(1) C(2)
	C
}

# The peak, in bytes, of the profile whose key is $2 in store $1.
profile_peak() {
	"$HR" profiles --db "$1" --json list | python3 -c '
import json, sys
print(next(p["peak_bytes"] for p in json.load(sys.stdin) if p["key"] == sys.argv[1]))' "$2"
}

@test "a ccache hit is counted as a job but does not lower the learned profile" {
	command -v ccache || skip "ccache not installed"
	mkdir -p "$T/b" && cd "$T/b"
	export CCACHE_DIR="$T/ccache"
	big_c big.c
	printf 'big.o: big.c\n\t$(HEADROOM_LAUNCHER) ccache gcc -O2 -c big.c -o big.o\n' > Makefile
	run "$HR" run -q --db "$T/p.db" -- make
	[ "$status" -eq 0 ]
	first=$(profile_peak "$T/p.db" "gcc -O2 :: big.c")
	echo "learned from the miss: $first"
	[ "$first" -ge $((8 << 20)) ]   # a real compile, not the wrapper alone
	rm big.o
	run "$HR" run -q --db "$T/p.db" --report "$T/r.json" -- make
	[ "$status" -eq 0 ]
	[ -f big.o ]
	ccache --show-stats --verbose | grep -iE 'hits|direct'
	python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); assert r["jobs"] == 1, r' "$T/r.json"
	[ "$(profile_peak "$T/p.db" "gcc -O2 :: big.c")" -eq "$first" ]
	[ "$(profile_peak "$T/p.db" "gcc -O2")" -eq "$first" ]
	# a stats log of the user's own is left to them: no compiler seen below ccache says hit
	rm big.o
	CCACHE_STATSLOG="$T/mine.log" run "$HR" run -q --db "$T/p.db" -- make
	[ "$status" -eq 0 ]
	grep -q cache_hit "$T/mine.log"
	[ "$(profile_peak "$T/p.db" "gcc -O2 :: big.c")" -eq "$first" ]
}
