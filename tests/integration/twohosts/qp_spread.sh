# Several QPs per rail spread a run's chunks over several paths on RoCE,
# and --tos marks them (issue 26 item 3), read off the wire: b reads every
# RoCE v2 frame (UDP port 4791) on rail 0's netdev from a raw socket while
# a benches 64 MiB to it (the credit window of 8 stripes of 8 slots: a
# smaller run may not reach every stripe).
# 1. With 4 QPs per rail the RDMA writes arrive on 4 queue pairs of b, each
#    carrying at least an eighth of what the sniffer saw, and each queue
#    pair's frames come from a UDP source port of its own (rxe draws it
#    from a hash of the QP number, as RoCE NICs do): what an ECMP switch
#    hashes, so the 4 stripes of a rail can take 4 paths.
# 2. With --tos 96 every write arrives with IP traffic class 96 (DSCP 24),
#    and the JSON says 96; the server's credits leave with 96 too, though
#    it serves with --tos 104: an accepted connection takes the class of
#    the client's request, not its listening id's.
. tests/integration/lib.sh
need_two_hosts
[ "${TESTBED_RAILS:-0}" -ge 2 ] || skip "needs two rails per host"
dir=$(shared_dir qp_spread)
cd "$dir" || fail "cannot enter $dir"
port=7518
nic_b=$(tb on b cat /sys/class/infiniband/rxe0/parent) && [ -n "$nic_b" ] ||
	fail "no network device under rxe0 on b"

# The sniffer: every RoCE v2 frame on the netdev until the stop file exists
# (60 s at most, the queue drained at the end); for each destination QP of
# an RDMA WRITE arriving (opcodes 6-11, their payload after the 12-byte
# BTH, the 16-byte RETH of a first or only one and the 4-byte immediate of
# a last or only one with it), its UDP source ports, frames and payload
# bytes; and the IP traffic classes (DSCP and ECN) seen on writes arriving
# and on sends (credits) leaving; as JSON.
cat >sniff.py <<'PY'
import json, os, socket, struct, sys, time
nic, stop, out = sys.argv[1:4]
# ETH_P_ALL: a socket of one protocol is not given the frames the host sends
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(3))
s.setsockopt(socket.SOL_SOCKET, 33, 256 << 20)  # SO_RCVBUFFORCE (root: past rmem_max)
s.bind((nic, 0))
s.settimeout(0.2)
open(out + ".ready", "w").close()
qps, tos, end, drain = {}, {"write in": [], "send out": []}, time.time() + 60, False
while time.time() < end:
    try:
        f, where = s.recvfrom(65535)
    except (socket.timeout, BlockingIOError):
        if drain:
            break
        if os.path.exists(stop):  # what the queue holds yet, then the end
            s.setblocking(False)
            drain = True
        continue
    if f[12:14] != b"\x08\x00":  # IPv4
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
    outgoing = where[2] == socket.PACKET_OUTGOING
    kind = "send out" if outgoing and op <= 5 else "write in" if not outgoing and 6 <= op <= 11 else None
    if kind and f[15] not in tos[kind]:
        tos[kind].append(f[15])
    if kind != "write in":
        continue
    hdr = 12 + (16 if op in (6, 10, 11) else 0) + (4 if op in (9, 11) else 0)
    payload = ulen - 8 - hdr - 4  # the ICRC's 4 bytes end the UDP payload
    q = qps.setdefault(str(qpn), {"sports": [], "frames": 0, "bytes": 0})
    if sport not in q["sports"]:
        q["sports"].append(sport)
    q["frames"] += 1
    q["bytes"] += max(payload, 0)
json.dump({"qps": qps, "tos": tos}, open(out, "w"))
PY
# sniffed NAME SERVER_ARGS CLIENT_ARGS...: a server on b with SERVER_ARGS
# (words), the sniffer on, a bench of 64 MiB from a with CLIENT_ARGS; the
# sniffer's JSON in NAME.json, the bench's in NAME.out.
sniffed() {
	_sn=$1 _ss=$2
	shift 2
	rm -f "$dir/stop"
	# shellcheck disable=SC2086 # the server's arguments are words
	start_server_on b "srv-$_sn" --port $port $_ss
	spawn_on b "sniff-$_sn" /usr/bin/python3 "$dir/sniff.py" "$nic_b" "$dir/stop" "$dir/$_sn.json"
	wait_for_file "$dir/$_sn.json.ready" 30 ||
		fail "the sniffer on b did not start: $(cat "$(job_file b "sniff-$_sn" err)")"
	tb on a "$RAILCP" bench "b:$port" --bytes 64M --json "$@" >"$_sn.out" 2>"$_sn.err" ||
		fail "$_sn: bench $* failed: $(cat "$_sn.err")"
	touch "$dir/stop"
	tb wait b "sniff-$_sn" 30 || fail "the sniffer on b failed: $(cat "$(job_file b "sniff-$_sn" err)")"
	stop_server_on b "srv-$_sn"
}

sniffed spread "" --qps-per-rail 4
/usr/bin/python3 - spread.json spread.out <<'PY' || fail "the stripes of rail 0 did not spread: $(cat spread.json)"
import json, sys
qps = json.load(open(sys.argv[1]))["qps"]
doc = json.load(open(sys.argv[2]))
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
print("rail 0 (%d bytes): 4 QPs from UDP ports %s carried %s bytes" % (
    rail0["bytes"], sorted(sports), "/".join(str(v["bytes"]) for v in busy.values())))
PY

# --tos on the wire: the client's class on every write that arrives; the
# server's sends (credits), with the server given a class of its own on
# its listening ids.
sniffed tos "--tos 104" --tos 96
/usr/bin/python3 - tos.json tos.out <<'PY' || fail "--tos did not reach the wire: $(cat tos.json)"
import json, sys
tos = json.load(open(sys.argv[1]))["tos"]
doc = json.load(open(sys.argv[2]))
assert doc["tos"] == 96, doc["tos"]
assert tos["write in"] == [96], "writes arrived with classes %s, not the client's 96" % tos["write in"]
# The accepted connection takes the request's class, not the listening id's (usage.md says so).
assert tos["send out"] == [96], "the server's credits left with classes %s" % tos["send out"]
print("--tos: writes arrived with class %s (client --tos 96); the server's credits left with %s "
      "(serve --tos 104)" % (tos["write in"], tos["send out"]))
PY
