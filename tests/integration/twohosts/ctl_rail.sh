# The control connection on the rail that fails: host A pushes to (and
# pulls from) a server on host B addressed by B's rail 1 address, so the
# TCP control connection runs over rail 1 too, and rail 1's link of B is
# pulled mid-copy. The data could go on over rail 0, but neither side can
# hear the other any more: the copy must end by itself within the control
# connection's limits (TCP keepalive 10 s + 3 x 2 s, unacknowledged data
# 30 s, each control step --timeout 30 s) with one sentence, leave no
# temporary and nothing under a final name but a file that is complete
# and verified (the data may all have gone over rail 0 before the end
# exchange failed: files are put in place as they complete), and the
# server must serve the next copy once the link is back. It must never
# hang.
. tests/integration/lib.sh
need_two_hosts
[ "${TESTBED_RAILS:-0}" -ge 2 ] || skip "needs two rails per host"
port=7520
limit=75
tb on a sh -c 'rm -rf /tmp/c && mkdir -p /tmp/c/pulled && head -c 96M /dev/urandom >/tmp/c/big' ||
	fail "cannot make the source on a"
tb on b sh -c 'rm -rf /tmp/c && mkdir -p /tmp/c/root && head -c 96M /dev/urandom >/tmp/c/root/pullme' ||
	fail "cannot make the root on b"
start_server_on b srv --port $port --root /tmp/c/root --buffer-mib 8

# run_cut NAME ARGS...: the copy on a; rail 1 of b pulled 2 s after it starts
# (its start-up takes about 1 s); how long it took after the pull, its status
# and its stderr in $secs, $rc, $err.
run_cut() {
	_name=$1
	shift
	spawn_on a "$_name" "$RAILCP" "$@" --port $port
	sleep 2
	_down=$(date +%s)
	tb link b 1 down || fail "tb link b 1 down failed"
	tb wait a "$_name" $((limit + 30))
	rc=$?
	secs=$(($(date +%s) - _down))
	err=$(cat "$(job_file a "$_name" err)")
	tb link b 1 up || fail "tb link b 1 up failed"
	tb on b sh -c 'for i in $(seq 200); do grep -q ACTIVE /sys/class/infiniband/rxe1/ports/1/state && exit 0; sleep 0.1; done; exit 1' ||
		fail "rxe1 on b did not come back ACTIVE"
	[ "$rc" -ne 124 ] || fail "$_name: still running $((limit + 30)) s after its control connection's rail went down"
	[ "$secs" -le $limit ] || fail "$_name: took $secs s to end after the link went down (limit $limit s): $err"
	echo "$_name: ended $secs s after the link went down, status $rc: ${err:-(no error)}"
}

# same_or_none HOST FILE SRCHOST SRC: FILE on HOST is missing or equals SRC on SRCHOST.
same_or_none() {
	tb on "$1" test -e "$2" || return 0
	[ "$(tb on "$1" sh -c "sha256sum <$2")" = "$(tb on "$3" sh -c "sha256sum <$4")" ] ||
		fail "$2 on $1 is under its final name but differs from $4"
	echo "  $2 on $1 is complete under its final name"
}

run_cut push -q /tmp/c/big 198.18.1.2:pushed
[ "$rc" -eq 0 ] || expect_one_line_error "a push whose control connection's rail went down"
same_or_none b /tmp/c/root/pushed a /tmp/c/big
# The server's session ends by its own limits: its temporaries go with it.
tb on b sh -c 'for i in $(seq 600); do find /tmp/c/root -name ".railcp-tmp-*" | grep -q . || exit 0; sleep 0.1; done; exit 1' ||
	fail "temporaries left on b 60 s after the cut push"

run_cut pull -q 198.18.1.2:pullme /tmp/c/pulled/
[ "$rc" -eq 0 ] || expect_one_line_error "a pull whose control connection's rail went down"
same_or_none a /tmp/c/pulled/pullme b /tmp/c/root/pullme
tb on a sh -c '! find /tmp/c/pulled -name ".railcp-tmp-*" | grep -q .' || fail "temporaries left on a"

# The server serves on, over rail 1 as well.
tb on a "$RAILCP" -q /tmp/c/big 198.18.1.2:after --port $port ||
	fail "the server does not serve after the cut: $(tail -n 3 "$(job_file b srv err)")"
tail -n 4 "$(job_file b srv err)" | sed 's/^/  server: /'
stop_server_on b srv
tb on a rm -rf /tmp/c
tb on b rm -rf /tmp/c
exit 0
