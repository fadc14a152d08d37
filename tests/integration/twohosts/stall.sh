# A rail that takes nothing while its ports stay up, across two hosts:
# 1. Jumbo frames on one end of rail 1 only (a's network device at MTU
#    9000, so its rxe port's active MTU is 4096; b's stays at 1500, 1024),
#    a common misconfiguration. The ends agree on the smaller MTU when they
#    connect: a push, a pull and a bench complete over both rails, the
#    copies identical, and a says once what differs and what fixes it, and
#    --json has each rail's MTU here and at the peer.
# 2. A path that drops everything on rail 1 while both ports stay ACTIVE (a
#    netem qdisc with 100% loss on b's end, added a second into a push of
#    128 MiB): the push
#    completes on rail 0, identical, and --json names rxe1:1 as failed;
#    within the time the push takes with rail 1 left out, plus the rail
#    stall limit (5 s), plus 3 s.
. tests/integration/lib.sh
need_two_hosts
[ "${TESTBED_RAILS:-0}" -ge 2 ] || skip "needs two rails per host"
dir=$(shared_dir stall)
cd "$dir" || fail "cannot enter $dir"
port=7493

# netdev HOST RAIL: the network device under rxeRAIL on HOST.
netdev() {
	tb on "$1" sh -c "rdma link show rxe$2/1 | sed -n 's/.* netdev \([^ ]*\).*/\1/p'"
}
nic_a=$(netdev a 1) && [ -n "$nic_a" ] || fail "no network device under rxe1 on a"
nic_b=$(netdev b 1) && [ -n "$nic_b" ] || fail "no network device under rxe1 on b"
# However the script ends: its jobs killed, both devices as they were.
trap 'kill_jobs; tb on a ip link set dev "$nic_a" mtu 1500; tb on b tc qdisc del dev "$nic_b" root 2>/dev/null' EXIT

tb on a sh -c 'rm -rf /tmp/s && mkdir -p /tmp/s/src /tmp/s/back && head -c 48M /dev/urandom >/tmp/s/src/big &&
	head -c 128M /dev/urandom >/tmp/s/src/long' ||
	fail "cannot make the source on a"
tb on b sh -c 'rm -rf /tmp/s && mkdir -p /tmp/s/root' || fail "cannot make the root on b"
start_server_on b srv --root /tmp/s/root --port $port
sum() { tb on "$1" sha256sum "$2" | cut -d' ' -f1; }
src=$(sum a /tmp/s/src/big) || fail "cannot sum the source"
long=$(sum a /tmp/s/src/long) || fail "cannot sum the long source"

# timed NAME ARGS...: railcp ARGS on a, its output in NAME.out and NAME.err,
# its status in $rc and its wall time (s) in $secs.
timed() {
	_name=$1
	shift
	_t0=$(date +%s%N)
	tb on a "$RAILCP" "$@" >"$_name.out" 2>"$_name.err"
	rc=$?
	secs=$(( ($(date +%s%N) - _t0) / 1000000 ))
	secs=$(awk -v ms="$secs" 'BEGIN { printf "%.1f", ms / 1000 }')
}

# ---- 1. MTU 9000 on a's end of rail 1
tb on a ip link set dev "$nic_a" mtu 9000 || fail "cannot set $nic_a's MTU on a"
tb on a sh -c 'for i in $(seq 100); do ibv_devinfo -d rxe1 | grep -q "active_mtu:.*4096" && exit 0; sleep 0.1; done; exit 1' ||
	fail "rxe1 on a did not take MTU 4096: $(tb on a ibv_devinfo -d rxe1)"
timed push --port $port --json /tmp/s/src/big b:mtu
[ "$rc" -eq 0 ] || fail "a push with jumbo frames on one end of rail 1 failed ($secs s): $(cat push.err)"
[ "$(sum b /tmp/s/root/mtu)" = "$src" ] || fail "the push with jumbo frames on one end differs"
grep -q "rail rxe1: active MTU 4096 here and 1024 at the peer: its QPs use 1024" push.err ||
	fail "a did not say that rail 1's ends differ: $(cat push.err)"
push_secs=$secs
timed pull --port $port --json b:mtu /tmp/s/back/mtu
[ "$rc" -eq 0 ] || fail "a pull with jumbo frames on one end of rail 1 failed ($secs s): $(cat pull.err)"
[ "$(sum a /tmp/s/back/mtu)" = "$src" ] || fail "the pull with jumbo frames on one end differs"
pull_secs=$secs
timed bench bench "b:$port" --bytes 32M --json
[ "$rc" -eq 0 ] || fail "a bench with jumbo frames on one end of rail 1 failed: $(cat bench.err)"
for f in push.out pull.out bench.out; do
	/usr/bin/python3 - "$f" <<'PY' || fail "$f: rail 1 did not carry its share: $(cat "$f")"
import json, sys
doc = json.load(open(sys.argv[1]))
rails = {r["name"]: r for r in doc["rails"]}
assert not rails["rxe1:1"]["failed"] and rails["rxe1:1"]["bytes"] > 0, rails
assert rails["rxe1:1"]["mtu"] == 4096 and rails["rxe1:1"]["peer_mtu"] == 1024, rails
assert rails["rxe0:1"]["mtu"] == rails["rxe0:1"]["peer_mtu"], rails
PY
done
tb on a ip link set dev "$nic_a" mtu 1500 || fail "cannot reset $nic_a's MTU on a"

# ---- 2. rail 1 drops everything mid-push, both ports ACTIVE
timed one --port $port --rails rxe0:1 -q /tmp/s/src/long b:one
[ "$rc" -eq 0 ] || fail "a push over rail 0 alone failed: $(cat one.err)"
one_secs=$secs
n=$(sessions_of b srv)
spawn_on a cp "$RAILCP" --port $port --json /tmp/s/src/long b:silent
_t0=$(date +%s%N)
wait_session_after b srv "$n"
sleep 1
tb on b tc qdisc add dev "$nic_b" root netem loss 100% || fail "cannot add netem on b's $nic_b"
tb wait a cp 120
rc=$?
secs=$(awk -v ms="$(( ($(date +%s%N) - _t0) / 1000000 ))" 'BEGIN { printf "%.1f", ms / 1000 }')
tb on b tc qdisc del dev "$nic_b" root
cp "$(job_file a cp out)" silent.out
cp "$(job_file a cp err)" silent.err
[ "$rc" -eq 0 ] || fail "a push whose rail 1 went silent failed after $secs s: $(cat silent.err)"
[ "$(sum b /tmp/s/root/silent)" = "$long" ] || fail "the push whose rail 1 went silent differs"
why=$(
	/usr/bin/python3 - silent.out <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
rails = {r["name"]: r for r in doc["rails"]}
assert rails["rxe1:1"]["failed"] and not rails["rxe0:1"]["failed"], rails
print(rails["rxe1:1"]["error"])
PY
) || fail "the push's JSON does not name rail 1 as failed: $(cat silent.out)"
awk -v t="$secs" -v one="$one_secs" 'BEGIN { exit !(t <= one + 5 + 3) }' ||
	fail "the push whose rail 1 went silent took $secs s; over rail 0 alone it takes $one_secs s"
echo "jumbo frames on one end: push $push_secs s, pull $pull_secs s, both rails used; rail 1 silent mid-push: $secs s (rail 0 alone: $one_secs s), rxe1:1 failed: $why"
