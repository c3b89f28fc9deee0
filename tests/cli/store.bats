#!/usr/bin/env bats
# The profile store under sharing: builds running at once on one store, and a store
# another process holds locked.

load helper

# runs of the profile KEY of KIND in store DB ("" when it has none).
runs_of() {
	"$HR" profiles --db "$1" --json | python3 -c '
import json, sys
kind, key = sys.argv[1], sys.argv[2]
print(next((p["runs"] for p in json.load(sys.stdin) if p["kind"] == kind and p["key"] == key), ""))
' "$2" "$3"
}

# Until another process holds DB's write lock (a write cannot begin at once).
wait_locked() {
	for i in $(seq 1 100); do
		sqlite3 -cmd '.timeout 0' "$1" 'BEGIN IMMEDIATE; ROLLBACK;' >/dev/null 2>&1 || return 0
		sleep 0.1
	done
	return 1
}

@test "two builds at once on one store: every job of the class is counted" {
	command -v ninja || skip "ninja not installed"
	hold_build "$T/a" 20 8M 300
	hold_build "$T/b" 20 8M 300
	(cd "$T/a" && "$HR" run -q --db "$T/p.db" -j 4 -- ninja -j4) &
	a=$!
	(cd "$T/b" && "$HR" run -q --db "$T/p.db" -j 4 -- ninja -j4) &
	b=$!
	wait "$a"
	wait "$b"
	[ "$(runs_of "$T/p.db" class memhog)" = 40 ]
	[ "$(runs_of "$T/p.db" signature "memhog :: ")" = 40 ]
}

@test "a build killed with SIGKILL keeps what its finished jobs taught" {
	command -v ninja || skip "ninja not installed"
	hold_build "$T/a" 4 8M 1500
	(cd "$T/a" && exec setsid "$HR" run -q --db "$T/p.db" -j 1 -- ninja -j1) &
	pid=$!
	for i in $(seq 1 100); do [ -e "$T/a/out1" ] && break; sleep 0.1; done
	[ -e "$T/a/out1" ]
	# the first job's end saved (a tick and the save interval after it)
	for i in $(seq 1 200); do [ "$(runs_of "$T/p.db" class memhog 2>/dev/null)" -ge 1 ] 2>/dev/null && break; sleep 0.1; done
	[ ! -e "$T/a/out4" ]
	kill -KILL -- "-$pid"
	wait "$pid" || true
	[ "$(runs_of "$T/p.db" class memhog)" -ge 1 ]
	# the job running then (in a process group of ninja's making) ends by itself
	for i in $(seq 1 40); do
		busy=0
		for c in /proc/[0-9]*/cwd; do [ "$(readlink "$c" 2>/dev/null)" = "$T/a" ] && busy=1; done
		[ "$busy" = 0 ] && break
		sleep 0.1
	done
	[ "$busy" = 0 ]
}

@test "a store locked by another process does not stall the build" {
	command -v ninja || skip "ninja not installed"
	command -v sqlite3 || skip "sqlite3 not installed"
	hold_build "$T/a" 2 8M 100
	(cd "$T/a" && "$HR" run -q --db "$T/p.db" -j 2 -- ninja -j2)
	[ "$(runs_of "$T/p.db" class memhog)" = 2 ]
	# The build below must look its jobs up while the lock is held.
	mkdir -p "$T/b"
	{
		printf 'rule hold\n  command = $${HEADROOM_LAUNCHER} %s --hold 8M --ms 100 && date +%%s.%%N >> %s/ends && touch $out\n\n' "$MEMHOG" "$T"
		for i in 1 2 3 4; do printf 'build out%d: hold\n' "$i"; done
	} > "$T/b/build.ninja"
	{ echo 'BEGIN EXCLUSIVE;'; echo 'UPDATE profiles SET runs = runs;'; sleep 10; echo 'COMMIT;'; } |
		sqlite3 "$T/p.db" &
	wait_locked "$T/p.db"
	t0=$(date +%s.%N)
	run --separate-stderr "$HR" run --db "$T/p.db" -j 2 -- ninja -C "$T/b" -j2
	t1=$(date +%s.%N)
	[ "$status" -eq 0 ]
	[ "$(wc -l < "$T/ends")" -eq 4 ]
	# Jobs were admitted at once, not after the lock went (nine seconds later)...
	python3 -c 'import sys; assert max(map(float, open(sys.argv[1]))) - float(sys.argv[2]) < 4' "$T/ends" "$t0"
	# ...and headroom did not wait for it either: it said it could not save.
	python3 -c 'import sys; assert float(sys.argv[2]) - float(sys.argv[1]) < 8' "$t0" "$t1"
	[[ "$stderr" == *"locked"* ]]
	wait
	# What the first build learned is intact.
	[ "$(runs_of "$T/p.db" class memhog)" = 2 ]
}

@test "a store in the old journal mode, locked, costs the build its learning, not the build" {
	command -v sqlite3 || skip "sqlite3 not installed"
	# What an older headroom left: the rollback journal, which a locked file cannot leave.
	sqlite3 "$T/p.db" 'PRAGMA journal_mode = DELETE; CREATE TABLE profiles (kind INTEGER);'
	{ echo 'BEGIN EXCLUSIVE;'; echo 'INSERT INTO profiles VALUES (0);'; sleep 8; echo 'COMMIT;'; } |
		sqlite3 "$T/p.db" &
	wait_locked "$T/p.db"
	run --separate-stderr "$HR" run --db "$T/p.db" -- touch "$T/ran"
	[ "$status" -eq 0 ]
	[ -e "$T/ran" ]
	[[ "$stderr" == *"locked by another process; this build runs without learned profiles"* ]]
	wait
}

# A store of one profile at DB, made by importing it.
one_profile_store() {
	python3 -c '
import json
c = [1 << 20] * 63 + [2 << 20]
print(json.dumps({"format": "headroom-profiles/1", "profiles": [{"kind": "class", "key": "memhog",
    "runs": 1, "duration_ms": 1000, "peak_bytes": 2 << 20, "updated_s": 1700000000, "curve_bytes": c}]}))
' > "$T/one.json"
	"$HR" profiles --db "$1" import "$T/one.json" > /dev/null
}

as_user() {
	setpriv --reuid=4242 --regid=4242 --clear-groups "$@"
}

@test "a store another user owns is read, not written: profiles list works, and a build runs and says what it could not save" {
	[ "$(id -u)" -eq 0 ] || skip "needs root to act as another user"
	command -v ninja || skip "ninja not installed"
	chmod 755 "$T"
	mkdir -m 755 "$T/st"
	one_profile_store "$T/st/p.db"
	cp "$T/st/p.db" "$T/p.orig"
	run as_user "$HR" profiles --db "$T/st/p.db" --json
	[ "$status" -eq 0 ]
	[ "$(echo "$output" | python3 -c 'import json, sys; print([p["key"] for p in json.load(sys.stdin)])')" = "['memhog']" ]
	hold_build "$T/a" 1 8M 100
	chmod -R a+rwX "$T/a"
	cd "$T/a"
	run --separate-stderr as_user "$HR" run --db "$T/st/p.db" -- ninja
	[ "$status" -eq 0 ]
	[ -e "$T/a/out1" ]
	[[ "$stderr" == *"could not write the profile store ("*"); what this build learned is lost"* ]]
	cmp "$T/st/p.db" "$T/p.orig"
	# and where no store can be made at all (a directory it may not write)
	run --separate-stderr as_user "$HR" run --db "$T/st/sub/new.db" -- true
	[ "$status" -eq 0 ]
	[ ! -e "$T/st/sub" ]
}

@test "a full disk costs the build its learning, not the build" {
	[ "$(id -u)" -eq 0 ] || skip "needs root for a tmpfs in a mount namespace"
	command -v ninja || skip "ninja not installed"
	unshare --mount true 2>/dev/null || skip "no mount namespaces here"
	hold_build "$T/a" 1 8M 100
	mkdir "$T/full"
	cat > "$T/full.sh" <<'SH'
mount -t tmpfs -o size=64k tmpfs "$T/full" || exit 99
dd if=/dev/zero of="$T/full/fill" bs=4k 2>/dev/null
cd "$T/a" && "$HR" run --db "$T/full/p.db" -- ninja
SH
	export T HR
	run --separate-stderr unshare --mount bash "$T/full.sh"
	[ "$status" -eq 0 ]
	[ -e "$T/a/out1" ]
	[[ "$stderr" == *"could not write the profile store (No space left on device)"* ]]
}
