#!/usr/bin/env bats
# The live progress line: on a terminal only, below a scroll region that is given back.

load helper

slow_build() {
	hold_build "$T/pg" 8 50M 700
}

@test "on a terminal: a progress line below a scroll region, with the total learned from the last build" {
	command -v script && command -v ninja || skip "script (util-linux) and ninja needed"
	slow_build
	cd "$T/pg"
	TERM=xterm LANG=C.UTF-8 script -qfec "stty rows 20 cols 120; '$HR' run -j 2 --db '$T/p.db' -- ninja" /dev/null > "$T/out1"
	rm -f out*
	TERM=xterm LANG=C.UTF-8 script -qfec "stty rows 20 cols 120; '$HR' run -j 2 --db '$T/p.db' -- ninja" /dev/null > "$T/out2"
	# the region: all rows but the last; the line on row 20; the region given back at the end
	grep -qF $'\e[1;19r' "$T/out2"
	grep -qF $'\e[20;1H\e[2K[' "$T/out2"
	grep -qF $'\e[r' "$T/out2"
	# the first build had no total; the second knows there are 8 jobs and gives an ETA
	grep -q 'done\] running' "$T/out1"
	grep -a -o '\[[0-9]/8\] running [^[:cntrl:]]*ETA [0-9]*[sm]' "$T/out2" | head -1 | grep -q ETA
	grep -q 'headroom: 8 jobs' "$T/out2"
}

@test "not a terminal, or --quiet: no progress line, no escape sequence" {
	command -v ninja || skip "ninja needed"
	slow_build
	cd "$T/pg"
	run --separate-stderr "$HR" run -j 2 --no-db -- ninja
	[ "$status" -eq 0 ]
	[[ "$stderr" == *"headroom: 8 jobs"* ]]
	[[ "$stderr" != *$'\e'* ]]
	rm -f out*
	TERM=xterm script -qfec "'$HR' run -q -j 2 --no-db -- ninja" /dev/null > "$T/out"
	not grep -qF $'\e[1;' "$T/out"
}
