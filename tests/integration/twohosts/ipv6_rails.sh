# RDMA rails on IPv6 alone, across two hosts (issue 26 item 5): on both
# hosts each rail's netdev loses its IPv4 address and takes
# 2001:2:0:<i+1>::<host>/64 (2001:2::/48 is kept for benchmarking, RFC
# 5180), so rxe has RoCE v2 GIDs for it and link-local ones, and no
# IPv4-mapped one. The control connection stays on the management link's
# IPv4. A push and a pull of a tree arrive identical over both rails, with
# --json naming each rail's IPv6 address and every stripe connected; a
# bench moves its bytes over both. Then each netdev gets its IPv4 address
# back, and a push over IPv4 rails shows the hosts as they were.
. tests/integration/lib.sh
need_two_hosts
[ "${TESTBED_RAILS:-0}" -ge 2 ] || skip "needs two rails per host"
dir=$(shared_dir ipv6_rails)
cd "$dir" || fail "cannot enter $dir"
port=7497

num() { if [ "$1" = a ]; then echo 1; else echo 2; fi; }
# gids HOST I: rail I's GID table on HOST, one GID a line.
gids() { tb on "$1" sh -c "cat /sys/class/infiniband/rxe$2/ports/1/gids/* 2>/dev/null"; }
# Rail I of HOST on IPv6 alone (to_v6), or back on IPv4 (to_v4).
to_v6() {
	_nic=$(tb on "$1" cat "/sys/class/infiniband/rxe$2/parent") || return 1
	tb on "$1" sh -c "ip addr add 2001:2:0:$(($2 + 1))::$(num "$1")/64 dev $_nic nodad &&
		ip -4 addr flush dev $_nic"
}
to_v4() {
	_nic=$(tb on "$1" cat "/sys/class/infiniband/rxe$2/parent") || return 1
	tb on "$1" sh -c "ip -6 addr del 2001:2:0:$(($2 + 1))::$(num "$1")/64 dev $_nic 2>/dev/null
		ip -4 addr show dev $_nic | grep -q 198.18.$2. ||
			ip addr add 198.18.$2.$(num "$1")/24 dev $_nic"
}
# The GID table of HOST's rail I holds the IPv6 address (v6) or its IPv4 one (v4) alone.
# (The table is read whole first: tb complains of a reader that stops early.)
on_v6() {
	_g=$(gids "$1" "$2")
	printf '%s\n' "$_g" | grep -q "^2001:0002:0000:000$(($2 + 1)):0000:0000:0000:000$(num "$1")$" &&
		! printf '%s\n' "$_g" | grep -q "^0000:0000:0000:0000:0000:ffff:"
}
on_v4() {
	_g=$(gids "$1" "$2")
	printf '%s\n' "$_g" | grep -q "^0000:0000:0000:0000:0000:ffff:c612:0$2" &&
		! printf '%s\n' "$_g" | grep -q "^2001:0002:"
}
restore() {
	kill_jobs
	for h in a b; do for i in 0 1; do to_v4 "$h" "$i"; done; done
}
trap restore EXIT

for h in a b; do
	for i in 0 1; do
		to_v6 "$h" "$i" || fail "cannot put rail $i of $h on IPv6"
		wait_until 10 on_v6 "$h" "$i" ||
			fail "rxe$i on $h has no IPv6 GID alone after 10 s: $(gids "$h" "$i" | grep -v '^0000:0000:0000:0000:0000:0000:0000:0000$')"
	done
done
tb on a sh -c 'rm -rf /tmp/v6 && mkdir -p /tmp/v6/src/d /tmp/v6/back &&
	head -c 6M /dev/urandom >/tmp/v6/src/big && echo small >/tmp/v6/src/d/small' ||
	fail "cannot make the source on a"
tb on b sh -c 'rm -rf /tmp/v6 && mkdir -p /tmp/v6/root' || fail "cannot make the root on b"
# sums HOST DIR: the sha256 of every file beneath DIR on HOST, by name.
sums() { tb on "$1" sh -c "cd $2 && find . -type f -print0 | LC_ALL=C sort -z | xargs -0r sha256sum"; }
src=$(sums a /tmp/v6/src) && [ -n "$src" ] || fail "cannot sum the source"
# The server starts after the change: a process lists its devices once.
start_server_on b srv --root /tmp/v6/root --port $port

# rails_v6 JSON: every stripe of both rails connected, each rail's address
# its IPv6 one, the bytes summing to the copy's.
rails_v6() {
	/usr/bin/python3 - "$1" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
assert doc["transport"] == "rdma", doc["transport"]
assert doc["rails_left_out"] == 0 and doc["rails_failed"] == 0, doc["rails"]
rails = {r["name"]: r for r in doc["rails"]}
assert set(rails) == {"rxe0:1", "rxe1:1"}, rails
assert rails["rxe0:1"]["address"] == "2001:2:0:1::1", rails
assert rails["rxe1:1"]["address"] == "2001:2:0:2::1", rails
assert all(r["stripes_left_out"] == 0 and r["stripes"] > 0 for r in rails.values()), rails
assert sum(r["bytes"] for r in rails.values()) == doc["bytes"] > 0, rails
print(", ".join("%s %s %d B" % (n, r["address"], r["bytes"]) for n, r in sorted(rails.items())))
PY
}

tb on a "$RAILCP" --port $port -r --json /tmp/v6/src b: >push.json 2>push.err ||
	fail "a push over IPv6 rails failed: $(cat push.err)"
how=$(rails_v6 push.json) || fail "the push over IPv6 rails: $(cat push.json)"
[ "$(sums b /tmp/v6/root/src)" = "$src" ] || fail "the tree pushed over IPv6 rails differs"
tb on a "$RAILCP" --port $port -r --json b:src /tmp/v6/back/ >pull.json 2>pull.err ||
	fail "a pull over IPv6 rails failed: $(cat pull.err)"
rails_v6 pull.json >/dev/null || fail "the pull over IPv6 rails: $(cat pull.json)"
[ "$(sums a /tmp/v6/back/src)" = "$src" ] || fail "the tree pulled over IPv6 rails differs"
tb on a "$RAILCP" bench "b:$port" --bytes 16M --json >bench.json 2>bench.err ||
	fail "a bench over IPv6 rails failed: $(cat bench.err)"
check_bench_json $((16 << 20)) 4 any <bench.json >/dev/null || fail "the bench over IPv6 rails: $(cat bench.json)"
rails_v6 bench.json >/dev/null || fail "the bench over IPv6 rails: $(cat bench.json)"
stop_server_on b srv

# Back on IPv4, as every other test expects: a push shows it.
restore
for h in a b; do
	for i in 0 1; do
		wait_until 10 on_v4 "$h" "$i" || fail "rxe$i on $h did not get its IPv4 GID back"
	done
done
start_server_on b srv4 --root /tmp/v6/root --port $port
tb on a "$RAILCP" --port $port --json /tmp/v6/src/big b:v4 >v4.json 2>v4.err ||
	fail "a push over IPv4 rails after the IPv6 ones failed: $(cat v4.err)"
/usr/bin/python3 -c '
import json, sys
rails = {r["name"]: r["address"] for r in json.load(open(sys.argv[1]))["rails"]}
assert rails == {"rxe0:1": "198.18.0.1", "rxe1:1": "198.18.1.1"}, rails
' v4.json || fail "the rails are not back on IPv4: $(cat v4.json)"
stop_server_on b srv4
tb on a rm -rf /tmp/v6
tb on b rm -rf /tmp/v6
echo "a push, a pull and a bench over RDMA rails on IPv6 alone: $how"
