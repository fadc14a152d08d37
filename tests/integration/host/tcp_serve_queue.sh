# serve --json says a session that waits its turn (issue 33): with
# --max-sessions 1 and a bench holding the place, a second bench joins the
# queue, and the server prints a "queued" line (its session, peer, place 1
# of 1, why it waits); when the first bench goes away, an "admitted" line
# (how long it waited), then the session's own line as it ends.
. tests/integration/lib.sh
server_tmp
trap 'kill "$server_pid" "$hold_pid" "$wait_pid" 2>/dev/null; rm -rf "$tmp"' EXIT
mkdir "$tmp/root"
tcp="--transport tcp --rails lo"
# shellcheck disable=SC2086
"$RAILCP" serve $tcp --port "$port" --root "$tmp/root" --max-sessions 1 --json \
	>"$tmp/serve.json" 2>"$tmp/serve.log" &
server_pid=$!
wait_until 20 grep -q "serving on " "$tmp/serve.log" || fail "railcp serve did not start: $(cat "$tmp/serve.log")"

# A bench that would run for hours holds the server's one place.
# shellcheck disable=SC2086
"$RAILCP" bench "127.0.0.1:$port" $tcp --bytes 1T >"$tmp/hold.out" 2>"$tmp/hold.err" &
hold_pid=$!
wait_until 30 grep -q "session 1 from 127.0.0.1: bench" "$tmp/serve.log" ||
	fail "the first bench did not start: $(cat "$tmp/serve.log" "$tmp/hold.err")"
# shellcheck disable=SC2086
"$RAILCP" bench "127.0.0.1:$port" $tcp --bytes 1M --timeout 60 >"$tmp/wait.out" 2>"$tmp/wait.err" &
wait_pid=$!
wait_until 30 grep -q '"event":"queued"' "$tmp/serve.json" ||
	fail "no queued line while the second bench waits: $(cat "$tmp/serve.json" "$tmp/wait.err")"
kill "$hold_pid"
wait "$wait_pid" || fail "the bench that waited its turn failed: $(cat "$tmp/wait.err")"
stop_server

python3 - "$tmp/serve.json" <<'PY' || fail "serve --json's queue lines are wrong: $(cat "$tmp/serve.json")"
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
queue = [l for l in lines if "event" in l]
ends = [l for l in lines if "event" not in l]
assert [l["event"] for l in queue] == ["queued", "admitted"], queue
q, a = queue
assert q["session"] == a["session"] == 2 and q["peer"] == a["peer"] == "127.0.0.1", queue
assert q["place"] == 1 and q["of"] == 1, q
assert q["reason"] == "the server is busy with 1 sessions", q
assert a["place"] == 1 and a["error"] is None and a["waited_ms"] >= 0, a
assert q["time"] <= a["time"], queue
assert "reason" not in a and "waited_ms" not in q, queue
order = [(l.get("event", "end"), l["session"]) for l in lines]
assert order.index(("queued", 2)) < order.index(("admitted", 2)) < order.index(("end", 2)), order
s2 = [l for l in ends if l["session"] == 2]
assert len(s2) == 1 and s2[0]["result"] == "ok" and s2[0]["job"] == "bench", s2
print("serve --json: session 2 queued at place 1 of 1, admitted after %d ms, then ended ok" % a["waited_ms"])
PY
