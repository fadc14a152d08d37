# railcp bench of 64 MiB through the whole engine: verified by the server,
# with both workers (NUMA nodes) and both rails carrying data; again with one
# QP per rail; the server logs each session. Each --json carries its time
# series (check_bench_json): zeros first, each rail's bytes last.
. tests/integration/lib.sh
need_rdma
log=$(mktemp)
start_server "$log"
for qps in 4 1; do
	capture "$RAILCP" bench 127.0.0.1 --bytes 64M --chunk 1M --qps-per-rail $qps --json
	[ "$rc" -eq 0 ] || fail "bench with $qps QPs per rail exited $rc: $err"
	printf '%s\n' "$out" | check_bench_json $((64 << 20)) $qps || fail "bad bench result: $out"
done
# An odd size: the last chunk is short, and chunks smaller than a MiB.
capture "$RAILCP" bench 127.0.0.1 --bytes 5000000 --chunk 64K --json
[ "$rc" -eq 0 ] || fail "bench of 5000000 bytes exited $rc: $err"
printf '%s\n' "$out" | check_bench_json 5000000 4 || fail "bad bench result: $out"
# One rail of the two the server offers: the server's other worker idles.
capture "$RAILCP" bench 127.0.0.1 --bytes 16M --rails rxe0:1 --json
[ "$rc" -eq 0 ] || fail "bench over rxe0 only exited $rc: $err"
printf '%s\n' "$out" | /usr/bin/python3 -c '
import json, sys
doc = json.load(sys.stdin)
assert doc["bytes"] == 16 << 20 and [r["name"] for r in doc["rails"]] == ["rxe0:1"], doc
assert doc["rails"][0]["peer"] == "rxe0:1", doc' || fail "bad bench result over one rail: $out"
[ "$(grep -c ': bench done, ' "$log")" -eq 4 ] || fail "server log: $(cat "$log")"
stop_server
rm -f "$log"
