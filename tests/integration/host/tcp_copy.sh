# Copies between two railcp processes over TCP on 127.0.0.1 (the rail lo),
# no guest: a tree pushed and pulled back, -u sending nothing the second
# time, the summary and --json saying tcp (and the --tos given), and a bad
# --transport refused.
. tests/integration/lib.sh
server_tmp
tcp="--transport tcp --rails lo --port $port"

mkdir -p "$tmp/root" "$tmp/src/d/e" "$tmp/src/empty_dir"
: >"$tmp/src/empty"
echo hello >"$tmp/src/d/small"
head -c 4095 /dev/urandom >"$tmp/src/d/e/odd"
head -c $((3 * 1024 * 1024 + 5)) /dev/urandom >"$tmp/src/big"

: >"$tmp/serve.log" # start_server greps it at once
start_server "$tmp/serve.log" --transport tcp --rails lo --port "$port" --root "$tmp/root" --tos 72
grep -q "over tcp, rails: lo:1" "$tmp/serve.log" || fail "the server does not say tcp: $(cat "$tmp/serve.log")"

# shellcheck disable=SC2086 # $tcp is words
capture "$RAILCP" $tcp -r -p "$tmp/src" 127.0.0.1:
[ "$rc" -eq 0 ] || fail "push over tcp: $err"
case "$out" in *"stripes (TCP connections)"*) ;; *) fail "the summary does not say TCP: $out" ;; esac
case "$out" in *"traffic class"*) fail "the summary names a traffic class no --tos gave: $out" ;; esac
diff -r "$tmp/src" "$tmp/root/src" || fail "the pushed tree differs"

# shellcheck disable=SC2086
capture "$RAILCP" $tcp -r -p -u --json --tos 40 "$tmp/src" 127.0.0.1:
[ "$rc" -eq 0 ] || fail "push -u over tcp: $err"
printf '%s' "$out" | python3 -c '
import json, sys
j = json.load(sys.stdin)
assert j["transport"] == "tcp", j["transport"]
assert j["tos"] == 40, j["tos"]
assert j["files_skipped"] == 4, j["files_skipped"]
assert j["bytes"] == 0, j["bytes"]
' || fail "push -u: not every file skipped over tcp: $out"

# shellcheck disable=SC2086
capture "$RAILCP" $tcp -r 127.0.0.1:src "$tmp/back"
[ "$rc" -eq 0 ] || fail "pull over tcp: $err"
diff -r "$tmp/src" "$tmp/back/src" || fail "the pulled tree differs"

# The rails are the IP interfaces: lo only when --rails names rails.
"$RAILCP" topo --transport tcp --rails lo --json | python3 -c '
import json, sys
j = json.load(sys.stdin)
lo = [r for r in j["machine"]["rails"] if r["device"] == "lo"]
assert lo and lo[0]["link_layer"] == "IP" and lo[0]["active"], j["machine"]["rails"]
assert [r["device"] for w in j["plan"]["workers"] for r in w["rails"]] == ["lo"], j["plan"]
' || fail "railcp topo --transport tcp --rails lo does not plan on lo"
"$RAILCP" topo --transport tcp --json | python3 -c '
import json, sys
assert all(r["device"] != "lo" for r in json.load(sys.stdin)["machine"]["rails"])
' || fail "railcp topo --transport tcp lists lo without --rails"

capture "$RAILCP" --transport carrier-pigeon --port "$port" "$tmp/src/big" 127.0.0.1:x
expect_one_line_error "railcp --transport carrier-pigeon"
[ "$rc" -eq 2 ] || fail "a bad --transport: exit status $rc, not 2"
stop_server
