# tools/bench/copy: bad arguments and a missing or copy-less railcp end with
# one line on stderr and a non-zero status, before any guest boots.
. tests/integration/lib.sh
bc=tools/bench/copy
one_line() {
	[ "$(printf '%s\n' "$err" | wc -l)" -eq 1 ] || fail "$1: expected one line on stderr, got: $err"
	case "$err" in "bench-copy: "*) ;; *) fail "$1: error does not start with 'bench-copy: ': $err" ;; esac
	[ -z "$out" ] || fail "$1: printed on stdout: $out"
}
for args in "--bogus" "--rounds 0" "--rounds x" "--bytes 12Q" "--bytes 0" "--chunk 1000" \
	"--chunk 128M" "--bytes 512K" "--qps-per-rail 0" "--qps-per-rail 65" "--files 0" \
	"--files -3" "--file-size 0" "--file-size 4X" "--run-timeout 0" "--timeout x" "--mem 0" "--mem x" "extra"; do
	capture $bc $args
	[ "$rc" -eq 2 ] || fail "bench-copy $args: expected exit status 2, got $rc ($err)"
	one_line "$args"
done
capture $bc --railcp /nonexistent/railcp
[ "$rc" -eq 1 ] || fail "--railcp /nonexistent/railcp: expected exit status 1, got $rc"
one_line "--railcp /nonexistent/railcp"
capture $bc --railcp /bin/true
[ "$rc" -eq 1 ] || fail "--railcp /bin/true (cannot serve copies): expected exit status 1, got $rc"
one_line "--railcp /bin/true"
capture $bc --json /nonexistent/dir/out.json
[ "$rc" -eq 1 ] || fail "--json into a missing directory: expected exit status 1, got $rc"
one_line "--json /nonexistent/dir/out.json"
capture $bc --help
[ "$rc" -eq 0 ] && printf '%s\n' "$out" | grep -q -- "--file-size" || fail "--help: $rc $out"
