# railcp devices on a host without RDMA devices lists the IP interfaces a
# TCP copy takes as rails: every interface with an IPv4 address (as the
# kernel reports it through ioctl, read here independently of railcp) with
# its address, prefix, state and MTU, and which a copy uses (the rails of
# railcp topo --transport tcp); the text says in its own line that there is
# no RDMA device and that a copy can go over TCP. --transport tcp lists the
# interfaces alone; --transport rdma is host/no_device.sh.
. tests/integration/lib.sh
ls /sys/class/infiniband/* >/dev/null 2>&1 && skip "this host has RDMA devices"
export LC_ALL=C
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# The kernel's view: name, address, prefix, up and running, loopback, MTU.
kernel=$(/usr/bin/python3 -c '
import fcntl, json, socket, struct
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
def ioc(req, name):
    return fcntl.ioctl(s.fileno(), req, struct.pack("256s", name.encode()))
out = {}
for _, name in socket.if_nameindex():
    try:
        addr = socket.inet_ntoa(ioc(0x8915, name)[20:24])    # SIOCGIFADDR
    except OSError:
        continue                                              # no IPv4 address
    mask = struct.unpack("!I", ioc(0x891b, name)[20:24])[0]   # SIOCGIFNETMASK
    flags = struct.unpack("H", ioc(0x8913, name)[16:18])[0]   # SIOCGIFFLAGS
    mtu = struct.unpack("i", ioc(0x8921, name)[16:20])[0]     # SIOCGIFMTU
    out[name] = {"address": addr, "prefix": bin(mask).count("1"), "mtu": mtu,
                 "up": flags & 0x1 != 0 and flags & 0x40 != 0, "loopback": flags & 0x8 != 0}
print(json.dumps(out))
') || fail "cannot read this host's interfaces"
case "$kernel" in *'"lo"'*) ;; *) skip "lo has no IPv4 address here" ;; esac

capture "$RAILCP" devices --json
[ "$rc" -eq 0 ] || fail "railcp devices --json without RDMA exited $rc: $err"
[ -z "$err" ] || fail "railcp devices --json wrote to stderr: $err"
printf '%s\n' "$out" >"$tmp/devices.json"
capture "$RAILCP" topo --transport tcp --json
[ "$rc" -eq 0 ] || fail "railcp topo --transport tcp --json exited $rc: $err"
printf '%s\n' "$out" >"$tmp/topo.json"
/usr/bin/python3 -c '
import json, sys
kernel = json.loads(sys.argv[1])
doc = json.load(open(sys.argv[2] + "/devices.json"))
assert doc["devices"] == [], doc["devices"]
assert doc["rdma_error"].startswith("no RDMA device found"), doc["rdma_error"]
ifs = {i["name"]: i for i in doc["interfaces"]}
assert sorted(ifs) == sorted(kernel), "interfaces %s, the kernel has %s" % (sorted(ifs), sorted(kernel))
for name, k in kernel.items():
    i = ifs[name]
    assert i["address"] == k["address"] and i["prefix"] == k["prefix"], (i, k)
    assert i["mtu"] == k["mtu"], (i, k)
    assert i["state"] == ("UP" if k["up"] else "DOWN"), (i, k)
    assert i["loopback"] == k["loopback"], (i, k)
    assert i["used"] == (k["up"] and not k["loopback"]), (i, k)
    assert (i["unused_why"] is None) == i["used"], i
    assert i["numa_node"] is None or i["numa_node"] >= 0, i
    assert i["numa_rule"], i
assert "loopback" in ifs["lo"]["unused_why"], ifs["lo"]
rails = sorted(r["device"] for r in json.load(open(sys.argv[2] + "/topo.json"))["machine"]["rails"])
used = sorted(n for n, i in ifs.items() if i["used"])
assert rails == used, "topo --transport tcp has rails %s, devices says a copy uses %s" % (rails, used)
print("devices --json: %d interfaces, %s used as rails" % (len(ifs), used))
' "$kernel" "$tmp" || fail "railcp devices --json does not match this host: $(cat "$tmp/devices.json")"

capture "$RAILCP" devices
[ "$rc" -eq 0 ] || fail "railcp devices without RDMA exited $rc: $err"
[ -z "$err" ] || fail "railcp devices wrote to stderr: $err"
printf '%s\n' "$out" | head -n 1 | grep -q "^no RDMA device found: .*rdma link add rxe0 type rxe netdev IF)$" ||
	fail "the first line does not say there is no RDMA device: $out"
for name in $(printf '%s' "$kernel" | /usr/bin/python3 -c 'import json, sys; print(" ".join(json.load(sys.stdin)))'); do
	printf '%s\n' "$out" | grep -q "^$name  [0-9.]*/[0-9]*  \(UP\|DOWN\)  mtu [0-9]*  " ||
		fail "no line for interface $name in: $out"
done
printf '%s\n' "$out" | grep -A1 "^lo  127\.0\.0\.1/8  UP  " | grep -q "not a rail of a TCP copy: loopback" ||
	fail "lo is not said to be left out: $out"
if printf '%s\n' "$out" | grep -q "^  a rail of a TCP copy$"; then
	printf '%s\n' "$out" | tail -n 1 | grep -q "^A copy can go over th.* with --transport tcp, or auto (the default)\.$" ||
		fail "the last line does not say a copy can use the interfaces: $out"
fi

# --transport tcp: the interfaces alone, with no word about RDMA.
capture "$RAILCP" devices --transport tcp
[ "$rc" -eq 0 ] || fail "railcp devices --transport tcp exited $rc: $err"
case "$out" in *RDMA*) fail "--transport tcp speaks of RDMA: $out" ;; esac
printf '%s\n' "$out" | grep -q "^lo  127\.0\.0\.1/8  " || fail "--transport tcp does not list lo: $out"
capture "$RAILCP" devices --transport tcp --json
[ "$rc" -eq 0 ] || fail "railcp devices --transport tcp --json exited $rc: $err"
printf '%s\n' "$out" | /usr/bin/python3 -c '
import json, sys
doc = json.load(sys.stdin)
assert sorted(doc) == ["interfaces"], sorted(doc)
assert "lo" in [i["name"] for i in doc["interfaces"]], doc
' || fail "railcp devices --transport tcp --json is not the interfaces alone: $out"

# A transport that is none: usage, exit 2, one line.
capture "$RAILCP" devices --transport ib
expect_one_line_error railcp devices --transport ib
[ "$rc" -eq 2 ] || fail "--transport ib: expected exit status 2, got $rc"
[ -z "$out" ] || fail "--transport ib wrote to stdout: $out"
