# tests/integration/lib.sh - helpers sourced by the integration scripts.

fail() { echo "FAIL: $*"; exit 1; }
skip() { echo "SKIP: $*"; exit 77; }

# Skip unless this machine has at least one RDMA device (the testbed has).
need_rdma() {
	ls /sys/class/infiniband/* >/dev/null 2>&1 ||
		skip "no RDMA device here; run this test inside tools/testbed"
}

# Run a command, capturing stdout, stderr and exit status in $out, $err, $rc.
capture() {
	_o=$(mktemp) _e=$(mktemp)
	"$@" >"$_o" 2>"$_e"
	rc=$?
	out=$(cat "$_o") err=$(cat "$_e")
	rm -f "$_o" "$_e"
}

# Fail unless stderr is exactly one line starting with "railcp: " and the
# exit status is non-zero.
expect_one_line_error() {
	[ "$rc" -ne 0 ] || fail "expected a non-zero exit status for: $*"
	[ "$(printf '%s\n' "$err" | wc -l)" -eq 1 ] || fail "expected one line on stderr, got: $err"
	case "$err" in "railcp: "*) ;; *) fail "error does not start with 'railcp: ': $err" ;; esac
}
