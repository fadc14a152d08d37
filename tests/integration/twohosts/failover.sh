# Rail failover across two hosts: host A pushes to and pulls from a server
# on host B over two rails while rail 1's link on B is pulled mid-copy (a
# real carrier loss, QEMU's set_link). The copy completes on rail 0, the
# result is byte-identical, and --json names rxe1:1 as failed with its
# reason and the bytes it carried before; rail 0 carried the rest, so the
# chunks rail 1 held were sent again (without the retry path the copy
# cannot finish). With --no-failover the same loss fails the copy with one
# sentence. With both links down a copy with --transport rdma fails with
# one sentence within the verbs retry timeout + 2 s, leaves no file under
# its final name and no temporary, and the server then serves the next
# copy; on auto (the default) the same loss has the copy go on over tcp on
# the management link, which stays up: it completes, byte-identical, and
# --json says it fell back and what rdma carried before. A copy started
# while rail 1 of B is down goes without it and says so; once it is ACTIVE
# again, the next copy uses it.
. tests/integration/lib.sh
need_two_hosts
[ "${TESTBED_RAILS:-0}" -ge 2 ] || skip "needs two rails per host"
# However the script ends: its jobs killed, b's links up again.
trap 'kill_jobs; tb link b 0 up; tb link b 1 up' EXIT
dir=$(shared_dir failover)
cd "$dir" || fail "cannot enter $dir"
port=7490

# Everything on both sides lives in the guests' own tmpfs: /tmp/x.
tb on a sh -c 'rm -rf /tmp/x && mkdir -p /tmp/x/src /tmp/x/pulled &&
	head -c 128M /dev/urandom >/tmp/x/src/big && head -c 3M /dev/urandom >/tmp/x/src/mid &&
	for i in 1 2 3 4 5 6 7 8; do head -c 5000 /dev/urandom >/tmp/x/src/small$i; done' ||
	fail "cannot make the source on a"
tb on b sh -c 'rm -rf /tmp/x && mkdir -p /tmp/x/root' || fail "cannot make the root on b"

# 8 MiB of slots per worker: 2 slots on each of its 4 stripes, a window of
# 16 MiB, so chunks are credited all along the copy and the lost rail has
# carried some of them (a window as large as the copy would claim it all
# at once, and a rail could fail with nothing credited on it).
start_server_on b srv --root /tmp/x/root --port $port --buffer-mib 8

# sums HOST DIR: the sha256 of every file beneath DIR, by name.
sums() { tb on "$1" sh -c "cd $2 && sha256sum \$(find . -type f | sort)"; }
src_sums=$(sums a /tmp/x/src) || fail "cannot sum the source"

# started: wait until the server on b logs one more session start than
# before the copy, then let the data run 2.5 s: with start-up about 1 s, the
# loss falls a third or so into the 5 s the 128 MiB take.
sessions() { sessions_of b srv; }
started() {
	wait_session_after b srv "$1"
	sleep 2.5
}

# copy_while_down ARGS...: run the copy on a; once it is under way, take
# rail 1 of b down. Output in copy.out, copy.err; status in $rc.
copy_while_down() {
	_n=$(sessions)
	spawn_on a cp "$RAILCP" "$@"
	started "$_n"
	tb link b 1 down || fail "tb link b 1 down failed"
	tb wait a cp 240
	rc=$?
	cp "$(job_file a cp out)" copy.out
	cp "$(job_file a cp err)" copy.err
	tb link b 1 up || fail "tb link b 1 up failed"
	wait_active b 1
}

# wait_active HOST RAIL: its rxe port is ACTIVE again (at most 20 s).
wait_active() {
	tb on "$1" sh -c "for i in \$(seq 200); do grep -q ACTIVE /sys/class/infiniband/rxe$2/ports/1/state && exit 0; sleep 0.1; done; exit 1" ||
		fail "rxe$2 on $1 did not come back ACTIVE"
}

# check_failed_json FILE TOTAL: rxe1:1 failed mid-copy, rxe0:1 carried the rest.
check_failed_json() {
	/usr/bin/python3 - "$1" "$2" <<'PY' || fail "the copy's JSON does not show the failover: $(cat "$1")"
import json, sys
doc = json.load(open(sys.argv[1]))
total = int(sys.argv[2])
rails = {r["name"]: r for r in doc["rails"]}
assert doc["failover"] is True and doc["rails_failed"] == 1, doc
r0, r1 = rails["rxe0:1"], rails["rxe1:1"]
assert r1["failed"] is True and r1["failed_after_s"] > 0, r1
assert "error" in r1 and r1["error"], r1
assert r0["failed"] is False, r0
assert 0 < r1["bytes"] < total, "rail 1 carried %d of %d bytes: not a mid-copy loss" % (r1["bytes"], total)
assert r0["bytes"] + r1["bytes"] == total == doc["bytes"], (r0["bytes"], r1["bytes"], total, doc["bytes"])
print("rxe1:1 failed after %.1f s having carried %d bytes (%s); rxe0:1 carried %d" %
      (r1["failed_after_s"], r1["bytes"], r1["error"], r0["bytes"]))
PY
}
total=$((128 * 1048576 + 3 * 1048576 + 8 * 5000))

# Push with rail 1 of b pulled a third or so into the copy.
copy_while_down -r --json /tmp/x/src/ b:pushed --port $port
[ "$rc" -eq 0 ] || fail "the push with a rail lost failed ($rc): $(cat copy.err)"
check_failed_json copy.out $total
[ "$(sums b /tmp/x/root/pushed)" = "$src_sums" ] || fail "the pushed tree differs from the source"
tb on b sh -c '! find /tmp/x/root -name ".railcp-tmp-*" | grep -q .' || fail "temporaries left on b"

# Pull with rail 1 of b pulled likewise: the server is the sender now.
copy_while_down -r --json b:pushed/ /tmp/x/pulled/p --port $port
[ "$rc" -eq 0 ] || fail "the pull with a rail lost failed ($rc): $(cat copy.err)"
check_failed_json copy.out $total
[ "$(sums a /tmp/x/pulled/p)" = "$src_sums" ] || fail "the pulled tree differs from the source"

# --no-failover: the same loss fails the copy, with one sentence.
copy_while_down -r --no-failover /tmp/x/src/ b:nofail --port $port
err=$(cat copy.err)
expect_one_line_error "a push with --no-failover that lost a rail"
# The server's session ends a little after the client: it may wait up to
# ENG_PEER_REASON_MS (3 s) for the client's reason before it cleans up.
wait_until 15 tb on b sh -c '! find /tmp/x/root -name ".railcp-tmp-*" | grep -q .' ||
	fail "temporaries left on b 15 s after a copy with --no-failover failed"

# Both links down, --transport rdma: one sentence within the retry timeout
# + 2 s (the kernel's RoCE ACK timeout is 4.096 us x 2^17 = 0.54 s, retried
# 7 times: 4.3 s), no final-named file, no temporary, and the server serves
# on. (On auto the copy would go on over tcp: below.)
n=$(sessions)
spawn_on a cp "$RAILCP" -r --transport rdma /tmp/x/src/ b:both --port $port
started "$n"
down_ns=$(date +%s%N)
tb link b 0 down && tb link b 1 down || fail "cannot take b's links down"
tb wait a cp 60
rc=$?
end_ms=$((($(date +%s%N) - down_ns) / 1000000))
err=$(cat "$(job_file a cp err)")
tb link b 0 up && tb link b 1 up || fail "cannot bring b's links up"
wait_active b 0
wait_active b 1
expect_one_line_error "a push that lost both rails"
echo "both rails down: the copy failed $end_ms ms after the links went down: $err"
[ "$end_ms" -le 6300 ] || fail "the copy took $end_ms ms to fail after both links went down (limit 6.3 s)"
tb on b sh -c 'test ! -e /tmp/x/root/both/big' || fail "a partial big exists under its final name"
wait_until 15 tb on b sh -c '! find /tmp/x/root -name ".railcp-tmp-*" | grep -q .' ||
	fail "temporaries left on b 15 s after both rails failed"
tb kill b srv 0 || fail "the server on b died: $(tail -n 3 "$(job_file b srv err)")"
tb on a "$RAILCP" -q /tmp/x/src/mid b:after --port $port || fail "the server does not serve after both rails failed"

# Both links down on auto: the copy goes on over tcp, on the management
# link (b's IPv4 interfaces below: the rails' own, down, are left out at
# the tcp session's set-up after --connect-timeout each). Two stripes per
# rail: the server's 8 MiB of slots per worker then hold the tcp plan's,
# whose worker on node 0 drives two interfaces. 64 MiB, the links pulled
# 1.5 s after the session's start: tcp between the guests, keyed and so
# sealed, moves a few MiB/s under QEMU, so a smaller copy keeps this short.
tb on b ip -4 -o addr show
tb on a sh -c 'mkdir -p /tmp/x/fbsrc && head -c 64M /tmp/x/src/big >/tmp/x/fbsrc/big &&
	cp /tmp/x/src/mid /tmp/x/src/small1 /tmp/x/fbsrc/' || fail "cannot make the fallback's source on a"
fb_sums=$(sums a /tmp/x/fbsrc) || fail "cannot sum the fallback's source"
fb_total=$((64 * 1048576 + 3 * 1048576 + 5000))
n=$(sessions)
spawn_on a cp "$RAILCP" -r --json --qps-per-rail 2 --connect-timeout 1 /tmp/x/fbsrc/ b:fellback --port $port
wait_session_after b srv "$n"
sleep 1.5
tb link b 0 down && tb link b 1 down || fail "cannot take b's links down"
fb_ns=$(date +%s%N)
tb wait a cp 120
rc=$?
fb_ms=$((($(date +%s%N) - fb_ns) / 1000000))
cp "$(job_file a cp out)" fellback.out
cp "$(job_file a cp err)" fellback.err
tb link b 0 up && tb link b 1 up || fail "cannot bring b's links up"
[ "$rc" -eq 0 ] || fail "the copy on auto that lost both rails did not go on over tcp ($rc): $(cat fellback.err)"
grep -q "every RDMA rail failed after .* MiB: going on over tcp (--transport auto)" fellback.err ||
	fail "the copy did not say it went on over tcp: $(cat fellback.err)"
/usr/bin/python3 - fellback.out "$fb_total" <<'PY' || fail "the copy's JSON does not show the fallback: $(cat fellback.out)"
import json, sys
doc = json.load(open(sys.argv[1]))
total = int(sys.argv[2])
fb = doc["fallback"]
assert doc["transport"] == "tcp" and fb["from"] == "rdma", doc
assert 0 < fb["bytes"] < total and "every rail failed" in fb["error"], fb
assert doc["bytes_kept"] > 0 and doc["bytes"] - fb["bytes"] < total, doc
print("both rails down on auto: rdma carried %d bytes, tcp %d, %d kept (%s)" %
      (fb["bytes"], doc["bytes"] - fb["bytes"], doc["bytes_kept"], fb["error"]))
PY
echo "the copy went on over tcp and ended $fb_ms ms after the links went down"
[ "$(sums b /tmp/x/root/fellback)" = "$fb_sums" ] || fail "the tree that went on over tcp differs from the source"
tb on b sh -c '! find /tmp/x/root -name ".railcp-tmp-*" | grep -q .' || fail "temporaries left on b after the fallback"
wait_active b 0
wait_active b 1

# A copy that starts while rail 1 of b is down goes without it and says so.
tb link b 1 down || fail "tb link b 1 down failed"
tb on a "$RAILCP" -r --json /tmp/x/src/ b:downstart --port $port >start.out 2>start.err
rc=$?
tb link b 1 up || fail "tb link b 1 up failed"
[ "$rc" -eq 0 ] || fail "a copy started with rail 1 of b down failed: $(cat start.err)"
grep -q "rxe1:1: the server has no ACTIVE rail on its subnet" start.err ||
	fail "the copy did not say it went without rxe1:1: $(cat start.err)"
/usr/bin/python3 -c '
import json, sys
rails = {r["name"]: r for r in json.load(open("start.out"))["rails"]}
assert rails["rxe1:1"]["bytes"] == 0 and rails["rxe0:1"]["bytes"] == int(sys.argv[1]), rails
' $total || fail "rail 1 carried data while down: $(cat start.out)"
[ "$(sums b /tmp/x/root/downstart)" = "$src_sums" ] || fail "the tree copied without rail 1 differs"
wait_active b 1

# Rail 1 is ACTIVE again: the next copy uses it.
tb on a "$RAILCP" -r --json /tmp/x/src/ b:back --port $port >back.out 2>back.err ||
	fail "a copy after rail 1 came back failed: $(cat back.err)"
/usr/bin/python3 -c '
import json
doc = json.load(open("back.out"))
rails = {r["name"]: r for r in doc["rails"]}
assert doc["rails_failed"] == 0 and rails["rxe1:1"]["bytes"] > 0, rails
print("after rail 1 came back: rxe1:1 carried %d bytes" % rails["rxe1:1"]["bytes"])
' || fail "the copy after rail 1 came back did not use it: $(cat back.out)"

stop_server_on b srv
tb on a rm -rf /tmp/x
tb on b rm -rf /tmp/x
exit 0
