#!/usr/bin/env bats
# Settings (files, HEADROOM_* variables, flags), headroom config, and the messages of
# every command: one prefix, "did you mean", JSON errors.

load helper

# The usual teardown, and the users a test made (listed in $T/users) removed.
teardown() {
	local u
	for u in $(cat "$T/users" 2>/dev/null); do userdel "$u" 2>/dev/null || true; done
	pkill -KILL -f "$T" 2>/dev/null || true
	rm -rf "$T"
}

js() { # the value at a path (.a.b) of the JSON on stdin; null when absent
	python3 -c 'import json, sys
v = json.load(sys.stdin)
for k in sys.argv[1].split(".")[1:]:
    v = v.get(k) if isinstance(v, dict) else None
print("null" if v is None else v)' "$1" || echo "(not JSON)"
}

settings() { # $1: file, rest: lines
	local f=$1
	shift
	mkdir -p "$(dirname "$f")"
	printf '%s\n' "$@" > "$f"
}

@test "config: flags over HEADROOM_* variables over the user's file over /etc; config says where each came from" {
	settings "$HEADROOM_SYSTEM_CONFIG" "budget = 9G" "margin = 7%" "reserve = 3G"
	settings "$XDG_CONFIG_HOME/headroom/config" "# mine" "budget = 2G" "reserve = 1G"
	run env HEADROOM_RESERVE=512M "$HR" config
	[ "$status" -eq 0 ]
	grep -E "^budget +2G +$XDG_CONFIG_HOME/headroom/config:2 " <<<"$output"
	grep -E "^reserve +512M +HEADROOM_RESERVE " <<<"$output"
	grep -E "^margin +7% +$HEADROOM_SYSTEM_CONFIG:2 " <<<"$output"
	# a key nothing sets shows the default in force, and how it is found
	grep -E "^jobs +$(nproc) +\(the command's default\) +--jobs run \(the build's own -jN, else the CPUs\)" <<<"$output"
	grep -E "^interval +1000 +\(the command's default\) +--interval watch$" <<<"$output"
	grep -E "^db +$XDG_STATE_HOME/headroom/profiles.db +" <<<"$output"
	not grep -E "^[a-z_]+ +- " <<<"$output"
	run env HEADROOM_RESERVE=512M "$HR" config --json
	[ "$(js .settings.budget.source <<<"$output")" = "$XDG_CONFIG_HOME/headroom/config:2" ]
	[ "$(js .settings.reserve.value <<<"$output")" = 512M ]
	[ "$(js .settings.reserve.kind <<<"$output")" = environment ]
	[ "$(js .settings.jobs.value <<<"$output")" = "$(nproc)" ]
	[ "$(js .settings.jobs.kind <<<"$output")" = default ]
	[ "$(js .settings.jobs.source <<<"$output")" = null ]
	[ "$(js .settings.tree.value <<<"$output")" = false ]

	# the build sees what is in force: the report's budget
	run env HEADROOM_RESERVE=512M "$HR" run --no-db --report "$T/r1.json" -- true
	[ "$status" -eq 0 ]
	[ "$(js .budget_bytes <"$T/r1.json")" -eq $((2 << 30)) ]
	run env HEADROOM_BUDGET=3G "$HR" run --no-db --report "$T/r2.json" -- true
	[ "$(js .budget_bytes <"$T/r2.json")" -eq $((3 << 30)) ]
	run env HEADROOM_BUDGET=3G "$HR" run --no-db --budget 1G --report "$T/r3.json" -- true
	[ "$(js .budget_bytes <"$T/r3.json")" -eq $((1 << 30)) ]
	run env HEADROOM_BUDGET=3G "$HR" run --no-db -b 768M --report "$T/r4.json" -- true
	[ "$(js .budget_bytes <"$T/r4.json")" -eq $((768 << 20)) ]
}

@test "config: a bad value says where it came from; a flag that overrides it is not failed by it" {
	run env HEADROOM_BUDGET=lots "$HR" run --no-db -- true
	[ "$status" -eq 2 ]
	[[ "$output" == *"headroom: run: --budget wants a size"*"not 'lots' (--budget came from HEADROOM_BUDGET)"* ]]
	run env HEADROOM_BUDGET=lots "$HR" run --no-db --budget 1G -- true
	[ "$status" -eq 0 ]
	settings "$XDG_CONFIG_HOME/headroom/config" "margin = much"
	run "$HR" plan --gpu-memory 80G "$T/none.json"
	[ "$status" -eq 2 ]
	[[ "$output" == *"not 'much' (--margin came from $XDG_CONFIG_HOME/headroom/config:1)"* ]]
}

# Issue 45: a setting's bare number was bytes; it is refused as the flag's is, saying where it came from.
@test "config: a size setting without its unit is refused with the fix and where it came from" {
	settings "$XDG_CONFIG_HOME/headroom/config" "gpu_memory = 80"
	run "$HR" plan "$T/none.json"
	[ "$status" -eq 2 ]
	[ "$output" = "headroom: plan: --gpu-memory: '80' has no unit: 80 what? 80G is 80 GiB, 80GB is 80 GB (--gpu-memory came from $XDG_CONFIG_HOME/headroom/config:1)" ]
	run env HEADROOM_BUDGET=24 "$HR" run --no-db -- true
	[ "$status" -eq 2 ]
	[[ "$output" == *"--budget: '24' has no unit: 24 what? 24G is 24 GiB"*"(--budget came from HEADROOM_BUDGET)"* ]]
}

@test "config: an unknown key names the nearest one; a line that is no setting, a directory: said with the file" {
	settings "$XDG_CONFIG_HOME/headroom/config" "budgt = 3G"
	run "$HR" run --no-db -- true
	[ "$status" -eq 2 ]
	[[ "$output" == *"$XDG_CONFIG_HOME/headroom/config:1: unknown setting 'budgt' (did you mean budget?)"* ]]
	settings "$XDG_CONFIG_HOME/headroom/config" "budget = 3G" "what is this"
	run "$HR" config
	[ "$status" -eq 2 ]
	[[ "$output" == *"config:2: not a setting"* ]]
	rm -rf "$XDG_CONFIG_HOME/headroom/config"
	mkdir -p "$XDG_CONFIG_HOME/headroom/config"
	run "$HR" config
	[ "$status" -eq 2 ]
	[[ "$output" == *"config holds settings but is a directory"* ]]
	run --separate-stderr "$HR" config --json
	[ "$(js .status <<<"$output")" = 2 ]
	[[ "$(js .error <<<"$output")" == *"is a directory, not a regular file: name a file" ]]
}

@test "config: a line past the reader's limit, ' ;' in a value and an indented line are refused with file:line" {
	local f=$XDG_CONFIG_HOME/headroom/config long
	long="jsonl = $(printf '%0190d' 0)on_event = touch $T/pwned"
	settings "$f" "$long"
	run "$HR" config
	[ "$status" -eq 2 ]
	[[ "$output" == *"$f:1: the line is longer than the reader's limit of "*" characters"* ]]
	[[ "$output" != *"config:2"* ]]
	settings "$f" "jsonl = $T/a.jsonl" 'on_event = logger "a ; b"'
	run "$HR" config
	[ "$status" -eq 2 ]
	[[ "$output" == *"$f:2: the line has ';' after a space, which would start a comment"* ]]
	settings "$f" "on_event = logger a" "  budget = 3G"
	run "$HR" config
	[ "$status" -eq 2 ]
	[[ "$output" == *"$f:2: the line is indented, which would continue the setting above it"* ]]
	# what reads as it looks is kept whole: ';' without a space, '#' inside a value,
	# indented comments, a line just inside the limit
	settings "$f" 'on_event = logger "a; b" # c' "  # an indented comment" "jsonl = $(printf '%0180d' 0)"
	run "$HR" config --json
	[ "$status" -eq 0 ]
	[ "$(js .settings.on_event.value <<<"$output")" = 'logger "a; b" # c' ]
	[ "$(js .settings.jsonl.source <<<"$output")" = "$f:3" ]
	[ ! -e "$T/pwned" ]
}

@test "config: a settings file another user could have written is refused, with what to do" {
	[ "$(id -u)" -eq 0 ] || skip "needs root to act as another user"
	settings "$HEADROOM_SYSTEM_CONFIG" "on_event = touch $T/pwned"
	chmod 666 "$HEADROOM_SYSTEM_CONFIG"
	run "$HR" config
	[ "$status" -eq 2 ]
	[[ "$output" == *"$HEADROOM_SYSTEM_CONFIG is writable by every user (uid 0, mode 0666): refused"*"chmod go-w"* ]]
	chmod 644 "$HEADROOM_SYSTEM_CONFIG"
	chown 4242 "$HEADROOM_SYSTEM_CONFIG"
	run "$HR" config
	[ "$status" -eq 2 ]
	[[ "$output" == *"belongs to another user, uid 4242 (uid 4242, mode 0644): refused"* ]]
	chown 0:4242 "$HEADROOM_SYSTEM_CONFIG"
	chmod 664 "$HEADROOM_SYSTEM_CONFIG"
	run "$HR" config
	[ "$status" -eq 2 ]
	[[ "$output" == *"is writable by its group"* ]]
	# root's own file, and for another user root's file and that user's own: trusted
	chown 0:0 "$HEADROOM_SYSTEM_CONFIG"
	chmod 644 "$HEADROOM_SYSTEM_CONFIG"
	run "$HR" config
	[ "$status" -eq 0 ]
	chmod 755 "$T" "$T/etc"
	settings "$T/u/mine.conf" "budget = 2G"
	chown -R 4242:4242 "$T/u"
	run setpriv --reuid=4242 --regid=4242 --clear-groups env HEADROOM_CONFIG="$T/u/mine.conf" "$HR" config
	[ "$status" -eq 0 ]
	grep -E "^budget +2G " <<<"$output"
	# a group shared by many users is no one's own, though it be the user's primary group
	settings "$T/u/shared.conf" "budget = 3G"
	chown 4242:100 "$T/u/shared.conf"
	chmod 664 "$T/u/shared.conf"
	run setpriv --reuid=4242 --regid=100 --clear-groups env HEADROOM_CONFIG="$T/u/shared.conf" "$HR" config
	[ "$status" -eq 2 ]
	[[ "$output" == *"shared.conf is writable by its group"* ]]
	[ ! -e "$T/pwned" ]
}

# Issue 43: a group no one else is listed in may still be another user's primary group,
# and that user can write a file of it. Two real users: the one whose group it is, and
# one whose primary group it is; teardown removes them, whatever the test did.
@test "config: a group-writable settings file is refused when the group is another user's primary group, naming them" {
	[ "$(id -u)" -eq 0 ] || skip "needs root to make users"
	command -v useradd || skip "useradd needed"
	local a=hrauda b=hraudb
	! id "$a" && ! id "$b" || skip "users $a or $b already exist"
	echo "$b $a" > "$T/users"
	useradd -M -U -s /bin/sh "$a"
	useradd -M -N -g "$a" -s /bin/sh "$b"
	chmod 755 "$T"
	settings "$T/u/config" "on_event = touch $T/pwned"
	chown -R "$a:$a" "$T/u"
	chmod 664 "$T/u/config"
	run setpriv --reuid="$a" --regid="$a" --clear-groups env HEADROOM_CONFIG="$T/u/config" "$HR" config
	[ "$status" -eq 2 ]
	[[ "$output" == *"$T/u/config is writable by its group $a, and so by user $b, whose primary group it is"*"chmod g-w $T/u/config"* ]]
	# not group-writable, no one else can write it: read
	chmod 644 "$T/u/config"
	run setpriv --reuid="$a" --regid="$a" --clear-groups env HEADROOM_CONFIG="$T/u/config" "$HR" config
	[ "$status" -eq 0 ]
	[ ! -e "$T/pwned" ]
}

@test "config: an unknown key fails the command whose setting it misspells; others warn and go on" {
	settings "$XDG_CONFIG_HOME/headroom/config" "budgt = 3G" "frobnicate = 1"
	run "$HR" doctor --help
	[ "$status" -eq 0 ]
	run --separate-stderr "$HR" stats --db "$T/none.db"
	[ "$status" -eq 0 ]
	[[ "$stderr" == *"config:1: unknown setting 'budgt' (did you mean budget?), ignored"* ]]
	[[ "$stderr" == *"config:2: unknown setting 'frobnicate', ignored"* ]]
	run "$HR" run --no-db -- true
	[ "$status" -eq 2 ]
	[[ "$output" == *"config:1: unknown setting 'budgt' (did you mean budget?)"* ]]
	run "$HR" config
	[ "$status" -eq 2 ]
}

@test "config: a FIFO or a device named as the settings file is refused at once, not read, said as what it is" {
	mkfifo "$T/fifo"
	for f in "$T/fifo:a FIFO" "/dev/zero:a character device"; do
		run timeout 60 env HEADROOM_CONFIG="${f%%:*}" "$HR" stats --db "$T/none.db"
		[ "$status" -eq 2 ]
		[[ "$output" == *"${f%%:*} holds settings but is ${f#*:}, not a regular file: name a file"* ]]
	done
}

@test "config: tree = true gives --tree; HEADROOM_CONFIG names the file" {
	settings "$T/mine.conf" "tree = yes"
	run env HEADROOM_CONFIG="$T/mine.conf" "$HR" run --no-db --report "$T/r.json" -- true
	[ "$status" -eq 0 ]
	[ "$(js .mode <"$T/r.json")" = "process tree" ]
	settings "$T/mine.conf" "tree = perhaps"
	run env HEADROOM_CONFIG="$T/mine.conf" "$HR" run --no-db -- true
	[ "$status" -eq 2 ]
	[[ "$output" == *"mine.conf:1: tree wants true or false, not 'perhaps'"* ]]
}

@test "an unknown option: one line, the nearest option, and where help is; the same prefix everywhere" {
	run "$HR" plan --grad-chkpt x.json
	[ "$status" -eq 2 ]
	[ "${#lines[@]}" -eq 1 ]
	[ "$output" = "headroom: plan: unknown option '--grad-chkpt'; did you mean --grad-ckpt? try 'headroom plan --help'" ]
	run "$HR" run --bduget 3G -- true
	[ "$output" = "headroom: run: unknown option '--bduget'; did you mean --budget? try 'headroom run --help'" ]
	run "$HR" watch --promethues :9405
	[[ "$output" == "headroom: watch: unknown option '--promethues'; did you mean --prometheus?"* ]]
	run "$HR" profiles --jsn
	[[ "$output" == "headroom: profiles: unknown option '--jsn'; did you mean --json?"* ]]
	run "$HR" doctor --frobnicate
	[ "$output" = "headroom: doctor: unknown option '--frobnicate'; try 'headroom doctor --help'" ]
	run "$HR" run -j
	[ "$output" = "headroom: run: -j wants a value (--jobs); try 'headroom run --help'" ]
	run "$HR" plan --json=yes x.json
	[[ "$output" == "headroom: plan: --json takes no value"* ]]
	run "$HR" pln
	[ "$status" -eq 2 ]
	[ "$output" = "headroom: unknown command 'pln'; did you mean plan? try 'headroom --help'" ]
}

@test "every --json command prints JSON when it fails" {
	run --separate-stderr "$HR" plan --json --grad-chkpt x.json
	[ "$status" -eq 2 ]
	[ "$(js .error <<<"$output")" = "plan: unknown option '--grad-chkpt'; did you mean --grad-ckpt? try 'headroom plan --help'" ]
	run --separate-stderr "$HR" plan --json "$T/none.json"
	[ "$status" -eq 2 ]
	[ "$(js .error <<<"$output")" = "plan: cannot read $T/none.json: No such file or directory" ]
	run --separate-stderr env LD_LIBRARY_PATH=/nonexistent "$HR" probe --json
	[ "$status" -ne 0 ]
	[[ "$(js .error <<<"$output")" == *"no GPU"* ]]
	run --separate-stderr "$HR" profiles --json --db "$T" list
	[ "$status" -eq 125 ]
	[[ "$(js .error <<<"$output")" == "profiles: profile store: "*"$T"* ]]
	run --separate-stderr "$HR" config --json extra
	[ "$status" -eq 2 ]
	[ "$(js .error <<<"$output")" = "config: no arguments expected, got 'extra'" ]
}

@test "a file named for plan: a directory, empty, not JSON (where), a hub id: each said with the file" {
	run "$HR" plan --gpu h100 "$T"
	[ "$status" -eq 2 ]
	[ "$output" = "headroom: plan: $T is a directory: give the config.json in it ($T/config.json)" ]
	: > "$T/empty.json"
	run "$HR" plan --gpu h100 "$T/empty.json"
	[ "$output" = "headroom: plan: $T/empty.json is empty, not JSON" ]
	printf '{"a": 1,\n' > "$T/bad.json"
	run "$HR" plan --gpu h100 "$T/bad.json"
	[[ "$output" == "headroom: plan: $T/bad.json is not JSON: "*"(line 2, column "* ]]
	cd "$T"
	run "$HR" plan --gpu h100 meta-llama/Llama-3.1-8B
	[[ "$output" == *"meta-llama/Llama-3.1-8B: no such file; it looks like a Hugging Face hub id: download its config.json first"* ]]
	run --separate-stderr "$HR" plan --json --gpu h100 "$T"
	[[ "$(js .error <<<"$output")" == *"is a directory"* ]]
}

@test "the report counts in the singular for one; profiles show labels its curve" {
	command -v ninja || skip "ninja needed"
	printf 'rule t\n  command = $${HEADROOM_LAUNCHER} %s --hold 40M --ms 300 && touch $out\nbuild a: t\n' "$MEMHOG" > "$T/build.ninja"
	cd "$T"
	run "$HR" run --db "$T/p.db" -j1 -- ninja
	[ "$status" -eq 0 ]
	[[ "$output" == *"headroom: 1 job in "* ]]
	[[ "$output" == *"at most 1 job at once"* ]]
	run "$HR" profiles --db "$T/p.db" show memhog
	[[ "$output" == *"resident memory (MiB) in 64 slices of the job's"* ]]
	grep -qE '^ +0- 12% +[0-9]+' <<<"$output"
	grep -qE '^ +87-100% +[0-9]+' <<<"$output"
}

@test "config: a HEADROOM_* variable near a setting's is warned of, naming the setting; headroom's own are not" {
	run --separate-stderr env HEADROOM_BUDJET=4G HEADROOM_JOB=3 HEADROOM_ELSEWHERE=1 "$HR" stats --db "$T/none.db"
	[ "$status" -eq 0 ]
	echo "$stderr"
	[ "$stderr" = "headroom: stats: HEADROOM_BUDJET is no setting, ignored (did you mean HEADROOM_BUDGET? \`headroom config\` lists them)" ]
	run --separate-stderr env HEADROOM_RESERVEE=1G "$HR" config
	[ "$status" -eq 0 ]
	[[ "$stderr" == *"HEADROOM_RESERVEE is no setting, ignored (did you mean HEADROOM_RESERVE?"* ]]
}

@test "run: a budget above the memory limit is a warning naming both" {
	local ram_kib
	ram_kib=$(awk '/^MemTotal:/ { print $2 }' /proc/meminfo)
	run --separate-stderr "$HR" run --no-db --budget $((ram_kib / 1024 / 1024 + 64))G --report "$T/r.json" -- true
	[ "$status" -eq 0 ]
	echo "$stderr"
	[[ "$stderr" == *"the budget, "*" GiB, is more than the memory limit, "*" GiB ("*"): the limit binds first"* ]]
	# within it: no word
	run --separate-stderr "$HR" run --no-db --budget 64M -- true
	[[ "$stderr" != *"more than the memory limit"* ]]
}

@test "run -q: nothing on stderr but warnings, as run --help, the README and the man page say" {
	run --separate-stderr "$HR" run -q --no-db --report "$T/r.json" -- true
	[ "$status" -eq 0 ]
	[ -z "$stderr" ]
	[ -s "$T/r.json" ]
	"$HR" run --help | grep -q -- "-q, --quiet         no live line and no end report: only warnings and errors"
	grep -q 'with `-q` there$' "$ROOT/README.md"
	grep -q '^is neither: nothing but warnings and errors' "$ROOT/README.md"
	not grep -q 'or with `-q`, there is nothing but the final report' "$ROOT/README.md"
	grep -q '^No progress line and no end report on standard error: only warnings and errors' "$ROOT/docs/headroom.1"
}

@test "run make with no Makefile: make's own error and one line, not a report of 0 jobs" {
	command -v make || skip "make needed"
	mkdir "$T/empty"
	cd "$T/empty"
	run --separate-stderr "$HR" run --no-db -- make
	echo "$stderr"
	[ "$status" -eq 2 ]
	[[ "$stderr" == *"No targets specified and no makefile found"* ]]
	[[ "$stderr" == *"headroom: the build ended with exit status 2 before any job ran (its own output above says why)" ]]
	[[ "$stderr" != *"0 jobs"* ]]
	[[ "$stderr" != *"memory: limit"* ]]
}
