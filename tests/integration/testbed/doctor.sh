# railcp doctor in the testbed: clean on the default layout (every rail
# ACTIVE, in the plan, with the RoCE v2 GID of its address), and with HOST
# (this guest serving itself) each rail's session reports its devices,
# MTUs and a round trip. Then problems made on purpose, each found with
# exit status 1 and a fix, and the printed fix run as printed makes doctor
# clean again: one rail's netdev at MTU 9000 (the port follows to 4096,
# the other rails stay at 1500), and two rail interfaces in one subnet
# with the kernel's default arp_ignore and arp_announce.
. tests/integration/lib.sh
need_rdma
[ -n "${TESTBED_RAILS:-}" ] && [ "$TESTBED_RAILS" -ge 2 ] || skip "needs 2 rails (TESTBED_RAILS)"

nic1=$(cat /sys/class/infiniband/rxe1/ports/1/gid_attrs/ndevs/0) || fail "rxe1 has no netdev"
sysctls=""
for k in arp_ignore arp_announce rp_filter; do
	sysctls="$sysctls net.ipv4.conf.all.$k net.ipv4.conf.$nic1.$k"
done
saved=$(sysctl -n $sysctls | tr '\n' ' ')
log=$(mktemp)
key=$(mktemp)
head -c 32 /dev/urandom | base64 >"$key" && chmod 600 "$key"
restore() {
	ip link set dev "$nic1" mtu 1500
	ip addr del 198.18.0.99/24 dev "$nic1" 2>/dev/null
	set -- $saved
	for s in $sysctls; do sysctl -qw "$s=$1"; shift; done
	[ -n "${server_pid:-}" ] && kill "$server_pid" 2>/dev/null
	rm -f "$log" "$key"
}
trap restore EXIT

# Clean: exit 0, every rail listed as the testbed made it, no problem.
capture "$RAILCP" doctor --json
[ "$rc" -eq 0 ] || fail "doctor on the default testbed exited $rc: $out $err"
printf '%s\n' "$out" | /usr/bin/python3 -c '
import json, sys
d = json.load(sys.stdin)
n = int(sys.argv[1])
assert d["ok"] is True and d["devices"] is True and d["problems"] == [], d["problems"]
rails = {r["name"]: r for r in d["rails"]}
assert len(rails) == n, sorted(rails)
for i in range(n):
    r = rails["rxe%d:1" % i]
    assert r["planned"] and r["state"] == "ACTIVE" and r["link_layer"] == "Ethernet", r
    assert r["netdev_mtu"] == 1500 and r["active_mtu"] == 1024, r
    assert "198.18.%d.1/24" % i in r["addresses"], r
    v2 = [g for g in r["gids"] if g["type"] == "RoCE v2" and g["ip"] == "198.18.%d.1" % i]
    assert v2 and v2[0]["ip_version"] == 4 and v2[0]["netdev"] == r["netdev"], r["gids"]
    assert set(r["sysctl"]) == {"arp_ignore", "arp_announce", "rp_filter"}, r
assert d["memlock"]["need_bytes"] > 0 and d["nodes"], d
print("doctor: %d rails clean" % n)
' "$TESTBED_RAILS" || fail "doctor --json does not match the testbed: $out"

# With HOST: this guest serves itself, each rail paired with its own; with
# the key, as copies between hosts run.
start_server "$log" --key-file "$key"
capture "$RAILCP" doctor 127.0.0.1 --json --timeout 20 --key-file "$key"
[ "$rc" -eq 0 ] || fail "doctor 127.0.0.1 exited $rc: $out $err"
printf '%s\n' "$out" | /usr/bin/python3 -c '
import json, sys
d = json.load(sys.stdin)
n = int(sys.argv[1])
assert d["ok"] is True and d["peer_host"] == "127.0.0.1", d
peer = {p["rail"]: p for p in d["peer"]}
assert len(peer) == n, d["peer"]
for i in range(n):
    p = peer["rxe%d:1" % i]
    assert p["ok"] and p["peer"] == "rxe%d:1" % i, p
    assert p["mtu"] == p["peer_mtu"] == p["path_mtu"] == 1024, p
    assert 0 < p["rtt_ms"] <= p["rtt_ms_median"] < 5000, p
print("doctor with HOST: %s" % ", ".join("%s %.2f ms" % (k, v["rtt_ms"]) for k, v in sorted(peer.items())))
' "$TESTBED_RAILS" || fail "doctor 127.0.0.1 --json: $out"
[ "$(grep -c ': bench done, ' "$log")" -eq $((3 * TESTBED_RAILS)) ] || fail "server log: $(cat "$log")"
kill "$server_pid" && wait "$server_pid"
server_pid=

# Run the fix lines of the last report, as printed.
run_fixes() {
	printf '%s\n' "$out" | sed -n 's/^  fix: //p' >"$log"
	[ -s "$log" ] || fail "no fix printed: $out"
	sh -e "$log" || fail "a printed fix failed: $(cat "$log")"
}

# One rail at jumbo frames: its port follows to 4096, the others stay at 1500.
ip link set dev "$nic1" mtu 9000 || fail "cannot set $nic1's MTU"
wait_until 10 sh -c 'ibv_devinfo -d rxe1 | grep -q "active_mtu:.*4096"' || fail "rxe1's port did not follow to 4096"
capture "$RAILCP" doctor
[ "$rc" -eq 1 ] || fail "doctor with $nic1 at MTU 9000 exited $rc: $out $err"
printf '%s\n' "$out" | grep -q "^problem: rxe1:1: its netdev $nic1 has MTU 9000 (port MTU 4096) but the other rails' have 1500" ||
	fail "no problem line for rxe1's MTU: $out"
printf '%s\n' "$out" | grep -qx "  fix: ip link set dev $nic1 mtu 1500" || fail "no fix for rxe1's MTU: $out"
run_fixes
wait_until 10 sh -c 'ibv_devinfo -d rxe1 | grep -q "active_mtu:.*1024"' || fail "rxe1's port did not come back to 1024"
capture "$RAILCP" doctor
[ "$rc" -eq 0 ] || fail "doctor after the MTU fix exited $rc: $out"

# Two rail interfaces in one subnet, ARP as the kernel has it by default.
sysctl -qw net.ipv4.conf.all.arp_ignore=0 net.ipv4.conf.all.arp_announce=0 \
	"net.ipv4.conf.$nic1.arp_ignore=0" "net.ipv4.conf.$nic1.arp_announce=0" || fail "sysctl -w failed"
ip addr add 198.18.0.99/24 dev "$nic1" || fail "cannot add an address to $nic1"
capture "$RAILCP" doctor --json
[ "$rc" -eq 1 ] || fail "doctor with a shared subnet exited $rc: $out $err"
printf '%s\n' "$out" | /usr/bin/python3 -c '
import json, sys
d = json.load(sys.stdin)
hurt = {p["what"]: p for p in d["problems"] if p["hurts"]}
assert d["ok"] is False and {"arp_ignore", "arp_announce"} <= set(hurt), d["problems"]
assert hurt["arp_ignore"]["fix"].startswith("sysctl -w net.ipv4.conf.all.arp_ignore=2"), hurt
' || fail "doctor --json with a shared subnet: $out"
capture "$RAILCP" doctor
[ "$rc" -eq 1 ] || fail "doctor (text) with a shared subnet exited $rc"
run_fixes
capture "$RAILCP" doctor
[ "$rc" -eq 0 ] || fail "doctor after running its ARP fixes exited $rc: $out"
echo "doctor: clean, then MTU 9000 on $nic1 and a shared subnet found, each fixed by its printed command"
