# Many small files: 2000 files of 4 KiB in eight directories are pushed
# with -r and pulled back, and every one arrives with the same content
# (sha256 of each, by name); --json counts them all and has every step of
# the session (steps: topology, ..., teardown) over RDMA. Prints how long
# each direction took and where its time went.
. tests/integration/lib.sh
need_rdma
dir=$(mktemp -d)
cd "$dir" || fail "cannot enter $dir"
mkdir root back
/usr/bin/python3 -c '
import os
for d in range(8):
    os.makedirs("many/dir%d" % d)
    for i in range(250):
        with open("many/dir%d/file%04d" % (d, i), "wb") as f:
            f.write(os.urandom(4096))'
tree_sums many >src.sums
[ "$(wc -l <src.sums)" -eq 2000 ] || fail "expected 2000 source files, got $(wc -l <src.sums)"

# check_json DIRECTION: the --json summary in $out counts 2000 files of 4 KiB.
check_json() {
	printf '%s\n' "$out" | /usr/bin/python3 -c '
import json, sys
doc = json.load(sys.stdin)
assert doc["direction"] == sys.argv[1] and doc["verified"] is True, doc
assert doc["files"] == 2000 and doc["bytes"] == 2000 * 4096, doc
print("%s: 2000 files in %.1f s (data phase %.1f s)" % (sys.argv[1], doc["seconds"],
      doc["transfer_seconds"]))
# where the time went, over RDMA (doc/usage.md): every step, the data phase measured
steps = doc["steps"]
names = ["topology", "walk", "control", "manifest", "memory", "connect", "data", "end",
         "finalize", "teardown", "fixed"]
assert sorted(steps) == sorted(names), steps
assert steps["data"] > 0 and steps["connect"] > 0 and steps["topology"] > 0, steps
print("  steps (ms): " + ", ".join("%s %.1f" % (n, 1e3 * steps[n]) for n in names))
' "$1" || fail "bad --json summary of the $1: $out"
}

start_server serve.log --root "$dir/root"
start=$(date +%s)
capture "$RAILCP" -r --json many 127.0.0.1:
[ "$rc" -eq 0 ] || fail "push of 2000 files exited $rc: $err"
echo "push took $(($(date +%s) - start)) s"
check_json push
tree_sums root/many >pushed.sums
cmp -s src.sums pushed.sums || fail "pushed files differ: $(diff src.sums pushed.sums | head -5)"

start=$(date +%s)
capture "$RAILCP" -r --json 127.0.0.1:many back
[ "$rc" -eq 0 ] || fail "pull of 2000 files exited $rc: $err"
echo "pull took $(($(date +%s) - start)) s"
check_json pull
tree_sums back/many >pulled.sums
cmp -s src.sums pulled.sums || fail "pulled files differ: $(diff src.sums pulled.sums | head -5)"
expect_no_temps root back
stop_server
cd / && rm -rf "$dir"
