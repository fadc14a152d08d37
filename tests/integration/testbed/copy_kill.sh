# A copy whose peer dies leaves no partial file under a final name: a
# client killed (-9) in the middle of a push makes the server end the
# session with one line and remove its temporary file, and the server then
# serves the next push; a server killed in the middle of a pull makes the
# client fail with one line within seconds and remove its own temporary.
. tests/integration/lib.sh
need_rdma
dir=$(mktemp -d)
cd "$dir" || fail "cannot enter $dir"
mkdir root back
# Real data, no holes: at one QP on one rail this takes several seconds.
start=$(date +%s)
/usr/bin/python3 -c '
import os
with open("big", "wb") as f:
    for _ in range(128):
        f.write(os.urandom(1 << 20))'
echo "made 128 MiB in $(($(date +%s) - start)) s"

start_server serve.log --root "$dir/root"

# Kill the client of a push once data lands at the server.
"$RAILCP" -q --qps-per-rail 1 --rails rxe0:1 big 127.0.0.1:big 2>client.log &
client_pid=$!
wait_for_line 'session 1 from .*: push of 1 files into "big", 128 MiB' 60 serve.log ||
	fail "session 1 did not start: $(cat serve.log client.log)"
wait_for_temp root 30 || fail "no data reached the server in 30 s: $(cat serve.log client.log)"
sleep 1
kill -0 $client_pid 2>/dev/null || fail "the push ended before it could be killed: $(cat client.log)"
kill -9 $client_pid
wait $client_pid 2>/dev/null
wait_for_line 'session 1 from .* failed: ' 20 serve.log ||
	fail "the server did not end the session within 20 s: $(cat serve.log)"
echo "server: $(grep 'session 1 from .* failed' serve.log)"
wait_for_no_temp root 10 || fail "the server left its temporary file: $(ls -la root)"
[ ! -e root/big ] || fail "a partial file is in place after the client died: $(ls -la root)"

# The next push of the same file is served, complete.
capture "$RAILCP" -q big 127.0.0.1:big
[ "$rc" -eq 0 ] || fail "the push after a killed client exited $rc: $err"
cmp -s big root/big || fail "the push after a killed client arrived damaged"
expect_no_temps root

# Kill the server during a pull once data lands here.
"$RAILCP" -q --qps-per-rail 1 --rails rxe0:1 127.0.0.1:big back 2>client.log &
client_pid=$!
wait_for_line 'session 3 from .*: pull of 1 files from "big", 128 MiB' 60 serve.log ||
	fail "session 3 did not start: $(cat serve.log client.log)"
wait_for_temp back 30 || fail "no data arrived in 30 s: $(cat serve.log client.log)"
sleep 1
kill -0 $client_pid 2>/dev/null || fail "the pull ended before the server could be killed"
kill -9 "$server_pid"
wait "$server_pid" 2>/dev/null
start=$(date +%s)
wait $client_pid
crc=$?
secs=$(($(date +%s) - start))
[ $crc -eq 1 ] || fail "the pull exited $crc after the server died: $(cat client.log)"
[ $secs -le 20 ] || fail "the pull took $secs s to notice the server died"
[ "$(wc -l <client.log)" -eq 1 ] || fail "expected one line from the client: $(cat client.log)"
grep -q '^railcp: ' client.log || fail "unclear error: $(cat client.log)"
echo "pull after the server died ($secs s): $(cat client.log)"
[ ! -e back/big ] || fail "a partial file is in place after the server died: $(ls -la back)"
expect_no_temps back
cd / && rm -rf "$dir"
