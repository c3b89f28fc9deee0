#!/usr/bin/env bats
# Entry points: real CMake, make and nvcc builds of small projects, governed through the
# launcher variables that headroom run sets.

load helper

small_sources() { # $1: dir, $2: extension
	mkdir -p "$1"
	for i in 1 2 3; do
		printf 'int f%d(int x);\nint f%d(int x) { return x * %d; }\n' "$i" "$i" "$i" > "$1/f$i.$2"
	done
	printf 'int f1(int); int f2(int); int f3(int);\nint main(void) { return f1(1) + f2(1) + f3(1) - 6; }\n' > "$1/main.$2"
}

@test "a CMake project picks up CMAKE_CXX_COMPILER_LAUNCHER: every compile is governed" {
	command -v cmake && command -v ninja || skip "cmake and ninja needed"
	small_sources "$T/cm" cpp
	printf 'cmake_minimum_required(VERSION 3.17)\nproject(small CXX)\nadd_executable(small main.cpp f1.cpp f2.cpp f3.cpp)\n' > "$T/cm/CMakeLists.txt"
	cd "$T/cm"
	run "$HR" run --db "$T/p.db" --report "$T/r.json" -- sh -c 'cmake -S . -B build -G Ninja >/dev/null && cmake --build build'
	[ "$status" -eq 0 ]
	./build/small
	for f in main f1 f2 f3; do
		[ "$(sqlite3 "$T/p.db" "select count(*) from profiles where kind = 0 and key like '%$f.cpp'")" -eq 1 ]
	done
}

@test "plain make with the launcher in CC: every compile is governed, a failure passes through" {
	command -v make && command -v cc || skip "make and cc needed"
	small_sources "$T/mk" c
	printf 'OBJ = main.o f1.o f2.o f3.o\nsmall: $(OBJ)\n\t$(CC) -o $@ $(OBJ)\n' > "$T/mk/Makefile"
	cd "$T/mk"
	run "$HR" run --no-db --report "$T/r.json" -- sh -c 'make -j4 CC="$HEADROOM_LAUNCHER cc"'
	[ "$status" -eq 0 ]
	./small
	python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); assert r["jobs"] == 5, r' "$T/r.json"   # 4 compiles + the link
	echo 'int broken(' > f2.c
	run "$HR" run --no-db -- sh -c 'make -j4 CC="$HEADROOM_LAUNCHER cc"'
	[ "$status" -eq 2 ]   # make's own status for a failed build
}

@test "nvcc through PYTORCH_NVCC-style launching compiles a CUDA file" {
	local nvcc=${CUDA_HOME:-/usr/local/cuda}/bin/nvcc
	[ -x "$nvcc" ] || skip "no nvcc here"
	mkdir -p "$T/cu"
	printf '__global__ void k(float *p) { p[threadIdx.x] *= 2.0f; }\n' > "$T/cu/k.cu"
	cd "$T/cu"
	run "$HR" run --db "$T/p.db" -- sh -c '$PYTORCH_NVCC -O2 -arch=sm_90 -c k.cu -o k.o'
	[ "$status" -eq 0 ]
	[ -s k.o ]
	[ "$(sqlite3 "$T/p.db" "select count(*) from profiles where kind = 1 and key = 'nvcc -O2 -arch=sm_90'")" -eq 1 ]
}
