#!/usr/bin/env bats
# headroom doctor: the preflight, on fixture trees and on this machine.

load helper

@test "doctor reads memory, the cgroup limit, PSI and leftovers from a fixture /proc" {
	run "$HR" doctor --root "$ROOT/tests/fixtures/v2"
	[ "$status" -eq 0 ]
	[[ "$output" == *"cgroup v2 limit 4.00 GiB (RAM 31.25 GiB), 2.00 GiB in use inside it"* ]]
	[[ "$output" == *"some 1.5 %, full 0.2 %"* ]]
	[[ "$output" == *"WARN  leftovers    1 compiler process holds 2.00 MiB: nvcc 101"* ]]
	[[ "$output" == *"headroom doctor --clean"* ]]
	run "$HR" doctor --root "$ROOT/tests/fixtures/v1" --json
	[ "$status" -eq 0 ]
	echo "$output" | python3 -c '
import json, sys
d = json.load(sys.stdin)
by = {f["check"]: f for f in d["findings"]}
assert "cgroup v1 limit 2.00 GiB" in by["memory"]["detail"], by
assert by["pressure"]["status"] == "warn" and by["pressure"]["fix"], by   # v1 fixture has no PSI
assert by["leftovers"]["status"] == "ok" and by["leftovers"]["fix"] is None, by
assert d["failed"] is False
'
}

@test "doctor --clean ends the leftover compilers it lists, by pid" {
	cp "$(command -v sleep)" "$T/cicc"
	"$T/cicc" 300 &
	local pid=$!
	run "$HR" doctor
	[[ "$output" == *"cicc $pid"* ]]
	run "$HR" doctor --clean
	[[ "$output" == *"cicc $pid"*"(ending them)"* ]]
	local st=0
	wait "$pid" || st=$?
	[ "$st" -eq 137 ]
}

@test "doctor rejects --clean with --root and stray arguments" {
	run "$HR" doctor --clean --root "$ROOT/tests/fixtures/v2"
	[ "$status" -eq 2 ]
	[[ "$output" == *"--clean"* ]]
	run "$HR" doctor extra
	[ "$status" -eq 2 ]
	run "$HR" doctor --help
	[ "$status" -eq 0 ]
}

@test "headroom run warns about leftover compilers before the build starts" {
	cp "$(command -v sleep)" "$T/ptxas"
	"$T/ptxas" 300 &
	local pid=$!
	run "$HR" run --no-db -- true
	[ "$status" -eq 0 ]
	[[ "$output" == *"doctor: "*"compiler process"*"ptxas $pid"* ]]
	kill "$pid"
}

@test "headroom run says when no job came through the launcher" {
	run "$HR" run --no-db -- sleep 2.5
	[ "$status" -eq 0 ]
	[[ "$output" == *"no compile job came through headroom exec"* ]]
}

@test "doctor imports no torch.py from the current directory and passes CUDA_HOME to no shell" {
	mkdir "$T/cwd"
	printf 'open("%s/IMPORTED", "w").close()\nclass version:\n    cuda = "99.9"\n' "$T" > "$T/cwd/torch.py"
	printf 'open("%s/IMPORTED", "w").close()\n' "$T" > "$T/cwd/ninja.py"
	cd "$T/cwd"
	CUDA_HOME="/x'; touch $T/PWN; '" PATH=/usr/bin:/bin run "$HR" doctor
	[ ! -e "$T/IMPORTED" ]
	[ ! -e "$T/PWN" ]
	[[ "$output" != *"99.9"* ]]
	[[ "$output" == *"no nvcc on PATH or in CUDA_HOME"* ]]
}

@test "doctor finds nvcc in a CUDA_HOME whose name has quotes, spaces and \$( )" {
	local home="$T/cuda 'it's\" \$(touch $T/PWN)"
	mkdir -p "$home/bin"
	printf '#!/bin/sh\necho "nvcc: NVIDIA (R) Cuda compiler driver"\necho "Cuda compilation tools, release 12.4, V12.4.131"\n' > "$home/bin/nvcc"
	chmod +x "$home/bin/nvcc"
	CUDA_HOME="$home" PATH=/usr/bin:/bin run "$HR" doctor --json
	[ ! -e "$T/PWN" ]
	echo "$output" | python3 -c '
import json, sys
by = {f["check"]: f for f in json.load(sys.stdin)["findings"]}
assert by["cuda"]["detail"].startswith("nvcc 12.4"), by["cuda"]
'
}
