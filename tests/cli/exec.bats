#!/usr/bin/env bats
# headroom exec: the launcher, with and without a governor.

load helper

@test "exec without a governor runs the tool with its output and exit status untouched" {
	run "$HR" exec -- sh -c 'echo to-out; echo to-err >&2; exit 7'
	[ "$status" -eq 7 ]
	[[ "$output" == *to-out* ]]
	[[ "$output" == *to-err* ]]
}

@test "exec passes arguments through exactly, spaces and all" {
	run "$HR" exec printf '[%s]' 'a b' '' '--c'
	[ "$status" -eq 0 ]
	[ "$output" = "[a b][][--c]" ]
}

@test "exec with a governor socket that is gone still runs the tool" {
	HEADROOM_SOCK="$T/nobody.sock" run "$HR" exec -- sh -c 'exit 4'
	[ "$status" -eq 4 ]
}

@test "exec of a missing tool says so and exits 127" {
	run -127 "$HR" exec -- "$T/no-such-compiler" -c x.c
	[ "$status" -eq 127 ]
	[[ "$output" == *"no-such-compiler"* ]]
}

@test "exec of a tool killed by a signal dies by the same signal" {
	run "$HR" exec -- sh -c 'kill -TERM $$'
	[ "$status" -eq 143 ]
}

@test "exec without a command is a usage error" {
	run "$HR" exec
	[ "$status" -eq 2 ]
	[[ "$output" == *"missing the command"* ]]
}

@test "exec --help describes it" {
	run "$HR" exec --help
	[ "$status" -eq 0 ]
	[[ "$output" == *"usage: headroom exec"* ]]
}
