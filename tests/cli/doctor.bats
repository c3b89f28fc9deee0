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
