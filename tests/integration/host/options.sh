# Every option a parser in cli/ accepts is in the man page source and in its
# command's --help, and nothing else is named there (tools/dev/check-options).
. tests/integration/lib.sh
command -v python3 >/dev/null || skip "python3 is not installed"
capture tools/dev/check-options
[ "$rc" -eq 0 ] || fail "tools/dev/check-options exited $rc: $out $err"
echo "$out"
