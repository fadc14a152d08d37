# Cut connections over TCP on 127.0.0.1, no guest: the sender killed
# mid-push leaves the server's session failed with one line, nothing under
# the final name, and the server serving on; a --partial push then sends
# only the rest, and a -c push cut the same way is resumed by the next -c,
# which sends what -c -n counted first.
# The server killed mid-push fails the client with one line.
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

# Whether a chunk has landed in a partial file in the root and is in its
# log (a slot past the log's head not all zeros), so a copy cut now leaves
# something the next one keeps. Not the data file's size or blocks: a -c
# copy sizes it at once and, over an old file, fills it from that first.
logged() {
	python3 - "$tmp/root" <<'EOF'
import glob, struct, sys
for f in glob.glob(sys.argv[1] + "/.railcp-tmp-l*"):
    with open(f, "rb") as log:
        b = log.read()
    if len(b) >= 16:
        head = (40 + struct.unpack_from("<I", b, 12)[0] + 8 + 63) // 64 * 64
        if b[head:].strip(b"\0"):
            sys.exit(0)
sys.exit(1)
EOF
}

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
wait_until 20 logged || fail "no chunk of the push was logged in 20 s: $(cat "$tmp/push1.err")"
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

# -c, cut the same way once its data flows (the server's line for session 3),
# over an old file unlike the source in every chunk: the next -c keeps what
# the cut copy received, where before it sent the whole file again.
rm -f "$tmp/root/big"
yes "$(head -c 3000 /dev/urandom | base64 -w0)" | head -c $((mib * 1024 * 1024 + 5)) >"$tmp/root/cbig"
"$RAILCP" --transport tcp --rails lo --port "$port" --chunk 4K --qps-per-rail 1 -c -q \
	"$tmp/big" 127.0.0.1:cbig 2>"$tmp/push3.err" &
push_pid=$!
wait_until 60 grep -q 'session 3 from 127.0.0.1: push of 1 files into "cbig", ' "$tmp/serve.log" ||
	fail "the -c push did not start in 60 s: $(cat "$tmp/push3.err")"
wait_until 20 logged || fail "no chunk of the -c push was logged in 20 s: $(cat "$tmp/push3.err")"
kill -9 "$push_pid" || fail "the -c push ended before the cut: $(cat "$tmp/serve.log")"
wait "$push_pid" 2>/dev/null
wait_until 20 grep -q "session 3 from 127.0.0.1 failed: " "$tmp/serve.log" ||
	fail "the server did not fail the -c session of the killed sender: $(cat "$tmp/serve.log")"
cmp -s "$tmp/big" "$tmp/root/cbig" && fail "the cut -c push put its file in place"
# -c -n counts what that -c will send: not the chunks the cut copy received.
capture "$RAILCP" --transport tcp --rails lo --port "$port" --chunk 4K -c -n --json "$tmp/big" 127.0.0.1:cbig
[ "$rc" -eq 0 ] || fail "-c -n after the cut: $err"
# (Not whole over an old file in any case: fewer bytes than the file's are what shows it.)
dry=$(printf '%s' "$out" | python3 -c 'import json, sys; j = json.load(sys.stdin); assert 0 < j["bytes"] < int(sys.argv[1]), j; print(j["bytes"])' $((mib * 1024 * 1024 + 5))) ||
	fail "-c -n after the cut: $out"
capture "$RAILCP" --transport tcp --rails lo --port "$port" --chunk 4K -c --json "$tmp/big" 127.0.0.1:cbig
[ "$rc" -eq 0 ] || fail "the -c push after the cut: $err"
printf '%s' "$out" | python3 -c '
import json, sys
j = json.load(sys.stdin)
assert 0 < j["bytes_kept"] and 0 < j["bytes"] and j["bytes"] + j["bytes_kept"] == int(sys.argv[1]), j
assert j["bytes"] == int(sys.argv[2]), "-c -n counted %s bytes" % sys.argv[2]
' $((mib * 1024 * 1024 + 5)) "$dry" || fail "the -c push after the cut sent what the cut one received again, or not what -c -n counted: $out"
cmp "$tmp/big" "$tmp/root/cbig" || fail "the resumed -c file differs"
rm -f "$tmp/root/cbig"

# A -c push to a name with no old file, cut the same way (session 6): -c -n
# lists the file by the chunks its partial file lacks, not as whole.
"$RAILCP" --transport tcp --rails lo --port "$port" --chunk 4K --qps-per-rail 1 -c -q \
	"$tmp/big" 127.0.0.1:cnew 2>"$tmp/push4.err" &
push_pid=$!
wait_until 60 grep -q 'session 6 from 127.0.0.1: push of 1 files into "cnew", ' "$tmp/serve.log" ||
	fail "the second -c push did not start in 60 s: $(cat "$tmp/push4.err")"
wait_until 20 logged || fail "no chunk of the second -c push was logged in 20 s: $(cat "$tmp/push4.err")"
kill -9 "$push_pid" || fail "the second -c push ended before the cut: $(cat "$tmp/serve.log")"
wait "$push_pid" 2>/dev/null
wait_until 20 grep -q "session 6 from 127.0.0.1 failed: " "$tmp/serve.log" ||
	fail "the server did not fail the second -c session: $(cat "$tmp/serve.log")"
chunks=$(((mib * 1024 * 1024 + 5 + 4095) / 4096))
capture "$RAILCP" --transport tcp --rails lo --port "$port" --chunk 4K -c -n "$tmp/big" 127.0.0.1:cnew
[ "$rc" -eq 0 ] || fail "-c -n of a new file after the cut: $err"
left=$(printf '%s\n' "$out" | sed -n "s|^cnew: \([0-9]*\) of $chunks chunks differ\$|\1|p")
[ -n "$left" ] && [ "$left" -gt 0 ] && [ "$left" -lt "$chunks" ] || fail "-c -n of a new file after the cut: $out"
capture "$RAILCP" --transport tcp --rails lo --port "$port" --chunk 4K -c --json "$tmp/big" 127.0.0.1:cnew
[ "$rc" -eq 0 ] || fail "the -c push of a new file after the cut: $err"
printf '%s' "$out" | python3 -c 'import json, sys; j = json.load(sys.stdin); assert j["chunks_sent"] == int(sys.argv[1]), j' "$left" ||
	fail "the -c push of a new file after the cut did not send the $left chunks -c -n counted: $out"
cmp "$tmp/big" "$tmp/root/cnew" || fail "the resumed new -c file differs"
rm -f "$tmp/root/cnew"
push_bg "$tmp/push2.err"
wait_until 20 arrived || fail "nothing of the second push arrived in 20 s: $(cat "$tmp/push2.err")"
kill -9 "$server_pid"
wait "$push_pid"
rc=$?
err=$(cat "$tmp/push2.err")
expect_one_line_error "a push whose server was killed"
