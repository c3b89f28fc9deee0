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
	if [ -n "${DISTCCD_PGID:-}" ]; then
		# distccd's workers outlive a TERM to their parent: end the whole group
		kill -KILL -- "-$DISTCCD_PGID" 2>/dev/null
		for i in $(seq 1 50); do pgrep -g "$DISTCCD_PGID" > /dev/null || break; sleep 0.1; done
	fi
	pkill -KILL -f "$T" 2>/dev/null || true
	rm -rf "$T"
}

# A C file that takes gcc -O2 a few hundred milliseconds and some tens of MiB ($2: its
# hundreds of functions, default "C(1) C(2)").
big_c() {
	cat > "$1" <<-'C'
	#define A(x) int f##x(int a) { int s = 0; for (int i = 0; i < a; i++) s += i * x; return s; }
	#define B(x) A(x##0) A(x##1) A(x##2) A(x##3) A(x##4) A(x##5) A(x##6) A(x##7) A(x##8) A(x##9)
	#define C(x) B(x##0) B(x##1) B(x##2) B(x##3) B(x##4) B(x##5) B(x##6) B(x##7) B(x##8) B(x##9)
	C
	echo "${2:-C(1) C(2)}" >> "$1"
}

# The peak, in bytes, of the profile whose key is $2 in store $1.
profile_peak() {
	"$HR" profiles --db "$1" --json list | python3 -c '
import json, sys
print(next(p["peak_bytes"] for p in json.load(sys.stdin) if p["key"] == sys.argv[1]))' "$2"
}

# Build big.o with compile command $1 through make twice, in $T/b: a ccache miss, then a
# hit, which counts as a job and leaves the profile the miss taught ($first).
ccache_miss_then_hit() {
	mkdir -p "$T/b" && cd "$T/b"
	export CCACHE_DIR="$T/ccache"
	big_c big.c
	printf 'big.o: big.c\n\t$(HEADROOM_LAUNCHER) %s -O2 -c big.c -o big.o\n' "$1" > Makefile
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
}

@test "a ccache hit is counted as a job but does not lower the learned profile" {
	command -v ccache || skip "ccache not installed"
	ccache_miss_then_hit "ccache gcc"
	[ "$(profile_peak "$T/p.db" "gcc -O2")" -eq "$first" ]
	# a stats log of the user's own is left to them: no compiler seen below ccache says hit
	rm big.o
	CCACHE_STATSLOG="$T/mine.log" run "$HR" run -q --db "$T/p.db" -- make
	[ "$status" -eq 0 ]
	grep -q cache_hit "$T/mine.log"
	[ "$(profile_peak "$T/p.db" "gcc -O2 :: big.c")" -eq "$first" ]
}

@test "a ccache hit through its masquerade directory (gcc a link to ccache, first on PATH) does not lower the profile" {
	command -v ccache || skip "ccache not installed"
	mkdir -p "$T/mask"
	ln -s "$(command -v ccache)" "$T/mask/gcc"
	PATH="$T/mask:$PATH" ccache_miss_then_hit gcc
}

# A CMake project of two C files and a program, in $1.
# A CMake project of two compiles long enough for tree mode's scan to see whole: -O2
# (CMake's default build type has no optimization, and gcc -O0 is over in tens of
# milliseconds on a fast machine).
cmake_project() {
	mkdir -p "$1"
	printf 'cmake_minimum_required(VERSION 3.13)\nproject(p C)\nadd_compile_options(-O2)\nadd_executable(app a.c b.c)\n' \
		> "$1/CMakeLists.txt"
	big_c "$1/a.c" "C(3) C(4)"
	echo 'int f(void); int main(void) { return f() - 1; }' >> "$1/a.c"
	big_c "$1/b.c"
	echo 'int f(void) { return 1; }' >> "$1/b.c"
}

@test "a CMake build directory configured without headroom is named as such, and still governed" {
	command -v cmake && command -v ninja || skip "cmake or ninja not installed"
	cmake_project "$T/src"
	cmake -S "$T/src" -B "$T/build" -G Ninja > /dev/null
	run "$HR" run --db "$T/p.db" --report "$T/r.json" -- cmake --build "$T/build"
	[ "$status" -eq 0 ]
	[ -x "$T/build/app" ]
	[[ "$output" == *"$T/build was configured without headroom's launcher"* ]]
	[[ "$output" == *"headroom run -- cmake -S $T/src -B $T/build"* ]]
	[[ "$output" != *PYTORCH_NVCC* ]]
	python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); assert r["mode"] == "process tree" and r["jobs"] >= 2, r' "$T/r.json"
	# reconfigured under headroom as the message says: the jobs come through the launcher
	"$HR" run -q --no-db -- cmake -S "$T/src" -B "$T/build" > /dev/null
	grep -q 'CMAKE_C_COMPILER_LAUNCHER:.*exec;--' "$T/build/CMakeCache.txt"
	cmake --build "$T/build" --target clean
	run "$HR" run --db "$T/p.db" --report "$T/r.json" -- cmake --build "$T/build"
	[ "$status" -eq 0 ]
	[[ "$output" != *"configured without"* ]]
	python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); assert r["mode"] == "launcher" and not r["tree_fallback"] and r["jobs"] == 2, r' "$T/r.json"
}

@test "tree mode learns compiles seen whole, never configure steps, checks or links of checks" {
	command -v cmake && command -v ninja || skip "cmake or ninja not installed"
	cmake_project "$T/src"
	# configuring runs CMake's compiler checks below ninja: nothing of that is learned
	run "$HR" run -q --tree --db "$T/p.db" -- cmake -S "$T/src" -B "$T/build" -G Ninja
	[ "$status" -eq 0 ]
	[ "$("$HR" profiles --db "$T/p.db" --json list)" = "[]" ]
	run "$HR" run -q --tree --db "$T/p.db" -- cmake --build "$T/build"
	[ "$status" -eq 0 ]
	"$HR" profiles --db "$T/p.db" list
	run "$HR" profiles --db "$T/p.db" --json list
	python3 - "$output" <<-'PY'
	import json, sys
	keys = [p["key"] for p in json.loads(sys.argv[1])]
	assert any(k.endswith("/src/b.c") for k in keys), keys   # the long compile, seen whole
	for k in keys:
	    tool = k.split()[0]
	    assert tool in ("cc", "gcc", "c++"), keys            # no cmake, no `:`, no cd
	    assert "CMake" not in k and "cmTC_" not in k, keys
	for p in json.loads(sys.argv[1]):
	    assert p["peak_bytes"] > 0, p                           # nothing unseen learned as 0
	PY
}

# A ninja build of N jobs through the launcher that log their start and end and take MS.
logged_build() {
	local dir=$1 n=$2 ms=$3
	mkdir -p "$dir"
	printf 'echo "start $1 $(date +%%s.%%N)" >> "%s/log"\nsleep %s\necho "end $1 $(date +%%s.%%N)" >> "%s/log"\ntouch "$1"\n' \
		"$dir" "$(awk "BEGIN { print $ms / 1000 }")" "$dir" > "$dir/job.sh"
	{
		printf 'rule job\n  command = $${HEADROOM_LAUNCHER} sh %s/job.sh $out\n\n' "$dir"
		for i in $(seq 1 "$n"); do printf 'build out%d: job\n' "$i"; done
	} > "$dir/build.ninja"
}

# The most jobs between their start and end lines at once in log $1.
max_overlap() {
	python3 - "$1" <<-'PY'
	import sys
	ev = []
	for line in open(sys.argv[1]):
	    kind, _, t = line.split()
	    ev.append((float(t), 1 if kind == "start" else -1))
	n = best = 0
	for _, d in sorted(ev, key=lambda e: (e[0], e[1])):
	    n += d
	    best = max(best, n)
	print(best)
	PY
}

cap_of() {
	python3 -c 'import json,sys; c=json.load(open(sys.argv[1]))["cap"]; print(c["jobs"], c["from"])' "$1"
}

@test "the build's own -jN is the cap, above the CPUs too; headroom's -j overrides it; MAX_JOBS counts; else the CPUs it may use" {
	command -v ninja || skip "ninja not installed"
	cpus=$(nproc)
	n=$(( cpus + 3 ))
	logged_build "$T/b" "$n" 1500
	cd "$T/b"
	# learn the (tiny) jobs first, so that memory is no reason to hold any back
	"$HR" run -q --db "$T/p.db" -- ninja -j"$n" > /dev/null
	rm -f log out*
	run "$HR" run -v --db "$T/p.db" --report "$T/r.json" -- ninja -j"$n"
	[ "$status" -eq 0 ]
	[[ "$output" == *"at most $n jobs at once (build -j$n)"* ]]
	[ "$(cap_of "$T/r.json")" = "$n build -j$n" ]
	echo "most at once: $(max_overlap log) of $n, $cpus CPUs"
	[ "$(max_overlap log)" -eq "$n" ]
	# ninja -j2: never more than 2
	rm -f log out*
	run "$HR" run -q --db "$T/p.db" --report "$T/r.json" -- ninja -j 2
	[ "$status" -eq 0 ]
	[ "$(grep -c '^end' log)" -eq "$n" ]
	[ "$(max_overlap log)" -le 2 ]
	[ "$(cap_of "$T/r.json")" = "2 build -j2" ]
	# headroom's own -j overrides the build's
	rm -f log out*
	run "$HR" run -q -j 2 --db "$T/p.db" --report "$T/r.json" -- ninja -j"$n"
	[ "$status" -eq 0 ]
	[ "$(max_overlap log)" -le 2 ]
	[ "$(cap_of "$T/r.json")" = "2 headroom -j2" ]
	# no -j in the build: a MAX_JOBS the user set, else the CPUs
	rm -f log out*
	MAX_JOBS=3 run "$HR" run -q --db "$T/p.db" --report "$T/r.json" -- ninja
	[ "$(cap_of "$T/r.json")" = "3 MAX_JOBS=3" ]
	rm -f log out*
	run "$HR" run -q --db "$T/p.db" --report "$T/r.json" -- ninja
	[ "$(cap_of "$T/r.json")" = "$cpus $cpus CPU$([ "$cpus" -eq 1 ] || echo s)" ]
	# the CPUs it may use, not those the machine has: taskset's mask
	rm -f log out*
	run taskset -c 0 "$HR" run -q --db "$T/p.db" --report "$T/r.json" -- ninja
	[ "$status" -eq 0 ]
	[ "$(cap_of "$T/r.json")" = "1 1 CPU" ]
	[ "$(max_overlap log)" -eq 1 ]
}

@test "make's -jN in MAKEFLAGS is the build's own cap; the command line's wins" {
	mkdir -p "$T/m"
	cd "$T/m"
	printf 'all:\n\t@true\n' > Makefile
	MAKEFLAGS=-j3 run "$HR" run -q --db "$T/p.db" --report "$T/r.json" -- make
	[ "$status" -eq 0 ]
	[ "$(cap_of "$T/r.json")" = "3 MAKEFLAGS -j3" ]
	# as a parent make passes it: a cluster without its dash, then the jobserver
	MAKEFLAGS="kj5 --jobserver-auth=fifo:/nonexistent" run "$HR" run -q --db "$T/p.db" --report "$T/r.json" -- make
	[ "$(cap_of "$T/r.json")" = "5 MAKEFLAGS -j5" ]
	MAKEFLAGS="-j 4" run "$HR" run -q --db "$T/p.db" --report "$T/r.json" -- make
	[ "$(cap_of "$T/r.json")" = "4 MAKEFLAGS -j4" ]
	MAKEFLAGS=-j5 run "$HR" run -q --db "$T/p.db" --report "$T/r.json" -- make -j2
	[ "$(cap_of "$T/r.json")" = "2 build -j2" ]
	# a bare -j (no limit) or none: the CPUs it may use
	MAKEFLAGS=-j run "$HR" run -q --db "$T/p.db" --report "$T/r.json" -- make
	[ "$(cap_of "$T/r.json" | cut -d' ' -f1)" = "$(nproc)" ]
}

# Start distccd on a free port of 127.0.0.1 in a process group of its own; DISTCCD_PGID
# and DISTCC_HOSTS are set. Teardown ends the group.
start_distccd() {
	local port
	port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
	setsid distccd --no-detach --daemon --log-stderr --log-level info --listen 127.0.0.1 \
		--allow 127.0.0.1 -p "$port" > "$T/distccd.log" 2>&1 3>&- &
	DISTCCD_PGID=$!
	for i in $(seq 1 50); do
		python3 -c 'import socket, sys; socket.create_connection(("127.0.0.1", int(sys.argv[1])), 1)' "$port" \
			2>/dev/null && break
		sleep 0.1
	done
	mkdir -p "$T/distcc"
	export DISTCC_HOSTS="127.0.0.1:$port/200" DISTCC_DIR="$T/distcc" DISTCC_FALLBACK=0
}

@test "headroom in front of distcc: jobs compiled by a local distccd build, learn their local footprint, -j200 is the cap" {
	command -v distcc && command -v distccd || skip "distcc not installed"
	start_distccd
	mkdir -p "$T/b" && cd "$T/b"
	for i in 1 2 3 4 5 6 7 8; do big_c "f$i.c" "C(1)"; done
	printf 'OBJS = f1.o f2.o f3.o f4.o f5.o f6.o f7.o f8.o\nall: $(OBJS)\n%%.o: %%.c\n\t$(CC) -O2 -c $< -o $@\n' > Makefile
	run "$HR" run --db "$T/p.db" --report "$T/r.json" -- make -j200 CC='$(HEADROOM_LAUNCHER) distcc gcc'
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$(ls f*.o | wc -l)" -eq 8 ]
	cat "$T/distccd.log"
	[ "$(grep -c 'COMPILE_OK' "$T/distccd.log")" -eq 8 ]   # compiled by distccd, not here
	[ "$(cap_of "$T/r.json")" = "200 build -j200" ]
	python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); assert r["jobs"] == 8 and r["mode"] == "launcher", r' "$T/r.json"
	# the class says what they cost here: less than compiling the same file here does
	remote=$(profile_peak "$T/p.db" "gcc -O2 via distcc")
	rm -f f*.o
	run "$HR" run -q --db "$T/p.db" -- make -j2 f1.o CC='$(HEADROOM_LAUNCHER) gcc'
	[ "$status" -eq 0 ]
	here=$(profile_peak "$T/p.db" "gcc -O2")
	echo "learned peak via distcc $remote, here $here"
	[ "$remote" -gt 0 ]
	[ "$remote" -lt "$here" ]
	# headroom exec alone, in front of distcc, outside any build
	run "$HR" exec -- distcc gcc -O2 -c f2.c -o f2.o
	[ "$status" -eq 0 ]
	[ -s f2.o ]
}
