#!/usr/bin/env bats
# headroom doctor: the preflight, on fixture trees and on this machine.

load helper

# Run a bash script as pid 1 of a new pid namespace with its own /proc: the processes a
# test makes there are all that doctor can see or end (never another build's on this
# machine), and they all end with it. Orphans there are adopted by that pid 1. The
# script gets $T and $HR from the environment, and the functions below. A governor
# there ends killed with its guardian, leaving its runtime directory: it is kept in $T.
in_pidns() {
	export T HR XDG_RUNTIME_DIR="$T"
	export -f started gone
	unshare --pid --fork --mount-proc bash "$@"
}

# Whether the process of pid file $1 has exec'd $2 (its comm), within 10 s.
started() {
	for _ in $(seq 200); do
		[ -s "$1" ] && [ "$(cat /proc/$(cat "$1")/comm 2>/dev/null)" = "$2" ] && return 0
		sleep 0.05
	done
	return 1
}

# Whether the process of pid file $1 is gone (or a zombie), within 10 s.
gone() {
	for _ in $(seq 200); do
		{ [ -e /proc/$(cat "$1") ] && ! grep -q ') Z' /proc/$(cat "$1")/stat 2>/dev/null; } || return 0
		sleep 0.05
	done
	return 1
}

need_pidns() {
	unshare --pid --fork --mount-proc true 2>/dev/null || skip "a pid namespace needs root (CI runs as root)"
}

@test "doctor reads memory, the cgroup limit, PSI and compilers from a fixture /proc" {
	run "$HR" doctor --root "$ROOT/tests/fixtures/v2"
	[ "$status" -eq 0 ]
	[[ "$output" == *"cgroup v2 limit 4.00 GiB (RAM 31.25 GiB), 2.00 GiB in use inside it"* ]]
	[[ "$output" == *"some 1.5 %, full 0.2 %"* ]]
	# nvcc 101 runs below a live ninja (100): a running build's, not a leftover
	[[ "$output" == *"ok    leftovers    no compiler processes"*" left from builds that are gone"* ]]
	[[ "$output" == *"compiling    1 compiler process"*" still in use, left alone: nvcc 101 ("*"in the build of ninja 100)"* ]]
	[[ "$output" != *"--clean"* ]]
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

@test "doctor: a leftover is a compiler whose build is gone; a running build's and a shell's are not (fixture)" {
	[ "$(id -u)" -eq 0 ] || skip "the fixture's processes are root's and uid 4242's: as a user, none is the caller's"
	run "$HR" doctor --root "$ROOT/tests/fixtures/leftover" --json
	[ "$status" -eq 0 ]
	echo "$output" | python3 -c '
import json, sys
by = {f["check"]: f for f in json.load(sys.stdin)["findings"]}
left = {p["pid"]: p for p in by["leftovers"]["processes"]}
used = {p["pid"]: p for p in by["compiling"]["processes"]}
# pids are numbers; adopted by init (1), by systemd --user (60), by tini (80)
assert all(type(p) is int for p in list(left) + list(used)), (left, used)
assert all(type(p["by_pid"]) is int for p in list(left.values()) + list(used.values())), (left, used)
assert sorted(left) == [21, 22, 30, 61, 81], left
assert left[61]["by_pid"] == 60 and left[81]["by_comm"] == "tini", left
assert left[30]["uid"] == 4242 and left[21]["user"] == "root", left
# ninja 10, python3 setup.py 50 and headroom 95 run builds; bash 40 runs cc1 42 by hand
assert {p: u["kind"] for p, u in used.items()} == {12: "running_build", 13: "running_build", 42: "in_use",
    51: "running_build", 90: "in_use", 98: "running_build"}, used
assert used[13]["by_pid"] == 10 and used[51]["by_pid"] == 50 and used[98]["by_pid"] == 95, used
assert used[90]["by_comm"] is None, used   # its parent is not in the table
assert 70 not in left and 70 not in used   # a zombie holds nothing
assert by["leftovers"]["status"] == "warn" and "--clean" in by["leftovers"]["fix"], by
'
	# as root: every user's, each named
	run "$HR" doctor --root "$ROOT/tests/fixtures/leftover"
	[[ "$output" == *"5 compiler processes left from builds that are gone hold 7.00 MiB: nvcc 21 (root, 1.00 MiB)"*"cc1plus 30 (uid 4242, 2.00 MiB)"* ]]
}

# A running build (headroom run -- ninja, its job a compiler named cicc), a compile a
# script runs, and a cicc whose build is gone (its shell exited: adopted by pid 1).
@test "doctor --clean ends only the leftover: never a running build's compiler nor a script's" {
	need_pidns
	cp "$(command -v sleep)" "$T/cicc"
	mkdir "$T/b"
	printf 'rule c\n  command = $${HEADROOM_LAUNCHER} %s 301\nbuild out: c\n' "$T/cicc" > "$T/b/build.ninja"
	printf '"%s" 302 &\necho $! > "%s/held.pid"\nwait\n' "$T/cicc" "$T" > "$T/held.sh"
	cat > "$T/ns.sh" <<'SH'
cd "$T"
( "$T/cicc" 300 & echo $! > orphan.pid )
bash "$T/held.sh" &
"$HR" run -q --no-db -- ninja -C b &
for i in $(seq 100); do pgrep -f "^$T/cicc 301" > build.pid && [ -s held.pid ] && break; sleep 0.1; done
started orphan.pid cicc && started held.pid cicc && started build.pid cicc
"$HR" doctor --json > list.json; echo $? > list.rc
"$HR" doctor --clean > clean.txt; echo $? > clean.rc
gone orphan.pid
for p in orphan held build; do
	pid=$(cat $p.pid)
	if [ -e /proc/$pid ] && ! grep -q ') Z' /proc/$pid/stat; then echo "$p alive"; else echo "$p gone"; fi
done > after.txt
SH
	in_pidns "$T/ns.sh"
	local orphan held build
	orphan=$(cat "$T/orphan.pid") held=$(cat "$T/held.pid") build=$(cat "$T/build.pid")
	[ "$(cat "$T/list.rc")" -eq 0 ]
	python3 -c '
import json, sys
orphan, held, build = map(int, sys.argv[2:])
by = {f["check"]: f for f in json.load(open(sys.argv[1]))["findings"]}
left = [p["pid"] for p in by["leftovers"]["processes"]]
used = {p["pid"]: p for p in by["compiling"]["processes"]}
assert left == [orphan], (left, used)
assert used[build]["kind"] == "running_build" and used[build]["by_comm"] == "headroom", used
assert used[held]["kind"] == "in_use" and used[held]["by_comm"] == "bash", used
' "$T/list.json" "$orphan" "$held" "$build"
	run cat "$T/clean.txt"
	[[ "$output" == *"ended 1 compiler process left from builds that are gone"*"cicc $orphan ("* ]]
	[[ "$output" == *"cicc $build ("*"in the build of headroom"* ]]
	[ "$(cat "$T/clean.rc")" -eq 0 ]
	run cat "$T/after.txt"
	[ "${lines[0]}" = "orphan gone" ]
	[ "${lines[1]}" = "held alive" ]
	[ "${lines[2]}" = "build alive" ]
}

# As a user: only that user's leftovers are listed and ended; root's are not touched.
@test "doctor --clean as a user ends that user's leftovers only" {
	need_pidns
	chmod 755 "$T"
	cp "$(command -v sleep)" "$T/cicc"
	cat > "$T/ns.sh" <<'SH'
cd "$T"
( setpriv --reuid=4242 --regid=4242 --clear-groups "$T/cicc" 303 & echo $! > mine.pid )
( "$T/cicc" 304 & echo $! > roots.pid )
started mine.pid cicc && started roots.pid cicc
setpriv --reuid=4242 --regid=4242 --clear-groups "$HR" doctor --clean > user.txt 2>&1; echo $? > user.rc
gone mine.pid
for p in mine roots; do
	pid=$(cat $p.pid)
	if [ -e /proc/$pid ] && ! grep -q ') Z' /proc/$pid/stat; then echo "$p alive"; else echo "$p gone"; fi
done > after.txt
SH
	in_pidns "$T/ns.sh"
	local mine roots
	mine=$(cat "$T/mine.pid") roots=$(cat "$T/roots.pid")
	run cat "$T/user.txt"
	[[ "$output" != *"cicc $roots"* ]]
	[[ "$output" != *"not permitted"* ]]
	[[ "$output" == *"ended 1 compiler process of yours left from builds that are gone"*"cicc $mine ("* ]]
	[ "$(cat "$T/user.rc")" -eq 0 ]
	run cat "$T/after.txt"
	[ "${lines[0]}" = "mine gone" ]
	[ "${lines[1]}" = "roots alive" ]
}

# Root in a user namespace sees every user's processes but may not signal those of users
# it does not map: --clean names what it could not end and exits 1.
@test "doctor --clean that cannot end a leftover says which and why, and exits 1" {
	need_pidns
	unshare --user --map-root-user true 2>/dev/null || skip "no user namespaces here"
	chmod 755 "$T"
	cp "$(command -v sleep)" "$T/cicc"
	cat > "$T/ns.sh" <<'SH'
cd "$T"
( setpriv --reuid=4242 --regid=4242 --clear-groups "$T/cicc" 305 & echo $! > other.pid )
started other.pid cicc
unshare --user --map-root-user "$HR" doctor --clean > clean.txt 2>&1; echo $? > clean.rc
unshare --user --map-root-user "$HR" doctor --clean --json > clean.json 2>/dev/null
if [ -e /proc/$(cat other.pid) ]; then echo alive; else echo gone; fi > after.txt
SH
	in_pidns "$T/ns.sh"
	local other
	other=$(cat "$T/other.pid")
	[ "$(cat "$T/clean.rc")" -eq 1 ]
	[ "$(cat "$T/after.txt")" = alive ]
	run cat "$T/clean.txt"
	[[ "$output" == *"FAIL  leftovers    could not end 1 of 1 compiler process left from builds that are gone: cicc $other (nobody, "*"): Operation not permitted"* ]]
	[[ "$output" != *"ended 1"* ]]
	python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
by = {f["check"]: f for f in d["findings"]}
p = by["leftovers"]["processes"]
assert [x["pid"] for x in p] == [int(sys.argv[2])], p
assert p[0]["ended"] is False and p[0]["error"] == "Operation not permitted", p
assert by["leftovers"]["status"] == "fail" and d["failed"] is True, by
' "$T/clean.json" "$other"
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
	need_pidns
	cp "$(command -v sleep)" "$T/ptxas"
	cat > "$T/ns.sh" <<'SH'
( "$T/ptxas" 300 & echo $! > "$T/ptxas.pid" )
started "$T/ptxas.pid" ptxas
"$HR" run --no-db -- true > "$T/run.txt" 2>&1; echo $? > "$T/run.rc"
SH
	in_pidns "$T/ns.sh"
	[ "$(cat "$T/run.rc")" -eq 0 ]
	run cat "$T/run.txt"
	[[ "$output" == *"doctor: "*"compiler process"*"ptxas $(cat "$T/ptxas.pid") ("* ]]
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

@test "doctor says which python3 it asked, whether torch imports there, its CUDA, and what TORCH_CUDA_ARCH_LIST will build" {
	mkdir -p "$T/py/torch/utils" "$T/bin"
	cat > "$T/py/torch/__init__.py" <<'PY'
__version__ = "2.9.0"
class version:
    cuda = "12.4"
class cuda:
    @staticmethod
    def device_count():
        return 0
PY
	cat > "$T/py/torch/utils/__init__.py" < /dev/null
	cat > "$T/py/torch/utils/cpp_extension.py" <<'PY'
import os
def _get_cuda_arch_flags():
    # as torch does: the visible GPUs, else its whole list
    return ["-gencode=arch=compute_80,code=sm_80", "-gencode=arch=compute_90,code=sm_90",
            "-gencode=arch=compute_75,code=sm_75"]
PY
	printf '#!/bin/sh\necho "Cuda compilation tools, release 12.4, V12.4.131"\n' > "$T/bin/nvcc"
	chmod +x "$T/bin/nvcc"
	PYTHONPATH="$T/py" PATH="$T/bin:/usr/bin:/bin" run "$HR" doctor --json
	echo "$output" | python3 -c '
import json, sys
by = {f["check"]: f for f in json.load(sys.stdin)["findings"]}
assert by["python"]["detail"].startswith("/usr/bin/python3 (Python 3."), by["python"]
assert by["torch"]["status"] == "ok" and "torch 2.9.0 imports in /usr/bin/python3 (CUDA 12.4; 0 GPUs" in by["torch"]["detail"], by["torch"]
assert by["cuda"]["status"] == "ok" and by["cuda"]["detail"] == "nvcc 12.4, PyTorch built with CUDA 12.4", by["cuda"]
a = by["arch list"]
assert a["status"] == "warn" and "(7.5 8.0 9.0)" in a["detail"] and "TORCH_CUDA_ARCH_LIST" in a["fix"], a
'
	TORCH_CUDA_ARCH_LIST=9.0 PYTHONPATH="$T/py" PATH="$T/bin:/usr/bin:/bin" run "$HR" doctor
	[[ "$output" == *"TORCH_CUDA_ARCH_LIST=9.0: torch extensions compile for those"* ]]
	# no torch: the cuda check cannot pass
	PATH="$T/bin:/usr/bin:/bin" run "$HR" doctor --json
	echo "$output" | python3 -c '
import json, sys
by = {f["check"]: f for f in json.load(sys.stdin)["findings"]}
assert by["torch"]["status"] == "warn" and "does not import in /usr/bin/python3" in by["torch"]["detail"], by["torch"]
assert by["cuda"]["status"] == "warn" and "no PyTorch to compare" in by["cuda"]["detail"], by["cuda"]
'
}
