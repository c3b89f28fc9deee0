# Shared setup for the command-line tests.
bats_require_minimum_version 1.5.0
ROOT="$(cd "$BATS_TEST_DIRNAME/../.." && pwd)"
HR="${HEADROOM_BIN:-$ROOT/headroom}"
case "$HR" in /*) ;; *) HR="$ROOT/$HR" ;; esac
MEMHOG="$ROOT/tools/memhog"

setup() {
	T="$(mktemp -d /tmp/headroom-bats.XXXXXX)"
	export XDG_STATE_HOME="$T/state"
	unset HEADROOM_SOCK HEADROOM_LAUNCHER MAX_JOBS
	# no settings of this machine's (config files, HEADROOM_* variables) in the tests
	export XDG_CONFIG_HOME="$T/config" HEADROOM_SYSTEM_CONFIG="$T/etc/headroom.conf"
	unset HEADROOM_CONFIG $(env | sed -n 's/^\(HEADROOM_[A-Z_]*\)=.*/\1/p' |
		grep -vxE 'HEADROOM_(BIN|DEBUG|SYSTEM_CONFIG)')
}

teardown() {
	# Nothing of a test may outlive it; a leftover here is a failure of the test itself.
	pkill -KILL -f "$T" 2>/dev/null || true
	rm -rf "$T"
}

# A ninja build of N jobs that each hold SIZE for MS milliseconds, through the launcher.
hold_build() {
	local dir=$1 n=$2 size=$3 ms=$4
	mkdir -p "$dir"
	{
		printf 'rule hold\n  command = $${HEADROOM_LAUNCHER} %s --hold %s --ms %s && touch $out\n\n' "$MEMHOG" "$size" "$ms"
		for i in $(seq 1 "$n"); do printf 'build out%d: hold\n' "$i"; done
	} > "$dir/build.ninja"
}

# Run CMD... until it succeeds, for up to SECONDS: what a test waits for instead of a
# fixed time; the last try's status.
wait_for() {
	local limit=$1 i
	shift
	for ((i = 0; i < limit * 20; i++)); do
		"$@" && return 0
		sleep 0.05
	done
	"$@"
}

# CMD... must fail: a line `! CMD` inside a test is never checked (bats checks `set -e`,
# which a negated command does not trip), so tests say `not CMD`.
not() {
	! "$@"
}

# Whether no process's command line matches PATTERN.
none_running() {
	[ -z "$(pgrep -f "$1")" ]
}

# Processes whose command line mentions this test's directory.
left_over() {
	pgrep -f "$T" | grep -v "^$$\$" || true
}

# Make a memory cgroup NAME limited to BYTES under the one this test runs in; print its
# directory. Fails (status 1) where cgroups cannot be written (not root, read-only).
make_cgroup() {
	local name=$1 limit=$2 path base dir
	[ "$(id -u)" -eq 0 ] || return 1
	if grep -q ':memory:' /proc/self/cgroup; then
		path=$(grep ':memory:' /proc/self/cgroup | head -1 | cut -d: -f3)
		base=/sys/fs/cgroup/memory$path
		[ -d "$base" ] || base=/sys/fs/cgroup/memory
		dir=$base/$name
		mkdir "$dir" 2>/dev/null || return 1
		echo "$limit" > "$dir/memory.limit_in_bytes" || return 1
		echo "$limit" > "$dir/memory.memsw.limit_in_bytes" 2>/dev/null || true
	else
		path=$(grep '^0::' /proc/self/cgroup | cut -d: -f3)
		base=/sys/fs/cgroup$path
		if ! grep -qw memory "$base/cgroup.subtree_control" 2>/dev/null; then
			# cgroup v2 allows no processes in a group that gives its children controllers:
			# move this group's processes into a leaf first.
			mkdir -p "$base/hr-leaf" 2>/dev/null || return 1
			for p in $(cat "$base/cgroup.procs"); do echo "$p" > "$base/hr-leaf/cgroup.procs" 2>/dev/null; done
			echo +memory > "$base/cgroup.subtree_control" 2>/dev/null || return 1
		fi
		dir=$base/$name
		mkdir "$dir" 2>/dev/null || return 1
		echo "$limit" > "$dir/memory.max" || return 1
		echo 0 > "$dir/memory.swap.max" 2>/dev/null || true
	fi
	echo "$dir"
}

# Run a command inside cgroup DIR.
in_cgroup() {
	local dir=$1
	shift
	sh -c 'echo $$ > "$0/cgroup.procs" && exec "$@"' "$dir" "$@"
}

remove_cgroup() {
	local dir=$1
	[ -d "$dir" ] || return 0
	for p in $(cat "$dir/cgroup.procs" 2>/dev/null); do kill -9 "$p" 2>/dev/null; done
	for d in "$dir"/*/; do [ -d "$d" ] && rmdir "$d" 2>/dev/null; done
	for i in $(seq 1 50); do rmdir "$dir" 2>/dev/null && return 0; sleep 0.1; done
}

oom_kills() {
	awk '$1 == "oom_kill" { print $2 }' /proc/vmstat
}

# OOM kills counted in cgroup DIR (v2: itself and below; v1: itself only). Unlike the
# machine's counter, nothing running beside the test changes it.
cgroup_oom_kills() {
	local f=$1/memory.events
	[ -e "$f" ] || f=$1/memory.oom_control
	awk '$1 == "oom_kill" { print $2 }' "$f"
}
