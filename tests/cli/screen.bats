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

# The NVML double's GPU 0 of 80G using $1.
gpu_uses() {
	printf 'gpu uuid=GPU-a bus=00000000:04:00.0 name=H200 total=80G used=%s util=90\n' "$1" > "$T/gpus.tmp"
	mv "$T/gpus.tmp" "$T/gpus"
}

# The tmux pane's text now.
pane() {
	tmux -S "$T/tmux.sock" capture-pane -p -t w
}

pane_has() {
	pane | grep -q "$1"
}

@test "watch's view keeps the last events on screen, newest first, lists them all at the end; q quits" {
	command -v tmux >/dev/null || skip "tmux needed for a terminal"
	[ -e "$ROOT/build/nvml-double/libnvidia-ml.so.1" ] || skip "the NVML double is not built (make)"
	export LD_LIBRARY_PATH="$ROOT/build/nvml-double" NVML_DOUBLE_SCRIPT="$T/gpus"
	gpu_uses 79G
	tmux -S "$T/tmux.sock" new-session -d -x 150 -y 40 -s w \
		"'$HR' watch --interval 200 --min-free 2G 2> '$T/err'; echo \$? > '$T/rc'"
	wait_for 20 pane_has 'low_free .*has 1.00 GiB free'
	gpu_uses 10G
	wait_for 20 pane_has ' 10.00 GiB '
	gpu_uses 79.5G
	wait_for 20 pane_has 'low_free .*has 512.00 MiB free'
	pane > "$T/screen"
	cat "$T/screen"
	# both on screen with their time, the newest first, under the figures
	grep -q '^events, newest first (2 in all; q quits):' "$T/screen"
	grep -A2 '^events, newest first' "$T/screen" | sed -n 2p | grep -qE '^  [0-9]{2}:[0-9]{2}:[0-9]{2} low_free +GPU 0 \(GPU-a\) has 512.00 MiB free'
	grep -A2 '^events, newest first' "$T/screen" | sed -n 3p | grep -qE '^  [0-9]{2}:[0-9]{2}:[0-9]{2} low_free +GPU 0 \(GPU-a\) has 1.00 GiB free'
	tmux -S "$T/tmux.sock" send-keys -t w q
	wait_for 20 test -s "$T/rc"
	tmux -S "$T/tmux.sock" kill-server 2>/dev/null || true
	cat "$T/err"
	[ "$(cat "$T/rc")" -eq 0 ]
	# at the end, every event in order with its time and message
	grep -A2 '^  events: low_free 2' "$T/err" | sed -n 2p | grep -qE '^  [0-9:]{8} low_free: GPU 0 \(GPU-a\) has 1.00 GiB free'
	grep -A2 '^  events: low_free 2' "$T/err" | sed -n 3p | grep -qE '^  [0-9:]{8} low_free: GPU 0 \(GPU-a\) has 512.00 MiB free'
}
