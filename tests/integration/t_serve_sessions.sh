# --max-sessions counts only sessions that proved the key: connections that
# never authenticate cannot hold the slots, and a proven session beyond the
# limit is refused with one line while the running one goes on.
. tests/integration/lib.sh
need_rdma
dir=$(mktemp -d)
log=$dir/serve.log
head -c 32 /dev/urandom | base64 >"$dir/key"
chmod 600 "$dir/key"
start_server "$log" --port 7483 --key-file "$dir/key" --max-sessions 1

# Three strangers connect and say nothing for longer than the test needs.
/usr/bin/python3 -c '
import socket, time
idle = [socket.create_connection(("127.0.0.1", 7483)) for _ in range(3)]
time.sleep(60)' &
idle=$!
sleep 1
capture "$RAILCP" bench 127.0.0.1:7483 --bytes 4M --key-file "$dir/key"
[ "$rc" -eq 0 ] || fail "a proven session was refused while strangers were connected: $err"

# One long session holds the only slot; the next proven one is refused as busy.
"$RAILCP" bench 127.0.0.1:7483 --bytes 1G --key-file "$dir/key" >/dev/null 2>"$dir/long.err" &
long=$!
wait_for_line ": bench, 1024 MiB" 30 "$log" || fail "the long session did not start: $(cat "$log")"
capture "$RAILCP" bench 127.0.0.1:7483 --bytes 4M --key-file "$dir/key"
expect_one_line_error "a second session beyond --max-sessions 1"
case "$err" in *"busy with 1 sessions"*) ;; *) fail "$err" ;; esac
kill -0 "$long" 2>/dev/null || fail "the running session ended: $(cat "$dir/long.err")"
kill "$long" "$idle" 2>/dev/null
wait "$long" "$idle" 2>/dev/null
stop_server
rm -rf "$dir"
