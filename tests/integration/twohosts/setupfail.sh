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
# Then the server serves a clean push, both rails connected.
. tests/integration/lib.sh
need_two_hosts
[ "${TESTBED_RAILS:-0}" -ge 2 ] || skip "needs two rails per host"
shim=$(cd "$(dirname "$RAILCP")" && pwd)/tests/libverbs_fail.so
[ -e "$shim" ] || skip "no verbs shim at $shim (scons builds it with the tests)"
dir=$(shared_dir setupfail)
cd "$dir" || fail "cannot enter $dir"
port=7496
ct=3 # --connect-timeout of these copies

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
start_server_on b srv --root /tmp/f/root --port $port --connect-timeout $ct
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

# left_out JSON MIN: rxe1:1 has at least MIN stripes left out at set-up,
# rxe0:1 none; prints why rxe1:1 was.
left_out() {
	/usr/bin/python3 - "$1" "$2" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
rails = {r["name"]: r for r in doc["rails"]}
r1, r0 = rails["rxe1:1"], rails["rxe0:1"]
assert r1["stripes_left_out"] >= int(sys.argv[2]) and r1["left_out_error"], rails
assert r0["stripes_left_out"] == 0 and not r0["left_out"] and r0["bytes"] > 0, rails
print(r1["left_out_error"])
PY
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
tb on b tc qdisc del dev "$nic_b" root || fail "cannot remove netem on b"

# ---- 2. b's link of rail 1 pulled while a's client connects its stripes
# held NAME ARGS...: railcp ARGS on a, held at its 4th rdma_connect (rail
# 1's second stripe, with 2 QPs per rail) while b's rail 1 link goes down.
held() {
	_name=$1
	shift
	rm -f "$dir/$_name.go" "$dir/$_name.go.held"
	spawn_on a "$_name" env LD_PRELOAD="$shim" RAILCP_VERBS_HOLD="rdma_connect:4:$dir/$_name.go" \
		"$RAILCP" --port $port --json --qps-per-rail 2 --connect-timeout $ct "$@"
	wait_for_file "$dir/$_name.go.held" 60 || fail "$_name: the client never reached its 4th rdma_connect"
	tb link b 1 down || fail "tb link b 1 down failed"
	wait_port_b DOWN
	touch "$dir/$_name.go"
	tb wait a "$_name" 120
	rc=$?
	cp "$(job_file a "$_name" out)" "$_name.out"
	cp "$(job_file a "$_name" err)" "$_name.err"
	tb link b 1 up || fail "tb link b 1 up failed"
	wait_port_b ACTIVE
}
held hpush /tmp/f/src b:held
[ "$rc" -eq 0 ] || fail "a push whose rail 1 went down during set-up failed: $(cat hpush.err)"
[ "$(sum b /tmp/f/root/held)" = "$src" ] || fail "the push whose rail 1 went down during set-up differs"
hwhy=$(left_out hpush.out 1) || fail "the held push's JSON does not name rail 1 left out: $(cat hpush.out)"
held hpull b:p /tmp/f/back/held
[ "$rc" -eq 0 ] || fail "a pull whose rail 1 went down during set-up failed: $(cat hpull.err)"
[ "$(sum a /tmp/f/back/held)" = "$psrc" ] || fail "the pull whose rail 1 went down during set-up differs"
left_out hpull.out 1 >/dev/null || fail "the held pull's JSON does not name rail 1 left out: $(cat hpull.out)"

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
echo "rail 1 black-holed: push $push_hole s (rail 0 alone $push_one s), pull $pull_hole s (alone $pull_one s), left out: $why; link pulled during set-up: $hwhy"
