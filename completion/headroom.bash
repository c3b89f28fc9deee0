# bash completion for headroom. The commands come from `headroom --help` and each
# command's options from `headroom COMMAND --help`, so that they stay in step with the
# program that is installed.
_headroom()
{
	local prog=${COMP_WORDS[0]} cur=${COMP_WORDS[COMP_CWORD]} cmd= dashdash=0 i
	COMPREPLY=()
	for ((i = 1; i < COMP_CWORD; i++)); do
		case ${COMP_WORDS[i]} in
		--) dashdash=$i; break ;;
		-*) ;;
		*) [ -z "$cmd" ] && cmd=${COMP_WORDS[i]} ;;
		esac
	done
	if [ "$dashdash" -gt 0 ]; then
		# the governed command: a program first, then its own arguments as files
		if [ "$dashdash" -eq $((COMP_CWORD - 1)) ]; then
			COMPREPLY=($(compgen -c -- "$cur"))
		else
			COMPREPLY=($(compgen -f -- "$cur"))
		fi
		return 0
	fi
	if [ -z "$cmd" ]; then
		COMPREPLY=($(compgen -W "$("$prog" --help 2>/dev/null | awk '/^  [a-z]/ { print $1 }') --help --version" -- "$cur"))
		return 0
	fi
	case $cur in
	-*)
		# (a boolean's "--[no-]flag" is both --flag and --no-flag)
		COMPREPLY=($(compgen -W "$("$prog" "$cmd" --help 2>/dev/null | grep -E '^[[:space:]]+-' |
			sed -E 's/--\[no-\]([a-z0-9-]+)/--\1 --no-\1/g' | grep -oE -- '--[a-z][a-z0-9-]*' | sort -u)" -- "$cur"))
		;;
	*)
		if [ "$cmd" = profiles ] && [ "$COMP_CWORD" -eq 2 ]; then
			COMPREPLY=($(compgen -W "list show forget export import" -- "$cur"))
		else
			COMPREPLY=($(compgen -f -- "$cur"))
		fi
		;;
	esac
	return 0
}
complete -F _headroom headroom
