# Every option a parser in cli/ accepts is in the man page source and in its
# command's --help, and nothing else is named there (tools/check-options).
. tests/integration/lib.sh
command -v python3 >/dev/null || skip "python3 is not installed"
capture tools/check-options
[ "$rc" -eq 0 ] || fail "tools/check-options exited $rc: $out $err"
echo "$out"
