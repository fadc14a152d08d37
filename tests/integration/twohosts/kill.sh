# A copy across hosts whose peer dies leaves no partial file under a final
# name: the client on a killed (-9) mid-push makes the server on b end the
# session with one line and remove its temporary file, and the server then
# serves the next push; the server on b killed mid-pull makes the client on
# a fail with one line within seconds and remove its own temporary.
. tests/integration/lib.sh
need_two_hosts
port=7514
dir=$(shared_dir kill)
cd "$dir" || fail "cannot enter $dir"
mkdir root back
# One QP on one rail, small chunks: long enough to be caught mid-copy.
slow="--port $port --qps-per-rail 1 --rails rxe0:1 --chunk 64K"
head -c $((24 << 20)) /dev/urandom >big

start_server_on b srv --port $port --root "$dir/root"
log=$(job_file b srv err)

# Kill the client of a push once data lands at the server.
spawn_on a client "$RAILCP" -q $slow big b:big
wait_for_line 'session 1 from .*: push of 1 files into "big"' 60 "$log" ||
	fail "session 1 did not start: $(cat "$log" "$(job_file a client err)")"
wait_for_temp root 30 || fail "no data reached the server in 30 s: $(cat "$log" "$(job_file a client err)")"
tb kill a client KILL || fail "the push ended before it could be killed: $(cat "$(job_file a client err)")"
tb wait a client 10
wait_for_line 'session 1 from .* failed: ' 30 "$log" ||
	fail "the server did not end the session within 30 s: $(cat "$log")"
echo "server: $(grep 'session 1 from .* failed' "$log")"
wait_for_no_temp root 10 || fail "the server left its temporary file: $(ls -la root)"
[ ! -e root/big ] || fail "a partial file is in place after the client died: $(ls -la root)"

# The next push of the same file is served, complete.
capture tb on a "$RAILCP" -q --port $port big b:big
[ "$rc" -eq 0 ] || fail "the push after a killed client exited $rc: $err"
cmp -s big root/big || fail "the push after a killed client arrived damaged"
expect_no_temps root

# Kill the server during a pull once data lands on a.
spawn_on a client "$RAILCP" -q $slow b:big back
wait_for_line 'session 3 from .*: pull of 1 files from "big"' 60 "$log" ||
	fail "session 3 did not start: $(cat "$log" "$(job_file a client err)")"
wait_for_temp back 30 || fail "no data arrived in 30 s: $(cat "$log" "$(job_file a client err)")"
tb kill b srv KILL || fail "the server on b was gone before it could be killed: $(cat "$log")"
start=$(date +%s)
tb wait a client 60
crc=$?
secs=$(($(date +%s) - start))
cerr=$(cat "$(job_file a client err)")
[ $crc -eq 1 ] || fail "the pull exited $crc after the server died: $cerr"
[ $secs -le 20 ] || fail "the pull took $secs s to notice the server died"
[ "$(printf '%s\n' "$cerr" | wc -l)" -eq 1 ] || fail "expected one line from the client: $cerr"
case "$cerr" in "railcp: "*) ;; *) fail "unclear error: $cerr" ;; esac
echo "pull after the server died ($secs s): $cerr"
[ ! -e back/big ] || fail "a partial file is in place after the server died: $(ls -la back)"
expect_no_temps back
cd / && rm -rf "$dir"
