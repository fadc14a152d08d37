# --max-sessions counts only sessions that proved the key: connections that
# never authenticate cannot hold the slots, and a proven session beyond the
# limit waits its turn for 9/10 of its --timeout (then one line) while the
# running one goes on, and runs once the slot frees.
. tests/integration/lib.sh
need_rdma
dir=$(mktemp -d)
log=$dir/serve.log
head -c 32 /dev/urandom | base64 >"$dir/key"
chmod 600 "$dir/key"
start_server "$log" --port 7483 --key-file "$dir/key" --max-sessions 1

# Three strangers connect and say nothing for longer than the test needs.
/usr/bin/python3 -c '
import socket, sys, time
idle = [socket.create_connection(("127.0.0.1", 7483)) for _ in range(3)]
print("connected", flush=True)
time.sleep(60)' >"$dir/idle.out" &
idle=$!
wait_for_line connected 30 "$dir/idle.out" || fail "the strangers did not connect"
# With them connected, one proven session starts and holds the only slot ...
"$RAILCP" bench 127.0.0.1:7483 --bytes 1G --key-file "$dir/key" >"$dir/long.out" 2>"$dir/long.err" &
long=$!
wait_for_line ": bench, 1024 MiB" 30 "$log" ||
	fail "a proven session did not start while strangers were connected: $(cat "$dir/long.err" "$log")"
# ... paused, so the emulated CPUs are free and it holds the slot (the
# server's stall limit is 60 s) ...
kill -STOP "$long"
# ... and the next proven one waits its turn until 9/10 of its --timeout,
# and then fails with the server's sentence saying how long the queue was.
capture "$RAILCP" bench 127.0.0.1:7483 --bytes 4M --key-file "$dir/key" --timeout 3
[ "$rc" -ne 0 ] || fail "a second session beyond --max-sessions 1 ran; server log: $(cat "$log")"
expect_one_line_error "a second session beyond --max-sessions 1"
case "$err" in *"no turn came within 2.7 s (9/10 of the client's --timeout): this session waited at place 1 of 1 in the server's queue, 1 sessions running (--max-sessions 1)"*) ;; *) fail "$err" ;; esac
kill -0 "$long" 2>/dev/null || fail "the running session ended: $(cat "$dir/long.out" "$dir/long.err" "$log")"
# One that asks while the slot is taken runs as soon as it frees.
"$RAILCP" bench 127.0.0.1:7483 --bytes 4M --key-file "$dir/key" --timeout 60 >"$dir/next.out" 2>"$dir/next.err" &
next=$!
sleep 1
kill -CONT "$long"
kill "$long" 2>/dev/null
wait "$long" 2>/dev/null
wait "$next" || fail "a session that waited for the slot failed: $(cat "$dir/next.err")"
kill "$idle" 2>/dev/null
wait "$idle" 2>/dev/null
stop_server
rm -rf "$dir"
