# railcp devices in the testbed: every rail is listed, ACTIVE, on the NUMA
# node the testbed placed its NIC on, with the RoCE v2 GID of its address.
. tests/integration/lib.sh
need_rdma
[ -n "${TESTBED_RAIL_NODES:-}" ] || skip "TESTBED_RAIL_NODES is not set (run inside tools/testbed/boot)"

capture "$RAILCP" devices --json
[ "$rc" -eq 0 ] || fail "railcp devices --json exited $rc: $err"
printf '%s\n' "$out" | /usr/bin/python3 -c '
import json, sys
doc = json.load(sys.stdin)
rail_nodes = [int(n) for n in sys.argv[1].split(",")]
devs = {d["name"]: d for d in doc["devices"]}
assert len(devs) == len(rail_nodes), "expected %d devices, got %s" % (len(rail_nodes), sorted(devs))
for i, node in enumerate(rail_nodes):
    d = devs["rxe%d" % i]
    assert d["numa_node"] == node, "rxe%d: numa_node %r, placed on node %d (%s)" % (i, d["numa_node"], node, d["numa_rule"])
    assert len(d["ports"]) == 1, d["ports"]
    p = d["ports"][0]
    assert p["port"] == 1 and p["state"] == "ACTIVE", p
    assert p["link_layer"] == "Ethernet", p
    assert p["active_mtu"] in (256, 512, 1024, 2048, 4096), p
    assert p["width"] >= 1 and p["speed_gbps"] == p["width"] * p["lane_gbps"] > 0, p
    assert p["netdev"], p
    v2 = [g for g in p["gids"] if g["type"] == "RoCE v2"]
    want = "::ffff:198.18.%d.1" % i
    assert any(g["address"] == want for g in v2), "rxe%d has no RoCE v2 GID %s: %s" % (i, want, v2)
print("devices: %d rails on nodes %s, all ACTIVE with RoCE v2 GIDs" % (len(devs), rail_nodes))
' "$TESTBED_RAIL_NODES" || fail "railcp devices --json does not match the testbed"

# The listing for people names the same devices and nodes.
capture "$RAILCP" devices
[ "$rc" -eq 0 ] || fail "railcp devices exited $rc: $err"
i=0
for node in $(echo "$TESTBED_RAIL_NODES" | tr , ' '); do
	printf '%s\n' "$out" | grep -q "^rxe$i .*numa node $node " || fail "no 'rxe$i ... numa node $node' line in: $out"
	i=$((i + 1))
done
printf '%s\n' "$out" | grep -q "port 1: ACTIVE" || fail "no ACTIVE port in: $out"
