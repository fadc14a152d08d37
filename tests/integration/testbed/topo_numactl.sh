# Under numactl --cpunodebind=1 --membind=1 only node 1 may be used: the plan
# has exactly one worker, on node 1, with the rails local to node 1 (rxe1),
# and says why the node-0 rails are left out.
. tests/integration/lib.sh
need_rdma
[ -n "${TESTBED_RAIL_NODES:-}" ] || skip "TESTBED_RAIL_NODES is not set (run inside tools/testbed/boot)"
command -v numactl >/dev/null || skip "numactl is not installed"
[ -d /sys/devices/system/node/node1 ] || skip "this guest has one NUMA node"
case ",$TESTBED_RAIL_NODES," in *,1,*) ;; *) skip "no rail on node 1 ($TESTBED_RAIL_NODES)" ;; esac

capture numactl --cpunodebind=1 --membind=1 "$RAILCP" topo --json
[ "$rc" -eq 0 ] || fail "railcp topo --json under numactl exited $rc: $err"
printf '%s\n' "$out" >"${TESTBED_OUT:-/tmp}/topo_numactl.json"
printf '%s\n' "$out" | /usr/bin/python3 -c '
import json, sys
doc = json.load(sys.stdin)
rail_nodes = [int(n) for n in sys.argv[1].split(",")]
ws = doc["plan"]["workers"]
assert [w["node"] for w in ws] == [1], "workers on nodes %s, want only node 1" % [w["node"] for w in ws]
want = sorted("rxe%d" % i for i, n in enumerate(rail_nodes) if n == 1)
got = sorted(r["device"] for r in ws[0]["rails"])
assert got == want, "node 1 worker has rails %s, want %s" % (got, want)
cpulist = open("/sys/devices/system/node/node1/cpulist").read().strip()
node1 = set()
for part in cpulist.split(","):
    lo, _, hi = part.partition("-")
    node1.update(range(int(lo), int(hi or lo) + 1))
assert ws[0]["cpus"] and set(ws[0]["cpus"]) <= node1, "cpus %s not in node 1 (%s)" % (ws[0]["cpus"], cpulist)
nodes = {n["id"]: n for n in doc["machine"]["nodes"]}
assert not nodes[0]["usable"] and nodes[0]["why_not"], nodes[0]
others = ["rxe%d" % i for i, n in enumerate(rail_nodes) if n != 1]
for dev in others:
    assert any(l.startswith(dev + ":1: it is local to node") for l in doc["plan"]["left_out"]), (dev, doc["plan"]["left_out"])
print("numactl node 1: one worker on node 1 with %s; left out %s" % (got, others))
' "$TESTBED_RAIL_NODES" || fail "the plan under numactl --cpunodebind=1 --membind=1 is wrong"

# Asking for node 0 while bound to node 1 is one clear error.
capture numactl --cpunodebind=1 --membind=1 "$RAILCP" topo --numa 0
expect_one_line_error "railcp topo --numa 0 under numactl node 1"
case "$err" in *"--numa names node 0, which this process cannot use"*) ;;
*) fail "unexpected error: $err" ;; esac
