# Cut connections over TCP on 127.0.0.1, no guest: the sender killed
# mid-push leaves the server's session failed with one line, nothing under
# the final name, and the server serving on; a --partial push then sends
# only the rest. The server killed mid-push fails the client with one line.
. tests/integration/lib.sh
tmp=$(mktemp -d)
trap 'kill -9 "$server_pid" "$push_pid" 2>/dev/null; rm -rf "$tmp"' EXIT
export HOME="$tmp" LC_ALL=C
unset RAILCP_KEY
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
# 1 GiB: at 4 KiB chunks on one stripe a push takes seconds (256 MiB once
# ended in 1.3 s, inside the second the cut waits for a checkpoint).
mib=1024
mkdir -p "$tmp/root"
# Data all the way (railcp sends no holes), quick to make.
yes "$(head -c 3000 /dev/urandom | base64 -w0)" | head -c $((mib * 1024 * 1024 + 5)) >"$tmp/big"

# Whether the server has written some of the push to its disk.
arrived() { [ -n "$(find "$tmp/root" -type f -size +1M 2>/dev/null)" ]; }

# A push in the background with stderr in $1; $push_pid. Chunks of 4 KiB
# on one stripe keep it going for seconds, for the cut to find it mid-way.
push_bg() {
	"$RAILCP" --transport tcp --rails lo --port "$port" --chunk 4K --qps-per-rail 1 --partial -q \
		"$tmp/big" 127.0.0.1:big 2>"$1" &
	push_pid=$!
}

: >"$tmp/serve.log" # start_server greps it at once
start_server "$tmp/serve.log" --transport tcp --rails lo --port "$port" --root "$tmp/root"
push_bg "$tmp/push1.err"
wait_until 20 arrived || fail "nothing of the push arrived in 20 s: $(cat "$tmp/push1.err")"
sleep 1.2 # a --partial checkpoint is at most a second old
[ ! -e "$tmp/root/big" ] || fail "the push ended before the cut: the test needs a slower push"
kill -9 "$push_pid" || fail "the push ended before the cut: $(cat "$tmp/serve.log")"
wait "$push_pid" 2>/dev/null
wait_until 20 grep -q "session 1 from 127.0.0.1 failed: " "$tmp/serve.log" ||
	fail "the server did not fail the session of the killed sender: $(cat "$tmp/serve.log")"
[ "$(grep -c "session 1 from 127.0.0.1 failed: " "$tmp/serve.log")" -eq 1 ] || fail "not one line: $(cat "$tmp/serve.log")"
[ ! -e "$tmp/root/big" ] || fail "a partial file under its final name"

capture "$RAILCP" --transport tcp --rails lo --port "$port" --chunk 4K --partial --json "$tmp/big" 127.0.0.1:big
[ "$rc" -eq 0 ] || fail "the --partial push after the cut: $err"
printf '%s' "$out" | python3 -c '
import json, sys
j = json.load(sys.stdin)
assert j["bytes_kept"] > 0, j["bytes_kept"]
assert j["transport"] == "tcp"
' || fail "the push after the cut sent everything again: $out"
cmp "$tmp/big" "$tmp/root/big" || fail "the resumed file differs"

rm -f "$tmp/root/big"
push_bg "$tmp/push2.err"
wait_until 20 arrived || fail "nothing of the second push arrived in 20 s: $(cat "$tmp/push2.err")"
kill -9 "$server_pid"
wait "$push_pid"
rc=$?
err=$(cat "$tmp/push2.err")
expect_one_line_error "a push whose server was killed"
