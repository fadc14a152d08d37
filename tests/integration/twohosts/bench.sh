# railcp bench from host a to a server on host b: 64 MiB over both rails,
# verified by the server, every rail and NUMA node carrying data (64 MiB is
# the credit window of 8 stripes of 8 slots: smaller runs may not spread).
. tests/integration/lib.sh
need_two_hosts
port=7511
start_server_on b srv --port $port
capture tb on a "$RAILCP" bench b:$port --bytes 64M --json
[ "$rc" -eq 0 ] || fail "bench from a to b exited $rc: $err"
printf '%s\n' "$out" | check_bench_json $((64 << 20)) 4 || fail "bad bench result: $out"
log=$(job_file b srv err)
grep -q 'session 1 from 198\.19\.0\.1: bench done, 64 MiB .* verified' "$log" || fail "server log: $(cat "$log")"
stop_server_on b srv
