# A tree pushed over TCP (--transport tcp on both ends) from host a to a
# server on host b, and pulled back: the rails are the guests' IP
# interfaces, the data crosses the wires between them, every chunk is
# sealed (the testbed's key), and the tree arrives as it left. A server on
# auto, which has RDMA, serves a client asking tcp over tcp and one on auto
# over verbs.
. tests/integration/lib.sh
need_two_hosts
port=7519
dir=$(shared_dir tcp)
cd "$dir" || fail "cannot enter $dir"
mkdir -p src/sub root
head -c $((24 << 20)) /dev/urandom >src/big
head -c 100000 /dev/urandom >src/sub/b.bin
: >src/sub/empty

start_server_on b srv --transport tcp --port $port --root "$dir/root"
grep -q "over tcp" "$(job_file b srv err)" || fail "the server does not say tcp: $(cat "$(job_file b srv err)")"
capture tb on a "$RAILCP" -r --json --transport tcp --port $port src/ b:tree
[ "$rc" -eq 0 ] || fail "push over tcp from a to b exited $rc: $err"
printf '%s' "$out" | /usr/bin/python3 -c '
import json, sys
j = json.load(sys.stdin)
assert j["transport"] == "tcp", j["transport"]
rails = [r for r in j["rails"] if r["bytes"] > 0]
assert len(rails) >= 2, "data on fewer than two rails: %s" % j["rails"]
' || fail "the push did not run over tcp on the rails: $out"
[ "$(tree_sums src)" = "$(tree_sums root/tree)" ] || fail "the pushed tree differs"
capture tb on a "$RAILCP" -q -r --transport tcp --port $port b:tree/ back
[ "$rc" -eq 0 ] || fail "pull over tcp from b to a exited $rc: $err"
[ "$(tree_sums src)" = "$(tree_sums back)" ] || fail "the pulled tree differs"
expect_no_temps root back
stop_server_on b srv

# A server on --transport auto (the default) with RDMA serves both: a
# client asking tcp goes over the IP interfaces, one on auto over verbs.
start_server_on b auto --port $port --root "$dir/root"
for t in tcp auto; do
	capture tb on a "$RAILCP" -r --json --transport $t --port $port src/ b:tree-$t
	[ "$rc" -eq 0 ] || fail "push with --transport $t to a server on auto exited $rc: $err"
	printf '%s' "$out" | /usr/bin/python3 -c '
import json, sys
j, want = json.load(sys.stdin), {"tcp": "tcp", "auto": "rdma"}[sys.argv[1]]
assert j["transport"] == want, (sys.argv[1], j["transport"])
assert sum(r["bytes"] for r in j["rails"]) == j["bytes"] > 0, j["rails"]
' "$t" || fail "--transport $t to a server on auto: $out"
	[ "$(tree_sums src)" = "$(tree_sums root/tree-$t)" ] || fail "the tree pushed with --transport $t differs"
done
grep -q "over [0-9]* tcp stripes" "$(job_file b auto err)" ||
	fail "the server on auto does not say it served tcp: $(cat "$(job_file b auto err)")"
stop_server_on b auto
cd / && rm -rf "$dir"
