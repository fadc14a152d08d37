# Bad command lines: one sentence on stderr and exit status 2.
. tests/integration/lib.sh
for args in "bogus" "devices --bogus" "devices extra" "--bogus devices"; do
	capture "$RAILCP" $args
	expect_one_line_error "$args"
	[ "$rc" -eq 2 ] || fail "railcp $args: expected exit status 2, got $rc"
done
capture "$RAILCP"
[ "$rc" -eq 2 ] || fail "railcp with no command: expected exit status 2, got $rc"
capture "$RAILCP" devices --help
[ "$rc" -eq 0 ] && printf '%s\n' "$out" | grep -q -- "--json" || fail "devices --help: $rc $out"
capture "$RAILCP" --version
[ "$rc" -eq 0 ] && printf '%s\n' "$out" | grep -q "^railcp [0-9]" || fail "--version: $rc $out"
