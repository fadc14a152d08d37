# railcp topo --check-buffers in the testbed: each worker's pool is on the
# worker's node (get_mempolicy on its first and last page), is backed by
# 2 MiB hugepages when the node has enough reserved, and was first-touched by
# a thread that ran on one of the worker's CPUs. Then the same under numactl
# node 1, where only the node-1 worker exists.
. tests/integration/lib.sh
need_rdma
[ -n "${TESTBED_RAIL_NODES:-}" ] || skip "TESTBED_RAIL_NODES is not set (run inside tools/testbed/boot)"

check() { # LABEL COMMAND... : run --check-buffers and assert every worker
	label=$1
	shift
	before=$(cat /sys/devices/system/node/node*/hugepages/hugepages-2048kB/free_hugepages | tr '\n' ,)
	capture "$@" topo --check-buffers --json
	[ "$rc" -eq 0 ] || fail "$label: railcp topo --check-buffers exited $rc: $err"
	printf '%s\n' "$out" >"${TESTBED_OUT:-/tmp}/topo_buffers_$label.json"
	printf '%s\n' "$out" | /usr/bin/python3 -c '
import json, sys
doc = json.load(sys.stdin)
label, free_before = sys.argv[1], [int(x) for x in sys.argv[2].strip(",").split(",")]
workers, bufs = doc["plan"]["workers"], doc["buffers"]
assert len(bufs) == len(workers) > 0, (len(bufs), len(workers))
for w, b in zip(workers, bufs):
    node = w["node"]
    assert b["node"] == node, (w, b)
    assert b["page_node_first"] == node and b["page_node_last"] == node, \
        "%s: node %d pool pages are on nodes %d..%d" % (label, node, b["page_node_first"], b["page_node_last"])
    assert b["cpu"] in w["cpus"] and b["cpu_ok"], "%s: node %d worker ran on cpu %d, not in %s" % (label, node, b["cpu"], w["cpus"])
    need = -(-w["buffer_bytes"] // 2**21)
    if free_before[node] >= need:
        assert b["pages"] == "2 MiB hugepages" and b["kernel_page_bytes"] == 2**21, \
            "%s: node %d had %d free hugepages for %d needed but the pool is on %s (%d-byte pages)" % (label, node, free_before[node], need, b["pages"], b["kernel_page_bytes"])
        assert b["fallback"] is None, b
    else:
        assert b["pages"] != "2 MiB hugepages" and b["fallback"], b
    assert b["ok"], b
    print("%s: worker node %d: %d MiB on %s, pages on node %d, ran on cpu %d" % (label, node, b["bytes"] >> 20, b["pages"], b["page_node_first"], b["cpu"]))
' "$label" "$before" || fail "$label: buffers are not where the plan put them"
}

total=$(cat /proc/sys/vm/nr_hugepages)
[ "$total" -gt 0 ] || echo "note: no hugepages reserved; checking the fallback path only"
check all "$RAILCP"

if command -v numactl >/dev/null && [ -d /sys/devices/system/node/node1 ]; then
	case ",$TESTBED_RAIL_NODES," in
	*,1,*) check node1 numactl --cpunodebind=1 --membind=1 "$RAILCP" ;;
	esac
fi

# With hugepages reserved, at least one pool must really be on them.
if [ "$total" -gt 0 ]; then
	grep -q '"kernel_page_bytes": 2097152' "${TESTBED_OUT:-/tmp}/topo_buffers_all.json" ||
		fail "$total hugepages are reserved but no pool got one"
fi
