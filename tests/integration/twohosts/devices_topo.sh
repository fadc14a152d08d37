# railcp devices and railcp topo on each host of the two-host testbed: every
# rail rxe0..rxe<N-1> is listed, ACTIVE, on the NUMA node the testbed put its
# NIC on, with the RoCE v2 GID of that host's address on the rail (198.18.i.1
# on a, 198.18.i.2 on b); the plan gives each node's worker its local rails.
. tests/integration/lib.sh
need_two_hosts

for h in a b; do
	case $h in
	a) rail_nodes=$TESTBED_A_RAIL_NODES num=1 ;;
	b) rail_nodes=$TESTBED_B_RAIL_NODES num=2 ;;
	esac
	capture tb on $h "$RAILCP" devices --json
	[ "$rc" -eq 0 ] || fail "railcp devices --json on $h exited $rc: $err"
	printf '%s\n' "$out" | /usr/bin/python3 -c '
import json, sys
doc = json.load(sys.stdin)
host, num, rail_nodes = sys.argv[1], sys.argv[2], [int(n) for n in sys.argv[3].split(",")]
devs = {d["name"]: d for d in doc["devices"]}
assert sorted(devs) == ["rxe%d" % i for i in range(len(rail_nodes))], "%s: devices %s" % (host, sorted(devs))
for i, node in enumerate(rail_nodes):
    d = devs["rxe%d" % i]
    assert d["numa_node"] == node, "%s: rxe%d on node %r, placed on node %d (%s)" % (host, i, d["numa_node"], node, d["numa_rule"])
    assert len(d["ports"]) == 1, d["ports"]
    p = d["ports"][0]
    assert p["port"] == 1 and p["state"] == "ACTIVE" and p["link_layer"] == "Ethernet", "%s: rxe%d %s" % (host, i, p)
    want = "::ffff:198.18.%d.%s" % (i, num)
    assert any(g["type"] == "RoCE v2" and g["address"] == want for g in p["gids"]), \
        "%s: rxe%d has no RoCE v2 GID %s: %s" % (host, i, want, p["gids"])
print("%s: devices %s ACTIVE on nodes %s" % (host, " ".join(sorted(devs)), rail_nodes))
' $h $num "$rail_nodes" || fail "railcp devices --json on $h does not match the testbed"

	# The listing for people says the same.
	capture tb on $h "$RAILCP" devices
	[ "$rc" -eq 0 ] || fail "railcp devices on $h exited $rc: $err"
	i=0
	for node in $(echo "$rail_nodes" | tr , ' '); do
		printf '%s\n' "$out" | grep -q "^rxe$i .*numa node $node " ||
			fail "$h: no 'rxe$i ... numa node $node' line in: $out"
		i=$((i + 1))
	done
	[ "$(printf '%s\n' "$out" | grep -c 'port 1: ACTIVE')" -eq "$i" ] || fail "$h: not every port is ACTIVE: $out"

	capture tb on $h "$RAILCP" topo --json
	[ "$rc" -eq 0 ] || fail "railcp topo --json on $h exited $rc: $err"
	printf '%s\n' "$out" | /usr/bin/python3 -c '
import json, sys
doc = json.load(sys.stdin)
host, rail_nodes = sys.argv[1], [int(n) for n in sys.argv[2].split(",")]
workers = {w["node"]: w for w in doc["plan"]["workers"]}
want_nodes = sorted(set(rail_nodes))
assert sorted(workers) == want_nodes, "%s: workers on nodes %s, want %s" % (host, sorted(workers), want_nodes)
for node in want_nodes:
    want = sorted("rxe%d" % i for i, n in enumerate(rail_nodes) if n == node)
    got = sorted(r["device"] for r in workers[node]["rails"])
    assert got == want, "%s: node %d worker has rails %s, want %s" % (host, node, got, want)
    for r in workers[node]["rails"]:
        assert r["numa_node"] == node and r["placement"] == "local to node %d" % node, r
assert doc["plan"]["left_out"] == [], doc["plan"]["left_out"]
print("%s: topo: workers on nodes %s, each with its local rails" % (host, want_nodes))
' $h "$rail_nodes" || fail "railcp topo --json on $h does not match the testbed"
done
