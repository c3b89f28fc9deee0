#!/usr/bin/env bats
# watch's live view on a terminal: the alternate screen, redrawn in place.

load helper

@test "watch on a terminal draws on the alternate screen, in place, and gives the screen back" {
	command -v script >/dev/null || skip "script (util-linux) needed"
	script -qc "'$HR' watch --duration 2.5 -i 500" /dev/null > "$T/tty.out"
	grep -q $'\e\[?1049h' "$T/tty.out"       # the alternate screen, entered
	grep -q $'\e\[?1049l' "$T/tty.out"       # and left
	not grep -q $'\e\[2J' "$T/tty.out"         # never the whole screen cleared
	[ "$(grep -o $'\e\[H' "$T/tty.out" | wc -l)" -ge 3 ]   # redrawn from the top, each sample
	grep -q 'host: .* available of' "$T/tty.out"
}

@test "watch --prometheus on a port in use: said in headroom's words, not libmicrohttpd's" {
	port=$((20000 + RANDOM % 20000))
	"$HR" watch --prometheus "$port" --duration 4 -q 2>"$T/first.err" &
	serving() { curl -sf "http://127.0.0.1:$port/metrics" > /dev/null || grep -q 'cannot load' "$T/first.err"; }
	wait_for 10 serving
	run "$HR" watch --prometheus "$port" --duration 1 -q
	wait
	grep -q 'cannot load' "$T/first.err" && skip "libmicrohttpd12 not installed"
	[ "$status" -eq 2 ]
	[ "$output" = "headroom: watch: --prometheus $port: cannot listen there: the address is in use (another watch, or another server: give another port)" ]
}
