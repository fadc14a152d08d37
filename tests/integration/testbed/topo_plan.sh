# railcp topo in the testbed: one worker per NUMA node that has a rail,
# pinned to that node's CPUs, driving exactly the rails local to it
# (rxe0 on node 0 and rxe1 on node 1 in the default 2 x 2 testbed).
. tests/integration/lib.sh
need_rdma
[ -n "${TESTBED_RAIL_NODES:-}" ] || skip "TESTBED_RAIL_NODES is not set (run inside tools/testbed/boot)"

capture "$RAILCP" topo --json
[ "$rc" -eq 0 ] || fail "railcp topo --json exited $rc: $err"
printf '%s\n' "$out" >"${TESTBED_OUT:-/tmp}/topo_plan.json"
printf '%s\n' "$out" | /usr/bin/python3 -c '
import json, sys
doc = json.load(sys.stdin)
rail_nodes = [int(n) for n in sys.argv[1].split(",")]

def node_cpus(n):
    cpus = set()
    for part in open("/sys/devices/system/node/node%d/cpulist" % n).read().strip().split(","):
        lo, _, hi = part.partition("-")
        cpus.update(range(int(lo), int(hi or lo) + 1))
    return cpus

workers = {w["node"]: w for w in doc["plan"]["workers"]}
want_nodes = sorted(set(rail_nodes))
assert sorted(workers) == want_nodes, "workers on nodes %s, want %s" % (sorted(workers), want_nodes)
for node in want_nodes:
    w = workers[node]
    want = sorted("rxe%d" % i for i, n in enumerate(rail_nodes) if n == node)
    got = sorted(r["device"] for r in w["rails"])
    assert got == want, "node %d worker has rails %s, want %s" % (node, got, want)
    cpus = set(w["cpus"])
    assert cpus and cpus == node_cpus(node), "node %d worker cpus %s, node cpus %s" % (node, sorted(cpus), sorted(node_cpus(node)))
    for r in w["rails"]:
        assert r["port"] == 1 and r["qps"] == doc["plan"]["qps_per_rail"] == 4, r
        assert r["numa_node"] == node and r["placement"] == "local to node %d" % node, r
    assert w["buffer_bytes"] == len(want) * 4 * 8 * 2**20, w
assert doc["plan"]["left_out"] == [], doc["plan"]["left_out"]
assert len(doc["machine"]["rails"]) == len(rail_nodes), doc["machine"]["rails"]
print("topo: workers on nodes %s, each with its local rails" % want_nodes)
' "$TESTBED_RAIL_NODES" || fail "railcp topo --json does not match the testbed"

# The view for people shows the same placement.
capture "$RAILCP" topo
[ "$rc" -eq 0 ] || fail "railcp topo exited $rc: $err"
i=0
for node in $(echo "$TESTBED_RAIL_NODES" | tr , ' '); do
	printf '%s\n' "$out" | grep -q "^    rxe$i:1  4 QPs  local to node $node\$" ||
		fail "no 'rxe$i:1  4 QPs  local to node $node' line in: $out"
	i=$((i + 1))
done
printf '%s\n' "$out" | grep -q "^  worker 0: node " || fail "no worker line in: $out"
