# tools/check: --help, an unknown argument or one too many ends with the one
# usage line on stderr and exit status 2, before anything runs (no setup, no
# build, no step).
. tests/integration/lib.sh
for args in "--help" "--bogus" "--quick extra" "quick" "-q"; do
	# shellcheck disable=SC2086 # the words of $args are the arguments
	capture tools/check $args
	[ "$rc" -eq 2 ] || fail "tools/check $args: expected exit status 2, got $rc ($err)"
	[ "$(printf '%s\n' "$err" | wc -l)" -eq 1 ] || fail "tools/check $args: expected one line on stderr, got: $err"
	case "$err" in "usage: tools/check [--quick]"*) ;; *) fail "tools/check $args: not the usage line: $err" ;; esac
	[ -z "$out" ] || fail "tools/check $args: printed on stdout: $out"
done
