#!/usr/bin/env bats
# headroom watch against the NVML test double (tests/nvml-double, built as
# build/nvml-double/libnvidia-ml.so.1 and loaded through the same dlopen path), and with
# no GPU at all.

load helper

DOUBLE="$ROOT/build/nvml-double"

use_double() {
	[ -e "$DOUBLE/libnvidia-ml.so.1" ] || skip "the NVML double is not built (make)"
	export LD_LIBRARY_PATH="$DOUBLE" NVML_DOUBLE_SCRIPT="$T/gpus"
}

# Wait until pid $1 runs $2: before its exec its environ is still its parent's, and a
# real GPU process shows in NVML only long after (once it has a CUDA context).
wait_exec() {
	for i in $(seq 1 100); do [ "$(cat "/proc/$1/comm" 2>/dev/null)" = "$2" ] && return 0; sleep 0.02; done
	return 1
}

# Fails when the command succeeds. (bats checks `! CMD` only as a test's last command:
# anywhere else its status is ignored.)
events() { # $1 jsonl, $2 event name: how many
	python3 -c 'import json,sys; print(sum(1 for l in open(sys.argv[1]) if json.loads(l).get("event") == sys.argv[2]))' "$1" "$2"
}

# Wait up to $1 seconds for the command after it to succeed (a condition, polled).
wait_for() {
	local n=$1 i
	shift
	for i in $(seq 1 $((n * 20))); do "$@" && return 0; sleep 0.05; done
	return 1
}

# Has the JSON-lines file $1 a sample listing at least $2 processes?
sample_with() {
	python3 -c 'import json,sys; sys.exit(0 if any(len(json.loads(l).get("processes", [])) >= int(sys.argv[2]) for l in open(sys.argv[1]) if l.strip()) else 1)' "$1" "$2" 2>/dev/null
}

# Has $1 at least $3 events named $2?
events_at_least() {
	[ -e "$1" ] && [ "$(events "$1" "$2")" -ge "$3" ]
}

@test "no GPU, no driver: it says so and watches host memory" {
	[ ! -e /usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1 ] || skip "this machine has an NVIDIA driver"
	run "$HR" watch -q --interval 200 --duration 1 --jsonl "$T/o.jsonl"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"watching host memory only"* ]]
	python3 -c 'import json,sys; s=[json.loads(l) for l in open(sys.argv[1])]; assert len(s) >= 3 and all(x["host_available_bytes"] > 0 and x["gpus"] == [] for x in s), s' "$T/o.jsonl"
}

# Start each line of standard input (a command for sh's exec, such as `env VAR=1 sleep
# 60`: its pid is the process's) under one launcher that never reaps them, as one busy elsewhere does: how
# each ends stays readable from its zombie, the only end watch takes for a death when
# the process is not its own child. Their pids, in order, in $T/pids once all started.
# The launcher's command line names this test's directory (teardown ends it).
launch() {
	rm -f "$T/pids"
	cat > "$T/launch"
	python3 -c '
import os, sys, time
t = sys.argv[1]
pids = [os.posix_spawnp("sh", ["sh", "-c", "exec " + l], os.environ) for l in open(t + "/launch").read().splitlines() if l]
open(t + "/pids.tmp", "w").write("\n".join(map(str, pids)) + "\n")
os.rename(t + "/pids.tmp", t + "/pids")
time.sleep(60)
' "$T" &
	wait_for 20 test -e "$T/pids"
}

@test "partial death: a job loses a rank, the event comes within 2 s, and the survivor is stopped" {
	use_double
	launch <<-EOF
		env TORCHELASTIC_RUN_ID=j1 RANK=0 sleep 60
		env TORCHELASTIC_RUN_ID=j1 RANK=1 sleep 60
	EOF
	local p0 p1
	read -r p0 p1 <<< "$(tr '\n' ' ' < "$T/pids")"
	wait_exec "$p0" sleep
	wait_exec "$p1" sleep
	printf 'gpu uuid=GPU-a bus=00000000:04:00.0 name=H200 total=80G used=30G util=90\ngpu uuid=GPU-b bus=00000000:05:00.0 name=H200 total=80G used=30G util=90\nproc gpu=0 pid=%d used=29G\nproc gpu=1 pid=%d used=29G\n' "$p0" "$p1" > "$T/gpus"
	( sleep 1.5; kill -9 "$p1"; date +%s%3N > "$T/killed" ) &
	run timeout 20 "$HR" watch -q --interval 1000 --duration 5 --jsonl "$T/o.jsonl" --stop-job-on-partial-death --stop-delay 1 --grace 1
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$(events "$T/o.jsonl" partial_death)" -eq 1 ]
	python3 - "$T/o.jsonl" "$(cat "$T/killed")" <<'PY'
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1]) if json.loads(l).get("event") == "partial_death"][0]
latency = ev["time_ms"] - int(sys.argv[2])
print("latency ms", latency)
assert ev["job"] == "torchelastic:j1" and ev["rank"] == 1 and ev["ranks_alive"] == 1 and ev["ranks_seen"] == 2, ev
assert -100 <= latency <= 2000, latency
PY
	[[ "$output" == *"job torchelastic:j1 lost rank 1"* ]]
	wait_for 10 not running "$p0"   # the survivor was ended
}

@test "partial death: an 8-rank job that loses two ranks reports each; the ranks it stops are not deaths" {
	use_double
	local p i
	# a launcher that does not reap its children: how each ended is read from its zombie
	python3 - "$T" <<'PY' &
import os, sys, time
t = sys.argv[1]
rank = lambda port, n, r: dict(os.environ, WORLD_SIZE=str(n), MASTER_ADDR="127.0.0.1", MASTER_PORT=port, RANK=str(r))
pids = [os.posix_spawnp("sleep", ["sleep", "60"], rank("29611", 8, r)) for r in range(8)]
pids += [os.posix_spawnp("sleep", ["sleep", "60"], rank("29661", 2, r)) for r in range(2)]
open(t + "/pids.tmp", "w").write("\n".join(map(str, pids)) + "\n")
os.rename(t + "/pids.tmp", t + "/pids")
time.sleep(60)
PY
	local launcher=$!
	wait_for 20 test -e "$T/pids"
	mapfile -t pid < "$T/pids"
	local d0=${pid[8]} d1=${pid[9]}
	{
		for i in 0 1 2 3 4 5 6 7; do printf 'gpu uuid=GPU-%d bus=00000000:%02d:00.0 name=H200 total=80G used=30G util=90\n' $i $((i + 4)); done
		for i in 0 1 2 3 4 5 6 7; do printf 'proc gpu=%d pid=%d used=29G\n' $i "${pid[$i]}"; done
		printf 'proc gpu=0 pid=%d used=1G\nproc gpu=1 pid=%d used=1G\n' "$d0" "$d1"
	} > "$T/gpus"
	# report only: rank 7 dies, then rank 5 while the others hang on
	"$HR" watch -q --interval 200 --duration 60 --jsonl "$T/r.jsonl" 2> "$T/err" &
	local w=$!
	wait_for 20 sample_with "$T/r.jsonl" 10
	kill -9 "${pid[7]}"
	wait_for 20 events_at_least "$T/r.jsonl" partial_death 1
	kill -9 "${pid[5]}"
	wait_for 20 events_at_least "$T/r.jsonl" partial_death 2
	# then its launcher ends two more: asked to end, no news
	kill -TERM "${pid[0]}" "${pid[1]}"
	wait_for 20 events_at_least "$T/r.jsonl" process_exit 4
	kill -TERM "$w"
	wait "$w" || true
	cat "$T/err"
	python3 - "$T/r.jsonl" <<'PY'
import json, sys
pd = [e for e in map(json.loads, open(sys.argv[1])) if e.get("event") == "partial_death"]
assert [(e["rank"], e["ranks_alive"], e["ranks_seen"], e["gpu"]) for e in pd] == [(7, 7, 8, 7), (5, 6, 8, 5)], pd
assert all(e["job"] == "dist:127.0.0.1:29611" for e in pd), pd
PY
	[ "$(events "$T/r.jsonl" partial_death)" -eq 2 ]

	# stopped at once: rank 3 dies, the three others are ended; the decoy job runs on
	"$HR" watch -q --interval 200 --duration 60 --jsonl "$T/s.jsonl" --stop-job-on-partial-death --stop-delay 0 \
		--grace 1 2> "$T/err" &
	w=$!
	wait_for 20 sample_with "$T/s.jsonl" 6
	kill -9 "${pid[3]}"
	for i in 2 4 6; do wait_for 10 not running "${pid[$i]}"; done
	wait_for 10 events_at_least "$T/s.jsonl" job_stopped 1
	kill -TERM "$w"
	wait "$w" || true
	cat "$T/err"
	running "$d0"
	running "$d1"
	kill "$d0" "$d1" "$launcher"
	[ "$(events "$T/s.jsonl" partial_death)" -eq 1 ]
	python3 -c 'import json,sys; st=[e for e in map(json.loads, open(sys.argv[1])) if e.get("event") == "job_stopped"]; assert len(st) == 1 and st[0]["ranks_signalled"] == 3, st' "$T/s.jsonl"
}

# Is pid running (not a zombie its parent has not reaped)?
running() {
	[ -e "/proc/$1/stat" ] && [ "$(cut -d' ' -f3 "/proc/$1/stat")" != Z ]
}

@test "partial death: only ranks count and only ranks are stopped, after --stop-delay; a rank that exits 0 is no death" {
	use_double
	# A launcher that does not reap its children (their ends are read from their zombies):
	# job A's ranks a0, a1 and job B's b0, b1 (torch.distributed's variables, no torchrun),
	# and a GPU process with no rank variables beside them, all siblings.
	python3 - "$T" <<'PY' &
import os, sys, time
t = sys.argv[1]
def spawn(argv, **env):
    return os.posix_spawnp(argv[0], argv, dict(os.environ, **env))
rank = lambda port, r: dict(WORLD_SIZE="2", MASTER_ADDR="127.0.0.1", MASTER_PORT=port, RANK=r, LOCAL_RANK=r)
a0 = spawn(["sleep", "20"], **rank("29512", "0"))
a1 = spawn(["sh", "-c", 'while [ ! -e "$0/a1.go" ]; do sleep 0.05; done; exit 0', t], **rank("29512", "1"))
b0 = spawn(["sleep", "20"], **rank("29513", "0"))
b1 = spawn(["sleep", "20"], **rank("29513", "1"))
sib = spawn(["sleep", "20"])
open(t + "/pids.tmp", "w").write(f"{a0} {a1} {b0} {b1} {sib}\n")
os.rename(t + "/pids.tmp", t + "/pids")
time.sleep(20)
PY
	local launcher=$!
	for i in $(seq 1 100); do [ -e "$T/pids" ] && break; sleep 0.1; done
	read -r a0 a1 b0 b1 sib < "$T/pids"
	{
		printf 'gpu uuid=GPU-a bus=00000000:04:00.0 name=H200 total=80G used=30G util=90\n'
		for p in $a0 $a1 $b0 $b1 $sib; do printf 'proc gpu=0 pid=%d used=1G\n' "$p"; done
	} > "$T/gpus"
	"$HR" watch -q --interval 200 --duration 30 --jsonl "$T/o.jsonl" --stop-job-on-partial-death --stop-delay 2 \
		--grace 1 2> "$T/err" &
	local w=$!
	wait_for 20 sample_with "$T/o.jsonl" 5
	touch "$T/a1.go"          # a1 finishes: exit 0
	kill -9 "$b1"             # b1 dies
	wait_for 20 events_at_least "$T/o.jsonl" job_stopped 1
	wait_for 10 not running "$b0"   # it was stopped (when: the events' times below)
	kill -TERM "$w"
	wait "$w" || true
	cat "$T/err"
	running "$a0"             # a0 lost a rank that finished: untouched
	running "$sib"            # never a rank, never signalled
	kill "$a0" "$sib" "$launcher" 2>/dev/null || true
	[ "$(events "$T/o.jsonl" partial_death)" -eq 1 ]
	[ "$(events "$T/o.jsonl" job_stopped)" -eq 1 ]
	python3 - "$T/o.jsonl" "$a1" "$b1" "$sib" <<'PY'
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1])]
a1, b1, sib = (int(x) for x in sys.argv[2:])
pd = [e for e in ev if e.get("event") == "partial_death"][0]
assert pd["job"] == "dist:127.0.0.1:29513" and pd["pid"] == b1 and pd["rank"] == 1 and pd["ranks_alive"] == 1, pd
st = [e for e in ev if e.get("event") == "job_stopped"][0]
assert st["job"] == "dist:127.0.0.1:29513" and st["ranks_signalled"] == 1, st
assert st["time_ms"] - pd["time_ms"] >= 1900, (pd, st)
ex = {e["pid"]: e for e in ev if e.get("event") == "process_exit"}
assert ex[a1]["how"] == "exited with status 0" and ex[a1]["job"] == "dist:127.0.0.1:29512", ex[a1]
assert ex[b1]["how"] == "killed by signal 9", ex[b1]
assert sib not in ex
procs = [p for s in ev if "processes" in s for p in s["processes"] if p["pid"] == sib]
assert procs and procs[0]["job"] == "pid:%d" % sib and procs[0]["rank"] is None, procs[:1]
PY
}

# The words before a command that run it without the kernel's process events: as root,
# without CAP_NET_ADMIN (the events need it); any other user never has them. Words, not
# a function: a function in the background is a shell of its own, whose $! is not the
# command's.
if [ "$(id -u)" -eq 0 ]; then
	NO_PROC_EVENTS=(setpriv --bounding-set -net_admin --inh-caps -net_admin)
else
	NO_PROC_EVENTS=()
fi

# Whether this machine gives the kernel's process events to a process of ours (root, a
# kernel with CONFIG_PROC_EVENTS, the initial namespaces): asked of the kernel itself,
# whose answer to a subscription says so.
proc_events() {
	python3 - <<'PY' 2>/dev/null
import socket, struct, sys
s = socket.socket(socket.AF_NETLINK, socket.SOCK_DGRAM, 11)  # NETLINK_CONNECTOR
s.bind((0, 1))                                                # CN_IDX_PROC
s.settimeout(1)
def op(o):  # nlmsghdr, cn_msg (CN_IDX_PROC, CN_VAL_PROC, ack 7), the operation
    cn = struct.pack("=IIIIHHI", 1, 1, 0, 7, 4, 0, o)
    s.send(struct.pack("=IHHII", 16 + len(cn), 3, 0, 0, 0) + cn)
op(1)  # PROC_CN_MCAST_LISTEN
while True:  # the answer: no event (what 0) carrying our ack number plus one
    m = s.recv(8192)
    if len(m) >= 56 and struct.unpack_from("=I", m, 28)[0] == 8 and struct.unpack_from("=I", m, 36)[0] == 0:
        op(2)  # PROC_CN_MCAST_IGNORE
        sys.exit(1 if struct.unpack_from("=I", m, 52)[0] else 0)
PY
}

# Issue 43: ranks whose parent reaps them at once (bash's `wait`, mpirun): watch could
# not read how rank 1 ended, took its exit 0 for a death, and --stop-job-on-partial-death
# sent SIGTERM to rank 0. Watch is held (SIGSTOP) while rank 1 exits and is reaped, as
# a loaded machine may hold it, and runs without the kernel's process events (which
# would tell it: the next test), so that its end is never readable; the race is not left
# to chance. A rank of another job that dies where watch can read it still stops its job.
@test "partial death: a rank whose end watch could not read is no death; one read as a death still stops its job" {
	use_double
	launch <<-EOF
		env TORCHELASTIC_RUN_ID=b43 RANK=0 sleep 60
		env TORCHELASTIC_RUN_ID=b43 RANK=1 sh -c 'while [ ! -e "\$0/b1.go" ]; do sleep 0.05; done; exit 3' $T
	EOF
	local b0 b1 a0 a1
	read -r b0 b1 <<< "$(tr '\n' ' ' < "$T/pids")"
	cat > "$T/job" <<-'EOF'
		t=$1
		env TORCHELASTIC_RUN_ID=a43 RANK=0 sh -c 'while [ ! -e "$0/a0.go" ]; do sleep 0.05; done; exit 0' "$t" & r0=$!
		env TORCHELASTIC_RUN_ID=a43 RANK=1 sh -c 'while [ ! -e "$0/a1.go" ]; do sleep 0.05; done; exit 0' "$t" & r1=$!
		echo "$r0 $r1" > "$t/job.tmp"; mv "$t/job.tmp" "$t/job.pids"
		wait "$r1"; echo "rank1 exit=$?" >> "$t/log"
		wait "$r0"; echo "rank0 exit=$?" >> "$t/log"
	EOF
	bash "$T/job" "$T" &
	wait_for 20 test -e "$T/job.pids"
	read -r a0 a1 < "$T/job.pids"
	for p in $a0 $a1 $b1; do wait_exec "$p" sh; done
	wait_exec "$b0" sleep
	{
		printf 'gpu uuid=GPU-a bus=00000000:04:00.0 name=H200 total=80G used=30G util=90\n'
		for p in $a0 $a1 $b0 $b1; do printf 'proc gpu=0 pid=%d used=1G\n' "$p"; done
	} > "$T/gpus"
	"${NO_PROC_EVENTS[@]}" "$HR" watch -q --interval 200 --duration 60 --jsonl "$T/o.jsonl" --stop-job-on-partial-death \
		--stop-delay 0 --grace 1 2> "$T/err" &
	local w=$!
	wait_for 20 sample_with "$T/o.jsonl" 4
	kill -STOP "$w"
	touch "$T/a1.go"
	wait_for 20 grep -qx 'rank1 exit=0' "$T/log"   # exited 0, reaped by its parent
	kill -CONT "$w"
	wait_for 20 events_at_least "$T/o.jsonl" process_exit 1
	# a stop (--stop-delay 0) comes with the death itself; a sample after it shows it done
	local n; n=$(wc -l < "$T/o.jsonl")
	wait_for 10 eval '[ "$(wc -l < "$T/o.jsonl")" -gt "$((n + 1))" ]'
	touch "$T/a0.go"
	wait_for 20 grep -q '^rank0 exit=' "$T/log"
	# job b's rank 1 exits 3, its zombie readable: a death, its job stopped
	touch "$T/b1.go"
	wait_for 20 events_at_least "$T/o.jsonl" job_stopped 1
	wait_for 10 not running "$b0"
	kill -TERM "$w"; wait "$w" || true
	cat "$T/err" "$T/log"
	grep -qx 'rank0 exit=0' "$T/log"   # never signalled: it finished on its own
	[ "$(events "$T/o.jsonl" partial_death)" -eq 1 ]
	[ "$(events "$T/o.jsonl" job_stopped)" -eq 1 ]
	python3 - "$T/o.jsonl" "$a1" "$b1" <<'PY'
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1])]
a1, b1 = int(sys.argv[2]), int(sys.argv[3])
ex = {e["pid"]: e for e in ev if e.get("event") == "process_exit"}
assert ex[a1]["end"] == "unknown" and ex[a1]["how"].startswith("ended, status unknown"), ex[a1]
assert ex[b1]["end"] == "failed" and ex[b1]["how"] == "exited with status 3", ex[b1]
pd = [e for e in ev if e.get("event") == "partial_death"][0]
st = [e for e in ev if e.get("event") == "job_stopped"][0]
assert pd["job"] == st["job"] == "torchelastic:b43" and pd["pid"] == b1 and st["ranks_signalled"] == 1, (pd, st)
PY
}

# Issue 43, the common case: a launcher that reaps its ranks at once (`bash -c 'r0 & r1 &
# wait'`, mpirun, torchrun's agent) hid their deaths, read as unknown ends. As root the
# kernel's process events tell each exit before the parent reaps it. Watch is held
# (SIGSTOP) until both ranks 1 have exited and been reaped, their zombies gone: only the
# events can tell how they ended.
@test "partial death: as root, the kernel's process events read ends a launcher reaped at once: exit 1 stops its job, exit 0 is clean" {
	[ "$(id -u)" -eq 0 ] || skip "the kernel's process events are read only as root"
	proc_events || skip "this kernel gives no process events (CONFIG_PROC_EVENTS, or another namespace)"
	use_double
	cat > "$T/job" <<-'EOF'
		t=$1 id=$2
		# rank 1 ends with the status in $t/$id.go once it appears; bash reaps at once
		env TORCHELASTIC_RUN_ID=$id RANK=0 sleep 60 & r0=$!
		env TORCHELASTIC_RUN_ID=$id RANK=1 sh -c 'while [ ! -s "$0" ]; do sleep 0.05; done; exit $(cat "$0")' "$t/$id.go" & r1=$!
		echo "$r0 $r1" > "$t/$id.tmp"; mv "$t/$id.tmp" "$t/$id.pids"
		wait
	EOF
	bash "$T/job" "$T" d43 &
	bash "$T/job" "$T" c43 &
	wait_for 20 test -e "$T/d43.pids"
	wait_for 20 test -e "$T/c43.pids"
	local d0 d1 c0 c1
	read -r d0 d1 < "$T/d43.pids"
	read -r c0 c1 < "$T/c43.pids"
	for p in $d0 $c0; do wait_exec "$p" sleep; done
	for p in $d1 $c1; do wait_exec "$p" sh; done
	{
		printf 'gpu uuid=GPU-a bus=00000000:04:00.0 name=H200 total=80G used=30G util=90\n'
		for p in $d0 $d1 $c0 $c1; do printf 'proc gpu=0 pid=%d used=1G\n' "$p"; done
	} > "$T/gpus"
	"$HR" watch -q --interval 200 --duration 60 --jsonl "$T/o.jsonl" --stop-job-on-partial-death --stop-delay 0 \
		--grace 1 2> "$T/err" &
	local w=$!
	wait_for 20 sample_with "$T/o.jsonl" 4
	kill -STOP "$w"
	echo 1 > "$T/d43.go"
	echo 0 > "$T/c43.go"
	wait_for 20 not test -e "/proc/$d1"   # exited and reaped: no zombie to read
	wait_for 20 not test -e "/proc/$c1"
	kill -CONT "$w"
	wait_for 20 events_at_least "$T/o.jsonl" job_stopped 1
	wait_for 10 not running "$d0"
	wait_for 20 events_at_least "$T/o.jsonl" process_exit 3
	running "$c0"   # job c43's rank 1 finished: its rank 0 runs on
	kill -TERM "$w"; wait "$w" || true
	cat "$T/err"
	[ "$(events "$T/o.jsonl" partial_death)" -eq 1 ]
	[ "$(events "$T/o.jsonl" job_stopped)" -eq 1 ]
	python3 - "$T/o.jsonl" "$d1" "$c1" <<'PY'
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1])]
d1, c1 = int(sys.argv[2]), int(sys.argv[3])
ex = {e["pid"]: e for e in ev if e.get("event") == "process_exit"}
assert ex[d1]["end"] == "failed" and ex[d1]["how"] == "exited with status 1", ex[d1]
assert ex[c1]["end"] == "clean" and ex[c1]["how"] == "exited with status 0", ex[c1]
pd = [e for e in ev if e.get("event") == "partial_death"][0]
st = [e for e in ev if e.get("event") == "job_stopped"][0]
assert pd["job"] == st["job"] == "torchelastic:d43" and pd["pid"] == d1 and st["ranks_signalled"] == 1, (pd, st)
PY
	kill "$c0"
	# -v says where ends are read from, and where they cannot be
	run "$HR" watch -q -v --interval 100 --duration 0.3
	[[ "$output" == *"reading process exits from the kernel's process events"* ]]
	run "${NO_PROC_EVENTS[@]}" "$HR" watch -q -v --interval 100 --duration 0.3
	[[ "$output" == *"the kernel's process events cannot be had (Operation not permitted): the end of a rank its launcher reaps at once is unknown"* ]]
}

@test "garbage options are usage errors: nan percentages and seconds, a zero window" {
	for opts in "--min-free-pct nan" "--min-free-pct 100" "--min-free-pct abc%" "--window 0" "--window nan" \
	            "--horizon inf" "--duration 0" "--grace -1" "--stop-delay nan" "--stuck-timeout 1e400" \
	            "--interval 10.5" "--min-free 1Q" "--window 0.5"; do
		run timeout 10 "$HR" watch -q $opts
		echo "$opts: $output"
		[ "$status" -eq 2 ]
		[[ "$output" == *"watch: ${opts%% *} "* ]]
	done
	run timeout 10 "$HR" watch -q --window 2.5 --interval 1000
	[ "$status" -eq 2 ]
	[[ "$output" == *"--window 2.5 s is shorter than 3 x --interval 1000 ms: the trend needs four samples"* ]]
}

@test "time_to_oom: a steadily growing GPU gets a warning before it is full" {
	use_double
	( for u in $(seq 10 2 78); do printf 'gpu uuid=GPU-a bus=00000000:04:00.0 name=H200 total=80G used=%dG util=90\n' "$u" > "$T/gpus.tmp"; mv "$T/gpus.tmp" "$T/gpus"; sleep 0.2; done ) 3>&- &
	local writer=$!
	printf 'gpu uuid=GPU-a bus=00000000:04:00.0 name=H200 total=80G used=10G util=90\n' > "$T/gpus"
	run timeout 20 "$HR" watch -q --interval 200 --window 3 --horizon 30 --min-free 1G --min-free-pct 1 --duration 4 --jsonl "$T/o.jsonl"
	# the writer runs past the watch: end it before teardown removes its directory
	kill "$writer" 2>/dev/null || true
	wait "$writer" 2>/dev/null || true
	echo "$output"
	[ "$(events "$T/o.jsonl" time_to_oom)" -ge 1 ]
	python3 -c 'import json,sys; e=[json.loads(l) for l in open(sys.argv[1]) if json.loads(l).get("event") == "time_to_oom"][0]; assert 0 < e["seconds"] < 30 and e["used_bytes"] < e["total_bytes"], e' "$T/o.jsonl"
}

# A writer of the double's script, on the clock however slow this machine is: GPU 0 of
# $1 total uses $2 (a Python expression of t, the seconds since it started, in MiB),
# rewritten every 20 ms for $3 s. It returns once the writer has begun (this machine can
# take seconds to start Python); kill $writer after.
gpu_writer() {
	rm -f "$T/writing"
	gpu_writer_run "$@" 3>&- &
	writer=$!
	for i in $(seq 1 500); do [ -e "$T/writing" ] && return 0; sleep 0.02; done
	return 1
}

gpu_writer_run() {
	exec python3 - "$T/gpus" "$1" "$2" "$3" <<'PY'
import math, os, sys, time
path, total, expr, dur = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
started = os.path.join(os.path.dirname(path), "writing")
t0 = time.monotonic()
while (t := time.monotonic() - t0) < dur:
    used = int(eval(expr, {"t": t, "math": math}))
    with open(path + ".tmp", "w") as f:
        f.write(f"gpu uuid=GPU-a bus=00000000:04:00.0 name=H200 total={total} used={used}M util=90\n")
    os.rename(path + ".tmp", path)
    if not os.path.exists(started):
        open(started, "w").close()
    time.sleep(0.02)
PY
}

@test "time_to_oom: memory that only wobbles has none, in JSON, in /metrics, in the events" {
	use_double
	command -v curl || skip "curl needed"
	# 60 GiB, then 4 MiB more, then back, every 100 ms
	printf 'gpu uuid=GPU-a bus=00000000:04:00.0 name=H200 total=143G used=60G util=90\n' > "$T/gpus"
	local writer port=$((20000 + RANDOM % 20000))
	gpu_writer 143G '61440 + 4 * (int(t * 10) % 2)' 5
	"$HR" watch -q --interval 100 --window 3 --duration 4 --prometheus "127.0.0.1:$port" --jsonl "$T/o.jsonl" 2> "$T/err" &
	local w=$!
	for i in 1 2 3; do sleep 1; curl -sf "http://127.0.0.1:$port/metrics" >> "$T/metrics"; done
	wait "$w"
	kill "$writer" 2>/dev/null || true
	wait "$writer" 2>/dev/null || true
	grep -q '^DCGM_FI_DEV_FB_USED{' "$T/metrics"
	not grep '^headroom_time_to_oom_seconds{' "$T/metrics"
	[ "$(events "$T/o.jsonl" time_to_oom)" -eq 0 ]
	python3 - "$T/o.jsonl" <<'PY'
import json, sys
s = [json.loads(l) for l in open(sys.argv[1])]
s = [x for x in s if x["type"] == "sample"]
used = {g["used_bytes"] for x in s for g in x["gpus"]}
assert len(s) >= 20 and len(used) == 2, (len(s), used)   # it did see the wobble
bad = [g["time_to_oom_s"] for x in s for g in x["gpus"] if g["time_to_oom_s"] is not None]
assert not bad, bad
PY
}

@test "time_to_oom: steady growth warns well ahead; growth in 8 GiB steps warns long before the step that no longer fits" {
	use_double
	# 1 GiB a second from 10 GiB on 80 GiB: full in 70 s
	printf 'gpu uuid=GPU-a bus=00000000:04:00.0 name=H200 total=80G used=10G util=90\n' > "$T/gpus"
	local writer
	gpu_writer 80G '10240 + 1024 * t' 4
	run timeout 20 "$HR" watch -q --interval 200 --window 3 --duration 3 --jsonl "$T/steady.jsonl"
	kill "$writer" 2>/dev/null || true
	wait "$writer" 2>/dev/null || true
	python3 -c 'import json,sys; e=[json.loads(l) for l in open(sys.argv[1]) if json.loads(l).get("event") == "time_to_oom"]; assert e and 20 <= e[0]["seconds"] <= 90, e' "$T/steady.jsonl"
	# 1 GiB, then 8 GiB more every 0.5 s: the 11th step (to 81 GiB) does not fit
	printf 'gpu uuid=GPU-a bus=00000000:04:00.0 name=H200 total=80G used=1G util=90\n' > "$T/gpus"
	gpu_writer 80G '1024 + 8192 * min(int(t / 0.5), 9)' 7
	run timeout 20 "$HR" watch -q --interval 100 --window 3 --min-free 0 --min-free-pct 0 --duration 6 --jsonl "$T/steps.jsonl"
	kill "$writer" 2>/dev/null || true
	wait "$writer" 2>/dev/null || true
	echo "$output"
	python3 - "$T/steps.jsonl" <<'PY'
import json, sys
e = [json.loads(l) for l in open(sys.argv[1]) if json.loads(l).get("event") == "time_to_oom"]
assert e, "no warning"
# after one of the first three steps, with the time to the 11th: 8 to 10 steps of 0.5 s
# away (after the first, the fit over the window has seen one step and says up to 8 s)
assert e[0]["used_bytes"] <= 25 * 2**30 and 2 <= e[0]["seconds"] <= 8, e[0]
PY
}

@test "stuck: GPU memory held, unchanged, GPU idle past the timeout" {
	use_double
	sleep 30 & local p=$!
	printf 'gpu uuid=GPU-a bus=00000000:04:00.0 name=H200 total=80G used=20G util=0\nproc gpu=0 pid=%d used=19G\n' "$p" > "$T/gpus"
	run timeout 20 "$HR" watch -q --interval 200 --stuck-timeout 1 --duration 2 --jsonl "$T/o.jsonl"
	kill "$p"
	[ "$(events "$T/o.jsonl" stuck)" -eq 1 ]
	[[ "$output" == *"unchanged and idle"* ]]
}

@test "prometheus: DCGM names and labels, headroom's own, a failed read is not an idle GPU; the page parses strictly" {
	use_double
	command -v curl || skip "curl needed"
	sleep 30 & local p=$!
	printf 'gpu uuid=GPU-a bus=00000000:04:00.0 name=H200 total=80G used=20G util=50\ngpu uuid=GPU-b bus=00000000:05:00.0 name=H200 total=80G used=20G\nproc gpu=0 pid=%d used=19G\nfail gpu=1\n' "$p" > "$T/gpus"
	local port=$((20000 + RANDOM % 20000))
	"$HR" watch -q --interval 200 --duration 4 --prometheus "127.0.0.1:$port" --jsonl "$T/o.jsonl" 2> "$T/err" &
	local w=$!
	sleep 1.5
	curl -sf "http://127.0.0.1:$port/metrics" > "$T/metrics"
	wait "$w"
	kill "$p"
	python3 "$ROOT/tests/cli/promcheck.py" "$T/metrics" > "$T/samples.json"
	python3 - "$T/samples.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
def get(name, **lab):
    return [x for x in s if x["name"] == name and all(x["labels"].get(k) == v for k, v in lab.items())]
used = get("DCGM_FI_DEV_FB_USED", gpu="0", UUID="GPU-a", pci_bus_id="00000000:04:00.0", device="nvidia0", modelName="H200")
assert used and used[0]["value"] == 20 * 1024 and used[0]["labels"]["Hostname"], used
# dcgm-exporter's six labels on every GPU series
dcgm = {"gpu", "UUID", "pci_bus_id", "device", "modelName", "Hostname"}
gpu_series = [x for x in s if "gpu" in x["labels"]]
assert len(gpu_series) >= 6 and all(dcgm <= set(x["labels"]) for x in gpu_series), gpu_series
assert all("Hostname" in x["labels"] and "hostname" not in x["labels"] for x in s), s
assert get("DCGM_FI_DEV_FB_FREE", gpu="0")[0]["value"] == 60 * 1024
assert not get("DCGM_FI_DEV_FB_USED", gpu="1"), "a failed read must not look like an idle GPU"
assert get("headroom_gpu_read_ok", gpu="1")[0]["value"] == 0
assert get("headroom_gpu_read_ok", gpu="0", device="nvidia0")[0]["value"] == 1
assert get("headroom_up")[0]["value"] == 1 and get("headroom_gpus")[0]["value"] == 2
assert get("headroom_gpu_process_memory_bytes", gpu="0")[0]["value"] == 19 * 2**30
assert get("headroom_events_total", type="read_failed")[0]["value"] == 1
assert get("headroom_job_ranks_alive")
PY
	[ "$(events "$T/o.jsonl" read_failed)" -eq 1 ]
}

@test "prometheus: a host without GPU says so with headroom_gpus 0, not with a failure" {
	use_double
	command -v curl || skip "curl needed"
	: > "$T/gpus"
	local port=$((20000 + RANDOM % 20000))
	"$HR" watch -q --interval 200 --duration 2 --prometheus "127.0.0.1:$port" 2> "$T/err" &
	local w=$!
	sleep 1
	curl -sf "http://127.0.0.1:$port/metrics" > "$T/metrics"
	wait "$w"
	grep -q 'sees no GPU: watching host memory only' "$T/err"
	python3 "$ROOT/tests/cli/promcheck.py" "$T/metrics" > /dev/null
	grep -q '^headroom_gpus{Hostname="[^"]*"} 0$' "$T/metrics"
	grep -q '^headroom_up{Hostname="[^"]*"} 1$' "$T/metrics"
	not grep -q 'source="nvml"' "$T/metrics"
	grep -q '^headroom_host_memory_total_bytes{' "$T/metrics"
}

@test "stderr to the journal (JOURNAL_STREAM names it): each line carries its syslog priority" {
	use_double
	printf 'gpu uuid=GPU-a bus=00000000:04:00.0 name=H200 total=80G used=79.5G util=10\n' > "$T/gpus"
	: > "$T/err"
	JOURNAL_STREAM="$(stat -c %d:%i "$T/err")" timeout 10 "$HR" watch -q --interval 200 --duration 0.5 2>> "$T/err"
	JOURNAL_STREAM="$(stat -c %d:%i "$T/err")" timeout 10 "$HR" watch --interval soon 2>> "$T/err" || true
	cat "$T/err"
	grep -q '^<4>headroom watch: low_free: GPU 0' "$T/err"
	grep -q '^<3>headroom: watch: --interval wants milliseconds' "$T/err"
	# not the journal's stream (another file): no prefix
	JOURNAL_STREAM="$(stat -c %d:%i "$T/gpus")" timeout 10 "$HR" watch -q --interval 200 --duration 0.5 2> "$T/plain"
	grep -q '^headroom watch: low_free' "$T/plain"
}

@test "watch -- CMD: watches the command's processes, exits with its status, prints a summary" {
	use_double
	printf 'gpu uuid=GPU-a bus=00000000:04:00.0 name=H200 total=80G used=5G util=10\n' > "$T/gpus"
	run timeout 20 "$HR" watch -q --interval 200 --jsonl "$T/o.jsonl" -- sh -c 'printf "proc gpu=0 pid=%d used=4G\n" $$ >> "$NVML_DOUBLE_SCRIPT"; sleep 1; exit 3'
	echo "$output"
	[ "$status" -eq 3 ]
	[[ "$output" == *"the command ended"* ]]
	[[ "$output" == *"peak 4.00 GiB"* ]]
	[[ "$output" == *"exited with status 3"* ]]   # its own child: how it ended is known
}

@test "old drivers: without the _v2/_v3 functions the v1 ones answer; R535's 32-byte process entries are read right" {
	use_double
	sleep 30 & local p=$!
	printf 'driver 535.104.05\ngpu uuid=GPU-a bus=00000000:04:00.0 name=H200 total=80G used=20G reserved=1G util=5\nproc gpu=0 pid=%d used=7G\n' "$p" > "$T/gpus"
	run timeout 10 "$HR" watch -q --interval 200 --duration 0.5 --jsonl "$T/r535.jsonl"
	NVML_DOUBLE_V1=1 run timeout 10 "$HR" watch -q --interval 200 --duration 0.5 --jsonl "$T/v1.jsonl"
	kill "$p"
	python3 - "$T/r535.jsonl" "$T/v1.jsonl" "$p" <<'PY'
import json, sys
r = [json.loads(l) for l in open(sys.argv[1])][-1]
v = [json.loads(l) for l in open(sys.argv[2])][-1]
pid = int(sys.argv[3])
assert r["processes"] == [p for p in r["processes"] if p["pid"] == pid] and r["processes"][0]["used_bytes"] == 7 * 2**30, r
assert r["gpus"][0]["reserved_bytes"] == 2**30, r
assert v["gpus"][0]["reserved_bytes"] is None and v["gpus"][0]["used_bytes"] == 20 * 2**30, v
assert v["processes"][0]["used_bytes"] == 7 * 2**30, v
PY
}

@test "on-event runs a hook with the event in its environment; bad options are usage errors" {
	use_double
	printf 'gpu uuid=GPU-a bus=00000000:04:00.0 name=H200 total=80G used=79.5G util=10\n' > "$T/gpus"
	export HOOK_OUT="$T/hook"
	run timeout 10 "$HR" watch -q --interval 200 --duration 1 --on-event 'echo "$HEADROOM_EVENT|$HEADROOM_EVENT_MESSAGE" >> "$HOOK_OUT"; echo "$HEADROOM_EVENT_JSON" >> "$HOOK_OUT"'
	wait_for 10 grep -q '^{' "$T/hook"   # the hook may still run after watch ends
	cat "$T/hook"
	grep -q '^low_free|GPU 0 (GPU-a) has 512.00 MiB free' "$T/hook"
	grep '^{' "$T/hook" | python3 -c 'import json,sys; e=json.loads(sys.stdin.readline()); assert e["event"] == "low_free" and e["free_bytes"] == 512 * 2**20, e'
	run "$HR" watch --interval soon
	[ "$status" -eq 2 ]
	[[ "$output" == *"--interval wants milliseconds"* ]]
	run "$HR" watch --prometheus 127.0.0.1:notaport --duration 1
	[ "$status" -eq 2 ]
	[[ "$output" == *"port must be a number"* ]]
}

@test "the strict Prometheus parser the tests use rejects what Prometheus would" {
	printf '# TYPE a gauge\na 1\n' > "$T/ok"
	run python3 "$ROOT/tests/cli/promcheck.py" "$T/ok"
	[ "$status" -eq 0 ]
	for bad in 'a 1\n' '# TYPE a gauge\na{x="1} 1\n' '# TYPE a gauge\na 1\na 2\n' '# TYPE a gauge\n# TYPE b gauge\na 1\nb 1\na{x="y"} 1\n' '# TYPE a gauge\na one\n' '# TYPE 1a gauge\n1a 1\n' '# TYPE a gauge\na{x="\\q"} 1\n'; do
		printf "$bad" > "$T/bad"
		run python3 "$ROOT/tests/cli/promcheck.py" "$T/bad"
		[ "$status" -ne 0 ]
	done
}

@test "XID errors the driver reports become events" {
	use_double
	printf 'gpu uuid=GPU-a bus=00000000:04:00.0 name=H200 total=80G used=5G util=10\ngpu uuid=GPU-b bus=00000000:05:00.0 name=H200 total=80G used=5G util=10\nxid gpu=1 code=79\n' > "$T/gpus"
	run timeout 10 "$HR" watch -q --interval 200 --duration 1 --jsonl "$T/o.jsonl"
	echo "$output"
	[[ "$output" == *"GPU 1 reported XID 79"* ]]
	[ "$(events "$T/o.jsonl" xid)" -eq 1 ]   # once, not at every sample
	python3 -c 'import json,sys; e=[json.loads(l) for l in open(sys.argv[1]) if json.loads(l).get("event") == "xid"][0]; assert e["gpu"] == 1 and e["uuid"] == "GPU-b" and e["xid"] == 79, e' "$T/o.jsonl"
}

# The local address a process listens on at PORT, from /proc/net/tcp ("127.0.0.1",
# "0.0.0.0"), waiting up to 3 s for it to listen.
listen_addr() {
	python3 - "$1" <<'PY'
import socket, struct, sys, time
port = int(sys.argv[1])
for _ in range(150):  # a slow (ASan, loaded) watch may take seconds to listen
    for line in open("/proc/net/tcp").readlines()[1:]:
        f = line.split()
        addr, p = f[1].split(":")
        if int(p, 16) == port and f[3] == "0A":
            print(socket.inet_ntoa(struct.pack("<I", int(addr, 16))))
            sys.exit(0)
    time.sleep(0.1)
sys.exit(1)
PY
}

@test "--prometheus PORT (or :PORT) serves this machine only; an address given binds there" {
	use_double
	printf 'gpu uuid=GPU-a bus=00000000:04:00.0 name=H200 total=80G used=20G util=50\n' > "$T/gpus"
	local port
	for spec in "" ":"; do
		port=$((20000 + RANDOM % 20000))
		"$HR" watch -q --interval 200 --duration 30 --prometheus "$spec$port" 2> "$T/err" &
		local w=$!
		run listen_addr "$port"
		kill -TERM "$w"
		wait "$w" || true
		[ "$output" = 127.0.0.1 ]
	done
	port=$((20000 + RANDOM % 20000))
	"$HR" watch -q --interval 200 --duration 30 --prometheus "0.0.0.0:$port" 2> "$T/err" &
	w=$!
	run listen_addr "$port"
	kill -TERM "$w"
	wait "$w" || true
	[ "$output" = 0.0.0.0 ]
}

# Issue 12: 1100 idle connections kept every scrape out. One client address gets a few of
# the connections, the rest are closed at once, and an idle one is closed after a few
# seconds. Clients are on loopback addresses only (127.0.0.2, 127.0.0.3).
@test "--prometheus: idle connections do not keep a scrape out, and an idle one is closed" {
	use_double
	command -v curl || skip "curl needed"
	printf 'gpu uuid=GPU-a bus=00000000:04:00.0 name=H200 total=80G used=20G util=50\n' > "$T/gpus"
	local port=$((20000 + RANDOM % 20000))
	"$HR" watch -q --interval 200 --duration 20 --prometheus "$port" 2> "$T/err" &
	local w=$!
	listen_addr "$port"
	python3 - "$port" "$T" <<'PY' &
import resource, socket, sys, time
port, t = int(sys.argv[1]), sys.argv[2]
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 4096), hard))
held = []
for i in range(1100):
    s = socket.socket()
    s.bind(("127.0.0.2", 0))
    s.setblocking(False)
    try:
        s.connect(("127.0.0.1", port))
    except BlockingIOError:
        pass
    held.append(s)
open(t + "/held", "w").write("%d\n" % len(held))
time.sleep(12)
PY
	local flood=$!
	for i in $(seq 50); do [ -s "$T/held" ] && break; sleep 0.1; done
	[ -s "$T/held" ]
	# a scrape now, while the idle connections are held
	curl -sf -m 3 "http://127.0.0.1:$port/metrics" > "$T/metrics"
	grep -q '^headroom_up' "$T/metrics"
	# an idle connection of another client is closed by the server, not held forever
	run python3 - "$port" <<'PY'
import socket, sys, time
s = socket.socket()
s.bind(("127.0.0.3", 0))
s.connect(("127.0.0.1", int(sys.argv[1])))
s.settimeout(15)
t0 = time.time()
print("closed" if s.recv(1) == b"" else "data", round(time.time() - t0))
PY
	kill "$flood" "$w" 2>/dev/null || true
	wait "$w" || true
	[[ "$output" == "closed "[4-7] ]]
}

# A process that sleeps whose command line names this test's directory (teardown ends
# it, whoever runs it and wherever it was reparented), as user $1 (0: root) with the
# environment after it.
sleeper() {
	local u=$1
	shift
	if [ "$u" -eq 0 ]; then exec env "$@" perl -e 'sleep 60' "$T"
	else exec setpriv --reuid="$u" --regid="$u" --clear-groups env "$@" perl -e 'sleep 60' "$T"; fi
}

# An orphan (its parent ended: init's child) sleeping as sleeper does; prints its pid.
orphan() {
	local u=$1
	shift
	if [ "$u" -eq 0 ]; then sh -c 'env "$@" perl -e "sleep 60" "$0" >/dev/null 2>&1 & echo $!' "$T" "$@"
	else setpriv --reuid="$u" --regid="$u" --clear-groups sh -c 'env "$@" perl -e "sleep 60" "$0" >/dev/null 2>&1 & echo $!' "$T" "$@"; fi
}

# Issue 29: as root (as the systemd unit runs it), another user started a process with
# the victim's run id (readable by anyone in /metrics) and killed it: the victim's ranks
# were stopped. An orphan with RANK=0 joined root's orphaned ranks as job parent:1 the
# same way. A job is one user's, under one origin, never grouped by init.
@test "partial death: another user's rank with the victim's run id, or an orphan beside orphans, stops none of theirs" {
	use_double
	[ "$(id -u)" -eq 0 ] || skip "needs root and two other users"
	sleeper 4242 TORCHELASTIC_RUN_ID=victimjob RANK=0 & local v0=$!
	sleeper 4242 TORCHELASTIC_RUN_ID=victimjob RANK=1 & local v1=$!
	# its death read from its zombie: a death, which must stop none of the victim's
	launch <<-EOF
		setpriv --reuid=4343 --regid=4343 --clear-groups env TORCHELASTIC_RUN_ID=victimjob RANK=7 perl -e 'sleep 60' $T
	EOF
	local m r0 r1 mo
	m=$(cat "$T/pids")
	r0=$(orphan 0 RANK=0 WORLD_SIZE=2)
	r1=$(orphan 0 RANK=1 WORLD_SIZE=2)
	mo=$(orphan 4343 RANK=0)
	for p in $v0 $v1 $m $r0 $r1 $mo; do wait_exec "$p" perl; done
	{
		printf 'gpu uuid=GPU-a bus=00000000:04:00.0 name=H200 total=80G used=30G util=90\n'
		for p in $v0 $v1 $m $r0 $r1 $mo; do printf 'proc gpu=0 pid=%d used=1G\n' "$p"; done
	} > "$T/gpus"
	"$HR" watch -q --interval 200 --duration 30 --jsonl "$T/o.jsonl" --stop-job-on-partial-death --stop-delay 0 \
		--grace 1 2> "$T/err" &
	local w=$!
	wait_for 20 sample_with "$T/o.jsonl" 6
	kill -9 "$m" "$mo"
	wait_for 20 events_at_least "$T/o.jsonl" process_exit 2
	python3 -c 'import json,sys; e=[e for e in map(json.loads, open(sys.argv[1])) if e.get("event") == "process_exit" and e["pid"] == int(sys.argv[2])]; assert e and e[0]["end"] == "failed", e' "$T/o.jsonl" "$m"
	# a stop (--stop-delay 0) comes with the death itself; a sample after it shows it done
	local n; n=$(wc -l < "$T/o.jsonl")
	wait_for 10 eval '[ "$(wc -l < "$T/o.jsonl")" -gt "$((n + 1))" ]'
	kill -TERM "$w"; wait "$w" || true
	cat "$T/err"
	for p in $v0 $v1 $r0 $r1; do running "$p"; done
	[ "$(events "$T/o.jsonl" job_stopped)" -eq 0 ]
	[ "$(events "$T/o.jsonl" partial_death)" -eq 0 ]
	python3 - "$T/o.jsonl" "$v0" "$m" "$r0" "$r1" "$mo" <<'PY'
import json, sys
v0, m, r0, r1, mo = (int(x) for x in sys.argv[2:])
procs = {p["pid"]: p for l in open(sys.argv[1]) for p in json.loads(l).get("processes", [])}
assert procs[v0]["job"] == "torchelastic:victimjob" and procs[v0]["uid"] == 4242, procs[v0]
assert procs[m]["job"] == "torchelastic:victimjob" and procs[m]["uid"] == 4343, procs[m]
for p in (r0, r1, mo):  # an orphan's parent is init: a job of its own
    assert procs[p]["job"] == "pid:%d" % p, procs[p]
PY
}

# Issue 29: keys were cut to 63 bytes, so two jobs with a long rendezvous address and
# ports 29500 and 29501 were one job of 4 ranks, and one rank's death stopped both.
@test "partial death: two jobs with a long rendezvous address stay two; only the one that lost a rank is stopped" {
	use_double
	local addr=rendezvous-host-with-a-long-name-0123456789.cluster.example.internal
	[ "${#addr}" -gt 63 ]
	launch <<-EOF
		env WORLD_SIZE=2 MASTER_ADDR=$addr MASTER_PORT=29500 RANK=0 perl -e 'sleep 60' $T
		env WORLD_SIZE=2 MASTER_ADDR=$addr MASTER_PORT=29500 RANK=1 perl -e 'sleep 60' $T
		env WORLD_SIZE=2 MASTER_ADDR=$addr MASTER_PORT=29501 RANK=0 perl -e 'sleep 60' $T
		env WORLD_SIZE=2 MASTER_ADDR=$addr MASTER_PORT=29501 RANK=1 perl -e 'sleep 60' $T
	EOF
	local a0 a1 b0 b1
	read -r a0 a1 b0 b1 <<< "$(tr '\n' ' ' < "$T/pids")"
	for p in $a0 $a1 $b0 $b1; do wait_exec "$p" perl; done
	{
		printf 'gpu uuid=GPU-a bus=00000000:04:00.0 name=H200 total=80G used=30G util=90\n'
		for p in $a0 $a1 $b0 $b1; do printf 'proc gpu=0 pid=%d used=1G\n' "$p"; done
	} > "$T/gpus"
	"$HR" watch -q --interval 200 --duration 30 --jsonl "$T/o.jsonl" --stop-job-on-partial-death --stop-delay 0 \
		--grace 1 2> "$T/err" &
	local w=$!
	wait_for 20 sample_with "$T/o.jsonl" 4
	kill -9 "$a0"
	wait_for 20 events_at_least "$T/o.jsonl" job_stopped 1
	wait_for 10 eval '! running "$a1"'
	kill -TERM "$w"; wait "$w" || true
	cat "$T/err"
	running "$b0"
	running "$b1"
	python3 - "$T/o.jsonl" "$addr" <<'PY'
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1])]
st = [e for e in ev if e.get("event") == "job_stopped"]
assert len(st) == 1 and st[0]["job"] == "dist:%s:29500" % sys.argv[2] and st[0]["ranks_signalled"] == 1, st
PY
}

# Issue 29: a run id with terminal controls and invalid UTF-8, another user's: Prometheus
# marked the target down (invalid UTF-8), the JSON sample dropped the process, and the
# live view set root's terminal title and cleared its screen.
@test "a hostile run id: /metrics stays valid UTF-8, JSON keeps the process, the terminal shows the controls" {
	use_double
	command -v curl || skip "curl needed"
	command -v script || skip "script (util-linux) needed for a terminal"
	[ "$(id -u)" -eq 0 ] || skip "needs root and another user"
	local id=$'x\e]0;PWNED\a\e[2J\xff\xc3'
	TORCHELASTIC_RUN_ID="$id" launch <<-EOF
		setpriv --reuid=4242 --regid=4242 --clear-groups env RANK=0 perl -e 'sleep 60' $T
		setpriv --reuid=4242 --regid=4242 --clear-groups env RANK=1 perl -e 'sleep 60' $T
	EOF
	local p0 p1
	read -r p0 p1 <<< "$(tr '\n' ' ' < "$T/pids")"
	wait_exec "$p0" perl
	wait_exec "$p1" perl
	printf 'gpu uuid=GPU-a bus=00000000:04:00.0 name=H200 total=80G used=30G util=90\nproc gpu=0 pid=%d used=1G\nproc gpu=0 pid=%d used=1G\n' "$p0" "$p1" > "$T/gpus"
	local port=$((20000 + RANDOM % 20000))
	"$HR" watch -q --interval 200 --duration 30 --prometheus "127.0.0.1:$port" --jsonl "$T/o.jsonl" 2> "$T/err" &
	local w=$!
	wait_for 20 sample_with "$T/o.jsonl" 2
	curl -sf -m 5 "http://127.0.0.1:$port/metrics" > "$T/metrics"
	kill -9 "$p1"
	wait_for 20 events_at_least "$T/o.jsonl" partial_death 1
	kill -TERM "$w"; wait "$w" || true
	python3 "$ROOT/tests/cli/promcheck.py" "$T/metrics" > "$T/samples.json"
	python3 - "$T/samples.json" "$T/o.jsonl" "$p0" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
jobs = [x["labels"]["job"] for x in s if x["name"] == "headroom_job_ranks_alive"]
assert "torchelastic:x\x1b]0;PWNED\x07\x1b[2J\\\\xFF\\\\xC3" in jobs, jobs  # the label's escaped backslash
lines = [json.loads(l) for l in open(sys.argv[2])]
procs = [p for l in lines for p in l.get("processes", []) if p["pid"] == int(sys.argv[3])]
assert procs and procs[0]["job"].startswith("torchelastic:x\x1b]0;PWNED"), procs[:1]
assert [e for e in lines if e.get("event") == "partial_death"][0]["uid"] == 4242
PY
	# stderr (a terminal, or the journal): the controls shown, not sent
	not grep -q $'\e' "$T/err"
	grep -q 'torchelastic:x\\x1B\]0;PWNED\\x07\\x1B\[2J\\xFF\\xC3' "$T/err"
	# the live view on a terminal
	printf 'gpu uuid=GPU-a bus=00000000:04:00.0 name=H200 total=80G used=30G util=90\nproc gpu=0 pid=%d used=1G\n' "$p0" > "$T/gpus"
	TERM=xterm script -qec "'$HR' watch --interval 200 --duration 1" "$T/typescript" > /dev/null
	grep -q 'torchelastic:x\\x1B\]0;PWNED' "$T/typescript"
	not grep -q $'\e\\]0;PWNED' "$T/typescript"
	not grep -q $'\e\\[2J' "$T/typescript"
}

# Issue 29: 8 connections each sending a header line every few seconds kept every scrape
# out (one address's share of the slots, every local user's being 127.0.0.1's), and the
# idle timeout never fired. A request has a whole deadline; a few slow clients leave room.
@test "--prometheus: slow clients neither keep a scrape out nor hold a connection past the request deadline" {
	use_double
	command -v curl || skip "curl needed"
	printf 'gpu uuid=GPU-a bus=00000000:04:00.0 name=H200 total=80G used=20G util=50\n' > "$T/gpus"
	local port=$((20000 + RANDOM % 20000))
	"$HR" watch -q --interval 200 --duration 60 --prometheus "$port" 2> "$T/err" &
	local w=$!
	listen_addr "$port"
	python3 - "$port" "$T" <<'PY' &
import socket, sys, time
port, t = int(sys.argv[1]), sys.argv[2]
held = []
for i in range(8):
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(b"GET /metrics HTTP/1.1\r\n")
    held.append(s)
open(t + "/held.tmp", "w").write("8\n")
import os; os.rename(t + "/held.tmp", t + "/held")
t0 = time.time()
while held and time.time() - t0 < 40:
    for s in list(held):
        try:
            s.sendall(b"X-Slow: 1\r\n")  # well inside the idle timeout
        except OSError:
            held.remove(s)
            open(t + "/cut", "a").write("%.1f\n" % (time.time() - t0))
    time.sleep(1)
PY
	local slow=$!
	wait_for 20 test -s "$T/held"
	# a scrape from the same address, while they are held
	curl -sf -m 5 "http://127.0.0.1:$port/metrics" > "$T/metrics"
	grep -q '^headroom_up' "$T/metrics"
	# every slow one is cut once its request's deadline passes, however it keeps coming
	wait_for 30 eval '[ "$(wc -l < "$T/cut" 2>/dev/null || echo 0)" -ge 8 ]'
	kill "$slow" 2>/dev/null || true
	cat "$T/cut"
	python3 -c 'import sys; c=[float(x) for x in open(sys.argv[1])]; assert len(c) == 8 and max(c) < 25, c' "$T/cut"
	# a flood from the scraper's address, each connection held and opened again when cut:
	# every scrape still gets in
	python3 - "$port" "$T" <<'PY' &
import socket, sys, time
port, t = int(sys.argv[1]), sys.argv[2]
held, t0, ready = [], time.time(), False
while time.time() - t0 < 40:
    while len(held) < 100:
        try:
            s = socket.create_connection(("127.0.0.1", port), timeout=1)
            s.sendall(b"GET /metrics HTTP/1.1\r\n")
            held.append(s)
        except OSError:
            break
    if not ready:
        open(t + "/flood", "w").write("%d\n" % len(held))
        ready = True
    for s in list(held):
        try:
            s.sendall(b"X-Slow: 1\r\n")
        except OSError:
            held.remove(s)
    time.sleep(0.2)
PY
	local flood=$!
	wait_for 20 test -s "$T/flood"
	local ok=0
	for i in 1 2 3 4 5 6 7 8; do
		curl -sf -m 5 "http://127.0.0.1:$port/metrics" | grep -q '^headroom_up' && ok=$((ok + 1))
	done
	kill "$flood" "$w" 2>/dev/null || true
	wait "$w" || true
	echo "scrapes in: $ok of 8"
	[ "$ok" -eq 8 ]
}

# Issue 43: libmicrohttpd's thread and the request deadline's started before watch
# blocked its signals, so SIGTERM (every `systemctl stop`) or SIGINT went to one of them
# and its default action ended watch: no summary, its command left running. Every
# thread starts with them blocked now, and the main thread reads them.
@test "--prometheus: SIGTERM or SIGINT ends the command, then watch with its summary; no thread takes them" {
	use_double
	command -v curl || skip "curl needed"
	printf 'gpu uuid=GPU-a bus=00000000:04:00.0 name=H200 total=80G used=20G util=50\n' > "$T/gpus"
	local sig port w child st
	for sig in TERM INT; do
		port=$((20000 + RANDOM % 20000))
		# a shell's background job ignores SIGINT: perl gives it back its default action
		perl -e '$SIG{INT} = "DEFAULT"; exec @ARGV' "$HR" watch -q --interval 200 --prometheus "127.0.0.1:$port" \
			-- perl -e 'sleep 1000' "$T" 2> "$T/err" &
		w=$!
		wait_for 20 curl -sf -m 2 -o /dev/null "http://127.0.0.1:$port/metrics"
		child=$(pgrep -P "$w")
		[ -n "$child" ]
		# every thread (main, libmicrohttpd's, the deadline's) has SIGINT, SIGTERM and SIGCHLD blocked
		python3 - "$w" <<'PY'
import glob, signal, sys
want = sum(1 << (s - 1) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGCHLD))
blk = {t: int([l.split()[1] for l in open(t) if l.startswith("SigBlk:")][0], 16)
       for t in glob.glob("/proc/%s/task/*/status" % sys.argv[1])}
print({t: hex(b) for t, b in blk.items()})
assert len(blk) >= 3 and all(b & want == want for b in blk.values()), blk
PY
		kill -"$sig" "$w"
		st=0
		wait "$w" || st=$?
		cat "$T/err"
		[ "$st" -eq $((128 + $(kill -l "$sig"))) ]   # the command's status: it was signalled
		grep -q '^headroom watch: the command ended' "$T/err"
		not kill -0 "$child" 2>/dev/null   # ended and reaped, not orphaned
	done
}

# Issue 29: the JSON-lines file (and any other descriptor watch opens) leaked into every
# --on-event hook.
@test "--on-event: the hook inherits none of watch's own descriptors" {
	use_double
	sleep 30 & local p=$!
	printf 'gpu uuid=GPU-a bus=00000000:04:00.0 name=H200 total=80G used=79.5G util=10\nproc gpu=0 pid=%d used=1G\n' "$p" > "$T/gpus"
	export HOOK_OUT="$T/hook"
	local port=$((20000 + RANDOM % 20000))
	run timeout 20 "$HR" watch -q --interval 200 --duration 1 --jsonl "$T/o.jsonl" --prometheus "$port" \
		--on-event 'for f in /proc/$$/fd/*; do readlink "$f"; done >> "$HOOK_OUT.tmp"; mv "$HOOK_OUT.tmp" "$HOOK_OUT"'
	kill "$p"
	wait_for 10 test -s "$T/hook"
	cat "$T/hook"
	not grep -q "o.jsonl" "$T/hook"
	not grep -qE 'pidfd|signalfd|socket:' "$T/hook"
}
