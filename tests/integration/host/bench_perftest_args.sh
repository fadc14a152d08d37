# tools/bench/perftest: bad arguments and a missing or bench-less railcp end
# with one line on stderr and a non-zero status, before any guest boots.
. tests/integration/lib.sh
bp=tools/bench/perftest
one_line() {
	[ "$(printf '%s\n' "$err" | wc -l)" -eq 1 ] || fail "$1: expected one line on stderr, got: $err"
	case "$err" in "bench-perftest: "*) ;; *) fail "$1: error does not start with 'bench-perftest: ': $err" ;; esac
	[ -z "$out" ] || fail "$1: printed on stdout: $out"
}
for args in "--bogus" "--rounds 0" "--rounds x" "--bytes 12Q" "--bytes 0" "--chunk 1000" \
	"--bytes 3M" "--bytes 65M --qps-per-rail 2" "--qps-per-rail 0" "--scaling 1,x" \
	"--scaling 3" "--perftest-only extra"; do
	capture $bp $args
	[ "$rc" -eq 2 ] || fail "bench-perftest $args: expected exit status 2, got $rc ($err)"
	one_line "$args"
done
capture $bp --railcp /nonexistent/railcp
[ "$rc" -eq 1 ] || fail "--railcp /nonexistent/railcp: expected exit status 1, got $rc"
one_line "--railcp /nonexistent/railcp"
capture $bp --railcp /bin/true
[ "$rc" -eq 1 ] || fail "--railcp /bin/true (no bench command): expected exit status 1, got $rc"
one_line "--railcp /bin/true"
capture $bp --json /nonexistent/dir/out.json --perftest-only
[ "$rc" -eq 1 ] || fail "--json into a missing directory: expected exit status 1, got $rc"
one_line "--json /nonexistent/dir/out.json"
capture $bp --help
[ "$rc" -eq 0 ] && printf '%s\n' "$out" | grep -q -- "--perftest-only" || fail "--help: $rc $out"
