# Rails that fail while a session connects its stripes, across two hosts
# (failover at set-up, --connect-timeout):
# 1. A path that drops everything on rail 1 with both ports ACTIVE (a netem
#    qdisc, 100% loss, on b's end) before the copy: a push and a pull
#    complete over rail 0, identical, --json names rxe1:1 left out at
#    set-up with its cause, each within the time the same copy takes over
#    rail 0 alone, plus the connect timeout (3 s), plus 2 s.
# 2. b's link of rail 1 pulled during set-up: the client is held (the
#    verbs shim) at its second rdma_connect on rail 1, its first connected,
#    the cable pulled, the client let go: a push and a pull complete,
#    identical, with rail 1's second stripe left out at set-up.
# 3. The same with the client held at rail 1's first rdma_establish (the
#    server has answered it): the server gives that stripe up after its
#    --connect-timeout ("accepted, but not established"), a push and a pull
#    complete, identical, both stripes of rail 1 left out at set-up and
#    neither counted as failed mid-copy (the client had connected the
#    first: the server's "lost" frame says "setup").
# 4. The server held (the shim in b's server) before its rdma_accept of rail
#    1's first stripe while the link is pulled: a push, then a pull (a second
#    server), complete, identical, rail 1 left out; each server's next
#    session has that rdma_accept fail, so it rejects rail 1's connection: a
#    pull and a bench complete over rail 0 with rail 1 left out (REJECTED);
#    each server then stops cleanly.
# 5. A server of one rail (serve --rails rxe0:1): a push and a bench of a's
#    two rails pair what they can, rail 1 left out at set-up, the push
#    identical. (The server has no rail on rail 1's subnet, so it pairs
#    those stripes with its rail 0, as for a routed fabric: on the
#    testbed's unrouted rails they wait out the connect timeout.)
# 1 also runs a bench with rail 1 black-holed: it goes on over rail 0 and
# names rail 1 left out. Then the first server serves a clean push, both
# rails connected.
. tests/integration/lib.sh
need_two_hosts
[ "${TESTBED_RAILS:-0}" -ge 2 ] || skip "needs two rails per host"
shim=$(cd "$(dirname "$RAILCP")" && pwd)/tests/libverbs_fail.so
[ -e "$shim" ] || skip "no verbs shim at $shim (scons builds it with the tests)"
dir=$(shared_dir setupfail)
cd "$dir" || fail "cannot enter $dir"
port=7496
ct=3 # --connect-timeout of these copies
est="accepted, but not established within $ct s" # the server's cause in 3.

nic_b=$(tb on b cat /sys/class/infiniband/rxe1/parent) && [ -n "$nic_b" ] ||
	fail "no network device under rxe1 on b"
# However the script ends: its jobs killed, rail 1 of b as it was.
trap 'kill_jobs; tb on b tc qdisc del dev "$nic_b" root 2>/dev/null; tb link b 1 up' EXIT

# Wait up to 10 s for b's rxe1 port to be in state $1 (a pattern).
wait_port_b() {
	wait_until 10 tb on b grep -q "$1" /sys/class/infiniband/rxe1/ports/1/state ||
		fail "rxe1 on b is not $1: $(tb on b cat /sys/class/infiniband/rxe1/ports/1/state)"
}

tb on a sh -c 'rm -rf /tmp/f && mkdir -p /tmp/f/back && head -c 16M /dev/urandom >/tmp/f/src' ||
	fail "cannot make the source on a"
tb on b sh -c 'rm -rf /tmp/f && mkdir -p /tmp/f/root && head -c 16M /dev/urandom >/tmp/f/root/p' ||
	fail "cannot make the root on b"
# A freshly booted pair may leave a rail's first ARP unanswered for
# seconds (seen: the first copy after boot had rail 0's address unresolved
# within 10 s): wait until a reaches b on each rail (a TCP connect refused),
# so that only the faults made here leave a rail out.
reach() {
	tb on a python3 -c 'import socket, sys
s = socket.socket()
s.settimeout(1)
sys.exit(s.connect_ex((sys.argv[1], 9)) != 111)' "$1"
}
wait_until 30 reach 198.18.0.2 && wait_until 30 reach 198.18.1.2 || fail "a does not reach b over its rails"
start_server_on b srv -v --root /tmp/f/root --port $port --connect-timeout $ct
sum() { tb on "$1" sha256sum "$2" | cut -d' ' -f1; }
src=$(sum a /tmp/f/src) && psrc=$(sum b /tmp/f/root/p) || fail "cannot sum the sources"

# timed NAME ARGS...: railcp ARGS on a, its output in NAME.out and NAME.err,
# its status in $rc and its wall time (s) in $secs.
timed() {
	_name=$1
	shift
	_t0=$(date +%s%N)
	tb on a "$RAILCP" --port $port "$@" >"$_name.out" 2>"$_name.err"
	rc=$?
	secs=$(awk -v ms="$(( ($(date +%s%N) - _t0) / 1000000 ))" 'BEGIN { printf "%.1f", ms / 1000 }')
}

# left_out JSON MIN [TEXT]: rxe1:1 has at least MIN stripes left out at
# set-up, rxe0:1 none; with TEXT, rxe1:1's causes include it; prints why
# rxe1:1 was left out. all_out JSON: every stripe of rxe1:1 left out at
# set-up and none failed mid-copy (one the server gave up while the client
# had connected it included).
left_out() {
	/usr/bin/python3 - "$@" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
rails = {r["name"]: r for r in doc["rails"]}
r1, r0 = rails["rxe1:1"], rails["rxe0:1"]
assert r1["stripes_left_out"] >= int(sys.argv[2]) and r1["left_out_error"], rails
assert r0["stripes_left_out"] == 0 and not r0["left_out"] and r0["bytes"] > 0, rails
text = sys.argv[3] if len(sys.argv) > 3 else ""
assert text in r1["left_out_error"] or text in r1.get("error", ""), (text, r1)
print(r1["left_out_error"] + ("; error: " + r1["error"] if r1.get("error") else ""))
PY
}
all_out() {
	/usr/bin/python3 - "$1" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
r1 = {r["name"]: r for r in doc["rails"]}["rxe1:1"]
assert r1["left_out"] and r1["stripes_left_out"] == r1["stripes"], r1
assert r1["stripes_failed"] == 0 and not r1["failed"] and doc["rails_failed"] == 0, r1
PY
}

# b's link of rail 1 down (wait for the port to say so), then up again.
link_down() {
	tb link b 1 down || fail "tb link b 1 down failed"
	wait_port_b DOWN
}
link_up() {
	tb link b 1 up || fail "tb link b 1 up failed"
	wait_port_b ACTIVE
}

# let_go NAME GO: the held side let go (GO made), then wait for the copy,
# job NAME on a: its output in NAME.out and NAME.err, its status in $rc;
# then b's link of rail 1 up again.
let_go() {
	touch "$2"
	tb wait a "$1" 120
	rc=$?
	cp "$(job_file a "$1" out)" "$1.out"
	cp "$(job_file a "$1" err)" "$1.err"
	link_up
}

# held NAME CALL:N THEN ARGS...: railcp ARGS on a, held at its N-th CALL
# (with 2 QPs per rail, rail 1's stripes are the 3rd and 4th) while b's
# rail 1 link goes down; then THEN runs (a command, or true) and the client
# is let go.
held() {
	_name=$1 _at=$2 _then=$3
	shift 3
	rm -f "$dir/$_name.go" "$dir/$_name.go.held"
	spawn_on a "$_name" env LD_PRELOAD="$shim" RAILCP_VERBS_HOLD="$_at:$dir/$_name.go" \
		"$RAILCP" --port $port --json --qps-per-rail 2 --connect-timeout $ct "$@"
	wait_for_file "$dir/$_name.go.held" 60 || fail "$_name: the client never reached its $_at"
	link_down
	$_then
	let_go "$_name" "$dir/$_name.go"
}

# gave_up N: wait until the server has given up N stripes at set-up for not
# being established (its log, -v).
gave_up() {
	wait_until 20 sh -c "[ \$(grep -c 'left out at set-up: $est' \
		'$(job_file b srv err)') -ge $1 ]" ||
		fail "the server did not give up an unestablished stripe: $(tail -n 5 "$(job_file b srv err)")"
}

# shimmed_server NAME PORT: a server on b with the shim: its 3rd
# rdma_accept held until $dir/NAME.go, its 6th failing (the next
# session's rail 1).
shimmed_server() {
	rm -f "$dir/$1.go" "$dir/$1.go.held"
	spawn_on b "$1" env LD_PRELOAD="$shim" RAILCP_VERBS_HOLD="rdma_accept:3:$dir/$1.go" \
		RAILCP_VERBS_FAIL=rdma_accept:6 "$RAILCP" serve -v --root /tmp/f/root --port "$2" \
		--connect-timeout $ct
	wait_for_line "serving on " 60 "$(job_file b "$1" err)" ||
		fail "the shimmed server on b did not start: $(cat "$(job_file b "$1" err)")"
}

# server_held NAME PORT ARGS...: railcp ARGS on a as job NAME, to the
# shimmed server of that port, named sNAME, held at its rdma_accept while
# b's link of rail 1 goes down.
server_held() {
	_name=$1 _p=$2
	shift 2
	spawn_on a "$_name" "$RAILCP" --port "$_p" --json --qps-per-rail 2 --connect-timeout $ct "$@"
	wait_for_file "$dir/s$_name.go.held" 60 || fail "$_name: the server never reached its 3rd rdma_accept"
	link_down
	let_go "$_name" "$dir/s$_name.go"
}

# ---- the time of each copy over rail 0 alone
timed one --rails rxe0:1 -q /tmp/f/src b:one
[ "$rc" -eq 0 ] || fail "a push over rail 0 alone failed: $(cat one.err)"
push_one=$secs
timed pone --rails rxe0:1 -q b:p /tmp/f/back/pone
[ "$rc" -eq 0 ] || fail "a pull over rail 0 alone failed: $(cat pone.err)"
pull_one=$secs

# ---- 1. rail 1 drops everything before the copy, both ports ACTIVE
tb on b tc qdisc add dev "$nic_b" root netem loss 100% || fail "cannot add netem on b's $nic_b"
timed push --json --connect-timeout $ct /tmp/f/src b:hole
[ "$rc" -eq 0 ] || fail "a push with rail 1 black-holed failed after $secs s: $(cat push.err)"
[ "$(sum b /tmp/f/root/hole)" = "$src" ] || fail "the push with rail 1 black-holed differs"
why=$(left_out push.out 1) || fail "the push's JSON does not name rail 1 left out: $(cat push.out)"
grep -q "railcp: rail rxe1:1 left out: " push.err || fail "a did not name rail 1 left out: $(cat push.err)"
awk -v t="$secs" -v one="$push_one" -v ct=$ct 'BEGIN { exit !(t <= one + ct + 2) }' ||
	fail "the push with rail 1 black-holed took $secs s; over rail 0 alone $push_one s"
push_hole=$secs
timed pull --json --connect-timeout $ct b:p /tmp/f/back/hole
[ "$rc" -eq 0 ] || fail "a pull with rail 1 black-holed failed after $secs s: $(cat pull.err)"
[ "$(sum a /tmp/f/back/hole)" = "$psrc" ] || fail "the pull with rail 1 black-holed differs"
left_out pull.out 1 >/dev/null || fail "the pull's JSON does not name rail 1 left out: $(cat pull.out)"
awk -v t="$secs" -v one="$pull_one" -v ct=$ct 'BEGIN { exit !(t <= one + ct + 2) }' ||
	fail "the pull with rail 1 black-holed took $secs s; over rail 0 alone $pull_one s"
pull_hole=$secs
_t0=$(date +%s%N)
tb on a "$RAILCP" bench b:$port --json --bytes 16M --connect-timeout $ct >bench.out 2>bench.err
rc=$?
secs=$(( ($(date +%s%N) - _t0) / 1000000 ))
[ "$rc" -eq 0 ] || fail "a bench with rail 1 black-holed failed after $secs s: $(cat bench.err)"
grep -q "railcp: rail rxe1:1 left out: " bench.err || fail "the bench did not name rail 1 left out: $(cat bench.err)"
left_out bench.out 1 >/dev/null || fail "the bench's JSON does not name rail 1 left out: $(cat bench.out)"
bench_hole=$secs
tb on b tc qdisc del dev "$nic_b" root || fail "cannot remove netem on b"

# ---- 2. b's link of rail 1 pulled while a's client connects its stripes
held hpush rdma_connect:4 true /tmp/f/src b:held
[ "$rc" -eq 0 ] || fail "a push whose rail 1 went down during set-up failed: $(cat hpush.err)"
[ "$(sum b /tmp/f/root/held)" = "$src" ] || fail "the push whose rail 1 went down during set-up differs"
hwhy=$(left_out hpush.out 1) || fail "the held push's JSON does not name rail 1 left out: $(cat hpush.out)"
held hpull rdma_connect:4 true b:p /tmp/f/back/held
[ "$rc" -eq 0 ] || fail "a pull whose rail 1 went down during set-up failed: $(cat hpull.err)"
[ "$(sum a /tmp/f/back/held)" = "$psrc" ] || fail "the pull whose rail 1 went down during set-up differs"
left_out hpull.out 1 >/dev/null || fail "the held pull's JSON does not name rail 1 left out: $(cat hpull.out)"

# ---- 3. the client held at rail 1's first rdma_establish, the server's
# answer sent: the server gives the stripe up after its connect timeout,
# and tells the client. (The client, whose side of that stripe had
# connected, counts it failed at the start of the copy, not left out: its
# JSON has the server's cause as the rail's error.)
held epush rdma_establish:3 "gave_up 1" /tmp/f/src b:est
[ "$rc" -eq 0 ] || fail "a push held at rail 1's rdma_establish failed: $(cat epush.err)"
[ "$(sum b /tmp/f/root/est)" = "$src" ] || fail "the push held at rail 1's rdma_establish differs"
ewhy=$(left_out epush.out 1) && all_out epush.out ||
	fail "the push held at rdma_establish: rail 1 not left out at set-up: $(cat epush.out)"
held epull rdma_establish:3 "gave_up 2" b:p /tmp/f/back/est
[ "$rc" -eq 0 ] || fail "a pull held at rail 1's rdma_establish failed: $(cat epull.err)"
[ "$(sum a /tmp/f/back/est)" = "$psrc" ] || fail "the pull held at rail 1's rdma_establish differs"
left_out epull.out 1 >/dev/null && all_out epull.out ||
	fail "the pull held at rdma_establish: rail 1 not left out at set-up: $(cat epull.out)"

# ---- 4. the server held before its rdma_accept of rail 1's first stripe
# while the link is pulled; its next session has that rdma_accept fail.
shimmed_server sapush $((port + 1))
server_held apush $((port + 1)) /tmp/f/src b:acc
[ "$rc" -eq 0 ] || fail "a push whose server was held at rail 1's rdma_accept failed: $(cat apush.err)"
[ "$(sum b /tmp/f/root/acc)" = "$src" ] || fail "the push whose server was held at rdma_accept differs"
awhy=$(left_out apush.out 1) || fail "the push held at rdma_accept: rail 1 not left out: $(cat apush.out)"
tb on a "$RAILCP" --port $((port + 1)) --json --qps-per-rail 2 b:p /tmp/f/back/rej >rpull.out 2>rpull.err ||
	fail "a pull whose rail 1 was rejected failed: $(cat rpull.err)"
[ "$(sum a /tmp/f/back/rej)" = "$psrc" ] || fail "the pull whose rail 1 was rejected differs"
rwhy=$(left_out rpull.out 2) || fail "the pull whose rail 1 was rejected: not left out: $(cat rpull.out)"
case $rwhy in *REJECTED*) ;; *) fail "the pull's rail 1 was left out, but not as rejected: $rwhy" ;; esac
stop_server_on b sapush
shimmed_server sapull $((port + 2))
server_held apull $((port + 2)) b:p /tmp/f/back/acc
[ "$rc" -eq 0 ] || fail "a pull whose server was held at rail 1's rdma_accept failed: $(cat apull.err)"
[ "$(sum a /tmp/f/back/acc)" = "$psrc" ] || fail "the pull whose server was held at rdma_accept differs"
left_out apull.out 1 >/dev/null || fail "the pull held at rdma_accept: rail 1 not left out: $(cat apull.out)"
tb on a "$RAILCP" bench b:$((port + 2)) --json --bytes 16M --qps-per-rail 2 >rbench.out 2>rbench.err ||
	fail "a bench whose rail 1 was rejected failed: $(cat rbench.err)"
bwhy=$(left_out rbench.out 2) || fail "the bench whose rail 1 was rejected: not left out: $(cat rbench.out)"
grep -q "railcp: rail rxe1:1 left out: .*REJECTED" rbench.err ||
	fail "the bench did not name rail 1 rejected: $(cat rbench.err)"
case $bwhy in *REJECTED*) ;; *) fail "the bench's rail 1 was left out, but not as rejected: $bwhy" ;; esac
stop_server_on b sapull

# ---- 5. a server with fewer rails than the client
start_server_on b one -v --root /tmp/f/root --port $((port + 3)) --rails rxe0:1
tb on a "$RAILCP" --port $((port + 3)) --json --connect-timeout $ct /tmp/f/src b:few >few.out 2>few.err ||
	fail "a push to a server of one rail failed: $(cat few.err)"
[ "$(sum b /tmp/f/root/few)" = "$src" ] || fail "the push to a server of one rail differs"
fwhy=$(left_out few.out 1) ||
	fail "the push to a server of one rail: rail 1 not left out: $(cat few.out)"
tb on a "$RAILCP" bench b:$((port + 3)) --json --bytes 16M --connect-timeout $ct >fbench.out 2>fbench.err ||
	fail "a bench with a server of one rail failed: $(cat fbench.err)"
left_out fbench.out 1 >/dev/null ||
	fail "the bench with a server of one rail: rail 1 not left out: $(cat fbench.out)"
stop_server_on b one

# ---- the server serves the next copy, over both rails
timed clean --json /tmp/f/src b:clean
[ "$rc" -eq 0 ] || fail "a clean push after the faults failed: $(cat clean.err)"
[ "$(sum b /tmp/f/root/clean)" = "$src" ] || fail "the clean push differs"
# (Both rails connected; which carried the 16 chunks is the workers' race.)
/usr/bin/python3 - clean.out <<'PY' || fail "the clean push did not connect both rails: $(cat clean.out)"
import json, sys
doc = json.load(open(sys.argv[1]))
assert doc["rails_left_out"] == 0 and doc["rails_failed"] == 0, doc
assert len(doc["rails"]) == 2, doc["rails"]
assert all(r["stripes"] == 4 and r["stripes_left_out"] == 0 for r in doc["rails"]), doc["rails"]
PY
echo "rail 1 black-holed: push $push_hole s (rail 0 alone $push_one s), pull $pull_hole s (alone $pull_one s), bench $bench_hole ms, left out: $why"
echo "link pulled, client held at its 4th rdma_connect: $hwhy"
echo "client held at rail 1's rdma_establish: $ewhy"
echo "server held at rail 1's rdma_accept: $awhy"
echo "rail 1 rejected by the server: $rwhy"
echo "a server of one rail: $fwhy"
