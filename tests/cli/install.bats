#!/usr/bin/env bats
# Installing: make install into a staging root, the Debian package, shell completion.

load helper

@test "make install PREFIX DESTDIR puts the programs, the man page and the completions in place; uninstall removes them" {
	make -s -C "$ROOT" install PREFIX=/usr/local DESTDIR="$T/root" >/dev/null
	for f in bin/headroom bin/headroom-exec share/man/man1/headroom.1 \
		share/bash-completion/completions/headroom share/zsh/vendor-completions/_headroom; do
		[ -f "$T/root/usr/local/$f" ] || { echo "missing $f"; false; }
	done
	[ -x "$T/root/usr/local/bin/headroom" ]
	run "$T/root/usr/local/bin/headroom" --version
	[ "$status" -eq 0 ]
	[[ "$output" == "headroom "[0-9]* ]]
	run "$T/root/usr/local/bin/headroom" config
	[ "$status" -eq 0 ]
	make -s -C "$ROOT" uninstall PREFIX=/usr/local DESTDIR="$T/root" >/dev/null
	[ -z "$(find "$T/root" -type f)" ]
}

@test "the man page's synopsis names every command of headroom --help" {
	for c in $("$HR" --help | awk '/^  [a-z]/ { print $1 }'); do
		grep -q "^\.B headroom $c" "$ROOT/docs/headroom.1" || { echo "no $c in the synopsis"; false; }
	done
}

@test "a .deb builds with dpkg-buildpackage, unpacks and runs; as root it installs, runs and purges" {
	command -v dpkg-buildpackage && command -v dh || skip "dpkg-dev and debhelper needed"
	# the package is built from the sources, whatever headroom is under test: once is enough
	[ -z "${HEADROOM_BIN-}" ] || skip "built once, in the pass without HEADROOM_BIN"
	# from a copy: dpkg-buildpackage writes ../*.deb and builds in the tree
	mkdir -p "$T/src/headroom"
	(cd "$ROOT" && git ls-files -z --cached --others --exclude-standard | xargs -0 tar -cf - 2>/dev/null) |
		tar -xf - -C "$T/src/headroom"
	cd "$T/src/headroom"
	run dpkg-buildpackage -us -uc -b -j2
	[ "$status" -eq 0 ] || { echo "$output" | tail -30; false; }
	deb=$(ls "$T"/src/headroom_*.deb)
	dpkg-deb -I "$deb" | grep -q 'Depends:.*libjansson'
	dpkg -x "$deb" "$T/inst"
	run "$T/inst/usr/bin/headroom" --version
	[ "$status" -eq 0 ]
	[[ "$output" == "headroom "[0-9]* ]]
	[ -f "$T/inst/usr/share/man/man1/headroom.1.gz" ] || [ -f "$T/inst/usr/share/man/man1/headroom.1" ]
	[ -f "$T/inst/usr/share/bash-completion/completions/headroom" ]
	# the launcher the installed headroom uses is the installed one, beside it
	printf 'rule t\n  command = $${HEADROOM_LAUNCHER} touch $out\nbuild a: t\nbuild b: t\n' > "$T/b.ninja"
	if command -v ninja >/dev/null; then
		run "$T/inst/usr/bin/headroom" run --no-db -- ninja -f "$T/b.ninja" -C "$T"
		[ "$status" -eq 0 ]
		[ -f "$T/a" ] && [ -f "$T/b" ]
	fi
	# as root, where no headroom package is installed: really install it, run it, purge it
	if [ "$(id -u)" -eq 0 ] && ! dpkg -s headroom >/dev/null 2>&1; then
		run dpkg -i "$deb"
		local installed=$status
		run /usr/bin/headroom --version
		local ran=$status out=$output
		dpkg -P headroom >/dev/null
		[ "$installed" -eq 0 ] && [ "$ran" -eq 0 ]
		[[ "$out" == "headroom "[0-9]* ]]
		not dpkg -s headroom >/dev/null 2>&1
		[ ! -e /usr/bin/headroom ]
	fi
}

complete_words() { # the completions bash offers for the words given (the last is the one completed)
	bash -c 'source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); _headroom; printf "%s\n" "${COMPREPLY[@]}"' \
		_ "$ROOT/completion/headroom.bash" "$@"
}

@test "bash completion: commands, each command's options, profiles' actions, the governed command" {
	run complete_words "$HR" ""
	[ "$status" -eq 0 ]
	for c in run exec doctor plan probe watch profiles config stats; do
		grep -qx "$c" <<<"$output" || { echo "no $c in: $output"; false; }
	done
	run complete_words "$HR" pr
	[ "$(sort <<<"$output" | tr '\n' ' ')" = "probe profiles " ]
	run complete_words "$HR" plan --grad-c
	[ "$output" = "--grad-ckpt" ]
	run complete_words "$HR" plan --grad
	[ "$(sort <<<"$output" | tr '\n' ' ')" = "--grad-accum --grad-ckpt " ]
	run complete_words "$HR" run --bu
	[ "$output" = "--budget" ]
	run complete_words "$HR" watch --prom
	[ "$output" = "--prometheus" ]
	run complete_words "$HR" profiles f
	[ "$output" = "forget" ]
	run complete_words "$HR" run -- baz-no-such-program-hr
	[ -z "$output" ]
	run complete_words "$HR" run -- bas
	grep -qx bash <<<"$output"
}
