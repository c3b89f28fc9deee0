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

@test "the live line: the jobs' memory against the budget in force, waits for memory apart from waits for a CPU slot" {
	command -v script && command -v ninja || skip "script (util-linux) and ninja needed"
	slow_build
	cd "$T/pg"
	# at -j 2 the 8 jobs of 50M fit a wide budget: the rest wait for a slot
	TERM=xterm LANG=C LC_ALL=C script -qfec "stty rows 20 cols 160; '$HR' run -j 2 --no-db --budget 2G -- ninja" /dev/null > "$T/out1"
	grep -a -o 'running [^[:cntrl:]]*' "$T/out1" | grep -q 'waiting for a CPU slot, jobs [0-9.]* [KMG]i\?B/2.00 GiB budget'
	not grep -a -q 'waiting for memory' "$T/out1"
	rm -f out*
	# room for two of them in 120M, and four slots: the rest wait for memory
	TERM=xterm LANG=C LC_ALL=C script -qfec "stty rows 20 cols 160; '$HR' run -j 4 --no-db --budget 120M -- ninja" /dev/null > "$T/out2"
	grep -a -o 'running [^[:cntrl:]]*' "$T/out2" | grep -q 'waiting for memory, jobs [0-9.]* [KMG]i\?B/120.00 MiB budget'
	not grep -a -q 'waiting for a CPU slot' "$T/out2"
}
