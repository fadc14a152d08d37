# Hugepages taken away while the server runs: a bench is moving data on
# pools of 2 MiB hugepages when nr_hugepages drops to 0 (the pages in use
# become surplus, none is free). That bench finishes, verified; a second
# bench started then gets pools of smaller pages on both ends (buffer.c
# falls back rather than fault into SIGBUS) and finishes too; with the
# pages back, a third runs on hugepages again, and the server stops cleanly.
. tests/integration/lib.sh
need_rdma
hp=/proc/sys/vm/nr_hugepages
[ -w "$hp" ] || skip "cannot set $hp (not root?)"
orig=$(cat "$hp")
dir=$(mktemp -d)
cd "$dir" || fail "cannot enter $dir"
log=$dir/serve.log
server_pid=""
trap 'echo "$orig" >"$hp"; [ -z "$server_pid" ] || kill "$server_pid" 2>/dev/null; cd / && rm -rf "$dir"' EXIT
echo 128 >"$hp"
free_huge() { cat /sys/devices/system/node/node*/hugepages/hugepages-2048kB/free_hugepages | awk '{ s += $1 } END { print s + 0 }'; }
start_server "$log" --buffer-mib 16 # 8 hugepages a worker: both ends fit in the 64 a node has

"$RAILCP" bench 127.0.0.1 --bytes 384M --chunk 1M --buffer-mib 16 >bench_a.out 2>bench_a.err &
a=$!
# Held mid-run with SIGSTOP from its session's start, so that a fast host
# cannot finish it before the pages go (it once did, in CI): the second
# bench below takes a few seconds, far inside the 60 s stall limit.
wait_for_line "session 1 from .*MiB over" 60 "$log" || fail "the first bench never started: $(cat bench_a.err)"
kill -STOP $a
used=$((128 - $(free_huge)))
[ "$used" -gt 0 ] || fail "the running bench holds no hugepages (free: $(free_huge) of 128)"
echo 0 >"$hp"
[ "$(free_huge)" -eq 0 ] || fail "hugepages still free after nr_hugepages=0: $(free_huge)"
grep -q "session 1 from .* done" "$log" && fail "the first bench ended before the hugepages were taken away"

capture "$RAILCP" bench 127.0.0.1 --bytes 32M --chunk 1M --buffer-mib 16
kill -CONT $a
[ "$rc" -eq 0 ] || fail "a bench with no free hugepages exited $rc: $err"
wait $a
rc_a=$?
[ "$rc_a" -eq 0 ] || fail "the bench whose hugepages became surplus exited $rc_a: $(cat bench_a.err)"
kill -0 "$server_pid" 2>/dev/null || fail "the server died: $(cat "$log")"

echo 128 >"$hp"
capture "$RAILCP" bench 127.0.0.1 --bytes 32M --chunk 1M --buffer-mib 16
[ "$rc" -eq 0 ] || fail "a bench with the hugepages back exited $rc: $err"
[ "$(grep -c ': bench done, ' "$log")" -eq 3 ] || fail "expected three benches done: $(cat "$log")"
stop_server
server_pid=""
echo "a bench held $used hugepages when nr_hugepages went to 0: it, a bench started then (no hugepage free) and one after they came back all finished verified"
