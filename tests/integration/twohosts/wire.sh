# Each rail's own counters in bench's --json, across two hosts: with a
# netem loss of 0.2% of the full-size frames a sends on rail 1 (the data;
# rdma_cm's smaller frames pass, since a rail that fails while it connects
# still fails the run), a's rxe1 reports the retransmits and sequence errors
# the loss caused among its hw_counters, and each rail's wire bytes (the
# netdev's, on Soft-RoCE) cover at least its payload.
. tests/integration/lib.sh
need_two_hosts
[ "${TESTBED_RAILS:-0}" -ge 2 ] || skip "needs two rails per host"
port=7517
nic_a=$(tb on a sh -c "rdma link show rxe1/1 | sed -n 's/.* netdev \([^ ]*\).*/\1/p'") && [ -n "$nic_a" ] ||
	fail "no network device under rxe1 on a"
trap 'kill_jobs; tb on a tc qdisc del dev "$nic_a" root 2>/dev/null' EXIT
start_server_on b srv --port $port
# IPv4 total length 1024-2047 (the u32 match on bytes 2-3): frames of a
# 1024-byte RoCE MTU go to the netem band, everything else to prio's usual.
tb on a sh -c "tc qdisc add dev $nic_a root handle 1: prio &&
	tc qdisc add dev $nic_a parent 1:3 handle 30: netem loss 0.2% &&
	tc filter add dev $nic_a parent 1:0 protocol ip u32 match u16 0x0400 0xfc00 at 2 flowid 1:3" ||
	fail "cannot add netem to $nic_a on a"
t0=$(date +%s)
# --chunk 64K: 256 chunks, more than one rail's slots hold (a worker takes
# the next chunk as a slot frees), so a rail whose worker starts late under
# the emulator still carries some; 16 chunks of 1 MiB all went to the first
# rail's 32 slots once, and rail 0's counters had no payload to cover.
capture tb on a "$RAILCP" bench b:$port --bytes 16M --chunk 64K --json
[ "$rc" -eq 0 ] || fail "bench with 0.2% loss on rail 1 exited $rc: $err"
printf '%s\n' "$out" | /usr/bin/python3 -c '
import json, sys
doc = json.load(sys.stdin)
wire = {w["rail"]: w for w in doc["wire"]}
assert sorted(wire) == ["rxe0:1", "rxe1:1"], sorted(wire)
for name, w in sorted(wire.items()):
    assert w["netdev"], w
    assert w["payload_bytes"] > 0 and w["sent_bytes"] >= w["payload_bytes"], w
    assert w["sent_packets"] > 0 and w["received_packets"] > 0, w
    assert w["sent_bytes"] == w["netdev_counters"]["tx_bytes"], w
hw = wire["rxe1:1"]["hw_counters"]
moved = {k: v for k, v in hw.items() if v and ("retry" in k or "seq" in k)}
assert moved, "no retransmit or sequence counter moved on rxe1 with 0.2%% loss: %s" % hw
assert not any(r["failed"] for r in doc["rails"]), doc["rails"]
print("wire: rxe1:1 with 0.2%% loss: %s; rxe0:1 sent %d bytes for %d of payload" %
      (moved, wire["rxe0:1"]["sent_bytes"], wire["rxe0:1"]["payload_bytes"]))
' || fail "bench --json wire: $out"
echo "bench with 0.2% loss on rail 1 took $(($(date +%s) - t0)) s"
tb on a tc qdisc del dev "$nic_a" root || fail "cannot take netem off $nic_a"
stop_server_on b srv
