# railcp doctor on a host without RDMA devices: the report says so and how
# to get Soft-RoCE, exit status 1; --json is one object of the documented
# shape; with HOST nothing is contacted; bad command lines exit 2.
. tests/integration/lib.sh
ls /sys/class/infiniband/* >/dev/null 2>&1 && skip "this host has RDMA devices"

capture "$RAILCP" doctor
[ "$rc" -eq 1 ] || fail "doctor without devices: expected exit status 1, got $rc: $out $err"
[ -z "$err" ] || fail "doctor wrote to stderr: $err"
printf '%s\n' "$out" | grep -q "^problem: devices: no RDMA device: " || fail "no 'no RDMA device' problem: $out"
printf '%s\n' "$out" | grep -q "^  fix: modprobe rdma_rxe && rdma link add rxe0 type rxe netdev [^ ]*$" ||
	fail "no Soft-RoCE fix: $out"
printf '%s\n' "$out" | grep -q "^doctor: 1 problem that would hurt a copy, 0 notes$" || fail "no closing line: $out"

check_json() {
	/usr/bin/python3 -c '
import json, sys
d = json.load(sys.stdin)
want = {"memlock", "nodes", "devices", "rails", "peer_host", "peer", "problems", "problems_not_shown", "ok"}
assert set(d) == want, sorted(set(d) ^ want)
assert d["devices"] is False and d["rails"] == [] and d["ok"] is False, d
assert d["peer_host"] == (sys.argv[1] or None), d["peer_host"]
assert d["peer"] == ([] if sys.argv[1] else None), d["peer"]
assert set(d["memlock"]) == {"limit_bytes", "cap_ipc_lock", "need_bytes"}, d["memlock"]
assert d["memlock"]["need_bytes"] == 0, d["memlock"]
assert isinstance(d["nodes"], list), d["nodes"]
for n in d["nodes"]:
    assert set(n) == {"node", "hugepages_2m_total", "hugepages_2m_free", "hugepages_1g_total", "hugepages_1g_free", "pool_bytes"}, n
    assert n["hugepages_2m_free"] <= n["hugepages_2m_total"] or n["hugepages_2m_total"] == 0, n
[p] = d["problems"]
assert p["what"] == "devices" and p["hurts"] is True, p
assert p["problem"].startswith("no RDMA device"), p
assert p["fix"].startswith("modprobe rdma_rxe && rdma link add rxe0 type rxe netdev "), p
' "$1"
}
capture "$RAILCP" doctor --json
[ "$rc" -eq 1 ] || fail "doctor --json without devices: expected exit status 1, got $rc: $err"
[ -z "$err" ] || fail "doctor --json wrote to stderr: $err"
printf '%s\n' "$out" | check_json "" || fail "doctor --json: $out"

# With HOST (an address of TEST-NET-1 that answers nothing): without a
# device there is no rail to try, and it ends at once.
start=$(date +%s)
capture "$RAILCP" doctor 192.0.2.1 --timeout 30 --json
[ "$rc" -eq 1 ] || fail "doctor HOST without devices: expected exit status 1, got $rc: $err"
printf '%s\n' "$out" | check_json 192.0.2.1 || fail "doctor 192.0.2.1 --json: $out"
[ $(($(date +%s) - start)) -lt 10 ] || fail "doctor HOST without devices took $(($(date +%s) - start)) s"

for args in "doctor --bogus" "doctor h1 h2" "doctor h:0" "doctor h:x" "doctor --timeout 0" \
	"doctor --qps-per-rail 0" "doctor --profile p --numa 0" "doctor --transport tcp"; do
	capture "$RAILCP" $args
	expect_one_line_error "$args"
	[ "$rc" -eq 2 ] || fail "railcp $args: expected exit status 2, got $rc"
done
capture "$RAILCP" doctor --help
[ "$rc" -eq 0 ] && printf '%s\n' "$out" | grep -q -- "--json" || fail "doctor --help: $rc $out"
echo "doctor: no device reported with the Soft-RoCE fix, exit 1; --json as documented; bad lines exit 2"
