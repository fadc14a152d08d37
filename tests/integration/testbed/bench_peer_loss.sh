# A peer that dies ends the session on both sides, with a clear error, in
# bounded time; the server then serves the next session.
. tests/integration/lib.sh
need_rdma
log=$(mktemp) blog=$(mktemp)
start_server "$log"

# Kill the sender mid-transfer (once its stripes are connected and data flows).
"$RAILCP" bench 127.0.0.1 --bytes 4G --chunk 1M >/dev/null 2>"$blog" &
bench_pid=$!
wait_for_line "session 1 from .*: bench, " 60 "$log" || fail "session 1 did not start: $(cat "$log" "$blog")"
sleep 2
kill -0 $bench_pid 2>/dev/null || fail "bench ended before it could be killed: $(cat "$blog")"
kill -9 $bench_pid
wait $bench_pid 2>/dev/null
wait_for_line "session 1 from .* failed: the client went away" 10 "$log" ||
	fail "the server did not report the lost sender within 10 s: $(cat "$log")"
echo "server: $(grep 'session 1' "$log")"

# The next session is served.
capture "$RAILCP" bench 127.0.0.1 --bytes 8M --json
[ "$rc" -eq 0 ] || fail "the session after a killed sender failed: $err"
printf '%s\n' "$out" | check_bench_json $((8 << 20)) 4 any || fail "bad bench result"

# Kill the server mid-transfer: the sender fails with one line, soon.
"$RAILCP" bench 127.0.0.1 --bytes 4G --chunk 1M >/dev/null 2>"$blog" &
bench_pid=$!
wait_for_line "session 3 from .*: bench, " 60 "$log" || fail "session 3 did not start: $(cat "$log" "$blog")"
sleep 2
kill -9 "$server_pid"
wait "$server_pid" 2>/dev/null
start=$(date +%s)
wait $bench_pid
brc=$?
secs=$(($(date +%s) - start))
[ $brc -eq 1 ] || fail "bench exited $brc after the server died: $(cat "$blog")"
[ $secs -le 20 ] || fail "bench took $secs s to notice the server died"
[ "$(wc -l <"$blog")" -eq 1 ] || fail "expected one line from bench: $(cat "$blog")"
grep -q "^railcp: the server went away: " "$blog" || fail "unclear error: $(cat "$blog")"
echo "bench after the server died ($secs s): $(cat "$blog")"
rm -f "$log" "$blog"
