# Rail i of host a pairs with rail i of host b: in a bench and in a copy
# from a to b every rail of a names its own rail's namesake on b as its
# peer (the server pairs a stripe with its rail on the same subnet,
# 198.18.i.0/24) and carries data. Both ends of each rail agree on the
# active MTU, and each has the RoCE v2 GID of its own address on the rail.
. tests/integration/lib.sh
need_two_hosts
port=7515
dir=$(shared_dir pairing)
cd "$dir" || fail "cannot enter $dir"
mkdir root
# Larger than a worker's slot memory (32 MiB by default): with 8 MiB, a
# worker that started first could claim every chunk before the other's
# stripes asked (seen in CI on a loaded host: rail 1 carried nothing).
head -c $((64 << 20)) /dev/urandom >file

# Check a --json document (bench or copy) on stdin: rail i -> rxe<i> on b.
check_pairs() {
	/usr/bin/python3 -c '
import json, sys
doc, what = json.load(sys.stdin), sys.argv[1]
rails = sorted(doc["rails"], key=lambda r: r["name"])
assert len(rails) == int(sys.argv[2]), "%s: rails %s" % (what, rails)
for r in rails:
    assert r["peer"] == r["name"], "%s: rail %s of a is paired with %s of b" % (what, r["name"], r["peer"])
    assert r["bytes"] > 0, "%s: rail %s carried nothing" % (what, r["name"])
print("%s: %s" % (what, ", ".join("%s -> %s %d MiB" % (r["name"], r["peer"], r["bytes"] >> 20) for r in rails)))
' "$1" "$TESTBED_RAILS"
}

start_server_on b srv --port $port --root "$dir/root"
capture tb on a "$RAILCP" bench b:$port --bytes 64M --json
[ "$rc" -eq 0 ] || fail "bench from a to b exited $rc: $err"
printf '%s\n' "$out" | check_pairs bench || fail "bench pairing: $out"
capture tb on a "$RAILCP" --port $port --json file b:file
[ "$rc" -eq 0 ] || fail "push from a to b exited $rc: $err"
printf '%s\n' "$out" | check_pairs push || fail "push pairing: $out"
cmp -s file root/file || fail "the pushed file arrived damaged"
stop_server_on b srv

# Both ends of every rail: the same active MTU, each its own address's GID.
capture tb on a "$RAILCP" devices --json
[ "$rc" -eq 0 ] || fail "railcp devices --json on a exited $rc: $err"
printf '%s\n' "$out" >devices-a.json
capture tb on b "$RAILCP" devices --json
[ "$rc" -eq 0 ] || fail "railcp devices --json on b exited $rc: $err"
printf '%s\n' "$out" >devices-b.json
/usr/bin/python3 -c '
import json, sys
rails = int(sys.argv[1])
ports = {}
for host, num in (("a", 1), ("b", 2)):
    doc = json.load(open("devices-%s.json" % host))
    for d in doc["devices"]:
        p = d["ports"][0]
        ports[host, d["name"]] = p
        i = int(d["name"][3:])
        want = "::ffff:198.18.%d.%d" % (i, num)
        assert any(g["type"] == "RoCE v2" and g["address"] == want for g in p["gids"]), \
            "%s: %s has no RoCE v2 GID %s: %s" % (host, d["name"], want, p["gids"])
for i in range(rails):
    a, b = ports["a", "rxe%d" % i], ports["b", "rxe%d" % i]
    assert a["active_mtu"] == b["active_mtu"], "rail %d: active MTU %d on a, %d on b" % (i, a["active_mtu"], b["active_mtu"])
    print("rail %d: active MTU %d on both ends, GIDs ::ffff:198.18.%d.1 (a) and .2 (b)" % (i, a["active_mtu"], i))
' "$TESTBED_RAILS" || fail "the two ends of the rails disagree"
cd / && rm -rf "$dir"
