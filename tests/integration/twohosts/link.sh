# tb link, the testbed's cable pull: 'tb link b 1 down' drops the carrier of
# b's rail 1 NIC and takes rxe1's port out of ACTIVE, so ib_write_bw over
# rail 1 fails (or stalls, cut short by a timeout); 'tb link b 1 up' brings
# it back ACTIVE and ib_write_bw between a's rxe1 and b's rxe1 works again.
# perftest's own connection goes over the management link (b, 198.19.0.2).
. tests/integration/lib.sh
need_two_hosts
[ "$TESTBED_RAILS" -ge 2 ] || skip "needs two rails per host"
command -v ib_write_bw >/dev/null || skip "perftest is not installed (run tools/setup)"
nic=$(tb on b cat /sys/class/infiniband/rxe1/parent) || fail "no parent netdev for rxe1 on b"

# Wait up to 10 s for rail 1 of b to show carrier $1 and port state $2
# (a pattern), printing both.
wait_rail1() {
	_i=0
	until state=$(tb on b sh -c "cat /sys/class/net/$nic/carrier /sys/class/infiniband/rxe1/ports/1/state" | tr '\n' ' ') &&
		case "$state" in "$1 "$2*) true ;; *) false ;; esac; do
		_i=$((_i + 1))
		[ $_i -lt 20 ] || fail "rail 1 of b: carrier and port state are '$state', expected $1 and $2"
		sleep 0.5
	done
	echo "rail 1 of b ($nic): carrier and port state $state"
}

# Start the ib_write_bw server on b's rxe1 (GID 1: the RoCE v2 GID of
# 198.18.1.2), perftest port $1, and wait until it listens (stdbuf: its
# stdout is a file, so it would hold that line back).
bw_server() {
	spawn_on b bw stdbuf -oL ib_write_bw -d rxe1 -x 1 -F -s 65536 -n 200 -p "$1"
	wait_for_line 'Waiting for client' 20 "$(job_file b bw out)" ||
		fail "the ib_write_bw server on b is not waiting: $(cat "$(job_file b bw out)" "$(job_file b bw err)")"
}

# ib_write_bw from a's rxe1 to the server; sets $rc, $out and $err.
bw_client() {
	capture tb on a timeout 30 ib_write_bw -d rxe1 -x 1 -F -s 65536 -n 200 -p "$1" b
	tb kill b bw KILL >/dev/null 2>&1
	tb wait b bw 10 >/dev/null
}

# The server is up and waiting when the cable is pulled: the QPs connect
# over the management link, then the writes go nowhere.
wait_rail1 1 "4: ACTIVE"
bw_server 18601
tb link b 1 down || fail "tb link b 1 down failed"
wait_rail1 0 "1: DOWN"
start=$(date +%s)
bw_client 18601
[ "$rc" -ne 0 ] || fail "ib_write_bw over rail 1 worked with b's link down: $out"
echo "with the link down ib_write_bw exited $rc after $(($(date +%s) - start)) s: $(printf '%s\n' "$err" "$out" | grep -v '^ *$' | grep -v '^-*$' | head -n 2 | tr '\n' ' ')"

tb link b 1 up || fail "tb link b 1 up failed"
wait_rail1 1 "4: ACTIVE"
bw_server 18602
bw_client 18602
[ "$rc" -eq 0 ] || fail "ib_write_bw over rail 1 after the link came back exited $rc: $err $out"
printf '%s\n' "$out" | grep -q '^ *65536 *200 ' || fail "no result line from ib_write_bw: $out"
echo "with the link up again: $(printf '%s\n' "$out" | grep '^ *65536 *200 ' | tr -s ' \t' ' ')"
