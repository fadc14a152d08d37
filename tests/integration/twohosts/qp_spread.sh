# Several QPs per rail spread a run's chunks over several paths on RoCE
# (issue 26 item 3): a bench of 64 MiB from a to b with 4 QPs per rail
# (the credit window of 8 stripes of 8 slots: a smaller run may not reach
# every stripe),
# while b reads every RoCE v2 frame (UDP port 4791) arriving on rail 0's
# netdev from a raw socket. The RDMA writes arrive on 4 queue pairs of b,
# each carrying at least an eighth of that rail's write payload, and each
# queue pair's frames come from a UDP source port of its own (rxe draws it
# from a hash of the QP number, as RoCE NICs do): what an ECMP
# switch hashes, so the 4 stripes of a rail can take 4 paths.
. tests/integration/lib.sh
need_two_hosts
[ "${TESTBED_RAILS:-0}" -ge 2 ] || skip "needs two rails per host"
dir=$(shared_dir qp_spread)
cd "$dir" || fail "cannot enter $dir"
port=7518
nic_b=$(tb on b cat /sys/class/infiniband/rxe0/parent) && [ -n "$nic_b" ] ||
	fail "no network device under rxe0 on b"

# The sniffer: every RoCE v2 frame on the netdev until the stop file exists
# (60 s at most); for each destination QP of an RDMA WRITE (opcodes 6-11,
# their payload after the 12-byte BTH and, on a first or only one, the
# 16-byte RETH), its UDP source ports, frames and payload bytes, as JSON.
cat >sniff.py <<'PY'
import json, os, socket, struct, sys, time
nic, stop, out = sys.argv[1:4]
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0800))
s.setsockopt(socket.SOL_SOCKET, 33, 256 << 20)  # SO_RCVBUFFORCE (root: past rmem_max)
s.bind((nic, 0))
s.settimeout(0.2)
open(out + ".ready", "w").close()
qps, end, drain = {}, time.time() + 60, False
while time.time() < end:
    try:
        f = s.recv(65535)
    except (socket.timeout, BlockingIOError):
        if drain:
            break
        if os.path.exists(stop):  # what the queue holds yet, then the end
            s.setblocking(False)
            drain = True
        continue
    ihl = (f[14] & 0x0f) * 4
    if f[23] != 17:
        continue
    u = 14 + ihl
    sport, dport, ulen = struct.unpack("!HHH", f[u:u + 6])
    if dport != 4791:
        continue
    bth = u + 8
    op, qpn = f[bth], struct.unpack("!I", f[bth + 4:bth + 8])[0] & 0xffffff
    if not 6 <= op <= 11:
        continue
    hdr = 12 + (16 if op in (6, 10, 11) else 0) + (4 if op in (8, 11) else 0)
    payload = ulen - 8 - hdr - 4  # the ICRC's 4 bytes end the UDP payload
    q = qps.setdefault(str(qpn), {"sports": [], "frames": 0, "bytes": 0})
    if sport not in q["sports"]:
        q["sports"].append(sport)
    q["frames"] += 1
    q["bytes"] += max(payload, 0)
json.dump(qps, open(out, "w"))
PY
start_server_on b srv --port $port
spawn_on b sniff /usr/bin/python3 "$dir/sniff.py" "$nic_b" "$dir/stop" "$dir/qps.json"
wait_for_file "$dir/qps.json.ready" 30 || fail "the sniffer on b did not start: $(cat "$(job_file b sniff err)")"
capture tb on a "$RAILCP" bench "b:$port" --bytes 64M --qps-per-rail 4 --json
[ "$rc" -eq 0 ] || fail "bench with 4 QPs per rail exited $rc: $err"
touch "$dir/stop"
tb wait b sniff 30 || fail "the sniffer on b failed: $(cat "$(job_file b sniff err)")"
/usr/bin/python3 - qps.json "$out" <<'PY' || fail "the stripes of rail 0 did not spread: $(cat qps.json)"
import json, sys
qps = json.load(open(sys.argv[1]))
doc = json.loads(sys.argv[2])
rail0 = {r["name"]: r for r in doc["rails"]}["rxe0:1"]
assert rail0["stripes"] == 4, rail0
busy = {q: v for q, v in qps.items() if v["bytes"] > 0}
assert len(busy) == 4, "RDMA writes arrived on %d QPs of rail 0, not 4: %s" % (len(busy), qps)
total = sum(v["bytes"] for v in busy.values())  # a frame the sniffer missed is not in it
for q, v in busy.items():
    assert v["bytes"] * 8 >= total, "QP %s carried %d of %d bytes" % (q, v["bytes"], total)
    assert len(v["sports"]) == 1, "QP %s came from several UDP ports: %s" % (q, v["sports"])
sports = [v["sports"][0] for v in busy.values()]
assert len(set(sports)) == 4, "the 4 QPs share UDP source ports: %s" % sports
print(json.dumps({r["name"]: r["bytes"] for r in doc["rails"]}), doc["slots_per_stripe"])
print("rail 0: 4 QPs from UDP ports %s carried %s of %d payload bytes" % (
    sorted(sports), "/".join(str(v["bytes"]) for v in busy.values()), total))
PY
stop_server_on b srv
