# Bad command lines: one sentence on stderr and exit status 2.
. tests/integration/lib.sh
for args in "bogus" "devices --bogus" "devices extra" "--bogus devices" \
	"bench" "bench h1 h2" "bench h --bytes 0" "bench h --bytes 12Q" "bench h --chunk 1000" \
	"bench h --chunk 128M" "bench h:0" "bench h:70000" "bench h --qps-per-rail 0" \
	"bench h --profile p --numa 0" "serve --port 0" "serve --port x" "serve extra" \
	"serve --max-sessions 0" "serve --name h:0" "serve --name [::1" "serve --name ::1:x" "serve --ssh --name h" "topo --qps-per-rail 99" "--fsync --no-fsync src h:dst" "--no-direct --direct src h:dst"; do
	capture "$RAILCP" $args
	expect_one_line_error "$args"
	[ "$rc" -eq 2 ] || fail "railcp $args: expected exit status 2, got $rc"
done
capture "$RAILCP"
[ "$rc" -eq 2 ] || fail "railcp with no command: expected exit status 2, got $rc"
capture "$RAILCP" devices --help
[ "$rc" -eq 0 ] && printf '%s\n' "$out" | grep -q -- "--json" || fail "devices --help: $rc $out"
capture "$RAILCP" bench --help
[ "$rc" -eq 0 ] && printf '%s\n' "$out" | grep -q -- "--bytes" || fail "bench --help: $rc $out"
capture "$RAILCP" serve --help
[ "$rc" -eq 0 ] && printf '%s\n' "$out" | grep -q -- "--port" || fail "serve --help: $rc $out"
capture "$RAILCP" --help-copy
[ "$rc" -eq 0 ] && printf '%s\n' "$out" | grep -q -- "--no-fsync" || fail "--help-copy: $rc $out"
capture "$RAILCP" --version
[ "$rc" -eq 0 ] && printf '%s\n' "$out" | grep -q "^railcp [0-9]" || fail "--version: $rc $out"
