# Shared setup for the command-line tests.
bats_require_minimum_version 1.5.0
ROOT="$(cd "$BATS_TEST_DIRNAME/../.." && pwd)"
HR="${HEADROOM_BIN:-$ROOT/headroom}"
MEMHOG="$ROOT/tools/memhog"

setup() {
	T="$(mktemp -d /tmp/headroom-bats.XXXXXX)"
	export XDG_STATE_HOME="$T/state"
	unset HEADROOM_SOCK HEADROOM_LAUNCHER MAX_JOBS
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

# Processes whose command line mentions this test's directory.
left_over() {
	pgrep -f "$T" | grep -v "^$$\$" || true
}
